/* The non-blocking collectives' engine, between the API / drop-in and MPI.
 * Internal to colltune; the public side is in colltune.h. */
#ifndef CT_NBC_H
#define CT_NBC_H

#include "../api/call.h"

typedef struct ct_nbc_req ct_nbc_req;

/* Starts c (c->request set) with opts; on native_on_reject, refused calls and
 * native algorithms go to the MPI library's own non-blocking collective. */
int ct_nbc_start(const ct_call *c, const ct_options *opts, int native_on_reject,
                 const char **ran);

/* colltune's request behind an MPI request, or NULL. */
ct_nbc_req *ct_nbc_find(MPI_Request request);

/* Runs the application-side part of every colltune request among requests:
 * to its end (blocking: for the waits) or one step (the tests). */
void ct_nbc_drive(int count, MPI_Request *requests, int blocking);

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

/* Stops the progress thread (MPI_Finalize); in-flight requests finish first. */
void ct_progress_stop(void);

#endif
