/*
 * Blocking calls: the fast path (a kept job equal to the call runs as it is) and the
 * whole path otherwise.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* ---- The fast path of blocking calls ---------------------------------------- */

int ct_named_type(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return t == MPI_DATATYPE_NULL ||
           (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
            combiner == MPI_COMBINER_NAMED);
}

/* The operations whose job takes the caller's buffers as they are (no packing). */
static int typed_kind(ct_coll coll)
{
    return coll == CT_BCAST || coll == CT_REDUCE || coll == CT_ALLREDUCE || coll == CT_BARRIER;
}

/* The data movements, whose job takes byte views of the caller's buffers: fast when the
 * views are the buffers themselves (see job_slot.bind_src). */
static int moving_kind(ct_coll coll)
{
    return coll == CT_SCATTER || coll == CT_GATHER || coll == CT_ALLGATHER ||
           coll == CT_ALLTOALL;
}

static int fast_kind(ct_coll coll)
{
    return typed_kind(coll) || moving_kind(coll);
}

static int same_name(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int fast_match(const job_slot *slot, const ct_call *c, const ct_options *o)
{
    const ct_call *f = &slot->call;
    const ct_options *fo = &slot->opts;
    return slot->fast_ok && f->coll == c->coll && f->sendcount == c->sendcount &&
           f->recvcount == c->recvcount && f->sendtype == c->sendtype &&
           f->recvtype == c->recvtype && f->op == c->op && f->root == c->root &&
           (f->sendbuf == MPI_IN_PLACE) == (c->sendbuf == MPI_IN_PLACE) &&
           !strcmp(slot->alg, o->algorithm) && fo->has_segsize == o->has_segsize &&
           (!o->has_segsize || fo->segsize == o->segsize) && fo->radix == o->radix &&
           same_name(fo->intra, o->intra) && same_name(fo->inter, o->inter);
}

/* The kept job that serves c as it is, or NULL. */
static job_slot *fast_find(comm_state *st, const ct_call *c, const ct_options *o)
{
    for (int i = 0; i < JOB_SLOTS; i++)
        if (fast_match(&st->slots[i], c, o))
            return &st->slots[i];
    return NULL;
}

/* Remembers c, which just ran through the whole path in slot, when the next equal call
 * may skip it: predefined datatypes and op only (a derived type freed and made again
 * may come back under the same handle with another layout). */
static void fast_remember(job_slot *slot, const ct_call *c, const ct_options *o)
{
    slot->fast_ok = 0;
    if (slot->job.empty || !o || !o->algorithm || strlen(o->algorithm) >= sizeof slot->alg ||
        !fast_kind(c->coll) || !ct_named_type(c->sendtype) || !ct_named_type(c->recvtype) ||
        !(c->op == MPI_OP_NULL || ct_predefined_op(c->op)))
        return;
    if (moving_kind(c->coll)) {
        /* Only views that are the caller's buffers may follow the next call's buffers; a
         * view of job memory (packed input, output unpacked at the end, an in-place
         * alltoall's copy) holds this call's data. A side the rank does not use has no
         * view (NULL). */
        const ct_job *job = &slot->job;
        slot->bind_src = c->sendbuf != MPI_IN_PLACE && job->x.src == c->sendbuf;
        slot->bind_dst = job->x.dst == c->recvbuf;
        if (job->unpack_after || job->nrepack || (job->x.src && !slot->bind_src) ||
            (job->x.dst && !slot->bind_dst))
            return;
    }
    slot->call = *c;
    slot->call.request = NULL;
    slot->opts = *o;
    snprintf(slot->alg, sizeof slot->alg, "%s", o->algorithm);
    slot->opts.algorithm = slot->alg;
    slot->fast_ok = 1;
}


/* The flat barrier on the communicator's shared flags: once it completed on this rank,
 * every rank had finished its calls before it (the next call need not wait for that). */
static int syncs_lane(const ct_job *job)
{
    return job->segment && job->form == CT_JOB_BLOCKING && job->alg->info.coll == CT_BARRIER &&
           (job->alg->info.flags & CT_ALG_SHARED_MEMORY) &&
           !(job->alg->info.flags & CT_ALG_HIERARCHICAL);
}

static int run_job(const ct_call *c, ct_job *job)
{
    int rc = MPI_SUCCESS;
    if (!job->empty) {
        rc = ct_exec(&job->sched, &job->x, &job->work);
        if (rc == MPI_SUCCESS)
            rc = ct_job_finish(job);
        if (rc == MPI_SUCCESS && syncs_lane(job))
            ((shm_segment *)job->segment)->lane[0].after_barrier = 1;
    }
    if (rc != MPI_SUCCESS)
        return ct_raise_error(c->comm, rc, "%s/%s: failed (%s)", ct_coll_name(c->coll),
                              job->alg->info.name,
                              rc == MPI_ERR_NO_MEM     ? "out of memory"
                              : rc == MPI_ERR_TRUNCATE ? "the ranks' counts differ"
                                                       : "MPI error");
    return MPI_SUCCESS;
}

int ct_call_run(const ct_call *c, const ct_options *opts, int native_on_reject,
                const char **ran)
{
    int go, rc;
    comm_state *st;
    job_slot *slot;
    if (opts && opts->algorithm && fast_kind(c->coll) && (st = ct_comm_state_find(c->comm)) &&
        (slot = fast_find(st, c, opts))) {
        ct_job *job = &slot->job;
        *ran = job->alg->info.name;
        if (moving_kind(c->coll)) {
            if (slot->bind_src)
                job->x.src = (void *)c->sendbuf;
            if (slot->bind_dst)
                job->x.dst = c->recvbuf;
        } else if (c->coll != CT_BARRIER) {
            job->x.src = job->params.in_place ? c->recvbuf : (void *)c->sendbuf;
            job->x.dst = c->recvbuf;
        }
        slot->used = ++st->uses;
        ct_job_next_call(job, st);
        return run_job(c, job);
    }
    rc = ct_call_prepare(c, NULL, opts, native_on_reject, NULL, &go, ran);
    if (!go)
        return rc;
    if ((rc = ct_comm_state_get(c->comm, &st)) != MPI_SUCCESS)
        return rc;
    slot = st->current;
    if ((rc = run_job(c, &slot->job)) == MPI_SUCCESS)
        fast_remember(slot, c, opts);
    else
        slot->fast_ok = 0;
    return rc;
}

int ct_call_run_v(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                  int native_on_reject, const char **ran)
{
    int go, rc;
    comm_state *st;
    if (!v)
        return ct_call_run(c, opts, native_on_reject, ran);
    rc = ct_call_prepare(c, v, opts, native_on_reject, NULL, &go, ran);
    if (!go)
        return rc;
    if ((rc = ct_comm_state_get(c->comm, &st)) != MPI_SUCCESS)
        return rc;
    st->current->fast_ok = 0; /* the job now holds this call */
    return run_job(c, &st->current->job);
}
