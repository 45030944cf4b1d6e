/*
 * A prepared collective call: its schedule, executor context and memory, and
 * what to unpack into the caller's buffer at the end. A blocking call uses the
 * communicator's job (reused from call to call); a non-blocking call owns one
 * for as long as it is in flight. Internal to colltune.
 */
#ifndef CT_API_JOB_H
#define CT_API_JOB_H

#include "../coll/registry.h"
#include "../sched/exec.h"
#include "call.h"

typedef struct ct_job {
    ct_sched sched;
    ct_exec_ctx x;
    ct_workspace work;
    ct_params params;
    const ct_registry_entry *alg;
    int empty;              /* nothing to move (zero bytes): done at once */
    /* Non-contiguous types of the data-movement collectives go through these. */
    void *pack_src, *pack_dst;
    size_t pack_src_len, pack_dst_len;
    int unpack_after;       /* x.dst (unpack_bytes) goes into unpack_to at the end */
    void *unpack_to;
    long long unpack_count;
    MPI_Datatype unpack_type;
    size_t unpack_bytes;
    /* colltune's state of the communicator (opaque), and what a non-blocking job holds
     * between ct_job_retain and ct_job_release. */
    void *state;
    /* The shared segment the call's schedule runs on (opaque; NULL: none): the
     * communicator's, or its node's for a hierarchical one with a shared-memory part. */
    void *segment;
    MPI_Datatype own_type; /* a duplicate of the program's derived datatype */
    MPI_Op held_op;        /* a user-defined op whose MPI_Op_free waits for the job */
    /* The schedule cache of a communicator's reused job. */
    int have_key;
    const ct_registry_entry *key_alg;
    ct_params key_params;
    /* The v-variants' and reduce_scatter's per-rank counts and displacements in the
     * schedule's elements (ct_params.counts ...): 4 * N entries (vcounts_len: bytes,
     * ct_grow). */
    size_t *vcounts;
    size_t vcounts_len;
    /* What preparing copied out of the program's buffers (a packed input, the
     * receive buffer whose gaps must survive): redone at each start of a
     * persistent call (ct_job_restart), as the program refills them in between. */
    struct ct_repack {
        const void *from;
        long long count;
        MPI_Datatype type;
        void *to;
        size_t bytes;
    } repack[3];
    int nrepack;
    int takes_tag; /* the call took a tag of the communicator's sequence */
    /* How the call came: blocking, non-blocking (its start prepares it), persistent (its
     * init prepares it, each MPI_Start runs it): which lane of a shared segment it
     * takes, and when (engine.h). */
    int form;
} ct_job;

enum { CT_JOB_BLOCKING = 0, CT_JOB_NONBLOCKING, CT_JOB_PERSISTENT };

/* Checks c and prepares *job for it (a fresh job: zero it first and init its
 * schedule). Returns MPI_SUCCESS with *go = 1 when colltune runs the call; with
 * *go = 0 the call is over (native MPI ran it, or it was refused) and the
 * return value is its result; for a non-blocking call (c->request) the native
 * path leaves *c->request set; with CT_REJECT_REPORT, *go = -1 says the call is
 * the library's and nothing ran. v: the v-variants' arrays (NULL: none); the
 * schedule takes the counts here (MPI forbids changing them before completion). */
int ct_call_prepare(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                    int native_on_reject, ct_job *job, int *go, const char **ran);

/* The next start of a prepared job (a persistent call, MPI_Start): a new tag
 * and shared-memory epoch, as every call takes, and the program's input copied
 * again where preparing packed it. The schedule, algorithm and checks are the
 * ones of the preparation. */
int ct_job_restart(ct_job *job);

/* After the schedule ran: the unpack into the caller's buffer. */
int ct_job_finish(ct_job *job);

/* A non-blocking job keeps what it uses valid after the program frees it: a
 * reference on its communicator's state (the private duplicate it runs on), a
 * duplicate of a derived datatype (put in the job's place of the program's), and
 * the user-defined op (the program's MPI_Op_free of it is deferred). After a
 * successful ct_call_prepare; ct_job_release gives them back at completion. */
int ct_job_retain(ct_job *job);
void ct_job_release(ct_job *job);

/* The drop-in's MPI_Op_free: 1 when a pending job holds *op (then *op is set to
 * MPI_OP_NULL and the real free happens when the last job using it is released),
 * 0 when the caller must free it now. */
int ct_op_free_deferred(MPI_Op *op);

/* Frees what a job owns (not the job itself). */
void ct_job_free(ct_job *job);

/* Whether n elements of t are n * size(t) plain bytes, back to back from the
 * buffer's start (no holes, no offset): such buffers are sent as bytes. */
int ct_type_dense(MPI_Datatype t, int *dense);

/* Raises an MPI error with colltune's message on comm (as the blocking calls
 * do), returning the code. */
int ct_raise_error(MPI_Comm comm, int errclass, const char *fmt, ...);

#endif
