/*
 * Prints the thread level MPI gave (MPI_Query_thread) after a plain MPI_Init, and whether
 * an MPI_Ibcast completed right: under the drop-in, MPI_THREAD_MULTIPLE (which taxes every
 * MPICH call) must be asked only where a progress thread can start
 * (tests/python/test_thread_level.py, issue 36).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, level, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Query_thread(&level);
    MPI_Request r;
    x = rank == 0 ? 42 : 0;
    MPI_Ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    printf("rank %d thread level %s ibcast %s\n", rank,
           level == MPI_THREAD_MULTIPLE ? "multiple" : "below-multiple", x == 42 ? "ok" : "WRONG");
    MPI_Finalize();
    return 0;
}
