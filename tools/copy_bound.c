/*
 * copy_bound: the memory-bound reference for a broadcast on one node. Every rank
 * but rank 0 copies SIZE bytes from a buffer of its own to another, all at once,
 * as the readers of a shared-memory broadcast must at least do; timed like
 * ct_bench (each iteration between barriers, the slowest rank's time, the
 * median over iterations), so a broadcast's time over this one is its distance
 * from what the memory allows on these cores.
 * With --cma each reader copies out of rank 0's buffer instead, by cross-memory
 * attach (process_vm_readv): the bound of the one-copy algorithms (ALGORITHMS.md,
 * `cma`), which on some nodes (virtual machines pinning pages slowly) is far from
 * memcpy's.
 *   mpiexec -n N copy_bound SIZE [SIZE...] [--iters K] [--cma]
 * prints one JSON line per size: {"algorithm":"copy_bound" (or "cma_bound"),"size":...,"median_us":...,
 * "min_us":...,"max_us":...,"iterations":K}
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, iters = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int cma = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
    for (int i = 1; i < argc; i++)
        cma |= !strcmp(argv[i], "--cma");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters")) {
            i++;
            continue;
        }
        if (!strcmp(argv[i], "--cma"))
            continue;
        char *end;
        long long size = strtoll(argv[i], &end, 10);
        if (*end || size <= 0) {
            if (rank == 0)
                fprintf(stderr, "copy_bound: '%s' is not a size in bytes\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        int n = iters > 0 ? iters : (int)(size > (64LL << 20) / 20 ? 20 : (64LL << 20) / size);
        if (n > 1000)
            n = 1000;
        char *src = malloc((size_t)size), *dst = malloc((size_t)size);
        double *times = malloc(sizeof(double) * (size_t)n), *slowest = malloc(sizeof(double) * (size_t)n);
        memset(src, rank + 1, (size_t)size);
        memset(dst, 0, (size_t)size); /* touched: no page faults in the timed copies */
        /* --cma: rank 0's pid and buffer, which the readers copy from. */
        unsigned long long where[2] = {(unsigned long long)getpid(),
                                       (unsigned long long)(uintptr_t)src};
        MPI_Bcast(where, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        struct iovec local = {dst, (size_t)size}, remote = {(void *)(uintptr_t)where[1],
                                                            (size_t)size};
        for (int k = 0; k < 2 && rank > 0; k++)
            memcpy(dst, src, (size_t)size);
        if (cma && rank > 0 &&
            process_vm_readv((pid_t)where[0], &local, 1, &remote, 1, 0) != (ssize_t)size) {
            fprintf(stderr, "copy_bound: process_vm_readv: %s\n", strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < n; k++) {
            double t0 = MPI_Wtime();
            if (rank > 0 && cma)
                process_vm_readv((pid_t)where[0], &local, 1, &remote, 1, 0);
            else if (rank > 0)
                memcpy(dst, src, (size_t)size);
            times[k] = (MPI_Wtime() - t0) * 1e6;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        MPI_Reduce(times, slowest, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            qsort(slowest, (size_t)n, sizeof(double), cmp_double);
            double median = n % 2 ? slowest[n / 2] : 0.5 * (slowest[n / 2 - 1] + slowest[n / 2]);
            printf("{\"algorithm\":\"%s\",\"size\":%lld,\"median_us\":%.3f,"
                   "\"min_us\":%.3f,\"max_us\":%.3f,\"iterations\":%d}\n",
                   cma ? "cma_bound" : "copy_bound", size, median, slowest[0], slowest[n - 1], n);
            fflush(stdout);
        }
        free(src);
        free(dst);
        free(times);
        free(slowest);
    }
    MPI_Finalize();
    return 0;
}
