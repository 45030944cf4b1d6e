/*
 * An unmodified MPI program with known traffic, for the monitor's tests
 * (tests/python/test_monitor.py): a ring (3 messages of 100 ints to the next
 * rank), an all-to-all by point-to-point (one 10-byte message to every other
 * rank), a one-to-many (rank 0 sends 1 KiB to every other rank), then one
 * MPI_Bcast of 4096 bytes from rank 0 (colltune's when forced) and one
 * MPI_Allreduce of 8 ints (native unless forced); then receives of other kinds: on
 * communicators split by rank parity (in reverse order, so their ranks are not the
 * world's), 8 bytes to the next rank by MPI_Issend, received by MPI_Irecv from
 * MPI_ANY_SOURCE and completed through MPI_Waitany and MPI_Testsome; 4 bytes to the
 * next rank of a reversed world, received from MPI_ANY_SOURCE on a communicator freed
 * before the receive completes; and 3 ints from
 * rank 1 to rank 0 received by MPI_Mprobe and MPI_Mrecv. Prints "patterns ok".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int ring[100], got[100];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 100; i++)
            ring[i] = rank * 1000 + k;
        MPI_Sendrecv(ring, 100, MPI_INT, (rank + 1) % n, k, got, 100, MPI_INT,
                     (rank + n - 1) % n, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    char small[10] = {0}, in[10];
    MPI_Request reqs[2];
    for (int d = 1; d < n; d++) {
        int to = (rank + d) % n, from = (rank + n - d) % n;
        MPI_Irecv(in, 10, MPI_CHAR, from, 50, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(small, 10, MPI_CHAR, to, 50, MPI_COMM_WORLD, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }
    char kib[1024];
    memset(kib, rank, sizeof kib);
    if (rank == 0)
        for (int j = 1; j < n; j++)
            MPI_Send(kib, 1024, MPI_BYTE, j, 60, MPI_COMM_WORLD);
    else
        MPI_Recv(kib, 1024, MPI_BYTE, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char b[4096];
    memset(b, rank == 0 ? 7 : 0, sizeof b);
    MPI_Bcast(b, 4096, MPI_BYTE, 0, MPI_COMM_WORLD);
    int x[8] = {1, 1, 1, 1, 1, 1, 1, 1}, y[8];
    MPI_Allreduce(x, y, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    double eight = rank, from_prev = -1;
    if (hn > 1) {
        MPI_Irecv(&from_prev, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 70, half, &reqs[0]);
        MPI_Issend(&eight, 1, MPI_DOUBLE, (hr + 1) % hn, 70, half, &reqs[1]);
        int idx, outcount = 0, indices[2];
        MPI_Waitany(2, reqs, &idx, MPI_STATUS_IGNORE);
        while (outcount != MPI_UNDEFINED)
            MPI_Testsome(2, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&half);
    /* A receive still pending when its communicator is freed (MPI lets it complete): 4
     * bytes to the next rank of a world in reverse order, from MPI_ANY_SOURCE, the
     * communicator freed before the wait, and the freed memory reused meanwhile. */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
    int rr, late_in = -1, late_out = rank;
    MPI_Comm_rank(rev, &rr);
    if (n > 1) {
        MPI_Irecv(&late_in, 1, MPI_INT, MPI_ANY_SOURCE, 90, rev, &reqs[0]);
        MPI_Isend(&late_out, 1, MPI_INT, (rr + 1) % n, 90, rev, &reqs[1]);
    }
    MPI_Comm_free(&rev);
    for (int k = 0; k < 8; k++) {
        int *junk = malloc(sizeof(int) * (size_t)(n + 1));
        if (junk) {
            memset(junk, 0x7f, sizeof(int) * (size_t)(n + 1));
            free(junk);
        }
    }
    if (n > 1)
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    int three[3] = {rank, rank, rank};
    if (rank == 1)
        MPI_Send(three, 3, MPI_INT, 0, 80, MPI_COMM_WORLD);
    if (rank == 0 && n > 1) {
        MPI_Message msg;
        MPI_Mprobe(MPI_ANY_SOURCE, 80, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
        MPI_Mrecv(three, 3, MPI_INT, &msg, MPI_STATUS_IGNORE);
    }
    int ok = (rank != 0 || n < 2 || three[2] == 1) && (hn < 2 || from_prev >= 0) &&
             (n < 2 || late_in == (rank + 1) % n) &&
             got[0] == ((rank + n - 1) % n) * 1000 + 2 && b[4095] == 7 && y[7] == n;
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0 && all)
        printf("patterns ok\n");
    MPI_Finalize();
    return all ? 0 : 1;
}
