/*
 * The drop-in against the MPI library, through the MPI symbols only (issue 22): linked
 * against colltune_pmpi, every MPI_X call here is colltune's and every PMPI_X call the
 * library's, so one program compares the two on the same inputs. The algorithm each
 * operation runs comes from the environment (COLLTUNE_<OP>_ALGORITHM, set per ctest
 * entry; none set: the table-less path, native through the drop-in).
 *
 * Every case computes the reference with the library's blocking int form (PMPI_X) and
 * compares whole receive buffers, gaps between blocks included (they must come out
 * untouched); for reductions on a type with holes only the elements are compared (the
 * holes of a reduction's result are not defined), and exscan's rank 0 not at all.
 *   - blocking: MPI_Allgatherv, Alltoallv, Gatherv, Scatterv, Reduce_scatter,
 *     Reduce_scatter_block, Scan, Exscan;
 *   - non-blocking: the eight's MPI_I* forms and MPI_Iallgather, MPI_Ialltoall,
 *     MPI_Ibarrier, completed in turn with MPI_Wait, an MPI_Test loop, and MPI_Waitall
 *     over two of the same operation and an MPI_Ibarrier started together;
 *   - the _c forms of all of them (MPI_VERSION >= 4), with MPI_Count/MPI_Aint arrays;
 *   - persistent (MPI 4, and Open MPI 5, which says MPI 3.1): MPI_*_init (and with
 *     MPI 4 _init_c) of the eight classic and
 *     the eight new operations, two requests of the operation and an MPI_Barrier_init,
 *     started three times (MPI_Start + MPI_Wait, MPI_Startall + MPI_Waitall, MPI_Start
 *     twice + MPI_Test loops) with the input changed before each start, each round
 *     compared with PMPI's blocking result, then MPI_Request_free.
 * Counts: even, uneven with zeros, all zero, one rank alone, and (v data movement)
 * negative displacements (the buffers passed a few elements in); displacements in
 * reverse rank order with gaps. Types: MPI_INT and a vector with holes; reductions
 * MPI_SUM on MPI_INT and a non-commutative user op (affine maps composed) on a
 * contiguous pair type and on the vector type. MPI_IN_PLACE wherever MPI allows it.
 * At non-roots the v-operations' insignificant arguments are NULL in half the patterns.
 * Blocking int cases run every root; the other forms take the roots in turn over the
 * pattern/type/in-place combinations (more combinations than ranks: every root again).
 *
 * Prints one line per operation and form, then "N=n: C cases, F failures"; exits
 * nonzero on any difference. --only OP limits to one operation (MPI name, e.g. Gatherv).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

#define MAXN 64
#define SENTINEL (-7777)
#define ROUNDS 3 /* starts of each persistent request */

static int rank, nprocs, failures, cases, verbose;
static MPI_Datatype vec;     /* 2 ints with a hole between: extent 3 ints */
static MPI_Datatype pair;    /* 2 ints back to back */
static MPI_Op affine_pair;   /* affine maps (a, b) composed: not commutative */
static MPI_Op affine_vec;    /* the same on the vector type (a and b 2 ints apart) */

/* inout = in o inout on maps x -> a*x + b; `stride` ints from one element to the next,
 * b `gap` ints after a. Unsigned: wrapping is defined. */
static void affine(const int *x, int *y, int len, int stride, int gap)
{
    for (int i = 0; i < len; i++) {
        const int *xi = x + (size_t)i * (size_t)stride;
        int *yi = y + (size_t)i * (size_t)stride;
        unsigned a = (unsigned)xi[0] * (unsigned)yi[0];
        unsigned b = (unsigned)xi[0] * (unsigned)yi[gap] + (unsigned)xi[gap];
        yi[0] = (int)a;
        yi[gap] = (int)b;
    }
}
static void affine_pair_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    affine(in, inout, *len, 2, 1);
}
static void affine_vec_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    affine(in, inout, *len, 3, 2);
}

/* The operations, in the order they run. */
enum op {
    ALLGATHERV, ALLTOALLV, GATHERV, SCATTERV, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN,
    EXSCAN, ALLGATHER, ALLTOALL, BARRIER, BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, NOPS
};
static const char *const op_names[NOPS] = {
    "Allgatherv", "Alltoallv", "Gatherv",   "Scatterv", "Reduce_scatter",
    "Reduce_scatter_block", "Scan", "Exscan", "Allgather", "Alltoall",
    "Barrier",    "Bcast",     "Reduce",    "Allreduce", "Scatter", "Gather"};

static int is_reduction(int op)
{
    return op == REDUCE_SCATTER || op == REDUCE_SCATTER_BLOCK || op == SCAN || op == EXSCAN ||
           op == REDUCE || op == ALLREDUCE;
}
static int is_rooted(int op)
{
    return op == GATHERV || op == SCATTERV || op == BCAST || op == REDUCE || op == SCATTER ||
           op == GATHER;
}
static int is_v_movement(int op) { return op <= SCATTERV; }
static int is_new(int op) { return op <= EXSCAN; } /* the eight new operations */

enum form { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
static const char *const form_names[NFORMS] = {"blocking", "non-blocking", "persistent"};

/* Whether the drop-in test runs op in form (large: the _c binding). */
static int runs(int op, int form, int large)
{
#if MPI_VERSION < 4
    if (large)
        return 0;
#endif
#if !HAVE_PERSISTENT
    if (form == PERSISTENT)
        return 0;
#endif
    if (large && op == BARRIER)
        return 0; /* MPI has no MPI_Ibarrier_c / MPI_Barrier_init_c */
    if (form == BLOCKING)
        return is_new(op);
    if (form == NONBLOCKING)
        return op <= BARRIER;
    return 1;
}

typedef struct type_case {
    MPI_Datatype t;
    int ints;    /* ints of one element's extent */
    int hole;    /* the int of each extent that is a hole, or -1 */
    MPI_Op op;   /* for the reductions */
    const char *name;
} type_case;

/* Counts by pattern. v movement: what rank r sends to / holds for block i. */
enum { EVEN, UNEVEN, ZERO, ONE_RANK, NEGATIVE, NPATTERNS };
static const char *const pattern_names[NPATTERNS] = {"even", "uneven", "zero", "one-rank",
                                                     "negative"};

static int pattern_count(int pat, int r, int i, int alltoall)
{
    switch (pat) {
    case EVEN:
        return 3;
    case UNEVEN:
    case NEGATIVE:
        if (alltoall)
            return (r + 2 * i) % 3 == 1 ? 0 : 1 + (r * 3 + i * 5) % 4;
        return i % 3 == 1 ? 0 : 1 + (i * 5) % 4;
    case ZERO:
        return 0;
    default: /* ONE_RANK */
        return i == nprocs / 2 ? 4 : 0;
    }
}

/* The scalar count of the non-v operations by pattern (EVEN, UNEVEN, ZERO only). */
static int scalar_count(int pat) { return pat == EVEN ? 5 : pat == UNEVEN ? 2 : 0; }

static int patterns_of(int op)
{
    if (is_v_movement(op))
        return NPATTERNS;
    if (op == REDUCE_SCATTER)
        return ONE_RANK + 1;
    if (op == BARRIER)
        return 1;
    return ZERO + 1;
}

/* One case: arguments as passed, buffers, what to compare. */
typedef struct dcase {
    int op, pat, root, inplace;
    const type_case *tc;
    int count, rcount;                       /* scalar counts (send side / receive side) */
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    const int *sca, *sda, *rca, *rda;        /* what is passed: NULL where not significant */
#if MPI_VERSION >= 4
    MPI_Count scc[MAXN], rcc[MAXN];
    MPI_Aint sdc[MAXN], rdc[MAXN];
    const MPI_Count *scca, *rcca;
    const MPI_Aint *sdca, *rdca;
#endif
    int *in;                                 /* send buffer */
    size_t inlen, in_off;                    /* ints; the pointer passed is in + in_off */
    int *out[3];                             /* [0] native's, [1] and [2] colltune's */
    size_t outlen, out_off;
    int send_null, recv_null;                /* pass NULL send / receive buffer */
    int send_inplace, recv_inplace;          /* MPI_IN_PLACE as send / receive buffer */
    size_t ip_out, ip_len;                   /* in-place input: out[ip_out..] = in[0..] */
    size_t cmp_from, cmp_len;                /* ints compared */
    int skip_holes;
} dcase;

static int value(int r, int k, int round) { return (r * 7919 + k * 31 + round * 1009) % 100003 + 1; }

static int *ints(size_t n)
{
    int *b = malloc((n ? n : 1) * sizeof(int));
    if (!b)
        MPI_Abort(MPI_COMM_WORLD, 3);
    return b;
}

/* Displacements in reverse rank order with gaps of 2 elements. */
static void gap_displs(const int *counts, int *displs)
{
    int off = 1;
    for (int i = nprocs - 1; i >= 0; i--) {
        displs[i] = off;
        off += counts[i] + 2;
    }
}

static int span(const int *counts, const int *displs)
{
    int end = 0;
    for (int i = 0; i < nprocs; i++)
        if (counts[i] > 0 && displs[i] + counts[i] > end)
            end = displs[i] + counts[i];
    return end;
}

/* The arguments, sizes and comparison range of d (op, pat, root, inplace, tc set). */
static void setup(dcase *d)
{
    int n = nprocs, e = d->tc->ints, op = d->op, pat = d->pat, root = d->root;
    int me_root = rank == root;
    size_t E = (size_t)e;
    d->sca = d->sda = d->rca = d->rda = NULL;
    d->send_null = d->recv_null = d->send_inplace = d->recv_inplace = 0;
    d->ip_out = d->ip_len = 0;
    d->in_off = d->out_off = 0;
    d->skip_holes = 0;
    /* Non-roots pass NULL for what MPI says is not significant there, in odd patterns. */
    int nulls = pat % 2 == 1;
    if (is_v_movement(op)) {
        for (int i = 0; i < n; i++) {
            if (op == ALLTOALLV) {
                d->sc[i] = pattern_count(pat, rank, i, 1);
                d->rc[i] = pattern_count(pat, i, rank, 1);
            } else {
                d->sc[i] = d->rc[i] = pattern_count(pat, 0, i, 0);
            }
        }
        gap_displs(d->sc, d->sd);
        gap_displs(d->rc, d->rd);
        size_t slen = (size_t)(span(d->sc, d->sd) + 1) * E;
        size_t rlen = (size_t)(span(d->rc, d->rd) + 1) * E;
        int shift = pat == NEGATIVE ? 5 : 0;
        for (int i = 0; i < n; i++) {
            d->sd[i] -= shift;
            d->rd[i] -= shift;
        }
        size_t off = (size_t)shift * E;
        int own = op == SCATTERV ? d->rc[rank] : d->sc[rank];
        size_t olen = (size_t)(own + 1) * E;
        d->count = d->rcount = own;
        switch (op) {
        case ALLGATHERV:
        case GATHERV: {
            int receives = op == ALLGATHERV || me_root;
            d->inlen = olen;
            d->outlen = rlen;
            d->out_off = off;
            if (receives) {
                d->rca = d->rc;
                d->rda = d->rd;
            } else if (!nulls) { /* not significant: passed anyway */
                d->rca = d->rc;
                d->rda = d->rd;
            } else {
                d->recv_null = 1;
            }
            if (d->inplace && receives) {
                d->send_inplace = 1;
                d->ip_out = off + (size_t)d->rd[rank] * E;
                d->ip_len = (size_t)own * E;
            }
            d->cmp_from = 0;
            d->cmp_len = receives ? rlen : 0;
            break;
        }
        case SCATTERV:
            d->inlen = slen;
            d->in_off = off;
            d->outlen = olen;
            if (me_root || !nulls) {
                d->sca = d->sc;
                d->sda = d->sd;
            }
            if (!me_root && nulls)
                d->send_null = 1;
            if (d->inplace && me_root)
                d->recv_inplace = 1;
            d->cmp_from = 0;
            d->cmp_len = d->recv_inplace ? 0 : olen;
            break;
        default: /* ALLTOALLV */
            d->inlen = slen > rlen ? slen : rlen;
            d->in_off = off;
            d->outlen = rlen;
            d->out_off = off;
            d->sca = d->sc;
            d->sda = d->sd;
            d->rca = d->rc;
            d->rda = d->rd;
            if (d->inplace) { /* the receive side is both (symmetric counts only) */
                d->send_inplace = 1;
                d->sca = d->sda = NULL;
                d->ip_out = 0;
                d->ip_len = rlen;
            }
            d->cmp_from = 0;
            d->cmp_len = rlen;
            break;
        }
    } else if (is_reduction(op)) {
        int block = scalar_count(pat), total = 0, mine, input;
        for (int i = 0; i < n; i++) {
            d->rc[i] = op == REDUCE_SCATTER ? pattern_count(pat, 0, i, 0) : block;
            total += d->rc[i];
        }
        if (op == REDUCE_SCATTER) {
            input = total;
            mine = d->rc[rank];
            d->rca = d->rc;
        } else if (op == REDUCE_SCATTER_BLOCK) {
            input = n * block;
            mine = block;
        } else {
            input = mine = block;
        }
        d->count = d->rcount = op == REDUCE_SCATTER_BLOCK ? block : input;
        d->inlen = (size_t)(input + 1) * E;
        int receives = op != REDUCE || me_root;
        d->outlen = d->inplace ? d->inlen : (size_t)(mine + 1) * E;
        if (d->inplace && receives) {
            d->send_inplace = 1;
            d->ip_out = 0;
            d->ip_len = (size_t)input * E;
        }
        d->cmp_from = 0;
        d->cmp_len = !receives || (op == EXSCAN && rank == 0) ? 0 : (size_t)mine * E;
        d->skip_holes = d->tc->hole >= 0;
    } else {
        int c = op == BARRIER ? 0 : scalar_count(pat);
        size_t blk = (size_t)c * E, all = (size_t)n * blk;
        d->count = d->rcount = c;
        d->cmp_from = 0;
        switch (op) {
        case ALLGATHER:
        case GATHER: {
            int receives = op == ALLGATHER || me_root;
            d->inlen = blk + E;
            d->outlen = all + E;
            if (d->inplace && receives) {
                d->send_inplace = 1;
                d->ip_out = (size_t)rank * blk;
                d->ip_len = blk;
            }
            if (!receives && nulls)
                d->recv_null = 1;
            d->cmp_len = receives ? d->outlen : 0;
            break;
        }
        case ALLTOALL:
            d->inlen = all + E;
            d->outlen = all + E;
            if (d->inplace) {
                d->send_inplace = 1;
                d->ip_out = 0;
                d->ip_len = all;
            }
            d->cmp_len = d->outlen;
            break;
        case SCATTER:
            d->inlen = all + E;
            d->outlen = blk + E;
            if (!me_root && nulls)
                d->send_null = 1;
            if (d->inplace && me_root)
                d->recv_inplace = 1;
            d->cmp_len = d->recv_inplace ? 0 : d->outlen;
            break;
        case BCAST: /* the root's buffer holds the data */
            d->inlen = blk + E;
            d->outlen = blk + E;
            if (me_root) {
                d->ip_out = 0;
                d->ip_len = blk;
            }
            d->cmp_len = d->outlen;
            break;
        default: /* BARRIER */
            d->inlen = d->outlen = 1;
            d->cmp_len = 0;
            break;
        }
    }
#if MPI_VERSION >= 4
    for (int i = 0; i < n; i++) {
        d->scc[i] = d->sc[i];
        d->rcc[i] = d->rc[i];
        d->sdc[i] = d->sd[i];
        d->rdc[i] = d->rd[i];
    }
    d->scca = d->sca ? d->scc : NULL;
    d->sdca = d->sda ? d->sdc : NULL;
    d->rcca = d->rca ? d->rcc : NULL;
    d->rdca = d->rda ? d->rdc : NULL;
#endif
}

/* Fresh input for round `round`: the send buffer, sentinels in every receive buffer,
 * the in-place input where it is read from the receive buffer. */
static void prepare(dcase *d, int round, int which)
{
    for (size_t k = 0; k < d->inlen; k++)
        d->in[k] = value(rank, (int)k, round);
    for (size_t k = 0; k < d->outlen; k++)
        d->out[which][k] = SENTINEL;
    for (size_t k = 0; k < d->ip_len; k++)
        d->out[which][d->ip_out + k] = d->in[k];
}

/* The call of d in form `form` (large: the _c binding; native: PMPI, blocking only),
 * receiving into out[which]. */
#define FORMS(B, I, ...)                                                                       \
    switch (form) {                                                                            \
    case BLOCKING:                                                                             \
        return native ? P##B(__VA_ARGS__, comm) : B(__VA_ARGS__, comm);                        \
    case NONBLOCKING:                                                                          \
        return I(__VA_ARGS__, comm, rq);                                                       \
    default:                                                                                   \
        PERSISTENT_INIT(B, __VA_ARGS__)                                                        \
    }
#define FORMS_C(B, I, ...)                                                                     \
    switch (form) {                                                                            \
    case BLOCKING:                                                                             \
        return B##_c(__VA_ARGS__, comm);                                                       \
    case NONBLOCKING:                                                                          \
        return I##_c(__VA_ARGS__, comm, rq);                                                   \
    default:                                                                                   \
        return B##_init_c(__VA_ARGS__, comm, MPI_INFO_NULL, rq);                               \
    }
#if HAVE_PERSISTENT
#define PERSISTENT_INIT(B, ...) return B##_init(__VA_ARGS__, comm, MPI_INFO_NULL, rq);
#else
#define PERSISTENT_INIT(B, ...) return MPI_ERR_OTHER;
#endif

static int issue(const dcase *d, int form, int large, int native, int which, MPI_Request *rq)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Datatype t = d->tc->t;
    MPI_Op mop = d->tc->op;
    const void *sb = d->send_inplace ? MPI_IN_PLACE : d->send_null ? NULL : d->in + d->in_off;
    void *rb = d->recv_inplace ? MPI_IN_PLACE
               : d->recv_null  ? NULL
                               : d->out[which] + d->out_off;
    int c = d->count, rcn = d->rcount, root = d->root;
    (void)large;
    if (d->op == BARRIER) {
        if (form == BLOCKING)
            return native ? PMPI_Barrier(comm) : MPI_Barrier(comm);
        if (form == NONBLOCKING)
            return MPI_Ibarrier(comm, rq);
#if HAVE_PERSISTENT
        return MPI_Barrier_init(comm, MPI_INFO_NULL, rq);
#else
        return MPI_ERR_OTHER;
#endif
    }
#if MPI_VERSION >= 4
    if (large) {
        switch (d->op) {
        case ALLGATHERV:
            FORMS_C(MPI_Allgatherv, MPI_Iallgatherv, sb, c, t, rb, d->rcca, d->rdca, t)
        case ALLTOALLV:
            FORMS_C(MPI_Alltoallv, MPI_Ialltoallv, sb, d->scca, d->sdca, t, rb, d->rcca,
                    d->rdca, t)
        case GATHERV:
            FORMS_C(MPI_Gatherv, MPI_Igatherv, sb, c, t, rb, d->rcca, d->rdca, t, root)
        case SCATTERV:
            FORMS_C(MPI_Scatterv, MPI_Iscatterv, sb, d->scca, d->sdca, t, rb, rcn, t, root)
        case REDUCE_SCATTER:
            FORMS_C(MPI_Reduce_scatter, MPI_Ireduce_scatter, sb, rb, d->rcca, t, mop)
        case REDUCE_SCATTER_BLOCK:
            FORMS_C(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, sb, rb, c, t, mop)
        case SCAN:
            FORMS_C(MPI_Scan, MPI_Iscan, sb, rb, c, t, mop)
        case EXSCAN:
            FORMS_C(MPI_Exscan, MPI_Iexscan, sb, rb, c, t, mop)
        case ALLGATHER:
            FORMS_C(MPI_Allgather, MPI_Iallgather, sb, c, t, rb, c, t)
        case ALLTOALL:
            FORMS_C(MPI_Alltoall, MPI_Ialltoall, sb, c, t, rb, c, t)
        case BCAST:
            FORMS_C(MPI_Bcast, MPI_Ibcast, d->out[which], c, t, root)
        case REDUCE:
            FORMS_C(MPI_Reduce, MPI_Ireduce, sb, rb, c, t, mop, root)
        case ALLREDUCE:
            FORMS_C(MPI_Allreduce, MPI_Iallreduce, sb, rb, c, t, mop)
        case SCATTER:
            FORMS_C(MPI_Scatter, MPI_Iscatter, sb, c, t, rb, c, t, root)
        default: /* GATHER */
            FORMS_C(MPI_Gather, MPI_Igather, sb, c, t, rb, c, t, root)
        }
    }
#endif
    switch (d->op) {
    case ALLGATHERV:
        FORMS(MPI_Allgatherv, MPI_Iallgatherv, sb, c, t, rb, d->rca, d->rda, t)
    case ALLTOALLV:
        FORMS(MPI_Alltoallv, MPI_Ialltoallv, sb, d->sca, d->sda, t, rb, d->rca, d->rda, t)
    case GATHERV:
        FORMS(MPI_Gatherv, MPI_Igatherv, sb, c, t, rb, d->rca, d->rda, t, root)
    case SCATTERV:
        FORMS(MPI_Scatterv, MPI_Iscatterv, sb, d->sca, d->sda, t, rb, rcn, t, root)
    case REDUCE_SCATTER:
        FORMS(MPI_Reduce_scatter, MPI_Ireduce_scatter, sb, rb, d->rca, t, mop)
    case REDUCE_SCATTER_BLOCK:
        FORMS(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, sb, rb, c, t, mop)
    case SCAN:
        FORMS(MPI_Scan, MPI_Iscan, sb, rb, c, t, mop)
    case EXSCAN:
        FORMS(MPI_Exscan, MPI_Iexscan, sb, rb, c, t, mop)
    case ALLGATHER:
        FORMS(MPI_Allgather, MPI_Iallgather, sb, c, t, rb, c, t)
    case ALLTOALL:
        FORMS(MPI_Alltoall, MPI_Ialltoall, sb, c, t, rb, c, t)
    case BCAST:
        FORMS(MPI_Bcast, MPI_Ibcast, d->out[which], c, t, root)
    case REDUCE:
        FORMS(MPI_Reduce, MPI_Ireduce, sb, rb, c, t, mop, root)
    case ALLREDUCE:
        FORMS(MPI_Allreduce, MPI_Iallreduce, sb, rb, c, t, mop)
    case SCATTER:
        FORMS(MPI_Scatter, MPI_Iscatter, sb, c, t, rb, c, t, root)
    default: /* GATHER */
        FORMS(MPI_Gather, MPI_Igather, sb, c, t, rb, c, t, root)
    }
}

static void check(const dcase *d, int form, int large, int round, int which, int rc)
{
    cases++;
    const int *got = d->out[which], *want = d->out[0];
    int bad = rc != MPI_SUCCESS;
    size_t at = 0;
    for (size_t i = d->cmp_from; i < d->cmp_from + d->cmp_len && !bad; i++) {
        if (d->skip_holes && (int)(i % (size_t)d->tc->ints) == d->tc->hole)
            continue;
        if (got[i] != want[i]) {
            bad = 1;
            at = i;
        }
    }
    if (bad && failures++ < 20) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, msg, &len);
        fprintf(stderr,
                "FAIL rank %d/%d MPI_%s%s %s %s %s root=%d inplace=%d round=%d buffer=%d: "
                "rc=%d %s int %zu got %d want %d\n",
                rank, nprocs, op_names[d->op], large ? "_c" : "", form_names[form],
                pattern_names[d->pat], d->tc->name, d->root, d->inplace, round, which, rc, msg,
                at, rc == MPI_SUCCESS ? got[at] : 0, rc == MPI_SUCCESS ? want[at] : 0);
    }
}

/* The reference: PMPI's blocking int form into out[0], from the current input. */
static void reference(dcase *d, int round)
{
    prepare(d, round, 0);
    int rc = issue(d, BLOCKING, 0, 1, 0, NULL);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: native MPI_%s failed (%d)\n", rank, op_names[d->op], rc);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
}

/* MPI_Waitall, with MPI_ERR_IN_STATUS replaced by the first failed request's error (not
 * MPI_ERR_PENDING: the ones not completed because of it). */
static int waitall(int n, MPI_Request *rq)
{
    MPI_Status st[3];
    int rc = MPI_Waitall(n, rq, st);
    for (int i = 0; i < n && rc == MPI_ERR_IN_STATUS; i++)
        if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING)
            rc = st[i].MPI_ERROR;
    return rc;
}

/* An MPI_Test loop until *rq completes. */
static int test_loop(MPI_Request *rq)
{
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS)
        rc = MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
    return rc;
}

static void run_case(dcase *d, int form, int large)
{
    setup(d);
    d->in = ints(d->inlen);
    for (int j = 0; j < 3; j++)
        d->out[j] = ints(d->outlen);
    if (verbose)
        fprintf(stderr, "rank %d: MPI_%s%s %s %s %s root %d inplace %d\n", rank,
                op_names[d->op], large ? "_c" : "", form_names[form], pattern_names[d->pat],
                d->tc->name, d->root, d->inplace);
    int rc;
    if (form == BLOCKING) {
        reference(d, 0);
        prepare(d, 0, 1);
        rc = issue(d, BLOCKING, large, 0, 1, NULL);
        check(d, form, large, 0, 1, rc);
    } else if (form == NONBLOCKING) {
        /* The completion in turn: MPI_Wait, an MPI_Test loop, MPI_Waitall over two of the
         * operation and an MPI_Ibarrier started together. */
        int how = cases % 3;
        MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        reference(d, 0);
        prepare(d, 0, 1);
        rc = issue(d, NONBLOCKING, large, 0, 1, &rq[0]);
        if (how == 2 && rc == MPI_SUCCESS) {
            prepare(d, 0, 2);
            rc = issue(d, NONBLOCKING, large, 0, 2, &rq[1]);
            if (rc == MPI_SUCCESS)
                rc = MPI_Ibarrier(MPI_COMM_WORLD, &rq[2]);
        }
        if (rc == MPI_SUCCESS)
            rc = how == 0 ? MPI_Wait(&rq[0], MPI_STATUS_IGNORE)
                 : how == 1 ? test_loop(&rq[0])
                            : waitall(3, rq);
        check(d, form, large, 0, 1, rc);
        if (how == 2)
            check(d, form, large, 0, 2, rc);
        if (rc != MPI_SUCCESS) /* the others may still be pending: give up on this rank */
            MPI_Abort(MPI_COMM_WORLD, 5);
    } else {
        /* Two persistent requests of the operation and a persistent barrier, started
         * ROUNDS times with fresh input each time. */
        MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        prepare(d, 0, 1);
        prepare(d, 0, 2);
        rc = issue(d, PERSISTENT, large, 0, 1, &rq[0]);
        if (rc == MPI_SUCCESS)
            rc = issue(d, PERSISTENT, large, 0, 2, &rq[1]);
#if HAVE_PERSISTENT
        if (rc == MPI_SUCCESS)
            rc = MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]);
#endif
        if (rc != MPI_SUCCESS) {
            check(d, form, large, 0, 1, rc);
            MPI_Abort(MPI_COMM_WORLD, 5);
        }
        for (int round = 0; round < ROUNDS; round++) {
            int both = round > 0;
            reference(d, round);
            prepare(d, round, 1);
            if (both)
                prepare(d, round, 2);
            if (round == 0) {
                rc = MPI_Start(&rq[0]);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
            } else if (round == 1) {
                rc = MPI_Startall(3, rq);
                if (rc == MPI_SUCCESS)
                    rc = waitall(3, rq);
            } else {
                rc = MPI_Start(&rq[1]);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Start(&rq[0]);
                if (rc == MPI_SUCCESS)
                    rc = test_loop(&rq[0]);
                if (rc == MPI_SUCCESS)
                    rc = test_loop(&rq[1]);
            }
            check(d, form, large, round, 1, rc);
            if (both)
                check(d, form, large, round, 2, rc);
            if (rc != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 5);
        }
        for (int j = 0; j < 3; j++)
            if (rq[j] != MPI_REQUEST_NULL && MPI_Request_free(&rq[j]) != MPI_SUCCESS)
                check(d, form, large, ROUNDS, 1, MPI_ERR_REQUEST);
    }
    free(d->in);
    for (int j = 0; j < 3; j++)
        free(d->out[j]);
}

static int inplace_allowed(int op, int pat)
{
    if (op == BARRIER)
        return 0;
    /* alltoall(v) in place needs symmetric counts: even or zero */
    if ((op == ALLTOALLV || op == ALLTOALL) && !(pat == EVEN || pat == ZERO))
        return 0;
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *only = argc > 2 && !strcmp(argv[1], "--only") ? argv[2] : NULL;
    verbose = getenv("CT_TEST_VERBOSE") != NULL;
    if (nprocs > MAXN) {
        if (!rank)
            fprintf(stderr, "at most %d ranks\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(affine_pair_fn, 0, &affine_pair);
    MPI_Op_create(affine_vec_fn, 0, &affine_vec);
    const type_case movement_types[] = {{MPI_INT, 1, -1, MPI_OP_NULL, "MPI_INT"},
                                        {vec, 3, 1, MPI_OP_NULL, "vector(2,1,2)"}};
    /* MPI libraries refuse predefined ops on derived types: the user op there. */
    const type_case reduction_types[] = {{MPI_INT, 1, -1, MPI_SUM, "MPI_INT/SUM"},
                                         {pair, 2, -1, affine_pair, "pair/affine"},
                                         {vec, 3, 1, affine_vec, "vector/affine"}};
    for (int op = 0; op < NOPS; op++) {
        if (only && strcmp(only, op_names[op]))
            continue;
        const type_case *types = is_reduction(op) ? reduction_types : movement_types;
        int ntypes = is_reduction(op) ? 3 : op == BARRIER ? 1 : 2;
        for (int form = 0; form < NFORMS; form++)
            for (int large = 0; large <= 1; large++) {
                if (!runs(op, form, large))
                    continue;
                int before = failures, ncases = cases, combo = 0;
                for (int pat = 0; pat < patterns_of(op); pat++)
                    for (int ti = 0; ti < ntypes; ti++)
                        for (int ip = 0; ip <= inplace_allowed(op, pat); ip++) {
                            dcase d = {.op = op, .pat = pat, .inplace = ip, .tc = &types[ti]};
                            if (!is_rooted(op)) {
                                run_case(&d, form, large);
                                continue;
                            }
                            if (form == BLOCKING && !large) /* every root */
                                for (d.root = 0; d.root < nprocs; d.root++)
                                    run_case(&d, form, large);
                            else { /* the roots in turn */
                                d.root = combo++ % nprocs;
                                run_case(&d, form, large);
                            }
                        }
                int bad = failures - before, all_bad;
                MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                char name[40];
                snprintf(name, sizeof name, "MPI_%s%s", op_names[op], large ? "_c" : "");
                if (rank == 0)
                    printf("%-28s %-12s %5d cases %s\n", name, form_names[form],
                           cases - ncases, all_bad ? "FAILED" : "ok");
            }
    }
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("N=%d: %d cases per rank, %d failures\n", nprocs, cases, total);
    MPI_Op_free(&affine_pair);
    MPI_Op_free(&affine_vec);
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return total ? 1 : 0;
}
