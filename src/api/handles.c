/*
 * The handles a pending job keeps alive: communicators, datatypes and user ops freed
 * by the program while a non-blocking or persistent call still needs them.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static atomic_int held_comms, held_types; /* what pending jobs hold (ct_handles_held) */

/* ---- Handles a pending job keeps alive ------------------------------------
 * MPI lets a program free the communicator, datatype and op of a non-blocking
 * collective right after starting it. A job keeps its communicator state by
 * reference (the private duplicate it runs on), a derived datatype by
 * duplicating it, and a user-defined op by deferring the program's MPI_Op_free
 * (MPI has no way to duplicate an op). */

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held_op {
    MPI_Op op;
    int count;    /* pending jobs using it */
    int deferred; /* the program freed it: free it when count drops to 0 */
} *held_op_table;
static int held_op_len, held_op_cap;
static atomic_int held_ops;

int ct_predefined_op(MPI_Op op)
{
    static const MPI_Op named[] = {MPI_OP_NULL, MPI_MAX,  MPI_MIN,    MPI_SUM,    MPI_PROD,
                                   MPI_LAND,    MPI_BAND, MPI_LOR,    MPI_BOR,    MPI_LXOR,
                                   MPI_BXOR,    MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE,
                                   MPI_NO_OP};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (op == named[i])
            return 1;
    return 0;
}

static int hold_op(MPI_Op op)
{
    if (ct_predefined_op(op))
        return MPI_SUCCESS;
    pthread_mutex_lock(&op_lock);
    int i = 0;
    while (i < held_op_len && held_op_table[i].op != op)
        i++;
    if (i == held_op_len) {
        if (held_op_len == held_op_cap) {
            int ncap = held_op_cap ? 2 * held_op_cap : 8;
            struct held_op *n = realloc(held_op_table, sizeof *n * (size_t)ncap);
            if (!n) {
                pthread_mutex_unlock(&op_lock);
                return MPI_ERR_NO_MEM;
            }
            held_op_table = n;
            held_op_cap = ncap;
        }
        held_op_table[held_op_len++] = (struct held_op){op, 0, 0};
    }
    held_op_table[i].count++;
    pthread_mutex_unlock(&op_lock);
    atomic_fetch_add(&held_ops, 1);
    return MPI_SUCCESS;
}

static void release_op(MPI_Op op)
{
    if (ct_predefined_op(op))
        return;
    MPI_Op to_free = MPI_OP_NULL;
    pthread_mutex_lock(&op_lock);
    for (int i = 0; i < held_op_len; i++)
        if (held_op_table[i].op == op) {
            if (--held_op_table[i].count == 0) {
                if (held_op_table[i].deferred)
                    to_free = op;
                held_op_table[i] = held_op_table[--held_op_len];
            }
            break;
        }
    pthread_mutex_unlock(&op_lock);
    atomic_fetch_sub(&held_ops, 1);
    if (to_free != MPI_OP_NULL)
        PMPI_Op_free(&to_free);
}

int ct_op_free_deferred(MPI_Op *op)
{
    int deferred = 0;
    pthread_mutex_lock(&op_lock);
    for (int i = 0; i < held_op_len; i++)
        if (held_op_table[i].op == *op) {
            held_op_table[i].deferred = deferred = 1;
            break;
        }
    pthread_mutex_unlock(&op_lock);
    if (deferred)
        *op = MPI_OP_NULL;
    return deferred;
}

static int derived_type(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return t != MPI_DATATYPE_NULL && PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) ==
                                         MPI_SUCCESS &&
           combiner != MPI_COMBINER_NAMED;
}

int ct_job_retain(ct_job *job)
{
    comm_state *st = job->state;
    job->own_type = MPI_DATATYPE_NULL;
    job->held_op = MPI_OP_NULL;
    /* The datatype a job still uses after its start: the reduction's element type (sends,
     * receives and the op) or the type a packed result is unpacked into at the end. */
    MPI_Datatype used = job->unpack_after ? job->unpack_type : job->x.datatype;
    if (!job->empty && derived_type(used)) {
        int rc = PMPI_Type_dup(used, &job->own_type);
        if (rc != MPI_SUCCESS)
            return rc;
        if (job->x.datatype == used)
            job->x.datatype = job->own_type;
        if (job->unpack_type == used)
            job->unpack_type = job->own_type;
        atomic_fetch_add(&held_types, 1);
    }
    if (!job->empty && job->x.op != MPI_OP_NULL) {
        int rc = hold_op(job->x.op);
        if (rc != MPI_SUCCESS) {
            ct_job_release(job);
            return rc;
        }
        job->held_op = job->x.op;
    }
    if (st) {
        atomic_fetch_add(&st->refs, 1);
        atomic_fetch_add(&held_comms, 1);
    }
    return MPI_SUCCESS;
}

void ct_job_release(ct_job *job)
{
    if (job->own_type != MPI_DATATYPE_NULL) {
        PMPI_Type_free(&job->own_type);
        atomic_fetch_sub(&held_types, 1);
    }
    if (job->held_op != MPI_OP_NULL) {
        release_op(job->held_op);
        job->held_op = MPI_OP_NULL;
    }
    if (job->state) {
        comm_state *st = job->state;
        job->state = NULL;
        atomic_fetch_sub(&held_comms, 1);
        ct_state_unref(st, 0);
    }
}

void ct_handles_held(int *comms, int *datatypes, int *ops)
{
    if (comms)
        *comms = atomic_load(&held_comms);
    if (datatypes)
        *datatypes = atomic_load(&held_types);
    if (ops)
        *ops = atomic_load(&held_ops);
}
