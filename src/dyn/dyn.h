/*
 * Dynamic broadcasts for task-based runtimes (colltune issue 10), over plain
 * MPI point-to-point; after Swartvagher (COMPAS 2020), who did it inside
 * NewMadeleine. Protocol, header format, threading and limits: docs/DYNBCAST.md.
 *
 * The owner of a piece of data posts one ct_dyn_isend per destination, possibly
 * before the data exists; at ct_dyn_ready the sends posted so far become one
 * binomial broadcast over the destination list (one destination: a plain send),
 * each message carrying its subtree's (rank, tag) list. A rank that receives
 * such a message forwards it to its children from colltune's progress thread,
 * with no call from the application, and completes the ct_dyn_irecv that
 * matches (origin, tag), or keeps the data until one is posted.
 *
 * Requests are MPI generalized requests: MPI_Wait, MPI_Test, MPI_Waitall (mixed
 * with other requests), ct_wait ... work on them. Every function is thread-safe
 * (MPI_THREAD_MULTIPLE): the runtime's workers may call them concurrently, on
 * different data objects or the same one.
 *
 * Internal header of libcolltune (not installed): programs built in this tree
 * include "dyn/dyn.h" with src/ on their include path.
 */
#ifndef CT_DYN_H
#define CT_DYN_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One piece of data that may be sent to several ranks (at its owner). */
typedef struct ct_dyn_data ct_dyn_data;

/* Collective over comm. Duplicates comm privately (dynamic-broadcast ranks are
 * comm's ranks) and starts colltune's progress thread (ct_progress_start), or
 * reuses it. Without the thread (no MPI_THREAD_MULTIPLE, COLLTUNE_PROGRESS=off)
 * the engine progresses inside the ct_dyn_* calls and ct_dyn_progress, and a
 * rank forwards only when it calls one of them. One dynamic-broadcast
 * communicator at a time: MPI_ERR_OTHER if already initialized. */
int ct_dyn_init(MPI_Comm comm);

/* As ct_dyn_init, without starting a progress thread: for a caller that already
 * has a thread polling MPI (a task runtime's communication loop), which then
 * calls ct_dyn_progress in that loop. Another progress thread of colltune's,
 * if one runs, still serves the engine. */
int ct_dyn_init_polled(MPI_Comm comm);

/* Collective; every dyn request must be complete (sent and received) on every
 * rank. Frees the private communicator and unhooks the engine. */
int ct_dyn_finalize(void);

/* 1 (default): sends posted before ready are grouped into one broadcast;
 * 0: every send is a plain send at ready (the StarPU-over-MPI baseline). Takes
 * effect at the next ct_dyn_ready. Local. */
int ct_dyn_set_grouping(int on);

/* Describes count elements of type at buf, owned by this rank (the origin).
 * buf need not hold the data before ct_dyn_ready. type must stay valid until
 * ct_dyn_data_free. */
int ct_dyn_data_create(void *buf, int count, MPI_Datatype type, ct_dyn_data **data);

/* Sends data to dest (a rank of the dyn communicator, the origin itself
 * allowed) under tag (0 <= tag). Before ct_dyn_ready the send is queued for
 * grouping; after, it goes out at once as a plain send. *req completes when
 * this destination's copy no longer needs buf (the message that carries it,
 * directly or through its subtree, has left this rank). */
int ct_dyn_isend(ct_dyn_data *data, int dest, int tag, MPI_Request *req);

/* buf now holds the data: the sends posted so far go out (one: a plain send;
 * several: a binomial broadcast over the destination list in posting order,
 * the origin at its root). Later ct_dyn_isend are plain sends. Once only. */
int ct_dyn_ready(ct_dyn_data *data);

/* Frees data; its requests must have completed (MPI_ERR_PENDING otherwise). */
int ct_dyn_data_free(ct_dyn_data *data);

/* Receives the data origin sent to this rank under tag, whoever forwards it
 * (MPI_ANY_SOURCE and MPI_ANY_TAG match anything). Matching is first-come
 * among equal (origin, tag): two messages with the same (origin, tag) to one
 * rank may arrive in either order (they can take different paths). The status
 * gives origin, tag and the element count. MPI_ERR_TRUNCATE (in the request's
 * status) when the data is larger than count elements of type. */
int ct_dyn_irecv(void *buf, int count, MPI_Datatype type, int origin, int tag,
                 MPI_Request *req);

/* One pass of the engine (receive, forward, deliver, complete). Only needed
 * without a progress thread; harmless with one. Returns 1 when it moved
 * something. */
int ct_dyn_progress(void);

/* This rank's counters since ct_dyn_init. messages_sent: every dyn message this
 * rank sent (as origin and as forwarder); bytes_sent: their payload bytes
 * (headers excluded); forwarded: the messages it sent as a forwarder;
 * plain_sends: origin messages to a single destination (one pending send at
 * ready, late sends, grouping off); broadcasts: ready calls that grouped two or
 * more destinations; received: dyn messages that arrived here whole;
 * unexpected: those that arrived before their ct_dyn_irecv. */
typedef struct ct_dyn_stats {
    long messages_sent, bytes_sent, forwarded, plain_sends, broadcasts;
    long received, unexpected;
} ct_dyn_stats;
void ct_dyn_stats_get(ct_dyn_stats *s);

#ifdef __cplusplus
}
#endif
#endif
