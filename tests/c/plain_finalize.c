/*
 * The five lines that crashed Debian's Open MPI 4.1.4 in MPI_Finalize (issue 37): one
 * MPI_Allreduce that colltune serves through the node's shared segment
 * (COLLTUNE_ALLREDUCE_ALGORITHM=shm), then MPI_Finalize. Exit status 0 and "finalized"
 * from every rank is the verdict.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int x = 1, y = 0, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    printf("rank %d finalized, sum %d\n", rank, y);
    return 0;
}
