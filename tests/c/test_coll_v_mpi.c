/*
 * The v-variants, reduce-scatters and scans against the MPI library's own, in
 * one job: every colltune algorithm of allgatherv, alltoallv, gatherv,
 * scatterv, reduce_scatter_block, reduce_scatter, scan and exscan, every root,
 * even and uneven counts (zeros on some ranks, all zero, one rank alone),
 * displacements out of rank order with gaps (which must come out untouched),
 * negative displacements (the buffer passed a few elements in), a
 * contiguous and a derived datatype with holes (the reductions: MPI_SUM on
 * MPI_INT and the user op on a derived pair type), MPI_IN_PLACE where MPI allows it, MPI_SUM and a
 * user-defined non-commutative operation; reduce_scatter_block, scan and
 * exscan also in their non-blocking forms (ct_i* against MPI_I*). Each case runs the
 * native collective and colltune's on the same inputs and compares the whole
 * receive buffers. Prints the cases and exits nonzero on any difference.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"

static int rank, nprocs, failures, cases, verbose;
static MPI_Datatype vec;  /* 2 ints with a hole: extent 3 ints, size 2 */
static MPI_Datatype pair; /* 2 ints back to back, for the non-commutative op */
static MPI_Op affine;     /* (a, b) pairs composed: not commutative */

/* inout = in o inout on affine maps x -> a*x + b. */
static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    const int *x = in;
    int *y = inout;
    for (int i = 0; i < *len; i++) {
        unsigned a = (unsigned)x[2 * i] * (unsigned)y[2 * i];
        unsigned b = (unsigned)x[2 * i] * (unsigned)y[2 * i + 1] + (unsigned)x[2 * i + 1];
        y[2 * i] = (int)a;
        y[2 * i + 1] = (int)b;
    }
}

#define SENTINEL (-7777)
#define MAXN 64

typedef struct type_case {
    MPI_Datatype t;
    int ints;    /* ints of one element's extent */
    const char *name;
} type_case;

/* Counts of a pattern: what rank r sends to / contributes for block i. */
static int pattern_count(int pat, int r, int i, int alltoall)
{
    switch (pat) {
    case 0:
        return 3;
    case 1:
        if (alltoall)
            return (r + 2 * i) % 3 == 1 ? 0 : 1 + (r * 3 + i * 5) % 4;
        return i % 3 == 1 ? 0 : 1 + (i * 5) % 4;
    case 2:
        return 0;
    case 3:
        return i == nprocs / 2 ? 4 : 0;
    default: /* negative displacements: uneven counts */
        return pattern_count(1, r, i, alltoall);
    }
}
static const char *const pattern_names[] = {"even", "uneven", "zero", "one-rank", "negative"};
#define NEGATIVE 4

/* Displacements in reverse rank order with gaps of 2 elements. */
static void gap_displs(const int *counts, int *displs)
{
    int off = 1;
    for (int i = nprocs - 1; i >= 0; i--) {
        displs[i] = off;
        off += counts[i] + 2;
    }
}

static int span(const int *counts, const int *displs)
{
    int end = 0;
    for (int i = 0; i < nprocs; i++)
        if (counts[i] > 0 && displs[i] + counts[i] > end)
            end = displs[i] + counts[i];
    return end;
}

static int *ints(size_t n, int fill)
{
    int *b = malloc((n ? n : 1) * sizeof(int));
    for (size_t i = 0; i < n; i++)
        b[i] = fill;
    return b;
}

/* Rank r's input: int k of its buffer (a few bits of where it came from). */
static int value(int r, int k) { return (r * 7919 + k * 31) % 100003 + 1; }

static void check(const char *what, const char *alg, int pat, const type_case *tc, int root,
                  int inplace, const int *got, const int *want, size_t n, int rc)
{
    cases++;
    int bad = rc != MPI_SUCCESS;
    size_t at = 0;
    for (size_t i = 0; i < n && !bad; i++)
        if (got[i] != want[i]) {
            bad = 1;
            at = i;
        }
    if (bad && failures++ < 20)
        fprintf(stderr,
                "FAIL rank %d/%d %s/%s %s %s root=%d inplace=%d: rc=%d int %zu got %d want %d\n",
                rank, nprocs, what, alg, pattern_names[pat], tc->name, root, inplace, rc, at,
                n ? got[at] : 0, n ? want[at] : 0);
}

static void run_movement(ct_coll coll, const char *alg, int pat, const type_case *tc, int root,
                         int inplace)
{
    ct_options o;
    ct_options_init(&o);
    o.algorithm = alg;
    o.radix = 3;
    if (verbose)
        fprintf(stderr, "rank %d: %s/%s %s %s root %d inplace %d\n", rank, ct_coll_name(coll),
                alg, pattern_names[pat], tc->name, root, inplace);
    int n = nprocs, e = tc->ints;
    int sc[MAXN], sd[MAXN], rcn[MAXN], rd[MAXN];
    for (int i = 0; i < n; i++) {
        if (coll == CT_ALLTOALLV) {
            sc[i] = pattern_count(pat, rank, i, 1);
            rcn[i] = pattern_count(pat, i, rank, 1);
        } else {
            sc[i] = rcn[i] = pattern_count(pat, 0, i, 0);
        }
    }
    gap_displs(sc, sd);
    gap_displs(rcn, rd);
    size_t slen = (size_t)(span(sc, sd) + 1) * (size_t)e, rlen = (size_t)(span(rcn, rd) + 1) * (size_t)e;
    /* Negative displacements: the arrays' buffers are passed `shift` elements in. */
    int shift = pat == NEGATIVE ? 5 : 0;
    for (int i = 0; i < n; i++) {
        sd[i] -= shift;
        rd[i] -= shift;
    }
    size_t off = (size_t)shift * (size_t)e;
    int own = coll == CT_SCATTERV ? rcn[rank] : sc[rank];
    size_t olen = (size_t)(own + 1) * (size_t)e;
    int *in = NULL, *got = NULL, *want = NULL;
    size_t outlen = 0;
    int rc = MPI_SUCCESS, rc2;
    switch (coll) {
    case CT_ALLGATHERV:
    case CT_GATHERV: {
        in = ints(olen, 0);
        for (size_t k = 0; k < olen; k++)
            in[k] = value(rank, (int)k);
        outlen = rlen;
        want = ints(outlen, SENTINEL);
        got = ints(outlen, SENTINEL);
        int is_root = coll == CT_ALLGATHERV || rank == root;
        if (inplace && is_root)
            for (int k = 0; k < own * e; k++)
                want[off + (size_t)(rd[rank] * e + k)] = got[off + (size_t)(rd[rank] * e + k)] =
                    value(rank, k);
        const void *sb = inplace && is_root ? MPI_IN_PLACE : in;
        if (coll == CT_ALLGATHERV) {
            rc2 = MPI_Allgatherv(sb, own, tc->t, want + off, rcn, rd, tc->t, MPI_COMM_WORLD);
            rc = ct_allgatherv(sb, own, tc->t, got + off, rcn, rd, tc->t, MPI_COMM_WORLD, &o);
        } else {
            rc2 = MPI_Gatherv(sb, own, tc->t, want + off, rcn, rd, tc->t, root, MPI_COMM_WORLD);
            rc = ct_gatherv(sb, own, tc->t, got + off, rcn, rd, tc->t, root, MPI_COMM_WORLD, &o);
        }
        if (!is_root)
            outlen = 0;
        break;
    }
    case CT_SCATTERV: {
        in = ints(slen, 0);
        for (size_t k = 0; k < slen; k++)
            in[k] = value(rank, (int)k);
        outlen = olen;
        want = ints(outlen, SENTINEL);
        got = ints(outlen, SENTINEL);
        void *w = inplace && rank == root ? MPI_IN_PLACE : (void *)want;
        void *g = inplace && rank == root ? MPI_IN_PLACE : (void *)got;
        rc2 = MPI_Scatterv(in + off, sc, sd, tc->t, w, own, tc->t, root, MPI_COMM_WORLD);
        rc = ct_scatterv(in + off, sc, sd, tc->t, g, own, tc->t, root, MPI_COMM_WORLD, &o);
        break;
    }
    default: { /* alltoallv */
        in = ints(slen, 0);
        for (size_t k = 0; k < slen; k++)
            in[k] = value(rank, (int)k);
        outlen = rlen;
        want = ints(outlen, SENTINEL);
        got = ints(outlen, SENTINEL);
        if (inplace) { /* MPI_IN_PLACE: the receive side is both; counts symmetric only */
            for (size_t k = 0; k < outlen; k++)
                want[k] = got[k] = value(rank, (int)k);
            rc2 = MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, tc->t, want + off, rcn, rd, tc->t,
                                MPI_COMM_WORLD);
            rc = ct_alltoallv(MPI_IN_PLACE, NULL, NULL, tc->t, got + off, rcn, rd, tc->t,
                              MPI_COMM_WORLD, &o);
        } else {
            rc2 = MPI_Alltoallv(in + off, sc, sd, tc->t, want + off, rcn, rd, tc->t,
                                MPI_COMM_WORLD);
            rc = ct_alltoallv(in + off, sc, sd, tc->t, got + off, rcn, rd, tc->t,
                              MPI_COMM_WORLD, &o);
        }
        break;
    }
    }
    if (rc2 != MPI_SUCCESS)
        fprintf(stderr, "rank %d: native %s failed\n", rank, ct_coll_name(coll));
    check(ct_coll_name(coll), alg, pat, tc, root, inplace, got, want, outlen, rc);
    free(in);
    free(got);
    free(want);
}

static void run_reduction(ct_coll coll, const char *alg, int pat, const type_case *tc,
                          MPI_Op op, int inplace, int nonblocking)
{
    ct_options o;
    ct_options_init(&o);
    o.algorithm = alg;
    int n = nprocs, e = tc->ints;
    int counts[MAXN], total = 0, block = pattern_count(pat, 0, 1, 0) + (pat == 0 ? 2 : 0);
    for (int i = 0; i < n; i++) {
        counts[i] = coll == CT_REDUCE_SCATTER ? pattern_count(pat, 0, i, 0) : block;
        total += counts[i];
    }
    ct_coll kind = coll;
    int count = coll == CT_SCAN || coll == CT_EXSCAN ? block : total; /* the input vector */
    int mine = coll == CT_SCAN || coll == CT_EXSCAN ? block : counts[rank];
    size_t inlen = (size_t)(count + 1) * (size_t)e;
    size_t outlen = inplace ? inlen : (size_t)(mine + 1) * (size_t)e;
    int *in = ints(inlen, 0), *got = ints(outlen, SENTINEL), *want = ints(outlen, SENTINEL);
    for (size_t k = 0; k < inlen; k++)
        in[k] = value(rank, (int)k) | 1;
    if (inplace)
        for (size_t k = 0; k < inlen; k++)
            got[k] = want[k] = in[k];
    const void *sb = inplace ? MPI_IN_PLACE : in;
    int rc = MPI_SUCCESS, rc2 = MPI_SUCCESS;
    MPI_Request rq[2];
    if (nonblocking) { /* colltune's through src/nbc against the library's, both waited on */
        if (coll == CT_REDUCE_SCATTER_BLOCK) {
            rc2 = MPI_Ireduce_scatter_block(sb, want, block, tc->t, op, MPI_COMM_WORLD, &rq[0]);
            rc = ct_ireduce_scatter_block(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o, &rq[1]);
        } else if (coll == CT_SCAN) {
            rc2 = MPI_Iscan(sb, want, block, tc->t, op, MPI_COMM_WORLD, &rq[0]);
            rc = ct_iscan(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o, &rq[1]);
        } else {
            rc2 = MPI_Iexscan(sb, want, block, tc->t, op, MPI_COMM_WORLD, &rq[0]);
            rc = ct_iexscan(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o, &rq[1]);
        }
        if (rc2 == MPI_SUCCESS && rc == MPI_SUCCESS)
            rc = ct_waitall(2, rq, MPI_STATUSES_IGNORE);
        coll = CT_NCOLL; /* done */
    }
    switch (coll) {
    case CT_NCOLL:
        break;
    case CT_REDUCE_SCATTER_BLOCK:
        rc2 = MPI_Reduce_scatter_block(sb, want, block, tc->t, op, MPI_COMM_WORLD);
        rc = ct_reduce_scatter_block(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o);
        break;
    case CT_REDUCE_SCATTER:
        rc2 = MPI_Reduce_scatter(sb, want, counts, tc->t, op, MPI_COMM_WORLD);
        rc = ct_reduce_scatter(sb, got, counts, tc->t, op, MPI_COMM_WORLD, &o);
        break;
    case CT_SCAN:
        rc2 = MPI_Scan(sb, want, block, tc->t, op, MPI_COMM_WORLD);
        rc = ct_scan(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o);
        break;
    default:
        rc2 = MPI_Exscan(sb, want, block, tc->t, op, MPI_COMM_WORLD);
        rc = ct_exscan(sb, got, block, tc->t, op, MPI_COMM_WORLD, &o);
        break;
    }
    const char *what = nonblocking ? (kind == CT_SCAN ? "iscan" : kind == CT_EXSCAN ? "iexscan"
                                                         : "ireduce_scatter_block")
                                   : ct_coll_name(kind);
    if (rc2 != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc2, msg, &len);
        fprintf(stderr, "rank %d: native %s failed: %s\n", rank, what, msg);
    }
    /* Only the result is defined: its elements (the holes of a derived type and
     * exscan's rank 0 are not). */
    size_t cmp = kind == CT_EXSCAN && rank == 0 ? 0 : (size_t)mine * (size_t)e;
    check(what, alg, pat, tc, 0, inplace, got, want, cmp, rc);
    free(in);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *only = argc > 2 && !strcmp(argv[1], "--only") ? argv[2] : NULL;
    verbose = getenv("CT_TEST_VERBOSE") != NULL;
    if (nprocs > MAXN) {
        if (!rank)
            fprintf(stderr, "at most %d ranks\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(affine_fn, 0, &affine);
    const type_case types[] = {{MPI_INT, 1, "MPI_INT"}, {vec, 3, "vector(2,1,2)"}};
    const type_case pair_case = {pair, 2, "pair"};
    for (int a = 0; a < ct_algorithm_count(); a++) {
        const ct_algorithm_info *info = ct_algorithm_get(a);
        ct_coll coll = info->coll;
        if (coll <= CT_BARRIER || (info->flags & CT_ALG_NATIVE))
            continue;
        if (only && strcmp(only, ct_coll_name(coll)))
            continue;
        int before = failures, ncases = cases;
        int rooted = coll == CT_GATHERV || coll == CT_SCATTERV;
        int movement = rooted || coll == CT_ALLGATHERV || coll == CT_ALLTOALLV;
        int has_v = movement || coll == CT_REDUCE_SCATTER;
        for (int pat = 0; pat < (movement ? 5 : has_v ? 4 : 3); pat++)
            for (size_t ti = 0; ti < 2; ti++)
                for (int ip = 0; ip <= 1; ip++) {
                    if (movement) {
                        /* alltoallv in place needs symmetric counts: even or zero */
                        if (ip && coll == CT_ALLTOALLV && (pat == 1 || pat >= 3))
                            continue;
                        for (int root = 0; root < (rooted ? nprocs : 1); root++)
                            run_movement(coll, info->name, pat, &types[ti], root, ip);
                    } else {
                        /* The reductions: MPI_SUM on MPI_INT, and the user-defined
                         * non-commutative op on a derived pair type (MPI libraries refuse
                         * predefined ops on derived types). */
                        /* and the non-blocking form, where there is one (no arrays) */
                        for (int nb = 0; nb <= (coll != CT_REDUCE_SCATTER); nb++) {
                            if (ti == 0)
                                run_reduction(coll, info->name, pat, &types[0], MPI_SUM, ip, nb);
                            else if (!(info->flags & CT_ALG_NEEDS_COMMUTE))
                                run_reduction(coll, info->name, pat, &pair_case, affine, ip, nb);
                        }
                    }
                }
        int bad = failures - before, all_bad;
        MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-20s %-20s %5d cases %s\n", ct_coll_name(coll), info->name, cases - ncases,
                   all_bad ? "FAILED" : "ok");
    }
    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("N=%d: %d cases per rank, %d failures\n", nprocs, cases, total);
    MPI_Op_free(&affine);
    MPI_Type_free(&vec);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return total ? 1 : 0;
}
