/*
 * ct_p2p: point-to-point costs of one MPI between two ranks, as the collective models need
 * them (the models paper, section 3.3; docs/P2P.md): send overhead os(m), receive overhead
 * or(m), gap g(m), one-way time, the Isend mode (blocking, immediate, rendezvous), os and g
 * with k Isends pending, and rank 0's local copy and reduction costs.
 *
 *   mpiexec -n 2 ct_p2p [--cores A,B] [--sizes 1,64,4K,1M | --min B --max B --per-octave N]
 *                       [--iters N] [--pending 1,2,4,8,16] [--quick]
 *   mpiexec -n 2P ct_p2p --concurrent 1,2,4,8 [--cores C0,...,C2P-1] [sizes, --iters, --quick]
 *
 * Rank 0 sends, rank 1 receives. Rank 0 prints JSON Lines on stdout: first a header
 * {"ranks":[...],"binder":...,"library":...,"sizes":[...],"pending":[...]}, then one object
 * per size. "progress DONE TOTAL" lines go to stderr. Bad arguments or a size other than 2
 * ranks: a message and exit status 2.
 *
 * --concurrent K1,K2,...: only the one-way time of k pairs at once (contention, docs/P2P.md):
 * 2P ranks (P >= every k), pair i is rank i -> rank i + P; for each size and k, pairs 0 to
 * k-1 ping-pong at the same time (the others wait), and the per-pair one-way time is half a
 * round trip, averaged over the k pairs, median over the samples. Header {"ranks",
 * "binder", "library", "sizes", "concurrent", "pairs"}, then per size {"size_bytes",
 * "iterations", "oneway_concurrent_us": one per k}.
 *
 * --stream SCEN/SCEN/...: the per-message gap of streams of messages that run at the same time
 * (issue 21: why many small segments cost more on a loaded bed than one idle pair says). A
 * scenario is a comma-separated list of flows "A>B" (rank A streams to rank B); every rank
 * runs --messages N rounds (default: enough for 4 MiB a flow, 16 to 1024) and in each round
 * posts one receive per flow into it and one send per flow out of it, then waits for them
 * all (the executor's round semantics, sched.h), so a rank on two flows sends and receives at
 * once and "0>1,1>2,2>3" forwards along a chain. Per flow: the receiver's time from the
 * common start to its last message, over N (the flow's per-message gap), median over the
 * samples. Header {"ranks", "binder", "library", "sizes", "stream": [[[A,B],...], ...],
 * "messages"}, then per size and scenario {"size_bytes", "scenario", "flows", "messages",
 * "iterations", "gap_us": one per flow, "max_gap_us"}. --stream and --concurrent exclude
 * each other.
 */

#include <mpi.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../probe/stats.h"
#include "sched/reduce_local.h"
#include "topo.h"

#define MAX_SIZES 1024
#define MAX_PENDING 64
#define MAX_RANKS 1024
#define MAX_ITERS 100000
#define G_BATCH 8 /* sends per gap sample: long enough to reach the steady state */
#define MODE_SAMPLES 5
#define TAG_DATA 1
#define TAG_DONE 2
#define MAX_STREAM_MESSAGES 100000
#define MAX_SCENARIOS 16
#define MAX_FLOWS 64

static int rank;

struct opts {
    long sizes[MAX_SIZES];
    int nsizes;
    int pending[MAX_PENDING];
    int npending;
    int cores[MAX_RANKS];
    int ncores, have_cores;
    int concurrent[MAX_PENDING]; /* --concurrent: pair counts; nconcurrent 0: the pair mode */
    int nconcurrent;
    const char *stream;   /* --stream: the scenarios as given; NULL: not this mode */
    int messages;         /* --messages: rounds a stream (0: from the size) */
    int iters; /* for small messages; fewer for large ones (iters_for) */
    int quick;
};

/* Everything rank 0 knows about one size, printed as one JSON line. */
struct point {
    long size;
    int iters;
    double os, isw, orr, g, oneway, late, delay, copy, reduce;
    const char *mode;
    double os_pending[MAX_PENDING], g_pending[MAX_PENDING];
};

static char **sbuf, **rbuf; /* nbufs page-aligned buffers of the largest size each */
static int nbufs;
static char *local_dst;
static double *red_in, *red_inout;
static double *samples, *samples2;

static int fail_usage(const char *fmt, const char *what)
{
    if (rank == 0) {
        fprintf(stderr, "ct_p2p: ");
        fprintf(stderr, fmt, what);
        fprintf(stderr, "\nusage: mpiexec -n 2 ct_p2p [--cores A,B] [--sizes LIST | --min B "
                        "--max B --per-octave N] [--iters N] [--pending LIST] [--quick]\n"
                        "       mpiexec -n 2P ct_p2p --concurrent K1,K2,.. [--cores C0,..] "
                        "[sizes] [--iters N] [--quick]\n"
                        "       mpiexec -n R ct_p2p --stream A>B,C>D/A>B,B>A/.. [--messages N] "
                        "[sizes] [--iters N] [--quick]\n");
    }
    return 2;
}

/* "4096", "4K", "16M": bytes (K and M are KiB and MiB). -1 if it is not one. */
static long parse_size(const char *s, const char **end)
{
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || errno || v < 0)
        return -1;
    if (*e == 'K' || *e == 'k')
        v *= 1024, e++;
    else if (*e == 'M' || *e == 'm')
        v *= 1024L * 1024, e++;
    *end = e;
    return v;
}

/* Comma-separated sizes (> 0, at most 1 GiB); returns how many, or -1. */
static int parse_size_list(const char *s, long *out, int max)
{
    int n = 0;
    while (*s) {
        const char *e;
        long v = parse_size(s, &e);
        if (v <= 0 || v > (1L << 30) || n == max || (*e && *e != ','))
            return -1;
        out[n++] = v;
        s = *e ? e + 1 : e;
        if (*e && !*s)
            return -1;
    }
    return n;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* 2^(k + i/per) rounded, min..max, without repeats (small sizes round to the same byte). */
static int size_grid(long min, long max, int per, long *out)
{
    int n = 0;
    for (int j = 0; n < MAX_SIZES; j++) {
        long v = lround(pow(2.0, (double)j / per));
        if (v > max)
            break;
        if (v >= min && (n == 0 || v != out[n - 1]))
            out[n++] = v;
    }
    return n;
}

/* Ascending counts from 1 to max: how many, or -1. */
static int parse_counts(const char *s, int *out, int max)
{
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > max || n == MAX_PENDING || (n && k <= out[n - 1]) ||
            (*end && *end != ',') || (*end == ',' && !end[1]))
            return -1;
        out[n++] = (int)k;
        p = *end ? end + 1 : end;
    }
    return n ? n : -1;
}

/* --stream's scenarios: flows "A>B" within a scenario, scenarios separated by '/'. */
static int nscen, nflows[MAX_SCENARIOS], flows[MAX_SCENARIOS][MAX_FLOWS][2];

static int parse_stream(const char *s, int nprocs)
{
    nscen = 0;
    const char *p = s;
    while (*p) {
        if (nscen == MAX_SCENARIOS)
            break;
        int k = 0;
        for (;;) {
            char *end;
            long a = strtol(p, &end, 10), b;
            if (end == p || *end != '>' || a < 0 || a >= nprocs || k == MAX_FLOWS)
                goto bad;
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < 0 || b >= nprocs || b == a)
                goto bad;
            for (int j = 0; j < k; j++)
                if (flows[nscen][j][0] == a && flows[nscen][j][1] == b)
                    goto bad; /* one flow a pair: the tags would mix */
            flows[nscen][k][0] = (int)a;
            flows[nscen][k][1] = (int)b;
            k++;
            p = end;
            if (*p != ',')
                break;
            p++;
        }
        nflows[nscen++] = k;
        if (!*p)
            return 0;
        if (*p != '/' || !p[1])
            goto bad;
        p++;
    }
bad:
    if (rank == 0)
        fprintf(stderr, "ct_p2p: --stream: expected flows A>B of ranks 0..%d, distinct within a "
                        "scenario, scenarios separated by '/' (at most %d, %d flows each), got "
                        "'%s'\n", nprocs - 1, MAX_SCENARIOS, MAX_FLOWS, s);
    return -1;
}

static int parse_args(int argc, char **argv, struct opts *o, int nprocs)
{
    long min = 1, max = 16L << 20;
    int per = 0, have_grid = 0;
    const char *sizes = NULL, *pending = "1,2,4,8,16", *cores = NULL;
    o->iters = 0;
    o->quick = 0;
    o->have_cores = 0;
    o->nconcurrent = 0;
    o->stream = NULL;
    o->messages = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            o->quick = 1;
            continue;
        }
        if (strcmp(a, "--cores") && strcmp(a, "--sizes") && strcmp(a, "--min") &&
            strcmp(a, "--max") && strcmp(a, "--per-octave") && strcmp(a, "--iters") &&
            strcmp(a, "--pending") && strcmp(a, "--concurrent") && strcmp(a, "--stream") &&
            strcmp(a, "--messages"))
            return fail_usage("unknown option '%s'", a);
        if (!v)
            return fail_usage("%s needs a value", a);
        i++;
        const char *e;
        if (!strcmp(a, "--cores")) {
            cores = v;
        } else if (!strcmp(a, "--concurrent")) {
            o->nconcurrent = parse_counts(v, o->concurrent, MAX_RANKS / 2);
            if (o->nconcurrent < 0)
                return fail_usage("--concurrent: expected ascending pair counts from 1, got '%s'",
                                  v);
        } else if (!strcmp(a, "--stream")) {
            o->stream = v;
        } else if (!strcmp(a, "--messages")) {
            char *end;
            long x = strtol(v, &end, 10);
            if (x < 1 || x > MAX_STREAM_MESSAGES || *end)
                return fail_usage("--messages: expected 1 to 100000, got '%s'", v);
            o->messages = (int)x;
        } else if (!strcmp(a, "--sizes")) {
            sizes = v;
        } else if (!strcmp(a, "--min") || !strcmp(a, "--max")) {
            long x = parse_size(v, &e);
            if (x <= 0 || x > (1L << 30) || *e)
                return fail_usage("not a size from 1 B to 1 GiB: '%s'", v);
            *(!strcmp(a, "--min") ? &min : &max) = x;
            have_grid = 1;
        } else if (!strcmp(a, "--per-octave")) {
            char *end;
            per = (int)strtol(v, &end, 10);
            if (per < 1 || per > 64 || *end)
                return fail_usage("--per-octave: expected 1 to 64, got '%s'", v);
            have_grid = 1;
        } else if (!strcmp(a, "--iters")) {
            char *end;
            long x = strtol(v, &end, 10);
            if (x < 1 || x > MAX_ITERS || *end)
                return fail_usage("--iters: expected 1 to 100000, got '%s'", v);
            o->iters = (int)x;
        } else {
            pending = v;
        }
    }
    if (sizes && have_grid)
        return fail_usage("%s", "--sizes and --min/--max/--per-octave exclude each other");
    if (sizes) {
        o->nsizes = parse_size_list(sizes, o->sizes, MAX_SIZES);
        if (o->nsizes <= 0)
            return fail_usage("--sizes: not a list of sizes from 1 B to 1 GiB: '%s'", sizes);
        qsort(o->sizes, (size_t)o->nsizes, sizeof(long), cmp_long);
        int n = 1;
        for (int i = 1; i < o->nsizes; i++)
            if (o->sizes[i] != o->sizes[n - 1])
                o->sizes[n++] = o->sizes[i];
        o->nsizes = n;
    } else {
        if (min > max)
            return fail_usage("%s", "--min is larger than --max");
        /* 4 points per octave catch a protocol switch within 19 %; quick: 41 % */
        o->nsizes = size_grid(min, max, per ? per : o->quick ? 2 : 4, o->sizes);
        if (o->nsizes == 0)
            return fail_usage("%s", "no size between --min and --max");
    }
    if (!*pending)
        return fail_usage("--pending: empty list '%s'", pending);
    o->npending = parse_counts(pending, o->pending, MAX_PENDING);
    if (o->npending < 0)
        return fail_usage("--pending: expected ascending counts from 1 to 64, got '%s'",
                          pending);
    if (o->nconcurrent && (nprocs % 2 || o->concurrent[o->nconcurrent - 1] > nprocs / 2)) {
        if (rank == 0)
            fprintf(stderr, "ct_p2p: --concurrent: %d pairs need %d ranks (an even number), "
                            "got %d\n", o->concurrent[o->nconcurrent - 1],
                    2 * o->concurrent[o->nconcurrent - 1], nprocs);
        return 2;
    }
    if (o->stream && o->nconcurrent)
        return fail_usage("%s", "--stream and --concurrent exclude each other");
    if (o->stream && parse_stream(o->stream, nprocs))
        return 2;
    if (cores) {
        int want = o->nconcurrent || o->stream ? nprocs : 2;
        o->ncores = 0;
        for (const char *p = cores; *p;) {
            char *end;
            long x = strtol(p, &end, 10);
            if (end == p || x < 0 || x > INT_MAX || o->ncores == MAX_RANKS ||
                (*end && *end != ',') || (*end == ',' && !end[1])) {
                o->ncores = -1;
                break;
            }
            o->cores[o->ncores++] = (int)x;
            p = *end ? end + 1 : end;
        }
        if (o->ncores != want) {
            if (!o->nconcurrent && !o->stream)
                return fail_usage("--cores: expected two core ids A,B, got '%s'", cores);
            if (rank == 0)
                fprintf(stderr, "ct_p2p: --cores: expected one core id per rank (%d), got "
                                "'%s'\n", nprocs, cores);
            return 2;
        }
        o->have_cores = 1;
    }
    if (!o->iters)
        o->iters = o->quick ? 30 : 100;
    return 0;
}

/* Many samples for small messages, fewer as they grow (about 64 KiB x iters moved per
 * measurement), never fewer than 5: a full run stays well under a minute. */
static int iters_for(const struct opts *o, long size)
{
    long n = (long)o->iters * 65536 / size, floor = o->iters < 5 ? o->iters : 5;
    if (n > o->iters)
        n = o->iters;
    return n < floor ? (int)floor : (int)n;
}

static void *page_alloc(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, bytes ? bytes : 1))
        return NULL;
    memset(p, 1, bytes); /* touched: no page faults inside the timings */
    return p;
}

static int alloc_buffers(const struct opts *o)
{
    long max = o->sizes[o->nsizes - 1];
    nbufs = G_BATCH > o->pending[o->npending - 1] ? G_BATCH : o->pending[o->npending - 1];
    /* distinct buffers for the concurrent messages, within 1 GiB a rank */
    while (nbufs > 1 && (long)nbufs * max > (1L << 30))
        nbufs /= 2;
    sbuf = calloc((size_t)nbufs, sizeof *sbuf);
    rbuf = calloc((size_t)nbufs, sizeof *rbuf);
    int iters = o->iters > MODE_SAMPLES ? o->iters : MODE_SAMPLES;
    samples = malloc((size_t)iters * sizeof *samples);
    samples2 = malloc((size_t)iters * sizeof *samples2);
    if (!sbuf || !rbuf || !samples || !samples2)
        return -1;
    for (int i = 0; i < nbufs; i++) {
        char **mine = rank == 0 ? &sbuf[i] : &rbuf[i];
        if (!(*mine = page_alloc((size_t)max)))
            return -1;
    }
    /* rank 0 also receives the ping-pong replies, rank 1 sends them */
    if (rank == 0 && !(rbuf[0] = page_alloc((size_t)max)))
        return -1;
    if (rank == 1 && !(sbuf[0] = page_alloc((size_t)max)))
        return -1;
    if (rank == 0) {
        size_t doubles = (size_t)(max / 8 > 1 ? max / 8 : 1);
        local_dst = page_alloc((size_t)max);
        red_in = page_alloc(doubles * sizeof(double));
        red_inout = page_alloc(doubles * sizeof(double));
        if (!local_dst || !red_in || !red_inout)
            return -1;
        for (size_t i = 0; i < doubles; i++)
            red_in[i] = 1.0, red_inout[i] = 0.5;
    }
    return 0;
}

#define SB(i) sbuf[(i) % nbufs]
#define RB(i) rbuf[(i) % nbufs]

static void sync_pair(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
}

static void spin(double us)
{
    double end = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < end)
        ;
}

/* os: the Isend alone, the receive pre-posted; isw: Isend + Wait in the same conditions. */
static void measure_os(struct point *p)
{
    int n = (int)p->size;
    for (int it = -1; it < p->iters; it++) { /* it = -1: warm-up */
        MPI_Request r;
        if (rank == 1)
            MPI_Irecv(RB(0), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &r);
        sync_pair();
        if (rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Isend(SB(0), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &r);
            double t1 = MPI_Wtime();
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            double t2 = MPI_Wtime();
            if (it >= 0)
                samples[it] = (t1 - t0) * 1e6, samples2[it] = (t2 - t0) * 1e6;
        } else {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) {
        p->os = ct_median(samples, p->iters);
        p->isw = ct_median(samples2, p->iters);
    }
}

/* Half a blocking round trip, each round trip timed alone. */
static void measure_oneway(struct point *p)
{
    int n = (int)p->size;
    for (int it = -1; it < p->iters; it++) {
        sync_pair();
        if (rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Send(SB(0), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(RB(0), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it >= 0)
                samples[it] = (MPI_Wtime() - t0) * 1e6 / 2;
        } else {
            MPI_Recv(RB(0), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(SB(0), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        p->oneway = ct_median(samples, p->iters);
}

/* The mode: the receiver posts its receive only after busy-waiting D without entering MPI.
 * A rendezvous send cannot complete before that; an eager one can. Decided on rank 0 and
 * shared, since the or probe's order depends on it. */
static void measure_mode(struct point *p)
{
    int n = (int)p->size;
    double d = 0;
    if (rank == 0)
        d = p->oneway * 10 > 50 ? p->oneway * 10 : 50;
    MPI_Bcast(&d, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int it = -1; it < MODE_SAMPLES; it++) {
        sync_pair();
        if (rank == 0) {
            MPI_Request r;
            double t0 = MPI_Wtime();
            MPI_Isend(SB(0), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (it >= 0)
                samples[it] = (MPI_Wtime() - t0) * 1e6;
        } else {
            spin(d);
            MPI_Recv(RB(0), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    int code = 0;
    if (rank == 0) {
        p->delay = d;
        p->late = ct_median(samples, MODE_SAMPLES);
        code = p->late >= d / 2 ? 2 : p->os >= 0.5 * p->isw ? 1 : 0;
        p->mode = code == 2 ? "rendezvous" : code == 1 ? "blocking" : "immediate";
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 1)
        p->mode = code == 2 ? "rendezvous" : "eager";
}

/* or: the receiver's blocking Recv once the data is there, known from a 0-byte message sent
 * after it. A rendezvous send cannot complete before the Recv is posted, so for those the
 * sender sends the notice before waiting (and or includes the transfer). */
static void measure_or(struct point *p)
{
    int n = (int)p->size, rdv = !strcmp(p->mode, "rendezvous");
    for (int it = -1; it < p->iters; it++) {
        sync_pair();
        if (rank == 0) {
            MPI_Request r;
            MPI_Isend(SB(0), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &r);
            if (!rdv)
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_DONE, MPI_COMM_WORLD);
            if (rdv)
                MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double t0 = MPI_Wtime();
            MPI_Recv(RB(0), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (it >= 0)
                samples[it] = (MPI_Wtime() - t0) * 1e6;
        }
    }
    if (rank == 1) {
        double v = ct_median(samples, p->iters);
        MPI_Send(&v, 1, MPI_DOUBLE, 0, TAG_DONE, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&p->orr, 1, MPI_DOUBLE, 1, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* k Isends posted back to back against k pre-posted receives. `wait_each`: each Isend is
 * waited for before the next (the gap g); else all are left pending and waited for at the
 * end. Returns on rank 0 the median time of the k-th Isend (*os_k) and of the whole batch
 * divided by k (*g_k). */
static void batch(struct point *p, int k, int wait_each, double *os_k, double *g_k)
{
    int n = (int)p->size;
    MPI_Request req[MAX_PENDING > G_BATCH ? MAX_PENDING : G_BATCH];
    for (int it = -1; it < p->iters; it++) {
        if (rank == 1)
            for (int j = 0; j < k; j++)
                MPI_Irecv(RB(j), n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req[j]);
        sync_pair();
        if (rank == 0) {
            double t0 = MPI_Wtime(), last = 0;
            for (int j = 0; j < k; j++) {
                double ts = MPI_Wtime();
                MPI_Isend(SB(j), n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req[j]);
                last = MPI_Wtime() - ts;
                if (wait_each)
                    MPI_Wait(&req[j], MPI_STATUS_IGNORE);
            }
            if (!wait_each)
                MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
            if (it >= 0)
                samples[it] = last * 1e6, samples2[it] = (MPI_Wtime() - t0) * 1e6 / k;
        } else {
            MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        }
    }
    if (rank == 0) {
        *os_k = ct_median(samples, p->iters);
        *g_k = ct_median(samples2, p->iters);
    }
}

/* Rank 0's local operations, warm (the first run untimed). */
static void measure_local(struct point *p)
{
    int doubles = p->size / 8 > 1 ? (int)(p->size / 8) : 1;
    for (int it = -1; it < p->iters; it++) {
        double t0 = MPI_Wtime();
        memcpy(local_dst, SB(0), (size_t)p->size);
        double t1 = MPI_Wtime();
        ct_reduce_local(red_in, red_inout, (size_t)doubles, MPI_DOUBLE, MPI_SUM);
        double t2 = MPI_Wtime();
        if (it >= 0)
            samples[it] = (t1 - t0) * 1e6, samples2[it] = (t2 - t1) * 1e6;
    }
    /* the copy must not be optimised away */
    if (local_dst[p->size - 1] != SB(0)[p->size - 1])
        fprintf(stderr, "ct_p2p: copy check failed\n");
    p->copy = ct_median(samples, p->iters);
    p->reduce = ct_median(samples2, p->iters);
}

static void print_array(const char *name, const double *v, int n)
{
    printf(",\"%s\":[", name);
    for (int i = 0; i < n; i++)
        printf(i ? ",%.4f" : "%.4f", v[i]);
    printf("]");
}

static void print_point(const struct point *p, int npending)
{
    printf("{\"size_bytes\":%ld,\"iterations\":%d,\"os_us\":%.4f,\"or_us\":%.4f,\"g_us\":%.4f,"
           "\"oneway_us\":%.4f,\"mode\":\"%s\",\"isend_wait_us\":%.4f,"
           "\"late_isend_wait_us\":%.4f,\"delay_us\":%.4f",
           p->size, p->iters, p->os, p->orr, p->g, p->oneway, p->mode, p->isw, p->late,
           p->delay);
    print_array("os_pending_us", p->os_pending, npending);
    print_array("g_pending_us", p->g_pending, npending);
    printf(",\"copy_us\":%.4f,\"reduce_us\":%.4f}\n", p->copy, p->reduce);
    fflush(stdout);
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void print_json_string(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
}

static void print_header(const struct opts *o, int nprocs)
{
    char cpus[256], msg[256] = "";
    int bound = 0;
    if (o->have_cores) {
        const char *why = NULL;
        bound = topo_bind_core(o->cores[rank], 0, &why) == 0;
        if (!bound)
            snprintf(msg, sizeof msg, "%s", why ? why : "binding refused");
    }
    topo_current_cpus(cpus, sizeof cpus);
    char line[640];
    snprintf(line, sizeof line, "{\"rank\":%d,\"core\":%d,\"cpus\":\"%s\",\"bound\":%s%s%s%s}",
             rank, o->have_cores ? o->cores[rank] : -1, cpus, bound ? "true" : "false",
             msg[0] ? ",\"bind_error\":\"" : "", msg, msg[0] ? "\"" : "");
    char *all = rank == 0 ? malloc((size_t)nprocs * sizeof line) : NULL;
    if (rank == 0 && !all) {
        fprintf(stderr, "ct_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(line, sizeof line, MPI_CHAR, all, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = 0; /* the first line names it; the rest is build flags */
    printf("{\"ranks\":[");
    for (int r = 0; r < nprocs; r++)
        printf(r ? ",%s" : "%s", all + (size_t)r * sizeof line);
    printf("],\"binder\":\"%s\",\"library\":\"", topo_binder());
    print_json_string(lib);
    printf("\",\"sizes\":[");
    for (int i = 0; i < o->nsizes; i++)
        printf(i ? ",%ld" : "%ld", o->sizes[i]);
    if (o->stream) {
        printf("],\"stream\":[");
        for (int c = 0; c < nscen; c++) {
            printf(c ? ",[" : "[");
            for (int f = 0; f < nflows[c]; f++)
                printf(f ? ",[%d,%d]" : "[%d,%d]", flows[c][f][0], flows[c][f][1]);
            printf("]");
        }
        printf("],\"messages\":%d}\n", o->messages);
    } else if (o->nconcurrent) {
        printf("],\"concurrent\":[");
        for (int i = 0; i < o->nconcurrent; i++)
            printf(i ? ",%d" : "%d", o->concurrent[i]);
        printf("],\"pairs\":[");
        for (int i = 0; i < nprocs / 2; i++)
            printf(i ? ",[%d,%d]" : "[%d,%d]", i, i + nprocs / 2);
        printf("]}\n");
    } else {
        printf("],\"pending\":[");
        for (int i = 0; i < o->npending; i++)
            printf(i ? ",%d" : "%d", o->pending[i]);
        printf("],\"g_batch\":%d,\"mode_samples\":%d,\"buffers\":%d}\n", G_BATCH,
               MODE_SAMPLES, nbufs);
    }
    fflush(stdout);
    free(all);
}

/* --concurrent: every rank one send and one receive buffer of the largest size. */
static int alloc_concurrent(const struct opts *o)
{
    long max = o->sizes[o->nsizes - 1];
    nbufs = 1;
    sbuf = calloc(1, sizeof *sbuf);
    rbuf = calloc(1, sizeof *rbuf);
    samples = malloc((size_t)o->iters * sizeof *samples);
    if (!sbuf || !rbuf || !samples || !(sbuf[0] = page_alloc((size_t)max)) ||
        !(rbuf[0] = page_alloc((size_t)max)))
        return -1;
    return 0;
}

/* k pairs (i -> i + P, i < k) ping-pong m bytes at the same time, after a barrier of all
 * ranks: the per-pair one-way time (half the round trip, the mean over the k pairs), median
 * over the samples, on rank 0. */
static double measure_concurrent(long size, int iters, int k, int nprocs)
{
    int n = (int)size, half = nprocs / 2;
    for (int it = -1; it < iters; it++) {
        double mine = 0, sum = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < k) {
            double t0 = MPI_Wtime();
            MPI_Send(SB(0), n, MPI_BYTE, rank + half, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(RB(0), n, MPI_BYTE, rank + half, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            mine = (MPI_Wtime() - t0) * 1e6 / 2;
        } else if (rank >= half && rank < half + k) {
            MPI_Recv(RB(0), n, MPI_BYTE, rank - half, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(SB(0), n, MPI_BYTE, rank - half, TAG_DATA, MPI_COMM_WORLD);
        }
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && it >= 0)
            samples[it] = sum / k;
    }
    return rank == 0 ? ct_median(samples, iters) : 0;
}

static void run_concurrent(const struct opts *o, int nprocs)
{
    for (int s = 0; s < o->nsizes; s++) {
        long size = o->sizes[s];
        int iters = iters_for(o, size);
        double t[MAX_PENDING];
        for (int j = 0; j < o->nconcurrent; j++)
            t[j] = measure_concurrent(size, iters, o->concurrent[j], nprocs);
        if (rank == 0) {
            printf("{\"size_bytes\":%ld,\"iterations\":%d", size, iters);
            print_array("oneway_concurrent_us", t, o->nconcurrent);
            printf("}\n");
            fflush(stdout);
            fprintf(stderr, "progress %d %d\n", s + 1, o->nsizes);
        }
    }
}

/* --stream: one buffer to send and one to receive per flow a rank takes part in. */
static int alloc_stream(const struct opts *o)
{
    long max = o->sizes[o->nsizes - 1];
    nbufs = MAX_FLOWS;
    sbuf = calloc(MAX_FLOWS, sizeof *sbuf);
    rbuf = calloc(MAX_FLOWS, sizeof *rbuf);
    samples = malloc((size_t)o->iters * MAX_FLOWS * sizeof *samples);
    if (!sbuf || !rbuf || !samples)
        return -1;
    int outs = 0, ins = 0;
    for (int c = 0; c < nscen; c++) {
        int so = 0, si = 0;
        for (int f = 0; f < nflows[c]; f++)
            so += flows[c][f][0] == rank, si += flows[c][f][1] == rank;
        outs = so > outs ? so : outs;
        ins = si > ins ? si : ins;
    }
    for (int i = 0; i < outs; i++)
        if (!(sbuf[i] = page_alloc((size_t)max)))
            return -1;
    for (int i = 0; i < ins; i++)
        if (!(rbuf[i] = page_alloc((size_t)max)))
            return -1;
    return 0;
}

/* Rounds a stream of m-byte messages: --messages, else 4 MiB's worth, 16 to 1024 (long
 * enough to run past the socket buffers and a token bucket of the link). */
static int stream_messages(const struct opts *o, long size)
{
    if (o->messages)
        return o->messages;
    long n = (4L << 20) / size;
    return n < 16 ? 16 : n > 1024 ? 1024 : (int)n;
}

/* One sample of scenario c: every rank runs its rounds; the receiver of each flow times it
 * from the common start to its last message. gap[f] on rank 0: that time over the rounds. */
static void stream_once(int c, long size, int rounds, double *gap)
{
    int n = (int)size, nf = nflows[c];
    MPI_Request req[2 * MAX_FLOWS];
    double mine[MAX_FLOWS] = {0}, all[MAX_FLOWS];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < rounds; i++) {
        int nr = 0, si = 0, ri = 0;
        for (int f = 0; f < nf; f++)
            if (flows[c][f][1] == rank)
                MPI_Irecv(rbuf[ri++], n, MPI_BYTE, flows[c][f][0], TAG_DATA + 1 + f,
                          MPI_COMM_WORLD, &req[nr++]);
        for (int f = 0; f < nf; f++)
            if (flows[c][f][0] == rank)
                MPI_Isend(sbuf[si++], n, MPI_BYTE, flows[c][f][1], TAG_DATA + 1 + f,
                          MPI_COMM_WORLD, &req[nr++]);
        if (!nr)
            break;
        MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
        /* a rank that receives a flow knows when its last message came */
        if (i == rounds - 1)
            for (int f = 0; f < nf; f++)
                if (flows[c][f][1] == rank)
                    mine[f] = (MPI_Wtime() - t0) * 1e6 / rounds;
    }
    MPI_Reduce(mine, all, nf, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        memcpy(gap, all, (size_t)nf * sizeof *gap);
}

static void run_stream(const struct opts *o)
{
    int steps = o->nsizes * nscen, done = 0;
    for (int s = 0; s < o->nsizes; s++) {
        long size = o->sizes[s];
        int rounds = stream_messages(o, size);
        int iters = o->iters < 5 ? o->iters : 5; /* a stream is itself many messages */
        for (int c = 0; c < nscen; c++) {
            int nf = nflows[c];
            double gap[MAX_FLOWS];
            stream_once(c, size, rounds, gap); /* warm-up */
            for (int it = 0; it < iters; it++) {
                stream_once(c, size, rounds, gap);
                for (int f = 0; f < nf; f++)
                    samples[(size_t)f * (size_t)iters + (size_t)it] = gap[f];
            }
            if (rank != 0)
                continue;
            double med[MAX_FLOWS], worst = 0;
            for (int f = 0; f < nf; f++) {
                med[f] = ct_median(samples + (size_t)f * (size_t)iters, iters);
                worst = med[f] > worst ? med[f] : worst;
            }
            printf("{\"size_bytes\":%ld,\"scenario\":%d,\"flows\":[", size, c);
            for (int f = 0; f < nf; f++)
                printf(f ? ",[%d,%d]" : "[%d,%d]", flows[c][f][0], flows[c][f][1]);
            printf("],\"messages\":%d,\"iterations\":%d", rounds, iters);
            print_array("gap_us", med, nf);
            printf(",\"max_gap_us\":%.4f}\n", worst);
            fflush(stdout);
            fprintf(stderr, "progress %d %d\n", ++done, steps);
        }
    }
}

int main(int argc, char **argv)
{
    int nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int concurrent = 0;
    for (int i = 1; i < argc; i++)
        concurrent |= !strcmp(argv[i], "--concurrent") || !strcmp(argv[i], "--stream");
    if (nprocs != 2 && !concurrent) {
        if (rank == 0)
            fprintf(stderr, "ct_p2p: needs exactly 2 ranks (rank 0 sends, rank 1 receives), "
                            "got %d: run it as mpiexec -n 2 ct_p2p\n", nprocs);
        MPI_Finalize();
        return 2;
    }
    static struct opts o;
    if (nprocs > MAX_RANKS || parse_args(argc, argv, &o, nprocs)) {
        if (nprocs > MAX_RANKS && rank == 0)
            fprintf(stderr, "ct_p2p: at most %d ranks\n", MAX_RANKS);
        MPI_Finalize();
        return 2;
    }
    const char *why = NULL;
    int ok = topo_init(&why) == 0 &&
             (o.stream        ? alloc_stream(&o)
              : o.nconcurrent ? alloc_concurrent(&o)
                              : alloc_buffers(&o)) == 0,
        all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        fprintf(stderr, "ct_p2p: rank %d: %s\n", rank,
                ok ? "another rank failed to start" : why ? why : "out of memory");
        MPI_Finalize();
        return 1;
    }
    print_header(&o, nprocs);
    if (o.stream) {
        run_stream(&o);
        topo_fini();
        MPI_Finalize();
        return 0;
    }
    if (o.nconcurrent) {
        run_concurrent(&o, nprocs);
        topo_fini();
        MPI_Finalize();
        return 0;
    }
    for (int s = 0; s < o.nsizes; s++) {
        struct point p = {.size = o.sizes[s], .iters = iters_for(&o, o.sizes[s])};
        measure_os(&p);
        measure_oneway(&p);
        measure_mode(&p);
        measure_or(&p);
        double unused;
        batch(&p, G_BATCH, 1, &unused, &p.g);
        for (int i = 0; i < o.npending; i++)
            batch(&p, o.pending[i], 0, &p.os_pending[i], &p.g_pending[i]);
        if (rank == 0) {
            measure_local(&p);
            print_point(&p, o.npending);
            fprintf(stderr, "progress %d %d\n", s + 1, o.nsizes);
        }
    }
    topo_fini();
    MPI_Finalize();
    return 0;
}
