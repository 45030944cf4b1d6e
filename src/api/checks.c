/*
 * Argument checks: what colltune refuses, with MPI's error class and a message.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- Checks ------------------------------------------------------------- */



int ct_refuse(ct_reject *r, int cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ct_format_message(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->cls = cls;
    return cls;
}

int ct_coll_rooted(ct_coll c)
{
    return c == CT_BCAST || c == CT_REDUCE || c == CT_SCATTER || c == CT_GATHER ||
           c == CT_GATHERV || c == CT_SCATTERV;
}

/* The operations that reduce: an op, one datatype, the executor on its elements. */
int ct_coll_reduces(ct_coll c)
{
    return c == CT_REDUCE || c == CT_ALLREDUCE || c == CT_REDUCE_SCATTER_BLOCK ||
           c == CT_REDUCE_SCATTER || c == CT_SCAN || c == CT_EXSCAN;
}

/* Which (count, type) pairs this rank's call must have right. */
void ct_significant_sides(const ct_call *c, int rank, int *send, int *recv)
{
    int root = rank == c->root;
    *send = *recv = 0;
    switch (c->coll) {
    case CT_BCAST:
    case CT_REDUCE:
    case CT_ALLREDUCE:
        *recv = 1;
        break;
    case CT_SCATTER:
        *send = root;
        *recv = !(root && c->recvbuf == MPI_IN_PLACE);
        break;
    case CT_GATHER:
        *send = !(root && c->sendbuf == MPI_IN_PLACE);
        *recv = root;
        break;
    case CT_ALLGATHER:
    case CT_ALLTOALL:
    case CT_ALLGATHERV:
    case CT_ALLTOALLV:
        *send = c->sendbuf != MPI_IN_PLACE;
        *recv = 1;
        break;
    case CT_SCATTERV:
        *send = root;
        *recv = !(root && c->recvbuf == MPI_IN_PLACE);
        break;
    case CT_GATHERV:
        *send = !(root && c->sendbuf == MPI_IN_PLACE);
        *recv = root;
        break;
    case CT_REDUCE_SCATTER_BLOCK:
    case CT_REDUCE_SCATTER:
    case CT_SCAN:
    case CT_EXSCAN:
        *recv = 1;
        break;
    default:
        break;
    }
}

/* The v-variants' arrays: present where ct_significant_sides, no negative count. (A
 * negative displacement is legal: the byte views start at the lowest block.) */
int ct_check_vargs(const ct_call *c, const ct_vargs *v, int rank, int size, ct_reject *r)
{
    static const char *const names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
    const char *cname = ct_coll_name(c->coll);
    int send, recv;
    ct_significant_sides(c, rank, &send, &recv);
    /* Which arrays this rank's call must have right. */
    int need[4] = {0, 0, 0, 0};
    switch (c->coll) {
    case CT_ALLGATHERV:
    case CT_GATHERV:
        need[2] = need[3] = recv;
        break;
    case CT_SCATTERV:
        need[0] = need[1] = send;
        break;
    case CT_ALLTOALLV:
        need[0] = need[1] = send;
        need[2] = need[3] = 1;
        break;
    case CT_REDUCE_SCATTER:
        need[2] = 1;
        break;
    default:
        return MPI_SUCCESS;
    }
    const int *arrays[4] = {v ? v->sendcounts : NULL, v ? v->sdispls : NULL,
                            v ? v->recvcounts : NULL, v ? v->rdispls : NULL};
    for (int k = 0; k < 4; k++) {
        if (!need[k])
            continue;
        if (!arrays[k])
            return ct_refuse(r, MPI_ERR_ARG, "%s: %s is NULL", cname, names[k]);
        for (int i = 0; k % 2 == 0 && i < size; i++)
            if (arrays[k][i] < 0)
                return ct_refuse(r, MPI_ERR_COUNT, "%s: negative %s[%d] %d", cname, names[k], i,
                              arrays[k][i]);
    }
    return MPI_SUCCESS;
}

/* Whether a datatype is committed and a predefined operation is defined for a datatype
 * are not visible through MPI's query functions: MPI is asked on a communicator of this
 * process alone with MPI_ERRORS_RETURN, so a "no" raises nothing on the application's
 * handlers (a zero-count MPI_Pack checks that the type is committed; a zero-count
 * MPI_Reduce, which communicates nothing, checks the operation against the type as the
 * real call would: MPI_BAND on MPI_DOUBLE, MPI_MAXLOC on MPI_INT, a predefined operation
 * on a derived type, whatever this MPI refuses). MPI_COMM_NULL if it could not be made:
 * then nothing is asked. */
static MPI_Comm probe_comm = MPI_COMM_NULL;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER; /* one collective at a time */

static void probe_init(void)
{
    MPI_Comm c;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &c) != MPI_SUCCESS)
        return;
    if (PMPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN) == MPI_SUCCESS)
        probe_comm = c;
    else
        PMPI_Comm_free(&c);
}

static int type_committed(MPI_Datatype t)
{
    char out[1];
    int pos = 0;
    pthread_once(&probe_once, probe_init);
    return probe_comm == MPI_COMM_NULL ||
           PMPI_Pack(out, 0, t, out, 0, &pos, probe_comm) == MPI_SUCCESS;
}

static int op_defined_for(MPI_Op op, MPI_Datatype t)
{
    char in[1], out[1];
    pthread_once(&probe_once, probe_init);
    if (probe_comm == MPI_COMM_NULL)
        return 1;
    pthread_mutex_lock(&probe_lock);
    int rc = PMPI_Reduce(in, out, 0, t, op, 0, probe_comm);
    pthread_mutex_unlock(&probe_lock);
    return rc == MPI_SUCCESS;
}

/* The argument checks MPI asks for; MPI_SUCCESS or the class, with *r. */
int ct_check_args(const ct_call *c, int rank, int size, int inter, int *commutative,
                      ct_reject *r)
{
    const char *cname = ct_coll_name(c->coll);
    int send, recv;
    ct_significant_sides(c, rank, &send, &recv);
    if (send && c->sendcount < 0)
        return ct_refuse(r, MPI_ERR_COUNT, "%s: negative count %d", cname, c->sendcount);
    if (recv && c->recvcount < 0)
        return ct_refuse(r, MPI_ERR_COUNT, "%s: negative count %d", cname, c->recvcount);
    if ((send && c->sendtype == MPI_DATATYPE_NULL) || (recv && c->recvtype == MPI_DATATYPE_NULL))
        return ct_refuse(r, MPI_ERR_TYPE, "%s: MPI_DATATYPE_NULL", cname);
    if (ct_coll_rooted(c->coll) && !inter && (c->root < 0 || c->root >= size))
        return ct_refuse(r, MPI_ERR_ROOT, "%s: root %d outside [0, %d)", cname, c->root, size);
    if ((send && !type_committed(c->sendtype)) || (recv && !type_committed(c->recvtype)))
        return ct_refuse(r, MPI_ERR_TYPE, "%s: datatype not committed", cname);
    *commutative = 1;
    int root = rank == c->root;
    switch (c->coll) {
    case CT_BCAST:
        if (c->recvbuf == MPI_IN_PLACE)
            return ct_refuse(r, MPI_ERR_BUFFER, "bcast: MPI_IN_PLACE is not allowed");
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE:
    case CT_REDUCE_SCATTER_BLOCK:
    case CT_REDUCE_SCATTER:
    case CT_SCAN:
    case CT_EXSCAN: {
        int rc;
        if (c->op == MPI_OP_NULL)
            return ct_refuse(r, MPI_ERR_OP, "%s: MPI_OP_NULL", cname);
        if ((rc = PMPI_Op_commutative(c->op, commutative)) != MPI_SUCCESS)
            return ct_refuse(r, MPI_ERR_OP, "%s: invalid operation", cname);
        if (!op_defined_for(c->op, c->recvtype))
            return ct_refuse(r, MPI_ERR_OP, "%s: operation not defined for the datatype", cname);
        if (c->sendbuf == MPI_IN_PLACE && c->coll == CT_REDUCE && !root)
            return ct_refuse(r, MPI_ERR_BUFFER, "reduce: MPI_IN_PLACE is only valid at the root");
        if (c->recvbuf == MPI_IN_PLACE)
            return ct_refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE as receive buffer", cname);
        if (c->recvcount > 0 && c->sendbuf == c->recvbuf && c->recvbuf != NULL &&
            (c->coll != CT_REDUCE || root))
            return ct_refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    }
    case CT_SCATTER:
    case CT_GATHER:
    case CT_SCATTERV:
    case CT_GATHERV: {
        int scatter = c->coll == CT_SCATTER || c->coll == CT_SCATTERV;
        const void *inplace_side = scatter ? c->recvbuf : c->sendbuf;
        const void *other_side = scatter ? c->sendbuf : c->recvbuf;
        if (other_side == MPI_IN_PLACE || (!root && inplace_side == MPI_IN_PLACE))
            return ct_refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is only valid as the root's %s "
                          "buffer", cname, scatter ? "receive" : "send");
        if (root && inplace_side != MPI_IN_PLACE && c->sendbuf == c->recvbuf &&
            c->sendbuf != NULL && c->sendcount > 0 && c->recvcount > 0)
            return ct_refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    }
    case CT_ALLGATHER:
    case CT_ALLTOALL:
    case CT_ALLGATHERV:
    case CT_ALLTOALLV:
        if (c->recvbuf == MPI_IN_PLACE)
            return ct_refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE as receive buffer", cname);
        if (c->sendbuf != MPI_IN_PLACE && c->sendbuf == c->recvbuf && c->sendbuf != NULL &&
            c->sendcount > 0 && c->recvcount > 0)
            return ct_refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    default:
        break;
    }
    /* A rank that both sends and receives locally must see equal sizes (the
     * type signatures of a block must match). */
    int both = c->coll >= CT_SCATTER && c->coll <= CT_ALLTOALL && send && recv;
    if (both && !inter) {
        int ss, rs;
        if (PMPI_Type_size(c->sendtype, &ss) != MPI_SUCCESS ||
            PMPI_Type_size(c->recvtype, &rs) != MPI_SUCCESS)
            return ct_refuse(r, MPI_ERR_TYPE, "%s: invalid datatype", cname);
        long long sb = (long long)c->sendcount * ss, rb = (long long)c->recvcount * rs;
        if (sb > rb)
            return ct_refuse(r, MPI_ERR_TRUNCATE,
                          "%s: %lld bytes sent per block but only %lld received", cname, sb, rb);
        if (sb < rb)
            return ct_refuse(r, MPI_ERR_ARG, "%s: %lld bytes sent per block but %lld expected",
                          cname, sb, rb);
    }
    return MPI_SUCCESS;
}
