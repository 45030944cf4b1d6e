/*
 * A schedule is data: ordered rounds of SEND / RECV / REDUCE / COPY on buffer
 * regions. One schedule describes what one rank does in one collective call.
 *
 * Round semantics (shared by every interpreter: executor, simulator, model):
 *   1. all SENDs and RECVs of the round are started together;
 *   2. the round waits until every one of them has completed;
 *   3. then its REDUCEs and COPYs run, in the order they were added.
 * So a local operation sees the data received in its own round, and data a
 * round sends must have been produced by an earlier round.
 *
 * Regions count in elements of the collective's datatype, never in bytes, so
 * the same schedule serves any datatype (element i lives at i * extent).
 * Messages between a pair of ranks match in the order they are posted.
 */
#ifndef CT_SCHED_H
#define CT_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* Buffer ids. SRC is the caller's input (never written), DST its output.
 * SHM is the node's shared segment (the shared-memory algorithms): one buffer,
 * the same memory for every rank of the communicator, of buf_count[CT_BUF_SHM]
 * elements at most p->shm_count; temporaries are numbered from TMP0 below it. */
enum { CT_BUF_SRC = 0, CT_BUF_DST = 1, CT_BUF_TMP0 = 2 };
#define CT_MAX_BUFS 64
#define CT_BUF_SHM (CT_MAX_BUFS - 1)

/*
 * Shared-memory synchronisation: every rank has one flag, a counter only it
 * raises. SIGNAL (a.off = step) publishes "this rank has passed `step` of the
 * current call" (release); WAIT (peer, a.off = step) waits until peer has
 * (acquire). Steps rise through a schedule; the executor makes them unique to
 * the call (call number high, step low), so consecutive calls need no reset.
 * Every shared-memory schedule ends with SIGNAL(CT_STEP_DONE); WAIT(peer,
 * CT_STEP_PREV) waits until peer is done with the previous call on the
 * communicator, i.e. no longer reads the segment: before it is written again.
 */
#define CT_STEP_PREV 0
/* The segment's data bytes unless COLLTUNE_SHM_BYTES says otherwise. */
#define CT_SHM_DEFAULT_BYTES ((size_t)4 << 20)
#define CT_STEP_DONE 0xffffff
/* A composed schedule (a hierarchical algorithm with a shared-memory intra part)
 * gives its j-th shared-memory part the steps j * CT_STEP_PART + 1 ... and ends
 * that part at (j + 1) * CT_STEP_PART - 1, so the parts' steps keep rising. */
#define CT_STEP_PART 0x100000
#define CT_STEP_MAX_PARTS 15

/*
 * One copy between processes (the one-copy algorithms, issue 36): PULL (peer, a, b)
 * copies region a of the peer's caller buffer (a.buf SRC or DST of that rank) into
 * this rank's region b, straight out of the peer's memory (Linux cross-memory
 * attach, process_vm_readv): no segment in between. Every SIGNAL publishes the
 * signalling rank's buffers beside its flag, so a PULL must follow a WAIT on the
 * peer within the same call, and the peer must not leave the call before every
 * PULL from it is done (it waits on the pullers' flags): its buffers are the
 * program's again after that.
 */
typedef enum ct_opkind {
    CT_OP_SEND = 0, CT_OP_RECV, CT_OP_REDUCE, CT_OP_COPY, CT_OP_SIGNAL, CT_OP_WAIT, CT_OP_PULL
} ct_opkind;

typedef struct ct_region {
    int buf;          /* CT_BUF_* or a temporary from ct_sched_tmp */
    size_t off;       /* first element */
    size_t count;     /* elements */
} ct_region;

typedef struct ct_op {
    ct_opkind kind;
    int peer;         /* SEND / RECV: the other rank; WAIT: whose flag; PULL: whose buffer */
    ct_region a;      /* SEND: data; RECV: destination; REDUCE / COPY: source; PULL: the
                         peer's source region;
                         SIGNAL / WAIT: a.off is the step (buf -1, count 0) */
    ct_region b;      /* REDUCE: b = a (op) b, a on the left; COPY, PULL: destination */
} ct_op;

typedef struct ct_sched {
    ct_op *ops;
    int nops, cap_ops;
    int *round_start;       /* index of the first op of each round */
    int nrounds, cap_rounds;
    int nbufs;              /* CT_BUF_TMP0 + number of temporaries */
    size_t buf_count[CT_MAX_BUFS]; /* elements of each temporary */
    int error;              /* sticky: nonzero once an allocation failed */
    int shm_parts;          /* shared-memory parts composed into it (ct_compose) */
    /* Kept by the builders, so that the executor's set-up of a repeated call need not walk
     * the operations (docs/BENCHMARKS.md section 45): */
    int nmsgs;              /* SENDs and RECVs (0: a schedule on the segment's flags only) */
    int max_round_len;      /* operations of the longest round */
    size_t max_count;       /* the largest a.count of any operation */
} ct_sched;

/* Everything a generator may depend on: no MPI object in here, so every
 * rank's schedule can be generated in one process. */
/*
 * Buffers by collective (count = p->count, N = p->size; "block" = count
 * elements; block i of a buffer is [i * count, (i + 1) * count)):
 *   bcast      DST: count (input at the root, output elsewhere)
 *   reduce     SRC: count; DST: count at the root
 *   allreduce  SRC: count; DST: count
 *   scatter    SRC: N blocks at the root; DST: one block
 *   gather     SRC: one block; DST: N blocks at the root
 *   allgather  SRC: one block; DST: N blocks
 *   alltoall   SRC: N blocks (block j goes to rank j); DST: N blocks (block i
 *              comes from rank i)
 *   barrier    none (count is 0; only zero-byte messages)
 * The v-variants and reduce-scatters have per-rank blocks: block i has
 * ct_vcount(p, i) elements at ct_vdispl(p, i) (coll/common.h; p->counts and
 * p->displs, or p->count per block when they are NULL, as the bench and the
 * model use them):
 *   allgatherv SRC: block p->rank's elements; DST: N blocks
 *   gatherv    SRC: block p->rank's elements; DST: N blocks at the root
 *   scatterv   SRC: N blocks at the root; DST: block p->rank's elements
 *   alltoallv  SRC: N send blocks (counts / displs); DST: N receive blocks
 *              (ct_vrcount / ct_vrdispl: p->rcounts / p->rdispls)
 *   reduce_scatter(_block)  SRC: the whole vector, block i at ct_vdispl(p, i)
 *              (the blocks' prefix sums); DST: block p->rank's elements
 *   scan, exscan  SRC: count; DST: count (exscan leaves rank 0's DST alone)
 * in_place for the v-variants as for their plain forms; for the
 * reduce-scatters the whole input vector is in DST and the result goes to its
 * start; for the scans the input is in DST.
 * in_place means the rank has no SRC and its input already sits in DST: at
 * its final place for reduce / allreduce, and as block p->rank of DST for
 * gather (root) and allgather. For scatter, in_place (root only) means the
 * root's DST is not written: its block stays in SRC. Alltoall never sees
 * in_place (the API copies the buffer first).
 */
typedef struct ct_params {
    int coll;               /* ct_coll */
    int size, rank, root;   /* root is ignored by allreduce */
    size_t count;           /* elements (per block for the data-movement ones) */
    size_t type_size;       /* bytes of data in one element */
    size_t segcount;        /* elements per segment; 0 = one segment */
    int radix;              /* k-nomial radix (>= 2) */
    int commutative;        /* the operation is commutative */
    int in_place;           /* input is in DST (MPI_IN_PLACE) */
    /* The node layout, for the hierarchical algorithms (the others ignore it):
     * node_of[r] is rank r's node for r in [0, size), nodes numbered from 0 in
     * order of first appearance (node_of[0] = 0, and a new node's number is
     * one more than the largest so far). NULL: every rank on one node.
     * layout_id names the layout for caches that compare parameters bytewise
     * (unique per layout array; 0 with NULL). */
    const int *node_of;
    unsigned layout_id;
    /* Hierarchical algorithms: registry names of the intra-node and inter-node
     * parts (see ct_hier_parts in coll/registry.h); NULL = the defaults. The
     * API passes the registry's own strings, so they compare as pointers. */
    const char *intra, *inter;
    /* Shared-memory algorithms: elements the node's segment holds for the call
     * (0: no segment, they refuse); the ranks of the communicator share memory. */
    size_t shm_count;
    /* The one-copy algorithms: 1 when the node's ranks may read each other's memory
     * (cross-memory attach probed on the segment; PULL); 0: they take the
     * copy-through path of the segment instead. */
    int cma;
    /* The v-variants and reduce-scatters: per-rank counts and displacements, in
     * elements (N entries each; NULL: p->count per block, blocks back to back).
     * For reduce_scatter the displacements are the counts' prefix sums. Every
     * rank's generator sees the same arrays, so a rooted algorithm that sends
     * subtrees needs the root's counts on every rank (the API broadcasts them).
     * rcounts / rdispls: alltoallv's receive side (counts / displs its send side). */
    const size_t *counts, *displs;
    const size_t *rcounts, *rdispls;
} ct_params;

typedef int (*ct_generator)(const ct_params *p, ct_sched *s);

void ct_sched_init(ct_sched *s);
void ct_sched_free(ct_sched *s);
void ct_sched_reset(ct_sched *s);

/* Starts a new round; operations added next belong to it. Empty rounds are
 * dropped, so generators may call this freely. */
void ct_sched_round(ct_sched *s);
/* A temporary of count elements; returns its buffer id (-1 on error). */
int ct_sched_tmp(ct_sched *s, size_t count);

/* Builders. Zero-count communications are dropped (both sides of a message
 * compute the same count, so they stay matched); ct_sched_sync_* below keep
 * theirs. */
void ct_sched_send(ct_sched *s, int peer, int buf, size_t off, size_t count);
void ct_sched_recv(ct_sched *s, int peer, int buf, size_t off, size_t count);
/* Appends a copy of op to the current round, as it is (schedule surgery:
 * the split tree cuts a generated schedule in two). */
void ct_sched_add_op(ct_sched *s, const ct_op *op);
/* A zero-byte message, never dropped: synchronisation (barriers). */
void ct_sched_sync_send(ct_sched *s, int peer);
void ct_sched_sync_recv(ct_sched *s, int peer);
/* dst = src (op) dst over count elements. */
void ct_sched_reduce(ct_sched *s, int sbuf, size_t soff, int dbuf, size_t doff,
                     size_t count);
void ct_sched_copy(ct_sched *s, int sbuf, size_t soff, int dbuf, size_t doff,
                   size_t count);

/* PULL: count elements of the peer's buffer pbuf (CT_BUF_SRC or CT_BUF_DST) from
 * element poff into this rank's dbuf at doff (see CT_OP_PULL). */
void ct_sched_pull(ct_sched *s, int peer, int pbuf, size_t poff, int dbuf, size_t doff,
                   size_t count);

/* Shared-memory steps (the SIGNAL / WAIT above); the segment's elements used. */
void ct_sched_signal(ct_sched *s, unsigned step);
void ct_sched_wait(ct_sched *s, int peer, unsigned step);
void ct_sched_shm(ct_sched *s, size_t count);

/* Number of ops in round r, and its first op. */
static inline int ct_sched_round_len(const ct_sched *s, int r)
{
    int end = (r + 1 < s->nrounds) ? s->round_start[r + 1] : s->nops;
    return end - s->round_start[r];
}

/* Elements per segment for a byte segment size (at least one element). */
size_t ct_segcount_for(long long segsize_bytes, size_t type_size);

#endif
