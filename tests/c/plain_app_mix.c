/*
 * A plain MPI program (no colltune header, built with the MPI compiler alone) with a known
 * mix of collectives, for `colltune app` (tests/python/test_app.py): the profile it makes
 * must count exactly these calls.
 *
 *   1000 MPI_Allreduce of one double (8 B)
 *    100 MPI_Bcast of 1 MiB (bytes) from rank 0
 *     50 MPI_Iallreduce of one double (8 B), each waited for
 *     10 persistent MPI_Allgather_init of one double a rank (8 B), each started 5 times
 *     20 MPI_Scan of one double (8 B)
 *      1 MPI_Allreduce of one int (4 B) at the end: all ranks agree on the verdict
 *
 * Every result is checked against what the program computes itself; rank 0 prints
 * "passed" and "mix: <calls per second> calls/s" (a figure of merit for --metric) when all
 * ranks agree, "FAILED" and exit 1 otherwise. `--fail` makes it exit 1 after finalize
 * without printing "passed" (a program that fails); `--fail-tuned` does so only where
 * COLLTUNE_TABLE is set (a program that fails under the tuned variant, after native runs
 * went well); `--quiet` prints neither line (a program whose output does not match
 * `--expect`).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test_util.h"

#define N_ALLREDUCE 1000
#define N_BCAST 100
#define BCAST_BYTES (1 << 20)
#define N_IALLREDUCE 50
#define N_PERSISTENT 10
#define STARTS 5
#define N_SCAN 20

static int bad, rank;

static void expect(int ok, const char *what, int i)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "rank %d: %s wrong at %d\n", rank, what, i);
}

int main(int argc, char **argv)
{
    int size, fail = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        fail |= !strcmp(argv[i], "--fail");
        fail |= !strcmp(argv[i], "--fail-tuned") && getenv("COLLTUNE_TABLE") != NULL;
        quiet |= !strcmp(argv[i], "--quiet");
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();
    /* the sum of r + i over the ranks: n(n-1)/2 + n i */
    double tri = size * (size - 1) / 2.0;

    for (int i = 0; i < N_ALLREDUCE; i++) {
        double in = rank + i, out = -1;
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        expect(out == tri + (double)size * i, "allreduce", i);
    }

    unsigned char *buf = malloc(BCAST_BYTES);
    for (int i = 0; i < N_BCAST; i++) {
        for (int k = 0; k < BCAST_BYTES; k++)
            buf[k] = rank == 0 ? (unsigned char)(k * 7 + i) : 0;
        MPI_Bcast(buf, BCAST_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        /* a few places suffice: a wrong algorithm moves whole segments, not single bytes */
        for (int k = 0; k < BCAST_BYTES; k += 4093)
            expect(buf[k] == (unsigned char)(k * 7 + i), "bcast", i);
        expect(buf[BCAST_BYTES - 1] == (unsigned char)((BCAST_BYTES - 1) * 7 + i), "bcast", i);
    }
    free(buf);

    for (int i = 0; i < N_IALLREDUCE; i++) {
        double in = rank + i, out = -1;
        MPI_Request req;
        MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(out == tri + (double)size * i, "iallreduce", i);
    }

#if HAVE_PERSISTENT
    double *all = malloc(sizeof(double) * (size_t)size);
    for (int i = 0; i < N_PERSISTENT; i++) {
        double mine = 0;
        MPI_Request req;
        MPI_Allgather_init(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &req);
        for (int s = 0; s < STARTS; s++) {
            mine = rank * 100.0 + i * 10 + s; /* the input is read at each start */
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int r = 0; r < size; r++)
                expect(all[r] == r * 100.0 + i * 10 + s, "allgather_init", i * STARTS + s);
        }
        MPI_Request_free(&req);
    }
    free(all);
#else
    if (rank == 0)
        fprintf(stderr, "no persistent collectives in this MPI (MPI %d): allgather_init "
                        "left out\n", MPI_VERSION);
#endif

    for (int i = 0; i < N_SCAN; i++) {
        double in = rank + i, out = -1;
        MPI_Scan(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        /* ranks 0..rank: rank(rank+1)/2 + (rank+1) i */
        expect(out == rank * (rank + 1) / 2.0 + (rank + 1.0) * i, "scan", i);
    }

    double elapsed = MPI_Wtime() - t0;
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !quiet && !fail) {
        long calls = N_ALLREDUCE + N_BCAST + N_IALLREDUCE + N_PERSISTENT * STARTS + N_SCAN;
        printf("%s\n", any ? "FAILED" : "passed");
        printf("mix: %.1f calls/s\n", elapsed > 0 ? calls / elapsed : 0.0);
    }
    MPI_Finalize();
    return any || fail ? 1 : 0;
}
