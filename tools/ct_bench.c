/*
 * ct_bench: OSU-style latency benchmark of one collective, for any list of
 * colltune algorithms and the native MPI collective, over a range of sizes.
 * Launched under mpiexec (usually by `colltune bench`).
 *
 * Every operation: bcast, reduce, allreduce, scan, exscan (sizes are the
 * vector's bytes; reductions sum MPI_DOUBLE), scatter, gather, allgather,
 * alltoall and their v-variants (sizes are the bytes of one rank's block,
 * MPI_BYTE, every count equal; the whole buffer is nprocs blocks),
 * reduce_scatter_block and reduce_scatter (one rank's block of MPI_DOUBLE) and
 * barrier (no size: one row, size 0).
 *
 * Per iteration every rank times the collective alone (a barrier separates
 * iterations, outside the timed region, as osu_bcast does). Reported per size:
 * the OSU columns (average over ranks of each rank's mean, min and max over
 * ranks) and the median over iterations of the slowest rank's time, whose
 * per-iteration values are the raw samples.
 *
 * --rounds R (issue 39): per size, every candidate is timed once in each of R
 * rounds, each round in a fresh shuffled order, the iterations spread over the
 * rounds; so a load change during the size falls on all candidates rather than
 * deciding between two measured one after the other. Each round's median is
 * kept (round_medians_us: the samples the confidence intervals rest on) with
 * the load average after each round (load_rounds).
 *
 * --json FILE writes JSON Lines: a header object (op, ranks, MPI library,
 * binding), then one object per (algorithm, size) as soon as its size is
 * measured, so an interrupted run keeps every size it finished.
 */

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colltune.h"

typedef struct bench_args {
    ct_coll coll;
    char algs[1024];
    long long min_size, max_size, segsize;
    long long segsizes[32]; /* --segsizes: each segmentable algorithm once per size */
    int nsegsizes;
    int iters, warmup, root, check, progress, radix, serve, rounds, form;
    const char *json, *binding;
} bench_args;

static int rank, nprocs;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: ct_bench --op bcast|reduce|allreduce|scatter|gather|allgather|alltoall|"
                "barrier|allgatherv|alltoallv|gatherv|scatterv|reduce_scatter_block|"
                "reduce_scatter|scan|exscan\n  [--algs a,b,...|all] [--min B] [--max B] [--iters N] [--warmup N] "
                "[--segsize B]\n  [--segsizes B,B,...] [--radix K] [--root R] [--check] [--progress] "
                "[--binding LABEL] [--json FILE]\n  [--rounds R: each size's candidates timed in R rounds of a fresh "
                "shuffled order, the iterations spread over them]\n  [--serve: measure the 'ALG SEGSIZE SIZE "
                "ITERS' lines read on stdin, one JSON line each, until 'quit']\n"
                "  [--form blocking|nonblocking|persistent: what --serve times (start to "
                "completion)]\n");
}

static int parse(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->coll = CT_NCOLL;
    strcpy(a->algs, "all");
    a->min_size = 8;
    a->max_size = 4 << 20;
    a->binding = "none";
    a->rounds = 1;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--check")) {
            a->check = 1;
            continue;
        }
        if (!strcmp(k, "--progress")) {
            a->progress = 1;
            continue;
        }
        if (!strcmp(k, "--serve")) {
            a->serve = 1;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(k, "--op"))
            a->coll = (ct_coll)ct_coll_from_name(v);
        else if (!strcmp(k, "--algs"))
            snprintf(a->algs, sizeof a->algs, "%s", v);
        else if (!strcmp(k, "--min"))
            a->min_size = atoll(v);
        else if (!strcmp(k, "--max"))
            a->max_size = atoll(v);
        else if (!strcmp(k, "--iters"))
            a->iters = atoi(v);
        else if (!strcmp(k, "--warmup"))
            a->warmup = atoi(v);
        else if (!strcmp(k, "--segsize"))
            a->segsize = atoll(v);
        else if (!strcmp(k, "--segsizes")) {
            char *end = (char *)v;
            a->nsegsizes = 0;
            while (*end && a->nsegsizes < 32) {
                long long x = strtoll(end, &end, 10);
                if (x <= 0 || (*end && *end != ','))
                    return -1;
                a->segsizes[a->nsegsizes++] = x;
                end += *end == ',';
            }
            if (a->nsegsizes == 0 || *end)
                return -1;
        }
        else if (!strcmp(k, "--form")) {
            if (!strcmp(v, "blocking"))
                a->form = 0;
            else if (!strcmp(v, "nonblocking"))
                a->form = 1;
            else if (!strcmp(v, "persistent"))
                a->form = 2;
            else
                return -1;
        }
        else if (!strcmp(k, "--radix"))
            a->radix = atoi(v);
        else if (!strcmp(k, "--rounds"))
            a->rounds = atoi(v);
        else if (!strcmp(k, "--root"))
            a->root = atoi(v);
        else if (!strcmp(k, "--json"))
            a->json = v;
        else if (!strcmp(k, "--binding"))
            a->binding = v;
        else
            return -1;
    }
    if ((int)a->coll < 0 || a->coll >= CT_NCOLL || a->min_size < 1 || a->max_size < a->min_size ||
        a->root < 0 || a->root >= nprocs || a->iters < 0 || a->warmup < 0 || a->rounds < 1 ||
        a->rounds > 1000 || (a->form && !a->serve)) /* the forms are the tuner's: --serve only */
        return -1;
    return 0;
}

/* Scatter, gather, allgather, alltoall and their v-variants: sizes are per-rank blocks
 * of MPI_BYTE (the v-variants with every count equal). */
static int is_movement(ct_coll c)
{
    return c == CT_SCATTER || c == CT_GATHER || c == CT_ALLGATHER || c == CT_ALLTOALL ||
           c == CT_ALLGATHERV || c == CT_ALLTOALLV || c == CT_GATHERV || c == CT_SCATTERV;
}

/* The reductions sum MPI_DOUBLE; the reduce-scatters' sizes are per-rank blocks. */
static int is_reduction(ct_coll c)
{
    return c == CT_REDUCE || c == CT_ALLREDUCE || c == CT_REDUCE_SCATTER_BLOCK ||
           c == CT_REDUCE_SCATTER || c == CT_SCAN || c == CT_EXSCAN;
}

/* Buffers of nprocs blocks somewhere. */
static int has_blocks(ct_coll c)
{
    return is_movement(c) || c == CT_REDUCE_SCATTER_BLOCK || c == CT_REDUCE_SCATTER;
}

/* The v-variants' arrays for even blocks of count elements. */
static int *even_counts, *even_displs, even_count = -1;

static void even_blocks(int count)
{
    if (count == even_count)
        return;
    if (!even_counts) {
        even_counts = malloc(sizeof(int) * (size_t)nprocs);
        even_displs = malloc(sizeof(int) * (size_t)nprocs);
    }
    for (int i = 0; i < nprocs; i++) {
        even_counts[i] = count;
        even_displs[i] = i * count;
    }
    even_count = count;
}

/* Iterations for a size: enough for a stable median, bounded in volume. */
static int iterations_for(const bench_args *a, long long size)
{
    if (a->iters)
        return a->iters;
    long long n = size > 0 ? (64LL << 20) / size : 1000;
    return (int)(n < 20 ? 20 : n > 1000 ? 1000 : n);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* How the tuner's server times a candidate (--form): the blocking call; the
 * non-blocking one from its start to its completion (ct_i<op> + ct_wait); the persistent
 * one from ct_start to its completion, the plan made (ct_<op>_init, or MPI's own
 * MPI_<Op>_init for native) before the timing and freed after. */
enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT };

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_MPI_INIT_FORMS 1
#define NATIVE_INIT(Name, ...) MPI_##Name##_init(__VA_ARGS__, MPI_INFO_NULL, req)
#else
#define HAVE_MPI_INIT_FORMS 0
#define NATIVE_INIT(Name, ...) MPI_ERR_OTHER /* no persistent collectives in this MPI */
#endif

/* One call of op in form (req: the non-blocking request, or the persistent one made).
 * Native is the library's own call, never colltune's API asked for "native": that path
 * checks and looks up before it hands over, and a program left native (the drop-in's
 * entry-point pass) does not pay it. Timed through the API, Open MPI's bcast of 8 B
 * measured 0.50-0.56 us here against 0.33 called directly, so the tuner picked `shm`
 * (0.35) where the benchmark of record then found the library faster (0.33 vs 0.48). */
#define CALL(lower, Name, ...)                                                              \
    (form == FORM_BLOCKING ? (native ? MPI_##Name(__VA_ARGS__) : ct_##lower(__VA_ARGS__, o))  \
     : form == FORM_NONBLOCKING                                                             \
         ? (native ? MPI_I##lower(__VA_ARGS__, req) : ct_i##lower(__VA_ARGS__, o, req))     \
     : native ? NATIVE_INIT(Name, __VA_ARGS__)                                              \
              : ct_##lower##_init(__VA_ARGS__, o, req))

static int call_form(const bench_args *a, const ct_options *o, int form, void *sbuf, void *rbuf,
                     int count, MPI_Datatype dt, MPI_Request *req)
{
    MPI_Comm w = MPI_COMM_WORLD;
    int native = !o->algorithm || !strcmp(o->algorithm, "native");
    (void)native;
    switch (a->coll) {
    case CT_BCAST:
        return CALL(bcast, Bcast, rbuf, count, dt, a->root, w);
    case CT_REDUCE:
        return CALL(reduce, Reduce, sbuf, rbuf, count, dt, MPI_SUM, a->root, w);
    case CT_ALLREDUCE:
        return CALL(allreduce, Allreduce, sbuf, rbuf, count, dt, MPI_SUM, w);
    case CT_SCATTER:
        return CALL(scatter, Scatter, sbuf, count, dt, rbuf, count, dt, a->root, w);
    case CT_GATHER:
        return CALL(gather, Gather, sbuf, count, dt, rbuf, count, dt, a->root, w);
    case CT_ALLGATHER:
        return CALL(allgather, Allgather, sbuf, count, dt, rbuf, count, dt, w);
    case CT_ALLTOALL:
        return CALL(alltoall, Alltoall, sbuf, count, dt, rbuf, count, dt, w);
    case CT_BARRIER:
        return CALL(barrier, Barrier, w);
    default:
        break;
    }
    even_blocks(count);
    const int *c = even_counts, *d = even_displs;
    switch (a->coll) {
    case CT_ALLGATHERV:
        return CALL(allgatherv, Allgatherv, sbuf, count, dt, rbuf, c, d, dt, w);
    case CT_ALLTOALLV:
        return CALL(alltoallv, Alltoallv, sbuf, c, d, dt, rbuf, c, d, dt, w);
    case CT_GATHERV:
        return CALL(gatherv, Gatherv, sbuf, count, dt, rbuf, c, d, dt, a->root, w);
    case CT_SCATTERV:
        return CALL(scatterv, Scatterv, sbuf, c, d, dt, rbuf, count, dt, a->root, w);
    case CT_REDUCE_SCATTER_BLOCK:
        return CALL(reduce_scatter_block, Reduce_scatter_block, sbuf, rbuf, count, dt, MPI_SUM,
                    w);
    case CT_REDUCE_SCATTER:
        return CALL(reduce_scatter, Reduce_scatter, sbuf, rbuf, c, dt, MPI_SUM, w);
    case CT_SCAN:
        return CALL(scan, Scan, sbuf, rbuf, count, dt, MPI_SUM, w);
    case CT_EXSCAN:
        return CALL(exscan, Exscan, sbuf, rbuf, count, dt, MPI_SUM, w);
    default:
        return MPI_ERR_ARG;
    }
}

static int run_once(const bench_args *a, const ct_options *o, void *sbuf, void *rbuf, int count,
                    MPI_Datatype dt)
{
    return call_form(a, o, FORM_BLOCKING, sbuf, rbuf, count, dt, NULL);
}

/* One timed call of the server's form: a blocking call, a non-blocking start and its
 * completion, or a start of the persistent request *plan and its completion. */
static int serve_once(const bench_args *a, const ct_options *o, void *sbuf, void *rbuf,
                      int count, MPI_Datatype dt, MPI_Request *plan)
{
    if (a->form == FORM_BLOCKING)
        return run_once(a, o, sbuf, rbuf, count, dt);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = a->form == FORM_NONBLOCKING
                 ? call_form(a, o, FORM_NONBLOCKING, sbuf, rbuf, count, dt, &req)
                 : ct_start(plan);
    if (rc != MPI_SUCCESS)
        return rc;
    return ct_wait(a->form == FORM_NONBLOCKING ? &req : plan, MPI_STATUS_IGNORE);
}

/* Before anything is timed: MPIs move a communicator's collectives to their fast
 * (shared-memory) paths only after a few calls (MPICH: MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD,
 * 5 by default) and open each peer's channel on its first message, so whatever was measured
 * first paid for it (a tuning run's first point, native allreduce of 8 B: 8 us instead of
 * 0.6 us at 2 ranks), and the tuner chose against native there. Some calls of the native
 * collective and of a colltune algorithm (point-to-point with every peer) take that cost. */
static void start_up(const bench_args *a, void *sbuf, void *rbuf, int count, MPI_Datatype dt)
{
    ct_options o;
    ct_options_init(&o);
    o.algorithm = "native";
    for (int i = 0; i < 32; i++)
        run_once(a, &o, sbuf, rbuf, count, dt);
    const char *direct[] = {"linear", "ring", "pairwise", "dissemination"};
    for (size_t k = 0; k < sizeof direct / sizeof *direct; k++)
        if (ct_algorithm_find(a->coll, direct[k])) {
            o.algorithm = direct[k];
            for (int i = 0; i < 4; i++)
                run_once(a, &o, sbuf, rbuf, count, dt);
            break;
        }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* bytes: the size of one vector (bcast, reductions) or one block (data movement). */
static void fill(const bench_args *a, char *sbuf, char *rbuf, size_t bytes, int count)
{
    if (a->coll == CT_BARRIER)
        return;
    if (a->coll == CT_BCAST) {
        for (size_t i = 0; i < bytes; i++)
            rbuf[i] = rank == a->root ? (char)(i * 7 + 3) : 0;
    } else if (is_movement(a->coll)) {
        /* Every block of every rank different: a block in the wrong place is seen. */
        size_t all = bytes * (size_t)nprocs;
        for (size_t i = 0; i < all; i++)
            sbuf[i] = (char)(rank * 31 + i * 7 + i / (bytes ? bytes : 1) * 13 + 5);
        memset(rbuf, 0, all);
    } else {
        /* Small integers: sums are exact whatever the order of reduction. */
        int all = has_blocks(a->coll) ? count * nprocs : count;
        for (int i = 0; i < all; i++)
            ((double *)sbuf)[i] = (double)((rank + 1) * (i % 17));
        memset(rbuf, 0, bytes);
    }
}

/* Bytes of the result this rank holds: what is compared with native. */
static size_t result_bytes(const bench_args *a, size_t bytes)
{
    int root = rank == a->root;
    switch (a->coll) {
    case CT_REDUCE:
        return root ? bytes : 0;
    case CT_GATHER:
    case CT_GATHERV:
        return root ? bytes * (size_t)nprocs : 0;
    case CT_ALLGATHER:
    case CT_ALLTOALL:
    case CT_ALLGATHERV:
    case CT_ALLTOALLV:
        return bytes * (size_t)nprocs;
    case CT_EXSCAN:
        return rank ? bytes : 0; /* rank 0's is undefined */
    case CT_BARRIER:
        return 0;
    default:
        return bytes;
    }
}

/* A barrier has no result to compare: it is right when no rank leaves it before the last
 * one has entered. Each rank in turn arrives late, having first written its mark into every
 * other rank's memory (one-sided, completed by a flush before it enters); every rank must
 * find the mark there as soon as it leaves. Holds across nodes, with no clock. */
static int check_barrier(const ct_options *o)
{
    int *flag, rc, ok = 1;
    MPI_Win win;
    if ((rc = MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &flag,
                               &win)) != MPI_SUCCESS)
        return 0;
    *flag = 0;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (int late = 0; late < nprocs && rc == MPI_SUCCESS; late++) {
        int mark = late + 1;
        MPI_Barrier(MPI_COMM_WORLD); /* native: everyone has read the previous mark */
        if (rank == late) {
            struct timespec nap = {0, 2000000}; /* 2 ms: the others are waiting by now */
            nanosleep(&nap, NULL);
            for (int r = 0; r < nprocs; r++)
                if (r != rank)
                    MPI_Put(&mark, 1, MPI_INT, r, 0, 1, MPI_INT, win);
            MPI_Win_flush_all(win);
        }
        rc = ct_barrier(MPI_COMM_WORLD, o);
        MPI_Win_sync(win);
        if (rank != late && *flag != mark)
            ok = 0;
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    return ok && rc == MPI_SUCCESS;
}

/* One call of the algorithm against one native call on the same input. */
static int check_result(const bench_args *a, const ct_options *o, char *sbuf, char *rbuf,
                        char *ref, size_t bytes, int count, MPI_Datatype dt)
{
    int ok, all;
    if (a->coll == CT_BARRIER) {
        ok = check_barrier(o);
    } else {
        ct_options native;
        ct_options_init(&native);
        native.algorithm = "native";
        fill(a, sbuf, ref, bytes, count);
        int rc = run_once(a, &native, sbuf, ref, count, dt);
        fill(a, sbuf, rbuf, bytes, count);
        rc |= run_once(a, o, sbuf, rbuf, count, dt);
        ok = rc == MPI_SUCCESS && memcmp(ref, rbuf, result_bytes(a, bytes)) == 0;
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

/* One candidate of a comparison: an algorithm with its options (segment size). */
typedef struct variant {
    ct_options o;
    const ct_algorithm_info *info;
    long long seg_used;
} variant;

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A permutation of 0..n-1 (Fisher-Yates on a 32-bit xorshift): deterministic in the seed,
 * so every rank draws the same order without a message. */
static void shuffle(int *order, int n, unsigned seed)
{
    unsigned x = seed ? seed : 1;
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int j = (int)(x % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The one-minute load average from /proc/loadavg (-1 where there is none): read, not
 * getloadavg(), which C11 does not declare. */
static double load_average(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bench_args a;
    if (parse(argc, argv, &a)) {
        usage();
        MPI_Finalize();
        return 2;
    }

    /* The algorithms to run, validated before any timing. */
    const char *names[64];
    int nalgs = 0;
    static char algbuf[1024];
    if (!strcmp(a.algs, "all")) {
        for (int i = 0; i < ct_algorithm_count() && nalgs < 64; i++)
            if (ct_algorithm_get(i)->coll == a.coll)
                names[nalgs++] = ct_algorithm_get(i)->name;
    } else {
        snprintf(algbuf, sizeof algbuf, "%s", a.algs);
        for (char *t = strtok(algbuf, ","); t && nalgs < 64; t = strtok(NULL, ",")) {
            if (!ct_algorithm_find(a.coll, t)) {
                if (rank == 0)
                    fprintf(stderr, "ct_bench: unknown %s algorithm '%s'\n",
                            ct_coll_name(a.coll), t);
                MPI_Finalize();
                return 2;
            }
            names[nalgs++] = t;
        }
    }

    /* Sizes: powers of two from min to max; the barrier has none (one row, size 0). */
    int barrier = a.coll == CT_BARRIER;
    long long first_size = barrier ? 0 : a.min_size, last_size = barrier ? 0 : a.max_size;
    MPI_Datatype dt = is_reduction(a.coll) ? MPI_DOUBLE : MPI_BYTE;
    const char *dtname = barrier ? NULL : is_reduction(a.coll) ? "MPI_DOUBLE" : "MPI_BYTE";
    int esize = is_reduction(a.coll) ? (int)sizeof(double) : 1;
    /* Data movement: buffers of nprocs blocks. */
    size_t maxbytes =
        ((size_t)last_size + (size_t)esize) * (size_t)(has_blocks(a.coll) ? nprocs : 1);
    char *sbuf = malloc(maxbytes), *rbuf = malloc(maxbytes), *ref = malloc(maxbytes);
    int maxiters = iterations_for(&a, first_size);
    double *times = malloc(sizeof(double) * (size_t)maxiters);
    double *slowest = malloc(sizeof(double) * (size_t)maxiters);
    double *sorted = malloc(sizeof(double) * (size_t)(maxiters + a.rounds));
    if (!sbuf || !rbuf || !ref || !times || !slowest || !sorted) {
        fprintf(stderr, "ct_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, maxbytes);
    memset(rbuf, 0, maxbytes);
    start_up(&a, sbuf, rbuf, (int)(first_size > 0 ? (first_size + esize - 1) / esize : 0), dt);

    if (a.serve) {
        /* The tuner's measurement server: one job, many candidates, each chosen after the
         * previous result (MGD, SMGD), so mpiexec's start-up is paid once. */
        for (;;) {
            char line[256] = "quit";
            if (rank == 0 && !fgets(line, sizeof line, stdin))
                snprintf(line, sizeof line, "quit");
            /* Waiting for the next request must not spin: another job (the pipeline
             * strategy's proxy) may be measuring on these cores meanwhile. */
            MPI_Request bc;
            MPI_Ibcast(line, (int)sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD, &bc);
            for (int flag = 0;;) {
                MPI_Test(&bc, &flag, MPI_STATUS_IGNORE);
                if (flag)
                    break;
                nanosleep(&(struct timespec){0, 50000}, NULL);
            }
            if (!strncmp(line, "quit", 4))
                break;
            char alg[64];
            long long seg = 0, size = 0;
            int iters = 0;
            const ct_algorithm_info *info = NULL;
            if (sscanf(line, "%63s %lld %lld %d", alg, &seg, &size, &iters) != 4 ||
                !(info = ct_algorithm_find(a.coll, alg)) || size < first_size ||
                size > last_size || seg < 0) {
                if (rank == 0) {
                    printf("{\"error\":\"bad request (algorithm, segsize >= 0, size within "
                           "--min..--max, iterations)\"}\n");
                    fflush(stdout);
                }
                continue;
            }
            ct_options o;
            ct_options_init(&o);
            o.algorithm = info->name;
            o.radix = a.radix;
            if (seg > 0 && (info->flags & CT_ALG_SEGMENTABLE)) {
                o.has_segsize = 1;
                o.segsize = seg;
            }
            int count = (int)((size + esize - 1) / esize);
            size_t bytes = (size_t)count * (size_t)esize;
            if (iters <= 0)
                iters = iterations_for(&a, size);
            if (iters > maxiters)
                iters = maxiters;
            fill(&a, sbuf, rbuf, bytes, count);
            int rc = MPI_SUCCESS;
            /* The persistent form's plan is made (and freed) outside the timing. */
            MPI_Request plan = MPI_REQUEST_NULL;
            if (a.form == FORM_PERSISTENT)
                rc = call_form(&a, &o, FORM_PERSISTENT, sbuf, rbuf, count, dt, &plan);
            for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++)
                rc |= serve_once(&a, &o, sbuf, rbuf, count, dt, &plan);
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < iters; i++) {
                double t0 = MPI_Wtime();
                if (rc == MPI_SUCCESS) /* a refused plan: every rank says so, none hangs */
                    rc |= serve_once(&a, &o, sbuf, rbuf, count, dt, &plan);
                times[i] = (MPI_Wtime() - t0) * 1e6;
                MPI_Barrier(MPI_COMM_WORLD);
            }
            if (plan != MPI_REQUEST_NULL)
                ct_request_free(&plan);
            int all_ok = rc == MPI_SUCCESS;
            MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
            rc = all_ok ? MPI_SUCCESS : MPI_ERR_OTHER;
            MPI_Reduce(times, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                memcpy(sorted, slowest, sizeof(double) * (size_t)iters);
                qsort(sorted, (size_t)iters, sizeof(double), cmp_double);
                double median = iters % 2 ? sorted[iters / 2]
                                          : 0.5 * (sorted[iters / 2 - 1] + sorted[iters / 2]);
                printf("{\"algorithm\":\"%s\",\"segsize\":%lld,\"size\":%lld,"
                       "\"median_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,"
                       "\"iterations\":%d,\"ok\":%s}\n",
                       info->name, o.has_segsize ? o.segsize : 0, size, median, sorted[0],
                       sorted[iters - 1], iters, rc == MPI_SUCCESS ? "true" : "false");
                fflush(stdout);
            }
        }
        free(sbuf);
        free(rbuf);
        free(ref);
        free(times);
        free(slowest);
        free(sorted);
        MPI_Finalize();
        return 0;
    }

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen;
    MPI_Get_library_version(lib, &liblen);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = 0;

    /* Where every rank actually runs, so the recorded binding is a fact. */
    cpu_set_t set;
    int mycpu = -1, ncpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        ncpus = CPU_COUNT(&set);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) {
                mycpu = ncpus == 1 ? c : -1;
                break;
            }
    }
    int *cpus = rank == 0 ? malloc(sizeof(int) * (size_t)nprocs) : NULL;
    MPI_Gather(&mycpu, 1, MPI_INT, cpus, 1, MPI_INT, 0, MPI_COMM_WORLD);
    /* Each rank's process id: a launcher that reports a dead process by pid names its rank. */
    int mypid = (int)getpid();
    int *pids = rank == 0 ? malloc(sizeof(int) * (size_t)nprocs) : NULL;
    MPI_Gather(&mypid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);

    FILE *jf = NULL;
    if (rank == 0 && a.json) {
        jf = fopen(a.json, "w");
        if (!jf) {
            perror(a.json);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fprintf(jf, "{\"schema\":\"colltune-bench/1\",\"op\":\"%s\",\"ranks\":%d,\"datatype\":",
                ct_coll_name(a.coll), nprocs);
        if (dtname)
            json_string(jf, dtname);
        else
            fputs("null", jf);
        fprintf(jf, ",\"mpi\":{\"library\":");
        json_string(jf, lib);
        fprintf(jf, "},\"binding\":");
        json_string(jf, a.binding);
        fprintf(jf, ",\"rank_cpus\":[");
        for (int r = 0; r < nprocs; r++)
            fprintf(jf, "%s%d", r ? "," : "", cpus[r]);
        fprintf(jf, "],\"rank_pids\":[");
        for (int r = 0; r < nprocs; r++)
            fprintf(jf, "%s%d", r ? "," : "", pids[r]);
        fprintf(jf, "],\"iterations\":%d,\"warmup\":%d,\"root\":%d,\"segsize\":%lld,\"radix\":%d,"
                "\"rounds\":%d}\n",
                a.iters, a.warmup, a.root, a.segsize, a.radix, a.rounds);
        fflush(jf);
    }

    int nsizes = 0;
    for (long long s = first_size; s <= last_size; s = s ? s * 2 : 1)
        nsizes++;
    int step = 0, failed = 0;
    if (a.nsegsizes == 0) {
        a.segsizes[0] = a.segsize;
        a.nsegsizes = 1;
    }
    /* The candidates: each algorithm, and each segmentable one once per --segsizes entry. */
    variant *vars = malloc(sizeof(variant) * (size_t)nalgs * (size_t)a.nsegsizes);
    int nvariants = 0;
    for (int ai = 0; ai < nalgs; ai++) {
        const ct_algorithm_info *info = ct_algorithm_find(a.coll, names[ai]);
        int segmentable = (info->flags & CT_ALG_SEGMENTABLE) != 0;
        for (int si = 0; si < (segmentable ? a.nsegsizes : 1); si++) {
            variant *v = &vars[nvariants++];
            ct_options_init(&v->o);
            v->o.algorithm = names[ai];
            v->info = info;
            if (a.segsizes[si] > 0 && segmentable) {
                v->o.has_segsize = 1;
                v->o.segsize = a.segsizes[si];
            }
            v->o.radix = a.radix;
            v->seg_used = v->o.has_segsize ? v->o.segsize : info->default_segsize;
        }
    }
    /* Every candidate's samples of one size, kept until the size's last round. */
    int stride = maxiters;
    double *all = malloc(sizeof(double) * (size_t)stride * (size_t)nvariants);
    double *round_median = malloc(sizeof(double) * (size_t)a.rounds * (size_t)nvariants);
    double *sums = malloc(sizeof(double) * (size_t)nvariants);
    double *loads = malloc(sizeof(double) * (size_t)a.rounds);
    int *order = malloc(sizeof(int) * (size_t)nvariants);
    const char **checks = malloc(sizeof(char *) * (size_t)nvariants);
    if (!vars || !all || !round_median || !sums || !loads || !order || !checks) {
        fprintf(stderr, "ct_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("# %s, %d ranks, %d candidates in %d interleaved round%s per size\n",
               ct_coll_name(a.coll), nprocs, nvariants, a.rounds, a.rounds == 1 ? "" : "s");
    if (rank == 0)
        printf("%-12s%-24s%16s%16s%16s%14s%12s\n", "# Size", "Algorithm/segment(B)",
               "Avg Lat.(us)", "Min Lat.(us)", "Max Lat.(us)", "Median(us)", "Iterations");
    int sizeindex = 0;
    for (long long size = first_size; size <= last_size; size = size ? size * 2 : 1, sizeindex++) {
        int count = (int)((size + esize - 1) / esize);
        size_t bytes = (size_t)count * (size_t)esize;
        int iters = iterations_for(&a, size);
        /* The same iterations as one sequential pass, spread over the rounds (the first
         * iters % rounds rounds take one more); never more rounds than iterations. */
        int nrounds = a.rounds < iters ? a.rounds : iters;
        int warmup = a.warmup ? a.warmup : (iters / 10 < 2 ? 2 : iters / 10);
        int warm_round = (warmup + nrounds - 1) / nrounds;
        int done = 0;
        for (int v = 0; v < nvariants; v++) {
            checks[v] = "not checked";
            sums[v] = 0;
            if (a.check && !(vars[v].info->flags & CT_ALG_NATIVE)) {
                if (check_result(&a, &vars[v].o, sbuf, rbuf, ref, bytes, count, dt)) {
                    checks[v] = "ok";
                } else {
                    checks[v] = "FAILED";
                    failed = 1;
                }
            }
        }
        for (int r = 0; r < nrounds; r++) {
            int per_round = iters / nrounds + (r < iters % nrounds);
            /* A fresh order each round, the same on every rank (a seeded generator, no
             * communication): a load change during the size falls on every candidate
             * instead of deciding between two measured one after the other. */
            shuffle(order, nvariants, (unsigned)(sizeindex * 7919 + r * 104729 + 1));
            if (a.rounds == 1) /* one pass: the listed order, which callers may rely on
                                * (validate-model's mirrored confirmation order) */
                for (int k = 0; k < nvariants; k++)
                    order[k] = k;
            for (int k = 0; k < nvariants; k++) {
                int v = order[k];
                const ct_options *o = &vars[v].o;
                fill(&a, sbuf, rbuf, bytes, count);
                int rc = MPI_SUCCESS;
                for (int i = 0; i < warm_round; i++)
                    rc |= run_once(&a, o, sbuf, rbuf, count, dt);
                MPI_Barrier(MPI_COMM_WORLD);
                for (int i = 0; i < per_round; i++) {
                    double t0 = MPI_Wtime();
                    rc |= run_once(&a, o, sbuf, rbuf, count, dt);
                    times[i] = (MPI_Wtime() - t0) * 1e6;
                    sums[v] += times[i];
                    MPI_Barrier(MPI_COMM_WORLD);
                }
                if (rc != MPI_SUCCESS) {
                    char msg[MPI_MAX_ERROR_STRING];
                    int len;
                    MPI_Error_string(rc, msg, &len);
                    fprintf(stderr, "ct_bench: rank %d: %s/%s failed: %s\n", rank,
                            ct_coll_name(a.coll), o->algorithm, msg);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                double *mine = all + (size_t)v * (size_t)stride + (size_t)done;
                MPI_Reduce(times, mine, per_round, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    memcpy(sorted, mine, sizeof(double) * (size_t)per_round);
                    round_median[(size_t)v * (size_t)a.rounds + (size_t)r] =
                        median_of(sorted, per_round);
                }
            }
            done += per_round;
            loads[r] = rank == 0 ? load_average() : -1;
        }
        int total = iters;
        for (int v = 0; v < nvariants; v++) {
            double mean = sums[v] / total, avg, lo, hi;
            MPI_Reduce(&mean, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Reduce(&mean, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
            MPI_Reduce(&mean, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank != 0)
                continue;
            const variant *va = &vars[v];
            const double *slow = all + (size_t)v * (size_t)stride;
            avg /= nprocs;
            memcpy(sorted, slow, sizeof(double) * (size_t)total);
            double median = median_of(sorted, total);
            char label[96];
            snprintf(label, sizeof label, "%s/%lld", va->o.algorithm, va->seg_used);
            printf("%-12lld%-24s%16.2f%16.2f%16.2f%14.2f%12d%s\n", size, label, avg, lo, hi,
                   median, total,
                   strcmp(checks[v], "FAILED") ? ""
                   : barrier                    ? "  CHECK FAILED: A RANK LEFT THE BARRIER EARLY"
                                                : "  RESULT DIFFERS FROM NATIVE");
            if (jf) {
                fprintf(jf,
                        "{\"algorithm\":\"%s\",\"segsize\":%lld,\"size\":%lld,\"count\":%d,"
                        "\"avg_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"median_us\":%.3f,"
                        "\"iterations\":%d,\"check\":\"%s\",\"rounds\":%d,\"round_medians_us\":[",
                        va->o.algorithm, va->seg_used, size, count, avg, lo, hi, median, total,
                        checks[v], nrounds);
                for (int r = 0; r < nrounds; r++)
                    fprintf(jf, "%s%.3f", r ? "," : "",
                            round_median[(size_t)v * (size_t)a.rounds + (size_t)r]);
                /* The one-minute load after each round: what the machine did meanwhile. */
                fprintf(jf, "],\"load_rounds\":[");
                for (int r = 0, n = 0; r < nrounds; r++)
                    if (loads[r] >= 0)
                        fprintf(jf, "%s%.2f", n++ ? "," : "", loads[r]);
                fprintf(jf, "],\"samples_us\":[");
                for (int i = 0; i < total; i++)
                    fprintf(jf, "%s%.3f", i ? "," : "", slow[i]);
                fprintf(jf, "]}\n");
                fflush(jf);
            }
        }
        step += nvariants;
        /* After the size's results are in the file: whoever reads "progress" finds them. */
        if (rank == 0 && a.progress)
            fprintf(stderr, "progress %d %d\n", step, nvariants * nsizes);
        fflush(stdout);
    }
    free(vars);
    free(all);
    free(round_median);
    free(sums);
    free(loads);
    free(order);
    free(checks);
    if (jf)
        fclose(jf);
    free(cpus);
    free(pids);
    free(sbuf);
    free(rbuf);
    free(ref);
    free(times);
    free(slowest);
    free(sorted);
    MPI_Finalize();
    return failed ? 3 : 0;
}
