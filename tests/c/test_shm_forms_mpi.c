/*
 * The shared-memory algorithms under the non-blocking and persistent forms (issue 36):
 * every shm algorithm and every hier algorithm with the shm intra part, started as a
 * non-blocking call (ct_i*) and as a persistent one (ct_plan_init once, ct_plan_start
 * twice with the input refilled in between, as MPI_*_init / MPI_Start do in the
 * drop-in), every root, counts of 0, 1 and across a lane's chunks (run with a small
 * COLLTUNE_SHM_BYTES), MPI_IN_PLACE, a derived datatype with holes, a non-commutative
 * user op on a derived type; then several calls in flight on one communicator (an
 * Iallreduce, an Ibcast and an Ibarrier completed in reverse order, a blocking call made
 * while they are in flight; more starts than the
 * segment has lanes; four persistent calls started together, completed with
 * ct_waitall) and on two communicators at once; with --threads, four threads each on
 * its own communicator (MPI_THREAD_MULTIPLE). Every value is checked against one
 * computed here. Prints "shm forms: C cases, F failure(s)" at rank 0.
 *   mpiexec -n N test_shm_forms_mpi [--thread] [--threads] [--hier]
 * --thread runs the progress thread (the offloaded parts), else the waits drive all.
 * --hier: hier+shm only, for ranks on several hosts (the test bed, docs/TESTBED.md), where
 * the flat shm algorithms have no segment over the whole communicator.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "colltune.h"
#include "nbc/nbc.h"

/* MPICH 5.0.2 dies in MPI_Finalize under ThreadSanitizer (a two-line program too,
 * scripts/check-sanitize.sh): the run ends with _exit once every rank has its verdict. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

static int rank, nprocs;
static atomic_int cases, failures; /* the threads' too */
static MPI_Datatype strided; /* an int every 2 ints: holes the calls must leave alone */
static MPI_Datatype affine;  /* two ints (m, c): the map x -> m x + c */
static MPI_Op compose;        /* affine maps in rank order: not commutative */
enum { P = 1000003 };

static int val(int it, int r, int i) { return (it * 7919 + r * 131 + i * 17) % 100003; }

static void fail(const char *what, const char *alg, int root, int count, int i, long got,
                 long want)
{
    if (atomic_fetch_add(&failures, 1) < 10)
        fprintf(stderr, "rank %d: %s/%s root %d count %d, element %d: got %ld, want %ld\n",
                rank, what, alg, root, count, i, got, want);
}

/* a op b: a first, then b (MPI: inout = in op inout, in from the lower ranks). */
static void compose_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        long long m = (long long)a[2 * i] * b[2 * i] % P;
        long long c = ((long long)a[2 * i + 1] * b[2 * i] + b[2 * i + 1]) % P;
        b[2 * i] = (int)m;
        b[2 * i + 1] = (int)c;
    }
}

typedef enum { PLAIN = 0, IN_PLACE, DERIVED, NVARIANTS } variant;
typedef enum { NONBLOCKING = 0, PERSISTENT } form;

/* One operation's buffers and how to start it. */
typedef struct call {
    ct_coll coll;
    variant var;
    int root, count, n;
    MPI_Comm comm;
    int me;
    int *in, *out;
    size_t in_len, out_len; /* ints */
    MPI_Datatype type;
    int stride; /* ints per element in the buffers (2: strided; 2: affine) */
} call;

static const ct_options *opts_for(const char *alg, ct_options *o)
{
    ct_options_init(o);
    if (!strcmp(alg, "hier+shm")) {
        o->algorithm = "hier";
        o->intra = "shm";
    } else {
        o->algorithm = alg;
    }
    return o;
}

/* Elements of the input / output of c, and blocks. */
static int is_rooted(ct_coll c)
{
    return c == CT_BCAST || c == CT_REDUCE || c == CT_SCATTER || c == CT_GATHER;
}

/* Fills the input for start `it` (and the output with a marker, kept where in place). */
static void fill(call *c, int it)
{
    int n = c->n, me = c->me, k = c->count, st = c->stride;
    for (size_t i = 0; i < c->in_len; i++)
        c->in[i] = -7;
    for (size_t i = 0; i < c->out_len; i++)
        c->out[i] = -5;
    switch (c->coll) {
    case CT_BCAST:
        for (int i = 0; i < k; i++)
            c->out[i * st] = me == c->root ? val(it, me, i) : -1;
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE: {
        int *dst = (c->var == IN_PLACE && (c->coll == CT_ALLREDUCE || me == c->root)) ? c->out
                                                                                       : c->in;
        for (int i = 0; i < k; i++) {
            if (c->var == DERIVED) {
                dst[2 * i] = 1 + val(it, me, i) % 97;
                dst[2 * i + 1] = val(it, me, i);
            } else {
                dst[i] = val(it, me, i);
            }
        }
        break;
    }
    case CT_SCATTER:
        if (me == c->root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < k; i++)
                    c->in[(r * k + i) * st] = val(it, r, i);
        if (c->var == IN_PLACE && me == c->root) /* the root's block stays in the input */
            break;
        break;
    case CT_GATHER:
    case CT_ALLGATHER:
        if (c->var == IN_PLACE && (c->coll == CT_ALLGATHER || me == c->root))
            for (int i = 0; i < k; i++)
                c->out[(me * k + i) * st] = val(it, me, i);
        else
            for (int i = 0; i < k; i++)
                c->in[i * st] = val(it, me, i);
        break;
    case CT_ALLTOALL: {
        int *src = c->var == IN_PLACE ? c->out : c->in;
        for (int r = 0; r < n; r++)
            for (int i = 0; i < k; i++)
                src[(r * k + i) * st] = val(it, me, r * k + i);
        break;
    }
    default:
        break;
    }
}

/* Checks the result of start `it`. */
static void check(call *c, int it, const char *alg)
{
    int n = c->n, me = c->me, k = c->count, st = c->stride, bad = 0;
    const char *name = ct_coll_name(c->coll);
    /* The holes of a strided output stay as they were. */
    if (c->var == DERIVED && c->coll != CT_REDUCE && c->coll != CT_ALLREDUCE)
        for (size_t i = 1; i < c->out_len && !bad; i += 2)
            if (c->out[i] != -5 && (bad = 1))
                fail(name, alg, c->root, k, (int)i, c->out[i], -5);
    switch (c->coll) {
    case CT_BCAST:
        for (int i = 0; i < k && !bad; i++)
            if (c->out[i * st] != val(it, c->root, i) && (bad = 1))
                fail(name, alg, c->root, k, i, c->out[i * st], val(it, c->root, i));
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE:
        if (c->coll == CT_REDUCE && me != c->root)
            break;
        for (int i = 0; i < k && !bad; i++) {
            if (c->var == DERIVED) {
                long long m = 1, cc = 0;
                for (int r = 0; r < n; r++) {
                    long long rm = 1 + val(it, r, i) % 97, rc = val(it, r, i);
                    cc = (cc * rm + rc) % P;
                    m = m * rm % P;
                }
                if ((c->out[2 * i] != m || c->out[2 * i + 1] != cc) && (bad = 1))
                    fail(name, alg, c->root, k, i, c->out[2 * i + 1], cc);
            } else {
                long sum = 0;
                for (int r = 0; r < n; r++)
                    sum += val(it, r, i);
                if (c->out[i] != sum && (bad = 1))
                    fail(name, alg, c->root, k, i, c->out[i], sum);
            }
        }
        break;
    case CT_SCATTER:
        if (c->var == IN_PLACE && me == c->root)
            break;
        for (int i = 0; i < k && !bad; i++)
            if (c->out[i * st] != val(it, me, i) && (bad = 1))
                fail(name, alg, c->root, k, i, c->out[i * st], val(it, me, i));
        break;
    case CT_GATHER:
    case CT_ALLGATHER:
        if (c->coll == CT_GATHER && me != c->root)
            break;
        for (int r = 0; r < n && !bad; r++)
            for (int i = 0; i < k && !bad; i++)
                if (c->out[(r * k + i) * st] != val(it, r, i) && (bad = 1))
                    fail(name, alg, c->root, k, r * k + i, c->out[(r * k + i) * st],
                         val(it, r, i));
        break;
    case CT_ALLTOALL:
        for (int r = 0; r < n && !bad; r++)
            for (int i = 0; i < k && !bad; i++)
                if (c->out[(r * k + i) * st] != val(it, r, me * k + i) && (bad = 1))
                    fail(name, alg, c->root, k, r * k + i, c->out[(r * k + i) * st],
                         val(it, r, me * k + i));
        break;
    default:
        break;
    }
}

static void setup(call *c, ct_coll coll, variant var, int root, int count, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    c->coll = coll;
    c->var = var;
    c->root = root;
    c->count = count;
    c->comm = comm;
    MPI_Comm_size(comm, &c->n);
    MPI_Comm_rank(comm, &c->me);
    int reduces = coll == CT_REDUCE || coll == CT_ALLREDUCE;
    c->type = var == DERIVED ? (reduces ? affine : strided) : MPI_INT;
    c->stride = var == DERIVED ? 2 : 1;
    size_t all = (size_t)count * (size_t)c->n * (size_t)c->stride + 1;
    c->in_len = c->out_len = all;
    c->in = malloc(all * sizeof(int));
    c->out = malloc(all * sizeof(int));
}

static void release(call *c)
{
    free(c->in);
    free(c->out);
}

/* The ct_call of c (for the persistent form's ct_plan_init). */
static ct_call as_call(call *c, MPI_Request *req)
{
    ct_call k;
    memset(&k, 0, sizeof k);
    int inplace = c->var == IN_PLACE;
    int me = c->me, root = c->root;
    k.coll = c->coll;
    k.comm = c->comm;
    k.root = is_rooted(c->coll) ? root : 0;
    k.request = req;
    k.sendtype = k.recvtype = c->type;
    k.sendcount = k.recvcount = c->count;
    k.op = c->var == DERIVED ? compose : MPI_SUM;
    k.sendbuf = c->in;
    k.recvbuf = c->out;
    switch (c->coll) {
    case CT_BCAST:
        k.sendbuf = NULL;
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE:
        if (inplace && (c->coll == CT_ALLREDUCE || me == root))
            k.sendbuf = MPI_IN_PLACE;
        break;
    case CT_SCATTER:
        if (inplace && me == root)
            k.recvbuf = MPI_IN_PLACE;
        break;
    case CT_GATHER:
    case CT_ALLGATHER:
    case CT_ALLTOALL:
        if (inplace && (c->coll != CT_GATHER || me == root))
            k.sendbuf = MPI_IN_PLACE;
        break;
    case CT_BARRIER:
        k.sendbuf = k.recvbuf = NULL;
        k.sendtype = k.recvtype = MPI_DATATYPE_NULL;
        k.sendcount = k.recvcount = 0;
        break;
    default:
        break;
    }
    return k;
}

/* Starts c non-blocking through the public API. */
static int istart(call *c, const ct_options *o, MPI_Request *req)
{
    ct_call k = as_call(c, req);
    switch (c->coll) {
    case CT_BCAST:
        return ct_ibcast(k.recvbuf, k.recvcount, k.recvtype, k.root, k.comm, o, req);
    case CT_REDUCE:
        return ct_ireduce(k.sendbuf, k.recvbuf, k.recvcount, k.recvtype, k.op, k.root, k.comm,
                          o, req);
    case CT_ALLREDUCE:
        return ct_iallreduce(k.sendbuf, k.recvbuf, k.recvcount, k.recvtype, k.op, k.comm, o,
                             req);
    case CT_SCATTER:
        return ct_iscatter(k.sendbuf, k.sendcount, k.sendtype, k.recvbuf, k.recvcount,
                           k.recvtype, k.root, k.comm, o, req);
    case CT_GATHER:
        return ct_igather(k.sendbuf, k.sendcount, k.sendtype, k.recvbuf, k.recvcount,
                          k.recvtype, k.root, k.comm, o, req);
    case CT_ALLGATHER:
        return ct_iallgather(k.sendbuf, k.sendcount, k.sendtype, k.recvbuf, k.recvcount,
                             k.recvtype, k.comm, o, req);
    case CT_ALLTOALL:
        return ct_ialltoall(k.sendbuf, k.sendcount, k.sendtype, k.recvbuf, k.recvcount,
                            k.recvtype, k.comm, o, req);
    case CT_BARRIER:
        return ct_ibarrier(k.comm, o, req);
    default:
        return MPI_ERR_ARG;
    }
}

/* A persistent call prepared once; ct_plan_start starts it (MPI_Start in the drop-in). */
static int pinit(call *c, const ct_options *o, MPI_Request *handle, ct_plan **plan)
{
    ct_call k = as_call(c, handle);
    int go = 0;
    const char *ran;
    int rc = ct_plan_init(&k, NULL, o, &go, &ran);
    if (rc != MPI_SUCCESS || go != 1)
        return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
    *plan = ct_plan_find(*handle);
    return *plan ? MPI_SUCCESS : MPI_ERR_OTHER;
}

static void pfree(ct_plan *plan, MPI_Request *handle)
{
    ct_plan_free(plan, handle);
}

/* One call of c's shape in form f with algorithm alg; the result checked. */
static void one_case(ct_coll coll, const char *alg, form f, variant var, int root, int count,
                     MPI_Comm comm)
{
    ct_options o;
    opts_for(alg, &o);
    call c;
    setup(&c, coll, var, root, count, comm);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    cases++;
    if (f == NONBLOCKING) {
        fill(&c, 1);
        rc = istart(&c, &o, &req);
        if (rc == MPI_SUCCESS)
            rc = ct_wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            fail(ct_coll_name(coll), alg, root, count, -1, rc, 0);
        else
            check(&c, 1, alg);
    } else {
        ct_plan *plan = NULL;
        fill(&c, 0); /* what init sees: the starts must copy the input again */
        rc = pinit(&c, &o, &req, &plan);
        for (int it = 1; it <= 2 && rc == MPI_SUCCESS; it++) {
            fill(&c, it);
            rc = ct_plan_start(plan);
            if (rc == MPI_SUCCESS)
                rc = ct_wait(&req, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                check(&c, it, alg);
        }
        if (rc != MPI_SUCCESS)
            fail(ct_coll_name(coll), alg, root, count, -2, rc, 0);
        if (plan)
            pfree(plan, &req);
    }
    release(&c);
}

/* Several calls in flight on one communicator (and, with comm2, on two at once). */
static void in_flight(const char *alg, MPI_Comm comm, MPI_Comm comm2)
{
    ct_options o;
    opts_for(alg, &o);
    /* An Iallreduce, an Ibcast and an Ibarrier, completed in reverse order; with a second
     * communicator, its calls interleaved. */
    enum { NC = 6 };
    call cs[NC];
    MPI_Request req[NC];
    ct_coll kinds[3] = {CT_ALLREDUCE, CT_BCAST, CT_BARRIER};
    int ncalls = comm2 != MPI_COMM_NULL ? 6 : 3;
    for (int i = 0; i < ncalls; i++) {
        MPI_Comm cm = i % 2 && comm2 != MPI_COMM_NULL ? comm2 : comm;
        setup(&cs[i], kinds[i % 3], PLAIN, 0, 1000 + 3 * i, cm);
        fill(&cs[i], 10 + i);
    }
    for (int i = 0; i < ncalls; i++)
        if (istart(&cs[i], &o, &req[i]) != MPI_SUCCESS)
            fail("start in flight", alg, 0, i, -1, 0, 0);
    /* A blocking call meanwhile (lane 0, beside the lanes of those in flight). */
    call blk;
    setup(&blk, CT_ALLREDUCE, PLAIN, 0, 2000, comm);
    fill(&blk, 30);
    ct_call bk = as_call(&blk, NULL);
    if (ct_allreduce(bk.sendbuf, bk.recvbuf, blk.count, MPI_INT, MPI_SUM, comm, &o) !=
        MPI_SUCCESS)
        fail("blocking in flight", alg, 0, 0, -1, 0, 0);
    check(&blk, 30, alg);
    release(&blk);
    cases++;
    for (int i = ncalls - 1; i >= 0; i--) {
        ct_wait(&req[i], MPI_STATUS_IGNORE);
        check(&cs[i], 10 + i, alg);
        release(&cs[i]);
        cases++;
    }
    /* More starts than the segment's lanes: the later ones wait for the earlier ones at
     * their gate, the waits driving all. */
    enum { MANY = 7 };
    call many[MANY];
    MPI_Request mreq[MANY];
    for (int i = 0; i < MANY; i++) {
        setup(&many[i], i % 2 ? CT_ALLREDUCE : CT_BCAST, PLAIN, i % nprocs, 3000 + i, comm);
        fill(&many[i], 20 + i);
        if (istart(&many[i], &o, &mreq[i]) != MPI_SUCCESS)
            fail("start many", alg, 0, i, -1, 0, 0);
    }
    for (int i = MANY - 1; i >= 0; i--) {
        ct_wait(&mreq[i], MPI_STATUS_IGNORE);
        check(&many[i], 20 + i, alg);
        release(&many[i]);
        cases++;
    }
    /* Four persistent calls started together (MPI_Startall), completed together. */
    ct_coll pk[4] = {CT_BCAST, CT_ALLREDUCE, CT_ALLGATHER, CT_BARRIER};
    call pc[4];
    MPI_Request preq[4];
    ct_plan *plans[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        setup(&pc[i], pk[i], PLAIN, nprocs - 1, 500 + i, comm);
        fill(&pc[i], 0);
        if (pinit(&pc[i], &o, &preq[i], &plans[i]) != MPI_SUCCESS)
            fail("persistent init", alg, 0, i, -1, 0, 0);
    }
    for (int it = 1; it <= 3; it++) {
        for (int i = 0; i < 4; i++) {
            fill(&pc[i], it);
            if (plans[i])
                ct_plan_start(plans[i]);
        }
        ct_waitall(4, preq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 4; i++) {
            check(&pc[i], it, alg);
            cases++;
        }
    }
    for (int i = 0; i < 4; i++) {
        if (plans[i])
            pfree(plans[i], &preq[i]);
        release(&pc[i]);
    }
}

/* --threads: each thread its own communicator, its own calls in flight. */
typedef struct worker {
    MPI_Comm comm;
    int id;
} worker;

static void *thread_main(void *arg)
{
    worker *w = arg;
    for (int rep = 0; rep < 4; rep++)
        in_flight(w->id % 2 ? "hier+shm" : "shm", w->comm, MPI_COMM_NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    int thread = 0, threads = 0, hier_only = 0, provided;
    for (int i = 1; i < argc; i++) {
        hier_only |= !strcmp(argv[i], "--hier");
        thread |= !strcmp(argv[i], "--thread");
        threads |= !strcmp(argv[i], "--threads");
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if ((thread || threads) && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("shm forms: no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (thread && ct_progress_start(MPI_COMM_WORLD) != MPI_SUCCESS) {
        if (rank == 0)
            printf("shm forms: no progress thread\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Type_contiguous(2, MPI_INT, &affine);
    MPI_Type_commit(&affine);
    MPI_Op_create(compose_fn, 0, &compose);
    MPI_Comm comm, comm2;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm2);
    const char *algs[2] = {"shm", "hier+shm"};
    const ct_coll flat[] = {CT_BCAST, CT_REDUCE,    CT_ALLREDUCE, CT_GATHER,
                            CT_SCATTER, CT_ALLGATHER, CT_ALLTOALL, CT_BARRIER};
    const int counts[] = {0, 1, 1000, 5000};
    int mode = 0;
    if (!threads) {
        for (int a = hier_only; a < 2; a++)
            for (size_t k = 0; k < sizeof flat / sizeof *flat; k++) {
                ct_coll coll = flat[k];
                int hier_ok = coll == CT_BCAST || coll == CT_REDUCE || coll == CT_ALLREDUCE ||
                              coll == CT_ALLGATHER || coll == CT_BARRIER;
                if (a == 1 && !hier_ok)
                    continue; /* no hierarchical algorithm for it */
                int nroots = is_rooted(coll) ? nprocs : 1;
                for (int root = 0; root < nroots; root++)
                    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
                        for (int f = 0; f < 2; f++) {
                            /* Every count at root 0, the others 1 and past a lane (CI
                             * time); the barrier once. */
                            if ((root > 0 && (counts[ci] == 0 || counts[ci] == 1000)) ||
                                (coll == CT_BARRIER && ci > 0))
                                continue;
                            int count = coll == CT_BARRIER ? 0 : counts[ci];
                            variant var = (variant)(mode++ % NVARIANTS);
                            if (coll == CT_BCAST && var == IN_PLACE)
                                var = DERIVED; /* bcast has no in-place form */
                            one_case(coll, algs[a], (form)f, var, root, count, comm);
                        }
            }
        for (int a = hier_only; a < 2; a++) {
            in_flight(algs[a], comm, MPI_COMM_NULL);
            in_flight(algs[a], comm, comm2);
        }
    } else {
        enum { NT = 4 };
        worker w[NT];
        pthread_t tid[NT];
        for (int i = 0; i < NT; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm);
            w[i].id = i;
        }
        for (int i = 0; i < NT; i++)
            pthread_create(&tid[i], NULL, thread_main, &w[i]);
        for (int i = 0; i < NT; i++) {
            pthread_join(tid[i], NULL);
            MPI_Comm_free(&w[i].comm);
        }
    }
    MPI_Comm_free(&comm);
    MPI_Comm_free(&comm2);
    MPI_Op_free(&compose);
    MPI_Type_free(&strided);
    MPI_Type_free(&affine);
    int all = 0, total = 0, mine = atomic_load(&failures), ran = atomic_load(&cases);
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&ran, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("shm forms: %d cases, %d failure(s)\n", total / nprocs, all);
#ifdef UNDER_TSAN
    MPI_Barrier(MPI_COMM_WORLD);
    fflush(stdout);
    _exit(all != 0);
#endif
    MPI_Finalize();
    return all != 0;
}
