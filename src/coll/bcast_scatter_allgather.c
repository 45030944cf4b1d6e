/* Broadcast for large messages (van de Geijn): a binomial scatter splits the
 * message into one part per rank, then a ring allgather reassembles it
 * everywhere. Each rank moves about 2x the message instead of log2(N)x. */
#include "algorithms.h"

int ct_bcast_scatter_allgather(const ct_params *p, ct_sched *s)
{
    if (p->size == 1)
        return 0;
    ct_binomial_scatter_parts(s, p, CT_BUF_DST);
    ct_ring_allgather(s, p, CT_BUF_DST, p->root);
    return s->error ? -1 : 0;
}
