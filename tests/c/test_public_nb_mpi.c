/*
 * The public non-blocking collectives the generated bindings added (issue 35):
 * ct_iallgather, ct_ialltoall, ct_iallgatherv, ct_ialltoallv, ct_igatherv,
 * ct_iscatterv and ct_ireduce_scatter against the MPI library's own blocking
 * collective on the same inputs.
 *
 * Each runs with the automatic choice (opts NULL: native without a table) and
 * with every colltune algorithm of its operation that can start a non-blocking
 * call anywhere (not the hierarchical or shared-memory ones, which depend on the
 * node layout, nor those that broadcast the counts first: colltune refuses them
 * non-blocking), every root, uneven counts with a zero, displacements in reverse
 * rank order with gaps (the gaps must come out untouched), MPI_INT (reduce_scatter:
 * MPI_SUM). Every other case is completed with ct_wait, the others with a ct_test
 * loop. The whole receive buffers are compared. Prints the cases and exits nonzero
 * on any difference or error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"

#define SENTINEL (-7777)
#define MAXN 16
#define MAXC 4
#define BUF (MAXN * MAXN * (MAXC + 2) + 8)

static int rank, nprocs, failures, cases;

static int input(int r, int i) { return r * 1000 + i + 1; }

/* What rank r sends to (or contributes for) rank i: 0 to 3 elements, some zero. */
static int count_of(int r, int i) { return (r + 2 * i) % 4; }

/* Displacements in reverse rank order with gaps of one element. */
static void gap_displs(const int *counts, int *displs)
{
    int off = 1;
    for (int i = nprocs - 1; i >= 0; i--) {
        displs[i] = off;
        off += counts[i] + 1;
    }
}

static void fill(int *b, int n, int v)
{
    for (int i = 0; i < n; i++)
        b[i] = v;
}

static void complete(MPI_Request *req)
{
    if (cases % 2) {
        ct_wait(req, MPI_STATUS_IGNORE);
        return;
    }
    int flag = 0;
    while (!flag)
        ct_test(req, &flag, MPI_STATUS_IGNORE);
}

/* One case: coll with algorithm alg (NULL: automatic) at root. */
static void run_case(ct_coll coll, const char *alg, int root)
{
    ct_options o, *opts = NULL;
    if (alg) {
        ct_options_init(&o);
        o.algorithm = alg;
        opts = &o;
    }
    static int send[BUF], want[BUF], got[BUF];
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    MPI_Request req = MPI_REQUEST_NULL;
    int rcode = MPI_SUCCESS, n = nprocs;
    fill(send, BUF, SENTINEL);
    fill(want, BUF, SENTINEL);
    fill(got, BUF, SENTINEL);
    for (int i = 0; i < BUF; i++)
        send[i] = input(rank, i);
    MPI_Comm w = MPI_COMM_WORLD;
    switch (coll) {
    case CT_ALLGATHER:
        MPI_Allgather(send, 3, MPI_INT, want, 3, MPI_INT, w);
        rcode = ct_iallgather(send, 3, MPI_INT, got, 3, MPI_INT, w, opts, &req);
        break;
    case CT_ALLTOALL:
        MPI_Alltoall(send, 2, MPI_INT, want, 2, MPI_INT, w);
        rcode = ct_ialltoall(send, 2, MPI_INT, got, 2, MPI_INT, w, opts, &req);
        break;
    case CT_ALLGATHERV:
        for (int i = 0; i < n; i++)
            rc[i] = count_of(i, 0);
        gap_displs(rc, rd);
        MPI_Allgatherv(send, rc[rank], MPI_INT, want, rc, rd, MPI_INT, w);
        rcode = ct_iallgatherv(send, rc[rank], MPI_INT, got, rc, rd, MPI_INT, w, opts, &req);
        break;
    case CT_ALLTOALLV:
        for (int i = 0; i < n; i++) {
            sc[i] = count_of(rank, i);
            rc[i] = count_of(i, rank);
        }
        gap_displs(sc, sd);
        gap_displs(rc, rd);
        MPI_Alltoallv(send, sc, sd, MPI_INT, want, rc, rd, MPI_INT, w);
        rcode = ct_ialltoallv(send, sc, sd, MPI_INT, got, rc, rd, MPI_INT, w, opts, &req);
        break;
    case CT_GATHERV:
        for (int i = 0; i < n; i++)
            rc[i] = count_of(i, root);
        gap_displs(rc, rd);
        MPI_Gatherv(send, rc[rank], MPI_INT, want, rc, rd, MPI_INT, root, w);
        rcode = ct_igatherv(send, rc[rank], MPI_INT, got, rc, rd, MPI_INT, root, w, opts, &req);
        break;
    case CT_SCATTERV:
        for (int i = 0; i < n; i++)
            sc[i] = count_of(root, i);
        gap_displs(sc, sd);
        MPI_Scatterv(send, sc, sd, MPI_INT, want, sc[rank], MPI_INT, root, w);
        rcode = ct_iscatterv(send, sc, sd, MPI_INT, got, sc[rank], MPI_INT, root, w, opts, &req);
        break;
    case CT_REDUCE_SCATTER:
        for (int i = 0; i < n; i++)
            rc[i] = count_of(0, i);
        MPI_Reduce_scatter(send, want, rc, MPI_INT, MPI_SUM, w);
        rcode = ct_ireduce_scatter(send, got, rc, MPI_INT, MPI_SUM, w, opts, &req);
        break;
    default:
        return;
    }
    cases++;
    if (rcode == MPI_SUCCESS)
        complete(&req);
    if (rcode != MPI_SUCCESS || memcmp(want, got, sizeof want) != 0) {
        failures++;
        if (failures <= 20)
            fprintf(stderr, "FAIL rank %d/%d: %s/%s root %d (rc %d)\n", rank, nprocs,
                    ct_coll_name(coll), alg ? alg : "auto", root, rcode);
    }
}

/* Whether alg can start a non-blocking call on any layout (see the head comment). */
static int portable(const ct_algorithm_info *a)
{
    return !(a->flags & (CT_ALG_HIERARCHICAL | CT_ALG_SHARED_MEMORY | CT_ALG_ALL_COUNTS |
                         CT_ALG_NATIVE));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nprocs > MAXN) {
        if (rank == 0)
            fprintf(stderr, "at most %d ranks\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const ct_coll colls[] = {CT_ALLGATHER, CT_ALLTOALL,  CT_ALLGATHERV,    CT_ALLTOALLV,
                                    CT_GATHERV,   CT_SCATTERV,  CT_REDUCE_SCATTER};
    for (size_t k = 0; k < sizeof colls / sizeof *colls; k++) {
        ct_coll coll = colls[k];
        int rooted = coll == CT_GATHERV || coll == CT_SCATTERV;
        for (int root = 0; root < (rooted ? nprocs : 1); root++) {
            run_case(coll, NULL, root);
            for (int i = 0; i < ct_algorithm_count(); i++) {
                const ct_algorithm_info *a = ct_algorithm_get(i);
                if (a->coll == coll && portable(a))
                    run_case(coll, a->name, root);
            }
        }
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("public non-blocking: %d cases on %d ranks, %d failures\n", cases, nprocs, all);
    MPI_Finalize();
    return all != 0;
}
