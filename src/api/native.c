/*
 * The MPI library's own collective for a call (through PMPI).
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- Native ------------------------------------------------------------- */

static int call_native_nb(const ct_call *c)
{
    MPI_Request *r = c->request;
    switch (c->coll) {
    case CT_BCAST:
        return PMPI_Ibcast(c->recvbuf, c->recvcount, c->recvtype, c->root, c->comm, r);
    case CT_REDUCE:
        return PMPI_Ireduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->root,
                            c->comm, r);
    case CT_ALLREDUCE:
        return PMPI_Iallreduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op,
                               c->comm, r);
    case CT_SCATTER:
        return PMPI_Iscatter(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                             c->recvtype, c->root, c->comm, r);
    case CT_GATHER:
        return PMPI_Igather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                            c->recvtype, c->root, c->comm, r);
    case CT_ALLGATHER:
        return PMPI_Iallgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                               c->recvcount, c->recvtype, c->comm, r);
    case CT_ALLTOALL:
        return PMPI_Ialltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                              c->recvtype, c->comm, r);
    case CT_BARRIER:
        return PMPI_Ibarrier(c->comm, r);
    case CT_REDUCE_SCATTER_BLOCK:
        return PMPI_Ireduce_scatter_block(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype,
                                          c->op, c->comm, r);
    case CT_SCAN:
        return PMPI_Iscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm, r);
    case CT_EXSCAN:
        return PMPI_Iexscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm,
                            r);
    default:
        return MPI_ERR_INTERN;
    }
}

int ct_call_native(const ct_call *c)
{
    if (c->request)
        return call_native_nb(c);
    switch (c->coll) {
    case CT_BCAST:
        return PMPI_Bcast(c->recvbuf, c->recvcount, c->recvtype, c->root, c->comm);
    case CT_REDUCE:
        return PMPI_Reduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->root,
                           c->comm);
    case CT_ALLREDUCE:
        return PMPI_Allreduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op,
                              c->comm);
    case CT_SCATTER:
        return PMPI_Scatter(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                            c->recvtype, c->root, c->comm);
    case CT_GATHER:
        return PMPI_Gather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                           c->recvtype, c->root, c->comm);
    case CT_ALLGATHER:
        return PMPI_Allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                              c->recvtype, c->comm);
    case CT_ALLTOALL:
        return PMPI_Alltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                             c->recvtype, c->comm);
    case CT_BARRIER:
        return PMPI_Barrier(c->comm);
    case CT_REDUCE_SCATTER_BLOCK:
        return PMPI_Reduce_scatter_block(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype,
                                         c->op, c->comm);
    case CT_SCAN:
        return PMPI_Scan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm);
    case CT_EXSCAN:
        return PMPI_Exscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm);
    default:
        return MPI_ERR_INTERN; /* the v-variants: ct_call_native_v */
    }
}

int ct_call_native_v(const ct_call *c, const ct_vargs *v)
{
    static const ct_vargs none = {NULL, NULL, NULL, NULL};
    if (!v)
        v = &none;
    if (c->request) {
        MPI_Request *r = c->request;
        switch (c->coll) {
        case CT_ALLGATHERV:
            return PMPI_Iallgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                    v->recvcounts, v->rdispls, c->recvtype, c->comm, r);
        case CT_GATHERV:
            return PMPI_Igatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                 v->recvcounts, v->rdispls, c->recvtype, c->root, c->comm, r);
        case CT_SCATTERV:
            return PMPI_Iscatterv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                                  c->recvcount, c->recvtype, c->root, c->comm, r);
        case CT_ALLTOALLV:
            return PMPI_Ialltoallv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype,
                                   c->recvbuf, v->recvcounts, v->rdispls, c->recvtype, c->comm,
                                   r);
        case CT_REDUCE_SCATTER:
            return PMPI_Ireduce_scatter(c->sendbuf, c->recvbuf, v->recvcounts, c->recvtype,
                                        c->op, c->comm, r);
        default:
            return ct_call_native(c);
        }
    }
    switch (c->coll) {
    case CT_ALLGATHERV:
        return PMPI_Allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                               v->recvcounts, v->rdispls, c->recvtype, c->comm);
    case CT_GATHERV:
        return PMPI_Gatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, v->recvcounts,
                            v->rdispls, c->recvtype, c->root, c->comm);
    case CT_SCATTERV:
        return PMPI_Scatterv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                             c->recvcount, c->recvtype, c->root, c->comm);
    case CT_ALLTOALLV:
        return PMPI_Alltoallv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                              v->recvcounts, v->rdispls, c->recvtype, c->comm);
    case CT_REDUCE_SCATTER:
        return PMPI_Reduce_scatter(c->sendbuf, c->recvbuf, v->recvcounts, c->recvtype, c->op,
                                   c->comm);
    default:
        return ct_call_native(c);
    }
}
