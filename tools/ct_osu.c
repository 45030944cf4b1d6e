/*
 * ct_osu: a plain OSU-style latency benchmark of the MPI collectives, with no colltune API.
 *
 * It calls MPI_Bcast, MPI_Reduce, ... by their MPI names, so run as it is it measures the
 * MPI library's own collectives, and run with the drop-in preloaded (LD_PRELOAD of
 * libcolltune_pmpi with COLLTUNE_TABLE) it measures what a tuning table makes of an
 * unmodified program: `colltune verify` runs it both ways. The harness itself (the barrier
 * between iterations, the gathering of the times) calls PMPI_ names, so the drop-in never
 * changes how the measurement is taken, only what is measured.
 *
 * usage: ct_osu --op OP --sizes B,B,... [--mix OP2] [--op OP --sizes ... [--mix OP2]]
 *               [--iters K] [--warmup W] [--budget-ms MS]
 *               [--between pmpi|mpi] [--form blocking|nonblocking|persistent]
 *               [--heap primed|as-is]
 *
 * Sizes mean what the tuning table means (docs/TABLE.md): the message of bcast, the vector
 * of reduce/allreduce (MPI_DOUBLE, summed: B/8 elements), one rank's block of scatter,
 * gather, allgather and alltoall (MPI_BYTE); the barrier has none (size 0). Root 0.
 *
 * --between mpi: the barrier between iterations is MPI_Barrier, which the drop-in sees, as
 * OSU's own benchmarks call it: collectives then alternate as in a program (bcast, barrier,
 * bcast, ...), the benchmark of record (docs/BENCHMARKS.md); pmpi (default) keeps it out of
 * the drop-in's sight.
 * --form nonblocking: each timed call is MPI_I<op> then MPI_Wait (start to completion);
 * persistent: MPI_<Op>_init once per point, outside the timing (MPI 4, or Open MPI 5), each
 * timed call MPI_Start then MPI_Wait, MPI_Request_free after the point.
 * --mix OP2 (after an --op's --sizes, for that group): a two-operation mix. Each iteration
 * calls OP then OP2 (same form, OP2 at the point's size, 8 B when the point is the barrier),
 * each call timed on its own: the line's avg_us/median_us are OP's, mix_avg_us and
 * mix_median_us OP2's. With --between pmpi the drop-in then sees OP, OP2, OP, OP2, ...: two
 * collectives alternating and nothing else, as in a program's loop.
 * --budget-ms MS: bounds a point's time on large messages, so one run can cover 8 B to
 * 4 MiB: one call first (its slowest rank's time) sets the warm-up to at most a quarter of
 * MS, then the warm-up's mean iteration (slowest rank) sets the iterations to MS's worth,
 * at least 10 and at most K. Every rank gets both counts from one PMPI_Allreduce, so all
 * make the same calls; the line's iters says what ran.
 * Per point: W warm-up calls, then K iterations, each a PMPI_Barrier then the timed call,
 * every rank timing its own call; the iteration's time is the slowest rank's (max over
 * ranks, as OSU's benchmarks report it). One JSON line per point on rank 0's stdout:
 * {"op","size","ranks","iters","median_us","min_us","max_us","avg_us","form"} over
 * iterations, "iter_avg_us","iter_median_us" for the whole iteration (the barrier between,
 * the call and its partner), and "mix","mix_avg_us","mix_median_us" with --mix.
 *
 * --heap primed (default): right after MPI_Init, one block of HEAP_PRIME bytes is allocated
 * and freed, so every point runs with glibc's malloc in the state a program reaches after it
 * first frees a large block. Why: glibc starts with a 128 KiB mmap threshold and trim
 * threshold and raises both (to the block's size, and twice it) the first time a large
 * mmapped block is freed. Until then a library that mallocs and frees a temporary buffer of
 * more than 128 KiB in each call (MPICH's MPI_Ireduce: a temporary of the message's size on
 * the root) grows the heap with brk and gives it back on each free, faulting in fresh pages
 * every call: MPICH's Ireduce of 256 KiB costs about 3x. Which earlier points left that state
 * depended on who served them: natively MPICH's own allreduce of 4 MiB (run before reduce)
 * raised the thresholds; under a tuning table colltune served it and they stayed low. A
 * point's time then depended on the points before it and on the other column's choices,
 * not on the call measured (docs/BENCHMARKS.md section 46). as-is: no priming (the state is
 * whatever MPI_Init and the earlier points left). "minflt" on each line: the minor page
 * faults a rank took over the timed iterations (getrusage; the most over ranks), which is
 * what the low thresholds cost: with the heap primed, a call whose temporaries fit in
 * HEAP_PRIME takes none once warm.
 */

#define _POSIX_C_SOURCE 200809L /* getrusage */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_GROUPS 16
/* Under glibc's ceiling for the dynamic mmap threshold (32 MiB on 64-bit), which a larger
 * freed block would not raise. */
#define HEAP_PRIME ((size_t)31 << 20)
#define MAX_SIZES 64

typedef struct group {
    char op[16];
    char mix[16]; /* --mix: the second operation, "" for none */
    long long sizes[MAX_SIZES];
    int nsizes;
} group;

static int rank, nprocs;
static int between_mpi; /* --between mpi: the drop-in's MPI_Barrier between iterations */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int form; /* --form */
static double budget_us; /* --budget-ms, 0: iterations fixed */
static int heap_as_is; /* --heap as-is: no priming */

/* MPI 4's persistent collectives: Open MPI 5 has them while it says MPI 3.1. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int known_op(const char *op)
{
    static const char *ops[] = {"bcast", "reduce", "allreduce", "scatter", "gather",
                                "allgather", "alltoall", "barrier"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

/* Movement operations hold one block per rank in their whole buffers. */
static int per_rank_blocks(const char *op)
{
    return !strcmp(op, "scatter") || !strcmp(op, "gather") || !strcmp(op, "allgather") ||
           !strcmp(op, "alltoall");
}

/* One call of the operation at `size` bytes, by its MPI name (so the drop-in sees it): the
 * blocking one; or, with req, the start of the non-blocking one (form NONBLOCKING) or the
 * init of the persistent one (PERSISTENT). */
static int call_form(const char *op, long long size, char *a, char *b, int f, MPI_Request *req)
{
    int n = (int)size;
    int doubles = (int)(size / 8) > 0 ? (int)(size / 8) : 1;
    MPI_Comm w = MPI_COMM_WORLD;
#if HAVE_PERSISTENT
    MPI_Info i = MPI_INFO_NULL;
#define FORMS(blocking, nb, pers) (f == BLOCKING ? (blocking) : f == NONBLOCKING ? (nb) : (pers))
#else
#define FORMS(blocking, nb, pers) (f == BLOCKING ? (blocking) : f == NONBLOCKING ? (nb) : -1)
#endif
    if (!strcmp(op, "bcast"))
        return FORMS(MPI_Bcast(a, n, MPI_BYTE, 0, w), MPI_Ibcast(a, n, MPI_BYTE, 0, w, req),
                     MPI_Bcast_init(a, n, MPI_BYTE, 0, w, i, req));
    if (!strcmp(op, "reduce"))
        return FORMS(MPI_Reduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, 0, w),
                     MPI_Ireduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, 0, w, req),
                     MPI_Reduce_init(a, b, doubles, MPI_DOUBLE, MPI_SUM, 0, w, i, req));
    if (!strcmp(op, "allreduce"))
        return FORMS(MPI_Allreduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, w),
                     MPI_Iallreduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, w, req),
                     MPI_Allreduce_init(a, b, doubles, MPI_DOUBLE, MPI_SUM, w, i, req));
    if (!strcmp(op, "scatter"))
        return FORMS(MPI_Scatter(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w),
                     MPI_Iscatter(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w, req),
                     MPI_Scatter_init(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w, i, req));
    if (!strcmp(op, "gather"))
        return FORMS(MPI_Gather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w),
                     MPI_Igather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w, req),
                     MPI_Gather_init(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, w, i, req));
    if (!strcmp(op, "allgather"))
        return FORMS(MPI_Allgather(a, n, MPI_BYTE, b, n, MPI_BYTE, w),
                     MPI_Iallgather(a, n, MPI_BYTE, b, n, MPI_BYTE, w, req),
                     MPI_Allgather_init(a, n, MPI_BYTE, b, n, MPI_BYTE, w, i, req));
    if (!strcmp(op, "alltoall"))
        return FORMS(MPI_Alltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, w),
                     MPI_Ialltoall(a, n, MPI_BYTE, b, n, MPI_BYTE, w, req),
                     MPI_Alltoall_init(a, n, MPI_BYTE, b, n, MPI_BYTE, w, i, req));
    return FORMS(MPI_Barrier(w), MPI_Ibarrier(w, req), MPI_Barrier_init(w, i, req));
#undef FORMS
}

/* One timed call in the chosen form (plan: the persistent request, made before). */
static int call(const char *op, long long size, char *a, char *b, MPI_Request *plan)
{
    MPI_Request req;
    if (form == BLOCKING)
        return call_form(op, size, a, b, BLOCKING, NULL);
    if (form == NONBLOCKING) {
        int rc = call_form(op, size, a, b, NONBLOCKING, &req);
        return rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
    }
    int rc = MPI_Start(plan);
    return rc == MPI_SUCCESS ? MPI_Wait(plan, MPI_STATUS_IGNORE) : rc;
}

/* The slowest rank's mean, median and extremes of one call's times over the iterations, on
 * rank 0 (slowest: scratch, sorted). */
typedef struct stats {
    double mean, median, min, max;
} stats;

static stats slowest_stats(double *mine, double *slowest, int iters)
{
    stats st = {0, 0, 0, 0};
    /* One gathering after the timed loop: nothing but the barrier between iterations. */
    PMPI_Reduce(mine, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return st;
    double sum = 0;
    for (int i = 0; i < iters; i++)
        sum += slowest[i];
    qsort(slowest, (size_t)iters, sizeof *slowest, cmp_double);
    st.mean = sum / iters;
    st.median = iters % 2 ? slowest[iters / 2] : (slowest[iters / 2 - 1] + slowest[iters / 2]) / 2;
    st.min = slowest[0];
    st.max = slowest[iters - 1];
    return st;
}

static void between(void)
{
    if (between_mpi)
        MPI_Barrier(MPI_COMM_WORLD);
    else
        PMPI_Barrier(MPI_COMM_WORLD);
}

/* The slowest rank's value of a local time, on every rank (so all take the same decision). */
static double slowest_everywhere(double t)
{
    double out;
    PMPI_Allreduce(&t, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static void measure(const group *g, long long size, int iters, int warmup, char *a, char *b,
                    double *mine, double *mine2, double *slowest)
{
    const char *op = g->op, *op2 = g->mix[0] ? g->mix : NULL;
    /* the partner's size: the point's, but a message of 8 B beside the barrier */
    long long size2 = !strcmp(op, "barrier") ? 8 : size;
    MPI_Request plan = MPI_REQUEST_NULL, plan2 = MPI_REQUEST_NULL;
    if (form == PERSISTENT && (call_form(op, size, a, b, PERSISTENT, &plan) != MPI_SUCCESS ||
                               (op2 && call_form(op2, size2, a, b, PERSISTENT, &plan2) !=
                                           MPI_SUCCESS))) {
        fprintf(stderr, "ct_osu: no persistent %s in this MPI\n", op);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (budget_us > 0) {
        /* One call sizes the warm-up (at most a quarter of the budget), the warm-up's mean
         * sizes the iterations; both from the slowest rank, so every rank agrees. */
        between();
        double t0 = MPI_Wtime();
        call(op, size, a, b, &plan);
        if (op2)
            call(op2, size2, a, b, &plan2);
        double one = slowest_everywhere((MPI_Wtime() - t0) * 1e6);
        double fit = budget_us / 4 / (one > 0.01 ? one : 0.01);
        warmup = fit < 1 ? 1 : fit < warmup ? (int)fit : warmup;
    }
    /* The iterations are sized by the median iteration of the warm-up's second half (mine
     * is free until the timed loop): its first calls are cold (a first call prepares its
     * job, faults its pages in), and on a loaded machine one descheduled iteration would
     * make a mean say ten iterations where thousands fit. */
    int half = warmup / 2, sized = 0;
    for (int i = 0; i < warmup; i++) {
        double w0 = MPI_Wtime();
        if (budget_us > 0)
            between();
        call(op, size, a, b, &plan);
        if (op2)
            call(op2, size2, a, b, &plan2);
        if (i >= half && sized < iters)
            mine[sized++] = (MPI_Wtime() - w0) * 1e6;
    }
    if (budget_us > 0 && sized > 0) {
        qsort(mine, (size_t)sized, sizeof *mine, cmp_double);
        double each = slowest_everywhere(mine[sized / 2]);
        double fit = budget_us / (each > 0.01 ? each : 0.01);
        iters = fit < 10 ? (iters < 10 ? iters : 10) : fit < iters ? (int)fit : iters;
    }
    /* Beside each call's own time, the whole iteration's (the barrier between, the call, the
     * partner): what the loop pays. A collective that leaves the ranks further apart (a
     * barrier whose last arriver leaves first) charges the next call's timer, not its own,
     * so the calls' times alone can favour one policy while the loop costs more under it. */
    double *whole = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    if (!whole) {
        fprintf(stderr, "ct_osu: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0); /* around the loop, not each call: a system call */
    for (int i = 0; i < iters; i++) {
        double w0 = MPI_Wtime();
        between();
        double t0 = MPI_Wtime();
        call(op, size, a, b, &plan);
        double t1 = MPI_Wtime();
        mine[i] = (t1 - t0) * 1e6;
        if (op2) {
            call(op2, size2, a, b, &plan2);
            mine2[i] = (MPI_Wtime() - t1) * 1e6;
        }
        whole[i] = (MPI_Wtime() - w0) * 1e6;
    }
    getrusage(RUSAGE_SELF, &ru1);
    long faults = ru1.ru_minflt - ru0.ru_minflt, most_faults = 0;
    if (plan != MPI_REQUEST_NULL)
        MPI_Request_free(&plan);
    if (plan2 != MPI_REQUEST_NULL)
        MPI_Request_free(&plan2);
    stats st = slowest_stats(mine, slowest, iters);
    stats st2 = st;
    if (op2)
        st2 = slowest_stats(mine2, slowest, iters);
    stats loop = slowest_stats(whole, slowest, iters);
    free(whole);
    PMPI_Reduce(&faults, &most_faults, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    static const char *forms[] = {"blocking", "nonblocking", "persistent"};
    printf("{\"op\": \"%s\", \"size\": %lld, \"ranks\": %d, \"iters\": %d, \"median_us\": %.3f, "
           "\"min_us\": %.3f, \"max_us\": %.3f, \"avg_us\": %.3f, \"form\": \"%s\"",
           op, !strcmp(op, "barrier") ? 0LL : size, nprocs, iters, st.median, st.min, st.max,
           st.mean, forms[form]);
    printf(", \"iter_avg_us\": %.3f, \"iter_median_us\": %.3f, \"minflt\": %ld", loop.mean,
           loop.median, most_faults);
    if (op2)
        printf(", \"mix\": \"%s\", \"mix_size\": %lld, \"mix_avg_us\": %.3f, "
               "\"mix_median_us\": %.3f",
               op2, !strcmp(op2, "barrier") ? 0LL : size2, st2.mean, st2.median);
    printf("}\n");
    fflush(stdout);
}

static int parse_sizes(const char *text, group *g)
{
    const char *p = text;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > (1LL << 30) || g->nsizes == MAX_SIZES)
            return -1;
        g->sizes[g->nsizes++] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return g->nsizes > 0 ? 0 : -1;
}

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: ct_osu --op bcast|reduce|allreduce|scatter|gather|allgather|"
                        "alltoall|barrier --sizes B,B,... [--mix OP2] [--op ... --sizes ...] "
                        "[--iters K] [--warmup W] [--budget-ms MS] [--between pmpi|mpi] "
                        "[--form blocking|nonblocking|persistent] [--heap primed|as-is]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    group groups[MAX_GROUPS];
    int ngroups = 0, iters = 100, warmup = -1;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = !v;
        if (!bad && !strcmp(k, "--op")) {
            bad = ngroups == MAX_GROUPS || !known_op(v) || strlen(v) >= sizeof groups[0].op;
            if (!bad) {
                memset(&groups[ngroups], 0, sizeof groups[ngroups]);
                strcpy(groups[ngroups++].op, v);
            }
        } else if (!bad && !strcmp(k, "--mix")) {
            bad = ngroups == 0 || !known_op(v) || strlen(v) >= sizeof groups[0].mix;
            if (!bad)
                strcpy(groups[ngroups - 1].mix, v);
        } else if (!bad && !strcmp(k, "--budget-ms")) {
            budget_us = atof(v) * 1e3;
            bad = !(budget_us > 0);
        } else if (!bad && !strcmp(k, "--sizes")) {
            bad = ngroups == 0 || parse_sizes(v, &groups[ngroups - 1]);
        } else if (!bad && !strcmp(k, "--iters")) {
            iters = atoi(v);
            bad = iters < 1;
        } else if (!bad && !strcmp(k, "--warmup")) {
            warmup = atoi(v);
            bad = warmup < 0;
        } else if (!bad && !strcmp(k, "--between")) {
            between_mpi = !strcmp(v, "mpi");
            bad = !between_mpi && strcmp(v, "pmpi");
        } else if (!bad && !strcmp(k, "--form")) {
            form = !strcmp(v, "nonblocking") ? NONBLOCKING
                   : !strcmp(v, "persistent") ? PERSISTENT
                                              : BLOCKING;
            bad = form == BLOCKING && strcmp(v, "blocking");
        } else if (!bad && !strcmp(k, "--heap")) {
            heap_as_is = !strcmp(v, "as-is");
            bad = !heap_as_is && strcmp(v, "primed");
        } else {
            bad = 1;
        }
        if (bad) {
            if (rank == 0)
                fprintf(stderr, "ct_osu: bad argument %s %s\n", k, v ? v : "");
            usage();
            MPI_Finalize();
            return 2;
        }
    }
    for (int g = 0; g < ngroups; g++)
        if (!strcmp(groups[g].op, "barrier") && groups[g].nsizes == 0)
            groups[g].sizes[groups[g].nsizes++] = 0;
    if (ngroups == 0 || groups[ngroups - 1].nsizes == 0) {
        usage();
        MPI_Finalize();
        return 2;
    }
    if (warmup < 0)
        warmup = iters / 10 + 2;
    if (!heap_as_is) {
        /* volatile: a malloc whose block is only freed may be removed by the compiler */
        void *volatile prime = malloc(HEAP_PRIME);
        free(prime);
    }
    long long most = 8;
    for (int g = 0; g < ngroups; g++)
        for (int s = 0; s < groups[g].nsizes; s++) {
            long long size = groups[g].sizes[s];
            long long bytes = size * (per_rank_blocks(groups[g].op) ? nprocs : 1);
            long long bytes2 = size * (per_rank_blocks(groups[g].mix) ? nprocs : 1);
            most = bytes > most ? bytes : most;
            most = bytes2 > most ? bytes2 : most;
        }
    char *a = malloc((size_t)most), *b = malloc((size_t)most);
    double *mine = malloc((size_t)iters * sizeof *mine);
    double *mine2 = malloc((size_t)iters * sizeof *mine2);
    double *slowest = malloc((size_t)iters * sizeof *slowest);
    if (!a || !b || !mine || !mine2 || !slowest) {
        fprintf(stderr, "ct_osu: rank %d: out of memory for %lld-byte buffers\n", rank, most);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Doubles that stay finite when summed, whatever the size. */
    for (long long i = 0; i + 8 <= most; i += 8) {
        double one = 1.0;
        memcpy(a + i, &one, 8);
        memcpy(b + i, &one, 8);
    }
    for (int g = 0; g < ngroups; g++)
        for (int s = 0; s < groups[g].nsizes; s++)
            measure(&groups[g], groups[g].sizes[s], iters, warmup, a, b, mine, mine2, slowest);
    free(a);
    free(b);
    free(mine);
    free(mine2);
    free(slowest);
    MPI_Finalize();
    return 0;
}
