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
 * usage: ct_osu --op OP --sizes B,B,... [--op OP --sizes ...] [--iters K] [--warmup W]
 *               [--between pmpi|mpi] [--form blocking|nonblocking|persistent]
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
 * Per point: W warm-up calls, then K iterations, each a PMPI_Barrier then the timed call,
 * every rank timing its own call; the iteration's time is the slowest rank's (max over
 * ranks, as OSU's benchmarks report it). One JSON line per point on rank 0's stdout:
 * {"op","size","ranks","iters","median_us","min_us","max_us","avg_us"} over iterations.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 16
#define MAX_SIZES 64

typedef struct group {
    char op[16];
    long long sizes[MAX_SIZES];
    int nsizes;
} group;

static int rank, nprocs;
static int between_mpi; /* --between mpi: the drop-in's MPI_Barrier between iterations */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int form; /* --form */

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

static void measure(const char *op, long long size, int iters, int warmup, char *a, char *b,
                    double *mine, double *slowest)
{
    MPI_Request plan = MPI_REQUEST_NULL;
    if (form == PERSISTENT && call_form(op, size, a, b, PERSISTENT, &plan) != MPI_SUCCESS) {
        fprintf(stderr, "ct_osu: no persistent %s in this MPI\n", op);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < warmup; i++)
        call(op, size, a, b, &plan);
    for (int i = 0; i < iters; i++) {
        if (between_mpi)
            MPI_Barrier(MPI_COMM_WORLD);
        else
            PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        call(op, size, a, b, &plan);
        mine[i] = (MPI_Wtime() - t0) * 1e6;
    }
    if (plan != MPI_REQUEST_NULL)
        MPI_Request_free(&plan);
    /* One gathering after the timed loop: nothing but the barrier between iterations. */
    PMPI_Reduce(mine, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    double sum = 0;
    for (int i = 0; i < iters; i++)
        sum += slowest[i];
    qsort(slowest, (size_t)iters, sizeof *slowest, cmp_double);
    double median = iters % 2 ? slowest[iters / 2]
                              : (slowest[iters / 2 - 1] + slowest[iters / 2]) / 2;
    static const char *forms[] = {"blocking", "nonblocking", "persistent"};
    printf("{\"op\": \"%s\", \"size\": %lld, \"ranks\": %d, \"iters\": %d, \"median_us\": %.3f, "
           "\"min_us\": %.3f, \"max_us\": %.3f, \"avg_us\": %.3f, \"form\": \"%s\"}\n",
           op, !strcmp(op, "barrier") ? 0LL : size, nprocs, iters, median, slowest[0],
           slowest[iters - 1], sum / iters, forms[form]);
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
                        "alltoall|barrier --sizes B,B,... [--op ... --sizes ...] [--iters K] "
                        "[--warmup W] [--between pmpi|mpi] "
                        "[--form blocking|nonblocking|persistent]\n");
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
    long long most = 8;
    for (int g = 0; g < ngroups; g++)
        for (int s = 0; s < groups[g].nsizes; s++) {
            long long bytes = groups[g].sizes[s] * (per_rank_blocks(groups[g].op) ? nprocs : 1);
            most = bytes > most ? bytes : most;
        }
    char *a = malloc((size_t)most), *b = malloc((size_t)most);
    double *mine = malloc((size_t)iters * sizeof *mine);
    double *slowest = malloc((size_t)iters * sizeof *slowest);
    if (!a || !b || !mine || !slowest) {
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
            measure(groups[g].op, groups[g].sizes[s], iters, warmup, a, b, mine, slowest);
    free(a);
    free(b);
    free(mine);
    free(slowest);
    MPI_Finalize();
    return 0;
}
