#include "exec.h"

#include "cma.h"
#include "grow.h"
#include "monitor/monitor.h"

#include <limits.h>
#include <stdint.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int ct_exec_describe_type(ct_exec_ctx *ctx, MPI_Datatype datatype)
{
    MPI_Aint lb;
    int size, rc;
    ctx->datatype = datatype;
    if ((rc = MPI_Type_get_extent(datatype, &lb, &ctx->extent)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Type_get_true_extent(datatype, &ctx->true_lb, &ctx->true_extent)) !=
        MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Type_size(datatype, &size)) != MPI_SUCCESS)
        return rc;
    ctx->type_size = (size_t)size;
    ctx->contiguous = (MPI_Aint)size == ctx->extent && ctx->true_extent == ctx->extent &&
                      ctx->true_lb == 0;
    return MPI_SUCCESS;
}

static void *region(void *const *bases, const ct_exec_ctx *c, const ct_region *r)
{
    if (r->count == 0)
        return bases[r->buf]; /* zero-byte message: may have no buffer at all */
    return (char *)bases[r->buf] + (MPI_Aint)r->off * c->extent;
}

static int local_copy(const ct_exec_ctx *c, const void *from, void *to, size_t count,
                      void **scratch, size_t *scratch_len)
{
    if (from == to)
        return MPI_SUCCESS; /* in-place: the data is already there */
    if (c->contiguous) {
        memcpy(to, from, count * c->type_size);
        return MPI_SUCCESS;
    }
    /* Derived types with holes: pack then unpack, so the holes of the
     * destination are left untouched as MPI requires. */
    int bytes, pos = 0, rc;
    if ((rc = MPI_Pack_size((int)count, c->datatype, MPI_COMM_SELF, &bytes)) != MPI_SUCCESS ||
        (rc = ct_grow(scratch, scratch_len, (size_t)bytes)) != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Pack(from, (int)count, c->datatype, *scratch, bytes, &pos, MPI_COMM_SELF)) !=
        MPI_SUCCESS)
        return rc;
    pos = 0;
    return MPI_Unpack(*scratch, bytes, &pos, to, (int)count, c->datatype, MPI_COMM_SELF);
}

void ct_workspace_free(ct_workspace *w)
{
    free(w->slab);
    free(w->reqs);
    free(w->scratch);
    free(w->pulled);
    memset(w, 0, sizeof *w);
}

int ct_exec_begin(ct_exec_run *x, const ct_sched *s, const ct_exec_ctx *c, ct_workspace *w)
{
    size_t total = 0, offs[CT_MAX_BUFS];
    /* No memset of the whole run: its buffer table is 64 pointers, and a kept job's
     * repeated call spent half of this function clearing it (docs/BENCHMARKS.md section
     * 39). Only the schedule's buffers are read (region()), and they are all set below. */
    x->round = 0;
    x->local = 0;
    x->rc = MPI_SUCCESS;
    x->s = s;
    x->c = c;
    x->w = w;
    x->nreq = -1;
    x->bases[CT_BUF_SRC] = c->src;
    x->bases[CT_BUF_DST] = c->dst;
    for (int b = CT_BUF_TMP0; b < s->nbufs; b++) {
        size_t n = s->buf_count[b];
        size_t bytes = n ? (size_t)((MPI_Aint)(n - 1) * c->extent + c->true_extent) : 0;
        offs[b] = total;
        total += (bytes + 63) & ~(size_t)63;
    }
    int rc = ct_grow(&w->slab, &w->slab_len, total);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int b = CT_BUF_TMP0; b < s->nbufs; b++)
        x->bases[b] = (char *)w->slab + offs[b] - c->true_lb;
    size_t nshm = s->buf_count[CT_BUF_SHM];
    if (nshm) {
        size_t bytes = (size_t)((MPI_Aint)(nshm - 1) * c->extent + c->true_extent);
        if (!c->shm || !c->flags || bytes > c->shm_bytes)
            return MPI_ERR_INTERN; /* a segment too small for the schedule: a bug */
        x->bases[CT_BUF_SHM] = (char *)c->shm - c->true_lb;
    } else {
        x->bases[CT_BUF_SHM] = NULL;
    }
    if (s->max_count > INT_MAX)
        return MPI_ERR_COUNT; /* more than one MPI call can carry; checked before any message */
    /* Requests for the longest round's messages (its every operation, to keep it simple). */
    return ct_grow(&w->reqs, &w->reqs_len,
                   sizeof(MPI_Request) * (size_t)(s->nmsgs ? s->max_round_len : 0));
}

/* The round's next request. Read from the workspace here, where a message is posted:
 * most rounds of the shared-memory schedules post none. */
static inline MPI_Request *next_req(ct_exec_run *x)
{
    return (MPI_Request *)x->w->reqs + x->nreq++;
}

static int post_round(ct_exec_run *x)
{
    const ct_sched *s = x->s;
    const ct_exec_ctx *c = x->c;
    x->nreq = 0;
    if (!s->nmsgs)
        return MPI_SUCCESS; /* the segment's schedules: nothing to post in any round */
    int first = s->round_start[x->round], len = ct_sched_round_len(s, x->round), rc = MPI_SUCCESS;
    for (int i = first; i < first + len && rc == MPI_SUCCESS; i++) {
        const ct_op *o = &s->ops[i];
        if (o->kind == CT_OP_SEND)
            rc = MPI_Isend(region(x->bases, c, &o->a), (int)o->a.count, c->datatype, o->peer,
                           c->tag, c->comm, next_req(x));
        else if (o->kind == CT_OP_RECV)
            rc = MPI_Irecv(region(x->bases, c, &o->a), (int)o->a.count, c->datatype, o->peer,
                           c->tag, c->comm, next_req(x));
    }
    return rc;
}

/* A spin-wait's pause: lets the sibling hyperthread run and saves power. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static _Atomic unsigned long long *flag_of(const ct_exec_ctx *c, int rank)
{
    return (_Atomic unsigned long long *)((char *)c->flags + (size_t)rank * c->flag_stride);
}

/* The word beside a rank's flag: the call's number (24 bits) and bytes (40 bits). */
static _Atomic unsigned long long *size_of(const ct_exec_ctx *c, int rank)
{
    return flag_of(c, rank) + 1;
}

static unsigned long long size_word(const ct_exec_ctx *c)
{
    return ((c->epoch >> 24) & 0xffffff) << 40 | (c->shm_size & ((1ULL << 40) - 1));
}

/* The words after it: this rank's pid and its caller buffers (bases of SRC and DST),
 * published with every SIGNAL for the peers' PULL steps. */
enum { WORD_PID = 2, WORD_SRC = 3, WORD_DST = 4 };

static void publish_buffers(const ct_exec_ctx *c, void *const *bases)
{
    _Atomic unsigned long long *f = flag_of(c, c->shm_rank);
    atomic_store_explicit(f + WORD_PID, (unsigned long long)ct_cma_pid(), memory_order_relaxed);
    atomic_store_explicit(f + WORD_SRC, (unsigned long long)(uintptr_t)bases[CT_BUF_SRC],
                          memory_order_relaxed);
    atomic_store_explicit(f + WORD_DST, (unsigned long long)(uintptr_t)bases[CT_BUF_DST],
                          memory_order_relaxed);
}

/* PULL: the peer's region a (its SRC or DST, as it published them with the SIGNAL
 * this rank waited for) into this rank's region b, the bytes the regions span. */
static int pull(const ct_exec_run *x, const ct_op *o)
{
    const ct_exec_ctx *c = x->c;
    _Atomic unsigned long long *f = flag_of(c, o->peer);
    int pid = (int)atomic_load_explicit(f + WORD_PID, memory_order_relaxed);
    uintptr_t base = (uintptr_t)atomic_load_explicit(
        f + (o->a.buf == CT_BUF_SRC ? WORD_SRC : WORD_DST), memory_order_relaxed);
    size_t bytes = (size_t)((MPI_Aint)(o->a.count - 1) * c->extent + c->true_extent);
    const char *from = (const char *)base + (MPI_Aint)o->a.off * c->extent + c->true_lb;
    char *to = (char *)region(x->bases, c, &o->b);
    ct_monitor_shm(0, (unsigned long long)o->a.count * c->type_size);
    if (c->contiguous)
        return ct_cma_read(pid, from, to + c->true_lb, bytes);
    /* A type with holes: the span comes over whole (holes included) into the workspace,
     * then only the elements' data go into the destination, whose holes MPI leaves alone. */
    ct_workspace *w = x->w;
    int rc = ct_grow(&w->pulled, &w->pulled_len, bytes);
    if (rc == MPI_SUCCESS)
        rc = ct_cma_read(pid, from, w->pulled, bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    return local_copy(c, (char *)w->pulled - c->true_lb, to, o->a.count, &w->scratch,
                      &w->scratch_len);
}

/* Whether peer has passed step of this call (CT_STEP_PREV: is done with the last). */
static int flag_reached(const ct_exec_ctx *c, int peer, unsigned step)
{
    if (step == CT_STEP_PREV && c->prev_synced)
        return 1;
    unsigned long long want = step == CT_STEP_PREV ? c->epoch - 1 : c->epoch | step;
    return atomic_load_explicit(flag_of(c, peer), memory_order_acquire) >= want;
}

/* The round's messages are done: its local operations in order, then the next
 * round. A WAIT whose flag is not there yet stops it: blocking, it spins (and
 * yields, for nodes with more ranks than cores); otherwise *stalled is set and
 * the next call resumes at that WAIT. */
static int end_round(ct_exec_run *x, int blocking, int *stalled)
{
    const ct_sched *s = x->s;
    const ct_exec_ctx *c = x->c;
    int first = s->round_start[x->round], len = ct_sched_round_len(s, x->round), rc = MPI_SUCCESS;
    *stalled = 0;
    for (int i = first + x->local; i < first + len && rc == MPI_SUCCESS; i++, x->local++) {
        const ct_op *o = &s->ops[i];
        if ((o->kind == CT_OP_REDUCE || o->kind == CT_OP_COPY) &&
            (o->a.buf == CT_BUF_SHM || o->b.buf == CT_BUF_SHM)) {
            /* The segment's traffic, for the monitor: a reduction into it reads it too. */
            unsigned long long bytes = (unsigned long long)o->a.count * c->type_size;
            int in_b = o->b.buf == CT_BUF_SHM;
            ct_monitor_shm(in_b ? bytes : 0,
                           (o->a.buf == CT_BUF_SHM) * bytes +
                               (in_b && o->kind == CT_OP_REDUCE) * bytes);
        }
        if (o->kind == CT_OP_REDUCE) {
            if (c->reduce_fn)
                c->reduce_fn(region(x->bases, c, &o->a), region(x->bases, c, &o->b),
                             o->a.count);
            else
                rc = MPI_Reduce_local(region(x->bases, c, &o->a), region(x->bases, c, &o->b),
                                      (int)o->a.count, c->datatype, c->op);
        } else if (o->kind == CT_OP_COPY) {
            rc = local_copy(c, region(x->bases, c, &o->a), region(x->bases, c, &o->b),
                            o->a.count, &x->w->scratch, &x->w->scratch_len);
        } else if (o->kind == CT_OP_PULL) {
            rc = pull(x, o);
        } else if (o->kind == CT_OP_SIGNAL) {
            publish_buffers(c, x->bases);
            atomic_store_explicit(size_of(c, c->shm_rank), size_word(c), memory_order_relaxed);
            atomic_store_explicit(flag_of(c, c->shm_rank), c->epoch | o->a.off,
                                  memory_order_release);
        } else if (o->kind == CT_OP_WAIT) {
            for (unsigned spins = 0; !flag_reached(c, o->peer, (unsigned)o->a.off); spins++) {
                if (!blocking) {
                    *stalled = 1;
                    return MPI_SUCCESS;
                }
                if (spins > 4096) { /* about 10 us: the peer is not running, let it */
                    sched_yield();
                    /* and let MPI progress meanwhile, as a blocked MPI call would: a peer
                     * may wait on this rank's MPI (passive-target RMA, a rendezvous).
                     * Enough for MPICH across hosts, not for Open MPI's osc/rdma
                     * (docs/ALGORITHMS.md). */
                    int flag;
                    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, MPI_STATUS_IGNORE);
                } else {
                    cpu_relax();
                }
            }
            /* The peer's bytes, when its word is still this call's (a peer already in a
             * later call passed this one). */
            unsigned long long theirs = atomic_load_explicit(size_of(c, o->peer),
                                                             memory_order_relaxed);
            if (o->a.off != CT_STEP_PREV && theirs >> 40 == size_word(c) >> 40 &&
                theirs != size_word(c)) {
                atomic_store_explicit(size_of(c, c->shm_rank), size_word(c),
                                      memory_order_relaxed);
                atomic_store_explicit(flag_of(c, c->shm_rank), c->epoch | CT_STEP_DONE,
                                      memory_order_release);
                rc = MPI_ERR_TRUNCATE;
            }
        }
    }
    x->round++;
    x->local = 0;
    x->nreq = -1;
    return rc;
}

int ct_exec_step(ct_exec_run *x, int *done)
{
    while (x->rc == MPI_SUCCESS && x->round < x->s->nrounds) {
        if (x->nreq < 0 && (x->rc = post_round(x)) != MPI_SUCCESS)
            break;
        if (x->nreq > 0) {
            int flag = 0;
            if ((x->rc = MPI_Testall(x->nreq, x->w->reqs, &flag, MPI_STATUSES_IGNORE)) !=
                MPI_SUCCESS)
                break;
            if (!flag) {
                *done = 0;
                return MPI_SUCCESS;
            }
            x->nreq = 0; /* the messages are done; local operations may still stall */
        }
        int stalled;
        x->rc = end_round(x, 0, &stalled);
        if (stalled) {
            *done = 0;
            return MPI_SUCCESS;
        }
    }
    *done = 1;
    return x->rc;
}

int ct_exec_finish(ct_exec_run *x)
{
    while (x->rc == MPI_SUCCESS && x->round < x->s->nrounds) {
        if (x->nreq < 0 && (x->rc = post_round(x)) != MPI_SUCCESS)
            break;
        if (x->nreq > 0 &&
            (x->rc = MPI_Waitall(x->nreq, x->w->reqs, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
            break;
        x->nreq = 0;
        int stalled;
        x->rc = end_round(x, 1, &stalled);
    }
    return x->rc;
}

int ct_exec(const ct_sched *s, const ct_exec_ctx *c, ct_workspace *w)
{
    ct_exec_run x;
    int rc = ct_exec_begin(&x, s, c, w);
    return rc == MPI_SUCCESS ? ct_exec_finish(&x) : rc;
}
