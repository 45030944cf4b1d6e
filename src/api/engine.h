/*
 * What the engine's files share (src/api: errors.c, state.c, handles.c, checks.c, setup.c,
 * prepare.c, run.c, public.c): the per-communicator state and the steps of a call.
 * Internal to libcolltune (hidden from its users).
 */
#ifndef CT_API_ENGINE_H
#define CT_API_ENGINE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include "../coll/registry.h"
#include "../monitor/monitor.h"
#include "../sched/exec.h"
#include "call.h"
#include "colltune.h"
#include "job.h"

#define CT_ENGINE_HIDDEN __attribute__((visibility("hidden")))

/* A shared segment over a group of ranks that share memory: SHM_LANES lanes, each its
 * own flags (one cache line per rank of the communicator, by its rank), data and epoch.
 * state 0 before it is made, 1 ready, -1 refused (the group's ranks do not share memory).
 *
 * Lanes keep calls in flight apart (issue 36): a flag only rises, so two calls of one
 * rank on one set of flags must run one after the other. Blocking calls take lane 0, in
 * call order, as they always did (a rank's blocking calls are in order by nature; the
 * schedules' WAIT(PREV) keep a slower peer's reads safe). Non-blocking and persistent
 * starts take lanes 1 .. SHM_LANES - 1 in turn, in start order (the same on every rank:
 * MPI has every rank start a communicator's collectives in one order), so the lane of a
 * call is agreed without a message; their schedules open with a gate (WAIT(r, PREV) on
 * every rank of the group, itself included), polled like any step: the call waits there
 * until the lane's previous call is done everywhere. More starts in flight than lanes
 * wait at their gate for the earliest: never a deadlock, since every rank's waits and
 * tests drive all its pending calls and all ranks start them in one order. */
enum { FLAG_STRIDE = 64, /* one cache line per rank's flag in a shared segment */
       SHM_LANES = 4 };

typedef struct shm_lane {
    void *flags, *data;
    /* Calls on the lane so far: the epoch of its flags (each lane its own, so that a
     * call's "the previous call is done" means the previous call on this lane). */
    unsigned long long seq;
    /* Lane 0: its last call was the flat shm barrier and it completed on this rank
     * (run.c), so the next call's "previous call done" waits hold already (ct_exec_ctx.
     * prev_synced). Read and cleared by every call's epoch, so a call that does not say
     * otherwise leaves it 0. Every rank's own memory: all ranks run lane 0's calls in one
     * order, so they agree. */
    int after_barrier;
} shm_lane;

typedef struct shm_segment {
    int state;
    MPI_Comm comm;
    void *base;         /* the mapping: every lane's flags, then every lane's data */
    size_t bytes;       /* of data, per lane */
    size_t map_bytes;   /* of the whole mapping */
    shm_lane lane[SHM_LANES];
    unsigned long long starts; /* non-blocking and persistent starts so far: their lanes */
    /* The group's ranks may read each other's memory (ct_cma_probe, once at setup):
     * the one-copy algorithms' PULL steps, else their copy-through path. */
    int cma;
} shm_segment;

/* A blocking call's job kept for the next equal call: its memory and schedule, and the
 * call it served (but its buffers). A call equal to it (same operation, counts,
 * predefined types and op, root, algorithm and options) reuses the job as it is, without
 * checks or generation: the fast path. */
typedef struct job_slot {
    ct_job job;
    int fast_ok;              /* call/opts/alg hold the call the job serves as it is */
    /* Scatter, gather, allgather, alltoall run on byte views of the caller's buffers: on
     * the fast path only where those views are the caller's buffers themselves (dense
     * types, nothing packed or unpacked), which the next equal call then points at. */
    unsigned char bind_src, bind_dst;
    ct_call call;
    ct_options opts;
    char alg[64];
    unsigned long long used;  /* when it last served (the communicator's call count) */
} job_slot;

/* Jobs kept per communicator: programs alternate collectives (bcast, barrier, bcast, ...;
 * a reduce and a bcast a step), and with one kept job every call of such a loop paid the
 * whole preparation (issue 36: 4-6x MPICH's 8-byte time). The least recently used goes. */
enum { JOB_SLOTS = 4 };

typedef struct comm_state {
    MPI_Comm priv;      /* private duplicate: our messages never meet the app's */
    int size, rank, inter; /* of the program's communicator (ct_call_comm_shape) */
    atomic_int refs;    /* the communicator's attribute and each pending job (ct_job_retain):
                           the state outlives an MPI_Comm_free while a job still runs on it */
    unsigned seq;       /* calls so far, for tags */
    job_slot slots[JOB_SLOTS]; /* the blocking calls' jobs */
    job_slot *current;  /* the slot ct_call_prepare_in filled last */
    unsigned long long uses; /* blocking calls so far, for the slots' LRU order */
    int *node_of;       /* the node layout (ct_params.node_of), once a hierarchical
                           algorithm asked for it; NULL before */
    unsigned layout_id;
    /* Shared segments, made on the first call that needs them: the communicator's
     * (every rank on one node: the shared-memory algorithms) and its nodes' (one per
     * node of the layout: the shared-memory parts of the hierarchical ones). */
    shm_segment shm, node_shm;
} comm_state;


/* Why a call is refused: an MPI error class and a message. */
typedef struct ct_reject {
    int cls;
    char msg[MPI_MAX_ERROR_STRING];
} ct_reject;

/* ---- errors carrying colltune's own message (errors.c) */
CT_ENGINE_HIDDEN int ct_raise_message(MPI_Comm comm, int errclass, const char *msg);
CT_ENGINE_HIDDEN void ct_format_message(char *msg, size_t len, const char *fmt, va_list ap);

/* ---- per-communicator state, the node's shared segments, the node layout (state.c) */
CT_ENGINE_HIDDEN void ct_state_unref(comm_state *st, int collective);
CT_ENGINE_HIDDEN int ct_segment_setup(comm_state *st, shm_segment *seg, int color, int size, int rank);
CT_ENGINE_HIDDEN int ct_node_layout(comm_state *st, int size, int rank);
CT_ENGINE_HIDDEN int ct_comm_state_get(MPI_Comm comm, comm_state **out);

/* ---- handles a pending job keeps alive (handles.c) */
CT_ENGINE_HIDDEN int ct_predefined_op(MPI_Op op);

/* ---- argument checks (checks.c) */
CT_ENGINE_HIDDEN int ct_refuse(ct_reject *r, int cls, const char *fmt, ...);
CT_ENGINE_HIDDEN int ct_coll_rooted(ct_coll c);
CT_ENGINE_HIDDEN int ct_coll_reduces(ct_coll c);
CT_ENGINE_HIDDEN void ct_significant_sides(const ct_call *c, int rank, int *send, int *recv);
CT_ENGINE_HIDDEN int ct_check_vargs(const ct_call *c, const ct_vargs *v, int rank, int size, ct_reject *r);
CT_ENGINE_HIDDEN int ct_check_args(const ct_call *c, int rank, int size, int inter, int *commutative,
                      ct_reject *r);

/* ---- byte views and the per-family set-up of a job's schedule (setup.c) */
CT_ENGINE_HIDDEN int ct_prepare_schedule(comm_state *st, ct_job *job, const ct_registry_entry *e,
                            const ct_params *p);
CT_ENGINE_HIDDEN void ct_byte_ctx(ct_exec_ctx *x);
CT_ENGINE_HIDDEN int ct_setup_movement(const ct_call *c, comm_state *cs, ct_job *st, ct_params *p,
                          const ct_registry_entry *e);
CT_ENGINE_HIDDEN int ct_grow_vcounts(ct_job *st, int n);
CT_ENGINE_HIDDEN int ct_setup_movement_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *st,
                            ct_params *p, const ct_registry_entry *e);

/* ---- the common path of every call (prepare.c) */
CT_ENGINE_HIDDEN int ct_setup_reduction_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *job,
                             ct_params *p, const ct_registry_entry *e, const ct_exec_ctx *x);

/* ---- the fast path and the blocking run (run.c) */
CT_ENGINE_HIDDEN int ct_named_type(MPI_Datatype t);

/* ---- the fast path's small steps, inline: a repeated call pays no call between files */

/* The keyval of colltune's communicator attribute (state.c). */
CT_ENGINE_HIDDEN extern int ct_state_keyval;

/* Bumped whenever a communicator's state goes (its attribute's delete callback): a
 * handle MPI gives again to a new communicator must not find the old one's state. */
CT_ENGINE_HIDDEN extern atomic_uint ct_state_generation;

/* The state ct_comm_state_find found last on this thread. One per thread for the whole
 * library, defined in state.c: a static inside the inline function below was a copy per
 * file that calls it, each missing where another had just looked. Initial-exec TLS
 * (CT_TLS_FAST, monitor.h), as the monitor's flag: a repeated call reads it two or three
 * times, and the general model paid a __tls_get_addr call each (libcolltune is loaded at
 * start-up, by the drop-in's LD_PRELOAD or the program's link; dlopen'd, its few bytes of
 * TLS fit glibc's static reserve). */
typedef struct ct_state_cache {
    MPI_Comm comm;
    unsigned generation; /* 0: nothing remembered (the generations start at 1) */
    comm_state *st;
} ct_state_cache;
CT_ENGINE_HIDDEN extern _Thread_local ct_state_cache ct_state_last CT_TLS_FAST;

/* colltune's state of comm if it has one (no collective set-up, unlike
 * ct_comm_state_get). The last one found, per thread, is remembered: the attribute
 * lookup was a tenth of a repeated call's instructions (docs/BENCHMARKS.md section 39). */
static inline comm_state *ct_comm_state_find(MPI_Comm comm)
{
    ct_state_cache *last = &ct_state_last;
    unsigned generation = atomic_load_explicit(&ct_state_generation, memory_order_acquire);
    if (last->generation == generation && last->comm == comm)
        return last->st;
    int flag = 0;
    comm_state *st = NULL;
    if (comm == MPI_COMM_NULL || ct_state_keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, ct_state_keyval, &st, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    last->comm = comm;
    last->generation = generation;
    last->st = st;
    return st;
}

/* A call's epoch on its segment (job->segment; none: nothing): lane 0 for a blocking
 * call, the next of lanes 1 .. SHM_LANES - 1 for a non-blocking or persistent start
 * (see shm_segment), its flags and data pointed at. */
static inline void ct_job_take_epoch(ct_job *job)
{
    shm_segment *seg = job->segment;
    if (!seg)
        return;
    shm_lane *l = &seg->lane[0];
    job->x.prev_synced = 0;
    if (job->form != CT_JOB_BLOCKING) {
        l = &seg->lane[1 + seg->starts++ % (SHM_LANES - 1)];
        job->x.shm = l->data;
        job->x.flags = l->flags;
    } else {
        job->x.prev_synced = l->after_barrier;
        l->after_barrier = 0;
    }
    job->x.epoch = (++l->seq) << 24;
}

/* A kept job's next call: its tag, and its segment's epoch. */
static inline void ct_job_next_call(ct_job *job, comm_state *st)
{
    job->x.tag = (int)(st->seq++ & 0x7fff);
    ct_job_take_epoch(job);
}

#endif
