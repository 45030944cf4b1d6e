/* The executor: runs one rank's schedule over MPI point-to-point. */
#ifndef CT_EXEC_H
#define CT_EXEC_H

#include <mpi.h>

#include "reduce_local.h"
#include "sched.h"

typedef struct ct_exec_ctx {
    void *src, *dst;          /* the caller's buffers (element 0) */
    MPI_Datatype datatype;
    MPI_Aint extent, true_lb, true_extent;
    int contiguous;           /* no holes: local copies may use memcpy */
    size_t type_size;
    MPI_Op op;
    ct_reduce_fn reduce_fn;   /* colltune's kernel for op on datatype (ct_reduce_kernel);
                                 NULL: MPI_Reduce_local */
    MPI_Comm comm;            /* colltune's private communicator */
    int tag;
    /* Shared-memory algorithms (CT_BUF_SHM, SIGNAL, WAIT): the node's segment
     * (NULL: none) and its bytes, the ranks' flags (one atomic 64-bit counter
     * per rank, flag_stride bytes apart), this rank's index among them, and the
     * call's epoch (its number << 24: steps are unique to the call). */
    void *shm;
    size_t shm_bytes;
    void *flags;
    size_t flag_stride;
    int shm_rank;
    unsigned long long epoch;
    /* Bytes of this call (the message, vector or block): every rank's must be equal. Each
     * SIGNAL publishes it beside the flag (with the call's number), each WAIT compares the
     * peer's: a mismatch is MPI_ERR_TRUNCATE on the rank that sees it, which then raises its
     * flag past the call so that no rank hangs on it. */
    unsigned long long shm_size;
    /* The previous call on these flags was a barrier on them that completed here: every
     * rank had finished the calls before it, and it read no data, so this call's
     * WAIT(peer, CT_STEP_PREV) hold already and are not waited for (a cache line from
     * each peer less on the way; set per call by the engine, src/api/engine.h). */
    int prev_synced;
} ct_exec_ctx;

/* Fills the datatype fields of ctx. */
int ct_exec_describe_type(ct_exec_ctx *ctx, MPI_Datatype datatype);

/* Memory the executor reuses from call to call (temporaries, requests, the
 * pack buffer of non-contiguous copies), so a repeated collective allocates
 * nothing. Zero-initialise; release with ct_workspace_free. */
typedef struct ct_workspace {
    /* Each buffer with its size in bytes, grown by ct_grow (grow.h). */
    void *slab;
    size_t slab_len;
    void *reqs;         /* MPI_Request[]: a void * that ct_grow may write as one */
    size_t reqs_len;
    void *scratch;
    size_t scratch_len;
    /* A PULL of a type with holes lands here first, then is copied element by element
     * (the destination's holes must stay as they are). */
    void *pulled;
    size_t pulled_len;
} ct_workspace;

void ct_workspace_free(ct_workspace *w);

/* Runs s to completion. Returns MPI_SUCCESS or the first MPI error. */
int ct_exec(const ct_sched *s, const ct_exec_ctx *ctx, ct_workspace *w);

/* The same in steps, for the non-blocking collectives: begin lays out the
 * temporaries (two schedules with the same buffer table get the same layout
 * from the same workspace, so the parts of a split schedule share them);
 * step posts and tests without blocking and moves through every round that
 * has completed (*done = 1 at the end); finish blocks until the end. The
 * schedule, context and workspace must outlive the run. */
typedef struct ct_exec_run {
    const ct_sched *s;
    const ct_exec_ctx *c;
    ct_workspace *w;
    void *bases[CT_MAX_BUFS];
    int round;
    int nreq;   /* requests of the current round; -1: not posted yet */
    int local;  /* the round's next local operation (a WAIT may stop it there) */
    int rc;
} ct_exec_run;

int ct_exec_begin(ct_exec_run *x, const ct_sched *s, const ct_exec_ctx *ctx, ct_workspace *w);
int ct_exec_step(ct_exec_run *x, int *done);
int ct_exec_finish(ct_exec_run *x);

#endif
