/*
 * An ordinary MPI program: plain mpicc, no colltune header, no colltune library.
 * The drop-in tests run it with LD_PRELOAD=libcolltune_pmpi.so.
 *
 *   plain_collectives           bcast / reduce / allreduce on MPI_COMM_WORLD, on a
 *                               communicator from MPI_Comm_split and one from
 *                               MPI_Comm_dup (both freed before MPI_Finalize); checks
 *                               every result itself; each rank prints "rank R calls
 *                               bcast=B reduce=R allreduce=A", then rank 0 "all ok"
 *   plain_collectives --errors  bad calls with MPI_ERRORS_RETURN; prints each one's class
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int calls_bcast, calls_reduce, calls_allreduce, bad;

static void check(int ok, const char *what, int rank)
{
    if (!ok) {
        bad++;
        fprintf(stderr, "rank %d: wrong result: %s\n", rank, what);
    }
}

static void exercise(MPI_Comm comm, const char *name)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {0, 1, 7, 1000, 70001};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        int n = counts[ci];
        int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
        for (int root = 0; root < size; root += size > 2 ? size - 1 : 1) {
            for (int i = 0; i < n; i++)
                a[i] = rank == root ? i * 3 + root : -1;
            MPI_Bcast(a, n, MPI_INT, root, comm);
            calls_bcast++;
            for (int i = 0; i < n; i++)
                check(a[i] == i * 3 + root, name, rank);

            for (int i = 0; i < n; i++)
                a[i] = rank + i;
            MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
            calls_reduce++;
            if (rank == root)
                for (int i = 0; i < n; i++)
                    check(b[i] == size * (size - 1) / 2 + size * i, name, rank);
        }
        for (int i = 0; i < n; i++)
            a[i] = rank * (i % 5);
        MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, comm);
        calls_allreduce++;
        for (int i = 0; i < n; i++)
            check(b[i] == (size - 1) * (i % 5), name, rank);
        for (int i = 0; i < n; i++)
            b[i] = 1;
        MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, comm);
        calls_allreduce++;
        for (int i = 0; i < n; i++)
            check(b[i] == size, name, rank);
        free(a);
        free(b);
    }
}

static void report_class(const char *what, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    printf("%s %d\n", what, cls);
}

static void bad_calls(void)
{
    int rank, size, buf[4] = {0}, out[4];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (rank != 0)
        return; /* each call fails before communicating: one rank shows it */
    report_class("bcast_root_size", MPI_Bcast(buf, 4, MPI_INT, size, MPI_COMM_WORLD));
    report_class("bcast_root_negative", MPI_Bcast(buf, 4, MPI_INT, -1, MPI_COMM_WORLD));
    report_class("bcast_count_negative", MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD));
    report_class("bcast_comm_null", MPI_Bcast(buf, 4, MPI_INT, 0, MPI_COMM_NULL));
    report_class("bcast_type_null", MPI_Bcast(buf, 4, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    report_class("reduce_root_size",
                 MPI_Reduce(buf, out, 4, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD));
    report_class("reduce_op_null",
                 MPI_Reduce(buf, out, 4, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD));
    /* Not MPI_Allreduce with a negative count: MPICH 5.0.2 itself crashes on it (colltune's
     * own answer, MPI_ERR_COUNT, is checked by test_errors). */
    report_class("allreduce_op_null",
                 MPI_Allreduce(buf, out, 4, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    report_class("allreduce_comm_null",
                 MPI_Allreduce(buf, out, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "--errors") == 0) {
        bad_calls();
        MPI_Finalize();
        return 0;
    }
    exercise(MPI_COMM_WORLD, "world");
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split); /* reversed order */
    exercise(split, "split");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    exercise(dup, "dup");
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    int all_bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    calls_allreduce++;
    printf("rank %d calls bcast=%d reduce=%d allreduce=%d\n", rank, calls_bcast, calls_reduce,
           calls_allreduce);
    fflush(stdout);
    if (rank == 0)
        printf("%s\n", all_bad ? "WRONG RESULTS" : "all ok");
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
