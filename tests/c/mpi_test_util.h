/* What the MPI test programs share (header-only: each is one translation unit). */
#ifndef CT_MPI_TEST_UTIL_H
#define CT_MPI_TEST_UTIL_H

#include <mpi.h>

/* MPI 4's persistent collectives (MPI_Bcast_init ...): Open MPI 5 has them while it says
 * MPI 3.1 (without the large-count _c forms, which need MPI 4). */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

/* Whether every rank of MPI_COMM_WORLD shares one node (MPI_COMM_TYPE_SHARED), the same
 * answer on every rank: where the flat shared-memory algorithms may run. Collective. */
static inline int world_on_one_node(void)
{
    MPI_Comm node;
    int n = 0, size = 0, all, min = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &n);
    MPI_Comm_free(&node);
    all = n == size;
    MPI_Allreduce(&all, &min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return min;
}

#endif
