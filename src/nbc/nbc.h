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

/* Stops the progress thread (MPI_Finalize); in-flight requests finish first. */
void ct_progress_stop(void);

#endif
