/*
 * An unmodified MPI program (plain mpicc, no colltune header) that calls the
 * non-blocking collectives MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce,
 * MPI_Iscatter, MPI_Igather, MPI_Iallgather and MPI_Ialltoall and completes them every way an application
 * does: MPI_Wait, an MPI_Test loop, MPI_Waitall together with its own
 * point-to-point requests, MPI_Waitany, and several in flight at once on
 * MPI_COMM_WORLD and a duplicate, waited in reverse order. Results are checked
 * against values computed by hand (not against MPI, which the drop-in may be
 * serving too). Prints "rank R nbc Ibcast=.. Ireduce=.. Iallreduce=..
 * Iscatter=.. Igather=.. Iallgather=.. Ialltoall=.." (its own count of calls) and "all ok" at rank 0.
 * tests/python/test_dropin.py runs it with libcolltune_pmpi preloaded.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, bad, ncalls[7];

static int value(int r, int i) { return (r * 131 + i * 7) % 1000; }

static void check(int ok, const char *what, int root, int count)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "rank %d: wrong %s (root %d, count %d)\n", rank, what, root, count);
}

static void finish(MPI_Request *req, int mode)
{
    int flag = 0, idx;
    MPI_Request all[3];
    int out = rank, in = -1;
    switch (mode % 4) {
    case 0:
        MPI_Wait(req, MPI_STATUS_IGNORE);
        break;
    case 1:
        while (!flag)
            MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        break;
    case 2:
        all[0] = *req;
        MPI_Irecv(&in, 1, MPI_INT, (rank + nprocs - 1) % nprocs, 7, MPI_COMM_WORLD, &all[1]);
        MPI_Isend(&out, 1, MPI_INT, (rank + 1) % nprocs, 7, MPI_COMM_WORLD, &all[2]);
        MPI_Waitall(3, all, MPI_STATUSES_IGNORE);
        check(in == (rank + nprocs - 1) % nprocs, "ring beside the collective", 0, 1);
        *req = all[0];
        break;
    default:
        MPI_Waitany(1, req, &idx, MPI_STATUS_IGNORE);
        break;
    }
    check(*req == MPI_REQUEST_NULL, "request left after completion", 0, 0);
}

static void round_of(int root, int count, int *mode)
{
    int n = nprocs, *a = malloc(sizeof(int) * (size_t)count * (size_t)n);
    int *b = malloc(sizeof(int) * (size_t)count * (size_t)n);
    MPI_Request req;
    /* bcast */
    for (int i = 0; i < count; i++)
        a[i] = rank == root ? value(root, i) : -1;
    MPI_Ibcast(a, count, MPI_INT, root, MPI_COMM_WORLD, &req);
    ncalls[0]++;
    finish(&req, (*mode)++);
    for (int i = 0; i < count; i++)
        check(a[i] == value(root, i), "Ibcast", root, count);
    /* reduce and allreduce: sums over the ranks */
    for (int i = 0; i < count; i++) {
        a[i] = value(rank, i);
        b[i] = -1;
    }
    MPI_Ireduce(a, b, count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req);
    ncalls[1]++;
    finish(&req, (*mode)++);
    for (int i = 0; rank == root && i < count; i++) {
        int s = 0;
        for (int q = 0; q < n; q++)
            s += value(q, i);
        check(b[i] == s, "Ireduce", root, count);
    }
    MPI_Iallreduce(a, b, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    ncalls[2]++;
    finish(&req, (*mode)++);
    for (int i = 0; i < count; i++) {
        int s = 0;
        for (int q = 0; q < n; q++)
            s += value(q, i);
        check(b[i] == s, "Iallreduce", root, count);
    }
    /* scatter: block q of the root goes to rank q; gather: back */
    for (int i = 0; i < count * n; i++)
        a[i] = rank == root ? value(i / count, i % count) : -1;
    for (int i = 0; i < count; i++)
        b[i] = -1;
    MPI_Iscatter(a, count, MPI_INT, b, count, MPI_INT, root, MPI_COMM_WORLD, &req);
    ncalls[3]++;
    finish(&req, (*mode)++);
    for (int i = 0; i < count; i++)
        check(b[i] == value(rank, i), "Iscatter", root, count);
    for (int i = 0; i < count * n; i++)
        a[i] = -1;
    MPI_Igather(b, count, MPI_INT, a, count, MPI_INT, root, MPI_COMM_WORLD, &req);
    ncalls[4]++;
    finish(&req, (*mode)++);
    for (int i = 0; rank == root && i < count * n; i++)
        check(a[i] == value(i / count, i % count), "Igather", root, count);
    /* allgather: every rank's block everywhere; alltoall: block q of rank r goes to q */
    for (int i = 0; i < count * n; i++)
        a[i] = -1;
    MPI_Iallgather(b, count, MPI_INT, a, count, MPI_INT, MPI_COMM_WORLD, &req);
    ncalls[5]++;
    finish(&req, (*mode)++);
    for (int i = 0; i < count * n; i++)
        check(a[i] == value(i / count, i % count), "Iallgather", root, count);
    for (int i = 0; i < count * n; i++) {
        a[i] = value(rank * n + i / count, i % count);
        b[i] = -1;
    }
    MPI_Ialltoall(a, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD, &req);
    ncalls[6]++;
    finish(&req, (*mode)++);
    for (int i = 0; i < count * n; i++)
        check(b[i] == value((i / count) * n + rank, i % count), "Ialltoall", root, count);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int mode = 0, counts[] = {1, 1000, 30000};
    for (int c = 0; c < 3; c++) {
        round_of(0, counts[c], &mode);
        round_of(nprocs - 1, counts[c], &mode);
    }
    /* In flight together, on two communicators, waited in reverse order. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    enum { C = 5000 };
    static int x[C], y[C], z[C], w[C];
    for (int i = 0; i < C; i++) {
        x[i] = rank == 0 ? value(0, i) : -1;
        y[i] = value(rank, i);
        w[i] = rank == nprocs - 1 ? value(nprocs - 1, i) : -1;
    }
    MPI_Request r[3];
    MPI_Ibcast(x, C, MPI_INT, 0, MPI_COMM_WORLD, &r[2]);
    MPI_Iallreduce(y, z, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    MPI_Ibcast(w, C, MPI_INT, nprocs - 1, dup, &r[0]);
    ncalls[0] += 2;
    ncalls[2]++;
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < C; i++) {
        int s = 0;
        for (int q = 0; q < nprocs; q++)
            s += value(q, i);
        check(x[i] == value(0, i) && w[i] == value(nprocs - 1, i) && z[i] == s, "in flight",
              0, C);
    }
    MPI_Comm_free(&dup);
    printf("rank %d nbc Ibcast=%d Ireduce=%d Iallreduce=%d Iscatter=%d Igather=%d "
           "Iallgather=%d Ialltoall=%d\n",
           rank, ncalls[0], ncalls[1], ncalls[2], ncalls[3], ncalls[4], ncalls[5], ncalls[6]);
    fflush(stdout);
    int all;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("all ok\n");
    MPI_Finalize();
    return all ? 1 : 0;
}
