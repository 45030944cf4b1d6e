/*
 * The export tests' probe (tests/python/test_export.py): MPI_Reduce and MPI_Allreduce of
 * 2 ints (8 B) and 16384 ints (64 KiB) with a user-defined commutative sum, which records
 * the vector lengths the library hands it. Tree algorithms combine whole vectors; reduce-
 * scatter based ones (Rabenseifner, ring) combine pieces, so the lengths show, without any
 * timing, which algorithm the MPI ran. Each rank prints one line per call:
 *   "probe rank R op reduce bytes B lens L1,L2,..." and rank 0 "probe ok" if results are right.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int lens[256], nlens;

static void sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    if (nlens < 256)
        lens[nlens++] = *len;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    MPI_Op op;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(sum, 1, &op);
    const int counts[2] = {2, 16384};
    for (int all = 0; all < 2; all++)
        for (int c = 0; c < 2; c++) {
            int n = counts[c];
            int *a = malloc(sizeof(int) * n), *b = malloc(sizeof(int) * n);
            for (int i = 0; i < n; i++)
                a[i] = rank + i, b[i] = -1;
            nlens = 0;
            if (all)
                MPI_Allreduce(a, b, n, MPI_INT, op, MPI_COMM_WORLD);
            else
                MPI_Reduce(a, b, n, MPI_INT, op, 0, MPI_COMM_WORLD);
            if (all || rank == 0)
                for (int i = 0; i < n; i++)
                    bad += b[i] != size * i + size * (size - 1) / 2;
            char line[4096];
            int at = snprintf(line, sizeof line, "probe rank %d op %s bytes %d lens ", rank,
                              all ? "allreduce" : "reduce", (int)(n * sizeof(int)));
            for (int k = 0; k < nlens && at < 4000; k++)
                at += snprintf(line + at, sizeof line - at, "%s%d", k ? "," : "", lens[k]);
            printf("%s\n", line);
            fflush(stdout);
            free(a), free(b);
        }
    int total;
    MPI_Reduce(&bad, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("probe ok\n");
    MPI_Op_free(&op);
    MPI_Finalize();
    return 0;
}
