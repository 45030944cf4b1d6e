/* Broadcast for medium and large messages: the binomial scatter of
 * scatter_allgather, then a Bruck allgather, which reassembles the message in
 * ceil(log2 N) steps instead of the ring's N-1 for the same volume: fewer
 * latencies where every rank is close (one node). */
#include "algorithms.h"

int ct_bcast_scatter_bruck(const ct_params *p, ct_sched *s)
{
    if (p->size == 1)
        return 0;
    ct_binomial_scatter_parts(s, p, CT_BUF_DST);
    ct_bruck_allgather(s, p, CT_BUF_DST, p->root);
    return s->error ? -1 : 0;
}
