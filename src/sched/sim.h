/*
 * The simulator: runs the schedules of all ranks of one collective in one
 * process, with real data and no MPI. Sends complete only when the matching
 * receive is posted (rendezvous), so a schedule that could deadlock on a real
 * MPI deadlocks here and is reported. Tests use it to check every algorithm
 * for every N; the model builds on the same replay.
 */
#ifndef CT_SIM_H
#define CT_SIM_H

#include "sched.h"

/* inout = in (op) inout, over count elements (as MPI_Reduce_local). */
typedef void (*ct_sim_reduce_fn)(const void *in, void *inout, size_t count);

typedef struct ct_sim_result {
    long messages;     /* SENDs matched */
    long long elements;/* elements carried by them */
    int max_rounds;    /* the longest schedule, in rounds */
    /* Nonzero when every rank finished only after hearing (through a chain of
     * messages) from every other rank's start: what a barrier must ensure. */
    int all_synchronized;
    char error[256];   /* empty on success */
} ct_sim_result;

/* Runs scheds[0..n-1]; src[r] / dst[r] are rank r's buffers of src_count /
 * dst_count elements of elem_size bytes (NULL where the rank has none).
 * Returns 0, or -1 with res->error set (unmatched message, size mismatch,
 * deadlock, out-of-range region or peer). */
int ct_sim_run(int n, ct_sched *const *scheds, void *const *src, void *const *dst,
               size_t src_count, size_t dst_count, size_t elem_size, ct_sim_reduce_fn reduce,
               ct_sim_result *res);

/* The same where each node has its own shared segment: rank r's CT_BUF_SHM is
 * node node_of[r]'s (node numbers from 0; NULL: one node), as with the
 * hierarchical algorithms' shared-memory intra parts. */
int ct_sim_run_nodes(int n, const int *node_of, ct_sched *const *scheds, void *const *src,
                     void *const *dst, size_t src_count, size_t dst_count, size_t elem_size,
                     ct_sim_reduce_fn reduce, ct_sim_result *res);

#endif
