/* Allreduce through the node's shared segment: every rank copies its input into
 * its slot; then small vectors are reduced whole by every rank straight from the
 * slots into its output, larger ones slice by slice (each rank reduces its slice
 * of all inputs into the segment's result area, then everyone copies the result
 * out). Rank order is kept (x_0 op x_1 op ... op x_{N-1}), so non-commutative
 * operations are served. Vectors larger than the segment go in chunks. */
#include "algorithms.h"

int ct_allreduce_shm(const ct_params *p, ct_sched *s)
{
    return ct_shm_reduce(p, s, -1);
}
