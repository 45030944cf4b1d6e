/*
 * Correctness against the native MPI collective, under a real MPI.
 *
 * One MPI job runs every algorithm of the registry x several roots x counts
 * {0, 1, 7, S-1, S, S+1, big} (S = elements per segment) x datatypes {BYTE,
 * INT, DOUBLE, strided vector, struct} x operations {SUM, MAX, a user-defined
 * non-commutative one}, segmented and not, in place and not, and compares the
 * whole receive buffer (holes of derived types included) with what the native
 * collective produced from the same input.
 *
 * The hierarchical algorithms run with their default parts; on one host,
 * COLLTUNE_NODES=R makes them see nodes of R ranks, and then (small counts)
 * they also run with another pair of parts that keeps rank order.
 *
 * Usage: test_coll_mpi [--small | --large] [--only ALGORITHM]
 *   --small: only the counts up to S+1; --large: only the 1 MiB + 3 bytes one
 *   (segmented with 16 S elements per segment). --only: that algorithm's name
 *   only (of every collective that has it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"
#include "mpi_test_util.h"

#define SEG_ELEMS 64
#define SENTINEL 0xEE

static MPI_Datatype t_vector, t_struct;
static MPI_Op op_perm;
static int rank, nprocs, failures, cases, skipped;
static int vector_predefined_ok;
static const char *cur_intra, *cur_inter; /* hierarchical parts; NULL: defaults */

/* The symmetric group S3 as a table: associative, not commutative, so any
 * reduction done out of rank order shows up in the result. */
static const int s3[6][6] = {{0, 1, 2, 3, 4, 5}, {1, 2, 0, 5, 3, 4}, {2, 0, 1, 4, 5, 3},
                             {3, 4, 5, 0, 1, 2}, {4, 5, 3, 2, 0, 1}, {5, 3, 4, 1, 2, 0}};

static void perm_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    char *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        if (*dt == MPI_BYTE) {
            b[i] = (char)s3[(int)a[i]][(int)b[i]];
        } else if (*dt == MPI_INT) {
            ((int *)b)[i] = s3[((int *)a)[i]][((int *)b)[i]];
        } else if (*dt == MPI_DOUBLE) {
            ((double *)b)[i] = s3[(int)((double *)a)[i]][(int)((double *)b)[i]];
        } else if (*dt == t_vector) { /* doubles at 0 and 2 of an element of 3 */
            double *x = (double *)a + 3 * i, *y = (double *)b + 3 * i;
            y[0] = s3[(int)x[0]][(int)y[0]];
            y[2] = s3[(int)x[2]][(int)y[2]];
        } else if (*dt == t_struct) { /* int at 0, double at 8, extent 16 */
            char *x = a + 16 * i, *y = b + 16 * i;
            *(int *)y = s3[*(int *)x][*(int *)y];
            *(double *)(y + 8) = s3[(int)*(double *)(x + 8)][(int)*(double *)(y + 8)];
        }
    }
}

typedef struct dtype {
    const char *name;
    MPI_Datatype *type;
    MPI_Aint extent;
} dtype;

/* Writes value v into field f of element i (the data fields only). */
static void put(const dtype *d, void *buf, size_t i, int v)
{
    char *e = (char *)buf + (MPI_Aint)i * d->extent;
    MPI_Datatype t = *d->type;
    if (t == MPI_BYTE)
        *e = (char)v;
    else if (t == MPI_INT)
        *(int *)e = v;
    else if (t == MPI_DOUBLE)
        *(double *)e = v;
    else if (t == t_vector) {
        ((double *)e)[0] = v;
        ((double *)e)[2] = (v + 1) % 6;
    } else {
        *(int *)e = v;
        *(double *)(e + 8) = (v + 2) % 6;
    }
}

static char *alloc_buf(const dtype *d, size_t count)
{
    size_t bytes = (count ? count : 1) * (size_t)d->extent;
    char *b = malloc(bytes);
    /* Each rank's own filler: an algorithm that copies a peer's holes along with its data
     * (a one-copy read of a whole span) leaves another rank's byte where native does not. */
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(b, SENTINEL ^ (rank & 0x7f), bytes);
    return b;
}

/* Every rank's input: small values so sums are exact in any order, and
 * valid S3 elements for the permutation op. */
static void fill_input(const dtype *d, void *buf, size_t count, int r, int perm)
{
    for (size_t i = 0; i < count; i++)
        put(d, buf, i, perm ? (int)((r * 5 + i * 7 + i / 11) % 6) : (int)((r + 1) * (i % 7) % 100));
}

static int same_everywhere(int local_ok)
{
    int all;
    MPI_Allreduce(&local_ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static void report(const char *coll, const char *alg, const dtype *d, const char *opname,
                   int root, size_t count, long long seg, int in_place, const char *what)
{
    failures++;
    if (failures <= 20)
        fprintf(stderr,
                "FAIL rank %d/%d %s/%s type=%s op=%s root=%d count=%zu seg=%lld inplace=%d: "
                "%s\n",
                rank, nprocs, coll, alg, d->name, opname, root, count, seg, in_place, what);
}

/* colltune's call of the case into got (in: the input; the root's or in-place data is
 * put into got first). */
static int run_ct(const ct_algorithm_info *a, const dtype *d, MPI_Op op, int root, size_t count,
                  int in_place, const char *in, char *got, size_t bytes, const ct_options *o)
{
    switch (a->coll) {
    case CT_BCAST:
        if (rank == root)
            memcpy(got, in, bytes);
        return ct_bcast(got, (int)count, *d->type, root, MPI_COMM_WORLD, o);
    case CT_REDUCE:
        if (in_place && rank == root)
            memcpy(got, in, bytes);
        return ct_reduce(in_place && rank == root ? MPI_IN_PLACE : in, got, (int)count,
                         *d->type, op, root, MPI_COMM_WORLD, o);
    default:
        if (in_place)
            memcpy(got, in, bytes);
        return ct_allreduce(in_place ? MPI_IN_PLACE : in, got, (int)count, *d->type, op,
                            MPI_COMM_WORLD, o);
    }
}

static void check_case(const ct_algorithm_info *a, const dtype *d, MPI_Op op, const char *opname,
                       int root, size_t count, long long seg, int in_place)
{
    int perm = op == op_perm;
    size_t bytes = (count ? count : 1) * (size_t)d->extent;
    char *in = alloc_buf(d, count), *want = alloc_buf(d, count), *got = alloc_buf(d, count);
    ct_options o;
    ct_options_init(&o);
    o.algorithm = a->name;
    o.intra = cur_intra;
    o.inter = cur_inter;
    if (seg > 0) {
        o.has_segsize = 1;
        o.segsize = seg;
    }
    int rc_native = MPI_SUCCESS, rc = MPI_SUCCESS;
    fill_input(d, in, count, rank, perm);
    cases++;
    if (a->coll == CT_BCAST ? rank == root
                            : in_place && (a->coll == CT_ALLREDUCE || rank == root))
        memcpy(want, in, bytes);
    switch (a->coll) {
    case CT_BCAST:
        rc_native = MPI_Bcast(want, (int)count, *d->type, root, MPI_COMM_WORLD);
        break;
    case CT_REDUCE:
        rc_native = MPI_Reduce(in_place && rank == root ? MPI_IN_PLACE : in, want, (int)count,
                               *d->type, op, root, MPI_COMM_WORLD);
        break;
    default:
        rc_native = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, want, (int)count, *d->type, op,
                                  MPI_COMM_WORLD);
        break;
    }
    rc = run_ct(a, d, op, root, count, in_place, in, got, bytes, &o);
    /* The same call again on other buffers: a repeated call takes the fast path (the
     * communicator's job reused as it is) and must take the new buffers. The path does
     * not depend on the size: small counts only, for the test's time. */
    if (count <= 4096) {
        char *again = alloc_buf(d, count);
        int rc2 = run_ct(a, d, op, root, count, in_place, in, again, bytes, &o);
        if (rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && memcmp(got, again, bytes) != 0)
            report(ct_coll_name(a->coll), a->name, d, opname, root, count, seg, in_place,
                   "a repeated call on other buffers gave another result");
        free(again);
    }
    if (rc_native != MPI_SUCCESS) {
        report(ct_coll_name(a->coll), a->name, d, opname, root, count, seg, in_place,
               "native collective failed (test set-up error)");
    } else if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        report(ct_coll_name(a->coll), a->name, d, opname, root, count, seg, in_place, msg);
    } else if (memcmp(want, got, bytes) != 0) {
        size_t i = 0;
        while (want[i] == got[i])
            i++;
        char what[128];
        snprintf(what, sizeof what, "result differs from native at byte %zu (element %zu)", i,
                 i / (size_t)d->extent);
        report(ct_coll_name(a->coll), a->name, d, opname, root, count, seg, in_place, what);
    }
    free(in);
    free(want);
    free(got);
}

/* Whether every rank of MPI_COMM_WORLD shares one node: the shared-memory algorithms
 * serve only such communicators (across the test bed's hosts they are refused). */
int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int only_small = argc > 1 && strcmp(argv[1], "--small") == 0;
    int only_large = argc > 1 && strcmp(argv[1], "--large") == 0;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];

    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &t_vector); /* data at 0 and 2, extent 3 doubles */
    MPI_Type_commit(&t_vector);
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, tmp;
    MPI_Type_create_struct(2, bl, disp, types, &tmp);
    MPI_Type_create_resized(tmp, 0, 16, &t_struct);
    MPI_Type_free(&tmp);
    MPI_Type_commit(&t_struct);
    MPI_Op_create(perm_op, 0, &op_perm);

    /* Predefined operations on derived types made of one basic type are an
     * implementation choice: ask this MPI. */
    {
        double x[3] = {1, 0, 2}, y[3] = {1, 0, 2};
        vector_predefined_ok = MPI_Reduce_local(x, y, 1, t_vector, MPI_SUM) == MPI_SUCCESS;
    }

    dtype dtypes[] = {{"MPI_BYTE", &(MPI_Datatype){MPI_BYTE}, 1},
                      {"MPI_INT", &(MPI_Datatype){MPI_INT}, sizeof(int)},
                      {"MPI_DOUBLE", &(MPI_Datatype){MPI_DOUBLE}, sizeof(double)},
                      {"vector(2,1,2,DOUBLE)", &t_vector, 3 * sizeof(double)},
                      {"struct{int,double}", &t_struct, 16}};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (dtypes[i].type != &t_vector && dtypes[i].type != &t_struct)
            continue;
        MPI_Aint lb;
        MPI_Type_get_extent(*dtypes[i].type, &lb, &dtypes[i].extent);
    }
    struct {
        const char *name;
        MPI_Op op;
    } ops[] = {{"SUM", MPI_SUM}, {"MAX", MPI_MAX}, {"perm(non-commutative)", op_perm}};

    int roots[3] = {0, nprocs - 1, nprocs / 2}, nroots = 3;
    if (nprocs <= 2)
        nroots = nprocs;
    int one_node = world_on_one_node();
    for (int ai = 0; ai < ct_algorithm_count(); ai++) {
        const ct_algorithm_info *a = ct_algorithm_get(ai);
        if (a->coll != CT_BCAST && a->coll != CT_REDUCE && a->coll != CT_ALLREDUCE)
            continue; /* the data-movement collectives and barrier: test_move_mpi */
        if (only && strcmp(a->name, only) != 0)
            continue;
        if ((a->flags & CT_ALG_SHARED_MEMORY) && !one_node) {
            /* Refused, with an error, where the ranks do not share one node. */
            if (a->coll == CT_BCAST) {
                int buf = 0;
                ct_options so;
                ct_options_init(&so);
                so.algorithm = a->name;
                int rc = ct_bcast(&buf, 1, MPI_INT, 0, MPI_COMM_WORLD, &so);
                if (!same_everywhere(rc != MPI_SUCCESS))
                    report("bcast", a->name, &dtypes[0], "-", 0, 1, 0, 0,
                           "not refused on ranks that do not share one node");
            }
            continue;
        }
        /* Parts of the hierarchical algorithms: the defaults, then another pair. */
        static const char *const alt[][2] = {[CT_BCAST] = {"chain", "scatter_allgather"},
                                             [CT_REDUCE] = {"chain", "linear"},
                                             [CT_ALLREDUCE] = {"linear", "reduce_bcast"}};
        /* The other pair only where nodes are made up (the extra tests) and
         * for the small counts: CI time. */
        int made_up = getenv("COLLTUNE_NODES") != NULL;
        int hier = (a->flags & CT_ALG_HIERARCHICAL) && (made_up || !one_node) && !only_large;
        /* The third: the shared-memory family inside each node (the nodes' own segments),
         * on made-up nodes of one host and across real hosts (the test bed). */
        for (int pi = 0; pi < (hier ? 3 : 1); pi++) {
        if ((pi == 1 && !made_up) || (pi == 2 && made_up && !one_node))
            continue;
        cur_intra = pi == 2 ? "shm" : pi ? alt[a->coll][0] : NULL;
        cur_inter = pi == 2 ? NULL : pi ? alt[a->coll][1] : NULL;
        int before = failures, cbefore = cases;
        for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
            const dtype *d = &dtypes[di];
            int type_size;
            MPI_Type_size(*d->type, &type_size);
            long long seg = (long long)SEG_ELEMS * type_size;
            size_t big = (size_t)((1 << 20) + 3 + type_size - 1) / (size_t)type_size;
            size_t counts[] = {0, 1, 7, SEG_ELEMS - 1, SEG_ELEMS, SEG_ELEMS + 1, big};
            int cfirst = only_large ? 6 : 0, ncounts = only_small ? 6 : 7;
            for (size_t oi = 0; oi < (a->coll == CT_BCAST ? 1 : 3); oi++) {
                MPI_Op op = a->coll == CT_BCAST ? MPI_OP_NULL : ops[oi].op;
                const char *opname = a->coll == CT_BCAST ? "-" : ops[oi].name;
                if (op != MPI_OP_NULL && op != op_perm &&
                    (*d->type == MPI_BYTE || d->type == &t_struct ||
                     (d->type == &t_vector && !vector_predefined_ok))) {
                    skipped++; /* MPI defines no SUM/MAX for these */
                    continue;
                }
                if (op == op_perm && (a->flags & CT_ALG_NEEDS_COMMUTE))
                    continue; /* refused by design: see test_errors */
                for (int ri = 0; ri < (a->coll == CT_ALLREDUCE ? 1 : nroots); ri++) {
                    if (ri > 0 && roots[ri] == roots[ri - 1])
                        continue;
                    for (int ci = cfirst; ci < ncounts; ci++) {
                        int big_case = ci == 6;
                        for (int sv = 0; sv < 2; sv++) {
                            if (sv && !(a->flags & CT_ALG_SEGMENTABLE))
                                continue;
                            for (int ip = 0; ip < (a->coll == CT_BCAST ? 1 : 2); ip++) {
                                if (big_case && (ip || ri > 0))
                                    continue; /* big messages: one root, not in place */
                                /* Big messages: 1024-element segments (a few
                                 * hundred, the last one partial); 64-element
                                 * ones would mean thousands of messages per
                                 * call, minutes at N = 16 on two cores. */
                                check_case(a, d, op, opname, roots[ri], counts[ci],
                                           sv ? (big_case ? 16 * seg : seg) : 0, ip);
                            }
                        }
                    }
                }
            }
        }
        int ok = same_everywhere(failures == before);
        if (rank == 0)
            printf("%-10s %-20s %5d cases %s%s%s%s\n", ct_coll_name(a->coll), a->name,
                   cases - cbefore, ok ? "ok" : "FAILED", pi ? " (parts " : "",
                   pi ? cur_intra : "", pi ? ")" : "");
        fflush(stdout);
        }
    }
    /* Parts the hierarchical algorithms refuse: an unknown name, and a
     * commutative-only part given a non-commutative operation. */
    if (!only || strcmp(only, "hier") == 0) {
        int x[4] = {0}, y[4], cls;
        ct_options o;
        ct_options_init(&o);
        o.algorithm = "hier";
        o.intra = "no_such_part";
        MPI_Error_class(ct_bcast(x, 4, MPI_INT, 0, MPI_COMM_WORLD, &o), &cls);
        if (cls != MPI_ERR_ARG)
            report("bcast", "hier", &dtypes[1], "-", 0, 4, 0, 0, "unknown intra part accepted");
        o.intra = NULL;
        o.inter = "rabenseifner";
        MPI_Error_class(ct_reduce(x, y, 4, MPI_INT, op_perm, 0, MPI_COMM_WORLD, &o), &cls);
        if (cls != MPI_ERR_OP)
            report("reduce", "hier", &dtypes[1], "perm", 0, 4, 0, 0,
                   "commutative-only inter part accepted a non-commutative op");
    }
    int total_ok = same_everywhere(failures == 0);
    if (rank == 0)
        printf("N=%d: %d cases per rank (SUM/MAX on the vector type: %s), %d type/op pairs "
               "MPI does not define, %s\n",
               nprocs, cases, vector_predefined_ok ? "yes" : "refused by this MPI", skipped,
               total_ok ? "all equal to native" : "FAILURES");
    MPI_Op_free(&op_perm);
    MPI_Type_free(&t_vector);
    MPI_Type_free(&t_struct);
    MPI_Finalize();
    return total_ok ? 0 : 1;
}
