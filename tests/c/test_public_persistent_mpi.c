/*
 * The public persistent collectives (issue 38, what `colltune tune --forms persistent`
 * times through ct_bench): ct_bcast_init, ct_allreduce_init, ct_scan_init, ct_exscan_init,
 * ct_allgatherv_init and ct_reduce_scatter_block_init with every colltune algorithm of the
 * operation that can serve a started call anywhere (not the hierarchical or shared-memory
 * ones, which depend on the node layout, nor those that broadcast counts first), each
 * planned once and started three times (ct_start, ct_wait) with fresh input, against the
 * MPI library's own blocking collective on the same input; then freed (ct_request_free).
 * And: a plan with the native algorithm is refused (MPI_ERR_ARG), MPI_X_init being the
 * program's own to call. Prints the cases and exits nonzero on any difference or error.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "colltune.h"

#define MAXN 16
#define K 3 /* elements a block */

static int rank, nprocs, failures, cases;

static int plan(ct_coll coll, const ct_options *o, int *in, int *out, const int *counts,
                const int *displs, MPI_Request *req)
{
    MPI_Comm w = MPI_COMM_WORLD;
    switch (coll) {
    case CT_BCAST:
        return ct_bcast_init(out, K, MPI_INT, nprocs - 1, w, o, req);
    case CT_ALLREDUCE:
        return ct_allreduce_init(in, out, K, MPI_INT, MPI_SUM, w, o, req);
    case CT_SCAN:
        return ct_scan_init(in, out, K, MPI_INT, MPI_SUM, w, o, req);
    case CT_EXSCAN:
        return ct_exscan_init(in, out, K, MPI_INT, MPI_SUM, w, o, req);
    case CT_ALLGATHERV:
        return ct_allgatherv_init(in, K, MPI_INT, out, counts, displs, MPI_INT, w, o, req);
    case CT_REDUCE_SCATTER_BLOCK:
        return ct_reduce_scatter_block_init(in, out, K, MPI_INT, MPI_SUM, w, o, req);
    default:
        return MPI_ERR_ARG;
    }
}

static int native(ct_coll coll, int *in, int *out, const int *counts, const int *displs)
{
    MPI_Comm w = MPI_COMM_WORLD;
    switch (coll) {
    case CT_BCAST:
        return MPI_Bcast(out, K, MPI_INT, nprocs - 1, w);
    case CT_ALLREDUCE:
        return MPI_Allreduce(in, out, K, MPI_INT, MPI_SUM, w);
    case CT_SCAN:
        return MPI_Scan(in, out, K, MPI_INT, MPI_SUM, w);
    case CT_EXSCAN:
        return MPI_Exscan(in, out, K, MPI_INT, MPI_SUM, w);
    case CT_ALLGATHERV:
        return MPI_Allgatherv(in, K, MPI_INT, out, counts, displs, MPI_INT, w);
    case CT_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(in, out, K, MPI_INT, MPI_SUM, w);
    default:
        return MPI_ERR_ARG;
    }
}

/* Input of start s: distinct per rank, element and start; the bcast's root fills out. */
static void fill(ct_coll coll, int s, int *in, int *out, int n)
{
    for (int i = 0; i < n; i++) {
        in[i] = rank * 100 + i + 1 + 1000 * s;
        out[i] = -1;
    }
    if (coll == CT_BCAST && rank == nprocs - 1)
        for (int i = 0; i < K; i++)
            out[i] = 7 * i + s + 1;
}

static void run_case(ct_coll coll, const char *alg)
{
    int in[MAXN * K], out[MAXN * K], ref_in[MAXN * K], ref[MAXN * K];
    int counts[MAXN], displs[MAXN];
    for (int r = 0; r < nprocs; r++) {
        counts[r] = K;
        displs[r] = r * K;
    }
    ct_options o;
    ct_options_init(&o);
    o.algorithm = alg;
    MPI_Request req = MPI_REQUEST_NULL;
    fill(coll, 0, in, out, MAXN * K);
    int rc = plan(coll, &o, in, out, counts, displs, &req);
    int n = coll == CT_ALLGATHERV ? nprocs * K : K;
    for (int s = 0; rc == MPI_SUCCESS && s < 3; s++) {
        cases++;
        fill(coll, s, in, out, MAXN * K);
        fill(coll, s, ref_in, ref, MAXN * K);
        if ((rc = ct_start(&req)) == MPI_SUCCESS)
            rc = ct_wait(&req, MPI_STATUS_IGNORE);
        native(coll, ref_in, ref, counts, displs);
        /* exscan: rank 0's output is undefined */
        if (rc == MPI_SUCCESS && !(coll == CT_EXSCAN && rank == 0) &&
            memcmp(out, ref, sizeof(int) * (size_t)n) != 0) {
            failures++;
            fprintf(stderr, "rank %d: %s_init/%s start %d: wrong result\n", rank,
                    ct_coll_name(coll), alg, s);
        }
    }
    if (rc != MPI_SUCCESS) {
        failures++;
        fprintf(stderr, "rank %d: %s_init/%s failed (%d)\n", rank, ct_coll_name(coll), alg, rc);
    }
    if (req != MPI_REQUEST_NULL && ct_request_free(&req) != MPI_SUCCESS)
        failures++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nprocs > MAXN)
        MPI_Abort(MPI_COMM_WORLD, 2);
    static const ct_coll colls[] = {CT_BCAST, CT_ALLREDUCE, CT_SCAN, CT_EXSCAN, CT_ALLGATHERV,
                                    CT_REDUCE_SCATTER_BLOCK};
    for (size_t k = 0; k < sizeof colls / sizeof *colls; k++)
        for (int i = 0; i < ct_algorithm_count(); i++) {
            const ct_algorithm_info *a = ct_algorithm_get(i);
            if (a->coll == colls[k] &&
                !(a->flags & (CT_ALG_HIERARCHICAL | CT_ALG_SHARED_MEMORY | CT_ALG_ALL_COUNTS |
                              CT_ALG_NATIVE)))
                run_case(colls[k], a->name);
        }
    /* native is MPI's own MPI_X_init to call: refused with MPI_ERR_ARG, no request made */
    int in[K] = {1, 2, 3}, out[K], cls = MPI_SUCCESS;
    ct_options o;
    ct_options_init(&o);
    o.algorithm = "native";
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = ct_allreduce_init(in, out, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &o, &req);
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_ARG || req != MPI_REQUEST_NULL) {
        failures++;
        fprintf(stderr, "rank %d: a native plan was not refused (%d)\n", rank, rc);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("public persistent: %d cases on %d ranks, %d failures\n", cases, nprocs, all);
    MPI_Finalize();
    return all != 0;
}
