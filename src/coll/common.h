/*
 * Building blocks shared by the algorithm generators: communication trees,
 * even partitions of a vector, and the tree-shaped bodies of broadcast and
 * reduction that several algorithms instantiate with different trees.
 */
#ifndef CT_COLL_COMMON_H
#define CT_COLL_COMMON_H

#include "../sched/sched.h"

typedef enum ct_tree_kind {
    CT_TREE_FLAT,    /* the root talks to everyone */
    CT_TREE_CHAIN,   /* v -> v+1 */
    CT_TREE_BINARY,  /* v -> 2v+1, 2v+2 */
    CT_TREE_KNOMIAL, /* radix k; binomial is k = 2 */
    CT_TREE_SPLIT    /* binary, subtrees contiguous: v's interval [v, v+n) has
                        children v+1 and v+1+ceil((n-1)/2) */
} ct_tree_kind;

/* One rank's view of a tree, in real ranks. Children are listed in ascending
 * virtual rank; for every tree but the binary one, child i's subtree is a
 * contiguous interval of virtual ranks, and the intervals ascend with i. */
typedef struct ct_tree {
    int parent;      /* -1 at the top */
    int nchildren;
    int *children;
} ct_tree;

/* Builds the tree of `rank` among `size` ranks, with virtual rank
 * v = (rank - top + size) % size, so `top` is the tree's root. */
int ct_tree_build(ct_tree *t, ct_tree_kind kind, int radix, int size, int rank, int top);
void ct_tree_free(ct_tree *t);

/* Even partition of count elements into n parts: part i is [lo(i), lo(i+1)). */
static inline size_t ct_part_lo(size_t count, int n, int i)
{
    return (size_t)((unsigned __int128)count * (unsigned)i / (unsigned)n);
}
static inline size_t ct_part_len(size_t count, int n, int i)
{
    return ct_part_lo(count, n, i + 1) - ct_part_lo(count, n, i);
}

/* Number of segments of a count-element message (at least 1). */
size_t ct_nsegs(const ct_params *p);
/* Segment `seg`: first element and length. */
void ct_seg(const ct_params *p, size_t seg, size_t *off, size_t *len);

/* Broadcast of p->count elements of `buf` down a tree rooted at p->root,
 * segmented by p->segcount (children served from the largest subtree). */
int ct_tree_bcast(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top, int buf);

/* Reduction up a tree whose top is `top`. Every rank contributes `in_buf`;
 * the top's result goes to `out_buf` (which may equal in_buf for in-place).
 * When the operation is not commutative, the tree must have the interval
 * property above with top = 0, and the result is x_0 (op) x_1 ... x_{n-1}. */
int ct_tree_reduce(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                   int in_buf, int out_buf);

/* The reduce generators of the tree algorithms: handles rank order for
 * non-commutative operations (reduce to rank 0, then hand over to the root). */
int ct_reduce_over_tree(const ct_params *p, ct_sched *s, ct_tree_kind kind);

/* Scatter of blocks (p->count elements each) down a tree whose subtrees are
 * intervals of virtual ranks (flat, chain, split, k-nomial), segmented by
 * p->segcount. At `top`, src_buf holds N blocks in real rank order; every
 * rank ends with its block at dst_buf[dst_off]. The top copies its own
 * block unless dst_buf < 0 (in-place scatter). */
int ct_tree_scatter_blocks(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                           int src_buf, int dst_buf, size_t dst_off);

/* Gather of blocks up such a tree: every rank's block is at
 * src_buf[src_off]; `top` ends with the N blocks in real rank order in
 * dst_buf (its own is copied there unless it already is). */
int ct_tree_gather_blocks(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                          int src_buf, size_t src_off, int dst_buf);

/* Ring allgather of the n parts of `buf`, where rank r (in rotated rank
 * (r - first + n) % n) already holds its own part. */
void ct_ring_allgather(ct_sched *s, const ct_params *p, int buf, int first);

/* Binomial scatter of the n parts of `buf` from p->root: afterwards virtual
 * rank v = (rank - root) mod n holds part v (and its subtree's parts). */
void ct_binomial_scatter_parts(ct_sched *s, const ct_params *p, int buf);

/* Bruck allgather of the n parts of `buf` in ceil(log2 n) steps, any n:
 * rotated rank v (as in ct_ring_allgather) starts with part v. Parts land at
 * their own place in the buffer, so no final rotation is needed. */
void ct_bruck_allgather(ct_sched *s, const ct_params *p, int buf, int first);

/* Recursive-halving reduce-scatter among the power-of-two subset of ranks,
 * used by Rabenseifner's algorithms. See reduce_rabenseifner.c. */
typedef struct ct_rsag {
    int pof2, rem;
    int newrank;     /* -1 if this rank sits out after the first fold */
    int vrank;       /* rank rotated so that the result lands at vrank 0 */
    int work;        /* buffer the reduction runs in */
} ct_rsag;
int ct_rsag_reduce_scatter(ct_sched *s, const ct_params *p, int top, int work, ct_rsag *st);
/* Real rank of the power-of-two participant with new rank nr. */
int ct_rsag_real(const ct_params *p, int top, int rem, int nr);
/* Element range owned by new rank nr's window [wlo, whi) of pof2 parts. */
void ct_rsag_range(size_t count, int pof2, int wlo, int whi, size_t *off, size_t *len);

/* ---- Node-aware composition (hier.c) ----------------------------------- */

/* The node layout of a call (p->node_of), grouped: node k's ranks, ascending,
 * are members[start[k] .. start[k+1]). */
typedef struct ct_layout {
    int size, nnodes;
    int *node_of;     /* per rank */
    int *local;       /* per rank: its index among its node's ranks */
    int *start;       /* nnodes + 1 */
    int *members;     /* size */
    int *leader;      /* per node: its lowest rank (a rooted algorithm puts its
                         root in its node's place) */
    int max_node;     /* ranks on the largest node */
    int contiguous;   /* every node is an interval of ranks (block placement) */
} ct_layout;

/* Builds the layout of p (p->node_of NULL or one_node set: one node). -1 when
 * node_of is not numbered by first appearance or out of memory. */
int ct_layout_build(ct_layout *L, const ct_params *p, int one_node);
void ct_layout_free(ct_layout *L);

/* Generates algorithm alg of q->coll for a group of ranks (q->size and q->rank
 * are the group's; group[i] is the real rank of group rank i) and appends its
 * rounds to s, after what s has: peers become real ranks, its temporaries new
 * temporaries of s, and its SRC / DST the regions of s starting at
 * (src_buf, src_off) / (dst_buf, dst_off); a buffer -1 becomes a temporary of
 * s, made only if the part uses it, as large as it needs. Copies that land on
 * themselves are dropped. sync: every message becomes a zero-byte one and local
 * operations go (the fan-in and release of a barrier). */
int ct_compose(ct_sched *s, const char *alg, const ct_params *q, const int *group,
               int src_buf, size_t src_off, int dst_buf, size_t dst_off, int sync);

/* The sub-call parameters of a part: p's, without the layout. */
ct_params ct_part_params(const ct_params *p, int coll, const char *alg, int size, int rank,
                         int root);

/* The shared-memory algorithms: how count elements go through the segment
 * (p->shm_count elements) when each chunk needs `areas` chunk-sized areas of
 * it: the chunk (p->segcount, else all of count, cut to fit) and how many
 * chunks' areas fit at once (a ring of up to 8 slots). Returns the number of
 * chunks: 0 for count 0, and when no segment is there. */
size_t ct_shm_chunks(const ct_params *p, size_t count, size_t areas, size_t *chunk,
                     size_t *nslots);

/* WAIT(r, step) for every rank r but this one. */
void ct_shm_wait_others(ct_sched *s, const ct_params *p, unsigned step);

/* Reduce (root >= 0) or allreduce (root -1) through the segment, rank order
 * kept: reduce_shm and allreduce_shm. */
int ct_shm_reduce(const ct_params *p, ct_sched *s, int root);

/* ---- Per-rank blocks (the v-variants and reduce-scatters) ---------------- */

/* Block i's elements and first element (see ct_params.counts): the call's
 * arrays, or p->count per block back to back. The alltoallv receive side:
 * ct_vrcount / ct_vrdispl. */
static inline size_t ct_vcount(const ct_params *p, int i)
{
    return p->counts ? p->counts[i] : p->count;
}
static inline size_t ct_vdispl(const ct_params *p, int i)
{
    return p->displs ? p->displs[i] : (size_t)i * p->count;
}
static inline size_t ct_vrcount(const ct_params *p, int i)
{
    return p->rcounts ? p->rcounts[i] : p->count;
}
static inline size_t ct_vrdispl(const ct_params *p, int i)
{
    return p->rdispls ? p->rdispls[i] : (size_t)i * p->count;
}
/* Elements of blocks first, first+1, ... first+n-1 (ranks mod N). */
size_t ct_vsum(const ct_params *p, int first, int n);
/* Whether the operation has per-rank blocks (its counts come from ct_vcount). */
int ct_coll_is_v(int coll);
/* What a call with nothing to send does (one rank, or no element anywhere): the
 * local copies, for any operation. */
void ct_sched_local_only(const ct_params *p, ct_sched *s);
/* Whether a call of p moves no element at all (every block empty). */
int ct_call_empty(const ct_params *p);

static inline int ct_pof2_floor(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

#endif
