/* The drop-in's shared helpers (dropin.h). */
#include "dropin.h"

#include <limits.h>
#include <stdlib.h>

#include "monitor/monitor.h"

const char *ct_dropin_mpi_name(ct_coll coll)
{
    static const char *const names[CT_NCOLL] = {
        [CT_BCAST] = "Bcast",
        [CT_REDUCE] = "Reduce",
        [CT_ALLREDUCE] = "Allreduce",
        [CT_SCATTER] = "Scatter",
        [CT_GATHER] = "Gather",
        [CT_ALLGATHER] = "Allgather",
        [CT_ALLTOALL] = "Alltoall",
        [CT_BARRIER] = "Barrier",
        [CT_ALLGATHERV] = "Allgatherv",
        [CT_ALLTOALLV] = "Alltoallv",
        [CT_GATHERV] = "Gatherv",
        [CT_SCATTERV] = "Scatterv",
        [CT_REDUCE_SCATTER_BLOCK] = "Reduce_scatter_block",
        [CT_REDUCE_SCATTER] = "Reduce_scatter",
        [CT_SCAN] = "Scan",
        [CT_EXSCAN] = "Exscan",
    };
    return (int)coll >= 0 && coll < CT_NCOLL && names[coll] ? names[coll] : "?";
}

const char *ct_dropin_upper_name(ct_coll coll)
{
    static char names[CT_NCOLL][32];
    if ((int)coll < 0 || coll >= CT_NCOLL)
        return "?";
    char *u = names[coll];
    if (!u[0]) { /* the same text from every thread: a race writes the same bytes */
        const char *n = ct_coll_name(coll);
        size_t i = 0;
        for (; n[i] && i < sizeof names[0] - 1; i++)
            u[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 'a' + 'A' : n[i]);
        u[i] = '\0';
    }
    return u;
}

void ct_dropin_count_native(ct_coll coll, long long bytes)
{
    if (ct_monitor_level)
        ct_monitor_native(coll, bytes);
}

int ct_dropin_comm_size(MPI_Comm comm)
{
    int n = 0, inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
        return 0;
    return n;
}

int ct_dropin_is_root(MPI_Comm comm, int root)
{
    int r = -1;
    return comm != MPI_COMM_NULL && PMPI_Comm_rank(comm, &r) == MPI_SUCCESS && r == root;
}

#if MPI_VERSION >= 4
int ct_dropin_counts_to_int(const MPI_Count *a, int n, int **out)
{
    *out = NULL;
    if (!a)
        return 0;
    int *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!CT_FITS_INT(a[i])) {
            free(b);
            return -1;
        }
        b[i] = (int)a[i];
    }
    *out = b;
    return 0;
}

int ct_dropin_displs_to_int(const MPI_Aint *a, int n, int **out)
{
    *out = NULL;
    if (!a)
        return 0;
    int *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    for (int i = 0; i < n; i++) {
        if (a[i] < INT_MIN || a[i] > INT_MAX) {
            free(b);
            return -1;
        }
        b[i] = (int)a[i];
    }
    *out = b;
    return 0;
}
#endif
