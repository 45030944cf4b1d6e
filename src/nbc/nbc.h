/* The non-blocking collectives' engine, between the API / drop-in and MPI.
 * Internal to colltune; the public side is in colltune.h. */
#ifndef CT_NBC_H
#define CT_NBC_H

#include "../api/job.h"

#include <stdatomic.h>

typedef struct ct_nbc_req ct_nbc_req;

/* Starts c (c->request set; v: the v-variants' arrays, or NULL) with opts; on
 * native_on_reject, refused calls and native algorithms go to the MPI library's
 * own non-blocking collective. */
int ct_nbc_start(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                 int native_on_reject, const char **ran);

/* Starts job, a persistent call's prepared job that stays its owner's (the
 * plan's: src/nbc/persistent.c), under the program's handle: the waits find the
 * request through handle, and completing it leaves handle as it is (inactive).
 * *active (the plan's, 0 while idle) is set here and cleared once the start is
 * collected or dropped: MPI_ERR_REQUEST when it is still set (the previous start in
 * flight). */
int ct_nbc_start_job(ct_job *job, ct_coll coll, MPI_Comm comm, const ct_options *opts,
                     MPI_Request handle, atomic_int *active);

/* Persistent collectives (src/nbc/persistent.c). ct_plan_init prepares c
 * (c->request: where the handle goes) once for repeated starts: *go = 1, the
 * plan is made and *c->request is its handle; *go = -1, the call is the
 * library's (nothing done: the caller makes MPI's own persistent request);
 * *go = 0, refused (the return value). */
typedef struct ct_plan ct_plan;
int ct_plan_init(const ct_call *c, const ct_vargs *v, const ct_options *opts, int *go,
                 const char **ran);
/* colltune's plan behind a handle, or NULL (a request of MPI's own). */
ct_plan *ct_plan_find(MPI_Request handle);
/* MPI_Start: MPI_ERR_REQUEST while the previous start is in flight. */
int ct_plan_start(ct_plan *p);
/* MPI_Request_free of an idle plan: the plan and its handle (*handle MPI_REQUEST_NULL).
 * A start not yet completed is ct_nbc_release's, which calls this once it is over. */
int ct_plan_free(ct_plan *p, MPI_Request *handle);
ct_coll ct_plan_coll(const ct_plan *p);

/* colltune's request behind an MPI request, or NULL. */
ct_nbc_req *ct_nbc_find(MPI_Request request);

/* One step of every application part still to run (each request's part, once
 * the progress thread's part is over), and the poll hook when the waits run it;
 * never blocks. Nonzero when something moved. */
int ct_nbc_poll(void);
/* Whether the waits must poll: application parts are pending, or the hook runs
 * in the waits. */
int ct_nbc_busy(void);
/* Whether r's operation is over (its result is in the caller's buffers). */
int ct_nbc_done(const ct_nbc_req *r);
/* Frees a done request *request (r): *request becomes MPI_REQUEST_NULL, status
 * (or MPI_STATUS_IGNORE) the empty status of a collective with MPI_ERROR set to
 * the operation's result, which is returned; a failure is also raised through
 * the communicator's error handler. */
int ct_nbc_collect(ct_nbc_req *r, MPI_Request *request, MPI_Status *status);
/* The status of a done request r (without freeing it, for the get_status
 * forms); returns the operation's result. */
int ct_nbc_peek(const ct_nbc_req *r, MPI_Status *status);
/* MPI_Cancel on a colltune request is erroneous: the error, raised on its
 * communicator; MPI_SUCCESS for another request. */
int ct_nbc_misuse(MPI_Request request, const char *call);
/* MPI_Request_free on r, the program's *request (erroneous in MPI while in flight, but
 * the libraries accept it, and so does colltune): a done r is freed at once; one in
 * flight (*in_flight set) runs on and is freed by the first poll that finds it over, a
 * persistent call's plan with it. *request becomes MPI_REQUEST_NULL either way. */
int ct_nbc_release(ct_nbc_req *r, MPI_Request *request, int *in_flight);
/* Drives the requests freed in flight until none is left (MPI_Finalize, before MPI
 * goes: every rank drains, so their parts meet). */
void ct_nbc_drain(void);
/* One poll when requests freed in flight are pending (the drop-in's blocking collectives:
 * a program that freed its request may never call a wait again). */
void ct_nbc_poll_orphans(void);
/* Releases what requests freed by MPI held (after a PMPI completion call that
 * may have freed some; MPI_Finalize). */
void ct_nbc_reap(void);

/* The wait and test family for any mix of requests (src/nbc/complete.c), with
 * MPI's semantics; ct_wait, ct_test, ct_waitall and ct_testall are public
 * (colltune.h). The get_status forms do not free what they find complete. */
int ct_waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int ct_testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status);
int ct_waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[]);
int ct_testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[]);
int ct_request_get_status(MPI_Request request, int *flag, MPI_Status *status);
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
int ct_request_get_status_all(int count, const MPI_Request requests[], int *flag,
                              MPI_Status statuses[]);
int ct_request_get_status_any(int count, const MPI_Request requests[], int *index, int *flag,
                              MPI_Status *status);
int ct_request_get_status_some(int incount, const MPI_Request requests[], int *outcount,
                               int indices[], MPI_Status statuses[]);
#endif

/* A poll hook (the dynamic-broadcast engine, src/dyn): the progress thread
 * calls it at every pass while it is set, outside the engine's lock, and
 * never sleeps for good meanwhile, as messages may come unannounced. It
 * returns CT_PROGRESS_MOVED when it did something and CT_PROGRESS_BUSY while
 * it has operations in flight (the thread then polls without pausing; idle, it
 * naps up to COLLTUNE_HOOK_IDLE_US, default 200 us, between passes). Without
 * the thread, ct_wait, ct_test, ct_waitall and ct_testall call it. One hook at
 * a time; set_hook(NULL) returns once no call of the old hook is running. */
enum { CT_PROGRESS_MOVED = 1, CT_PROGRESS_BUSY = 2 };
void ct_progress_set_hook(int (*poll)(void));
/* Wakes the progress thread from its nap (new work for the hook). */
void ct_progress_kick(void);

/* As ct_progress_start (collective over comm), but only where this node has a
 * core none of its ranks is bound to (or COLLTUNE_PROGRESS_CORES names some):
 * else MPI_ERR_OTHER and no thread, as one would take time from the ranks. */
int ct_progress_start_on_free_core(MPI_Comm comm);

/* Stops the progress thread (MPI_Finalize); in-flight requests finish first. */
void ct_progress_stop(void);

#endif
