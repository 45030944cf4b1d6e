/* ct_cholesky: a tiled Cholesky factorisation (A = L L^T, lower) on a 2D block-cyclic
 * distribution, over colltune's sequential-task-flow runtime (src/stf), with the tile
 * transfers as plain MPI sends or as dynamic broadcasts (src/dyn). Launched by
 * `colltune cholesky` (python/colltune/dyn/cholesky.py); one JSON line per run on stdout.
 *
 *   ct_cholesky --n N --nb NB [--grid PxQ] [--comm mpi|dyn|dyn-plain] [--precision d|s]
 *               [--workers W] [--iters I] [--no-check]
 *   ct_cholesky --cases N:NB:PxQ:PREC:COMM[,...] [--workers W]    (tests: many cases, one job)
 *   --assert: exit 1 when a residual is not below 1e-12 (double) or 1e-4 (single)
 *
 * The matrix is generated per element from its global indices (symmetric, diagonally
 * dominant, hence positive definite), so every distribution factorises the same matrix. The
 * check computes R = A - L L^T with the same runtime (tile GEMMs, L's tiles fetched as the
 * factorisation fetched them) and reports ||R||_F / ||A||_F. NB need not divide N: the last
 * row and column of tiles are smaller.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stf/stf.h"
#ifdef CT_HAVE_DYN
#include "dyn/dyn.h"
#endif

/* OpenBLAS's own threads would fight the workers: one thread per call. */
extern void openblas_set_num_threads(int) __attribute__((weak));

typedef struct cfg {
    int n, nb, p, q;
    char prec;       /* 'd' or 's' */
    ct_stf_comm how;
} cfg;

typedef struct kargs {
    int m, n, k; /* tile dimensions for the kernel */
    char prec;
} kargs;

static int g_not_spd; /* a POTRF failed: the matrix is not positive definite */

static const char *comm_name(ct_stf_comm h)
{
    return h == CT_STF_COMM_MPI ? "mpi" : h == CT_STF_COMM_DYN ? "dyn" : "dyn-plain";
}

static int parse_comm(const char *s, ct_stf_comm *h)
{
    if (!strcmp(s, "mpi") || !strcmp(s, "off"))
        *h = CT_STF_COMM_MPI;
    else if (!strcmp(s, "dyn") || !strcmp(s, "on"))
        *h = CT_STF_COMM_DYN;
    else if (!strcmp(s, "dyn-plain"))
        *h = CT_STF_COMM_DYN_PLAIN;
    else
        return -1;
    return 0;
}

/* ---- the matrix ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A(i, j): symmetric, entries in [-0.5, 0.5), n on the diagonal. */
static double a_elem(int n, int i, int j)
{
    uint64_t lo = (uint64_t)(i < j ? i : j), hi = (uint64_t)(i < j ? j : i);
    double u = (double)(mix(lo * 2654435761ull + hi * 40503ull + (uint64_t)n) >> 11) * 0x1p-53;
    return u - 0.5 + (i == j ? n : 0.0);
}

static int tdim(const cfg *c, int t)
{
    int r = c->n - t * c->nb;
    return r < c->nb ? r : c->nb;
}

static int owner(const cfg *c, int i, int j)
{
    return (i % c->p) * c->q + j % c->q;
}

static size_t esize(char prec)
{
    return prec == 'd' ? sizeof(double) : sizeof(float);
}

/* Tile (i, j) of A, column-major with leading dimension tdim(i). */
static void *gen_tile(const cfg *c, int i, int j)
{
    int mi = tdim(c, i), mj = tdim(c, j);
    void *t = malloc((size_t)mi * (size_t)mj * esize(c->prec));
    if (!t)
        abort();
    for (int b = 0; b < mj; b++)
        for (int a = 0; a < mi; a++) {
            double v = a_elem(c->n, i * c->nb + a, j * c->nb + b);
            if (c->prec == 'd')
                ((double *)t)[(size_t)b * mi + a] = v;
            else
                ((float *)t)[(size_t)b * mi + a] = (float)v;
        }
    return t;
}

/* ---- kernels: buffers in access order ---- */

static void k_potrf(void **b, void *arg)
{
    kargs *a = arg;
    int info = a->prec == 'd' ? LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', a->m, b[0], a->m)
                              : LAPACKE_spotrf(LAPACK_COL_MAJOR, 'L', a->m, b[0], a->m);
    if (info != 0)
        __atomic_store_n(&g_not_spd, 1, __ATOMIC_RELAXED);
}

/* Zeroes the strict upper triangle of an m x m tile. */
static void k_lower(void **b, void *arg)
{
    kargs *a = arg;
    for (int j = 1; j < a->m; j++)
        for (int i = 0; i < j; i++) {
            if (a->prec == 'd')
                ((double *)b[0])[(size_t)j * a->m + i] = 0;
            else
                ((float *)b[0])[(size_t)j * a->m + i] = 0;
        }
}

/* A_mk <- A_mk L_kk^-T; b = {L_kk, A_mk}; m rows of A_mk, k = order of L_kk */
static void k_trsm(void **b, void *arg)
{
    kargs *a = arg;
    if (a->prec == 'd')
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, a->m, a->k,
                    1.0, b[0], a->k, b[1], a->m);
    else
        cblas_strsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, a->m, a->k,
                    1.0f, b[0], a->k, b[1], a->m);
}

/* A_nn <- A_nn - A_nk A_nk^T (lower); b = {A_nk, A_nn}; n = order, k = inner */
static void k_syrk(void **b, void *arg)
{
    kargs *a = arg;
    if (a->prec == 'd')
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, a->n, a->k, -1.0, b[0], a->n, 1.0,
                    b[1], a->n);
    else
        cblas_ssyrk(CblasColMajor, CblasLower, CblasNoTrans, a->n, a->k, -1.0f, b[0], a->n,
                    1.0f, b[1], a->n);
}

/* C <- C - A B^T; b = {A (m x k), B (n x k), C (m x n)} */
static void k_gemm(void **b, void *arg)
{
    kargs *a = arg;
    if (a->prec == 'd')
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, a->m, a->n, a->k, -1.0, b[0], a->m,
                    b[1], a->n, 1.0, b[2], a->m);
    else
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, a->m, a->n, a->k, -1.0f, b[0],
                    a->m, b[1], a->n, 1.0f, b[2], a->m);
}

/* ---- one run ---- */

typedef struct run_out {
    double seconds, residual;
    long tasks, sends, recvs, bytes;
    long dyn_messages, dyn_forwarded, dyn_broadcasts, dyn_plain;
    int have_dyn_stats;
} run_out;

static int submit(ct_stf *s, int rank, int prio, ct_stf_fn fn, kargs a, int n,
                  ct_stf_data *d0, ct_stf_data *d1, ct_stf_data *d2)
{
    ct_stf_data *d[3] = {d0, d1, d2};
    ct_stf_mode m[3] = {CT_STF_R, CT_STF_R, CT_STF_R};
    m[n - 1] = CT_STF_RW;
    return ct_stf_submit(s, rank, prio, fn, &a, sizeof a, n, d, m);
}

static double sumsq(const void *t, int rows, int cols, char prec)
{
    double s = 0;
    for (size_t e = 0; e < (size_t)rows * (size_t)cols; e++) {
        double v = prec == 'd' ? ((const double *)t)[e] : ((const float *)t)[e];
        s += v * v;
    }
    return s;
}

/* Factorises (and checks when check) the matrix of c; results on every rank. */
static int run(const cfg *c, int workers, int check, run_out *out)
{
    int rank, size, rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(out, 0, sizeof *out);
    out->residual = NAN;
    int nt = (c->n + c->nb - 1) / c->nb;
    MPI_Datatype type = c->prec == 'd' ? MPI_DOUBLE : MPI_FLOAT;
    ct_stf *s;
    if ((rc = ct_stf_create(MPI_COMM_WORLD, workers, c->how, &s)) != MPI_SUCCESS)
        return rc;
    void **tile = calloc((size_t)nt * nt, sizeof *tile);
    ct_stf_data **h = calloc((size_t)nt * nt, sizeof *h);
#define T(i, j) ((size_t)(i) * nt + (j))
    for (int j = 0; j < nt; j++)
        for (int i = j; i < nt; i++) {
            int o = owner(c, i, j);
            if (o == rank)
                tile[T(i, j)] = gen_tile(c, i, j);
            h[T(i, j)] = ct_stf_register(s, tile[T(i, j)], tdim(c, i) * tdim(c, j), type, o);
        }
    __atomic_store_n(&g_not_spd, 0, __ATOMIC_RELAXED);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    /* Right-looking tiled Cholesky; priorities favour the critical path (panel first). */
    for (int k = 0; k < nt && rc == MPI_SUCCESS; k++) {
        int mk = tdim(c, k);
        rc = submit(s, owner(c, k, k), 2 * nt - 2 * k + 2 * nt, k_potrf,
                    (kargs){mk, mk, mk, c->prec}, 1, h[T(k, k)], NULL, NULL);
        for (int m = k + 1; m < nt && rc == MPI_SUCCESS; m++)
            rc = submit(s, owner(c, m, k), 2 * nt - 2 * k - m + 2 * nt, k_trsm,
                        (kargs){tdim(c, m), mk, mk, c->prec}, 2, h[T(k, k)], h[T(m, k)], NULL);
        for (int n = k + 1; n < nt && rc == MPI_SUCCESS; n++) {
            rc = submit(s, owner(c, n, n), 2 * nt - 2 * k - 2 * n + 2 * nt, k_syrk,
                        (kargs){tdim(c, n), tdim(c, n), mk, c->prec}, 2, h[T(n, k)],
                        h[T(n, n)], NULL);
            for (int m = n + 1; m < nt && rc == MPI_SUCCESS; m++)
                rc = submit(s, owner(c, m, n), 2 * nt - 2 * k - n - m + 2 * nt, k_gemm,
                            (kargs){tdim(c, m), tdim(c, n), mk, c->prec}, 3, h[T(m, k)],
                            h[T(n, k)], h[T(m, n)]);
        }
    }
    int wrc = ct_stf_wait_all(s);
    if (rc == MPI_SUCCESS)
        rc = wrc;
    MPI_Barrier(MPI_COMM_WORLD);
    out->seconds = MPI_Wtime() - t0;
    ct_stf_stats st;
    ct_stf_stats_get(s, &st);
    long mine[4] = {st.tasks, st.sends, st.recvs, st.bytes_sent}, all[4];
    MPI_Allreduce(mine, all, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    out->tasks = all[0];
    out->sends = all[1];
    out->recvs = all[2];
    out->bytes = all[3];
#ifdef CT_HAVE_DYN
    if (c->how != CT_STF_COMM_MPI) {
        ct_dyn_stats ds;
        ct_dyn_stats_get(&ds);
        long dm[4] = {ds.messages_sent, ds.forwarded, ds.broadcasts, ds.plain_sends}, da[4];
        MPI_Allreduce(dm, da, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        out->dyn_messages = da[0];
        out->dyn_forwarded = da[1];
        out->dyn_broadcasts = da[2];
        out->dyn_plain = da[3];
        out->have_dyn_stats = 1;
    }
#endif
    int bad = g_not_spd, anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    if (check && rc == MPI_SUCCESS && !anybad) {
        /* The strict upper parts of L's diagonal tiles still hold A: cleared by tasks, so
         * that the copies other ranks keep of the factorised tiles are replaced too. */
        for (int k = 0; k < nt && rc == MPI_SUCCESS; k++)
            rc = submit(s, owner(c, k, k), 0, k_lower, (kargs){tdim(c, k), 0, 0, c->prec}, 1,
                        h[T(k, k)], NULL, NULL);
        void **rt = calloc((size_t)nt * nt, sizeof *rt);
        ct_stf_data **rh = calloc((size_t)nt * nt, sizeof *rh);
        double sq[2] = {0, 0}, tot[2];
        for (int j = 0; j < nt; j++)
            for (int i = j; i < nt; i++) {
                int o = owner(c, i, j);
                if (o == rank) {
                    rt[T(i, j)] = gen_tile(c, i, j);
                    sq[1] += (i == j ? 1 : 2) * sumsq(rt[T(i, j)], tdim(c, i), tdim(c, j),
                                                      c->prec);
                }
                rh[T(i, j)] = ct_stf_register(s, rt[T(i, j)], tdim(c, i) * tdim(c, j), type, o);
            }
        /* R_ij = A_ij - sum_k L_ik L_jk^T over k <= j (the diagonal tile in full). */
        for (int j = 0; j < nt && rc == MPI_SUCCESS; j++)
            for (int i = j; i < nt && rc == MPI_SUCCESS; i++)
                for (int k = 0; k <= j && rc == MPI_SUCCESS; k++)
                    rc = submit(s, owner(c, i, j), 0, k_gemm,
                                (kargs){tdim(c, i), tdim(c, j), tdim(c, k), c->prec}, 3,
                                h[T(i, k)], h[T(j, k)], rh[T(i, j)]);
        wrc = ct_stf_wait_all(s);
        if (rc == MPI_SUCCESS)
            rc = wrc;
        for (int j = 0; j < nt; j++)
            for (int i = j; i < nt; i++)
                if (rt[T(i, j)]) {
                    sq[0] += (i == j ? 1 : 2) * sumsq(rt[T(i, j)], tdim(c, i), tdim(c, j),
                                                      c->prec);
                    free(rt[T(i, j)]);
                }
        MPI_Allreduce(sq, tot, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        out->residual = sqrt(tot[0] / tot[1]);
        free(rt);
        free(rh);
    }
    wrc = ct_stf_destroy(s);
    if (rc == MPI_SUCCESS)
        rc = wrc;
    for (size_t e = 0; e < (size_t)nt * nt; e++)
        free(tile[e]);
    free(tile);
    free(h);
#undef T
    if (rc == MPI_SUCCESS && anybad)
        rc = MPI_ERR_OTHER;
    return rc;
}

/* The first line of MPI_Get_library_version, safe inside a JSON string. */
static const char *library(void)
{
    static char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int len;
    MPI_Get_library_version(lib, &len);
    for (int i = 0; lib[i]; i++)
        if (lib[i] == '\n' || lib[i] == '\r') {
            lib[i] = 0;
            break;
        } else if (lib[i] == '"' || lib[i] == '\\' || (unsigned char)lib[i] < 32) {
            lib[i] = ' ';
        }
    return lib;
}

static void print_json(const cfg *c, int workers, int ranks, int iter, const run_out *o)
{
    double flops = (double)c->n * c->n * c->n / 3.0;
    printf("{\"library\": \"%s\", ", library());
    printf("\"n\": %d, \"nb\": %d, \"grid\": \"%dx%d\", \"P\": %d, \"Q\": %d, \"ranks\": %d, "
           "\"precision\": \"%c\", \"comm\": \"%s\", \"dynbcast\": \"%s\", \"workers\": %d, "
           "\"iter\": %d, \"seconds\": %.9g, \"gflops\": %.6g, ",
           c->n, c->nb, c->p, c->q, c->p, c->q, ranks, c->prec, comm_name(c->how),
           c->how == CT_STF_COMM_DYN ? "on" : "off", workers, iter, o->seconds,
           flops / o->seconds * 1e-9);
    if (isnan(o->residual))
        printf("\"residual\": null, ");
    else
        printf("\"residual\": %.6e, ", o->residual);
    printf("\"tasks\": %ld, \"sends\": %ld, \"recvs\": %ld, \"bytes_sent\": %ld", o->tasks,
           o->sends, o->recvs, o->bytes);
    if (o->have_dyn_stats)
        printf(", \"dyn\": {\"messages_sent\": %ld, \"forwarded\": %ld, \"broadcasts\": %ld, "
               "\"plain_sends\": %ld}",
               o->dyn_messages, o->dyn_forwarded, o->dyn_broadcasts, o->dyn_plain);
    printf("}\n");
    fflush(stdout);
}

/* The residual of a checked run is below the precision's threshold (NaN is not). */
static int residual_ok(const cfg *c, const run_out *o, int checked, int rank)
{
    double tol = c->prec == 'd' ? 1e-12 : 1e-4;
    if (!checked || o->residual < tol)
        return 1;
    if (rank == 0)
        fprintf(stderr, "ct_cholesky: n=%d nb=%d grid %dx%d %c %s: residual %.3e >= %g\n", c->n,
                c->nb, c->p, c->q, c->prec, comm_name(c->how), o->residual, tol);
    return 0;
}

static int parse_grid(const char *s, int *p, int *q)
{
    char x;
    return sscanf(s, "%d%c%d", p, &x, q) == 3 && (x == 'x' || x == 'X') && *p > 0 && *q > 0
               ? 0
               : -1;
}

/* The most square P x Q = size with P <= Q. */
static void default_grid(int size, int *p, int *q)
{
    *p = 1;
    for (int d = 1; d * d <= size; d++)
        if (size % d == 0)
            *p = d;
    *q = size / *p;
}

static int fail(int rank, const char *msg, const char *what)
{
    if (rank == 0)
        fprintf(stderr, "ct_cholesky: %s%s%s\n", msg, what ? ": " : "", what ? what : "");
    MPI_Finalize();
    return 2;
}

static int check_cfg(const cfg *c, int size, char *why, size_t len)
{
    if (c->n < 1 || c->nb < 1)
        snprintf(why, len, "--n and --nb must be positive (got %d, %d)", c->n, c->nb);
    else if (c->p * c->q != size)
        snprintf(why, len, "grid %dx%d has %d ranks, the job has %d", c->p, c->q, c->p * c->q,
                 size);
    else if (c->prec != 'd' && c->prec != 's')
        snprintf(why, len, "precision must be d or s");
    else
        return 0;
    return -1;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE)
        return fail(rank, "this MPI does not provide MPI_THREAD_MULTIPLE", NULL);
    if (openblas_set_num_threads)
        openblas_set_num_threads(1);
    cfg c = {.n = 0, .nb = 0, .prec = 'd', .how = CT_STF_COMM_MPI};
    default_grid(size, &c.p, &c.q);
    int workers = 1, iters = 1, check = 1, assert_res = 0;
    const char *cases = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-check")) {
            check = 0;
            continue;
        }
        if (!strcmp(a, "--assert")) {
            assert_res = 1;
            continue;
        }
        if (!v)
            return fail(rank, "missing value after", a);
        i++;
        if (!strcmp(a, "--n"))
            c.n = atoi(v);
        else if (!strcmp(a, "--nb"))
            c.nb = atoi(v);
        else if (!strcmp(a, "--grid")) {
            if (parse_grid(v, &c.p, &c.q))
                return fail(rank, "bad --grid (PxQ)", v);
        } else if (!strcmp(a, "--comm") || !strcmp(a, "--dynbcast")) {
            if (parse_comm(v, &c.how))
                return fail(rank, "bad --comm (mpi, dyn, dyn-plain; or on/off)", v);
        } else if (!strcmp(a, "--precision"))
            c.prec = v[0];
        else if (!strcmp(a, "--workers"))
            workers = atoi(v);
        else if (!strcmp(a, "--iters"))
            iters = atoi(v);
        else if (!strcmp(a, "--cases"))
            cases = v;
        else
            return fail(rank, "unknown option", a);
    }
    if (workers < 1 || iters < 1)
        return fail(rank, "--workers and --iters must be at least 1", NULL);
#ifndef CT_HAVE_DYN
    if (c.how != CT_STF_COMM_MPI)
        return fail(rank, "built without the dynamic-broadcast layer (src/dyn)", NULL);
#endif
    char why[200];
    int status = 0;
    if (!cases) {
        if (check_cfg(&c, size, why, sizeof why))
            return fail(rank, why, NULL);
        for (int it = 0; it < iters; it++) {
            run_out o;
            int rc = run(&c, workers, check && it == iters - 1, &o);
            if (rc != MPI_SUCCESS) {
                if (rank == 0)
                    fprintf(stderr, "ct_cholesky: run failed (%s)\n",
                            g_not_spd ? "matrix not positive definite" : "runtime error");
                status = 1;
                break;
            }
            if (rank == 0)
                print_json(&c, workers, size, it, &o);
            if (assert_res && !residual_ok(&c, &o, check && it == iters - 1, rank))
                status = 1;
        }
        MPI_Finalize();
        return status;
    }
    /* N:NB:PxQ:PREC:COMM,... */
    char *list = strdup(cases), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        cfg k = c;
        char grid[32], prec[8], how[16];
        if (sscanf(tok, "%d:%d:%31[^:]:%7[^:]:%15s", &k.n, &k.nb, grid, prec, how) != 5 ||
            parse_grid(grid, &k.p, &k.q) || parse_comm(how, &k.how))
            return fail(rank, "bad case (N:NB:PxQ:d|s:mpi|dyn|dyn-plain)", tok);
        k.prec = prec[0];
        if (check_cfg(&k, size, why, sizeof why))
            return fail(rank, why, tok);
        run_out o;
        int rc = run(&k, workers, check, &o);
        if (rc != MPI_SUCCESS) {
            if (rank == 0)
                fprintf(stderr, "ct_cholesky: case %s failed (error %d)\n", tok, rc);
            status = 1;
            continue;
        }
        if (rank == 0)
            print_json(&k, workers, size, 0, &o);
        if (assert_res && !residual_ok(&k, &o, check, rank))
            status = 1;
    }
    free(list);
    MPI_Finalize();
    return status;
}
