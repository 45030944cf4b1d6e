/*
 * An unmodified MPI program that starts one MPI_Ibcast, then computes without
 * calling MPI, then waits: the shape of an application that counts on the
 * library to move its broadcast while it computes.
 *
 *   plain_ibcast_progress BYTES WATCH_RANKS [TIMEOUT_S]
 *
 * While computing, the ranks in WATCH_RANKS (a comma list) watch the drop-in's
 * progress thread through ct_progress_query, looked up at run time (the program
 * is not linked with colltune; without the drop-in the symbol is absent): they
 * compute until the thread has finished a part of the broadcast, or TIMEOUT_S
 * seconds (default 60) pass. That a part finished while the rank made no MPI
 * call is the progress the thread made; no timing is involved. Then MPI_Wait, and
 * the data is checked against the root's pattern.
 *
 * Prints per rank: "rank R thread=T parts_before_wait=P data=ok|wrong", and
 * "all ok" at rank 0 when every rank's data is right.
 * tests/python/test_dropin.py runs it with a table (COLLTUNE_TABLE only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The layout of colltune.h's ct_progress_info, which this program does not include. */
typedef struct progress_info {
    int running, core, comm_cores;
    long completed, parts_done;
} progress_info;

static volatile double sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int listed(const char *list, int rank)
{
    for (const char *p = list; p && *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v == rank)
            return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s BYTES WATCH_RANKS [TIMEOUT_S]\n", argv[0]);
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = atol(argv[1]);
    double timeout = argc > 3 ? atof(argv[3]) : 60.0;
    void (*query)(progress_info *) =
        (void (*)(progress_info *))dlsym(RTLD_DEFAULT, "ct_progress_query");
    unsigned char *buf = malloc((size_t)bytes);
    for (long i = 0; i < bytes; i++)
        buf[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;

    progress_info before = {0}, info = {0};
    if (query)
        query(&before);
    MPI_Request req;
    MPI_Ibcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req);

    /* Compute, no MPI call: a running sum the compiler cannot drop (kept in sink). */
    double acc = 0;
    double t0 = now();
    int watch = listed(argv[2], rank);
    for (long step = 0;; step++) {
        for (int k = 0; k < 10000; k++)
            acc += 1e-9 * (double)((step + k) % 97);
        if (query)
            query(&info);
        if (!watch || info.parts_done > before.parts_done || now() - t0 > timeout)
            break;
    }
    sink = acc;
    long parts = info.parts_done - before.parts_done;
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    int good = 1;
    for (long i = 0; i < bytes; i++)
        good &= buf[i] == (unsigned char)(i * 7 + 3);
    printf("rank %d thread=%d parts_before_wait=%ld data=%s\n", rank, info.running, parts,
           good ? "ok" : "wrong");
    fflush(stdout);
    int all = 0;
    MPI_Reduce(&good, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0 && all)
        printf("all ok\n");
    free(buf);
    MPI_Finalize();
    return all || rank ? 0 : 1;
}
