/*
 * An unmodified MPI program (plain mpicc, no colltune header) with two patterns that run on
 * every MPI library and that a drop-in must not turn into an abort (issue 37):
 *
 *   plain_release --free      every non-blocking collective (the sixteen operations and
 *                             MPI_Ibarrier) and, where MPI 4 has them, persistent ones:
 *                             (a) polled with MPI_Request_get_status until its flag says
 *                             complete, then freed with MPI_Request_free (MPICH's own tests
 *                             do this), results checked at once; (b) freed with
 *                             MPI_Request_free while in flight (erroneous in MPI, yet the
 *                             libraries complete it in the background), results checked
 *                             after MPI_Finalize, when every operation is over (a library
 *                             that refuses this, as Open MPI 4.1 does, is said so: "the
 *                             library refuses", and the request completed). Roots 0 and
 *                             N-1. Prints "rank R release ok C cases" per rank, after
 *                             MPI_Finalize. --no-persistent leaves the persistent forms
 *                             out (MPICH 4.0.2 never completes a persistent collective
 *                             polled with MPI_Request_get_status, without colltune too).
 *   plain_release --shm       every collective that has a shared-memory algorithm (bcast,
 *                             reduce, allreduce, scatter, gather, allgather, alltoall,
 *                             barrier), blocking, with a vector datatype of blocks of 1 to
 *                             8192 ints (an element larger than a small segment), MPI_SUM
 *                             and a user-defined op, in place too; gaps of the derived type
 *                             must stay untouched. Prints "rank R shm ok C cases".
 *                             PLAIN_RELEASE_MAX_BLOCK=B keeps to blocks of at most B ints
 *                             (MPICH 4.0.2 crashes on 100-int blocks, without colltune too).
 *
 * Every value is computed by hand. tests/python/test_release.py runs it natively and under
 * the drop-in with every algorithm forced in turn, and with shm forced and
 * COLLTUNE_SHM_BYTES=4K/8K.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

enum { C = 3, SENTINEL = -7 };

static int rank, nprocs, bad, cases;
static int with_persistent = HAVE_PERSISTENT;

static void check(int ok, const char *what, const char *op, int root, int i)
{
    cases++;
    if (!ok && bad++ < 20)
        fprintf(stderr, "rank %d: %s wrong (%s, root %d, index %d)\n", rank, what, op, root, i);
}

/* ---- --free: non-blocking and persistent collectives released early --------------------- */

typedef enum {
    IBCAST, IREDUCE, IALLREDUCE, ISCATTER, IGATHER, IALLGATHER, IALLTOALL, IBARRIER,
    IALLGATHERV, IALLTOALLV, IGATHERV, ISCATTERV, IREDUCE_SCATTER_BLOCK, IREDUCE_SCATTER, ISCAN,
    IEXSCAN, NOPS
} opkind;

static const char *const op_names[NOPS] = {
    "bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier",
    "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_block", "reduce_scatter",
    "scan", "exscan"};

/* One started operation and its buffers, checked now or after MPI_Finalize. */
typedef struct {
    opkind op;
    int root, persistent;
    int *send, *recv;
    int scounts[64], sdispls[64], rcounts[64], rdispls[64];
} opcase;

static int vcount(int r) { return r % 3 + 1; } /* the v-variants' uneven blocks */

static int fill(int *counts, int *displs, int (*count)(int, int), int arg)
{
    int total = 0;
    for (int r = 0; r < nprocs; r++) {
        counts[r] = count(r, arg);
        displs[r] = total;
        total += counts[r];
    }
    return total;
}

static int by_rank(int r, int arg) { (void)arg; return vcount(r); }
static int pair_count(int r, int me) { return (r + me) % 3 + 1; }

static int *ints(size_t n)
{
    int *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = SENTINEL;
    return p;
}

/* Fills the inputs of o (op, root set) and starts it; 0 when the MPI lacks the form. */
static int start(opcase *o, MPI_Request *req)
{
    const MPI_Comm w = MPI_COMM_WORLD;
    const int n = nprocs, root = o->root;
    int total;
    o->send = o->recv = NULL;
    switch (o->op) {
    case IBCAST:
        o->recv = ints(C);
        for (int i = 0; i < C; i++)
            o->recv[i] = rank == root ? 100 * root + i : SENTINEL;
        break;
    case IREDUCE: case IALLREDUCE: case ISCAN: case IEXSCAN:
        o->send = ints(C), o->recv = ints(C);
        for (int i = 0; i < C; i++)
            o->send[i] = rank + i;
        break;
    case ISCATTER:
        o->send = ints((size_t)n * C), o->recv = ints(C);
        for (int i = 0; i < n * C; i++)
            o->send[i] = 10 * (i / C) + i % C;
        break;
    case IGATHER: case IALLGATHER:
        o->send = ints(C), o->recv = ints((size_t)n * C);
        for (int i = 0; i < C; i++)
            o->send[i] = 10 * rank + i;
        break;
    case IALLTOALL:
        o->send = ints((size_t)n * C), o->recv = ints((size_t)n * C);
        for (int i = 0; i < n * C; i++)
            o->send[i] = 100 * rank + 10 * (i / C) + i % C;
        break;
    case IBARRIER:
        break;
    case IALLGATHERV: case IGATHERV:
        total = fill(o->rcounts, o->rdispls, by_rank, 0);
        o->send = ints((size_t)vcount(rank)), o->recv = ints((size_t)total);
        for (int i = 0; i < vcount(rank); i++)
            o->send[i] = 10 * rank + i;
        break;
    case ISCATTERV:
        total = fill(o->scounts, o->sdispls, by_rank, 0);
        o->send = ints((size_t)total), o->recv = ints((size_t)vcount(rank));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < o->scounts[r]; i++)
                o->send[o->sdispls[r] + i] = 10 * r + i;
        break;
    case IALLTOALLV: {
        int stotal = fill(o->scounts, o->sdispls, pair_count, rank);
        total = fill(o->rcounts, o->rdispls, pair_count, rank);
        o->send = ints((size_t)stotal), o->recv = ints((size_t)total);
        for (int d = 0; d < n; d++)
            for (int i = 0; i < o->scounts[d]; i++)
                o->send[o->sdispls[d] + i] = 100 * rank + 10 * d + i;
        break;
    }
    case IREDUCE_SCATTER_BLOCK:
        o->send = ints((size_t)n * C), o->recv = ints(C);
        for (int j = 0; j < n * C; j++)
            o->send[j] = rank + j;
        break;
    case IREDUCE_SCATTER:
        total = fill(o->rcounts, o->rdispls, by_rank, 0);
        o->send = ints((size_t)total), o->recv = ints((size_t)vcount(rank));
        for (int j = 0; j < total; j++)
            o->send[j] = rank + j;
        break;
    default:
        return 0;
    }
    int *s = o->send, *r = o->recv;
    MPI_Datatype t = MPI_INT;
    if (!o->persistent) {
        switch (o->op) {
        case IBCAST: return !MPI_Ibcast(r, C, t, root, w, req);
        case IREDUCE: return !MPI_Ireduce(s, r, C, t, MPI_SUM, root, w, req);
        case IALLREDUCE: return !MPI_Iallreduce(s, r, C, t, MPI_SUM, w, req);
        case ISCATTER: return !MPI_Iscatter(s, C, t, r, C, t, root, w, req);
        case IGATHER: return !MPI_Igather(s, C, t, r, C, t, root, w, req);
        case IALLGATHER: return !MPI_Iallgather(s, C, t, r, C, t, w, req);
        case IALLTOALL: return !MPI_Ialltoall(s, C, t, r, C, t, w, req);
        case IBARRIER: return !MPI_Ibarrier(w, req);
        case IALLGATHERV:
            return !MPI_Iallgatherv(s, vcount(rank), t, r, o->rcounts, o->rdispls, t, w, req);
        case IALLTOALLV:
            return !MPI_Ialltoallv(s, o->scounts, o->sdispls, t, r, o->rcounts, o->rdispls, t,
                                   w, req);
        case IGATHERV:
            return !MPI_Igatherv(s, vcount(rank), t, r, o->rcounts, o->rdispls, t, root, w, req);
        case ISCATTERV:
            return !MPI_Iscatterv(s, o->scounts, o->sdispls, t, r, vcount(rank), t, root, w, req);
        case IREDUCE_SCATTER_BLOCK: return !MPI_Ireduce_scatter_block(s, r, C, t, MPI_SUM, w, req);
        case IREDUCE_SCATTER: return !MPI_Ireduce_scatter(s, r, o->rcounts, t, MPI_SUM, w, req);
        case ISCAN: return !MPI_Iscan(s, r, C, t, MPI_SUM, w, req);
        case IEXSCAN: return !MPI_Iexscan(s, r, C, t, MPI_SUM, w, req);
        default: return 0;
        }
    }
#if HAVE_PERSISTENT
    MPI_Info i = MPI_INFO_NULL;
    int rc;
    switch (o->op) {
    case IBCAST: rc = MPI_Bcast_init(r, C, t, root, w, i, req); break;
    case IREDUCE: rc = MPI_Reduce_init(s, r, C, t, MPI_SUM, root, w, i, req); break;
    case IALLREDUCE: rc = MPI_Allreduce_init(s, r, C, t, MPI_SUM, w, i, req); break;
    case ISCATTER: rc = MPI_Scatter_init(s, C, t, r, C, t, root, w, i, req); break;
    case IGATHER: rc = MPI_Gather_init(s, C, t, r, C, t, root, w, i, req); break;
    case IALLGATHER: rc = MPI_Allgather_init(s, C, t, r, C, t, w, i, req); break;
    case IALLTOALL: rc = MPI_Alltoall_init(s, C, t, r, C, t, w, i, req); break;
    case IBARRIER: rc = MPI_Barrier_init(w, i, req); break;
    case IALLGATHERV:
        rc = MPI_Allgatherv_init(s, vcount(rank), t, r, o->rcounts, o->rdispls, t, w, i, req);
        break;
    case IALLTOALLV:
        rc = MPI_Alltoallv_init(s, o->scounts, o->sdispls, t, r, o->rcounts, o->rdispls, t, w,
                                i, req);
        break;
    case IGATHERV:
        rc = MPI_Gatherv_init(s, vcount(rank), t, r, o->rcounts, o->rdispls, t, root, w, i, req);
        break;
    case ISCATTERV:
        rc = MPI_Scatterv_init(s, o->scounts, o->sdispls, t, r, vcount(rank), t, root, w, i,
                               req);
        break;
    case IREDUCE_SCATTER_BLOCK:
        rc = MPI_Reduce_scatter_block_init(s, r, C, t, MPI_SUM, w, i, req);
        break;
    case IREDUCE_SCATTER: rc = MPI_Reduce_scatter_init(s, r, o->rcounts, t, MPI_SUM, w, i, req); break;
    case ISCAN: rc = MPI_Scan_init(s, r, C, t, MPI_SUM, w, i, req); break;
    case IEXSCAN: rc = MPI_Exscan_init(s, r, C, t, MPI_SUM, w, i, req); break;
    default: return 0;
    }
    return rc == MPI_SUCCESS && MPI_Start(req) == MPI_SUCCESS;
#else
    return 0;
#endif
}

/* The results of o against the values computed by hand. */
static void verify(const opcase *o)
{
    const int n = nprocs, root = o->root;
    const char *name = op_names[o->op];
    const int sum_ranks = n * (n - 1) / 2;
    switch (o->op) {
    case IBCAST:
        for (int i = 0; i < C; i++)
            check(o->recv[i] == 100 * root + i, "bcast", name, root, i);
        break;
    case IREDUCE: case IALLREDUCE:
        if (o->op == IREDUCE && rank != root)
            break;
        for (int i = 0; i < C; i++)
            check(o->recv[i] == sum_ranks + n * i, "reduction", name, root, i);
        break;
    case ISCAN:
        for (int i = 0; i < C; i++)
            check(o->recv[i] == rank * (rank + 1) / 2 + (rank + 1) * i, "scan", name, root, i);
        break;
    case IEXSCAN:
        for (int i = 0; rank > 0 && i < C; i++)
            check(o->recv[i] == rank * (rank - 1) / 2 + rank * i, "exscan", name, root, i);
        break;
    case ISCATTER:
        for (int i = 0; i < C; i++)
            check(o->recv[i] == 10 * rank + i, "scatter", name, root, i);
        break;
    case IGATHER: case IALLGATHER:
        if (o->op == IGATHER && rank != root)
            break;
        for (int i = 0; i < n * C; i++)
            check(o->recv[i] == 10 * (i / C) + i % C, "gather", name, root, i);
        break;
    case IALLTOALL:
        for (int i = 0; i < n * C; i++)
            check(o->recv[i] == 100 * (i / C) + 10 * rank + i % C, "alltoall", name, root, i);
        break;
    case IBARRIER:
        check(1, "barrier", name, root, 0);
        break;
    case IALLGATHERV: case IGATHERV:
        if (o->op == IGATHERV && rank != root)
            break;
        for (int r = 0; r < n; r++)
            for (int i = 0; i < o->rcounts[r]; i++)
                check(o->recv[o->rdispls[r] + i] == 10 * r + i, "gatherv", name, root, i);
        break;
    case ISCATTERV:
        for (int i = 0; i < vcount(rank); i++)
            check(o->recv[i] == 10 * rank + i, "scatterv", name, root, i);
        break;
    case IALLTOALLV:
        for (int s = 0; s < n; s++)
            for (int i = 0; i < o->rcounts[s]; i++)
                check(o->recv[o->rdispls[s] + i] == 100 * s + 10 * rank + i, "alltoallv", name,
                      root, i);
        break;
    case IREDUCE_SCATTER_BLOCK:
        for (int i = 0; i < C; i++)
            check(o->recv[i] == sum_ranks + n * (rank * C + i), "reduce_scatter_block", name,
                  root, i);
        break;
    case IREDUCE_SCATTER:
        for (int i = 0; i < vcount(rank); i++)
            check(o->recv[i] == sum_ranks + n * (o->rdispls[rank] + i), "reduce_scatter", name,
                  root, i);
        break;
    default:
        break;
    }
}

static opcase later[NOPS * 2]; /* freed in flight: checked after MPI_Finalize */
static int nlater;

static void release_cases(void)
{
    int roots[2] = {0, nprocs - 1};
    for (int persistent = 0; persistent < 1 + with_persistent; persistent++)
        for (int op = 0; op < NOPS; op++)
            for (int ri = 0; ri < (nprocs > 1 ? 2 : 1); ri++) {
                /* (a) complete per MPI_Request_get_status, then freed */
                opcase o = {.op = (opkind)op, .root = roots[ri], .persistent = persistent};
                MPI_Request req = MPI_REQUEST_NULL;
                if (!start(&o, &req))
                    continue;
                int flag = 0;
                while (!flag)
                    MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
                int rc = MPI_Request_free(&req);
                if (rc != MPI_SUCCESS) {
                    /* MPICH 4.0 refuses it on any collective's request: said, completed */
                    printf("rank %d: the library refuses MPI_Request_free after completion "
                           "(%s)\n", rank, op_names[op]);
                    check(req != MPI_REQUEST_NULL, "request kept when refused", op_names[op],
                          o.root, persistent);
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                    if (persistent)
                        MPI_Request_free(&req);
                } else {
                    check(req == MPI_REQUEST_NULL, "free after completion", op_names[op],
                          o.root, persistent);
                }
                verify(&o);
                free(o.send);
                free(o.recv);
                /* (b) freed in flight: checked once MPI_Finalize has returned. Not the
                 * persistent forms: MPICH 5.0 itself crashes in the next MPI_Start then. */
                if (persistent)
                    continue;
                opcase *f = &later[nlater];
                *f = (opcase){.op = (opkind)op, .root = roots[ri], .persistent = persistent};
                if (!start(f, &req))
                    continue;
                rc = MPI_Request_free(&req);
                if (rc != MPI_SUCCESS) {
                    /* Open MPI 4.1 refuses it (MPI_ERR_REQUEST): said, then completed */
                    printf("rank %d: the library refuses MPI_Request_free in flight (%s)\n",
                           rank, op_names[op]);
                    check(req != MPI_REQUEST_NULL, "request kept when refused", op_names[op],
                          f->root, persistent);
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                    verify(f);
                    continue;
                }
                check(req == MPI_REQUEST_NULL, "free in flight", op_names[op], f->root,
                      persistent);
                nlater++;
            }
}

/* ---- --shm: a derived type larger than the segment, user ops, in place ------------------ */

static MPI_Datatype vec;
static int vec_block;

/* A commutative sum that knows the program's vector type (and MPI_INT, should a library
 * hand it packed ints). */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout;
    if (*dt == MPI_INT) {
        for (int i = 0; i < *len; i++)
            b[i] += a[i];
        return;
    }
    if (*dt != vec) {
        bad++;
        return;
    }
    for (int e = 0; e < *len; e++)                 /* element e spans 3 blocks: */
        for (int k = 0; k < 2; k++)                /* data, gap, data */
            for (int j = 0; j < vec_block; j++) {
                size_t at = (size_t)e * 3 * vec_block + (size_t)k * 2 * vec_block + (size_t)j;
                b[at] += a[at];
            }
}

/* Value of int slot i of an element-laid buffer: data slots hold f(slot), gaps SENTINEL. */
static int is_gap(size_t i) { return (i / (size_t)vec_block) % 3 == 1; }

static void shm_cases(void)
{
    static const int blocks[] = {1, 100, 3000, 8192};
    enum { COUNT = 10 };
    const char *cap = getenv("PLAIN_RELEASE_MAX_BLOCK"); /* see main's usage */
    MPI_Op usum;
    MPI_Op_create(user_sum, 1, &usum);
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
        vec_block = blocks[bi];
        if (cap && vec_block > atoi(cap))
            break;
        MPI_Type_vector(2, vec_block, 2 * vec_block, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        const size_t per = 3 * (size_t)vec_block, len = COUNT * per; /* ints per buffer */
        int *a = ints(len * (size_t)nprocs), *b = ints(len * (size_t)nprocs);
        for (int root = 0; root < nprocs; root += nprocs > 1 ? nprocs - 1 : 1) {
            /* bcast */
            for (size_t i = 0; i < len; i++)
                a[i] = is_gap(i) ? SENTINEL : (rank == root ? (int)(i % 1000) + root : 0);
            MPI_Bcast(a, COUNT, vec, root, MPI_COMM_WORLD);
            for (size_t i = 0; i < len; i++)
                check(a[i] == (is_gap(i) ? SENTINEL : (int)(i % 1000) + root), "shm bcast",
                      "bcast", root, (int)i);
            /* reduce and allreduce: the user op on the vector type, MPI_SUM on as many
             * plain ints (predefined ops on derived types are not every library's), in
             * place and not */
            for (int k = 0; k < 4; k++) {
                int in_place = k & 1, all = k >> 1;
                for (int user = 0; user < 2; user++) {
                    int gaps = user; /* MPI_INT has none: every slot is data */
                    for (size_t i = 0; i < len; i++) {
                        a[i] = gaps && is_gap(i) ? SENTINEL : rank + (int)(i % 7);
                        b[i] = gaps && is_gap(i) ? SENTINEL : -1;
                    }
                    int *out = in_place ? a : b;
                    const void *src = in_place && (all || rank == root) ? MPI_IN_PLACE : a;
                    int count = user ? COUNT : (int)len;
                    MPI_Datatype t = user ? vec : MPI_INT;
                    MPI_Op op = user ? usum : MPI_SUM;
                    if (all)
                        MPI_Allreduce(src, out, count, t, op, MPI_COMM_WORLD);
                    else
                        MPI_Reduce(src, out, count, t, op, root, MPI_COMM_WORLD);
                    if (!all && rank != root)
                        continue;
                    for (size_t i = 0; i < len; i++)
                        check(out[i] == (gaps && is_gap(i) ? SENTINEL
                                                           : nprocs * (nprocs - 1) / 2 +
                                                                 nprocs * (int)(i % 7)),
                              all ? "shm allreduce" : "shm reduce", user ? "user op" : "MPI_SUM",
                              root, (int)i);
                }
            }
            /* scatter and gather: 2 elements a rank */
            const size_t blk = 2 * per;
            for (size_t i = 0; i < blk * (size_t)nprocs; i++) {
                a[i] = is_gap(i) ? SENTINEL : (int)(i % 977);
                b[i] = SENTINEL;
            }
            MPI_Scatter(a, 2, vec, b, 2, vec, root, MPI_COMM_WORLD);
            for (size_t i = 0; i < blk; i++)
                check(b[i] == (is_gap(i) ? SENTINEL : (int)(((size_t)rank * blk + i) % 977)),
                      "shm scatter", "scatter", root, (int)i);
            for (size_t i = 0; i < blk * (size_t)nprocs; i++)
                a[i] = SENTINEL;
            MPI_Gather(b, 2, vec, a, 2, vec, root, MPI_COMM_WORLD);
            for (size_t i = 0; rank == root && i < blk * (size_t)nprocs; i++)
                check(a[i] == (is_gap(i) ? SENTINEL : (int)(i % 977)), "shm gather", "gather",
                      root, (int)i);
        }
        /* allgather and alltoall: 1 element a rank */
        for (size_t i = 0; i < per * (size_t)nprocs; i++) {
            a[i] = is_gap(i) ? SENTINEL : 1000 * rank + (int)(i % 500);
            b[i] = SENTINEL;
        }
        MPI_Allgather(a, 1, vec, b, 1, vec, MPI_COMM_WORLD);
        for (size_t i = 0; i < per * (size_t)nprocs; i++)
            check(b[i] == (is_gap(i) ? SENTINEL : 1000 * (int)(i / per) + (int)(i % per % 500)),
                  "shm allgather", "allgather", 0, (int)i);
        for (size_t i = 0; i < per * (size_t)nprocs; i++)
            b[i] = SENTINEL;
        MPI_Alltoall(a, 1, vec, b, 1, vec, MPI_COMM_WORLD);
        for (size_t i = 0; i < per * (size_t)nprocs; i++)
            check(b[i] == (is_gap(i) ? SENTINEL
                                     : 1000 * (int)(i / per) + (int)(((size_t)rank * per +
                                                                       i % per) % 500)),
                  "shm alltoall", "alltoall", 0, (int)i);
        MPI_Barrier(MPI_COMM_WORLD);
        free(a);
        free(b);
        MPI_Type_free(&vec);
    }
    MPI_Op_free(&usum);
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "--free") && strcmp(argv[1], "--shm"))) {
        fprintf(stderr, "usage: %s --free [--no-persistent] | --shm\n", argv[0]);
        return 2;
    }
    if (argc > 2 && !strcmp(argv[2], "--no-persistent"))
        with_persistent = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (!strcmp(argv[1], "--shm")) {
        shm_cases();
        MPI_Finalize();
        printf("rank %d shm %s %d cases\n", rank, bad ? "FAILED" : "ok", cases);
        return bad != 0;
    }
    if (nprocs > 64) {
        fprintf(stderr, "at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* MPI calls freeing a collective's request erroneous: a library that says so (Open MPI
     * 4.1 in flight, MPICH 4.0 always) returns the error rather than aborting */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    release_cases();
    MPI_Finalize(); /* every operation freed in flight is over now */
    for (int k = 0; k < nlater; k++)
        verify(&later[k]);
    printf("rank %d release %s %d cases (%d freed in flight)\n", rank, bad ? "FAILED" : "ok",
           cases, nlater);
    return bad != 0;
}
