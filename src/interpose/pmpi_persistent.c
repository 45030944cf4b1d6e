/*
 * The drop-in's persistent collectives (MPI 4): MPI_Bcast_init ... for every
 * operation colltune knows, their _c large-count forms, and MPI_Start and
 * MPI_Startall. Built where the library has them (CT_HAVE_PERSISTENT_COLL:
 * Open MPI 5 too, which says MPI 3.1); the _c forms with an MPI 4.
 *
 * Init chooses as the non-blocking call would (COLLTUNE_<OP>_ALGORITHM, else
 * the tuning table; pmpi.c, pmpi_v.c) and prepares the call once
 * (src/nbc/persistent.c): checks, algorithm, schedule. Each MPI_Start runs that
 * plan through the non-blocking engine. A call colltune does not take (native
 * chosen, arguments it refuses, an inter-communicator, counts past an int)
 * gets the library's own persistent request, counted by the monitor once, at
 * init; MPI_Start and the waits then go to the library.
 *
 * MPI_Startall starts its requests in array order, colltune's and the
 * library's alike: persistent collectives must start in the same order on every
 * rank, and array order is the one the program wrote.
 */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "dropin.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"

#if CT_HAVE_PERSISTENT_COLL

static void log_init(const ct_call *c, long long bytes, const char *ran)
{
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    char line[256];
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s_init %lld bytes -> %s\n",
                     rank, size, ct_dropin_mpi_name(c->coll), bytes, ran);
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

/* colltune's plan for c when it takes the call (*native 0; the result is
 * returned); else *native = 1 and the caller makes the library's request. */
static int plan(const ct_call *c, const ct_vargs *v, int *native)
{
    ct_options o;
    int err = MPI_SUCCESS, inter = 0, go = -1;
    long long bytes = ct_call_bytes_v(c, v);
    *native = 0;
    if (c->comm != MPI_COMM_NULL && PMPI_Comm_test_inter(c->comm, &inter) == MPI_SUCCESS &&
        inter) {
        *native = 1;
        return MPI_SUCCESS;
    }
    if (ct_dropin_choose(c, v, CT_FORM_PERSISTENT, bytes, &o, &err)) {
        *native = err == MPI_SUCCESS;
        return err;
    }
    const char *ran = "native";
    int was = ct_monitor_in_collective;
    ct_monitor_in_collective = 1; /* preparing may exchange (a shared segment's set-up) */
    int rc = ct_plan_init(c, v, &o, &go, &ran);
    ct_monitor_in_collective = was;
    if (go == -1) {
        *native = 1;
        return MPI_SUCCESS;
    }
    log_init(c, bytes, ran);
    return rc;
}

/* The library's persistent request was made (rc): counted, logged. */
static int counted_native(int rc, const ct_call *c, long long bytes)
{
    ct_dropin_count_native(c->coll, bytes < 0 ? 0 : bytes);
    log_init(c, bytes, "native");
    return rc;
}

static int made_native(int rc, const ct_call *c, const ct_vargs *v)
{
    return counted_native(rc, c, ct_call_bytes_v(c, v));
}

/* ---- The inits ---------------------------------------------------------------- */

int MPI_Bcast_init(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm, MPI_Info info,
                   MPI_Request *request)
{
    ct_call c = {CT_BCAST, NULL, count, t, buf, count, t, MPI_OP_NULL, root, comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Bcast_init(buf, count, t, root, comm, info, request), &c,
                                NULL)
                  : rc;
}

int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_REDUCE, sendbuf, count, t, recvbuf, count, t, op, root, comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Reduce_init(sendbuf, recvbuf, count, t, op, root, comm, info,
                                                 request),
                                &c, NULL)
                  : rc;
}

int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_ALLREDUCE, sendbuf, count, t, recvbuf, count, t, op, 0, comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Allreduce_init(sendbuf, recvbuf, count, t, op, comm, info,
                                                    request),
                                &c, NULL)
                  : rc;
}

int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_SCATTER, sendbuf,     sendcount, sendtype, recvbuf, recvcount,
                 recvtype,   MPI_OP_NULL, root,      comm,     request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Scatter_init(sendbuf, sendcount, sendtype, recvbuf,
                                                  recvcount, recvtype, root, comm, info,
                                                  request),
                                &c, NULL)
                  : rc;
}

int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_GATHER, sendbuf,     sendcount, sendtype, recvbuf, recvcount,
                 recvtype,  MPI_OP_NULL, root,      comm,     request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Gather_init(sendbuf, sendcount, sendtype, recvbuf,
                                                 recvcount, recvtype, root, comm, info,
                                                 request),
                                &c, NULL)
                  : rc;
}

int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_ALLGATHER, sendbuf,     sendcount, sendtype, recvbuf, recvcount,
                 recvtype,     MPI_OP_NULL, 0,         comm,     request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf,
                                                    recvcount, recvtype, comm, info, request),
                                &c, NULL)
                  : rc;
}

int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_ALLTOALL, sendbuf,     sendcount, sendtype, recvbuf, recvcount,
                 recvtype,    MPI_OP_NULL, 0,         comm,     request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf,
                                                   recvcount, recvtype, comm, info, request),
                                &c, NULL)
                  : rc;
}

int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_BARRIER, NULL, 0,    MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL,
                 MPI_OP_NULL, 0,   comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Barrier_init(comm, info, request), &c, NULL) : rc;
}

int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const int recvcounts[], const int displs[],
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    ct_call c = {CT_ALLGATHERV, sendbuf,     sendcount, sendtype, recvbuf, 0,
                 recvtype,      MPI_OP_NULL, 0,         comm,     request};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    int native, rc = plan(&c, &v, &native);
    return native ? made_native(PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf,
                                                     recvcounts, displs, recvtype, comm, info,
                                                     request),
                                &c, &v)
                  : rc;
}

int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_ALLTOALLV, sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm,
                 request};
    ct_vargs v = {sendcounts, sdispls, recvcounts, rdispls};
    int native, rc = plan(&c, &v, &native);
    return native ? made_native(PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype,
                                                    recvbuf, recvcounts, rdispls, recvtype,
                                                    comm, info, request),
                                &c, &v)
                  : rc;
}

int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_GATHERV, sendbuf,     sendcount, sendtype, recvbuf, 0,
                 recvtype,   MPI_OP_NULL, root,      comm,     request};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    int native, rc = plan(&c, &v, &native);
    return native ? made_native(PMPI_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf,
                                                  recvcounts, displs, recvtype, root, comm,
                                                  info, request),
                                &c, &v)
                  : rc;
}

int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
    ct_call c = {CT_SCATTERV, sendbuf,     0,    sendtype, recvbuf, recvcount,
                 recvtype,    MPI_OP_NULL, root, comm,     request};
    ct_vargs v = {sendcounts, displs, NULL, NULL};
    int native, rc = plan(&c, &v, &native);
    return native ? made_native(PMPI_Scatterv_init(sendbuf, sendcounts, displs, sendtype,
                                                   recvbuf, recvcount, recvtype, root, comm,
                                                   info, request),
                                &c, &v)
                  : rc;
}

int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    ct_call c = {CT_REDUCE_SCATTER_BLOCK, sendbuf, recvcount, t, recvbuf, recvcount, t, op, 0,
                 comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, t,
                                                               op, comm, info, request),
                                &c, NULL)
                  : rc;
}

int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    ct_call c = {CT_REDUCE_SCATTER, sendbuf, 0, t, recvbuf, 0, t, op, 0, comm, request};
    ct_vargs v = {NULL, NULL, recvcounts, NULL};
    int native, rc = plan(&c, &v, &native);
    return native ? made_native(PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, t, op,
                                                         comm, info, request),
                                &c, &v)
                  : rc;
}

int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_SCAN, sendbuf, count, t, recvbuf, count, t, op, 0, comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Scan_init(sendbuf, recvbuf, count, t, op, comm, info,
                                               request),
                                &c, NULL)
                  : rc;
}

int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    ct_call c = {CT_EXSCAN, sendbuf, count, t, recvbuf, count, t, op, 0, comm, request};
    int native, rc = plan(&c, NULL, &native);
    return native ? made_native(PMPI_Exscan_init(sendbuf, recvbuf, count, t, op, comm, info,
                                                 request),
                                &c, NULL)
                  : rc;
}

#if MPI_VERSION >= 4
/* ---- Large counts: the int path where everything fits (the plan keeps its own
 * copy of the arrays), else the library's _c init with the program's arrays. ---- */

/* A _c init the library makes (counts past an int, arrays that do not convert, or
 * native chosen): counted and logged like the others, its size unknown (0). */
static int made_native_c(int rc, ct_coll coll, MPI_Comm comm)
{
    ct_call c = {.coll = coll, .comm = comm};
    return counted_native(rc, &c, 0);
}

int MPI_Bcast_init_c(void *buf, MPI_Count count, MPI_Datatype t, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(count))
        return MPI_Bcast_init(buf, (int)count, t, root, comm, info, request);
    return made_native_c(PMPI_Bcast_init_c(buf, count, t, root, comm, info, request),
                         CT_BCAST, comm);
}

int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype t,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(count))
        return MPI_Reduce_init(sendbuf, recvbuf, (int)count, t, op, root, comm, info, request);
    return made_native_c(PMPI_Reduce_init_c(sendbuf, recvbuf, count, t, op, root, comm, info,
                                            request),
                         CT_REDUCE, comm);
}

int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype t,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(count))
        return MPI_Allreduce_init(sendbuf, recvbuf, (int)count, t, op, comm, info, request);
    return made_native_c(PMPI_Allreduce_init_c(sendbuf, recvbuf, count, t, op, comm, info,
                                               request),
                         CT_ALLREDUCE, comm);
}

int MPI_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(sendcount) && CT_FITS_INT(recvcount))
        return MPI_Scatter_init(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                                recvtype, root, comm, info, request);
    return made_native_c(PMPI_Scatter_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, root, comm, info, request),
                         CT_SCATTER, comm);
}

int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(sendcount) && CT_FITS_INT(recvcount))
        return MPI_Gather_init(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                               recvtype, root, comm, info, request);
    return made_native_c(PMPI_Gather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, root, comm, info, request),
                         CT_GATHER, comm);
}

int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(sendcount) && CT_FITS_INT(recvcount))
        return MPI_Allgather_init(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                                  recvtype, comm, info, request);
    return made_native_c(PMPI_Allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                               recvtype, comm, info, request),
                         CT_ALLGATHER, comm);
}

int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(sendcount) && CT_FITS_INT(recvcount))
        return MPI_Alltoall_init(sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount,
                                 recvtype, comm, info, request);
    return made_native_c(PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm, info, request),
                         CT_ALLTOALL, comm);
}

int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, *rd = NULL, ret;
    if (n && CT_FITS_INT(sendcount) && !ct_dropin_counts_to_int(recvcounts, n, &rc) &&
        !ct_dropin_displs_to_int(displs, n, &rd)) {
        ct_call c = {CT_ALLGATHERV, sendbuf,     (int)sendcount, sendtype, recvbuf, 0,
                     recvtype,      MPI_OP_NULL, 0,              comm,     request};
        ct_vargs v = {NULL, NULL, rc, rd};
        int native;
        ret = plan(&c, &v, &native);
        free(rc);
        free(rd);
        if (!native)
            return ret;
    } else {
        free(rc);
        free(rd);
    }
    return made_native_c(PMPI_Allgatherv_init_c(sendbuf, sendcount, sendtype, recvbuf,
                                                recvcounts, displs, recvtype, comm, info,
                                                request),
                         CT_ALLGATHERV, comm);
}

int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    int n = ct_dropin_comm_size(comm), *sc = NULL, *sd = NULL, *rc = NULL, *rd = NULL, ret;
    int in_place = sendbuf == MPI_IN_PLACE;
    int fits = n && (in_place || (!ct_dropin_counts_to_int(sendcounts, n, &sc) &&
                                  !ct_dropin_displs_to_int(sdispls, n, &sd))) &&
               !ct_dropin_counts_to_int(recvcounts, n, &rc) &&
               !ct_dropin_displs_to_int(rdispls, n, &rd);
    if (fits) {
        ct_call c = {CT_ALLTOALLV, sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0,
                     comm, request};
        ct_vargs v = {sc, sd, rc, rd};
        int native;
        ret = plan(&c, &v, &native);
        free(sc), free(sd), free(rc), free(rd);
        if (!native)
            return ret;
    } else {
        free(sc), free(sd), free(rc), free(rd);
    }
    return made_native_c(PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                               recvcounts, rdispls, recvtype, comm, info,
                                               request),
                         CT_ALLTOALLV, comm);
}

int MPI_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, *rd = NULL, ret;
    int root_here = ct_dropin_is_root(comm, root); /* the arrays mean something there only */
    int fits = n && CT_FITS_INT(sendcount) &&
               (!root_here || (!ct_dropin_counts_to_int(recvcounts, n, &rc) &&
                               !ct_dropin_displs_to_int(displs, n, &rd)));
    if (fits) {
        ct_call c = {CT_GATHERV, sendbuf,     (int)sendcount, sendtype, recvbuf, 0,
                     recvtype,   MPI_OP_NULL, root,           comm,     request};
        ct_vargs v = {NULL, NULL, rc, rd};
        int native;
        ret = plan(&c, &v, &native);
        free(rc), free(rd);
        if (!native)
            return ret;
    } else {
        free(rc), free(rd);
    }
    return made_native_c(PMPI_Gatherv_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                             displs, recvtype, root, comm, info, request),
                         CT_GATHERV, comm);
}

int MPI_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                        const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    int n = ct_dropin_comm_size(comm), *sc = NULL, *sd = NULL, ret;
    int root_here = ct_dropin_is_root(comm, root);
    int fits = n && CT_FITS_INT(recvcount) &&
               (!root_here || (!ct_dropin_counts_to_int(sendcounts, n, &sc) &&
                               !ct_dropin_displs_to_int(displs, n, &sd)));
    if (fits) {
        ct_call c = {CT_SCATTERV, sendbuf,     0,    sendtype, recvbuf, (int)recvcount,
                     recvtype,    MPI_OP_NULL, root, comm,     request};
        ct_vargs v = {sc, sd, NULL, NULL};
        int native;
        ret = plan(&c, &v, &native);
        free(sc), free(sd);
        if (!native)
            return ret;
    } else {
        free(sc), free(sd);
    }
    return made_native_c(PMPI_Scatterv_init_c(sendbuf, sendcounts, displs, sendtype, recvbuf,
                                              recvcount, recvtype, root, comm, info, request),
                         CT_SCATTERV, comm);
}

int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request)
{
    if (CT_FITS_INT(recvcount))
        return MPI_Reduce_scatter_block_init(sendbuf, recvbuf, (int)recvcount, t, op, comm,
                                             info, request);
    return made_native_c(PMPI_Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, t, op,
                                                          comm, info, request),
                         CT_REDUCE_SCATTER_BLOCK, comm);
}

int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, ret;
    if (n && !ct_dropin_counts_to_int(recvcounts, n, &rc)) {
        ct_call c = {CT_REDUCE_SCATTER, sendbuf, 0, t, recvbuf, 0, t, op, 0, comm, request};
        ct_vargs v = {NULL, NULL, rc, NULL};
        int native;
        ret = plan(&c, &v, &native);
        free(rc);
        if (!native)
            return ret;
    }
    return made_native_c(PMPI_Reduce_scatter_init_c(sendbuf, recvbuf, recvcounts, t, op, comm,
                                                    info, request),
                         CT_REDUCE_SCATTER, comm);
}

int MPI_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype t,
                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(count))
        return MPI_Scan_init(sendbuf, recvbuf, (int)count, t, op, comm, info, request);
    return made_native_c(PMPI_Scan_init_c(sendbuf, recvbuf, count, t, op, comm, info, request),
                         CT_SCAN, comm);
}

int MPI_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype t,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (CT_FITS_INT(count))
        return MPI_Exscan_init(sendbuf, recvbuf, (int)count, t, op, comm, info, request);
    return made_native_c(PMPI_Exscan_init_c(sendbuf, recvbuf, count, t, op, comm, info,
                                            request),
                         CT_EXSCAN, comm);
}

#endif /* MPI_VERSION >= 4: the _c forms */
#endif /* CT_HAVE_PERSISTENT_COLL */

/* ---- Starting ---------------------------------------------------------------- */

static int start_one(MPI_Request *request)
{
    ct_plan *p = ct_plan_find(*request);
    if (!p)
        return PMPI_Start(request);
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    int was = ct_monitor_in_collective;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    int rc = ct_plan_start(p);
    ct_monitor_in_collective = was;
    if (ct_monitor_level)
        ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int rc = start_one(&requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
