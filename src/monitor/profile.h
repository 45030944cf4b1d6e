/*
 * The collective profile of the drop-in (issue 38) and its per-call timeline (issue 39):
 * COLLTUNE_PROFILE=on keeps, per {operation, call form, communicator size, message-size
 * bucket (log2), algorithm, segment size}, the number of calls, bytes, time inside the
 * call and a log2 histogram of the durations; COLLTUNE_TRACE=FILE also keeps the first
 * CT_PROFILE_TRACE_CAP calls of each rank as Chrome trace events.
 *
 * The tables are made at MPI_Init (ct_profile_init, called by ct_monitor_init) and
 * never grow: a point is found or claimed in a fixed open-addressing table by
 * compare-and-swap, its counters are atomic adds. Off, the drop-in pays one test of
 * ct_profile_on per call. At MPI_Finalize ct_monitor_finish gathers the points to rank 0
 * (ct_profile_gather) and writes them into the monitor's file under "profile".
 *
 * A non-blocking call is timed from its start to the completion the wait and test family
 * sees (ct_profile_begin / ct_profile_find / ct_profile_end), a persistent one from each
 * MPI_Start to its completion (its request registered at init: ct_profile_persistent).
 */
#ifndef CT_PROFILE_H
#define CT_PROFILE_H

#include <mpi.h>
#include <stdio.h>

enum { CT_PROF_BLOCKING = 0, CT_PROF_NONBLOCKING, CT_PROF_PERSISTENT, CT_PROF_NFORMS };
enum { CT_PROFILE_TRACE_CAP = 100000 };

/* 1 while the profile is on (after ct_profile_init). */
extern int ct_profile_on;
/* The operation (ct_coll + 1; 0: none) this thread's intercepted call runs, so that
 * the shared-memory bytes it moves are the operation's (ct_profile_shm). */
extern _Thread_local int ct_profile_op __attribute__((tls_model("initial-exec")));
/* Non-blocking and persistent calls started and not yet seen complete: while 0 the
 * wait and test family skips the profile. */
extern _Atomic int ct_profile_pending;

/* Reads COLLTUNE_PROFILE (on/off; anything else: one error line, the profile stays off)
 * and COLLTUNE_TRACE (which turns the profile on where COLLTUNE_PROFILE is unset); after
 * MPI_Init. */
void ct_profile_init(void);

/* The point of a call (found or made), or -1 when the table is full. alg: "native" or
 * colltune's registry name. */
int ct_profile_point(int op, int form, int comm_size, long long bytes, const char *alg,
                     long long segsize);
/* A completed call of point p that ran from t0 to t1 (ct_monitor_ticks) on comm. */
void ct_profile_record(int p, long long bytes, unsigned long long t0, unsigned long long t1,
                       MPI_Comm comm);
/* Shared-memory bytes a call of operation op moved (the monitor's ct_monitor_count_shm,
 * attributed to the operation running on this thread). */
void ct_profile_shm(int op, unsigned long long n);

/* A non-blocking call of point p started at t0 with request req. */
void ct_profile_begin(MPI_Request req, int p, long long bytes, unsigned long long t0,
                      MPI_Comm comm);
/* The in-flight entry of req, or -1: asked before the call that may complete it. */
long ct_profile_find(MPI_Request req);
/* Entry e (ct_profile_find) completed at t1. */
void ct_profile_end(long e, unsigned long long t1);

/* A persistent request made by an *_init call of point p (counted as an init). */
void ct_profile_persistent(MPI_Request req, int p, long long bytes, MPI_Comm comm);
/* MPI_Start of req at t0: a registered persistent collective becomes in flight. */
void ct_profile_started(MPI_Request req, unsigned long long t0);
/* req freed: forgotten as in flight and as persistent. */
void ct_profile_forget(MPI_Request req);

/* This rank's totals of operation op so far (the MPI_T performance variables): calls
 * served by colltune and gone native, seconds inside the calls, bytes, shared-memory
 * bytes. All zero while the profile is off. */
void ct_profile_op_totals(int op, unsigned long long *colltune_calls,
                          unsigned long long *native_calls, double *seconds,
                          unsigned long long *bytes, unsigned long long *shm_bytes);

/* Collective over MPI_COMM_WORLD, before MPI_Finalize: gathers the points (and writes
 * COLLTUNE_TRACE at rank 0). Nothing while off. */
void ct_profile_gather(void);
/* Rank 0, after ct_profile_gather: writes "profile":{...} (no comma around it). */
void ct_profile_write_json(FILE *f);

#endif
