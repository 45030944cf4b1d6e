/*
 * A plain MPI 4 program (no colltune header, built with the MPI compiler alone)
 * that makes a persistent collective of every operation colltune knows
 * (MPI_Bcast_init ... MPI_Exscan_init) and, in a second pass with an MPI 4, of
 * each one's _c form, then starts each one three times (MPI_Start with MPI_Wait, MPI_Startall
 * with MPI_Waitall, MPI_Start with an MPI_Test loop), refilling its input in
 * between, and checks every result against values it computes itself; then
 * frees them. On MPI_COMM_WORLD and on a split communicator. Prints each
 * rank's count of inits per operation (a _c init counts for its operation)
 * and "all ok". tests/python/test_dropin_persistent.py preloads the drop-in.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpi_test_util.h"

/* Persistent collectives: HAVE_PERSISTENT (mpi_test_util.h); their large-count (_c)
 * forms: MPI 4 only. */
#define HAVE_LARGE_COUNT (MPI_VERSION >= 4)

#define NOPS 16
static const char *const names[NOPS] = {
    "bcast",   "reduce",    "allreduce", "scatter",  "gather",
    "allgather", "alltoall", "barrier",  "allgatherv", "alltoallv",
    "gatherv", "scatterv",  "reduce_scatter_block", "reduce_scatter", "scan", "exscan"};
enum { BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, ALLGATHER, ALLTOALL, BARRIER, ALLGATHERV,
       ALLTOALLV, GATHERV, SCATTERV, RSB, RS, SCAN, EXSCAN };
static int ninits[NOPS], bad, wrank;
#define MAXN 64
#define K 3     /* elements a block */
#define GAP 2   /* untouched elements between the v-variants' blocks */

static void expect(int ok, const char *what, int i)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "rank %d: %s wrong at %d\n", wrank, what, i);
}

typedef struct bufs {
    int in[MAXN * K], out[MAXN * K * 4];
} bufs;

static bufs b[NOPS];
static int counts[MAXN], displs[MAXN], vcounts[MAXN], vdispls[MAXN];

/* Input of pass `it` for rank r, element k (distinct across starts). */
static int value(int it, int r, int k)
{
    return it * 1000 + r * 10 + k;
}

#if HAVE_PERSISTENT
#if HAVE_LARGE_COUNT
static MPI_Count c_counts[MAXN], c_vcounts[MAXN];
static MPI_Aint c_displs[MAXN], c_vdispls[MAXN];
#endif

static void make_inits(MPI_Comm comm, int large, int r, int n, MPI_Request *req)
{
    int root = n - 1;
    MPI_Info info = MPI_INFO_NULL;
    if (!large) {
        MPI_Bcast_init(b[BCAST].out, K, MPI_INT, root, comm, info, &req[BCAST]);
        MPI_Reduce_init(b[REDUCE].in, b[REDUCE].out, K, MPI_INT, MPI_SUM, root, comm, info,
                        &req[REDUCE]);
        MPI_Allreduce_init(b[ALLREDUCE].in, b[ALLREDUCE].out, K, MPI_INT, MPI_SUM, comm, info,
                           &req[ALLREDUCE]);
        MPI_Scatter_init(b[SCATTER].in, K, MPI_INT, b[SCATTER].out, K, MPI_INT, root, comm,
                         info, &req[SCATTER]);
        MPI_Gather_init(b[GATHER].in, K, MPI_INT, b[GATHER].out, K, MPI_INT, root, comm, info,
                        &req[GATHER]);
        MPI_Allgather_init(b[ALLGATHER].in, K, MPI_INT, b[ALLGATHER].out, K, MPI_INT, comm,
                           info, &req[ALLGATHER]);
        MPI_Alltoall_init(b[ALLTOALL].in, K, MPI_INT, b[ALLTOALL].out, K, MPI_INT, comm, info,
                          &req[ALLTOALL]);
        MPI_Allgatherv_init(b[ALLGATHERV].in, vcounts[r], MPI_INT, b[ALLGATHERV].out, vcounts,
                            vdispls, MPI_INT, comm, info, &req[ALLGATHERV]);
        MPI_Alltoallv_init(b[ALLTOALLV].in, counts, displs, MPI_INT, b[ALLTOALLV].out, counts,
                           displs, MPI_INT, comm, info, &req[ALLTOALLV]);
        MPI_Gatherv_init(b[GATHERV].in, vcounts[r], MPI_INT, b[GATHERV].out, vcounts, vdispls,
                         MPI_INT, root, comm, info, &req[GATHERV]);
        MPI_Scatterv_init(b[SCATTERV].in, vcounts, vdispls, MPI_INT, b[SCATTERV].out,
                          vcounts[r], MPI_INT, root, comm, info, &req[SCATTERV]);
        MPI_Reduce_scatter_block_init(b[RSB].in, b[RSB].out, K, MPI_INT, MPI_SUM, comm, info,
                                      &req[RSB]);
        MPI_Reduce_scatter_init(b[RS].in, b[RS].out, vcounts, MPI_INT, MPI_SUM, comm, info,
                                &req[RS]);
        MPI_Scan_init(b[SCAN].in, b[SCAN].out, K, MPI_INT, MPI_SUM, comm, info, &req[SCAN]);
        MPI_Exscan_init(b[EXSCAN].in, b[EXSCAN].out, K, MPI_INT, MPI_SUM, comm, info,
                        &req[EXSCAN]);
    } else {
#if HAVE_LARGE_COUNT
        MPI_Bcast_init_c(b[BCAST].out, K, MPI_INT, root, comm, info, &req[BCAST]);
        MPI_Reduce_init_c(b[REDUCE].in, b[REDUCE].out, K, MPI_INT, MPI_SUM, root, comm, info,
                          &req[REDUCE]);
        MPI_Allreduce_init_c(b[ALLREDUCE].in, b[ALLREDUCE].out, K, MPI_INT, MPI_SUM, comm,
                             info, &req[ALLREDUCE]);
        MPI_Scatter_init_c(b[SCATTER].in, K, MPI_INT, b[SCATTER].out, K, MPI_INT, root, comm,
                           info, &req[SCATTER]);
        MPI_Gather_init_c(b[GATHER].in, K, MPI_INT, b[GATHER].out, K, MPI_INT, root, comm,
                          info, &req[GATHER]);
        MPI_Allgather_init_c(b[ALLGATHER].in, K, MPI_INT, b[ALLGATHER].out, K, MPI_INT, comm,
                             info, &req[ALLGATHER]);
        MPI_Alltoall_init_c(b[ALLTOALL].in, K, MPI_INT, b[ALLTOALL].out, K, MPI_INT, comm,
                            info, &req[ALLTOALL]);
        MPI_Allgatherv_init_c(b[ALLGATHERV].in, vcounts[r], MPI_INT, b[ALLGATHERV].out,
                              c_vcounts, c_vdispls, MPI_INT, comm, info, &req[ALLGATHERV]);
        MPI_Alltoallv_init_c(b[ALLTOALLV].in, c_counts, c_displs, MPI_INT, b[ALLTOALLV].out,
                             c_counts, c_displs, MPI_INT, comm, info, &req[ALLTOALLV]);
        MPI_Gatherv_init_c(b[GATHERV].in, vcounts[r], MPI_INT, b[GATHERV].out, c_vcounts,
                           c_vdispls, MPI_INT, root, comm, info, &req[GATHERV]);
        MPI_Scatterv_init_c(b[SCATTERV].in, c_vcounts, c_vdispls, MPI_INT, b[SCATTERV].out,
                            vcounts[r], MPI_INT, root, comm, info, &req[SCATTERV]);
        MPI_Reduce_scatter_block_init_c(b[RSB].in, b[RSB].out, K, MPI_INT, MPI_SUM, comm, info,
                                        &req[RSB]);
        MPI_Reduce_scatter_init_c(b[RS].in, b[RS].out, c_vcounts, MPI_INT, MPI_SUM, comm, info,
                                  &req[RS]);
        MPI_Scan_init_c(b[SCAN].in, b[SCAN].out, K, MPI_INT, MPI_SUM, comm, info, &req[SCAN]);
        MPI_Exscan_init_c(b[EXSCAN].in, b[EXSCAN].out, K, MPI_INT, MPI_SUM, comm, info,
                          &req[EXSCAN]);
#endif
    }
    MPI_Barrier_init(comm, info, &req[BARRIER]); /* no _c form */
    for (int op = 0; op < NOPS; op++)
        ninits[op]++;
}

/* Every input refilled for pass it; every output to -1 (the gaps must stay). */
static void fill(int it, int r, int n)
{
    for (int op = 0; op < NOPS; op++) {
        for (int k = 0; k < MAXN * K; k++)
            b[op].in[k] = value(it, r, k);
        for (int k = 0; k < MAXN * K * 4; k++)
            b[op].out[k] = -1;
    }
    if (r != n - 1)
        for (int k = 0; k < K; k++)
            b[BCAST].out[k] = -5; /* overwritten by the root's */
    else
        for (int k = 0; k < K; k++)
            b[BCAST].out[k] = value(it, r, k);
}

static int sum_over(int it, int lo, int hi, int k) /* sum of value(it, q, k), q in [lo, hi) */
{
    int s = 0;
    for (int q = lo; q < hi; q++)
        s += value(it, q, k);
    return s;
}

static void check(int it, int r, int n)
{
    int root = n - 1;
    for (int k = 0; k < K; k++) {
        expect(b[BCAST].out[k] == value(it, root, k), "bcast", k);
        if (r == root)
            expect(b[REDUCE].out[k] == sum_over(it, 0, n, k), "reduce", k);
        expect(b[ALLREDUCE].out[k] == sum_over(it, 0, n, k), "allreduce", k);
        expect(b[SCATTER].out[k] == value(it, root, r * K + k), "scatter", k);
        expect(b[SCAN].out[k] == sum_over(it, 0, r + 1, k), "scan", k);
        if (r > 0)
            expect(b[EXSCAN].out[k] == sum_over(it, 0, r, k), "exscan", k);
        expect(b[RSB].out[k] == sum_over(it, 0, n, r * K + k), "reduce_scatter_block", k);
    }
    for (int q = 0; q < n; q++)
        for (int k = 0; k < K; k++) {
            if (r == root)
                expect(b[GATHER].out[q * K + k] == value(it, q, k), "gather", q);
            expect(b[ALLGATHER].out[q * K + k] == value(it, q, k), "allgather", q);
            expect(b[ALLTOALL].out[q * K + k] == value(it, q, r * K + k), "alltoall", q);
        }
    /* The v-variants: block q holds q % 3 elements at vdispls[q], gaps stay -1. */
    for (int q = 0; q < n; q++) {
        for (int k = 0; k < vcounts[q]; k++) {
            expect(b[ALLGATHERV].out[vdispls[q] + k] == value(it, q, k), "allgatherv", q);
            if (r == root)
                expect(b[GATHERV].out[vdispls[q] + k] == value(it, q, k), "gatherv", q);
        }
        for (int k = 0; k < counts[q]; k++)
            expect(b[ALLTOALLV].out[displs[q] + k] == value(it, q, displs[r] + k), "alltoallv",
                   q);
        if (q > 0)
            for (int k = vdispls[q] + vcounts[q]; k < vdispls[q - 1]; k++)
                expect(b[ALLGATHERV].out[k] == -1, "allgatherv gap", k);
    }
    for (int k = 0; k < vcounts[r]; k++)
        expect(b[SCATTERV].out[k] == value(it, root, vdispls[r] + k), "scatterv", k);
    int off = 0;
    for (int q = 0; q < r; q++)
        off += vcounts[q];
    for (int k = 0; k < vcounts[r]; k++)
        expect(b[RS].out[k] == sum_over(it, 0, n, off + k), "reduce_scatter", k);
}

static void run(MPI_Comm comm, int large)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int q = 0; q < n; q++) {
        counts[q] = K;
        displs[q] = q * K;
        vcounts[q] = q % 3; /* zero on some ranks */
    }
    for (int q = n - 1, off = 1; q >= 0; q--) { /* reverse rank order, with gaps */
        vdispls[q] = off;
        off += vcounts[q] + GAP;
    }
#if HAVE_LARGE_COUNT
    for (int q = 0; q < n; q++) {
        c_counts[q] = counts[q];
        c_displs[q] = displs[q];
        c_vcounts[q] = vcounts[q];
        c_vdispls[q] = vdispls[q];
    }
#endif
    MPI_Request req[NOPS];
    fill(0, r, n); /* buffers set before the init as a program would; refilled before each start */
    make_inits(comm, large, r, n, req);
    for (int it = 1; it <= 3; it++) {
        fill(it, r, n);
        if (it == 1) {
            for (int op = 0; op < NOPS; op++) {
                MPI_Start(&req[op]);
                MPI_Wait(&req[op], MPI_STATUS_IGNORE);
            }
        } else if (it == 2) {
            MPI_Startall(NOPS, req);
            MPI_Waitall(NOPS, req, MPI_STATUSES_IGNORE);
        } else {
            for (int op = 0; op < NOPS; op++)
                MPI_Start(&req[op]);
            for (int op = NOPS - 1; op >= 0; op--) {
                int done = 0;
                while (!done)
                    MPI_Test(&req[op], &done, MPI_STATUS_IGNORE);
            }
        }
        check(it, r, n);
        for (int op = 0; op < NOPS; op++)
            expect(req[op] != MPI_REQUEST_NULL, "handle kept after completion", op);
    }
    /* An inactive persistent request completes at once, with an empty status. */
    MPI_Status st;
    int flag = 0;
    MPI_Test(&req[BCAST], &flag, &st);
    expect(flag == 1, "test of an inactive request", 0);
    for (int op = 0; op < NOPS; op++)
        MPI_Request_free(&req[op]);
    for (int op = 0; op < NOPS; op++)
        expect(req[op] == MPI_REQUEST_NULL, "freed handle", op);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAXN)
        MPI_Abort(MPI_COMM_WORLD, 2);
#if HAVE_PERSISTENT
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    for (int large = 0; large <= HAVE_LARGE_COUNT; large++) {
        run(MPI_COMM_WORLD, large);
        run(half, large);
    }
    MPI_Comm_free(&half);
#endif
    char line[512];
    int len = snprintf(line, sizeof line, "rank %d inits", wrank);
    for (int i = 0; i < NOPS; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=%d", names[i], ninits[i]);
    printf("%s\n", line);
    int total;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("persistent forms: %s\nlarge-count forms: %s\n%s\n",
               HAVE_PERSISTENT ? "yes" : "no", HAVE_LARGE_COUNT ? "yes" : "no",
               total ? "FAILED" : "all ok");
    MPI_Finalize();
    return total != 0;
}
