/*
 * ct_probe_comm: the communication-layer part of the machine probe, one MPI job for all
 * pairs (launched by `colltune probe`; one rank per core, rank r bound to the r-th core of
 * --cores when hwloc is available, else left to the launcher's binding).
 *
 *   ct_probe_comm latency --bytes B [--iters N] [--reps R] [--cores 0,1,...]
 *       ping-pong of B bytes between every pair of ranks, one pair at a time while the
 *       others wait: one-way latency = round trip / 2, minimum and median over R repeats
 *       of N round trips.
 *   ct_probe_comm bandwidth --pairs "0-1;0-2" [--min B] [--max B] [--volume B] [--reps R]
 *       ping-pong for sizes min..max (doubling) between each listed pair, about `volume`
 *       bytes per repeat (4 to 200 round trips).
 *
 * Rank 0 prints JSON Lines: first {"ranks":[{"rank":r,"cpus":"...","bound":...}]}, then one
 * object per measurement. "progress DONE TOTAL" lines go to stderr.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"
#include "topo.h"

static int rank, nprocs;

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return def;
}

/* A barrier whose waiters sleep instead of polling: with more ranks than cores (colltune's
 * test bed puts several emulated hosts on one machine) the ranks waiting for their turn
 * must leave the cores to the pair being measured. */
static void quiet_barrier(void)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    while (!done) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
}

/* One-way latency (us) of `bytes` between ranks a and b, min and median over reps; called
 * by every rank (the others only wait at the barriers). */
static void pingpong(int a, int b, char *buf, long bytes, int iters, int reps, double *best,
                     double *med)
{
    double t[64];
    if (reps > 64)
        reps = 64;
    quiet_barrier();
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double t0 = MPI_Wtime();
        if (rank == a)
            for (int i = 0; i < iters; i++) {
                MPI_Send(buf, (int)bytes, MPI_BYTE, b, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)bytes, MPI_BYTE, b, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        else if (rank == b)
            for (int i = 0; i < iters; i++) {
                MPI_Recv(buf, (int)bytes, MPI_BYTE, a, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_BYTE, a, 7, MPI_COMM_WORLD);
            }
        if (r >= 0)
            t[r] = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    }
    *best = *med = 0;
    if (rank == a) {
        qsort(t, (size_t)reps, sizeof *t, ct_cmp_double);
        *best = t[0];
        *med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        if (a != 0) {
            double v[2] = {*best, *med};
            MPI_Send(v, 2, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
        }
    }
    if (rank == 0 && a != 0) {
        double v[2];
        MPI_Request req;
        int done = 0;
        MPI_Irecv(v, 2, MPI_DOUBLE, a, 9, MPI_COMM_WORLD, &req);
        while (!done) { /* rank 0 waits for the pair without taking a core from it */
            struct timespec ts = {0, 50000};
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (!done)
                nanosleep(&ts, NULL);
        }
        *best = v[0];
        *med = v[1];
    }
}

static void report_binding(int argc, char **argv)
{
    char cpus[256], msg[256] = "";
    int bound = 0;
    long long want = -1;
    const char *list = opt(argc, argv, "--cores", NULL);
    if (list) {
        /* the rank-th entry of the comma-separated list */
        const char *p = list;
        for (int i = 0; i < rank && p; i++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        if (p)
            want = atoll(p);
    }
    if (want >= 0) {
        const char *why = NULL;
        bound = topo_bind_core((int)want, 0, &why) == 0;
        if (!bound)
            snprintf(msg, sizeof msg, "%s", why);
    }
    topo_current_cpus(cpus, sizeof cpus);
    /* the host, so that pairs across hosts (colltune testbed, a hostfile) are told apart */
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int hlen = 0;
    MPI_Get_processor_name(host, &hlen);
    for (char *c = host; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '_';
    char line[1024];
    snprintf(line, sizeof line,
             "{\"rank\":%d,\"core\":%lld,\"cpus\":\"%s\",\"host\":\"%.200s\",\"bound\":%s%s%s%s}",
             rank, want, cpus, host, bound ? "true" : "false",
             msg[0] ? ",\"bind_error\":\"" : "", msg, msg[0] ? "\"" : "");
    char *all = rank == 0 ? malloc((size_t)nprocs * sizeof line) : NULL;
    MPI_Gather(line, sizeof line, MPI_CHAR, all, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"ranks\":[");
        for (int i = 0; i < nprocs; i++)
            printf(i ? ",%s" : "%s", all + (size_t)i * sizeof line);
        printf("],\"binder\":\"%s\"}\n", topo_binder());
        fflush(stdout);
        free(all);
    }
}

static int cmd_latency(int argc, char **argv)
{
    long bytes = atol(opt(argc, argv, "--bytes", "32768"));
    int iters = atoi(opt(argc, argv, "--iters", "50")), reps = atoi(opt(argc, argv, "--reps", "7"));
    if (bytes < 0 || iters < 1 || reps < 1)
        return 2;
    char *buf = calloc(1, (size_t)bytes + 1);
    int total = nprocs * (nprocs - 1) / 2, done = 0;
    for (int a = 0; a < nprocs; a++)
        for (int b = a + 1; b < nprocs; b++) {
            double best, med;
            pingpong(a, b, buf, bytes, iters, reps, &best, &med);
            if (rank == 0) {
                printf("{\"pair\":[%d,%d],\"bytes\":%ld,\"latency_us\":%.4f,\"median_us\":%.4f}\n",
                       a, b, bytes, best, med);
                fflush(stdout);
                fprintf(stderr, "progress %d %d\n", ++done, total);
            }
        }
    free(buf);
    return 0;
}

static int cmd_bandwidth(int argc, char **argv)
{
    long min = atol(opt(argc, argv, "--min", "1")), max = atol(opt(argc, argv, "--max", "16777216"));
    const char *pairs = opt(argc, argv, "--pairs", "0-1");
    int reps = atoi(opt(argc, argv, "--reps", "5"));
    long volume = atol(opt(argc, argv, "--volume", "33554432"));
    if (min < 1 || max < min || reps < 1 || volume < 1)
        return 2;
    int pa[256], pb[256], np = 0;
    for (const char *p = pairs; *p && np < 256;) {
        char *end;
        pa[np] = (int)strtol(p, &end, 10);
        if (*end != '-')
            return 2;
        pb[np] = (int)strtol(end + 1, &end, 10);
        if (pa[np] < 0 || pb[np] < 0 || pa[np] >= nprocs || pb[np] >= nprocs || pa[np] == pb[np])
            return 2;
        np++;
        p = *end ? end + 1 : end;
    }
    char *buf = malloc((size_t)max);
    memset(buf, 1, (size_t)max);
    int nsizes = 0;
    for (long s = min; s <= max; s *= 2)
        nsizes++;
    int total = np * nsizes, done = 0;
    for (int k = 0; k < np; k++)
        for (long s = min; s <= max; s *= 2) {
            /* about `volume` bytes moved per repeat, 4 to 200 round trips */
            long it = volume / (2 * s);
            int iters = it < 4 ? 4 : it > 200 ? 200 : (int)it;
            double best, med;
            pingpong(pa[k], pb[k], buf, s, iters, reps, &best, &med);
            if (rank == 0) {
                printf("{\"pair\":[%d,%d],\"size\":%ld,\"iters\":%d,\"latency_us\":%.4f,"
                       "\"median_us\":%.4f,\"bandwidth_MBps\":%.2f}\n",
                       pa[k], pb[k], s, iters, best, med, (double)s / med);
                fflush(stdout);
                fprintf(stderr, "progress %d %d\n", ++done, total);
            }
        }
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *why = NULL;
    int rc = 2;
    if (topo_init(&why) < 0) {
        if (rank == 0)
            fprintf(stderr, "ct_probe_comm: %s\n", why);
        MPI_Finalize();
        return 1;
    }
    report_binding(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "latency"))
        rc = cmd_latency(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "bandwidth"))
        rc = cmd_bandwidth(argc, argv);
    if (rc == 2 && rank == 0)
        fprintf(stderr, "usage: ct_probe_comm latency|bandwidth [options] (bad arguments)\n");
    topo_fini();
    MPI_Finalize();
    return rc;
}
