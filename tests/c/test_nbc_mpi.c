/*
 * The non-blocking collectives against the native blocking ones, under MPI
 * with MPI_THREAD_MULTIPLE and colltune's progress thread.
 *
 * One job: ct_ibcast, ct_ireduce, ct_iallreduce, ct_iscatter, ct_igather x
 * every colltune algorithm of the operation x split levels S in {0, 1, 2, H}
 * (H: larger than any tree, the blocking algorithm) x roots {0, N-1, N/2} x
 * counts {0, 1, 1000, 20000} (MPI_INT; reductions MPI_SUM), each completed in
 * one of three ways in turn: ct_wait, a ct_test loop, or ct_waitall together
 * with point-to-point requests of a ring exchange. Then several collectives in
 * flight at once on the same and on a duplicated communicator, completed by
 * one ct_waitall in reverse order; then progress without the application: a
 * fully offloaded (S = 0) bcast completes while the application spins on a
 * flag the progress thread sets (ct_progress_query's count), calling no MPI.
 *
 * Usage: test_nbc_mpi [--no-thread]   (--no-thread: without the progress
 * thread, everything runs inside the waits)
 *
 * Under ThreadSanitizer the MPI wheels (not instrumented) crash inside
 * MPI_Finalize, whatever the program, and when a thread that called MPI exits
 * (MPICH's thread-local destructors): there the test leaves with _exit once
 * every rank has its verdict, the progress thread still asleep. Everything
 * before, the progress thread's work included, runs checked.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colltune.h"

/* GCC and clang say when ThreadSanitizer instruments this file. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

enum { S_BLOCKING = 64 };

static int rank, nprocs, failures, cases;

static int input(int r, int i) { return (r * 7919 + i * 31) % 1000 + 1; }

static void fail(const char *what, const char *alg, int split, int root, int count)
{
    failures++;
    if (failures <= 20)
        fprintf(stderr, "FAIL rank %d/%d: %s/%s S=%d root=%d count=%d\n", rank, nprocs, what,
                alg, split, root, count);
}

/* Completes req in one of three ways; mode 2 adds a ring of point-to-point
 * requests to the same ct_waitall. */
static void complete(MPI_Request *req, int mode)
{
    if (mode == 0) {
        ct_wait(req, MPI_STATUS_IGNORE);
    } else if (mode == 1) {
        int flag = 0;
        while (!flag)
            ct_test(req, &flag, MPI_STATUS_IGNORE);
    } else {
        MPI_Request all[3];
        int out = rank, in = -1;
        all[0] = *req;
        MPI_Irecv(&in, 1, MPI_INT, (rank + nprocs - 1) % nprocs, 99, MPI_COMM_WORLD, &all[1]);
        MPI_Isend(&out, 1, MPI_INT, (rank + 1) % nprocs, 99, MPI_COMM_WORLD, &all[2]);
        ct_waitall(3, all, MPI_STATUSES_IGNORE);
        if (in != (rank + nprocs - 1) % nprocs)
            fail("point-to-point beside", "ring", 0, 0, 1);
        *req = all[0];
    }
    if (*req != MPI_REQUEST_NULL)
        fail("request not freed", "-", 0, 0, 0);
}

static void one_case(ct_coll coll, const char *alg, int split, int root, int count, int mode)
{
    ct_options o;
    ct_options_init(&o);
    o.algorithm = alg;
    o.split = split;
    int n = nprocs, blocks = coll == CT_SCATTER || coll == CT_GATHER;
    size_t total = (size_t)count * (blocks ? (size_t)n : 1);
    int *src = malloc((total + 1) * sizeof(int)), *got = malloc((total + 1) * sizeof(int));
    int *want = malloc((total + 1) * sizeof(int));
    for (size_t i = 0; i < total; i++) {
        src[i] = input(rank, (int)i);
        got[i] = want[i] = -1;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    size_t check = count;
    switch (coll) {
    case CT_BCAST:
        for (int i = 0; i < count; i++)
            got[i] = want[i] = rank == root ? src[i] : -1;
        MPI_Bcast(want, count, MPI_INT, root, MPI_COMM_WORLD);
        rc = ct_ibcast(got, count, MPI_INT, root, MPI_COMM_WORLD, &o, &req);
        break;
    case CT_REDUCE:
        MPI_Reduce(src, want, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        rc = ct_ireduce(src, got, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &o, &req);
        if (rank != root)
            check = 0;
        break;
    case CT_ALLREDUCE:
        MPI_Allreduce(src, want, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        rc = ct_iallreduce(src, got, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &o, &req);
        break;
    case CT_SCATTER:
        MPI_Scatter(src, count, MPI_INT, want, count, MPI_INT, root, MPI_COMM_WORLD);
        rc = ct_iscatter(src, count, MPI_INT, got, count, MPI_INT, root, MPI_COMM_WORLD, &o,
                         &req);
        break;
    case CT_GATHER:
        MPI_Gather(src, count, MPI_INT, want, count, MPI_INT, root, MPI_COMM_WORLD);
        rc = ct_igather(src, count, MPI_INT, got, count, MPI_INT, root, MPI_COMM_WORLD, &o,
                        &req);
        check = rank == root ? total : 0;
        break;
    default:
        break;
    }
    cases++;
    if (rc != MPI_SUCCESS) {
        fail("start", alg, split, root, count);
    } else {
        complete(&req, mode);
        if (memcmp(got, want, check * sizeof(int)) != 0)
            fail(ct_coll_name(coll), alg, split, root, count);
    }
    free(src);
    free(got);
    free(want);
}

/* Several in flight: the same and a duplicated communicator, waited in reverse. */
static void outstanding(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    enum { C = 3000 };
    static int a[C], b[C], c[C], d[C], e[C];
    for (int i = 0; i < C; i++) {
        a[i] = rank == 0 ? i : -1;
        b[i] = input(rank, i);
        d[i] = rank == nprocs - 1 ? 2 * i : -1;
    }
    ct_options o;
    ct_options_init(&o);
    MPI_Request r[4];
    o.algorithm = "binomial";
    ct_ibcast(a, C, MPI_INT, 0, MPI_COMM_WORLD, &o, &r[0]);
    o.algorithm = "binary";
    ct_ireduce(b, c, C, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &o, &r[1]);
    o.algorithm = "chain";
    ct_ibcast(d, C, MPI_INT, nprocs - 1, dup, &o, &r[2]);
    o.algorithm = "recursive_doubling";
    ct_iallreduce(b, e, C, MPI_INT, MPI_SUM, dup, &o, &r[3]);
    MPI_Request rev[4] = {r[3], r[2], r[1], r[0]};
    ct_waitall(4, rev, MPI_STATUSES_IGNORE);
    for (int i = 0; i < C; i++) {
        long sum = 0;
        for (int q = 0; q < nprocs; q++)
            sum += input(q, i);
        if (a[i] != i || d[i] != 2 * i || e[i] != sum || (rank == 0 && c[i] != sum)) {
            fail("outstanding", "mixed", -1, 0, C);
            break;
        }
    }
    cases++;
    MPI_Comm_free(&dup);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The progress thread alone finishes a fully offloaded collective. */
static void background(void)
{
    ct_progress_info info;
    ct_progress_query(&info);
    if (!info.running) {
        fail("no progress thread", "-", 0, 0, 0);
        return;
    }
    enum { C = 50000 };
    static int buf[C];
    for (int i = 0; i < C; i++)
        buf[i] = rank == 0 ? i : -1;
    ct_options o;
    ct_options_init(&o);
    o.algorithm = "binomial";
    o.split = 0;
    MPI_Request req;
    MPI_Barrier(MPI_COMM_WORLD);
    long before = info.completed;
    ct_ibcast(buf, C, MPI_INT, 0, MPI_COMM_WORLD, &o, &req);
    double start = now();
    int seen = 0;
    while (!seen && now() - start < 120) { /* computing: no MPI call in here */
        ct_progress_query(&info);
        seen = info.completed > before;
        sched_yield();
    }
    cases++;
    if (!seen)
        fail("background progress", "binomial", 0, 0, C);
    ct_wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < C; i++)
        if (buf[i] != i) {
            fail("background data", "binomial", 0, 0, C);
            break;
        }
}

int main(int argc, char **argv)
{
    int provided, thread = !(argc > 1 && strcmp(argv[1], "--no-thread") == 0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (thread && (provided < MPI_THREAD_MULTIPLE || ct_progress_start(MPI_COMM_WORLD))) {
        if (rank == 0)
            fprintf(stderr, "FAIL: no MPI_THREAD_MULTIPLE or no progress thread\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const ct_coll colls[] = {CT_BCAST, CT_REDUCE, CT_ALLREDUCE, CT_SCATTER, CT_GATHER};
    const int splits[] = {0, 1, 2, S_BLOCKING}, counts[] = {0, 1, 1000, 20000};
    int roots[3] = {0, nprocs - 1, nprocs / 2}, mode = 0;
    for (size_t ci = 0; ci < sizeof colls / sizeof *colls; ci++)
        for (int a = 0; a < ct_algorithm_count(); a++) {
            const ct_algorithm_info *info = ct_algorithm_get(a);
            if (info->coll != colls[ci] || (info->flags & CT_ALG_NATIVE))
                continue;
            if (info->flags & CT_ALG_SHARED_MEMORY)
                continue; /* every form of them: tests/c/test_shm_forms_mpi.c */
            for (size_t si = 0; si < sizeof splits / sizeof *splits; si++)
                for (int ri = 0; ri < 3; ri++)
                    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
                        if (colls[ci] == CT_ALLREDUCE && ri > 0)
                            continue; /* no root */
                        one_case(colls[ci], info->name, splits[si], roots[ri], counts[k],
                                 mode++ % 3);
                    }
        }
    outstanding();
    if (thread)
        background();
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d cases on %d ranks (%s), %d failure(s)\n", all ? "FAIL" : "ok", cases,
               nprocs, thread ? "progress thread" : "no thread", all);
#ifdef UNDER_TSAN
    MPI_Barrier(MPI_COMM_WORLD);
    fflush(stdout);
    _exit(all ? 1 : 0);
#endif
    MPI_Finalize();
    return all ? 1 : 0;
}
