/*
 * A plain MPI program (built with the MPI compiler alone) with a known mix of collective
 * calls for the drop-in's finalize summary (tests/python/test_summary.py) and the tuner's
 * coverage of every operation and form (tests/python/test_tune_forms.py):
 *   20 MPI_Allreduce of 8 B (MPI_SUM), 4 MPI_Allreduce of 8 B with a non-commutative op,
 *   10 MPI_Bcast of 1 KiB, 6 MPI_Bcast of 64 KiB, 5 MPI_Ibcast of 1 KiB (with MPI_Wait),
 *   one MPI_Bcast_init of 1 KiB started 3 times (MPI 4), 3 MPI_Scan of 8 B,
 *   3 MPI_Allgatherv of 1 KiB a rank, 2 MPI_Gatherv of 1 KiB a rank.
 * Every result is checked; each rank prints "rank R ok" (or what went wrong), rank 0
 * whether the MPI has the persistent forms.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

static int bad, rank, size;

static void expect(int ok, const char *what)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "rank %d: %s wrong\n", rank, what);
}

/* a o b = a (the left operand): associative, not commutative; MPI calls it with
 * inout = in o inout, so the result of a reduction is rank 0's value. */
static void first(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { SMALL = 1024, LARGE = 65536 };
    char *buf = malloc(LARGE), *all = malloc((size_t)SMALL * (size_t)size);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int r = 0; r < size; r++) {
        counts[r] = SMALL;
        displs[r] = r * SMALL;
    }

    for (int i = 0; i < 20; i++) {
        double in = rank + i, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        expect(out == (double)size * (size - 1) / 2 + (double)size * i, "allreduce");
    }
    MPI_Op noncommutative;
    MPI_Op_create(first, 0, &noncommutative);
    for (int i = 0; i < 4; i++) {
        int in[2] = {rank + i, rank}, out[2] = {-1, -1};
        MPI_Allreduce(in, out, 2, MPI_INT, noncommutative, MPI_COMM_WORLD);
        expect(out[0] == i && out[1] == 0, "allreduce (non-commutative)");
    }
    MPI_Op_free(&noncommutative);

    for (int i = 0; i < 10; i++) {
        memset(buf, rank == 0 ? 'a' + i : 0, SMALL);
        MPI_Bcast(buf, SMALL, MPI_CHAR, 0, MPI_COMM_WORLD);
        expect(buf[0] == 'a' + i && buf[SMALL - 1] == 'a' + i, "bcast 1 KiB");
    }
    for (int i = 0; i < 6; i++) {
        memset(buf, rank == 0 ? 'A' + i : 0, LARGE);
        MPI_Bcast(buf, LARGE, MPI_CHAR, 0, MPI_COMM_WORLD);
        expect(buf[0] == 'A' + i && buf[LARGE - 1] == 'A' + i, "bcast 64 KiB");
    }
    for (int i = 0; i < 5; i++) {
        MPI_Request req;
        memset(buf, rank == 0 ? 'k' + i : 0, SMALL);
        MPI_Ibcast(buf, SMALL, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(buf[0] == 'k' + i && buf[SMALL - 1] == 'k' + i, "ibcast");
    }
#if HAVE_PERSISTENT
    MPI_Request persistent;
    MPI_Bcast_init(buf, SMALL, MPI_CHAR, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
    for (int i = 0; i < 3; i++) {
        memset(buf, rank == 0 ? 'p' + i : 0, SMALL);
        MPI_Start(&persistent);
        MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        expect(buf[0] == 'p' + i && buf[SMALL - 1] == 'p' + i, "bcast_init");
    }
    MPI_Request_free(&persistent);
#endif
    for (int i = 0; i < 3; i++) {
        long long in = rank + 1, out = 0;
        MPI_Scan(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        expect(out == (long long)(rank + 1) * (rank + 2) / 2, "scan");
    }
    for (int i = 0; i < 3; i++) {
        memset(buf, 'a' + rank, SMALL);
        MPI_Allgatherv(buf, SMALL, MPI_CHAR, all, counts, displs, MPI_CHAR, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            expect(all[r * SMALL] == 'a' + r && all[r * SMALL + SMALL - 1] == 'a' + r,
                   "allgatherv");
    }
    for (int i = 0; i < 2; i++) {
        memset(buf, 'A' + rank, SMALL);
        memset(all, 0, (size_t)SMALL * (size_t)size);
        MPI_Gatherv(buf, SMALL, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
        for (int r = 0; rank == 0 && r < size; r++)
            expect(all[r * SMALL] == 'A' + r, "gatherv");
    }
    if (rank == 0)
        printf("persistent forms: %s\n", HAVE_PERSISTENT ? "yes" : "no");
    printf("rank %d %s\n", rank, bad ? "FAILED" : "ok");
    free(buf);
    free(all);
    free(counts);
    free(displs);
    MPI_Finalize();
    return bad != 0;
}
