/* Allgather on a ring: in each of N-1 steps every rank passes the block it
 * received last to its right neighbour. Bandwidth-optimal (each rank sends
 * and receives (N-1) blocks, the minimum) and every message goes to the same
 * neighbour, but N-1 latencies: for large blocks. */
#include "algorithms.h"

int ct_allgather_ring(const ct_params *p, ct_sched *s)
{
    size_t count = p->count;
    if (!p->in_place) {
        ct_sched_round(s);
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)p->rank * count, count);
    }
    /* The ring helper splits its vector into N even parts: over N*count
     * elements those are exactly the N blocks. */
    ct_params all = *p;
    all.count = (size_t)p->size * count;
    ct_ring_allgather(s, &all, CT_BUF_DST, 0);
    return s->error ? -1 : 0;
}
