/*
 * A job's schedule and buffers for each family of operations: byte views of the
 * data-movement collectives (packed when the type is not dense), the v-variants' blocks.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "../sched/grow.h"

void ct_job_free(ct_job *job)
{
    ct_sched_free(&job->sched);
    ct_workspace_free(&job->work);
    free(job->pack_src);
    free(job->pack_dst);
    free(job->vcounts);
    job->vcounts = NULL;
    job->vcounts_len = 0;
    job->pack_src = job->pack_dst = NULL;
    job->pack_src_len = job->pack_dst_len = 0;
    job->have_key = 0;
}

/* ---- Byte views of the data-movement collectives ------------------------ */

int ct_type_dense(MPI_Datatype t, int *dense_out)
{
    MPI_Aint lb, extent, tlb, textent;
    int size, rc;
    if ((rc = PMPI_Type_get_extent(t, &lb, &extent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_true_extent(t, &tlb, &textent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(t, &size)) != MPI_SUCCESS)
        return rc;
    *dense_out = tlb == 0 && lb == 0 && textent == extent && extent == (MPI_Aint)size;
    return MPI_SUCCESS;
}

/* Packs count elements of t at from into bytes bytes at to. The packed form
 * must be the plain bytes (a homogeneous MPI), which the size check confirms.
 * Nothing to move returns before MPI sees it (here and in unpack): the buffers
 * may then be NULL (a rank that sends 0 elements of a derived type has no packed
 * buffer yet), which Open MPI 5.0.11's MPI_Pack and MPI_Unpack ct_refuse. */
static int pack(const void *from, long long count, MPI_Datatype t, void *to, size_t bytes)
{
    if (count == 0 || bytes == 0)
        return MPI_SUCCESS;
    if (count > INT_MAX || bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0, rc;
    if ((rc = PMPI_Pack(from, (int)count, t, to, (int)bytes, &pos, MPI_COMM_SELF)) !=
        MPI_SUCCESS)
        return rc;
    return (size_t)pos == bytes ? MPI_SUCCESS : MPI_ERR_TYPE;
}

static int unpack(const void *from, size_t bytes, void *to, long long count, MPI_Datatype t)
{
    if (count == 0 || bytes == 0)
        return MPI_SUCCESS;
    if (count > INT_MAX || bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0;
    return PMPI_Unpack(from, (int)bytes, &pos, to, (int)count, t, MPI_COMM_SELF);
}

/* pack(), remembered for the job's next start (ct_job_restart). */
static int job_pack(ct_job *job, const void *from, long long count, MPI_Datatype t, void *to,
                    size_t bytes)
{
    if (job->nrepack < (int)(sizeof job->repack / sizeof job->repack[0]))
        job->repack[job->nrepack++] = (struct ct_repack){from, count, t, to, bytes};
    else
        return MPI_ERR_INTERN; /* a call copies at most three inputs */
    return pack(from, count, t, to, bytes);
}

/* The input as bytes: the user's buffer itself when dense, else packed. */
static int src_view(ct_job *st, const void *buf, long long count, MPI_Datatype t,
                    size_t bytes, void **view)
{
    int d, rc;
    if ((rc = ct_type_dense(t, &d)) != MPI_SUCCESS)
        return rc;
    if (d) {
        *view = (void *)buf; /* read only: schedules never write SRC */
        return MPI_SUCCESS;
    }
    if ((rc = ct_grow(&st->pack_src, &st->pack_src_len, bytes)) != MPI_SUCCESS)
        return rc;
    *view = st->pack_src;
    return job_pack(st, buf, count, t, st->pack_src, bytes);
}

/* The output as bytes: the user's buffer when dense (*unpack_after = 0), else
 * a packed buffer to unpack into the user's when the schedule is done. */
static int dst_view(ct_job *st, void *buf, MPI_Datatype t, size_t bytes, void **view,
                    int *unpack_after)
{
    int d, rc;
    if ((rc = ct_type_dense(t, &d)) != MPI_SUCCESS)
        return rc;
    *unpack_after = !d;
    if (d) {
        *view = buf;
        return MPI_SUCCESS;
    }
    if ((rc = ct_grow(&st->pack_dst, &st->pack_dst_len, bytes)) != MPI_SUCCESS)
        return rc;
    *view = st->pack_dst;
    return MPI_SUCCESS;
}

/* ---- Running a schedule ------------------------------------------------- */

/* A non-blocking or persistent call's schedule on a segment opens with the lane's gate
 * (engine.h, shm_segment): a round of WAIT(r, PREV) on every rank r of the segment's
 * group, this one included, so the call touches the lane's flags and data only once the
 * lane's previous call is done on all of them. A WAIT is a polled step: a start returns
 * at once, the waits, tests and the progress thread pass the gate when it opens. */
static int add_gate(ct_sched *s, const ct_params *p)
{
    ct_sched g;
    ct_sched_init(&g);
    g.nbufs = s->nbufs;
    memcpy(g.buf_count, s->buf_count, sizeof g.buf_count);
    g.shm_parts = s->shm_parts;
    ct_sched_round(&g);
    for (int r = 0; r < p->size; r++)
        if (!p->node_of || p->node_of[r] == p->node_of[p->rank]) /* the node's segment */
            ct_sched_wait(&g, r, CT_STEP_PREV);
    for (int rd = 0; rd < s->nrounds; rd++) {
        ct_sched_round(&g);
        int first = s->round_start[rd], len = ct_sched_round_len(s, rd);
        for (int i = first; i < first + len; i++)
            ct_sched_add_op(&g, &s->ops[i]);
    }
    if (g.error) {
        ct_sched_free(&g);
        return MPI_ERR_NO_MEM;
    }
    ct_sched_free(s);
    *s = g;
    return MPI_SUCCESS;
}

/* The schedule of the call, from the job's cache when the same shape ran last,
 * and the private communicator and tag it runs with. */
int ct_prepare_schedule(comm_state *st, ct_job *job, const ct_registry_entry *e,
                            const ct_params *p)
{
    ct_params key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    memcpy(&key, p, sizeof *p);
    shm_segment *seg = job->segment;
    if (seg) {
        /* Elements of the call's type a lane holds (element i at i * extent). */
        MPI_Aint over = job->x.true_extent > job->x.extent ? job->x.true_extent - job->x.extent
                                                          : 0;
        key.shm_count = job->x.extent > 0 && (MPI_Aint)seg->bytes > over
                            ? (size_t)(((MPI_Aint)seg->bytes - over) / job->x.extent)
                            : 0;
        key.cma = seg->cma;
        job->x.shm = seg->lane[0].data; /* a start's lane replaces them (ct_job_take_epoch) */
        job->x.shm_bytes = seg->bytes;
        job->x.flags = seg->lane[0].flags;
        job->x.flag_stride = FLAG_STRIDE;
        job->x.shm_rank = p->rank;
        job->x.shm_size = (unsigned long long)(p->count * p->type_size);
    }
    if (!job->have_key || job->key_alg != e || memcmp(&key, &job->key_params, sizeof key)) {
        job->have_key = 0;
        if (ct_sched_generate(e->info.name, &key, &job->sched))
            return MPI_ERR_INTERN; /* out of memory, or a generator refusing its parameters */
        if (seg && job->form != CT_JOB_BLOCKING) {
            int rc = add_gate(&job->sched, p);
            if (rc != MPI_SUCCESS)
                return rc;
        }
        job->key_alg = e;
        memcpy(&job->key_params, &key, sizeof key);
        job->have_key = 1;
    }
    /* The segment's epoch only once the call will run on it: a call refused here (an
     * element larger than the segment) goes to the library, and the lane's next call
     * must still find the flags of the previous one. A persistent call takes none at
     * its init, which runs nothing: each MPI_Start takes its own (ct_job_restart), else
     * every rank's first start would wait for an epoch no call ran. */
    if (job->form != CT_JOB_PERSISTENT)
        ct_job_take_epoch(job);
    job->alg = e;
    job->params = key;
    job->x.comm = st->priv;
    job->x.tag = (int)(st->seq++ & 0x7fff);
    job->takes_tag = 1;
    return MPI_SUCCESS;
}

void ct_byte_ctx(ct_exec_ctx *x)
{
    memset(x, 0, sizeof *x);
    x->datatype = MPI_BYTE;
    x->extent = 1;
    x->true_extent = 1;
    x->contiguous = 1;
    x->type_size = 1;
    x->op = MPI_OP_NULL;
}

/* Scatter, gather, allgather, alltoall: blocks of bytes. */
int ct_setup_movement(const ct_call *c, comm_state *cs, ct_job *st, ct_params *p,
                          const ct_registry_entry *e)
{
    int rank = p->rank, n = p->size, root = rank == c->root, rc, ssize = 0, rsize = 0;
    int send, recv;
    ct_significant_sides(c, rank, &send, &recv);
    if (send && (rc = PMPI_Type_size(c->sendtype, &ssize)) != MPI_SUCCESS)
        return rc;
    if (recv && (rc = PMPI_Type_size(c->recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    size_t block = recv ? (size_t)c->recvcount * (size_t)rsize
                        : (size_t)c->sendcount * (size_t)ssize;
    st->empty = block == 0;
    if (st->empty) {
        if (!st->segment)
            return MPI_SUCCESS;
        /* Shared memory: nothing to move, but the call is on the flags all the same (the
         * others check its size, and the next call waits for it to be done). */
        st->empty = 0;
        ct_byte_ctx(&st->x);
        st->unpack_after = 0;
        p->count = 0;
        return ct_prepare_schedule(cs, st, e, p);
    }
    size_t all = block * (size_t)n;
    ct_exec_ctx x;
    ct_byte_ctx(&x);
    int unpack_after = 0;
    long long out_count = 0; /* elements of recvtype to unpack */
    p->count = block;
    switch (c->coll) {
    case CT_SCATTER:
        p->in_place = root && c->recvbuf == MPI_IN_PLACE;
        if (root && (rc = src_view(st, c->sendbuf, (long long)c->sendcount * n, c->sendtype,
                                   all, &x.src)) != MPI_SUCCESS)
            return rc;
        if (!p->in_place) {
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, block, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
            out_count = c->recvcount;
        }
        break;
    case CT_GATHER:
    case CT_ALLGATHER:
        p->in_place = c->sendbuf == MPI_IN_PLACE;
        if (!p->in_place &&
            (rc = src_view(st, c->sendbuf, c->sendcount, c->sendtype, block, &x.src)) !=
                MPI_SUCCESS)
            return rc;
        if (c->coll == CT_ALLGATHER || root) {
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, all, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
            out_count = (long long)c->recvcount * n;
            if (p->in_place && unpack_after) {
                /* The rank's own block is in the user's buffer: bring it in. */
                MPI_Aint lb, extent;
                PMPI_Type_get_extent(c->recvtype, &lb, &extent);
                const char *own = (const char *)c->recvbuf + (MPI_Aint)rank * c->recvcount * extent;
                if ((rc = job_pack(st, own, c->recvcount, c->recvtype,
                                   (char *)x.dst + (size_t)rank * block, block)) != MPI_SUCCESS)
                    return rc;
            }
        }
        break;
    case CT_ALLTOALL:
        p->in_place = 0;
        if (c->sendbuf == MPI_IN_PLACE) {
            /* The input is overwritten as results arrive: work from a copy. */
            if ((rc = ct_grow(&st->pack_src, &st->pack_src_len, all)) != MPI_SUCCESS ||
                (rc = job_pack(st, c->recvbuf, (long long)c->recvcount * n, c->recvtype,
                               st->pack_src, all)) != MPI_SUCCESS)
                return rc;
            x.src = st->pack_src;
        } else if ((rc = src_view(st, c->sendbuf, (long long)c->sendcount * n, c->sendtype,
                                  all, &x.src)) != MPI_SUCCESS) {
            return rc;
        }
        if ((rc = dst_view(st, c->recvbuf, c->recvtype, all, &x.dst, &unpack_after)) !=
            MPI_SUCCESS)
            return rc;
        out_count = (long long)c->recvcount * n;
        break;
    default:
        return MPI_ERR_INTERN;
    }
    st->x = x;
    st->unpack_after = unpack_after;
    st->unpack_to = c->recvbuf;
    st->unpack_count = out_count;
    st->unpack_type = c->recvtype;
    st->unpack_bytes = out_count == c->recvcount ? block : all;
    return ct_prepare_schedule(cs, st, e, p);
}

/* The job's per-rank arrays: 4 * n entries (counts, displs, rcounts, rdispls). */
int ct_grow_vcounts(ct_job *st, int n)
{
    void *m = st->vcounts; /* ct_grow may not write st->vcounts (a size_t *) as a void * */
    int rc = ct_grow(&m, &st->vcounts_len, 4 * (size_t)n * sizeof *st->vcounts);
    st->vcounts = m;
    return rc;
}

/* Where a buffer of blocks starts and how many elements it spans: from the lowest
 * displacement of a non-empty block to the largest end (0 and 0 without one). Only
 * the blocks' own range: MPI asks no more of the buffer, whichever side of the
 * pointer passed the blocks lie (all displacements negative, or all past 0). */
static long long lowest(const int *counts, const int *displs, int n)
{
    long long lo = 0;
    int any = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0 && (!any || displs[i] < lo)) {
            lo = displs[i];
            any = 1;
        }
    return lo;
}

static long long span(const int *counts, const int *displs, int n)
{
    long long lo = lowest(counts, displs, n), end = lo;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0 && (long long)displs[i] + counts[i] > end)
            end = (long long)displs[i] + counts[i];
    return end - lo;
}

/* The blocks' byte displacements in a view that starts at the lowest block. */
static void byte_displs(const int *counts, const int *displs, int n, int size, size_t *out)
{
    long long lo = lowest(counts, displs, n);
    for (int i = 0; i < n; i++)
        out[i] = counts[i] > 0 ? (size_t)((displs[i] - lo) * size) : 0;
}

/* The address of element lo of a buffer of type t. */
static void *element_at(const void *buf, long long lo, MPI_Datatype t)
{
    MPI_Aint lb, extent;
    if (!lo || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS)
        return (void *)buf;
    return (char *)buf + lo * extent;
}

/* The receive side as bytes, the gaps between blocks kept: the user's buffer when
 * dense, else packed from it first (what the schedule does not write is unpacked
 * back unchanged). */
static int dst_view_kept(ct_job *st, void *buf, long long elems, MPI_Datatype t, size_t bytes,
                         void **view, int *unpack_after)
{
    int rc = dst_view(st, buf, t, bytes, view, unpack_after);
    if (rc == MPI_SUCCESS && *unpack_after && bytes)
        rc = job_pack(st, buf, elems, t, *view, bytes);
    return rc;
}

/* Allgatherv, gatherv, scatterv, alltoallv: blocks of bytes at byte displacements (a
 * displacement of d elements is d * size bytes: in the user's buffer when the type is
 * dense, in the packed one otherwise). all_counts: every rank gets the root's counts
 * (CT_ALG_ALL_COUNTS). The arrays are the job's, so the schedule is never reused. */
int ct_setup_movement_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *st,
                            ct_params *p, const ct_registry_entry *e)
{
    int rank = p->rank, n = p->size, root = rank == c->root, rc, ssize = 0, rsize = 0;
    int send, recv;
    ct_significant_sides(c, rank, &send, &recv);
    if (send && (rc = PMPI_Type_size(c->sendtype, &ssize)) != MPI_SUCCESS)
        return rc;
    if (recv && (rc = PMPI_Type_size(c->recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    if ((rc = ct_grow_vcounts(st, n)) != MPI_SUCCESS)
        return rc;
    size_t *cnt = st->vcounts, *dsp = cnt + n, *rcnt = dsp + n, *rdsp = rcnt + n;
    memset(cnt, 0, 4 * (size_t)n * sizeof *cnt);
    ct_exec_ctx x;
    ct_byte_ctx(&x);
    int unpack_after = 0;
    long long out_count = 0; /* elements of recvtype to unpack */
    size_t out_bytes = 0;
    void *out_to = c->recvbuf; /* where they go: the lowest block's first element */
    p->count = 0;
    p->counts = cnt;
    p->displs = dsp;
    p->in_place = 0;
    switch (c->coll) {
    case CT_ALLGATHERV:
    case CT_GATHERV: {
        p->in_place = c->sendbuf == MPI_IN_PLACE;
        if (recv) {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->recvcounts[i] * (size_t)rsize;
            byte_displs(v->recvcounts, v->rdispls, n, rsize, dsp);
            out_to = element_at(c->recvbuf, lowest(v->recvcounts, v->rdispls, n), c->recvtype);
        } else {
            cnt[rank] = (size_t)c->sendcount * (size_t)ssize;
        }
        if (!p->in_place &&
            (rc = src_view(st, c->sendbuf, c->sendcount, c->sendtype,
                           (size_t)c->sendcount * (size_t)ssize, &x.src)) != MPI_SUCCESS)
            return rc;
        if (recv) {
            out_count = span(v->recvcounts, v->rdispls, n);
            out_bytes = (size_t)out_count * (size_t)rsize;
            if ((rc = dst_view_kept(st, out_to, out_count, c->recvtype, out_bytes, &x.dst,
                                    &unpack_after)) != MPI_SUCCESS)
                return rc;
        }
        break;
    }
    case CT_SCATTERV: {
        p->in_place = root && c->recvbuf == MPI_IN_PLACE;
        if (send) {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->sendcounts[i] * (size_t)ssize;
            byte_displs(v->sendcounts, v->sdispls, n, ssize, dsp);
            long long in = span(v->sendcounts, v->sdispls, n);
            const void *from =
                element_at(c->sendbuf, lowest(v->sendcounts, v->sdispls, n), c->sendtype);
            if ((rc = src_view(st, from, in, c->sendtype, (size_t)in * (size_t)ssize,
                               &x.src)) != MPI_SUCCESS)
                return rc;
        } else {
            cnt[rank] = (size_t)c->recvcount * (size_t)rsize;
        }
        if (recv) {
            out_count = c->recvcount;
            out_bytes = (size_t)out_count * (size_t)rsize;
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, out_bytes, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
        }
        break;
    }
    case CT_ALLTOALLV: {
        p->rcounts = rcnt;
        p->rdispls = rdsp;
        for (int i = 0; i < n; i++)
            rcnt[i] = (size_t)v->recvcounts[i] * (size_t)rsize;
        byte_displs(v->recvcounts, v->rdispls, n, rsize, rdsp);
        out_to = element_at(c->recvbuf, lowest(v->recvcounts, v->rdispls, n), c->recvtype);
        out_count = span(v->recvcounts, v->rdispls, n);
        out_bytes = (size_t)out_count * (size_t)rsize;
        if (c->sendbuf == MPI_IN_PLACE) {
            /* The input is the receive side, overwritten as results arrive: a copy. */
            memcpy(cnt, rcnt, 2 * (size_t)n * sizeof *cnt);
            if ((rc = ct_grow(&st->pack_src, &st->pack_src_len, out_bytes ? out_bytes : 1)) !=
                    MPI_SUCCESS ||
                (out_bytes && (rc = job_pack(st, out_to, out_count, c->recvtype, st->pack_src,
                                             out_bytes)) != MPI_SUCCESS))
                return rc;
            x.src = st->pack_src;
        } else {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->sendcounts[i] * (size_t)ssize;
            byte_displs(v->sendcounts, v->sdispls, n, ssize, dsp);
            long long in = span(v->sendcounts, v->sdispls, n);
            const void *from =
                element_at(c->sendbuf, lowest(v->sendcounts, v->sdispls, n), c->sendtype);
            if ((rc = src_view(st, from, in, c->sendtype, (size_t)in * (size_t)ssize,
                               &x.src)) != MPI_SUCCESS)
                return rc;
        }
        if ((rc = dst_view_kept(st, out_to, out_count, c->recvtype, out_bytes, &x.dst,
                                &unpack_after)) != MPI_SUCCESS)
            return rc;
        break;
    }
    default:
        return MPI_ERR_INTERN;
    }
    if (e->info.flags & CT_ALG_ALL_COUNTS) {
        /* The subtrees' blocks travel packed: every rank needs every count. */
        if ((rc = PMPI_Bcast(cnt, n * (int)sizeof *cnt, MPI_BYTE, c->root, cs->priv)) !=
            MPI_SUCCESS)
            return rc;
    }
    st->empty = ct_call_empty(p) && !st->segment;
    if (st->empty) {
        /* A rank may have nothing to move where others have (a v-variant's counts are
         * per rank): its tag count moves on all the same, to stay in step with theirs. */
        cs->seq++;
        st->takes_tag = 1;
        return MPI_SUCCESS;
    }
    st->x = x;
    st->unpack_after = unpack_after;
    st->unpack_to = out_to;
    st->unpack_count = out_count;
    st->unpack_type = c->recvtype;
    st->unpack_bytes = out_bytes;
    st->have_key = 0; /* the arrays change in place from call to call */
    return ct_prepare_schedule(cs, st, e, p);
}

/* A new call on a prepared job: its tag, and its epoch on a shared segment. */

int ct_job_restart(ct_job *job)
{
    if (job->takes_tag)
        ct_job_next_call(job, job->state);
    for (int i = 0; i < job->nrepack; i++) {
        const struct ct_repack *k = &job->repack[i];
        int rc = pack(k->from, k->count, k->type, k->to, k->bytes);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int ct_job_finish(ct_job *job)
{
    if (job->empty || !job->unpack_after)
        return MPI_SUCCESS;
    return unpack(job->x.dst, job->unpack_bytes, job->unpack_to, job->unpack_count,
                  job->unpack_type);
}
