/*
 * The message monitor of the drop-in (after Furst and Coskun's message logger
 * for the SCC: the seed paper rcce-message-passing-monitoring-scc), switched by
 * COLLTUNE_MONITOR levels like theirs:
 *   off       nothing (the default);
 *   counters  hardware counters (perf_event_open: instructions, cycles, cache
 *             misses) and energy (RAPL powercap), time in MPI;
 *   count     + the number of messages and bytes this rank sends;
 *   peers     + per destination (world rank): messages and bytes, the
 *             application's point-to-point apart from colltune's collectives;
 *   sizes     + a log2 message-size histogram per destination.
 * Native collectives are counted as calls with their bytes. The hot path takes
 * no lock and allocates nothing: fixed per-peer arrays made at MPI_Init. At
 * MPI_Finalize rank 0 gathers every rank's data and writes one JSON file,
 * COLLTUNE_MONITOR_OUT (default colltune-monitor.json); `colltune monitor`
 * records it in the store.
 */
#ifndef CT_MONITOR_H
#define CT_MONITOR_H

#include <mpi.h>

#include "profile.h"

enum { CT_MON_OFF = 0, CT_MON_COUNTERS, CT_MON_COUNT, CT_MON_PEERS, CT_MON_SIZES };

/* The level in force (after ct_monitor_init). */
extern int ct_monitor_level;

/* Reads COLLTUNE_MONITOR and prepares the arrays; after MPI_Init. */
void ct_monitor_init(void);
/* One message of count elements of type to rank dest of comm (from level count on; the
 * level is checked here, inline, so that the drop-in makes no call below it). */
void ct_monitor_count_send(MPI_Comm comm, int dest, MPI_Count count, MPI_Datatype type);
static inline void ct_monitor_send(MPI_Comm comm, int dest, MPI_Count count,
                                   MPI_Datatype type)
{
    if (ct_monitor_level >= CT_MON_COUNT)
        ct_monitor_count_send(comm, dest, count, type);
}

/* ---- The receive side --------------------------------------------------------------
 * A receive is counted when it completes, from its status (source and size): blocking
 * receives and MPI_Mprobe/MPI_Improbe (a matched message is this rank's) at once; a
 * non-blocking one (MPI_Irecv, MPI_Isendrecv) is noted at its post in a fixed-size table
 * keyed by the request handle and counted when the wait and test family completes it. The
 * table takes no lock (a slot is claimed by compare-and-swap) and never allocates. */

/* Receives noted and not yet completed: when 0 the wait family skips the monitor. */
extern _Atomic int ct_monitor_pending;

/* A completed receive on comm with its status (MPI_SOURCE relative to comm). */
void ct_monitor_recv(MPI_Comm comm, const MPI_Status *status);
/* A non-blocking receive posted on comm, request *req. */
void ct_monitor_post(MPI_Comm comm, MPI_Request req);
/* The slot of noted receive `req`, or -1: called before the call that may complete it,
 * while the handle is live (MPI reuses a completed request's handle at once, so after
 * the call the handle may name another thread's new receive). */
long ct_monitor_find(MPI_Request req);
/* The receive found at slot for `req` completed with status: counts it. Returns 1 when
 * it was a noted receive. */
int ct_monitor_complete_at(long slot, MPI_Request req, const MPI_Status *status);
/* Request `req` freed or cancelled uncompleted: forgets it. */
void ct_monitor_forget(MPI_Request req);
/* What this rank counted so far as received from world rank peer (level peers and up),
 * layer 0: the application's point-to-point, 1: colltune's collectives. For tests. */
void ct_monitor_received(int layer, int peer, unsigned long long *msgs,
                         unsigned long long *bytes);
/* Bytes colltune's shared-memory steps copied into the node's segment (written) and
 * read out of it (copies and reductions; read), from level count on: the traffic of
 * the shared-memory algorithms, which send no message. */
void ct_monitor_count_shm(unsigned long long written, unsigned long long read);
static inline void ct_monitor_shm(unsigned long long written, unsigned long long read)
{
    if (ct_monitor_level >= CT_MON_COUNT || ct_profile_on) /* the profile's per operation */
        ct_monitor_count_shm(written, read);
}
/* The segment bytes counted so far on this rank (tests). */
void ct_monitor_shm_bytes(unsigned long long *written, unsigned long long *read);
/* One call of a native collective (op as ct_coll) moving bytes per rank. */
void ct_monitor_native(int op, long long bytes);
/* A cheap clock for the time in MPI: the TSC on x86-64 (invariant there; converted to
 * seconds at MPI_Finalize against MPI_Wtime over the whole run), else MPI_Wtime in ns. */
#if defined(__x86_64__)
#include <x86intrin.h>
static inline unsigned long long ct_monitor_ticks(void)
{
    return __rdtsc();
}
#else
static inline unsigned long long ct_monitor_ticks(void)
{
    return (unsigned long long)(PMPI_Wtime() * 1e9);
}
#endif
/* Ticks spent inside an intercepted MPI call. */
void ct_monitor_time(unsigned long long ticks);
/* Gathers and writes the record; before MPI_Finalize. */
void ct_monitor_finish(void);

/* Set while this thread runs colltune's own collectives (the executor's
 * messages then count as collective traffic); the progress thread sets it.
 * Initial-exec TLS: every message reads it, and the general model costs a
 * __tls_get_addr call each time (the library is loaded at start-up, or by
 * dlopen into glibc's static TLS reserve, which one int fits). */
#define CT_TLS_FAST __attribute__((tls_model("initial-exec")))
extern _Thread_local int ct_monitor_in_collective CT_TLS_FAST;

#endif
