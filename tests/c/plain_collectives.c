/*
 * An ordinary MPI program: plain mpicc, no colltune header, no colltune library.
 * The drop-in tests run it with LD_PRELOAD=libcolltune_pmpi.so.
 *
 *   plain_collectives           all eight collectives (MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 *                               MPI_Scatter, MPI_Gather, MPI_Allgather, MPI_Alltoall,
 *                               MPI_Barrier) on MPI_COMM_WORLD, on a communicator from
 *                               MPI_Comm_split and one from MPI_Comm_dup (both freed before
 *                               MPI_Finalize): several roots, counts 0, 1, 7, 1000, 70001,
 *                               the MPI_IN_PLACE forms, send and receive types that differ
 *                               (4 MPI_INT against one contiguous-of-4 type) and a
 *                               non-contiguous MPI_Type_vector whose holes must stay
 *                               untouched. Checks every result itself; each rank prints
 *                               "rank R calls bcast=.. reduce=.. allreduce=.. scatter=..
 *                               gather=.. allgather=.. alltoall=.. barrier=..", then rank 0
 *                               "all ok".
 *   plain_collectives --errors  bad calls with MPI_ERRORS_RETURN; prints each one's class
 *
 * The barrier check compares CLOCK_MONOTONIC readings across ranks: valid on one node
 * (one clock), which is where the tests run it.
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, ALLGATHER, ALLTOALL, BARRIER, NOPS };
static const char *const op_names[NOPS] = {"bcast",  "reduce",    "allreduce", "scatter",
                                           "gather", "allgather", "alltoall",  "barrier"};
static int calls[NOPS], bad;

#define HOLE (-777777) /* what untouched receive memory holds */

static void check(int ok, const char *comm, const char *what, int rank)
{
    if (!ok) {
        if (bad < 20) /* the first few are enough to see what went wrong */
            fprintf(stderr, "rank %d: wrong result: %s on %s\n", rank, what, comm);
        bad++;
    }
}

/* ---- Typed buffers ---------------------------------------------------------------------
 * A block of m ints is described by a kind: `per` ints per element of its datatype, `stride`
 * ints between them. Logical int j lives at offset at(k, j); every other int of the buffer
 * is a hole. */
typedef struct kind {
    const char *name;
    MPI_Datatype type;
    int per, stride;
} kind;

static kind k_int = {"int", MPI_INT, 1, 1};
static kind k_quad = {"contig4", MPI_DATATYPE_NULL, 4, 1}; /* MPI_Type_contiguous(4, MPI_INT) */
static kind k_vec = {"vector", MPI_DATATYPE_NULL, 2, 2};  /* MPI_Type_vector(2, 1, 2, MPI_INT) */

static long extent_of(const kind *k) { return (long)(k->per - 1) * k->stride + 1; }

static long at(const kind *k, long j) { return (j / k->per) * extent_of(k) + (j % k->per) * k->stride; }

static long span(const kind *k, long nints) { return nints / k->per * extent_of(k); }

/* A buffer for nints logical ints of kind k, every int a hole. */
static int *typed_alloc(const kind *k, long nints)
{
    long n = span(k, nints) + 1;
    int *b = malloc(sizeof(int) * (size_t)n);
    if (!b) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < n; i++)
        b[i] = HOLE;
    return b;
}

/* The value of int i of the block that rank `from` sends to rank `to`: different for every
 * (from, to, i) of a call, so a block in the wrong place or a stale one is seen. */
static int val(int from, int to, long i) { return (from * 31 + to + 1) * 100003 + (int)i; }

/* Expected content of logical int j of a receive buffer. */
typedef struct expect {
    int op, rank, root;
    long m; /* ints per block */
} expect;

static int expected(const expect *e, long j)
{
    long blk = j / e->m, i = j % e->m;
    switch (e->op) {
    case BCAST:
        return val(e->root, 0, j);
    case SCATTER:
        return val(e->root, e->rank, j);
    case GATHER:
        return val((int)blk, e->root, i);
    case ALLGATHER:
        return val((int)blk, 0, i);
    case ALLTOALL:
        return val((int)blk, e->rank, i);
    default:
        return 0;
    }
}

/* Checks the nints logical ints of buf against e, and that every hole is still a hole. */
static void check_typed(const int *buf, const kind *k, long nints, const expect *e,
                        const char *comm, const char *what, int rank)
{
    int ok = 1;
    for (long j = 0; j < nints && ok; j++)
        ok = buf[at(k, j)] == expected(e, j);
    long ext = extent_of(k);
    for (long p = 0; p < span(k, nints) + 1 && ok; p++) {
        long q = p % ext;
        int data = p < span(k, nints) && q % k->stride == 0;
        ok = data || buf[p] == HOLE;
    }
    check(ok, comm, what, rank);
}

/* ---- One data-movement call ------------------------------------------------------------- */

typedef struct movement {
    int op;     /* SCATTER, GATHER, ALLGATHER, ALLTOALL */
    long m;     /* ints per block (a multiple of both kinds' per) */
    const kind *sk, *rk;
    int root;
    int in_place;
} movement;

static void run_movement(MPI_Comm comm, const char *cname, const movement *mv)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long m = mv->m, all = m * size;
    const kind *sk = mv->sk, *rk = mv->rk;
    int scount = (int)(m / sk->per), rcount = (int)(m / rk->per), root = mv->root;
    int is_root = rank == root;
    expect e = {mv->op, rank, root, m};
    char what[128];
    snprintf(what, sizeof what, "%s%s m=%ld root=%d %s->%s", op_names[mv->op],
             mv->in_place ? " in place" : "", m, root, sk->name, rk->name);
    int *s = NULL, *r = NULL;
    switch (mv->op) {
    case SCATTER:
        if (is_root) {
            s = typed_alloc(sk, all);
            for (long j = 0; j < all; j++)
                s[at(sk, j)] = val(root, (int)(j / m), j % m);
        }
        if (!(is_root && mv->in_place)) {
            r = typed_alloc(rk, m);
            MPI_Scatter(s, scount, sk->type, r, rcount, rk->type, root, comm);
            check_typed(r, rk, m, &e, cname, what, rank);
        } else {
            /* The root's own block stays where it is: the send buffer, untouched. */
            MPI_Scatter(s, scount, sk->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm);
            int ok = 1;
            for (long j = 0; j < all && ok; j++)
                ok = s[at(sk, j)] == val(root, (int)(j / m), j % m);
            check(ok, cname, what, rank);
        }
        break;
    case GATHER:
        if (is_root)
            r = typed_alloc(rk, all);
        if (is_root && mv->in_place) {
            for (long i = 0; i < m; i++)
                r[at(rk, root * m + i)] = val(root, root, i);
            MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, rcount, rk->type, root, comm);
        } else {
            s = typed_alloc(sk, m);
            for (long i = 0; i < m; i++)
                s[at(sk, i)] = val(rank, root, i);
            MPI_Gather(s, scount, sk->type, r, rcount, rk->type, root, comm);
        }
        if (is_root)
            check_typed(r, rk, all, &e, cname, what, rank);
        break;
    case ALLGATHER:
        r = typed_alloc(rk, all);
        if (mv->in_place) {
            for (long i = 0; i < m; i++)
                r[at(rk, rank * m + i)] = val(rank, 0, i);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, rcount, rk->type, comm);
        } else {
            s = typed_alloc(sk, m);
            for (long i = 0; i < m; i++)
                s[at(sk, i)] = val(rank, 0, i);
            MPI_Allgather(s, scount, sk->type, r, rcount, rk->type, comm);
        }
        check_typed(r, rk, all, &e, cname, what, rank);
        break;
    case ALLTOALL:
        r = typed_alloc(rk, all);
        if (mv->in_place) {
            for (long j = 0; j < all; j++)
                r[at(rk, j)] = val(rank, (int)(j / m), j % m);
            MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, rcount, rk->type, comm);
        } else {
            s = typed_alloc(sk, all);
            for (long j = 0; j < all; j++)
                s[at(sk, j)] = val(rank, (int)(j / m), j % m);
            MPI_Alltoall(s, scount, sk->type, r, rcount, rk->type, comm);
        }
        check_typed(r, rk, all, &e, cname, what, rank);
        break;
    default:
        break;
    }
    calls[mv->op]++;
    free(s);
    free(r);
}

/* ---- Bcast, reduce, allreduce ----------------------------------------------------------- */

static void rooted_reductions(MPI_Comm comm, const char *cname, int n, int root)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        a[i] = rank == root ? i * 3 + root : -1;
    MPI_Bcast(a, n, MPI_INT, root, comm);
    calls[BCAST]++;
    for (int i = 0; i < n; i++)
        check(a[i] == i * 3 + root, cname, "bcast", rank);

    for (int i = 0; i < n; i++) {
        a[i] = rank + i;
        b[i] = HOLE;
    }
    MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
    calls[REDUCE]++;
    if (rank == root)
        for (int i = 0; i < n; i++)
            check(b[i] == size * (size - 1) / 2 + size * i, cname, "reduce", rank);

    /* In place at the root: its contribution is in recvbuf; the others' recvbuf is not
     * significant. */
    for (int i = 0; i < n; i++)
        a[i] = b[i] = (rank + 1) * (i % 11);
    if (rank == root)
        MPI_Reduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, root, comm);
    else
        MPI_Reduce(a, NULL, n, MPI_INT, MPI_SUM, root, comm);
    calls[REDUCE]++;
    if (rank == root)
        for (int i = 0; i < n; i++)
            check(b[i] == size * (size + 1) / 2 * (i % 11), cname, "reduce in place", rank);
    free(a);
    free(b);
}

static void allreductions(MPI_Comm comm, const char *cname, int n)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        a[i] = rank * (i % 5);
    MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, comm);
    calls[ALLREDUCE]++;
    for (int i = 0; i < n; i++)
        check(b[i] == (size - 1) * (i % 5), cname, "allreduce", rank);
    for (int i = 0; i < n; i++)
        b[i] = 1;
    MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, comm);
    calls[ALLREDUCE]++;
    for (int i = 0; i < n; i++)
        check(b[i] == size, cname, "allreduce in place", rank);
    free(a);
    free(b);
}

/* Bcast of a non-contiguous type: the holes between its elements stay untouched. */
static void bcast_vector(MPI_Comm comm, const char *cname, long m, int root)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    int *buf = typed_alloc(&k_vec, m);
    if (rank == root)
        for (long j = 0; j < m; j++)
            buf[at(&k_vec, j)] = val(root, 0, j);
    MPI_Bcast(buf, (int)(m / k_vec.per), k_vec.type, root, comm);
    calls[BCAST]++;
    expect e = {BCAST, rank, root, m};
    check_typed(buf, &k_vec, m, &e, cname, "bcast of a vector type", rank);
    free(buf);
}

/* ---- Barrier ---------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One barrier per rank of comm, that rank arriving late each time: no rank may leave a
 * barrier before the last one has entered it. Times travel by point-to-point messages, so
 * the check does not rely on another collective. */
static void barriers(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int late = 0; late < size; late++) {
        if (rank == late) {
            struct timespec nap = {0, 3000000}; /* 3 ms */
            nanosleep(&nap, NULL);
        }
        double t[2];
        t[0] = now();
        MPI_Barrier(comm);
        t[1] = now();
        calls[BARRIER]++;
        if (rank != 0) {
            MPI_Send(t, 2, MPI_DOUBLE, 0, 77, comm);
            continue;
        }
        double last_in = t[0], first_out = t[1];
        for (int r = 1; r < size; r++) {
            double u[2];
            MPI_Recv(u, 2, MPI_DOUBLE, r, 77, comm, MPI_STATUS_IGNORE);
            last_in = u[0] > last_in ? u[0] : last_in;
            first_out = u[1] < first_out ? u[1] : first_out;
        }
        check(last_in <= first_out, cname, "barrier: a rank left before the last one entered",
              rank);
    }
}

/* ---- Everything on one communicator ------------------------------------------------------ */

static void exercise(MPI_Comm comm, const char *cname)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {0, 1, 7, 1000, 70001};
    int roots[3] = {0, size / 2, size - 1}, nroots = 0;
    for (int i = 0; i < 3; i++) /* distinct roots: 0, the middle, the last */
        if (nroots == 0 || roots[i] != roots[nroots - 1])
            roots[nroots++] = roots[i];

    barriers(comm, cname);
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        int n = counts[ci];
        for (int ri = 0; ri < nroots; ri++) {
            rooted_reductions(comm, cname, n, roots[ri]);
            for (int in_place = 0; in_place < 2; in_place++) {
                movement sc = {SCATTER, n, &k_int, &k_int, roots[ri], in_place};
                run_movement(comm, cname, &sc);
                movement ga = {GATHER, n, &k_int, &k_int, roots[ri], in_place};
                run_movement(comm, cname, &ga);
            }
        }
        allreductions(comm, cname, n);
        for (int in_place = 0; in_place < 2; in_place++) {
            movement ag = {ALLGATHER, n, &k_int, &k_int, 0, in_place};
            run_movement(comm, cname, &ag);
            movement aa = {ALLTOALL, n, &k_int, &k_int, 0, in_place};
            run_movement(comm, cname, &aa);
        }
    }

    /* Send and receive types that differ (same type signature), and a non-contiguous type
     * on either side, for every data-movement operation; 1000 ints is a multiple of both. */
    static const kind *const pairs[][2] = {
        {&k_int, &k_quad}, {&k_quad, &k_int}, {&k_int, &k_vec}, {&k_vec, &k_vec}};
    static const int movers[] = {SCATTER, GATHER, ALLGATHER, ALLTOALL};
    for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++)
        for (size_t oi = 0; oi < sizeof movers / sizeof movers[0]; oi++) {
            movement mv = {movers[oi], 1000, pairs[pi][0], pairs[pi][1], size - 1, 0};
            run_movement(comm, cname, &mv);
        }
    /* In place with a non-contiguous receive type: the rank's own block is read from the
     * strided buffer. */
    static const int in_place_movers[] = {GATHER, ALLGATHER, ALLTOALL};
    for (size_t oi = 0; oi < sizeof in_place_movers / sizeof in_place_movers[0]; oi++) {
        movement mv = {in_place_movers[oi], 14, &k_vec, &k_vec, size - 1, 1};
        run_movement(comm, cname, &mv);
    }
    bcast_vector(comm, cname, 1000, size - 1);
    barriers(comm, cname);
}

/* ---- --errors ---------------------------------------------------------------------------- */

static void report_class(const char *what, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    printf("%s %d\n", what, cls);
}

static void bad_calls(void)
{
    int rank, size, buf[64] = {0}, out[64];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (rank != 0)
        return; /* each call fails before communicating: one rank shows it */
    MPI_Comm w = MPI_COMM_WORLD;
    report_class("bcast_root_size", MPI_Bcast(buf, 4, MPI_INT, size, w));
    report_class("bcast_root_negative", MPI_Bcast(buf, 4, MPI_INT, -1, w));
    report_class("bcast_count_negative", MPI_Bcast(buf, -1, MPI_INT, 0, w));
    report_class("bcast_comm_null", MPI_Bcast(buf, 4, MPI_INT, 0, MPI_COMM_NULL));
    report_class("bcast_type_null", MPI_Bcast(buf, 4, MPI_DATATYPE_NULL, 0, w));
    report_class("reduce_root_size", MPI_Reduce(buf, out, 4, MPI_INT, MPI_SUM, size, w));
    report_class("reduce_op_null", MPI_Reduce(buf, out, 4, MPI_INT, MPI_OP_NULL, 0, w));
    /* Not MPI_Allreduce with a negative count: MPICH 5.0.2 itself crashes on it (colltune's
     * own answer, MPI_ERR_COUNT, is checked by test_errors). */
    report_class("allreduce_op_null", MPI_Allreduce(buf, out, 4, MPI_INT, MPI_OP_NULL, w));
    report_class("allreduce_comm_null", MPI_Allreduce(buf, out, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL));

    report_class("allreduce_recvbuf_in_place",
                 MPI_Allreduce(buf, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, w));
    report_class("reduce_recvbuf_in_place",
                 MPI_Reduce(buf, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, 0, w));

    /* Rank 0 is the root where one is in range. Left out because native MPI itself fails
     * on them with one rank calling: MPI_IN_PLACE at a non-root of MPI_Scatter/MPI_Gather
     * and MPI_Bcast(MPI_IN_PLACE) (MPICH 5.0.2 does not check them, communicates, and hangs
     * or crashes); MPI_Allgather on MPI_COMM_NULL (Open MPI 5.0.11 segfaults); aliased send
     * and receive buffers of MPI_Gather/MPI_Allgather, and a negative sendcount at the
     * scatter root with a valid recvcount (Open MPI 5.0.11 does not check them and hangs). */
    report_class("scatter_root_size", MPI_Scatter(buf, 1, MPI_INT, out, 1, MPI_INT, size, w));
    report_class("scatter_root_negative", MPI_Scatter(buf, 1, MPI_INT, out, 1, MPI_INT, -1, w));
    report_class("scatter_count_negative",
                 MPI_Scatter(buf, -1, MPI_INT, out, -1, MPI_INT, 0, w));
    report_class("scatter_recvcount_negative",
                 MPI_Scatter(buf, 1, MPI_INT, out, -1, MPI_INT, 0, w));
    report_class("scatter_type_null",
                 MPI_Scatter(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_DATATYPE_NULL, 0, w));
    report_class("scatter_comm_null",
                 MPI_Scatter(buf, 1, MPI_INT, out, 1, MPI_INT, 0, MPI_COMM_NULL));
    report_class("scatter_sendbuf_in_place",
                 MPI_Scatter(MPI_IN_PLACE, 1, MPI_INT, out, 1, MPI_INT, 0, w));
    report_class("scatter_both_in_place",
                 MPI_Scatter(MPI_IN_PLACE, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, w));
    report_class("gather_root_size", MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, size, w));
    report_class("gather_root_negative", MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, -1, w));
    report_class("gather_count_negative", MPI_Gather(buf, -1, MPI_INT, out, -1, MPI_INT, 0, w));
    report_class("gather_type_null",
                 MPI_Gather(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_DATATYPE_NULL, 0, w));
    report_class("gather_comm_null",
                 MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, 0, MPI_COMM_NULL));
    report_class("gather_recvbuf_in_place",
                 MPI_Gather(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, w));
    report_class("allgather_count_negative",
                 MPI_Allgather(buf, -1, MPI_INT, out, -1, MPI_INT, w));
    report_class("allgather_type_null",
                 MPI_Allgather(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_DATATYPE_NULL, w));
    report_class("allgather_recvtype_null",
                 MPI_Allgather(buf, 1, MPI_INT, out, 1, MPI_DATATYPE_NULL, w));
    report_class("allgather_recvbuf_in_place",
                 MPI_Allgather(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w));
    report_class("alltoall_count_negative",
                 MPI_Alltoall(buf, -1, MPI_INT, out, -1, MPI_INT, w));
    report_class("alltoall_type_null",
                 MPI_Alltoall(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_DATATYPE_NULL, w));
    report_class("alltoall_sendtype_null",
                 MPI_Alltoall(buf, 1, MPI_DATATYPE_NULL, out, 1, MPI_INT, w));
    report_class("alltoall_comm_null",
                 MPI_Alltoall(buf, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_NULL));
    report_class("alltoall_recvbuf_in_place",
                 MPI_Alltoall(buf, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w));
    report_class("alltoall_both_in_place",
                 MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w));
    report_class("barrier_comm_null", MPI_Barrier(MPI_COMM_NULL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "--errors") == 0) {
        bad_calls();
        MPI_Finalize();
        return 0;
    }
    MPI_Type_contiguous(4, MPI_INT, &k_quad.type);
    MPI_Type_commit(&k_quad.type);
    MPI_Type_vector(2, 1, 2, MPI_INT, &k_vec.type);
    MPI_Type_commit(&k_vec.type);

    exercise(MPI_COMM_WORLD, "world");
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split); /* reversed order */
    exercise(split, "split");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    exercise(dup, "dup");
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    MPI_Type_free(&k_quad.type);
    MPI_Type_free(&k_vec.type);

    int all_bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    calls[ALLREDUCE]++;
    char line[256];
    int len = snprintf(line, sizeof line, "rank %d calls", rank);
    for (int op = 0; op < NOPS; op++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=%d", op_names[op], calls[op]);
    printf("%s\n", line);
    fflush(stdout);
    if (rank == 0)
        printf("%s\n", all_bad ? "WRONG RESULTS" : "all ok");
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
