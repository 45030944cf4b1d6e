/* Allreduce through the node's shared segment: small vectors are copied into every
 * rank's slot and reduced whole by every rank straight from the slots into its output;
 * larger ones slice by slice: each rank copies in only the slices the others reduce,
 * reduces its own slice (its own input read where it lies) into its output or the
 * segment's result area, and copies the others' reduced slices out. Rank order is kept
 * (x_0 op x_1 op ... op x_{N-1}), so non-commutative operations are served. Vectors
 * larger than the segment go in chunks (common.c, ct_shm_reduce). */
#include "algorithms.h"

int ct_allreduce_shm(const ct_params *p, ct_sched *s)
{
    return ct_shm_reduce(p, s, -1);
}
