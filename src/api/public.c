/*
 * The public API's entry points (colltune.h): the blocking ct_* calls, with the select
 * layer's choice where the caller names no algorithm.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "../select/select.h"
#include "../select/table.h"

void ct_options_init(ct_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->split = CT_SPLIT_AUTO;
}

/* ---- Public entry points ------------------------------------------------ */

const ct_options *ct_call_public_options(const ct_call *c, const ct_vargs *v,
                                         const ct_options *opts, int thread_running,
                                         ct_options *chosen, int *err)
{
    *err = MPI_SUCCESS;
    if (opts && opts->algorithm && opts->algorithm[0])
        return opts; /* the caller's algorithm */
    int size = 0, inter = 0;
    if (c->comm == MPI_COMM_NULL || PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS ||
        inter || PMPI_Comm_size(c->comm, &size) != MPI_SUCCESS)
        return opts; /* the engine says what is wrong, or leaves it to MPI */
    ct_select_query q = {c->coll, c->request ? CT_FORM_NONBLOCKING : CT_FORM_BLOCKING,
                         c->comm, size, c->op, ct_call_bytes_v(c, v), ct_call_same_size_v(c->coll),
                         thread_running};
    ct_choice choice;
    if (ct_select(&q, &choice, err))
        return opts; /* native, or *err */
    /* The caller's other options (radix, hier parts) stay; what it left to the choice
     * (segment size, split) is the choice's. */
    if (opts)
        *chosen = *opts;
    else
        ct_options_init(chosen);
    chosen->algorithm = choice.algorithm->name;
    if (!chosen->has_segsize) {
        chosen->has_segsize = choice.has_segsize;
        chosen->segsize = choice.segsize;
    }
    if (chosen->split == CT_SPLIT_AUTO)
        chosen->split = choice.split;
    return chosen;
}

static int run_public(const ct_call *c, const ct_options *opts)
{
    const char *ran;
    ct_options chosen;
    int err;
    opts = ct_call_public_options(c, NULL, opts, 0, &chosen, &err);
    return err != MPI_SUCCESS ? err : ct_call_run(c, opts, 0, &ran);
}

int ct_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const ct_options *opts)
{
    ct_call c = {CT_BCAST, NULL, count, datatype, buf, count, datatype, MPI_OP_NULL, root, comm, NULL};
    return run_public(&c, opts);
}

int ct_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_REDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, root, comm, NULL};
    return run_public(&c, opts);
}

int ct_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_ALLREDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm, NULL};
    return run_public(&c, opts);
}

int ct_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               const ct_options *opts)
{
    ct_call c = {CT_SCATTER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,  recvtype, MPI_OP_NULL, root,     comm, NULL};
    return run_public(&c, opts);
}

int ct_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
              const ct_options *opts)
{
    ct_call c = {CT_GATHER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount, recvtype, MPI_OP_NULL, root,     comm, NULL};
    return run_public(&c, opts);
}

int ct_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_ALLGATHER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,    recvtype, MPI_OP_NULL, 0,        comm, NULL};
    return run_public(&c, opts);
}

int ct_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_ALLTOALL, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,   recvtype, MPI_OP_NULL, 0,        comm, NULL};
    return run_public(&c, opts);
}

int ct_barrier(MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_BARRIER, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL,
                 MPI_OP_NULL, 0,    comm, NULL};
    return run_public(&c, opts);
}

static int run_public_v(const ct_call *c, const ct_vargs *v, const ct_options *opts)
{
    const char *ran;
    ct_options chosen;
    int err;
    opts = ct_call_public_options(c, v, opts, 0, &chosen, &err);
    return err != MPI_SUCCESS ? err : ct_call_run_v(c, v, opts, 0, &ran);
}

int ct_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                  MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL,   0,       comm,      NULL};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return run_public_v(&c, &v, opts);
}

int ct_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                 const ct_options *opts)
{
    ct_call c = {CT_ALLTOALLV, sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm,
                 NULL};
    ct_vargs v = {sendcounts, sdispls, recvcounts, rdispls};
    return run_public_v(&c, &v, opts);
}

int ct_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
               MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_GATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL, root,   comm,      NULL};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return run_public_v(&c, &v, opts);
}

int ct_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_SCATTERV, sendbuf, 0, sendtype, recvbuf, recvcount, recvtype,
                 MPI_OP_NULL, root,    comm, NULL};
    ct_vargs v = {sendcounts, displs, NULL, NULL};
    return run_public_v(&c, &v, opts);
}

int ct_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            const ct_options *opts)
{
    ct_call c = {CT_REDUCE_SCATTER_BLOCK, sendbuf, recvcount, datatype, recvbuf, recvcount,
                 datatype, op, 0, comm, NULL};
    return run_public(&c, opts);
}

int ct_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_REDUCE_SCATTER, sendbuf, 0, datatype, recvbuf, 0, datatype, op, 0, comm,
                 NULL};
    ct_vargs v = {NULL, NULL, recvcounts, NULL};
    return run_public_v(&c, &v, opts);
}

int ct_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_SCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm, NULL};
    return run_public(&c, opts);
}

int ct_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, const ct_options *opts)
{
    ct_call c = {CT_EXSCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm,
                 NULL};
    return run_public(&c, opts);
}

int ct_table_use(const char *path, char *why, int len)
{
    char buf[512];
    if (ct_table_load(path, buf, sizeof buf) != 0) {
        if (why && len > 0)
            snprintf(why, (size_t)len, "%s", buf);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}
