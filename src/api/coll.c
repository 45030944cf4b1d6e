/*
 * The blocking collectives of the public API: argument checks, the choice of
 * algorithm, and the hand-over of a generated schedule to the executor.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../coll/registry.h"
#include "../sched/exec.h"
#include "call.h"
#include "../nbc/nbc.h"
#include "window_lock.h"
#include "colltune.h"
#include "job.h"
#include "../tune/table.h"

void ct_options_init(ct_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->split = CT_SPLIT_AUTO;
}

/* ---- Errors ------------------------------------------------------------- */

/* MPI error codes carrying colltune's own message, created on first use so
 * that MPI_Error_string explains what was wrong. */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static int raise_message(MPI_Comm comm, int errclass, const char *msg)
{
    /* A small table of messages already registered, so repeated errors do
     * not create codes without bound. */
    static struct {
        char msg[MPI_MAX_ERROR_STRING];
        int code;
    } known[32];
    static int nknown;
    int code = errclass;
    pthread_mutex_lock(&err_lock);
    int i;
    for (i = 0; i < nknown; i++)
        if (strcmp(known[i].msg, msg) == 0)
            break;
    if (i < nknown) {
        code = known[i].code;
    } else if (MPI_Add_error_code(errclass, &code) == MPI_SUCCESS) {
        MPI_Add_error_string(code, msg);
        if (nknown < (int)(sizeof known / sizeof known[0])) {
            snprintf(known[nknown].msg, sizeof known[nknown].msg, "%s", msg);
            known[nknown++].code = code;
        }
    } else {
        code = errclass;
    }
    pthread_mutex_unlock(&err_lock);
    /* MPI_COMM_NULL has no handler: MPI raises such errors on MPI_COMM_WORLD. */
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

/* "colltune: " and the formatted text, cut to fit. */
static void format_message(char *msg, size_t len, const char *fmt, va_list ap)
{
    int n = snprintf(msg, len, "colltune: ");
    vsnprintf(msg + n, len - (size_t)n, fmt, ap);
}

int ct_raise_error(MPI_Comm comm, int errclass, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    format_message(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return raise_message(comm, errclass, msg);
}

void ct_job_free(ct_job *job)
{
    ct_sched_free(&job->sched);
    ct_workspace_free(&job->work);
    free(job->pack_src);
    free(job->pack_dst);
    free(job->vcounts);
    job->vcounts = NULL;
    job->vcounts_len = 0;
    job->pack_src = job->pack_dst = NULL;
    job->pack_src_len = job->pack_dst_len = 0;
    job->have_key = 0;
}

/* ---- Per-communicator state --------------------------------------------- */

/* A shared segment: flags (one cache line per rank of the communicator, by its
 * rank) then data, over a group of ranks that share memory. state 0 before it is
 * made, 1 ready, -1 refused (the group's ranks do not share memory). */
typedef struct shm_segment {
    int state;
    MPI_Comm comm;
    MPI_Win win;
    void *flags, *data;
    size_t bytes;
    /* Calls on it so far: the epoch of its flags (each segment its own, so that a
     * call's "the previous call is done" means the previous call on this segment). */
    unsigned long long seq;
} shm_segment;

/* A blocking call's job kept for the next equal call: its memory and schedule, and the
 * call it served (but its buffers). A call equal to it (same operation, counts,
 * predefined types and op, root, algorithm and options) reuses the job as it is, without
 * checks or generation: the fast path. */
typedef struct job_slot {
    ct_job job;
    int fast_ok;              /* call/opts/alg hold the call the job serves as it is */
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
    atomic_int refs;    /* the communicator's attribute and each pending job (ct_job_retain):
                           the state outlives an MPI_Comm_free while a job still runs on it */
    unsigned seq;       /* calls so far, for tags */
    job_slot slots[JOB_SLOTS]; /* the blocking calls' jobs */
    job_slot *current;  /* the slot call_prepare filled last */
    unsigned long long uses; /* blocking calls so far, for the slots' LRU order */
    int *node_of;       /* the node layout (ct_params.node_of), once a hierarchical
                           algorithm asked for it; NULL before */
    unsigned layout_id;
    /* Shared segments, made on the first call that needs them: the communicator's
     * (every rank on one node: the shared-memory algorithms) and its nodes' (one per
     * node of the layout: the shared-memory parts of the hierarchical ones). */
    shm_segment shm, node_shm;
} comm_state;

static int state_keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t keyval_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_int held_comms, held_types; /* what pending jobs hold (ct_handles_held) */

/* ---- Every live segment, freed before MPI finalizes -------------------------------
 * A segment's window must go before the MPI library tears down its one-sided component:
 * freed from the communicator's attribute at MPI_Finalize (MPI_COMM_WORLD's attributes go
 * late, in ompi_comm_finalize), MPI_Win_free crashed Debian's Open MPI 4.1.4 (issue 37).
 * MPI deletes MPI_COMM_SELF's attributes first: an attribute there frees every segment
 * still alive, on every rank in the order they were made (the order in which the ranks
 * made them together), before anything else goes. Under keyval_lock. */
typedef struct live_segment {
    MPI_Win win;
    MPI_Comm comm;
    shm_segment *owner; /* NULL once its state is gone (left for MPI_Finalize) */
} live_segment;
static live_segment *live;
static size_t nlive, live_cap;
static int self_keyval = MPI_KEYVAL_INVALID;

static int segments_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    pthread_mutex_lock(&keyval_lock);
    for (size_t i = 0; i < nlive; i++) {
        PMPI_Win_free(&live[i].win);
        PMPI_Comm_free(&live[i].comm);
        if (live[i].owner)
            live[i].owner->state = 0; /* the communicator's own deletion frees nothing */
    }
    free(live);
    live = NULL;
    nlive = live_cap = 0;
    pthread_mutex_unlock(&keyval_lock);
    return MPI_SUCCESS;
}

/* Records seg, just made; the MPI_COMM_SELF attribute on the first. */
static int segment_track(shm_segment *seg)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&keyval_lock);
    if (self_keyval == MPI_KEYVAL_INVALID &&
        ((rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, segments_finalize, &self_keyval,
                                       NULL)) != MPI_SUCCESS ||
         (rc = PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL)) != MPI_SUCCESS))
        self_keyval = MPI_KEYVAL_INVALID;
    if (rc == MPI_SUCCESS && nlive == live_cap) {
        size_t cap = live_cap ? 2 * live_cap : 8;
        live_segment *grown = realloc(live, cap * sizeof *grown);
        if (grown) {
            live = grown;
            live_cap = cap;
        } else {
            rc = MPI_ERR_NO_MEM;
        }
    }
    if (rc == MPI_SUCCESS)
        live[nlive++] = (live_segment){seg->win, seg->comm, seg};
    pthread_mutex_unlock(&keyval_lock);
    return rc;
}

/* The state owning seg goes. collective: its window is freed now, on every rank of the
 * segment at once; otherwise it stays for MPI_Finalize. */
static void segment_untrack(shm_segment *seg, int collective)
{
    live_segment gone = {MPI_WIN_NULL, MPI_COMM_NULL, NULL};
    pthread_mutex_lock(&keyval_lock);
    for (size_t i = 0; i < nlive; i++) {
        if (live[i].owner != seg)
            continue;
        if (collective) {
            gone = live[i];
            memmove(&live[i], &live[i + 1], (nlive - i - 1) * sizeof *live);
            nlive--;
        } else {
            live[i].owner = NULL;
        }
        break;
    }
    pthread_mutex_unlock(&keyval_lock);
    /* Outside the lock: the free waits for the segment's other ranks, whose other
     * threads may need the lock meanwhile. */
    if (gone.owner) {
        PMPI_Win_free(&gone.win);
        PMPI_Comm_free(&gone.comm);
    }
}

/* Drops a reference; the last frees the state. collective: the caller is the attribute's
 * deletion (MPI_Comm_free, on every rank at once), where the segment's window, whose
 * free is collective, can go too; after a non-blocking job outlived the communicator
 * the ranks release at different moments, and the window is left to MPI_Finalize
 * rather than risk a rank blocking in MPI_Win_free while others need it. */
static void state_unref(comm_state *st, int collective)
{
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    shm_segment *segs[2] = {&st->shm, &st->node_shm};
    for (int i = 0; i < 2; i++)
        if (segs[i]->state > 0)
            segment_untrack(segs[i], collective);
    if (st->priv != MPI_COMM_NULL)
        PMPI_Comm_free(&st->priv);
    for (int i = 0; i < JOB_SLOTS; i++)
        ct_job_free(&st->slots[i].job);
    free(st->node_of);
    free(st);
}

/* ---- The node's shared segment ------------------------------------------------ */

enum { FLAG_STRIDE = 64 }; /* one cache line per rank's flag */

/* COLLTUNE_SHM_BYTES (bytes, K/M/G suffixes), default 4 MiB: the data part of a
 * communicator's segment; its size bounds the shared-memory algorithms' chunks. */
static size_t shm_segment_bytes(void)
{
    const char *e = getenv("COLLTUNE_SHM_BYTES");
    if (!e || !*e)
        return CT_SHM_DEFAULT_BYTES;
    char *end;
    double v = strtod(e, &end);
    double scale = *end == 'K' || *end == 'k' ? 1024.0
                   : *end == 'M' || *end == 'm' ? 1048576.0
                   : *end == 'G' || *end == 'g' ? 1073741824.0
                                                 : 1.0;
    if (v < 4096 / scale || v * scale > 1e12)
        return CT_SHM_DEFAULT_BYTES;
    return (size_t)(v * scale);
}

/* Collective over st->priv, on the first call that needs seg: the segment over the
 * ranks of group (color: ranks of equal color form one group), its flags each set to
 * "done with call 0". It is refused, on every rank alike, when a group's ranks do
 * not all share memory. */
static int segment_setup(comm_state *st, shm_segment *seg, int color, int size, int rank)
{
    if (seg->state)
        return MPI_SUCCESS;
    MPI_Comm group, node;
    int rc = PMPI_Comm_split(st->priv, color, rank, &group);
    if (rc != MPI_SUCCESS)
        return rc;
    int gsize = 0, nsize = 0, shared;
    PMPI_Comm_size(group, &gsize);
    if ((rc = PMPI_Comm_split_type(group, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node)) !=
        MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    PMPI_Comm_size(node, &nsize);
    PMPI_Comm_free(&node);
    shared = nsize == gsize;
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MIN, st->priv)) !=
        MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    if (!shared) {
        PMPI_Comm_free(&group);
        seg->state = -1;
        return MPI_SUCCESS;
    }
    int grank;
    PMPI_Comm_rank(group, &grank);
    size_t header = (size_t)size * FLAG_STRIDE, data = shm_segment_bytes();
    void *mine, *base;
    MPI_Aint qsize;
    int disp;
    if ((rc = ct_window_lock(group)) != MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    rc = PMPI_Win_allocate_shared(grank == 0 ? (MPI_Aint)(header + data) : 0, 1, MPI_INFO_NULL,
                                  group, &mine, &seg->win);
    ct_window_unlock();
    if (rc == MPI_SUCCESS)
        rc = PMPI_Win_shared_query(seg->win, 0, &qsize, &disp, &base);
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    if (grank == 0)
        for (int r = 0; r < size; r++)
            atomic_store((_Atomic unsigned long long *)((char *)base + (size_t)r * FLAG_STRIDE),
                         (unsigned long long)CT_STEP_DONE);
    seg->comm = group;
    if ((rc = PMPI_Barrier(group)) != MPI_SUCCESS || (rc = segment_track(seg)) != MPI_SUCCESS) {
        PMPI_Win_free(&seg->win);
        PMPI_Comm_free(&group);
        return rc;
    }
    seg->flags = base;
    seg->data = (char *)base + header;
    seg->bytes = data;
    seg->state = 1;
    return MPI_SUCCESS;
}

static int state_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    state_unref(attr, 1);
    return MPI_SUCCESS;
}

/* The node layout of the communicator, computed on its first hierarchical
 * call (collective over it, as that call is): ranks sharing memory
 * (MPI_COMM_TYPE_SHARED) form a node, numbered by first appearance. The
 * testing override COLLTUNE_NODES=R puts ranks r with equal r / R together. */
static int node_layout(comm_state *st, int size, int rank)
{
    static unsigned next_id; /* under keyval_lock */
    if (st->node_of)
        return MPI_SUCCESS;
    int *first = malloc(sizeof(int) * (size_t)size), *node_of = malloc(sizeof(int) * (size_t)size);
    int *number = malloc(sizeof(int) * (size_t)size);
    int rc = MPI_SUCCESS;
    if (!first || !node_of || !number) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    const char *env = getenv("COLLTUNE_NODES");
    int ppn = env ? atoi(env) : 0;
    if (ppn > 0) {
        for (int r = 0; r < size; r++)
            first[r] = r - r % ppn;
    } else {
        MPI_Comm node;
        int lowest = rank;
        if ((rc = PMPI_Comm_split_type(st->priv, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                       &node)) != MPI_SUCCESS)
            goto out;
        rc = PMPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Allgather(&lowest, 1, MPI_INT, first, 1, MPI_INT, st->priv);
        if (rc != MPI_SUCCESS)
            goto out;
    }
    /* A node's lowest rank opens it: numbering in rank order of those is
     * numbering by first appearance. */
    int k = 0;
    for (int r = 0; r < size; r++) {
        if (first[r] == r)
            number[r] = k++;
        node_of[r] = number[first[r]];
    }
    st->node_of = node_of;
    node_of = NULL;
    pthread_mutex_lock(&keyval_lock);
    st->layout_id = ++next_id ? next_id : ++next_id;
    pthread_mutex_unlock(&keyval_lock);
out:
    free(first);
    free(node_of);
    free(number);
    return rc;
}

static int get_state(MPI_Comm comm, comm_state **out)
{
    int rc, flag;
    pthread_mutex_lock(&keyval_lock);
    if (state_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, state_delete, &state_keyval, NULL);
    else
        rc = MPI_SUCCESS;
    pthread_mutex_unlock(&keyval_lock);
    if (rc != MPI_SUCCESS)
        return rc;
    comm_state *st;
    if ((rc = PMPI_Comm_get_attr(comm, state_keyval, &st, &flag)) != MPI_SUCCESS)
        return rc;
    if (!flag) {
        if (!(st = calloc(1, sizeof *st)))
            return MPI_ERR_NO_MEM;
        atomic_init(&st->refs, 1);
        for (int i = 0; i < JOB_SLOTS; i++)
            ct_sched_init(&st->slots[i].job.sched);
        st->current = &st->slots[0];
        if ((rc = PMPI_Comm_dup(comm, &st->priv)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_set_attr(comm, state_keyval, st)) != MPI_SUCCESS) {
            if (st->priv != MPI_COMM_NULL)
                PMPI_Comm_free(&st->priv);
            free(st);
            return rc;
        }
    }
    *out = st;
    return MPI_SUCCESS;
}

/* ---- Handles a pending job keeps alive ------------------------------------
 * MPI lets a program free the communicator, datatype and op of a non-blocking
 * collective right after starting it. A job keeps its communicator state by
 * reference (the private duplicate it runs on), a derived datatype by
 * duplicating it, and a user-defined op by deferring the program's MPI_Op_free
 * (MPI has no way to duplicate an op). */

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held_op {
    MPI_Op op;
    int count;    /* pending jobs using it */
    int deferred; /* the program freed it: free it when count drops to 0 */
} *held_op_table;
static int held_op_len, held_op_cap;
static atomic_int held_ops;

static int predefined_op(MPI_Op op)
{
    static const MPI_Op named[] = {MPI_OP_NULL, MPI_MAX,  MPI_MIN,    MPI_SUM,    MPI_PROD,
                                   MPI_LAND,    MPI_BAND, MPI_LOR,    MPI_BOR,    MPI_LXOR,
                                   MPI_BXOR,    MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE,
                                   MPI_NO_OP};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (op == named[i])
            return 1;
    return 0;
}

static int hold_op(MPI_Op op)
{
    if (predefined_op(op))
        return MPI_SUCCESS;
    pthread_mutex_lock(&op_lock);
    int i = 0;
    while (i < held_op_len && held_op_table[i].op != op)
        i++;
    if (i == held_op_len) {
        if (held_op_len == held_op_cap) {
            int ncap = held_op_cap ? 2 * held_op_cap : 8;
            struct held_op *n = realloc(held_op_table, sizeof *n * (size_t)ncap);
            if (!n) {
                pthread_mutex_unlock(&op_lock);
                return MPI_ERR_NO_MEM;
            }
            held_op_table = n;
            held_op_cap = ncap;
        }
        held_op_table[held_op_len++] = (struct held_op){op, 0, 0};
    }
    held_op_table[i].count++;
    pthread_mutex_unlock(&op_lock);
    atomic_fetch_add(&held_ops, 1);
    return MPI_SUCCESS;
}

static void release_op(MPI_Op op)
{
    if (predefined_op(op))
        return;
    MPI_Op to_free = MPI_OP_NULL;
    pthread_mutex_lock(&op_lock);
    for (int i = 0; i < held_op_len; i++)
        if (held_op_table[i].op == op) {
            if (--held_op_table[i].count == 0) {
                if (held_op_table[i].deferred)
                    to_free = op;
                held_op_table[i] = held_op_table[--held_op_len];
            }
            break;
        }
    pthread_mutex_unlock(&op_lock);
    atomic_fetch_sub(&held_ops, 1);
    if (to_free != MPI_OP_NULL)
        PMPI_Op_free(&to_free);
}

int ct_op_free_deferred(MPI_Op *op)
{
    int deferred = 0;
    pthread_mutex_lock(&op_lock);
    for (int i = 0; i < held_op_len; i++)
        if (held_op_table[i].op == *op) {
            held_op_table[i].deferred = deferred = 1;
            break;
        }
    pthread_mutex_unlock(&op_lock);
    if (deferred)
        *op = MPI_OP_NULL;
    return deferred;
}

static int derived_type(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return t != MPI_DATATYPE_NULL && PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) ==
                                         MPI_SUCCESS &&
           combiner != MPI_COMBINER_NAMED;
}

int ct_job_retain(ct_job *job)
{
    comm_state *st = job->state;
    job->own_type = MPI_DATATYPE_NULL;
    job->held_op = MPI_OP_NULL;
    /* The datatype a job still uses after its start: the reduction's element type (sends,
     * receives and the op) or the type a packed result is unpacked into at the end. */
    MPI_Datatype used = job->unpack_after ? job->unpack_type : job->x.datatype;
    if (!job->empty && derived_type(used)) {
        int rc = PMPI_Type_dup(used, &job->own_type);
        if (rc != MPI_SUCCESS)
            return rc;
        if (job->x.datatype == used)
            job->x.datatype = job->own_type;
        if (job->unpack_type == used)
            job->unpack_type = job->own_type;
        atomic_fetch_add(&held_types, 1);
    }
    if (!job->empty && job->x.op != MPI_OP_NULL) {
        int rc = hold_op(job->x.op);
        if (rc != MPI_SUCCESS) {
            ct_job_release(job);
            return rc;
        }
        job->held_op = job->x.op;
    }
    if (st) {
        atomic_fetch_add(&st->refs, 1);
        atomic_fetch_add(&held_comms, 1);
    }
    return MPI_SUCCESS;
}

void ct_job_release(ct_job *job)
{
    if (job->own_type != MPI_DATATYPE_NULL) {
        PMPI_Type_free(&job->own_type);
        atomic_fetch_sub(&held_types, 1);
    }
    if (job->held_op != MPI_OP_NULL) {
        release_op(job->held_op);
        job->held_op = MPI_OP_NULL;
    }
    if (job->state) {
        comm_state *st = job->state;
        job->state = NULL;
        atomic_fetch_sub(&held_comms, 1);
        state_unref(st, 0);
    }
}

void ct_handles_held(int *comms, int *datatypes, int *ops)
{
    if (comms)
        *comms = atomic_load(&held_comms);
    if (datatypes)
        *datatypes = atomic_load(&held_types);
    if (ops)
        *ops = atomic_load(&held_ops);
}

/* ---- Checks ------------------------------------------------------------- */

/* Why a call is refused: an MPI error class and a message. */
typedef struct reject {
    int cls;
    char msg[MPI_MAX_ERROR_STRING];
} reject;

static int refuse(reject *r, int cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_message(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->cls = cls;
    return cls;
}

static int rooted(ct_coll c)
{
    return c == CT_BCAST || c == CT_REDUCE || c == CT_SCATTER || c == CT_GATHER ||
           c == CT_GATHERV || c == CT_SCATTERV;
}

/* The operations that reduce: an op, one datatype, the executor on its elements. */
static int reduces(ct_coll c)
{
    return c == CT_REDUCE || c == CT_ALLREDUCE || c == CT_REDUCE_SCATTER_BLOCK ||
           c == CT_REDUCE_SCATTER || c == CT_SCAN || c == CT_EXSCAN;
}

/* Which (count, type) pairs this rank's call must have right. */
static void significant(const ct_call *c, int rank, int *send, int *recv)
{
    int root = rank == c->root;
    *send = *recv = 0;
    switch (c->coll) {
    case CT_BCAST:
    case CT_REDUCE:
    case CT_ALLREDUCE:
        *recv = 1;
        break;
    case CT_SCATTER:
        *send = root;
        *recv = !(root && c->recvbuf == MPI_IN_PLACE);
        break;
    case CT_GATHER:
        *send = !(root && c->sendbuf == MPI_IN_PLACE);
        *recv = root;
        break;
    case CT_ALLGATHER:
    case CT_ALLTOALL:
    case CT_ALLGATHERV:
    case CT_ALLTOALLV:
        *send = c->sendbuf != MPI_IN_PLACE;
        *recv = 1;
        break;
    case CT_SCATTERV:
        *send = root;
        *recv = !(root && c->recvbuf == MPI_IN_PLACE);
        break;
    case CT_GATHERV:
        *send = !(root && c->sendbuf == MPI_IN_PLACE);
        *recv = root;
        break;
    case CT_REDUCE_SCATTER_BLOCK:
    case CT_REDUCE_SCATTER:
    case CT_SCAN:
    case CT_EXSCAN:
        *recv = 1;
        break;
    default:
        break;
    }
}

/* The v-variants' arrays: present where significant, no negative count. (A
 * negative displacement is legal: the byte views start at the lowest block.) */
static int check_vargs(const ct_call *c, const ct_vargs *v, int rank, int size, reject *r)
{
    static const char *const names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
    const char *cname = ct_coll_name(c->coll);
    int send, recv;
    significant(c, rank, &send, &recv);
    /* Which arrays this rank's call must have right. */
    int need[4] = {0, 0, 0, 0};
    switch (c->coll) {
    case CT_ALLGATHERV:
    case CT_GATHERV:
        need[2] = need[3] = recv;
        break;
    case CT_SCATTERV:
        need[0] = need[1] = send;
        break;
    case CT_ALLTOALLV:
        need[0] = need[1] = send;
        need[2] = need[3] = 1;
        break;
    case CT_REDUCE_SCATTER:
        need[2] = 1;
        break;
    default:
        return MPI_SUCCESS;
    }
    const int *arrays[4] = {v ? v->sendcounts : NULL, v ? v->sdispls : NULL,
                            v ? v->recvcounts : NULL, v ? v->rdispls : NULL};
    for (int k = 0; k < 4; k++) {
        if (!need[k])
            continue;
        if (!arrays[k])
            return refuse(r, MPI_ERR_ARG, "%s: %s is NULL", cname, names[k]);
        for (int i = 0; k % 2 == 0 && i < size; i++)
            if (arrays[k][i] < 0)
                return refuse(r, MPI_ERR_COUNT, "%s: negative %s[%d] %d", cname, names[k], i,
                              arrays[k][i]);
    }
    return MPI_SUCCESS;
}

/* Whether a datatype is committed and a predefined operation is defined for a datatype
 * are not visible through MPI's query functions: MPI is asked on a communicator of this
 * process alone with MPI_ERRORS_RETURN, so a "no" raises nothing on the application's
 * handlers (a zero-count MPI_Pack checks that the type is committed; a zero-count
 * MPI_Reduce, which communicates nothing, checks the operation against the type as the
 * real call would: MPI_BAND on MPI_DOUBLE, MPI_MAXLOC on MPI_INT, a predefined operation
 * on a derived type, whatever this MPI refuses). MPI_COMM_NULL if it could not be made:
 * then nothing is asked. */
static MPI_Comm probe_comm = MPI_COMM_NULL;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER; /* one collective at a time */

static void probe_init(void)
{
    MPI_Comm c;
    if (PMPI_Comm_dup(MPI_COMM_SELF, &c) != MPI_SUCCESS)
        return;
    if (PMPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN) == MPI_SUCCESS)
        probe_comm = c;
    else
        PMPI_Comm_free(&c);
}

static int type_committed(MPI_Datatype t)
{
    char out[1];
    int pos = 0;
    pthread_once(&probe_once, probe_init);
    return probe_comm == MPI_COMM_NULL ||
           PMPI_Pack(out, 0, t, out, 0, &pos, probe_comm) == MPI_SUCCESS;
}

static int op_defined_for(MPI_Op op, MPI_Datatype t)
{
    char in[1], out[1];
    pthread_once(&probe_once, probe_init);
    if (probe_comm == MPI_COMM_NULL)
        return 1;
    pthread_mutex_lock(&probe_lock);
    int rc = PMPI_Reduce(in, out, 0, t, op, 0, probe_comm);
    pthread_mutex_unlock(&probe_lock);
    return rc == MPI_SUCCESS;
}

/* The argument checks MPI asks for; MPI_SUCCESS or the class, with *r. */
static int check_args(const ct_call *c, int rank, int size, int inter, int *commutative,
                      reject *r)
{
    const char *cname = ct_coll_name(c->coll);
    int send, recv;
    significant(c, rank, &send, &recv);
    if (send && c->sendcount < 0)
        return refuse(r, MPI_ERR_COUNT, "%s: negative count %d", cname, c->sendcount);
    if (recv && c->recvcount < 0)
        return refuse(r, MPI_ERR_COUNT, "%s: negative count %d", cname, c->recvcount);
    if ((send && c->sendtype == MPI_DATATYPE_NULL) || (recv && c->recvtype == MPI_DATATYPE_NULL))
        return refuse(r, MPI_ERR_TYPE, "%s: MPI_DATATYPE_NULL", cname);
    if (rooted(c->coll) && !inter && (c->root < 0 || c->root >= size))
        return refuse(r, MPI_ERR_ROOT, "%s: root %d outside [0, %d)", cname, c->root, size);
    if ((send && !type_committed(c->sendtype)) || (recv && !type_committed(c->recvtype)))
        return refuse(r, MPI_ERR_TYPE, "%s: datatype not committed", cname);
    *commutative = 1;
    int root = rank == c->root;
    switch (c->coll) {
    case CT_BCAST:
        if (c->recvbuf == MPI_IN_PLACE)
            return refuse(r, MPI_ERR_BUFFER, "bcast: MPI_IN_PLACE is not allowed");
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE:
    case CT_REDUCE_SCATTER_BLOCK:
    case CT_REDUCE_SCATTER:
    case CT_SCAN:
    case CT_EXSCAN: {
        int rc;
        if (c->op == MPI_OP_NULL)
            return refuse(r, MPI_ERR_OP, "%s: MPI_OP_NULL", cname);
        if ((rc = PMPI_Op_commutative(c->op, commutative)) != MPI_SUCCESS)
            return refuse(r, MPI_ERR_OP, "%s: invalid operation", cname);
        if (!op_defined_for(c->op, c->recvtype))
            return refuse(r, MPI_ERR_OP, "%s: operation not defined for the datatype", cname);
        if (c->sendbuf == MPI_IN_PLACE && c->coll == CT_REDUCE && !root)
            return refuse(r, MPI_ERR_BUFFER, "reduce: MPI_IN_PLACE is only valid at the root");
        if (c->recvbuf == MPI_IN_PLACE)
            return refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE as receive buffer", cname);
        if (c->recvcount > 0 && c->sendbuf == c->recvbuf && c->recvbuf != NULL &&
            (c->coll != CT_REDUCE || root))
            return refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    }
    case CT_SCATTER:
    case CT_GATHER:
    case CT_SCATTERV:
    case CT_GATHERV: {
        int scatter = c->coll == CT_SCATTER || c->coll == CT_SCATTERV;
        const void *inplace_side = scatter ? c->recvbuf : c->sendbuf;
        const void *other_side = scatter ? c->sendbuf : c->recvbuf;
        if (other_side == MPI_IN_PLACE || (!root && inplace_side == MPI_IN_PLACE))
            return refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is only valid as the root's %s "
                          "buffer", cname, scatter ? "receive" : "send");
        if (root && inplace_side != MPI_IN_PLACE && c->sendbuf == c->recvbuf &&
            c->sendbuf != NULL && c->sendcount > 0 && c->recvcount > 0)
            return refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    }
    case CT_ALLGATHER:
    case CT_ALLTOALL:
    case CT_ALLGATHERV:
    case CT_ALLTOALLV:
        if (c->recvbuf == MPI_IN_PLACE)
            return refuse(r, MPI_ERR_BUFFER, "%s: MPI_IN_PLACE as receive buffer", cname);
        if (c->sendbuf != MPI_IN_PLACE && c->sendbuf == c->recvbuf && c->sendbuf != NULL &&
            c->sendcount > 0 && c->recvcount > 0)
            return refuse(r, MPI_ERR_BUFFER,
                          "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
        break;
    default:
        break;
    }
    /* A rank that both sends and receives locally must see equal sizes (the
     * type signatures of a block must match). */
    int both = c->coll >= CT_SCATTER && c->coll <= CT_ALLTOALL && send && recv;
    if (both && !inter) {
        int ss, rs;
        if (PMPI_Type_size(c->sendtype, &ss) != MPI_SUCCESS ||
            PMPI_Type_size(c->recvtype, &rs) != MPI_SUCCESS)
            return refuse(r, MPI_ERR_TYPE, "%s: invalid datatype", cname);
        long long sb = (long long)c->sendcount * ss, rb = (long long)c->recvcount * rs;
        if (sb > rb)
            return refuse(r, MPI_ERR_TRUNCATE,
                          "%s: %lld bytes sent per block but only %lld received", cname, sb, rb);
        if (sb < rb)
            return refuse(r, MPI_ERR_ARG, "%s: %lld bytes sent per block but %lld expected",
                          cname, sb, rb);
    }
    return MPI_SUCCESS;
}

/* ---- Native ------------------------------------------------------------- */

static int call_native_nb(const ct_call *c)
{
    MPI_Request *r = c->request;
    switch (c->coll) {
    case CT_BCAST:
        return PMPI_Ibcast(c->recvbuf, c->recvcount, c->recvtype, c->root, c->comm, r);
    case CT_REDUCE:
        return PMPI_Ireduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->root,
                            c->comm, r);
    case CT_ALLREDUCE:
        return PMPI_Iallreduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op,
                               c->comm, r);
    case CT_SCATTER:
        return PMPI_Iscatter(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                             c->recvtype, c->root, c->comm, r);
    case CT_GATHER:
        return PMPI_Igather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                            c->recvtype, c->root, c->comm, r);
    case CT_ALLGATHER:
        return PMPI_Iallgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                               c->recvcount, c->recvtype, c->comm, r);
    case CT_ALLTOALL:
        return PMPI_Ialltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                              c->recvtype, c->comm, r);
    case CT_BARRIER:
        return PMPI_Ibarrier(c->comm, r);
    case CT_REDUCE_SCATTER_BLOCK:
        return PMPI_Ireduce_scatter_block(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype,
                                          c->op, c->comm, r);
    case CT_SCAN:
        return PMPI_Iscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm, r);
    case CT_EXSCAN:
        return PMPI_Iexscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm,
                            r);
    default:
        return MPI_ERR_INTERN;
    }
}

int ct_call_native(const ct_call *c)
{
    if (c->request)
        return call_native_nb(c);
    switch (c->coll) {
    case CT_BCAST:
        return PMPI_Bcast(c->recvbuf, c->recvcount, c->recvtype, c->root, c->comm);
    case CT_REDUCE:
        return PMPI_Reduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->root,
                           c->comm);
    case CT_ALLREDUCE:
        return PMPI_Allreduce(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op,
                              c->comm);
    case CT_SCATTER:
        return PMPI_Scatter(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                            c->recvtype, c->root, c->comm);
    case CT_GATHER:
        return PMPI_Gather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                           c->recvtype, c->root, c->comm);
    case CT_ALLGATHER:
        return PMPI_Allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                              c->recvtype, c->comm);
    case CT_ALLTOALL:
        return PMPI_Alltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, c->recvcount,
                             c->recvtype, c->comm);
    case CT_BARRIER:
        return PMPI_Barrier(c->comm);
    case CT_REDUCE_SCATTER_BLOCK:
        return PMPI_Reduce_scatter_block(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype,
                                         c->op, c->comm);
    case CT_SCAN:
        return PMPI_Scan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm);
    case CT_EXSCAN:
        return PMPI_Exscan(c->sendbuf, c->recvbuf, c->recvcount, c->recvtype, c->op, c->comm);
    default:
        return MPI_ERR_INTERN; /* the v-variants: ct_call_native_v */
    }
}

int ct_call_native_v(const ct_call *c, const ct_vargs *v)
{
    static const ct_vargs none = {NULL, NULL, NULL, NULL};
    if (!v)
        v = &none;
    if (c->request) {
        MPI_Request *r = c->request;
        switch (c->coll) {
        case CT_ALLGATHERV:
            return PMPI_Iallgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                    v->recvcounts, v->rdispls, c->recvtype, c->comm, r);
        case CT_GATHERV:
            return PMPI_Igatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                 v->recvcounts, v->rdispls, c->recvtype, c->root, c->comm, r);
        case CT_SCATTERV:
            return PMPI_Iscatterv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                                  c->recvcount, c->recvtype, c->root, c->comm, r);
        case CT_ALLTOALLV:
            return PMPI_Ialltoallv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype,
                                   c->recvbuf, v->recvcounts, v->rdispls, c->recvtype, c->comm,
                                   r);
        case CT_REDUCE_SCATTER:
            return PMPI_Ireduce_scatter(c->sendbuf, c->recvbuf, v->recvcounts, c->recvtype,
                                        c->op, c->comm, r);
        default:
            return ct_call_native(c);
        }
    }
    switch (c->coll) {
    case CT_ALLGATHERV:
        return PMPI_Allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                               v->recvcounts, v->rdispls, c->recvtype, c->comm);
    case CT_GATHERV:
        return PMPI_Gatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf, v->recvcounts,
                            v->rdispls, c->recvtype, c->root, c->comm);
    case CT_SCATTERV:
        return PMPI_Scatterv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                             c->recvcount, c->recvtype, c->root, c->comm);
    case CT_ALLTOALLV:
        return PMPI_Alltoallv(c->sendbuf, v->sendcounts, v->sdispls, c->sendtype, c->recvbuf,
                              v->recvcounts, v->rdispls, c->recvtype, c->comm);
    case CT_REDUCE_SCATTER:
        return PMPI_Reduce_scatter(c->sendbuf, c->recvbuf, v->recvcounts, c->recvtype, c->op,
                                   c->comm);
    default:
        return ct_call_native(c);
    }
}

/* ---- Byte views of the data-movement collectives ------------------------ */

int ct_type_dense(MPI_Datatype t, int *dense_out)
{
    MPI_Aint lb, extent, tlb, textent;
    int size, rc;
    if ((rc = PMPI_Type_get_extent(t, &lb, &extent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_get_true_extent(t, &tlb, &textent)) != MPI_SUCCESS ||
        (rc = PMPI_Type_size(t, &size)) != MPI_SUCCESS)
        return rc;
    *dense_out = tlb == 0 && lb == 0 && textent == extent && extent == (MPI_Aint)size;
    return MPI_SUCCESS;
}

static int grow_buf(void **buf, size_t *len, size_t need)
{
    if (need <= *len)
        return MPI_SUCCESS;
    void *n = realloc(*buf, need);
    if (!n)
        return MPI_ERR_NO_MEM;
    *buf = n;
    *len = need;
    return MPI_SUCCESS;
}

/* Packs count elements of t at from into bytes bytes at to. The packed form
 * must be the plain bytes (a homogeneous MPI), which the size check confirms.
 * Nothing to move returns before MPI sees it (here and in unpack): the buffers
 * may then be NULL (a rank that sends 0 elements of a derived type has no packed
 * buffer yet), which Open MPI 5.0.11's MPI_Pack and MPI_Unpack refuse. */
static int pack(const void *from, long long count, MPI_Datatype t, void *to, size_t bytes)
{
    if (count == 0 || bytes == 0)
        return MPI_SUCCESS;
    if (count > INT_MAX || bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0, rc;
    if ((rc = PMPI_Pack(from, (int)count, t, to, (int)bytes, &pos, MPI_COMM_SELF)) !=
        MPI_SUCCESS)
        return rc;
    return (size_t)pos == bytes ? MPI_SUCCESS : MPI_ERR_TYPE;
}

static int unpack(const void *from, size_t bytes, void *to, long long count, MPI_Datatype t)
{
    if (count == 0 || bytes == 0)
        return MPI_SUCCESS;
    if (count > INT_MAX || bytes > INT_MAX)
        return MPI_ERR_COUNT;
    int pos = 0;
    return PMPI_Unpack(from, (int)bytes, &pos, to, (int)count, t, MPI_COMM_SELF);
}

/* pack(), remembered for the job's next start (ct_job_restart). */
static int job_pack(ct_job *job, const void *from, long long count, MPI_Datatype t, void *to,
                    size_t bytes)
{
    if (job->nrepack < (int)(sizeof job->repack / sizeof job->repack[0]))
        job->repack[job->nrepack++] = (struct ct_repack){from, count, t, to, bytes};
    else
        return MPI_ERR_INTERN; /* a call copies at most three inputs */
    return pack(from, count, t, to, bytes);
}

/* The input as bytes: the user's buffer itself when dense, else packed. */
static int src_view(ct_job *st, const void *buf, long long count, MPI_Datatype t,
                    size_t bytes, void **view)
{
    int d, rc;
    if ((rc = ct_type_dense(t, &d)) != MPI_SUCCESS)
        return rc;
    if (d) {
        *view = (void *)buf; /* read only: schedules never write SRC */
        return MPI_SUCCESS;
    }
    if ((rc = grow_buf(&st->pack_src, &st->pack_src_len, bytes)) != MPI_SUCCESS)
        return rc;
    *view = st->pack_src;
    return job_pack(st, buf, count, t, st->pack_src, bytes);
}

/* The output as bytes: the user's buffer when dense (*unpack_after = 0), else
 * a packed buffer to unpack into the user's when the schedule is done. */
static int dst_view(ct_job *st, void *buf, MPI_Datatype t, size_t bytes, void **view,
                    int *unpack_after)
{
    int d, rc;
    if ((rc = ct_type_dense(t, &d)) != MPI_SUCCESS)
        return rc;
    *unpack_after = !d;
    if (d) {
        *view = buf;
        return MPI_SUCCESS;
    }
    if ((rc = grow_buf(&st->pack_dst, &st->pack_dst_len, bytes)) != MPI_SUCCESS)
        return rc;
    *view = st->pack_dst;
    return MPI_SUCCESS;
}

/* ---- Running a schedule ------------------------------------------------- */

/* The schedule of the call, from the job's cache when the same shape ran last,
 * and the private communicator and tag it runs with. */
static int prepare_schedule(comm_state *st, ct_job *job, const ct_registry_entry *e,
                            const ct_params *p)
{
    ct_params key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    memcpy(&key, p, sizeof *p);
    shm_segment *seg = job->segment;
    if (seg) {
        /* Elements of the call's type the segment holds (element i at i * extent). */
        MPI_Aint over = job->x.true_extent > job->x.extent ? job->x.true_extent - job->x.extent
                                                          : 0;
        key.shm_count = job->x.extent > 0 && (MPI_Aint)seg->bytes > over
                            ? (size_t)(((MPI_Aint)seg->bytes - over) / job->x.extent)
                            : 0;
        job->x.shm = seg->data;
        job->x.shm_bytes = seg->bytes;
        job->x.flags = seg->flags;
        job->x.flag_stride = FLAG_STRIDE;
        job->x.shm_rank = p->rank;
        job->x.shm_size = (unsigned long long)(p->count * p->type_size);
    }
    if (!job->have_key || job->key_alg != e || memcmp(&key, &job->key_params, sizeof key)) {
        job->have_key = 0;
        if (ct_sched_generate(e->info.name, &key, &job->sched))
            return MPI_ERR_INTERN; /* out of memory, or a generator refusing its parameters */
        job->key_alg = e;
        memcpy(&job->key_params, &key, sizeof key);
        job->have_key = 1;
    }
    /* The segment's epoch only once the call will run on it: a call refused here (an
     * element larger than the segment) goes to the library, and the segment's next call
     * must still find the flags of the previous one. */
    if (seg)
        job->x.epoch = (++seg->seq) << 24;
    job->alg = e;
    job->params = key;
    job->x.comm = st->priv;
    job->x.tag = (int)(st->seq++ & 0x7fff);
    job->takes_tag = 1;
    return MPI_SUCCESS;
}

static void byte_ctx(ct_exec_ctx *x)
{
    memset(x, 0, sizeof *x);
    x->datatype = MPI_BYTE;
    x->extent = 1;
    x->true_extent = 1;
    x->contiguous = 1;
    x->type_size = 1;
    x->op = MPI_OP_NULL;
}

/* Scatter, gather, allgather, alltoall: blocks of bytes. */
static int setup_movement(const ct_call *c, comm_state *cs, ct_job *st, ct_params *p,
                          const ct_registry_entry *e)
{
    int rank = p->rank, n = p->size, root = rank == c->root, rc, ssize = 0, rsize = 0;
    int send, recv;
    significant(c, rank, &send, &recv);
    if (send && (rc = PMPI_Type_size(c->sendtype, &ssize)) != MPI_SUCCESS)
        return rc;
    if (recv && (rc = PMPI_Type_size(c->recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    size_t block = recv ? (size_t)c->recvcount * (size_t)rsize
                        : (size_t)c->sendcount * (size_t)ssize;
    st->empty = block == 0;
    if (st->empty) {
        if (!st->segment)
            return MPI_SUCCESS;
        /* Shared memory: nothing to move, but the call is on the flags all the same (the
         * others check its size, and the next call waits for it to be done). */
        st->empty = 0;
        byte_ctx(&st->x);
        st->unpack_after = 0;
        p->count = 0;
        return prepare_schedule(cs, st, e, p);
    }
    size_t all = block * (size_t)n;
    ct_exec_ctx x;
    byte_ctx(&x);
    int unpack_after = 0;
    long long out_count = 0; /* elements of recvtype to unpack */
    p->count = block;
    switch (c->coll) {
    case CT_SCATTER:
        p->in_place = root && c->recvbuf == MPI_IN_PLACE;
        if (root && (rc = src_view(st, c->sendbuf, (long long)c->sendcount * n, c->sendtype,
                                   all, &x.src)) != MPI_SUCCESS)
            return rc;
        if (!p->in_place) {
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, block, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
            out_count = c->recvcount;
        }
        break;
    case CT_GATHER:
    case CT_ALLGATHER:
        p->in_place = c->sendbuf == MPI_IN_PLACE;
        if (!p->in_place &&
            (rc = src_view(st, c->sendbuf, c->sendcount, c->sendtype, block, &x.src)) !=
                MPI_SUCCESS)
            return rc;
        if (c->coll == CT_ALLGATHER || root) {
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, all, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
            out_count = (long long)c->recvcount * n;
            if (p->in_place && unpack_after) {
                /* The rank's own block is in the user's buffer: bring it in. */
                MPI_Aint lb, extent;
                PMPI_Type_get_extent(c->recvtype, &lb, &extent);
                const char *own = (const char *)c->recvbuf + (MPI_Aint)rank * c->recvcount * extent;
                if ((rc = job_pack(st, own, c->recvcount, c->recvtype,
                                   (char *)x.dst + (size_t)rank * block, block)) != MPI_SUCCESS)
                    return rc;
            }
        }
        break;
    case CT_ALLTOALL:
        p->in_place = 0;
        if (c->sendbuf == MPI_IN_PLACE) {
            /* The input is overwritten as results arrive: work from a copy. */
            if ((rc = grow_buf(&st->pack_src, &st->pack_src_len, all)) != MPI_SUCCESS ||
                (rc = job_pack(st, c->recvbuf, (long long)c->recvcount * n, c->recvtype,
                               st->pack_src, all)) != MPI_SUCCESS)
                return rc;
            x.src = st->pack_src;
        } else if ((rc = src_view(st, c->sendbuf, (long long)c->sendcount * n, c->sendtype,
                                  all, &x.src)) != MPI_SUCCESS) {
            return rc;
        }
        if ((rc = dst_view(st, c->recvbuf, c->recvtype, all, &x.dst, &unpack_after)) !=
            MPI_SUCCESS)
            return rc;
        out_count = (long long)c->recvcount * n;
        break;
    default:
        return MPI_ERR_INTERN;
    }
    st->x = x;
    st->unpack_after = unpack_after;
    st->unpack_to = c->recvbuf;
    st->unpack_count = out_count;
    st->unpack_type = c->recvtype;
    st->unpack_bytes = out_count == c->recvcount ? block : all;
    return prepare_schedule(cs, st, e, p);
}

/* The job's per-rank arrays: 4 * n entries (counts, displs, rcounts, rdispls). */
static int grow_vcounts(ct_job *st, int n)
{
    size_t need = 4 * (size_t)n;
    if (need <= st->vcounts_len)
        return MPI_SUCCESS;
    size_t *m = realloc(st->vcounts, need * sizeof *m);
    if (!m)
        return MPI_ERR_NO_MEM;
    st->vcounts = m;
    st->vcounts_len = need;
    return MPI_SUCCESS;
}

/* Where a buffer of blocks starts and how many elements it spans: from the lowest
 * displacement of a non-empty block to the largest end (0 and 0 without one). Only
 * the blocks' own range: MPI asks no more of the buffer, whichever side of the
 * pointer passed the blocks lie (all displacements negative, or all past 0). */
static long long lowest(const int *counts, const int *displs, int n)
{
    long long lo = 0;
    int any = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0 && (!any || displs[i] < lo)) {
            lo = displs[i];
            any = 1;
        }
    return lo;
}

static long long span(const int *counts, const int *displs, int n)
{
    long long lo = lowest(counts, displs, n), end = lo;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0 && (long long)displs[i] + counts[i] > end)
            end = (long long)displs[i] + counts[i];
    return end - lo;
}

/* The blocks' byte displacements in a view that starts at the lowest block. */
static void byte_displs(const int *counts, const int *displs, int n, int size, size_t *out)
{
    long long lo = lowest(counts, displs, n);
    for (int i = 0; i < n; i++)
        out[i] = counts[i] > 0 ? (size_t)((displs[i] - lo) * size) : 0;
}

/* The address of element lo of a buffer of type t. */
static void *element_at(const void *buf, long long lo, MPI_Datatype t)
{
    MPI_Aint lb, extent;
    if (!lo || PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS)
        return (void *)buf;
    return (char *)buf + lo * extent;
}

/* The receive side as bytes, the gaps between blocks kept: the user's buffer when
 * dense, else packed from it first (what the schedule does not write is unpacked
 * back unchanged). */
static int dst_view_kept(ct_job *st, void *buf, long long elems, MPI_Datatype t, size_t bytes,
                         void **view, int *unpack_after)
{
    int rc = dst_view(st, buf, t, bytes, view, unpack_after);
    if (rc == MPI_SUCCESS && *unpack_after && bytes)
        rc = job_pack(st, buf, elems, t, *view, bytes);
    return rc;
}

/* Allgatherv, gatherv, scatterv, alltoallv: blocks of bytes at byte displacements (a
 * displacement of d elements is d * size bytes: in the user's buffer when the type is
 * dense, in the packed one otherwise). all_counts: every rank gets the root's counts
 * (CT_ALG_ALL_COUNTS). The arrays are the job's, so the schedule is never reused. */
static int setup_movement_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *st,
                            ct_params *p, const ct_registry_entry *e)
{
    int rank = p->rank, n = p->size, root = rank == c->root, rc, ssize = 0, rsize = 0;
    int send, recv;
    significant(c, rank, &send, &recv);
    if (send && (rc = PMPI_Type_size(c->sendtype, &ssize)) != MPI_SUCCESS)
        return rc;
    if (recv && (rc = PMPI_Type_size(c->recvtype, &rsize)) != MPI_SUCCESS)
        return rc;
    if ((rc = grow_vcounts(st, n)) != MPI_SUCCESS)
        return rc;
    size_t *cnt = st->vcounts, *dsp = cnt + n, *rcnt = dsp + n, *rdsp = rcnt + n;
    memset(cnt, 0, 4 * (size_t)n * sizeof *cnt);
    ct_exec_ctx x;
    byte_ctx(&x);
    int unpack_after = 0;
    long long out_count = 0; /* elements of recvtype to unpack */
    size_t out_bytes = 0;
    void *out_to = c->recvbuf; /* where they go: the lowest block's first element */
    p->count = 0;
    p->counts = cnt;
    p->displs = dsp;
    p->in_place = 0;
    switch (c->coll) {
    case CT_ALLGATHERV:
    case CT_GATHERV: {
        p->in_place = c->sendbuf == MPI_IN_PLACE;
        if (recv) {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->recvcounts[i] * (size_t)rsize;
            byte_displs(v->recvcounts, v->rdispls, n, rsize, dsp);
            out_to = element_at(c->recvbuf, lowest(v->recvcounts, v->rdispls, n), c->recvtype);
        } else {
            cnt[rank] = (size_t)c->sendcount * (size_t)ssize;
        }
        if (!p->in_place &&
            (rc = src_view(st, c->sendbuf, c->sendcount, c->sendtype,
                           (size_t)c->sendcount * (size_t)ssize, &x.src)) != MPI_SUCCESS)
            return rc;
        if (recv) {
            out_count = span(v->recvcounts, v->rdispls, n);
            out_bytes = (size_t)out_count * (size_t)rsize;
            if ((rc = dst_view_kept(st, out_to, out_count, c->recvtype, out_bytes, &x.dst,
                                    &unpack_after)) != MPI_SUCCESS)
                return rc;
        }
        break;
    }
    case CT_SCATTERV: {
        p->in_place = root && c->recvbuf == MPI_IN_PLACE;
        if (send) {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->sendcounts[i] * (size_t)ssize;
            byte_displs(v->sendcounts, v->sdispls, n, ssize, dsp);
            long long in = span(v->sendcounts, v->sdispls, n);
            const void *from =
                element_at(c->sendbuf, lowest(v->sendcounts, v->sdispls, n), c->sendtype);
            if ((rc = src_view(st, from, in, c->sendtype, (size_t)in * (size_t)ssize,
                               &x.src)) != MPI_SUCCESS)
                return rc;
        } else {
            cnt[rank] = (size_t)c->recvcount * (size_t)rsize;
        }
        if (recv) {
            out_count = c->recvcount;
            out_bytes = (size_t)out_count * (size_t)rsize;
            if ((rc = dst_view(st, c->recvbuf, c->recvtype, out_bytes, &x.dst, &unpack_after)) !=
                MPI_SUCCESS)
                return rc;
        }
        break;
    }
    case CT_ALLTOALLV: {
        p->rcounts = rcnt;
        p->rdispls = rdsp;
        for (int i = 0; i < n; i++)
            rcnt[i] = (size_t)v->recvcounts[i] * (size_t)rsize;
        byte_displs(v->recvcounts, v->rdispls, n, rsize, rdsp);
        out_to = element_at(c->recvbuf, lowest(v->recvcounts, v->rdispls, n), c->recvtype);
        out_count = span(v->recvcounts, v->rdispls, n);
        out_bytes = (size_t)out_count * (size_t)rsize;
        if (c->sendbuf == MPI_IN_PLACE) {
            /* The input is the receive side, overwritten as results arrive: a copy. */
            memcpy(cnt, rcnt, 2 * (size_t)n * sizeof *cnt);
            if ((rc = grow_buf(&st->pack_src, &st->pack_src_len, out_bytes ? out_bytes : 1)) !=
                    MPI_SUCCESS ||
                (out_bytes && (rc = job_pack(st, out_to, out_count, c->recvtype, st->pack_src,
                                             out_bytes)) != MPI_SUCCESS))
                return rc;
            x.src = st->pack_src;
        } else {
            for (int i = 0; i < n; i++)
                cnt[i] = (size_t)v->sendcounts[i] * (size_t)ssize;
            byte_displs(v->sendcounts, v->sdispls, n, ssize, dsp);
            long long in = span(v->sendcounts, v->sdispls, n);
            const void *from =
                element_at(c->sendbuf, lowest(v->sendcounts, v->sdispls, n), c->sendtype);
            if ((rc = src_view(st, from, in, c->sendtype, (size_t)in * (size_t)ssize,
                               &x.src)) != MPI_SUCCESS)
                return rc;
        }
        if ((rc = dst_view_kept(st, out_to, out_count, c->recvtype, out_bytes, &x.dst,
                                &unpack_after)) != MPI_SUCCESS)
            return rc;
        break;
    }
    default:
        return MPI_ERR_INTERN;
    }
    if (e->info.flags & CT_ALG_ALL_COUNTS) {
        /* The subtrees' blocks travel packed: every rank needs every count. */
        if ((rc = PMPI_Bcast(cnt, n * (int)sizeof *cnt, MPI_BYTE, c->root, cs->priv)) !=
            MPI_SUCCESS)
            return rc;
    }
    st->empty = ct_call_empty(p) && !st->segment;
    if (st->empty) {
        /* A rank may have nothing to move where others have (a v-variant's counts are
         * per rank): its tag count moves on all the same, to stay in step with theirs. */
        cs->seq++;
        st->takes_tag = 1;
        return MPI_SUCCESS;
    }
    st->x = x;
    st->unpack_after = unpack_after;
    st->unpack_to = out_to;
    st->unpack_count = out_count;
    st->unpack_type = c->recvtype;
    st->unpack_bytes = out_bytes;
    st->have_key = 0; /* the arrays change in place from call to call */
    return prepare_schedule(cs, st, e, p);
}

/* A new call on a prepared job: its tag, and its epoch on a shared segment. */
static void next_call(ct_job *job, comm_state *st)
{
    job->x.tag = (int)(st->seq++ & 0x7fff);
    if (job->segment)
        job->x.epoch = (++((shm_segment *)job->segment)->seq) << 24;
}

int ct_job_restart(ct_job *job)
{
    if (job->takes_tag)
        next_call(job, job->state);
    for (int i = 0; i < job->nrepack; i++) {
        const struct ct_repack *k = &job->repack[i];
        int rc = pack(k->from, k->count, k->type, k->to, k->bytes);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int ct_job_finish(ct_job *job)
{
    if (job->empty || !job->unpack_after)
        return MPI_SUCCESS;
    return unpack(job->x.dst, job->unpack_bytes, job->unpack_to, job->unpack_count,
                  job->unpack_type);
}

/* ---- The common path ---------------------------------------------------- */

/* Bytes per rank the call moves (the block of the data-movement operations),
 * for the tuning table and the log; -1 when the arguments make no sense. */
long long ct_call_bytes(const ct_call *c)
{
    int rank = 0, tsize = 0;
    if (c->coll == CT_BARRIER)
        return 0;
    if (c->comm != MPI_COMM_NULL)
        PMPI_Comm_rank(c->comm, &rank);
    int use_send = (c->coll == CT_GATHER && rank != c->root) ||
                   (c->coll == CT_SCATTER && rank == c->root && c->recvbuf == MPI_IN_PLACE);
    MPI_Datatype t = use_send ? c->sendtype : c->recvtype;
    int count = use_send ? c->sendcount : c->recvcount;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &tsize) != MPI_SUCCESS)
        return -1;
    return (long long)count * tsize;
}

int ct_call_same_size_v(ct_coll coll)
{
    return coll != CT_GATHERV && coll != CT_SCATTERV && coll != CT_ALLTOALLV;
}

long long ct_call_bytes_v(const ct_call *c, const ct_vargs *v)
{
    int rank = 0, size = 1, tsize = 0;
    if (c->coll != CT_ALLGATHERV && c->coll != CT_GATHERV && c->coll != CT_SCATTERV &&
        c->coll != CT_ALLTOALLV && c->coll != CT_REDUCE_SCATTER)
        return ct_call_bytes(c);
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    int root = rank == c->root;
    if (c->coll == CT_ALLGATHERV || c->coll == CT_REDUCE_SCATTER) {
        /* Every rank has every count: the average block, the same on all. */
        if (!v || !v->recvcounts || c->recvtype == MPI_DATATYPE_NULL ||
            PMPI_Type_size(c->recvtype, &tsize) != MPI_SUCCESS)
            return -1;
        long long total = 0;
        for (int i = 0; i < size; i++)
            total += v->recvcounts[i];
        return total * tsize / size;
    }
    /* Only the rank's own block is known to it. */
    MPI_Datatype t;
    long long count;
    if (c->coll == CT_GATHERV || (c->coll == CT_SCATTERV && root && c->recvbuf == MPI_IN_PLACE)) {
        t = c->sendtype;
        count = c->coll == CT_GATHERV ? c->sendcount
                                      : (v && v->sendcounts ? v->sendcounts[rank] : -1);
        if (c->coll == CT_GATHERV && root && c->sendbuf == MPI_IN_PLACE) {
            t = c->recvtype;
            count = v && v->recvcounts ? v->recvcounts[rank] : -1;
        }
    } else if (c->coll == CT_SCATTERV) {
        t = c->recvtype;
        count = c->recvcount;
    } else { /* alltoallv: what it receives from itself */
        t = c->recvtype;
        count = v && v->recvcounts ? v->recvcounts[rank] : -1;
    }
    if (count < 0 || t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &tsize) != MPI_SUCCESS)
        return -1;
    return count * tsize;
}


/* Reduce_scatter(_block), scan, exscan: the executor on the call's datatype (element i
 * at i * extent), as reduce and allreduce. reduce_scatter's blocks lie back to back:
 * their displacements are the counts' prefix sums. */
static int setup_reduction_v(const ct_call *c, const ct_vargs *v, comm_state *cs, ct_job *job,
                             ct_params *p, const ct_registry_entry *e, const ct_exec_ctx *x)
{
    int n = p->size, rc;
    size_t total = 0;
    p->count = (size_t)c->recvcount;
    if (c->coll == CT_REDUCE_SCATTER) {
        if ((rc = grow_vcounts(job, n)) != MPI_SUCCESS)
            return rc;
        size_t *cnt = job->vcounts, *dsp = cnt + n;
        for (int i = 0; i < n; i++) {
            cnt[i] = (size_t)v->recvcounts[i];
            dsp[i] = total;
            total += cnt[i];
        }
        p->count = 0;
        p->counts = cnt;
        p->displs = dsp;
        job->have_key = 0; /* the arrays change in place from call to call */
    } else {
        total = p->count;
    }
    job->empty = total == 0 || x->type_size == 0;
    if (job->empty)
        return MPI_SUCCESS;
    p->type_size = x->type_size;
    p->segcount = 0;
    p->in_place = c->sendbuf == MPI_IN_PLACE;
    job->x = *x;
    job->x.src = p->in_place ? c->recvbuf : (void *)c->sendbuf;
    job->x.dst = c->recvbuf;
    job->x.op = c->op;
    return prepare_schedule(cs, job, e, p);
}

/* Where colltune does not run the call: the library's own collective
 * (CT_REJECT_NATIVE), or nothing run and *go = -1 for the caller to start it
 * (CT_REJECT_REPORT: the persistent forms, whose native call takes an info). */
static int not_ours(const ct_call *c, const ct_vargs *v, int native_on_reject, int *go)
{
    if (native_on_reject == CT_REJECT_REPORT) {
        *go = -1;
        return MPI_SUCCESS;
    }
    return ct_call_native_v(c, v);
}

/* The slot a blocking call that found none to reuse takes: the least recently used. */
static job_slot *victim_slot(comm_state *st)
{
    job_slot *v = &st->slots[0];
    for (int i = 1; i < JOB_SLOTS; i++)
        if (st->slots[i].used < v->used)
            v = &st->slots[i];
    return v;
}

static int call_prepare(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                        int native_on_reject, ct_job *job, int *go, const char **ran)
{
    const char *cname = ct_coll_name(c->coll);
    int size, rank, inter, rc, commutative = 1;
    reject why;
    *ran = "native";
    *go = 0;
    if (c->comm == MPI_COMM_NULL) {
        if (native_on_reject)
            return not_ours(c, v, native_on_reject, go);
        return ct_raise_error(MPI_COMM_NULL, MPI_ERR_COMM, "%s on MPI_COMM_NULL", cname);
    }
    if ((rc = PMPI_Comm_test_inter(c->comm, &inter)) != MPI_SUCCESS)
        return native_on_reject ? not_ours(c, v, native_on_reject, go) : rc;
    PMPI_Comm_size(c->comm, &size);
    PMPI_Comm_rank(c->comm, &rank);
    if (check_args(c, rank, size, inter, &commutative, &why) != MPI_SUCCESS ||
        (!inter && check_vargs(c, v, rank, size, &why) != MPI_SUCCESS))
        return native_on_reject ? not_ours(c, v, native_on_reject, go) : raise_message(c->comm, why.cls, why.msg);

    const char *alg = (opts && opts->algorithm && opts->algorithm[0]) ? opts->algorithm : NULL;
    ct_options tuned;
    ct_table_choice choice;
    if (!alg && ct_table_loaded() && ct_call_same_size_v(c->coll) &&
        ct_table_lookup(c->coll, size, ct_call_bytes_v(c, v), &choice) == 0) {
        /* No algorithm asked for: the loaded tuning table's choice (COLLTUNE_TABLE, or
         * ct_table_use). */
        if (opts)
            tuned = *opts;
        else
            ct_options_init(&tuned);
        tuned.algorithm = alg = choice.algorithm;
        tuned.has_segsize = choice.segsize > 0;
        tuned.segsize = choice.segsize;
        opts = &tuned;
    }
    const ct_registry_entry *e = ct_registry_find(c->coll, alg ? alg : "native");
    if (!e)
        refuse(&why, MPI_ERR_ARG, "unknown %s algorithm '%s'", cname, alg);
    else if (opts && opts->has_segsize && opts->segsize <= 0)
        refuse(&why, MPI_ERR_ARG, "segment size must be > 0 (got %lld)", opts->segsize);
    else if (opts && (opts->radix < 0 || opts->radix == 1))
        refuse(&why, MPI_ERR_ARG, "radix must be >= 2 (got %d)", opts->radix);
    else if (!commutative && (e->info.flags & CT_ALG_NEEDS_COMMUTE))
        refuse(&why, MPI_ERR_OP,
               "%s algorithm '%s' needs a commutative operation; use one that keeps rank order",
               cname, e->info.name);
    else
        why.cls = MPI_SUCCESS;
    const char *intra = NULL, *inter_part = NULL;
    unsigned part_flags = 0;
    if (why.cls == MPI_SUCCESS && (e->info.flags & CT_ALG_HIERARCHICAL)) {
        char msg[200];
        if (ct_hier_parts(c->coll, opts ? opts->intra : NULL, opts ? opts->inter : NULL,
                          &intra, &inter_part, &part_flags, msg, sizeof msg))
            refuse(&why, MPI_ERR_ARG, "%s", msg);
        else if (!commutative && (part_flags & CT_ALG_NEEDS_COMMUTE))
            refuse(&why, MPI_ERR_OP,
                   "%s/hier with parts %s (intra) and %s (inter) needs a commutative operation; "
                   "choose parts that keep rank order", cname, intra, inter_part);
    }
    if (why.cls != MPI_SUCCESS)
        return native_on_reject ? not_ours(c, v, native_on_reject, go) : raise_message(c->comm, why.cls, why.msg);
    /* Inter-communicators are MPI's business (the public API's too). */
    if ((e->info.flags & CT_ALG_NATIVE) || inter)
        return not_ours(c, v,
                        native_on_reject == CT_REJECT_REPORT ? CT_REJECT_REPORT
                                                             : CT_REJECT_NATIVE,
                        go);
    /* An algorithm that broadcasts the root's counts first, a blocking exchange, cannot
     * start a non-blocking or persistent call. */
    if (c->request && (e->info.flags & CT_ALG_ALL_COUNTS))
        return native_on_reject ? not_ours(c, v, native_on_reject, go)
                                : ct_raise_error(c->comm, MPI_ERR_ARG,
                                                 "%s algorithm '%s' exchanges the counts in a "
                                                 "blocking step: not in a non-blocking call",
                                                 cname, e->info.name);
    /* A call through a node's shared segment first waits for every other rank to be
     * done with the segment's previous call, not for this rank's own: two in flight on
     * one rank (non-blocking or persistent starts) can pass that check out of order and
     * overwrite slots a peer still reads (seen: a persistent allgather/shm started with
     * a barrier/shm, wrong data, then a hang). Blocking calls only, until the engine
     * runs a rank's segment calls in order. */
    if (c->request &&
        ((e->info.flags & CT_ALG_SHARED_MEMORY) || (part_flags & CT_ALG_SHARED_MEMORY)))
        return native_on_reject ? not_ours(c, v, native_on_reject, go)
                                : ct_raise_error(c->comm, MPI_ERR_ARG,
                                                 "%s algorithm '%s' runs through the node's "
                                                 "shared segment: blocking calls only",
                                                 cname, e->info.name);

    ct_params p;
    memset(&p, 0, sizeof p);
    p.coll = c->coll;
    p.size = size;
    p.rank = rank;
    p.root = rooted(c->coll) ? c->root : 0;
    p.radix = (opts && opts->radix) ? opts->radix : 4;
    p.commutative = commutative;
    long long seg = (opts && opts->has_segsize) ? opts->segsize : e->info.default_segsize;
    int seg_ok = (e->info.flags & CT_ALG_SEGMENTABLE) != 0;

    comm_state *st = NULL;
    ct_exec_ctx x;
    if (c->coll == CT_BCAST || reduces(c->coll)) {
        memset(&x, 0, sizeof x);
        if ((rc = ct_exec_describe_type(&x, c->recvtype)) != MPI_SUCCESS)
            return native_on_reject ? not_ours(c, v, native_on_reject, go)
                                    : ct_raise_error(c->comm, rc, "%s: invalid datatype", cname);
    }
    if ((rc = get_state(c->comm, &st)) != MPI_SUCCESS)
        return ct_raise_error(c->comm, rc, "%s: cannot set up communicator state", cname);
    shm_segment *segment = NULL;
    if (e->info.flags & CT_ALG_SHARED_MEMORY) {
        if ((rc = segment_setup(st, &st->shm, 0, size, rank)) != MPI_SUCCESS)
            return ct_raise_error(c->comm, rc, "%s/%s: cannot set up the shared segment", cname,
                                  e->info.name);
        if (st->shm.state < 0)
            return native_on_reject
                       ? not_ours(c, v, native_on_reject, go)
                       : ct_raise_error(c->comm, MPI_ERR_ARG,
                                        "%s algorithm '%s' needs every rank of the "
                                        "communicator on one node",
                                        cname, e->info.name);
        segment = &st->shm;
    }
    if (e->info.flags & CT_ALG_HIERARCHICAL) {
        if ((rc = node_layout(st, size, rank)) != MPI_SUCCESS)
            return ct_raise_error(c->comm, rc, "%s: cannot find the node layout", cname);
        p.node_of = st->node_of;
        p.layout_id = st->layout_id;
        /* Rank order of a non-commutative op survives a node's segment only on nodes that
         * are intervals of ranks. */
        int interleaved = 0;
        for (int r = 1; r < size; r++)
            interleaved |= st->node_of[r] < st->node_of[r - 1];
        int order_lost =
            interleaved && !commutative && (c->coll == CT_REDUCE || c->coll == CT_ALLREDUCE);
        p.intra = intra;
        p.inter = inter_part;
        if (part_flags & CT_ALG_SHARED_MEMORY) {
            if (order_lost)
                return native_on_reject
                           ? not_ours(c, v, native_on_reject, go)
                           : ct_raise_error(c->comm, MPI_ERR_OP,
                                            "%s/hier with the shm intra part needs a "
                                            "commutative operation when nodes interleave ranks",
                                            cname);
            if ((rc = segment_setup(st, &st->node_shm, st->node_of[rank], size, rank)) !=
                MPI_SUCCESS)
                return ct_raise_error(c->comm, rc, "%s/hier: cannot set up the nodes' shared "
                                      "segments", cname);
            if (st->node_shm.state < 0)
                return native_on_reject
                           ? not_ours(c, v, native_on_reject, go)
                           : ct_raise_error(c->comm, MPI_ERR_ARG,
                                            "%s/hier: the shm intra part needs the ranks of "
                                            "each node to share memory", cname);
            segment = &st->node_shm;
        }
    }
    if (!job) {
        st->current = victim_slot(st);
        st->current->fast_ok = 0; /* the job is this call's from here, run or not */
        st->current->used = ++st->uses;
        job = &st->current->job;
    }
    job->state = st;
    job->segment = segment;
    job->empty = 0;
    job->unpack_after = 0;
    job->nrepack = 0;
    job->takes_tag = 0;
    *ran = e->info.name;
    if (c->coll == CT_REDUCE_SCATTER_BLOCK || c->coll == CT_REDUCE_SCATTER ||
        c->coll == CT_SCAN || c->coll == CT_EXSCAN) {
        rc = setup_reduction_v(c, v, st, job, &p, e, &x);
    } else if (c->coll == CT_BCAST || c->coll == CT_REDUCE || c->coll == CT_ALLREDUCE) {
        job->empty = (c->recvcount == 0 || x.type_size == 0) &&
                     !segment; /* on the flags all the same */
        if (!job->empty) {
            p.count = x.type_size ? (size_t)c->recvcount : 0; /* zero-size type: no bytes */
            p.type_size = x.type_size;
            p.segcount = seg_ok ? ct_segcount_for(seg, x.type_size) : 0;
            p.in_place =
                c->sendbuf == MPI_IN_PLACE && (c->coll == CT_ALLREDUCE || rank == c->root);
            x.src = p.in_place ? c->recvbuf : (void *)c->sendbuf;
            x.dst = c->recvbuf;
            x.op = c->op;
            job->x = x;
            rc = prepare_schedule(st, job, e, &p);
        }
    } else if (c->coll == CT_BARRIER) {
        static char nothing; /* zero-byte messages still want a buffer address */
        byte_ctx(&job->x);
        job->x.src = job->x.dst = &nothing;
        rc = prepare_schedule(st, job, e, &p);
    } else {
        p.type_size = 1;
        p.segcount = seg_ok ? ct_segcount_for(seg, 1) : 0;
        rc = ct_coll_is_v(c->coll) ? setup_movement_v(c, v, st, job, &p, e)
                                   : setup_movement(c, st, job, &p, e);
    }
    /* A shared-memory algorithm refuses a call whose element the segment cannot hold
     * (COLLTUNE_SHM_BYTES below the type's extent): a refusal that depends only on the
     * communicator's size, the count and the type, alike on every rank, so each sends the
     * call to the library as it does for any algorithm that cannot serve it. */
    if (rc == MPI_ERR_INTERN && segment && native_on_reject) {
        *ran = "native";
        return not_ours(c, v, native_on_reject, go);
    }
    if (rc != MPI_SUCCESS)
        return ct_raise_error(c->comm, rc, "%s/%s: failed (%s)", cname, e->info.name,
                           rc == MPI_ERR_NO_MEM  ? "out of memory"
                           : rc == MPI_ERR_INTERN ? "no schedule could be generated"
                                                  : "MPI error");
    *go = 1;
    return MPI_SUCCESS;
}

int ct_call_prepare(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                    int native_on_reject, ct_job *job, int *go, const char **ran)
{
    return call_prepare(c, v, opts, native_on_reject, job, go, ran);
}

/* ---- The fast path of blocking calls ---------------------------------------- */

static int named_type(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return t == MPI_DATATYPE_NULL ||
           (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
            combiner == MPI_COMBINER_NAMED);
}

/* The operations whose job takes the caller's buffers as they are (no packing). */
static int fast_kind(ct_coll coll)
{
    return coll == CT_BCAST || coll == CT_REDUCE || coll == CT_ALLREDUCE || coll == CT_BARRIER;
}

static int same_name(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int fast_match(const job_slot *slot, const ct_call *c, const ct_options *o)
{
    const ct_call *f = &slot->call;
    const ct_options *fo = &slot->opts;
    return slot->fast_ok && f->coll == c->coll && f->sendcount == c->sendcount &&
           f->recvcount == c->recvcount && f->sendtype == c->sendtype &&
           f->recvtype == c->recvtype && f->op == c->op && f->root == c->root &&
           (f->sendbuf == MPI_IN_PLACE) == (c->sendbuf == MPI_IN_PLACE) &&
           !strcmp(slot->alg, o->algorithm) && fo->has_segsize == o->has_segsize &&
           (!o->has_segsize || fo->segsize == o->segsize) && fo->radix == o->radix &&
           same_name(fo->intra, o->intra) && same_name(fo->inter, o->inter);
}

/* The kept job that serves c as it is, or NULL. */
static job_slot *fast_find(comm_state *st, const ct_call *c, const ct_options *o)
{
    for (int i = 0; i < JOB_SLOTS; i++)
        if (fast_match(&st->slots[i], c, o))
            return &st->slots[i];
    return NULL;
}

/* Remembers c, which just ran through the whole path in slot, when the next equal call
 * may skip it: predefined datatypes and op only (a derived type freed and made again
 * may come back under the same handle with another layout). */
static void fast_remember(job_slot *slot, const ct_call *c, const ct_options *o)
{
    slot->fast_ok = 0;
    if (slot->job.empty || !o || !o->algorithm || strlen(o->algorithm) >= sizeof slot->alg ||
        !fast_kind(c->coll) || !named_type(c->sendtype) || !named_type(c->recvtype) ||
        !(c->op == MPI_OP_NULL || predefined_op(c->op)))
        return;
    slot->call = *c;
    slot->call.request = NULL;
    slot->opts = *o;
    snprintf(slot->alg, sizeof slot->alg, "%s", o->algorithm);
    slot->opts.algorithm = slot->alg;
    slot->fast_ok = 1;
}

/* colltune's state of comm if it has one (no collective set-up, unlike get_state). */
static comm_state *find_state(MPI_Comm comm)
{
    int flag = 0;
    comm_state *st = NULL;
    if (comm == MPI_COMM_NULL || state_keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, state_keyval, &st, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return st;
}

static int run_job(const ct_call *c, ct_job *job)
{
    int rc = MPI_SUCCESS;
    if (!job->empty) {
        rc = ct_exec(&job->sched, &job->x, &job->work);
        if (rc == MPI_SUCCESS)
            rc = ct_job_finish(job);
    }
    if (rc != MPI_SUCCESS)
        return ct_raise_error(c->comm, rc, "%s/%s: failed (%s)", ct_coll_name(c->coll),
                              job->alg->info.name,
                              rc == MPI_ERR_NO_MEM     ? "out of memory"
                              : rc == MPI_ERR_TRUNCATE ? "the ranks' counts differ"
                                                       : "MPI error");
    return MPI_SUCCESS;
}

int ct_call_run(const ct_call *c, const ct_options *opts, int native_on_reject,
                const char **ran)
{
    int go, rc;
    comm_state *st;
    job_slot *slot;
    if (opts && opts->algorithm && fast_kind(c->coll) && (st = find_state(c->comm)) &&
        (slot = fast_find(st, c, opts))) {
        ct_job *job = &slot->job;
        *ran = job->alg->info.name;
        if (c->coll != CT_BARRIER) {
            job->x.src = job->params.in_place ? c->recvbuf : (void *)c->sendbuf;
            job->x.dst = c->recvbuf;
        }
        slot->used = ++st->uses;
        next_call(job, st);
        return run_job(c, job);
    }
    rc = call_prepare(c, NULL, opts, native_on_reject, NULL, &go, ran);
    if (!go)
        return rc;
    if ((rc = get_state(c->comm, &st)) != MPI_SUCCESS)
        return rc;
    slot = st->current;
    if ((rc = run_job(c, &slot->job)) == MPI_SUCCESS)
        fast_remember(slot, c, opts);
    else
        slot->fast_ok = 0;
    return rc;
}

int ct_call_run_v(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                  int native_on_reject, const char **ran)
{
    int go, rc;
    comm_state *st;
    if (!v)
        return ct_call_run(c, opts, native_on_reject, ran);
    rc = call_prepare(c, v, opts, native_on_reject, NULL, &go, ran);
    if (!go)
        return rc;
    if ((rc = get_state(c->comm, &st)) != MPI_SUCCESS)
        return rc;
    st->current->fast_ok = 0; /* the job now holds this call */
    return run_job(c, &st->current->job);
}

/* The public collectives (ct_bcast ... ct_iexscan) are generated into public.c
 * (scripts/gen-bindings.py from src/interpose/collectives.def). */

int ct_table_use(const char *path, char *why, int len)
{
    char buf[512];
    if (ct_table_load(path, buf, sizeof buf) != 0) {
        if (why && len > 0)
            snprintf(why, (size_t)len, "%s", buf);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}
