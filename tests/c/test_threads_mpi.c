/*
 * colltune under MPI_THREAD_MULTIPLE: THREADS threads a rank, each on its own
 * communicator, run mixed collectives at the same time (every colltune
 * algorithm of the eight classic operations in turn, a non-blocking one now and
 * then), each result compared with the native collective's on the same
 * communicator. Every DUP_EVERY iterations a thread duplicates its communicator,
 * runs one collective on the duplicate and frees it, so the per-communicator
 * state colltune caches is made and dropped while other threads use theirs.
 *
 *   test_threads_mpi [ITERATIONS]     (per thread; default 2000)
 *
 * Prints "all ok" at rank 0; exits 1 on any difference.
 *
 * Under ThreadSanitizer the MPI wheels (not instrumented) crash inside
 * MPI_Finalize and when a thread that called MPI exits (test_nbc_mpi.c says
 * more): there the workers never return and the test leaves with _exit once
 * every rank has its verdict. Everything before runs checked.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colltune.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define THREADS 4
#define DUP_EVERY 97
#define MAXCOUNT 300

static int rank, nprocs, iterations = 2000;
static int failures, compared; /* under report_lock */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
#ifdef UNDER_TSAN
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
#endif
static int nfinished;

/* The colltune algorithms of each classic operation (native left out). */
static const char *algs[CT_BARRIER + 1][32];
static int nalgs[CT_BARRIER + 1];

static void collect_algorithms(void)
{
    for (int i = 0; i < ct_algorithm_count(); i++) {
        const ct_algorithm_info *a = ct_algorithm_get(i);
        if ((int)a->coll <= CT_BARRIER && strcmp(a->name, "native") && nalgs[a->coll] < 32)
            algs[a->coll][nalgs[a->coll]++] = a->name;
    }
}

static void fail(int thread, int iter, const char *what, const char *alg)
{
    pthread_mutex_lock(&report_lock);
    if (failures++ < 10)
        fprintf(stderr, "rank %d thread %d iteration %d: %s/%s differs from native\n", rank,
                thread, iter, what, alg);
    pthread_mutex_unlock(&report_lock);
}

typedef struct job {
    int thread;
    MPI_Comm comm;
} job;

/* One collective, colltune's and native's, on comm; 0 when they agree. */
static int one(MPI_Comm comm, int thread, int iter, ct_coll coll, const char *alg)
{
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    int count = 1 + (iter * 37 + thread * 11) % MAXCOUNT, root = (iter + thread) % n;
    size_t len = (size_t)count * (size_t)n;
    int *in = malloc(len * sizeof *in), *a = calloc(len, sizeof *a), *b = calloc(len, sizeof *b);
    for (size_t k = 0; k < len; k++)
        in[k] = (int)((size_t)me * 1000003u + k * 31u + (size_t)iter) % 100000;
    ct_options o;
    ct_options_init(&o);
    o.algorithm = alg;
    int rc = MPI_SUCCESS, cmp = (int)len; /* how many ints to compare */
    switch (coll) {
    case CT_BCAST:
        memcpy(a, in, (size_t)count * sizeof *in);
        memcpy(b, in, (size_t)count * sizeof *in);
        rc = ct_bcast(a, count, MPI_INT, root, comm, &o);
        MPI_Bcast(b, count, MPI_INT, root, comm);
        cmp = count;
        break;
    case CT_REDUCE:
        rc = ct_reduce(in, a, count, MPI_INT, MPI_SUM, root, comm, &o);
        MPI_Reduce(in, b, count, MPI_INT, MPI_SUM, root, comm);
        cmp = me == root ? count : 0;
        break;
    case CT_ALLREDUCE:
        if (iter % 3 == 0) { /* the non-blocking form, waited at once */
            MPI_Request req;
            rc = ct_iallreduce(in, a, count, MPI_INT, MPI_SUM, comm, &o, &req);
            if (rc == MPI_SUCCESS)
                rc = ct_wait(&req, MPI_STATUS_IGNORE);
        } else {
            rc = ct_allreduce(in, a, count, MPI_INT, MPI_SUM, comm, &o);
        }
        MPI_Allreduce(in, b, count, MPI_INT, MPI_SUM, comm);
        cmp = count;
        break;
    case CT_SCATTER:
        rc = ct_scatter(in, count, MPI_INT, a, count, MPI_INT, root, comm, &o);
        MPI_Scatter(in, count, MPI_INT, b, count, MPI_INT, root, comm);
        cmp = count;
        break;
    case CT_GATHER:
        rc = ct_gather(in, count, MPI_INT, a, count, MPI_INT, root, comm, &o);
        MPI_Gather(in, count, MPI_INT, b, count, MPI_INT, root, comm);
        cmp = me == root ? (int)len : 0;
        break;
    case CT_ALLGATHER:
        rc = ct_allgather(in, count, MPI_INT, a, count, MPI_INT, comm, &o);
        MPI_Allgather(in, count, MPI_INT, b, count, MPI_INT, comm);
        break;
    case CT_ALLTOALL: {
        int block = count / n > 0 ? count / n : 1;
        rc = ct_alltoall(in, block, MPI_INT, a, block, MPI_INT, comm, &o);
        MPI_Alltoall(in, block, MPI_INT, b, block, MPI_INT, comm);
        cmp = block * n;
        break;
    }
    default:
        rc = ct_barrier(comm, &o);
        cmp = 0;
    }
    int bad = rc != MPI_SUCCESS || memcmp(a, b, (size_t)cmp * sizeof *a) != 0;
    if (bad)
        fail(thread, iter, ct_coll_name(coll), alg);
    pthread_mutex_lock(&report_lock);
    compared++;
    pthread_mutex_unlock(&report_lock);
    free(in);
    free(a);
    free(b);
    return bad;
}

static void *worker(void *arg)
{
    job *j = arg;
    for (int i = 0; i < iterations; i++) {
        ct_coll coll = (ct_coll)((i + j->thread) % (CT_BARRIER + 1));
        if (!nalgs[coll])
            continue;
        const char *alg = algs[coll][(i / (CT_BARRIER + 1)) % nalgs[coll]];
        if (i % DUP_EVERY == DUP_EVERY - 1) {
            MPI_Comm dup;
            MPI_Comm_dup(j->comm, &dup);
            one(dup, j->thread, i, coll, alg);
            MPI_Comm_free(&dup);
        } else {
            one(j->comm, j->thread, i, coll, alg);
        }
    }
    pthread_mutex_lock(&report_lock);
    nfinished++;
    pthread_cond_signal(&finished);
#ifdef UNDER_TSAN
    for (;;) /* an exiting thread that called MPI crashes under TSan: never exit */
        pthread_cond_wait(&never, &report_lock);
#endif
    pthread_mutex_unlock(&report_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "test_threads_mpi: the MPI gives no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 1;
    }
    if (argc > 1)
        iterations = atoi(argv[1]);
    collect_algorithms();
    pthread_t tid[THREADS];
    job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) { /* duplicated in one order on every rank */
        jobs[t].thread = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_create(&tid[t], NULL, worker, &jobs[t]);
    pthread_mutex_lock(&report_lock);
    while (nfinished < THREADS)
        pthread_cond_wait(&finished, &report_lock);
    pthread_mutex_unlock(&report_lock);
#ifndef UNDER_TSAN
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
#endif
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&jobs[t].comm);
    /* every thread ran its iterations (a test that compared nothing would pass) */
    int total = 0, shortfall = compared != THREADS * iterations;
    if (shortfall)
        fprintf(stderr, "rank %d: %d collectives compared, %d expected\n", rank, compared,
                THREADS * iterations);
    failures += shortfall;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "%d failures\n" : "all ok (%d threads a rank, %d collectives each)\n",
               total ? total : THREADS, iterations);
#ifdef UNDER_TSAN
    fflush(stdout);
    _exit(total != 0);
#endif
    MPI_Finalize();
    return total != 0;
}
