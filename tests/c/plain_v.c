/*
 * A plain MPI program (no colltune header, built with the MPI compiler alone)
 * that calls MPI_Allgatherv, MPI_Alltoallv, MPI_Gatherv, MPI_Scatterv,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and MPI_Exscan, and
 * their _c forms where the MPI has them, and the non-blocking MPI_Ibarrier,
 * MPI_Ireduce_scatter_block, MPI_Iscan and MPI_Iexscan (_c too), MPI_Iallgatherv,
 * MPI_Ialltoallv, MPI_Igatherv, MPI_Iscatterv and MPI_Ireduce_scatter (int counts
 * in both passes), on MPI_COMM_WORLD and on a split
 * communicator, checking every result against values it computes itself.
 * Prints each rank's count of calls per operation (a _c call counts for its
 * operation) and "all ok". tests/python/test_dropin_v.py preloads the drop-in.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOPS 17
static const char *const names[NOPS] = {"allgatherv", "alltoallv", "gatherv", "scatterv",
                                        "reduce_scatter_block", "reduce_scatter", "scan",
                                        "exscan", "ibarrier", "ireduce_scatter_block",
                                        "iscan", "iexscan", "iallgatherv", "ialltoallv",
                                        "igatherv", "iscatterv", "ireduce_scatter"};
static int ncalls[NOPS], bad, wrank;
#define MAXN 64
#define GAP 2

static void expect(int ok, const char *what, int i)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "rank %d: %s wrong at %d\n", wrank, what, i);
}

/* Counts r % 3 + 1, displacements in reverse rank order with gaps. */
static void blocks(int n, int *counts, int *displs)
{
    int off = 1;
    for (int i = n - 1; i >= 0; i--) {
        counts[i] = i % 3 + 1;
        displs[i] = off;
        off += counts[i] + GAP;
    }
}

static void run(MPI_Comm comm, int large)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    int counts[MAXN], displs[MAXN], buf[4 * MAXN * 8], in[4 * MAXN];
    blocks(n, counts, displs);
    int total = displs[0] + counts[0] + GAP;
#if MPI_VERSION >= 4
    MPI_Count ccounts[MAXN], crc[MAXN];
    MPI_Aint cdispls[MAXN], crd[MAXN];
    for (int i = 0; i < n; i++) {
        ccounts[i] = counts[i];
        cdispls[i] = displs[i];
    }
#else
    (void)large;
#endif

    /* Allgatherv */
    for (int k = 0; k < counts[r]; k++)
        in[k] = r * 100 + k;
    for (int k = 0; k < total; k++)
        buf[k] = -1;
#if MPI_VERSION >= 4
    if (large)
        MPI_Allgatherv_c(in, counts[r], MPI_INT, buf, ccounts, cdispls, MPI_INT, comm);
    else
#endif
        MPI_Allgatherv(in, counts[r], MPI_INT, buf, counts, displs, MPI_INT, comm);
    ncalls[0]++;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < counts[i]; k++)
            expect(buf[displs[i] + k] == i * 100 + k, "allgatherv", i);
    expect(buf[0] == -1, "allgatherv gap", 0);

    /* Alltoallv: r sends (r + j) % 3 + 1 ints to j, at j * 4 */
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    for (int j = 0; j < n; j++) {
        sc[j] = (r + j) % 3 + 1;
        sd[j] = 4 * j;
        rc[j] = (j + r) % 3 + 1;
        rd[j] = 4 * (n - 1 - j);
        for (int k = 0; k < sc[j]; k++)
            in[sd[j] + k] = r * 1000 + j * 10 + k;
    }
    for (int k = 0; k < 4 * n; k++)
        buf[k] = -1;
#if MPI_VERSION >= 4
    if (large) {
        MPI_Count csc[MAXN];
        MPI_Aint csd[MAXN];
        for (int j = 0; j < n; j++) {
            csc[j] = sc[j];
            csd[j] = sd[j];
            crc[j] = rc[j];
            crd[j] = rd[j];
        }
        MPI_Alltoallv_c(in, csc, csd, MPI_INT, buf, crc, crd, MPI_INT, comm);
    } else
#endif
        MPI_Alltoallv(in, sc, sd, MPI_INT, buf, rc, rd, MPI_INT, comm);
    ncalls[1]++;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < rc[i]; k++)
            expect(buf[rd[i] + k] == i * 1000 + r * 10 + k, "alltoallv", i);

    /* Gatherv to rank 0 */
    for (int k = 0; k < counts[r]; k++)
        in[k] = r * 100 + k + 7;
    for (int k = 0; k < total; k++)
        buf[k] = -1;
#if MPI_VERSION >= 4
    if (large)
        MPI_Gatherv_c(in, counts[r], MPI_INT, buf, ccounts, cdispls, MPI_INT, 0, comm);
    else
#endif
        MPI_Gatherv(in, counts[r], MPI_INT, buf, counts, displs, MPI_INT, 0, comm);
    ncalls[2]++;
    if (r == 0)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < counts[i]; k++)
                expect(buf[displs[i] + k] == i * 100 + k + 7, "gatherv", i);

    /* Scatterv from the last rank */
    int root = n - 1;
    for (int k = 0; k < total; k++)
        in[k] = k * 3 + 1;
    for (int k = 0; k < 4; k++)
        buf[k] = -1;
#if MPI_VERSION >= 4
    if (large)
        MPI_Scatterv_c(in, ccounts, cdispls, MPI_INT, buf, counts[r], MPI_INT, root, comm);
    else
#endif
        MPI_Scatterv(in, counts, displs, MPI_INT, buf, counts[r], MPI_INT, root, comm);
    ncalls[3]++;
    for (int k = 0; k < counts[r]; k++)
        expect(buf[k] == (displs[r] + k) * 3 + 1, "scatterv", k);

    /* Reduce_scatter_block: 3 per block, MPI_SUM of r + k */
    for (int k = 0; k < 3 * n; k++)
        in[k] = r + k;
#if MPI_VERSION >= 4
    if (large)
        MPI_Reduce_scatter_block_c(in, buf, 3, MPI_INT, MPI_SUM, comm);
    else
#endif
        MPI_Reduce_scatter_block(in, buf, 3, MPI_INT, MPI_SUM, comm);
    ncalls[4]++;
    for (int k = 0; k < 3; k++)
        expect(buf[k] == n * (n - 1) / 2 + n * (3 * r + k), "reduce_scatter_block", k);

    /* Reduce_scatter: block i has i % 3 + 1, in place */
    int off = 0, mine = 0;
    for (int i = 0; i < n; i++) {
        if (i == r)
            mine = off;
        off += counts[i];
    }
    for (int k = 0; k < off; k++)
        buf[k] = r + k;
#if MPI_VERSION >= 4
    if (large)
        MPI_Reduce_scatter_c(MPI_IN_PLACE, buf, ccounts, MPI_INT, MPI_SUM, comm);
    else
#endif
        MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, MPI_INT, MPI_SUM, comm);
    ncalls[5]++;
    for (int k = 0; k < counts[r]; k++)
        expect(buf[k] == n * (n - 1) / 2 + n * (mine + k), "reduce_scatter", k);

    /* Scan and exscan of r + k + 1, 5 elements */
    for (int k = 0; k < 5; k++)
        in[k] = r + k + 1;
#if MPI_VERSION >= 4
    if (large)
        MPI_Scan_c(in, buf, 5, MPI_INT, MPI_SUM, comm);
    else
#endif
        MPI_Scan(in, buf, 5, MPI_INT, MPI_SUM, comm);
    ncalls[6]++;
    for (int k = 0; k < 5; k++)
        expect(buf[k] == r * (r + 1) / 2 + (r + 1) * (k + 1), "scan", k);
#if MPI_VERSION >= 4
    if (large)
        MPI_Exscan_c(in, buf, 5, MPI_INT, MPI_SUM, comm);
    else
#endif
        MPI_Exscan(in, buf, 5, MPI_INT, MPI_SUM, comm);
    ncalls[7]++;
    if (r > 0)
        for (int k = 0; k < 5; k++)
            expect(buf[k] == (r - 1) * r / 2 + r * (k + 1), "exscan", k);

    /* The non-blocking ones, each completed by MPI_Wait. */
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[8]++;
    for (int k = 0; k < 3 * n; k++)
        in[k] = r + k;
#if MPI_VERSION >= 4
    if (large)
        MPI_Ireduce_scatter_block_c(in, buf, 3, MPI_INT, MPI_SUM, comm, &req);
    else
#endif
        MPI_Ireduce_scatter_block(in, buf, 3, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[9]++;
    for (int k = 0; k < 3; k++)
        expect(buf[k] == n * (n - 1) / 2 + n * (3 * r + k), "ireduce_scatter_block", k);
    for (int k = 0; k < 5; k++)
        in[k] = r + k + 1;
#if MPI_VERSION >= 4
    if (large)
        MPI_Iscan_c(in, buf, 5, MPI_INT, MPI_SUM, comm, &req);
    else
#endif
        MPI_Iscan(in, buf, 5, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[10]++;
    for (int k = 0; k < 5; k++)
        expect(buf[k] == r * (r + 1) / 2 + (r + 1) * (k + 1), "iscan", k);
#if MPI_VERSION >= 4
    if (large)
        MPI_Iexscan_c(in, buf, 5, MPI_INT, MPI_SUM, comm, &req);
    else
#endif
        MPI_Iexscan(in, buf, 5, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[11]++;
    if (r > 0)
        for (int k = 0; k < 5; k++)
            expect(buf[k] == (r - 1) * r / 2 + r * (k + 1), "iexscan", k);
}

/* The non-blocking v-forms, each started, left a moment with another call in
 * between (the rank's own point-to-point to itself), then waited; the same
 * layouts and checks as run()'s blocking calls. */
static void run_nonblocking_v(MPI_Comm comm)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    int counts[MAXN], displs[MAXN], buf[4 * MAXN * 8], in[4 * MAXN], self = 0, got = -1;
    blocks(n, counts, displs);
    int total = displs[0] + counts[0] + GAP;
    MPI_Request req;

    for (int k = 0; k < counts[r]; k++)
        in[k] = r * 100 + k;
    for (int k = 0; k < total; k++)
        buf[k] = -1;
    MPI_Iallgatherv(in, counts[r], MPI_INT, buf, counts, displs, MPI_INT, comm, &req);
    MPI_Sendrecv(&self, 1, MPI_INT, r, 9, &got, 1, MPI_INT, r, 9, comm, MPI_STATUS_IGNORE);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[12]++;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < counts[i]; k++)
            expect(buf[displs[i] + k] == i * 100 + k, "iallgatherv", i);
    expect(buf[0] == -1, "iallgatherv gap", 0);

    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    for (int j = 0; j < n; j++) {
        sc[j] = (r + j) % 3 + 1;
        sd[j] = 4 * j;
        rc[j] = (j + r) % 3 + 1;
        rd[j] = 4 * (n - 1 - j);
        for (int k = 0; k < sc[j]; k++)
            in[sd[j] + k] = r * 1000 + j * 10 + k;
    }
    for (int k = 0; k < 4 * n; k++)
        buf[k] = -1;
    MPI_Ialltoallv(in, sc, sd, MPI_INT, buf, rc, rd, MPI_INT, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[13]++;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < rc[i]; k++)
            expect(buf[rd[i] + k] == i * 1000 + r * 10 + k, "ialltoallv", i);

    int root = n / 2;
    for (int k = 0; k < counts[r]; k++)
        in[k] = r * 100 + k + 7;
    for (int k = 0; k < total; k++)
        buf[k] = -1;
    MPI_Igatherv(in, counts[r], MPI_INT, buf, counts, displs, MPI_INT, root, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[14]++;
    if (r == root)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < counts[i]; k++)
                expect(buf[displs[i] + k] == i * 100 + k + 7, "igatherv", i);

    for (int k = 0; k < total; k++)
        in[k] = k * 3 + 1;
    for (int k = 0; k < 4; k++)
        buf[k] = -1;
    MPI_Iscatterv(in, counts, displs, MPI_INT, buf, counts[r], MPI_INT, root, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[15]++;
    for (int k = 0; k < counts[r]; k++)
        expect(buf[k] == (displs[r] + k) * 3 + 1, "iscatterv", k);

    int off = 0, mine = 0;
    for (int i = 0; i < n; i++) {
        if (i == r)
            mine = off;
        off += counts[i];
    }
    for (int k = 0; k < off; k++)
        in[k] = r + k;
    MPI_Ireduce_scatter(in, buf, counts, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ncalls[16]++;
    for (int k = 0; k < counts[r]; k++)
        expect(buf[k] == n * (n - 1) / 2 + n * (mine + k), "ireduce_scatter", k);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAXN)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    for (int large = 0; large <= (MPI_VERSION >= 4); large++) {
        run(MPI_COMM_WORLD, large);
        run(half, large);
        run_nonblocking_v(MPI_COMM_WORLD);
        run_nonblocking_v(half);
    }
    MPI_Comm_free(&half);
    char line[512];
    int len = snprintf(line, sizeof line, "rank %d calls", wrank);
    for (int i = 0; i < NOPS; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=%d", names[i], ncalls[i]);
    printf("%s\n", line);
    int total;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("large-count forms: %s\n%s\n", MPI_VERSION >= 4 ? "yes" : "no",
               total ? "FAILED" : "all ok");
    MPI_Finalize();
    return total != 0;
}
