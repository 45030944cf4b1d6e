/*
 * The common path of every call: checks, the algorithm's entry, the communicator's
 * state and segment, the family's set-up (ct_call_prepare).
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "../select/select.h"

/* ---- The common path ---------------------------------------------------- */

/* call.h */
void ct_call_comm_shape(MPI_Comm comm, int *size, int *rank, int *inter)
{
    comm_state *st = ct_comm_state_find(comm);
    if (st) {
        *size = st->size;
        *rank = st->rank;
        *inter = st->inter;
        return;
    }
    *size = *rank = *inter = 0;
    if (comm == MPI_COMM_NULL)
        return;
    PMPI_Comm_size(comm, size);
    PMPI_Comm_rank(comm, rank);
    PMPI_Comm_test_inter(comm, inter);
}

/* call.h */
long long ct_call_bytes(const ct_call *c)
{
    int rank = 0;
    if ((c->coll == CT_GATHER || c->coll == CT_SCATTER) && c->comm != MPI_COMM_NULL) {
        int size, inter;
        ct_call_comm_shape(c->comm, &size, &rank, &inter);
    }
    return ct_call_bytes_at(c, rank);
}

/* The size of the most used predefined types, known without asking MPI: PMPI_Type_size
 * was over half of a repeated call's sizing (56 of 103 instructions in MPICH 5.0.2,
 * docs/BENCHMARKS.md section 45). 0: ask MPI (derived types, the others). */
static int known_type_size(MPI_Datatype t)
{
    if (t == MPI_BYTE || t == MPI_CHAR || t == MPI_SIGNED_CHAR || t == MPI_UNSIGNED_CHAR)
        return 1;
    if (t == MPI_DOUBLE)
        return (int)sizeof(double);
    if (t == MPI_INT || t == MPI_UNSIGNED)
        return (int)sizeof(int);
    if (t == MPI_FLOAT)
        return (int)sizeof(float);
    if (t == MPI_LONG || t == MPI_UNSIGNED_LONG)
        return (int)sizeof(long);
    return 0;
}

/* call.h */
long long ct_call_bytes_at(const ct_call *c, int rank)
{
    int tsize = 0;
    if (c->coll == CT_BARRIER)
        return 0;
    int use_send = (c->coll == CT_GATHER && rank != c->root) ||
                   (c->coll == CT_SCATTER && rank == c->root && c->recvbuf == MPI_IN_PLACE);
    MPI_Datatype t = use_send ? c->sendtype : c->recvtype;
    int count = use_send ? c->sendcount : c->recvcount;
    if ((tsize = known_type_size(t)) == 0 &&
        (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &tsize) != MPI_SUCCESS))
        return -1;
    return (long long)count * tsize;
}

int ct_call_same_size_v(ct_coll coll)
{
    return coll != CT_GATHERV && coll != CT_SCATTERV && coll != CT_ALLTOALLV;
}

long long ct_call_bytes_v(const ct_call *c, const ct_vargs *v)
{
    int rank = 0, size = 1, tsize = 0;
    if (c->coll != CT_ALLGATHERV && c->coll != CT_GATHERV && c->coll != CT_SCATTERV &&
        c->coll != CT_ALLTOALLV && c->coll != CT_REDUCE_SCATTER)
        return ct_call_bytes(c);
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    int root = rank == c->root;
    if (c->coll == CT_ALLGATHERV || c->coll == CT_REDUCE_SCATTER) {
        /* Every rank has every count: the average block, the same on all. */
        if (!v || !v->recvcounts || c->recvtype == MPI_DATATYPE_NULL ||
            PMPI_Type_size(c->recvtype, &tsize) != MPI_SUCCESS)
            return -1;
        long long total = 0;
        for (int i = 0; i < size; i++)
            total += v->recvcounts[i];
        return total * tsize / size;
    }
    /* Only the rank's own block is known to it. */
    MPI_Datatype t;
    long long count;
    if (c->coll == CT_GATHERV || (c->coll == CT_SCATTERV && root && c->recvbuf == MPI_IN_PLACE)) {
        t = c->sendtype;
        count = c->coll == CT_GATHERV ? c->sendcount
                                      : (v && v->sendcounts ? v->sendcounts[rank] : -1);
        if (c->coll == CT_GATHERV && root && c->sendbuf == MPI_IN_PLACE) {
            t = c->recvtype;
            count = v && v->recvcounts ? v->recvcounts[rank] : -1;
        }
    } else if (c->coll == CT_SCATTERV) {
        t = c->recvtype;
        count = c->recvcount;
    } else { /* alltoallv: what it receives from itself */
        t = c->recvtype;
        count = v && v->recvcounts ? v->recvcounts[rank] : -1;
    }
    if (count < 0 || t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &tsize) != MPI_SUCCESS)
        return -1;
    return count * tsize;
}


/* Reduce_scatter(_block), scan, exscan: the executor on the call's datatype (element i
 * at i * extent), as reduce and allreduce. reduce_scatter's blocks lie back to back:
 * their displacements are the counts' prefix sums. */
int ct_setup_reduction_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *job,
                             ct_params *p, const ct_registry_entry *e, const ct_exec_ctx *x)
{
    int n = p->size, rc;
    size_t total = 0;
    p->count = (size_t)c->recvcount;
    if (c->coll == CT_REDUCE_SCATTER) {
        if ((rc = ct_grow_vcounts(job, n)) != MPI_SUCCESS)
            return rc;
        size_t *cnt = job->vcounts, *dsp = cnt + n;
        for (int i = 0; i < n; i++) {
            cnt[i] = (size_t)v->recvcounts[i];
            dsp[i] = total;
            total += cnt[i];
        }
        p->count = 0;
        p->counts = cnt;
        p->displs = dsp;
        job->have_key = 0; /* the arrays change in place from call to call */
    } else {
        total = p->count;
    }
    job->empty = total == 0 || x->type_size == 0;
    if (job->empty)
        return MPI_SUCCESS;
    p->type_size = x->type_size;
    p->segcount = 0;
    p->in_place = c->sendbuf == MPI_IN_PLACE;
    job->x = *x;
    job->x.src = p->in_place ? c->recvbuf : (void *)c->sendbuf;
    job->x.dst = c->recvbuf;
    job->x.op = c->op;
    job->x.reduce_fn = ct_reduce_kernel(c->op, c->recvtype);
    return ct_prepare_schedule(cs, job, e, p);
}

/* Where colltune does not run the call: the library's own collective
 * (CT_REJECT_NATIVE), or nothing run and *go = -1 for the caller to start it
 * (CT_REJECT_REPORT: the persistent forms, whose native call takes an info). */
static int not_ours(const ct_call *c, const ct_vargs *v, int native_on_reject, int *go,
                    ct_native_why why)
{
    ct_select_refused(why); /* the drop-in's finalize summary says why */
    if (native_on_reject == CT_REJECT_REPORT) {
        *go = -1;
        return MPI_SUCCESS;
    }
    return ct_call_native_v(c, v);
}

/* The slot a blocking call that found none to reuse takes: the least recently used. */
static job_slot *victim_slot(comm_state *st)
{
    job_slot *v = &st->slots[0];
    for (int i = 1; i < JOB_SLOTS; i++)
        if (st->slots[i].used < v->used)
            v = &st->slots[i];
    return v;
}

/* One call on its way through ct_call_prepare: what each step found. A step returns 1
 * to go on, 0 when the call is settled (run by the library, refused, or failed) with
 * its result in rc. */
typedef struct prep {
    const ct_call *c;
    const ct_vargs *v;
    const ct_options *opts;
    int native_on_reject, *go, rc;
    ct_native_why why;                 /* a refusal's reason, for the summary */
    const char *cname;
    int size, rank, inter, commutative;
    const ct_registry_entry *e;        /* the algorithm */
    const char *intra, *inter_part;    /* a hierarchical algorithm's parts */
    unsigned part_flags;
    comm_state *st;
    shm_segment *segment;              /* the segment the call runs through, if any */
    ct_exec_ctx x;                     /* bcast and reductions: the type's layout */
    ct_params p;
} prep;

/* Colltune does not run the call: the drop-in's goes to the library (the program sees
 * what native MPI does), the public API's is refused with the message. */
static int decline(prep *q, int cls, const char *fmt, ...)
{
    if (q->native_on_reject) {
        q->rc = not_ours(q->c, q->v, q->native_on_reject, q->go, q->why);
        return 0;
    }
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    ct_format_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    q->rc = ct_raise_message(q->c->comm, cls, msg);
    return 0;
}

/* A failure of colltune's own (memory, MPI under it): raised whoever called. */
static int fail(prep *q, int rc, const char *what)
{
    q->rc = ct_raise_error(q->c->comm, rc, "%s%s%s: %s", q->cname, q->e ? "/" : "",
                           q->e ? q->e->info.name : "", what);
    return 0;
}

/* Step 1: the communicator and the arguments, as MPI would check them. */
static int check_call(prep *q)
{
    const ct_call *c = q->c;
    ct_reject why;
    if (c->comm == MPI_COMM_NULL)
        return decline(q, MPI_ERR_COMM, "%s on MPI_COMM_NULL", q->cname);
    if ((q->rc = PMPI_Comm_test_inter(c->comm, &q->inter)) != MPI_SUCCESS) {
        if (q->native_on_reject)
            q->rc = not_ours(c, q->v, q->native_on_reject, q->go, CT_WHY_ARGS);
        return 0;
    }
    PMPI_Comm_size(c->comm, &q->size);
    PMPI_Comm_rank(c->comm, &q->rank);
    if (ct_check_args(c, q->rank, q->size, q->inter, &q->commutative, &why) != MPI_SUCCESS ||
        (!q->inter && ct_check_vargs(c, q->v, q->rank, q->size, &why) != MPI_SUCCESS))
        return decline(q, why.cls, "%s", why.msg);
    return 1;
}

/* Step 2: the algorithm's registry entry (chosen by the select layer or the caller:
 * none is native) and whether it and its options can serve this call. */
static int resolve_algorithm(prep *q)
{
    const ct_options *o = q->opts;
    const char *alg = (o && o->algorithm && o->algorithm[0]) ? o->algorithm : NULL;
    const ct_registry_entry *e = q->e = ct_registry_find(q->c->coll, alg ? alg : "native");
    const char *cname = q->cname;
    if (!e)
        return decline(q, MPI_ERR_ARG, "unknown %s algorithm '%s'", cname, alg);
    if (o && o->has_segsize && o->segsize <= 0)
        return decline(q, MPI_ERR_ARG, "segment size must be > 0 (got %lld)", o->segsize);
    if (o && (o->radix < 0 || o->radix == 1))
        return decline(q, MPI_ERR_ARG, "radix must be >= 2 (got %d)", o->radix);
    q->why = CT_WHY_NONCOMMUTATIVE;
    if (!q->commutative && (e->info.flags & CT_ALG_NEEDS_COMMUTE))
        return decline(q, MPI_ERR_OP,
                       "%s algorithm '%s' needs a commutative operation; use one that keeps "
                       "rank order", cname, e->info.name);
    q->why = CT_WHY_ARGS;
    if (e->info.flags & CT_ALG_HIERARCHICAL) {
        char msg[200];
        if (ct_hier_parts(q->c->coll, o ? o->intra : NULL, o ? o->inter : NULL, &q->intra,
                          &q->inter_part, &q->part_flags, msg, sizeof msg))
            return decline(q, MPI_ERR_ARG, "%s", msg);
        q->why = CT_WHY_NONCOMMUTATIVE;
        if (!q->commutative && (q->part_flags & CT_ALG_NEEDS_COMMUTE))
            return decline(q, MPI_ERR_OP,
                           "%s/hier with parts %s (intra) and %s (inter) needs a commutative "
                           "operation; choose parts that keep rank order",
                           cname, q->intra, q->inter_part);
    }
    /* Inter-communicators are MPI's business (the public API's too). */
    if ((e->info.flags & CT_ALG_NATIVE) || q->inter) {
        q->rc = not_ours(q->c, q->v,
                         q->native_on_reject == CT_REJECT_REPORT ? CT_REJECT_REPORT
                                                                 : CT_REJECT_NATIVE,
                         q->go, q->inter ? CT_WHY_INTER : CT_WHY_TABLE_NATIVE);
        return 0;
    }
    return 1;
}

/* Step 3: what the call's form allows. */
static int check_form(prep *q)
{
    q->why = CT_WHY_ARGS;
    if (!q->c->request)
        return 1;
    const ct_registry_entry *e = q->e;
    q->why = CT_WHY_FORM;
    /* An algorithm that broadcasts the root's counts first, a blocking exchange, cannot
     * start a non-blocking or persistent call. */
    if (e->info.flags & CT_ALG_ALL_COUNTS)
        return decline(q, MPI_ERR_ARG,
                       "%s algorithm '%s' exchanges the counts in a blocking step: not in a "
                       "non-blocking call", q->cname, e->info.name);
    q->why = CT_WHY_ARGS;
    return 1;
}

/* Step 4: the communicator's state, the shared segment and the node layout the
 * algorithm runs over, and the schedule's parameters. */
static int attach_state(prep *q)
{
    const ct_call *c = q->c;
    const ct_registry_entry *e = q->e;
    int rc;
    memset(&q->p, 0, sizeof q->p);
    q->p.coll = c->coll;
    q->p.size = q->size;
    q->p.rank = q->rank;
    q->p.root = ct_coll_rooted(c->coll) ? c->root : 0;
    q->p.radix = (q->opts && q->opts->radix) ? q->opts->radix : 4;
    q->p.commutative = q->commutative;
    if (c->coll == CT_BCAST || ct_coll_reduces(c->coll)) {
        memset(&q->x, 0, sizeof q->x);
        if ((rc = ct_exec_describe_type(&q->x, c->recvtype)) != MPI_SUCCESS)
            return decline(q, rc, "%s: invalid datatype", q->cname);
    }
    if ((rc = ct_comm_state_get(c->comm, &q->st)) != MPI_SUCCESS) {
        q->rc = ct_raise_error(c->comm, rc, "%s: cannot set up communicator state", q->cname);
        return 0;
    }
    comm_state *st = q->st;
    if (e->info.flags & CT_ALG_SHARED_MEMORY) {
        if ((rc = ct_segment_setup(st, &st->shm, 0, q->size, q->rank)) != MPI_SUCCESS)
            return fail(q, rc, "cannot set up the shared segment");
        q->why = CT_WHY_NOT_ONE_NODE;
        if (st->shm.state < 0)
            return decline(q, MPI_ERR_ARG,
                           "%s algorithm '%s' needs every rank of the communicator on one node",
                           q->cname, e->info.name);
        q->segment = &st->shm;
        q->why = CT_WHY_ARGS;
    }
    if (e->info.flags & CT_ALG_HIERARCHICAL) {
        if ((rc = ct_node_layout(st, q->size, q->rank)) != MPI_SUCCESS) {
            q->rc = ct_raise_error(c->comm, rc, "%s: cannot find the node layout", q->cname);
            return 0;
        }
        q->p.node_of = st->node_of;
        q->p.layout_id = st->layout_id;
        /* Rank order of a non-commutative op survives a node's segment only on nodes that
         * are intervals of ranks. */
        int interleaved = 0;
        for (int r = 1; r < q->size; r++)
            interleaved |= st->node_of[r] < st->node_of[r - 1];
        int order_lost = interleaved && !q->commutative &&
                         (c->coll == CT_REDUCE || c->coll == CT_ALLREDUCE);
        q->p.intra = q->intra;
        q->p.inter = q->inter_part;
        if (q->part_flags & CT_ALG_SHARED_MEMORY) {
            q->why = CT_WHY_NONCOMMUTATIVE;
            if (order_lost)
                return decline(q, MPI_ERR_OP,
                               "%s/hier with the shm intra part needs a commutative operation "
                               "when nodes interleave ranks", q->cname);
            q->why = CT_WHY_ARGS;
            if ((rc = ct_segment_setup(st, &st->node_shm, st->node_of[q->rank], q->size,
                                       q->rank)) != MPI_SUCCESS) {
                q->rc = ct_raise_error(c->comm, rc,
                                       "%s/hier: cannot set up the nodes' shared segments",
                                       q->cname);
                return 0;
            }
            if (st->node_shm.state < 0)
                return decline(q, MPI_ERR_ARG,
                               "%s/hier: the shm intra part needs the ranks of each node to "
                               "share memory", q->cname);
            q->segment = &st->node_shm;
        }
    }
    return 1;
}

/* Step 5: the job (a kept slot for a blocking call, the caller's otherwise) and its
 * schedule, by family of operations. */
static int build_job(prep *q, ct_job *job, const char **ran)
{
    const ct_call *c = q->c;
    const ct_registry_entry *e = q->e;
    comm_state *st = q->st;
    ct_params *p = &q->p;
    long long seg = (q->opts && q->opts->has_segsize) ? q->opts->segsize
                                                      : e->info.default_segsize;
    int seg_ok = (e->info.flags & CT_ALG_SEGMENTABLE) != 0, rc;
    if (!job) {
        st->current = victim_slot(st);
        st->current->fast_ok = 0; /* the job is this call's from here, run or not */
        st->current->used = ++st->uses;
        job = &st->current->job;
    }
    job->state = st;
    job->segment = q->segment;
    job->form = !c->request                                  ? CT_JOB_BLOCKING
                : q->native_on_reject == CT_REJECT_REPORT ? CT_JOB_PERSISTENT
                                                          : CT_JOB_NONBLOCKING;
    job->alg = e; /* an empty call (no bytes) too: what the log and errors name */
    job->empty = 0;
    job->unpack_after = 0;
    job->nrepack = 0;
    job->takes_tag = 0;
    *ran = e->info.name;
    if (c->coll == CT_REDUCE_SCATTER_BLOCK || c->coll == CT_REDUCE_SCATTER ||
        c->coll == CT_SCAN || c->coll == CT_EXSCAN) {
        rc = ct_setup_reduction_v(c, q->v, st, job, p, e, &q->x);
    } else if (c->coll == CT_BCAST || c->coll == CT_REDUCE || c->coll == CT_ALLREDUCE) {
        ct_exec_ctx *x = &q->x;
        job->empty = (c->recvcount == 0 || x->type_size == 0) &&
                     !q->segment; /* on the flags all the same */
        rc = MPI_SUCCESS;
        if (!job->empty) {
            p->count = x->type_size ? (size_t)c->recvcount : 0; /* zero-size type: no bytes */
            p->type_size = x->type_size;
            p->segcount = seg_ok ? ct_segcount_for(seg, x->type_size) : 0;
            p->in_place =
                c->sendbuf == MPI_IN_PLACE && (c->coll == CT_ALLREDUCE || q->rank == c->root);
            x->src = p->in_place ? c->recvbuf : (void *)c->sendbuf;
            x->dst = c->recvbuf;
            x->op = c->op;
            x->reduce_fn = ct_reduce_kernel(c->op, c->recvtype);
            job->x = *x;
            rc = ct_prepare_schedule(st, job, e, p);
        }
    } else if (c->coll == CT_BARRIER) {
        static char nothing; /* zero-byte messages still want a buffer address */
        ct_byte_ctx(&job->x);
        job->x.src = job->x.dst = &nothing;
        rc = ct_prepare_schedule(st, job, e, p);
    } else {
        p->type_size = 1;
        p->segcount = seg_ok ? ct_segcount_for(seg, 1) : 0;
        rc = ct_coll_is_v(c->coll) ? ct_setup_movement_v(c, q->v, st, job, p, e)
                                   : ct_setup_movement(c, st, job, p, e);
    }
    /* A shared-memory algorithm refuses a call whose element the segment cannot hold
     * (COLLTUNE_SHM_BYTES below the type's extent): a refusal that depends only on the
     * communicator's size, the count and the type, alike on every rank, so each sends the
     * call to the library as it does for any algorithm that cannot serve it. */
    if (rc == MPI_ERR_INTERN && q->segment && q->native_on_reject) {
        *ran = "native";
        q->rc = not_ours(c, q->v, q->native_on_reject, q->go, CT_WHY_SHM_ELEMENT);
        return 0;
    }
    if (rc != MPI_SUCCESS)
        return fail(q, rc, rc == MPI_ERR_NO_MEM    ? "failed (out of memory)"
                           : rc == MPI_ERR_INTERN ? "failed (no schedule could be generated)"
                                                  : "failed (MPI error)");
    return 1;
}

int ct_call_prepare(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                    int native_on_reject, ct_job *job, int *go, const char **ran)
{
    prep q = {.c = c, .v = v, .opts = opts, .native_on_reject = native_on_reject, .go = go,
              .rc = MPI_SUCCESS, .why = CT_WHY_ARGS, .cname = ct_coll_name(c->coll),
              .commutative = 1};
    *ran = "native";
    *go = 0;
    if (!check_call(&q) || !resolve_algorithm(&q) || !check_form(&q) || !attach_state(&q) ||
        !build_job(&q, job, ran))
        return q.rc;
    *go = 1;
    return MPI_SUCCESS;
}
