/*
 * The drop-in's v-variants, reduce-scatters and scans (issue 22): MPI_Allgatherv,
 * MPI_Alltoallv, MPI_Gatherv, MPI_Scatterv, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Scan and MPI_Exscan, and their _c large-count forms
 * where the MPI has them, defined over PMPI like the eight in pmpi.c.
 *
 * The choice, per call, is the select layer's (src/select/select.h), as for the
 * eight in pmpi.c: COLLTUNE_<OP>_ALGORITHM (the operation's name in
 * capitals: COLLTUNE_REDUCE_SCATTER_BLOCK_ALGORITHM, ...) forces an algorithm;
 * else the loaded tuning table (COLLTUNE_TABLE), only for the operations whose
 * size every rank knows alike (allgatherv and reduce_scatter: the average
 * block; reduce_scatter_block, scan, exscan: the vector). Gatherv, scatterv and
 * alltoallv see only their own counts on most ranks: a size-keyed choice could
 * differ between ranks and deadlock, so they run native unless forced. A
 * commutative-only algorithm given a non-commutative op, arguments colltune
 * does not take (negative displacements, ...) and inter-communicators go to the
 * library; the monitor counts those native calls. COLLTUNE_LOG=debug logs each
 * call as pmpi.c does.
 *
 * The _c forms take the int path when every count and displacement fits in
 * an int, else go to the library's _c function (counted native).
 *
 * Non-blocking: MPI_Ibarrier, MPI_Iallgatherv, MPI_Ialltoallv, MPI_Igatherv,
 * MPI_Iscatterv, MPI_Ireduce_scatter_block, MPI_Ireduce_scatter, MPI_Iscan and
 * MPI_Iexscan (and _c) choose the same way (the blocking operation's
 * COLLTUNE_<OP>_ALGORITHM, or the table's non-blocking entries, else its blocking
 * ones) and run through src/nbc (a generalized request that pmpi.c's wait and test
 * family drives).
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
#include "select/select.h"

static void log_call(const ct_call *c, long long bytes, const char *ran)
{
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    char line[256];
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s%s %lld bytes -> %s\n",
                     rank, size, c->request ? "I" : "",
                     c->request ? ct_coll_name(c->coll) : ct_dropin_mpi_name(c->coll), bytes, ran);
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

static int intercept_v(const ct_call *c, const ct_vargs *v)
{
    ct_options o;
    int err = MPI_SUCCESS, inter = 0;
    long long bytes = ct_call_bytes_v(c, v);
    int native = (c->comm != MPI_COMM_NULL &&
                  PMPI_Comm_test_inter(c->comm, &inter) == MPI_SUCCESS && inter) ||
                 ct_dropin_choose(c, v, c->request ? CT_FORM_NONBLOCKING : CT_FORM_BLOCKING,
                                  bytes, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    int rc = native       ? ct_call_native_v(c, v) /* the non-blocking one with a request */
             : c->request ? ct_nbc_start(c, v, &o, 1, &ran)
                          : ct_call_run_v(c, v, &o, 1, &ran);
    ct_monitor_in_collective = 0;
    if (ct_monitor_level) {
        ct_monitor_time(ct_monitor_ticks() - t0);
        if (!strcmp(ran, "native"))
            ct_monitor_native(c->coll, bytes);
    }
    log_call(c, bytes, ran);
    return rc;
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm)
{
    ct_call c = {CT_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL,   0,       comm,      NULL};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return intercept_v(&c, &v);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    ct_call c = {CT_ALLTOALLV, sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm,
                 NULL};
    ct_vargs v = {sendcounts, sdispls, recvcounts, rdispls};
    return intercept_v(&c, &v);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    ct_call c = {CT_GATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL, root,   comm,      NULL};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return intercept_v(&c, &v);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm)
{
    ct_call c = {CT_SCATTERV, sendbuf, 0, sendtype, recvbuf, recvcount, recvtype,
                 MPI_OP_NULL, root,    comm, NULL};
    ct_vargs v = {sendcounts, displs, NULL, NULL};
    return intercept_v(&c, &v);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    ct_call c = {CT_REDUCE_SCATTER_BLOCK, sendbuf, recvcount, datatype, recvbuf, recvcount,
                 datatype, op, 0, comm, NULL};
    return intercept_v(&c, NULL);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    ct_call c = {CT_REDUCE_SCATTER, sendbuf, 0, datatype, recvbuf, 0, datatype, op, 0, comm,
                 NULL};
    ct_vargs v = {NULL, NULL, recvcounts, NULL};
    return intercept_v(&c, &v);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm)
{
    ct_call c = {CT_SCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm, NULL};
    return intercept_v(&c, NULL);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm)
{
    ct_call c = {CT_EXSCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm,
                 NULL};
    return intercept_v(&c, NULL);
}

/* ---- Non-blocking, without per-rank arrays ---------------------------------- */

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_BARRIER, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL,
                 MPI_OP_NULL, 0,    comm, request};
    return intercept_v(&c, NULL);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              MPI_Request *request)
{
    ct_call c = {CT_REDUCE_SCATTER_BLOCK, sendbuf, recvcount, datatype, recvbuf, recvcount,
                 datatype, op, 0, comm, request};
    return intercept_v(&c, NULL);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_SCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm,
                 request};
    return intercept_v(&c, NULL);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_EXSCAN, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm,
                 request};
    return intercept_v(&c, NULL);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL,   0,       comm,      request};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return intercept_v(&c, &v);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request)
{
    ct_call c = {CT_ALLTOALLV, sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm,
                 request};
    ct_vargs v = {sendcounts, sdispls, recvcounts, rdispls};
    return intercept_v(&c, &v);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_GATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype,
                 MPI_OP_NULL, root,   comm,      request};
    ct_vargs v = {NULL, NULL, recvcounts, displs};
    return intercept_v(&c, &v);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_SCATTERV, sendbuf, 0, sendtype, recvbuf, recvcount, recvtype,
                 MPI_OP_NULL, root,    comm, request};
    ct_vargs v = {sendcounts, displs, NULL, NULL};
    return intercept_v(&c, &v);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_REDUCE_SCATTER, sendbuf, 0, datatype, recvbuf, 0, datatype, op, 0, comm,
                 request};
    ct_vargs v = {NULL, NULL, recvcounts, NULL};
    return intercept_v(&c, &v);
}

/* ---- Large counts (MPI 4) ------------------------------------------------ */

#if MPI_VERSION >= 4

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                     MPI_Datatype recvtype, MPI_Comm comm)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, *rd = NULL, ret;
    if (!n || !CT_FITS_INT(sendcount) || ct_dropin_counts_to_int(recvcounts, n, &rc) ||
        ct_dropin_displs_to_int(displs, n, &rd)) {
        free(rc);
        ct_dropin_count_native(CT_ALLGATHERV, 0);
        return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm);
    }
    ret = MPI_Allgatherv(sendbuf, (int)sendcount, sendtype, recvbuf, rc, rd, recvtype, comm);
    free(rc);
    free(rd);
    return ret;
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    int n = ct_dropin_comm_size(comm), *sc = NULL, *sd = NULL, *rc = NULL, *rd = NULL, ret;
    int in_place = sendbuf == MPI_IN_PLACE;
    if (!n || (!in_place && (ct_dropin_counts_to_int(sendcounts, n, &sc) ||
                             ct_dropin_displs_to_int(sdispls, n, &sd))) ||
        ct_dropin_counts_to_int(recvcounts, n, &rc) || ct_dropin_displs_to_int(rdispls, n, &rd)) {
        free(sc);
        free(sd);
        free(rc);
        ct_dropin_count_native(CT_ALLTOALLV, 0);
        return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
    }
    ret = MPI_Alltoallv(sendbuf, sc, sd, sendtype, recvbuf, rc, rd, recvtype, comm);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    return ret;
}

int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                  void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                  MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, *rd = NULL, ret;
    int root_here = ct_dropin_is_root(comm, root); /* the arrays mean something at the root only */
    if (!n || !CT_FITS_INT(sendcount) ||
        (root_here && (ct_dropin_counts_to_int(recvcounts, n, &rc) || ct_dropin_displs_to_int(displs, n, &rd)))) {
        free(rc);
        ct_dropin_count_native(CT_GATHERV, 0);
        return PMPI_Gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                              recvtype, root, comm);
    }
    ret = MPI_Gatherv(sendbuf, (int)sendcount, sendtype, recvbuf, rc, rd, recvtype, root, comm);
    free(rc);
    free(rd);
    return ret;
}

int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int n = ct_dropin_comm_size(comm), *sc = NULL, *sd = NULL, ret;
    int root_here = ct_dropin_is_root(comm, root);
    if (!n || !CT_FITS_INT(recvcount) ||
        (root_here && (ct_dropin_counts_to_int(sendcounts, n, &sc) || ct_dropin_displs_to_int(displs, n, &sd)))) {
        free(sc);
        ct_dropin_count_native(CT_SCATTERV, 0);
        return PMPI_Scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                               recvtype, root, comm);
    }
    ret = MPI_Scatterv(sendbuf, sc, sd, sendtype, recvbuf, (int)recvcount, recvtype, root,
                       comm);
    free(sc);
    free(sd);
    return ret;
}

int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (!CT_FITS_INT(recvcount)) {
        ct_dropin_count_native(CT_REDUCE_SCATTER_BLOCK, 0);
        return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
    }
    return MPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, datatype, op, comm);
}

int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int n = ct_dropin_comm_size(comm), *rc = NULL, ret;
    if (!n || ct_dropin_counts_to_int(recvcounts, n, &rc)) {
        ct_dropin_count_native(CT_REDUCE_SCATTER, 0);
        return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    }
    ret = MPI_Reduce_scatter(sendbuf, recvbuf, rc, datatype, op, comm);
    free(rc);
    return ret;
}

int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm)
{
    if (!CT_FITS_INT(count)) {
        ct_dropin_count_native(CT_SCAN, 0);
        return PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm);
    }
    return MPI_Scan(sendbuf, recvbuf, (int)count, datatype, op, comm);
}

int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm)
{
    if (!CT_FITS_INT(count)) {
        ct_dropin_count_native(CT_EXSCAN, 0);
        return PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm);
    }
    return MPI_Exscan(sendbuf, recvbuf, (int)count, datatype, op, comm);
}

int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request)
{
    if (!CT_FITS_INT(recvcount)) {
        ct_dropin_count_native(CT_REDUCE_SCATTER_BLOCK, 0);
        return PMPI_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                            request);
    }
    return MPI_Ireduce_scatter_block(sendbuf, recvbuf, (int)recvcount, datatype, op, comm,
                                     request);
}

int MPI_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    if (!CT_FITS_INT(count)) {
        ct_dropin_count_native(CT_SCAN, 0);
        return PMPI_Iscan_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    }
    return MPI_Iscan(sendbuf, recvbuf, (int)count, datatype, op, comm, request);
}

/* The non-blocking v-forms with large counts go to the library, counted: the int
 * copies of their arrays would have to live until the request completes, which
 * nothing here sees when the call ends native. */
int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    ct_dropin_count_native(CT_ALLGATHERV, 0);
    return PMPI_Iallgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                              recvtype, comm, request);
}

int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                     const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    ct_dropin_count_native(CT_ALLTOALLV, 0);
    return PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                             rdispls, recvtype, comm, request);
}

int MPI_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                   MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    ct_dropin_count_native(CT_GATHERV, 0);
    return PMPI_Igatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           root, comm, request);
}

int MPI_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    ct_dropin_count_native(CT_SCATTERV, 0);
    return PMPI_Iscatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                            recvtype, root, comm, request);
}

int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          MPI_Request *request)
{
    ct_dropin_count_native(CT_REDUCE_SCATTER, 0);
    return PMPI_Ireduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
}

int MPI_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    if (!CT_FITS_INT(count)) {
        ct_dropin_count_native(CT_EXSCAN, 0);
        return PMPI_Iexscan_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    }
    return MPI_Iexscan(sendbuf, recvbuf, (int)count, datatype, op, comm, request);
}
#endif
