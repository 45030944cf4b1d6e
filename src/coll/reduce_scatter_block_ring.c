/* Reduce_scatter_block on a ring: reduce_scatter's generator (reduce_scatter_ring.c)
 * with every block p->count elements, back to back: the per-rank counts of the
 * schedule core default to exactly that when p->counts is NULL. */
#include "algorithms.h"

int ct_reduce_scatter_block_ring(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.counts = q.displs = NULL;
    return ct_reduce_scatter_ring(&q, s);
}
