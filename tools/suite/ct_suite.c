/*
 * ct_suite: the benchmarks of Furst and Coskun's message-passing study on the SCC (seed
 * paper rcce-message-passing-monitoring-scc), as colltune suite runs them (docs/SUITE.md):
 *
 *   mpiexec -n N ct_suite BENCH [--size BYTES] [--iters K] [--reps R] [--active A]
 *                               [--cores C0,C1,...]
 *
 *   pingpong  ranks 2k and 2k+1 (k < A pairs; the others wait) bounce BYTES back and forth;
 *             time: one round trip
 *   shift     every rank sends BYTES to the next one in a ring and receives from the
 *             previous (MPI_Sendrecv): the most message-intensive; time: one shift
 *   stencil   the ranks as a periodic 2D grid (MPI_Dims_create), each with a square block of
 *             doubles of about BYTES, exchange their halos with four neighbours and do a
 *             5-point Jacobi sweep; time: one iteration
 *   share     A ranks at once copy BYTES from one buffer to another (memory-bound, no
 *             message); time: one copy
 *   bcast     MPI_Bcast of BYTES from rank 0 to all N ranks; time: one broadcast
 *
 * With --cores, rank r binds itself to core Cr (the probe's topology helper). Each of the R
 * repetitions times K iterations after a barrier; rank 0 prints one JSON line with the
 * per-iteration time of each repetition (the slowest rank's), messages sent per rank per
 * iteration, and instructions and cycles of rank 0's timed loop from perf_event_open (or
 * why they are unavailable). "progress D T" lines go to stderr. Bad arguments: exit 2.
 */
#include <mpi.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hwcount.h"
#include "topo.h"

#define MAX_REPS 100

enum bench { PINGPONG, SHIFT, STENCIL, SHARE, BCAST, NBENCH };
static const char *const bench_names[NBENCH] = {"pingpong", "shift", "stencil", "share",
                                                "bcast"};

struct opts {
    int bench;
    long size;
    int iters, reps, active;
    int cores[CT_MAX_CORES];
    int ncores;
};

static int rank, nranks;

static int usage(const char *why)
{
    if (rank == 0)
        fprintf(stderr, "ct_suite: %s\nusage: ct_suite pingpong|shift|stencil|share|bcast "
                        "[--size BYTES] [--iters K] [--reps R] [--active A] [--cores LIST]\n",
                why);
    return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->bench = -1;
    o->size = 8;
    o->iters = 1000;
    o->reps = 5;
    o->active = -1;
    if (argc < 2)
        return usage("no benchmark named");
    for (int b = 0; b < NBENCH; b++)
        if (!strcmp(argv[1], bench_names[b]))
            o->bench = b;
    if (o->bench < 0)
        return usage("unknown benchmark");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!v)
            return usage("an option without its value");
        i++;
        long x = strtol(v, &end, 10);
        if (!strcmp(a, "--cores")) {
            const char *p = v;
            while (*p && o->ncores < CT_MAX_CORES) {
                o->cores[o->ncores++] = (int)strtol(p, &end, 10);
                if (end == p)
                    return usage("--cores: a comma-separated list of core ids");
                p = *end == ',' ? end + 1 : end;
            }
            continue;
        }
        if (*end || x < 0)
            return usage("a value is not a non-negative number");
        if (!strcmp(a, "--size"))
            o->size = x;
        else if (!strcmp(a, "--iters") && x > 0)
            o->iters = (int)x;
        else if (!strcmp(a, "--reps") && x > 0 && x <= MAX_REPS)
            o->reps = (int)x;
        else if (!strcmp(a, "--active"))
            o->active = (int)x;
        else
            return usage("unknown option or value out of range");
    }
    if (o->ncores && o->ncores < nranks)
        return usage("--cores names fewer cores than there are ranks");
    int most = o->bench == PINGPONG ? nranks / 2 : nranks;
    if (o->active < 0 || o->active > most)
        o->active = most;
    if (o->bench == PINGPONG && nranks < 2)
        return usage("pingpong needs 2 ranks or more");
    return 0;
}

/* ---- The benchmarks: one iteration each --------------------------------- */

static char *sbuf, *rbuf;
static double *grid, *next, *halo_out, *halo_in;
static int side, nbr[4]; /* stencil: block side, neighbours W E S N */
static MPI_Comm cart;

static int pingpong(const struct opts *o)
{
    int pair = rank / 2;
    if (pair >= o->active)
        return 0;
    int peer = rank ^ 1, n = (int)o->size;
    if (rank % 2 == 0) {
        MPI_Send(sbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
    return 1;
}

static int shift(const struct opts *o)
{
    MPI_Sendrecv(sbuf, (int)o->size, MPI_BYTE, (rank + 1) % nranks, 2, rbuf, (int)o->size,
                 MPI_BYTE, (rank + nranks - 1) % nranks, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 1;
}

#define AT(g, i, j) (g)[(size_t)(i) * (size_t)(side + 2) + (size_t)(j)]

static int stencil(const struct opts *o)
{
    (void)o;
    MPI_Request r[8];
    /* columns 1 and side (W, E) packed; rows 1 and side (S, N) contiguous */
    for (int i = 0; i < side; i++) {
        halo_out[i] = AT(grid, i + 1, 1);
        halo_out[side + i] = AT(grid, i + 1, side);
    }
    MPI_Irecv(halo_in, side, MPI_DOUBLE, nbr[0], 3, cart, &r[0]);
    MPI_Irecv(halo_in + side, side, MPI_DOUBLE, nbr[1], 3, cart, &r[1]);
    MPI_Irecv(&AT(grid, 0, 1), side, MPI_DOUBLE, nbr[2], 3, cart, &r[2]);
    MPI_Irecv(&AT(grid, side + 1, 1), side, MPI_DOUBLE, nbr[3], 3, cart, &r[3]);
    MPI_Isend(halo_out, side, MPI_DOUBLE, nbr[0], 3, cart, &r[4]);
    MPI_Isend(halo_out + side, side, MPI_DOUBLE, nbr[1], 3, cart, &r[5]);
    MPI_Isend(&AT(grid, 1, 1), side, MPI_DOUBLE, nbr[2], 3, cart, &r[6]);
    MPI_Isend(&AT(grid, side, 1), side, MPI_DOUBLE, nbr[3], 3, cart, &r[7]);
    MPI_Waitall(8, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < side; i++) { /* the W neighbour's E column is our W halo */
        AT(grid, i + 1, 0) = halo_in[i];
        AT(grid, i + 1, side + 1) = halo_in[side + i];
    }
    for (int i = 1; i <= side; i++)
        for (int j = 1; j <= side; j++)
            AT(next, i, j) = 0.25 * (AT(grid, i - 1, j) + AT(grid, i + 1, j) +
                                     AT(grid, i, j - 1) + AT(grid, i, j + 1));
    double *t = grid;
    grid = next;
    next = t;
    return 8;
}

static int share(const struct opts *o)
{
    if (rank >= o->active)
        return 0;
    memcpy(rbuf, sbuf, (size_t)o->size);
    sbuf[rank % (o->size ? o->size : 1)] ^= rbuf[0]; /* the copy is used: not optimised out */
    return 0;
}

static int bcast(const struct opts *o)
{
    MPI_Bcast(sbuf, (int)o->size, MPI_BYTE, 0, MPI_COMM_WORLD);
    return rank == 0 ? nranks - 1 : 0; /* messages of a flat broadcast: indicative */
}

static int (*const run[NBENCH])(const struct opts *) = {pingpong, shift, stencil, share, bcast};

static int setup(const struct opts *o)
{
    size_t n = (size_t)(o->size > 0 ? o->size : 1);
    sbuf = malloc(n);
    rbuf = malloc(n);
    if (!sbuf || !rbuf)
        return -1;
    memset(sbuf, 1, n);
    memset(rbuf, 0, n);
    if (o->bench == STENCIL) {
        int dims[2] = {0, 0}, periods[2] = {1, 1};
        MPI_Dims_create(nranks, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
        MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]);
        MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]);
        side = 4;
        while ((long)(side * 2) * (side * 2) * 8 <= o->size)
            side *= 2;
        size_t cells = (size_t)(side + 2) * (size_t)(side + 2);
        grid = calloc(cells, sizeof *grid);
        next = calloc(cells, sizeof *next);
        halo_out = calloc(2 * (size_t)side, sizeof *halo_out);
        halo_in = calloc(2 * (size_t)side, sizeof *halo_in);
        if (!grid || !next || !halo_out || !halo_in)
            return -1;
        for (size_t i = 0; i < cells; i++)
            grid[i] = (double)((i * 7 + (size_t)rank) % 13);
    }
    return 0;
}

/* ---- Counters: rank 0's instructions and cycles over the timed loops ---- */

static int perf_fd[2] = {-1, -1};
static char perf_why[200];

static void open_counters(void)
{
    static const uint64_t cfg[2] = {PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES};
    static const char *const names[2] = {"instructions", "cycles"};
    for (int i = 0; i < 2; i++)
        if ((perf_fd[i] = ct_hwcount_open(cfg[i], names[i], 1, 0, perf_why, sizeof perf_why)) < 0)
            return;
}

static void counters(int on)
{
    for (int i = 0; i < 2; i++)
        if (perf_fd[i] >= 0)
            ioctl(perf_fd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    struct opts o;
    if (parse(argc, argv, &o)) {
        MPI_Finalize();
        return 2;
    }
    const char *why = NULL;
    int bound = 0;
    if (o.ncores && topo_init(&why) == 0)
        bound = topo_bind_core(o.cores[rank], 0, &why) == 0;
    int all_bound = 0;
    MPI_Allreduce(&bound, &all_bound, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int ok = setup(&o) == 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0)
            fprintf(stderr, "ct_suite: out of memory for %ld bytes\n", o.size);
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        open_counters();
    for (int i = 0; i < (o.iters < 10 ? o.iters : 10); i++) /* warm-up */
        run[o.bench](&o);
    double per_iter[MAX_REPS];
    long msgs = 0;
    for (int r = 0; r < o.reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        counters(1);
        double t0 = MPI_Wtime();
        for (int i = 0; i < o.iters; i++)
            msgs += run[o.bench](&o);
        double t = (MPI_Wtime() - t0) / o.iters, slowest;
        counters(0);
        MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        per_iter[r] = slowest;
        if (rank == 0)
            fprintf(stderr, "progress %d %d\n", r + 1, o.reps);
    }
    long long cnt[2] = {-1, -1};
    for (int i = 0; i < 2; i++)
        if (perf_fd[i] < 0 || read(perf_fd[i], &cnt[i], sizeof cnt[i]) != sizeof cnt[i])
            cnt[i] = -1;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        for (char *p = lib; *p; p++)
            if (*p == '\n' || *p == '"' || *p == '\\' || (unsigned char)*p < 32)
                *p = *p == '\n' ? '\0' : ' ';
        printf("{\"bench\":\"%s\",\"ranks\":%d,\"active\":%d,\"size\":%ld,\"iters\":%d,"
               "\"bound\":%s,\"cores\":[", bench_names[o.bench], nranks, o.active, o.size,
               o.iters, all_bound ? "true" : "false");
        for (int i = 0; i < (o.ncores ? nranks : 0); i++)
            printf("%s%d", i ? "," : "", o.cores[i]);
        printf("],\"time_us\":[");
        for (int r = 0; r < o.reps; r++)
            printf("%s%.4f", r ? "," : "", per_iter[r] * 1e6);
        printf("],\"messages_per_iter\":%.3f", (double)msgs / ((double)o.iters * o.reps));
        if (o.bench == STENCIL)
            printf(",\"block\":%d", side);
        if (cnt[0] >= 0 && cnt[1] >= 0)
            printf(",\"instructions\":%lld,\"cycles\":%lld,\"counters_unavailable\":null",
                   cnt[0], cnt[1]);
        else
            printf(",\"instructions\":null,\"cycles\":null,\"counters_unavailable\":\"%s\"",
                   perf_why[0] ? perf_why : "not opened");
        printf(",\"library\":\"%s\"}\n", lib);
        fflush(stdout);
    }
    if (o.bench == STENCIL)
        MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
