/*
 * ct_overlap: how much of a non-blocking collective hides behind computation,
 * measured as osu_ibcast does (Denis et al.'s study, Euro-Par 2018), and the
 * measurement `colltune tune-nbc` tunes the non-blocking collectives with.
 *
 * Per variant, medians over iterations of the slowest rank's time:
 *   pure     start the collective, wait for it at once;
 *   total    start it, compute for --compute-us (a busy loop, no MPI call), wait;
 *   overlap  100 * (1 - (total - compute) / pure), clipped to [0, 100].
 * Variants: "blocking" (MPI_Bcast, MPI_Reduce, ...: the reference the
 * computation is sized from), "native" (MPI_Ibcast, MPI_Ireduce, ...), and
 * "S0".."S63" or "Sauto" (colltune's --alg with --segsize and that split).
 * --progress thread (default) starts colltune's progress thread; none runs
 * colltune's collectives inside the waits only. One JSON line per variant on
 * stdout (rank 0). --bytes is the message (bcast), the vector (reduce,
 * allreduce; doubles) or one rank's block (scatter, gather).
 *
 *   ct_overlap --op bcast|reduce|allreduce|scatter|gather --bytes B
 *              [--compute-us C] [--iters N] [--alg binomial] [--segsize B]
 *              [--progress thread|none] [--variants native,S0,S1,Sauto]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colltune.h"

static int rank, nprocs;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

/* Computation that calls no MPI: the progress thread (or nobody) moves the data. */
static volatile double sink;
static void compute(double us)
{
    double end = now_us() + us, x = 1.0;
    while (now_us() < end)
        for (int i = 0; i < 200; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of_slowest(double *t, int n)
{
    double *slow = malloc(sizeof(double) * (size_t)n);
    MPI_Allreduce(t, slow, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(slow, (size_t)n, sizeof(double), cmp);
    double m = n % 2 ? slow[n / 2] : 0.5 * (slow[n / 2 - 1] + slow[n / 2]);
    free(slow);
    return m;
}

typedef enum { OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_SCATTER, OP_GATHER, OP_COUNT } op_kind;
static const char *const op_names[OP_COUNT] = {"bcast", "reduce", "allreduce", "scatter",
                                               "gather"};

typedef struct run {
    op_kind op;
    const char *variant;
    ct_options o;
    char *buf, *out;
    int count; /* bytes (bcast, scatter, gather: one rank's block) or doubles */
} run;

static void start(run *r, int native, MPI_Request *req)
{
    MPI_Comm w = MPI_COMM_WORLD;
    const ct_options *o = &r->o;
    switch (r->op) {
    case OP_BCAST:
        native ? MPI_Ibcast(r->buf, r->count, MPI_BYTE, 0, w, req)
               : ct_ibcast(r->buf, r->count, MPI_BYTE, 0, w, o, req);
        break;
    case OP_REDUCE:
        native ? MPI_Ireduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, 0, w, req)
               : ct_ireduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, 0, w, o, req);
        break;
    case OP_ALLREDUCE:
        native ? MPI_Iallreduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, w, req)
               : ct_iallreduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, w, o, req);
        break;
    case OP_SCATTER:
        native ? MPI_Iscatter(r->buf, r->count, MPI_BYTE, r->out, r->count, MPI_BYTE, 0, w, req)
               : ct_iscatter(r->buf, r->count, MPI_BYTE, r->out, r->count, MPI_BYTE, 0, w, o,
                             req);
        break;
    default:
        native ? MPI_Igather(r->out, r->count, MPI_BYTE, r->buf, r->count, MPI_BYTE, 0, w, req)
               : ct_igather(r->out, r->count, MPI_BYTE, r->buf, r->count, MPI_BYTE, 0, w, o,
                            req);
    }
}

static void blocking(run *r)
{
    MPI_Comm w = MPI_COMM_WORLD;
    switch (r->op) {
    case OP_BCAST:
        MPI_Bcast(r->buf, r->count, MPI_BYTE, 0, w);
        break;
    case OP_REDUCE:
        MPI_Reduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, 0, w);
        break;
    case OP_ALLREDUCE:
        MPI_Allreduce(r->buf, r->out, r->count, MPI_DOUBLE, MPI_SUM, w);
        break;
    case OP_SCATTER:
        MPI_Scatter(r->buf, r->count, MPI_BYTE, r->out, r->count, MPI_BYTE, 0, w);
        break;
    default:
        MPI_Gather(r->out, r->count, MPI_BYTE, r->buf, r->count, MPI_BYTE, 0, w);
    }
}

static void one(run *r, double compute_us)
{
    if (!strcmp(r->variant, "blocking")) {
        blocking(r);
        compute(compute_us);
        return;
    }
    MPI_Request req;
    start(r, !strcmp(r->variant, "native"), &req);
    compute(compute_us);
    ct_wait(&req, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *op = "bcast", *alg = "binomial", *variants = "blocking,native,S0,Sauto";
    const char *progress = "thread";
    long long bytes = 2 << 20, segsize = 0;
    double compute_us = 0;
    int iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--op"))
            op = argv[i + 1];
        else if (!strcmp(argv[i], "--bytes"))
            bytes = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--compute-us"))
            compute_us = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--alg"))
            alg = argv[i + 1];
        else if (!strcmp(argv[i], "--segsize"))
            segsize = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--progress"))
            progress = argv[i + 1];
        else if (!strcmp(argv[i], "--variants"))
            variants = argv[i + 1];
        else {
            if (rank == 0)
                fprintf(stderr, "ct_overlap: unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int kind = 0;
    while (kind < OP_COUNT && strcmp(op, op_names[kind]))
        kind++;
    int want_thread = !strcmp(progress, "thread");
    if (kind == OP_COUNT || bytes < 8 || iters < 1 || compute_us < 0 || segsize < 0 ||
        (!want_thread && strcmp(progress, "none"))) {
        if (rank == 0)
            fprintf(stderr, "ct_overlap: --op bcast|reduce|allreduce|scatter|gather, --bytes "
                            ">= 8, --iters >= 1, --segsize >= 0, --progress thread|none\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int threaded = want_thread && provided >= MPI_THREAD_MULTIPLE &&
                   ct_progress_start(MPI_COMM_WORLD) == 0;
    ct_progress_info info;
    ct_progress_query(&info);
    int doubles = kind == OP_REDUCE || kind == OP_ALLREDUCE;
    run r = {.op = (op_kind)kind, .count = (int)(doubles ? bytes / 8 : bytes)};
    /* the root's side of scatter and gather holds every rank's block */
    size_t whole = (size_t)bytes * (kind == OP_SCATTER || kind == OP_GATHER ? nprocs : 1);
    r.buf = calloc(whole, 1);
    r.out = calloc((size_t)bytes, 1);
    double *pure = malloc(sizeof(double) * (size_t)iters);
    double *total = malloc(sizeof(double) * (size_t)iters);
    char list[1024];
    snprintf(list, sizeof list, "%s", variants);
    for (char *save = NULL, *v = strtok_r(list, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        r.variant = v;
        ct_options_init(&r.o);
        r.o.algorithm = alg;
        r.o.has_segsize = segsize > 0;
        r.o.segsize = segsize;
        if (v[0] == 'S')
            r.o.split = !strcmp(v, "Sauto") ? CT_SPLIT_AUTO : atoi(v + 1);
        else if (strcmp(v, "native") && strcmp(v, "blocking")) {
            if (rank == 0)
                fprintf(stderr, "ct_overlap: unknown variant %s\n", v);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        one(&r, 0); /* warm-up: schedules, buffers, the thread's first wake-up */
        for (int k = 0; k < iters; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_us();
            one(&r, 0);
            pure[k] = now_us() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now_us();
            one(&r, compute_us);
            total[k] = now_us() - t0;
        }
        double p = median_of_slowest(pure, iters), t = median_of_slowest(total, iters);
        double ov = p > 0 ? 100.0 * (1.0 - (t - compute_us) / p) : 0;
        ov = ov < 0 ? 0 : ov > 100 ? 100 : ov;
        if (rank == 0) {
            printf("{\"op\":\"%s\",\"variant\":\"%s\",\"algorithm\":\"%s\",\"segsize\":%lld,"
                   "\"ranks\":%d,\"bytes\":%lld,\"compute_us\":%.3f,\"pure_us\":%.3f,"
                   "\"total_us\":%.3f,\"overlap_pct\":%.2f,\"iterations\":%d,"
                   "\"progress_thread\":%s,\"progress_core\":%d,\"comm_cores\":%d}\n",
                   op, v, v[0] == 'S' ? alg : "native", v[0] == 'S' ? segsize : 0, nprocs,
                   bytes, compute_us, p, t, ov, iters, threaded ? "true" : "false", info.core,
                   info.comm_cores);
            fflush(stdout);
        }
    }
    free(r.buf);
    free(r.out);
    free(pure);
    free(total);
    MPI_Finalize();
    return 0;
}
