/*
 * Persistent collectives (MPI 4: MPI_Bcast_init ..., MPI_Start): the call is
 * prepared once, at init (checks, algorithm, schedule, byte views), and every
 * start runs that job again through the non-blocking engine (nbc.c), with a new
 * tag and the program's input copied again where preparing packed it.
 *
 * The program's handle is an inactive persistent request of MPI's own (a
 * receive from MPI_PROC_NULL that is never started), so every MPI call that
 * sees it while colltune's plan is idle (a wait, a test, MPI_Request_get_status,
 * in C or Fortran) behaves as on any inactive request: at once, empty status.
 * While a start is in flight the engine's request is registered under that
 * handle, and the wait and test family (complete.c) finds and completes it,
 * leaving the handle as it was. MPI_Request_free frees the plan and the handle.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nbc.h"

struct ct_plan {
    ct_job job;
    ct_coll coll;
    MPI_Comm comm;               /* the program's, for errors at MPI_Start */
    ct_options opts;             /* .algorithm: the prepared one (the registry's name) */
    MPI_Datatype types[2];       /* duplicates of the program's derived types, or NULL */
    MPI_Request handle;
    atomic_int active;           /* a start not yet collected (ct_nbc_start_job) */
    struct ct_plan *next;
};

static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_plan *plans;
static atomic_int nplans; /* the lookups skip the lock while there is none */
/* Bumped (under plans_lock) whenever a plan is made or freed: a thread's last plan found
 * (ct_plan_find) stays right while it is unchanged, so a loop of MPI_Start on one handle
 * takes neither the lock nor the list walk at each start. */
static atomic_uint plans_gen;
static _Thread_local struct {
    MPI_Request handle;
    ct_plan *plan;
    unsigned gen;
} last_found;

static int derived(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return t != MPI_DATATYPE_NULL &&
           PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
           combiner != MPI_COMBINER_NAMED;
}

/* The program may free its datatypes once the init returns: the plan packs
 * with, and the job sends, its own duplicates. */
static int keep_type(MPI_Datatype *t, MPI_Datatype *kept)
{
    *kept = MPI_DATATYPE_NULL;
    if (!derived(*t))
        return MPI_SUCCESS;
    int rc = PMPI_Type_dup(*t, kept);
    if (rc == MPI_SUCCESS)
        *t = *kept;
    return rc;
}

static void plan_free(ct_plan *p)
{
    for (int i = 0; i < 2; i++)
        if (p->types[i] != MPI_DATATYPE_NULL)
            PMPI_Type_free(&p->types[i]);
    ct_job_free(&p->job);
    free(p);
}

int ct_plan_init(const ct_call *call, const ct_vargs *v, const ct_options *opts, int *go,
                 const char **ran)
{
    *go = 0;
    ct_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ct_raise_error(call->comm, MPI_ERR_NO_MEM, "%s: out of memory",
                              ct_coll_name(call->coll));
    ct_sched_init(&p->job.sched);
    atomic_init(&p->active, 0);
    p->types[0] = p->types[1] = MPI_DATATYPE_NULL;
    ct_call c = *call;
    int rc = keep_type(&c.sendtype, &p->types[0]);
    if (rc == MPI_SUCCESS && call->recvtype == call->sendtype)
        c.recvtype = c.sendtype; /* one duplicate for both */
    else if (rc == MPI_SUCCESS)
        rc = keep_type(&c.recvtype, &p->types[1]);
    if (rc != MPI_SUCCESS) {
        plan_free(p);
        return ct_raise_error(call->comm, rc, "%s: cannot keep the datatype",
                              ct_coll_name(call->coll));
    }
    rc = ct_call_prepare(&c, v, opts, CT_REJECT_REPORT, &p->job, go, ran);
    if (*go != 1) {
        plan_free(p);
        return rc; /* the library's (*go -1), or refused */
    }
    *go = 0;
    if ((rc = ct_job_retain(&p->job)) != MPI_SUCCESS) {
        plan_free(p);
        return ct_raise_error(call->comm, rc, "%s: cannot keep the call's handles",
                              ct_coll_name(call->coll));
    }
    if ((rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF,
                             &p->handle)) != MPI_SUCCESS) {
        ct_job_release(&p->job);
        plan_free(p);
        return ct_raise_error(call->comm, rc, "%s: cannot make the request",
                              ct_coll_name(call->coll));
    }
    p->coll = c.coll;
    p->comm = c.comm;
    if (opts)
        p->opts = *opts;
    else
        ct_options_init(&p->opts);
    p->opts.algorithm = *ran; /* what the job runs, not what was asked (a table's name) */
    pthread_mutex_lock(&plans_lock);
    p->next = plans;
    plans = p;
    atomic_fetch_add(&nplans, 1);
    atomic_fetch_add_explicit(&plans_gen, 1, memory_order_release);
    pthread_mutex_unlock(&plans_lock);
    *call->request = p->handle;
    *go = 1;
    return MPI_SUCCESS;
}

ct_plan *ct_plan_find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL || atomic_load(&nplans) == 0)
        return NULL;
    unsigned gen = atomic_load_explicit(&plans_gen, memory_order_acquire);
    if (last_found.plan && last_found.gen == gen && last_found.handle == handle)
        return last_found.plan;
    pthread_mutex_lock(&plans_lock);
    gen = atomic_load_explicit(&plans_gen, memory_order_relaxed);
    ct_plan *p = plans;
    while (p && p->handle != handle)
        p = p->next;
    pthread_mutex_unlock(&plans_lock);
    if (p) {
        last_found.handle = handle;
        last_found.plan = p;
        last_found.gen = gen;
    }
    return p;
}

int ct_plan_start(ct_plan *p)
{
    return ct_nbc_start_job(&p->job, p->coll, p->comm, &p->opts, p->handle, &p->active);
}

int ct_plan_free(ct_plan *p, MPI_Request *handle)
{
    pthread_mutex_lock(&plans_lock);
    ct_plan **at = &plans;
    while (*at && *at != p)
        at = &(*at)->next;
    if (*at) {
        *at = p->next;
        atomic_fetch_sub(&nplans, 1);
        atomic_fetch_add_explicit(&plans_gen, 1, memory_order_release);
    }
    pthread_mutex_unlock(&plans_lock);
    ct_job_release(&p->job);
    plan_free(p);
    return PMPI_Request_free(handle);
}

ct_coll ct_plan_coll(const ct_plan *p)
{
    return p->coll;
}

/* colltune.h: the public API's MPI_Start and MPI_Request_free for ct_X_init's requests
 * (the drop-in's MPI_Start and MPI_Request_free do the same for MPI_X_init's). */
int ct_start(MPI_Request *request)
{
    ct_plan *p = request ? ct_plan_find(*request) : NULL;
    return p ? ct_plan_start(p) : PMPI_Start(request);
}

int ct_request_free(MPI_Request *request)
{
    ct_plan *p = request ? ct_plan_find(*request) : NULL;
    return p ? ct_plan_free(p, request) : PMPI_Request_free(request);
}
