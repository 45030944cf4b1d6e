/* Broadcast for large messages (van de Geijn): a binomial scatter splits the
 * message into one part per rank, then a ring allgather reassembles it
 * everywhere. Each rank moves about 2x the message instead of log2(N)x. */
#include "algorithms.h"

int ct_bcast_scatter_allgather(const ct_params *p, ct_sched *s)
{
    int n = p->size;
    int v = (p->rank - p->root + n) % n;
    size_t count = p->count;
    if (n == 1)
        return 0;
    /* Virtual rank v owns part v; after the scatter it holds the parts of its
     * binomial subtree, [v, v + lowbit(v)). */
    int top = ct_pof2_floor(n);
    if (top < n)
        top *= 2;
    int span = v == 0 ? top : (v & -v);
    ct_sched_round(s);
    if (v != 0) {
        int parent = ((v - span) + p->root) % n;
        int hi = v + span < n ? v + span : n;
        size_t lo = ct_part_lo(count, n, v);
        ct_sched_recv(s, parent, CT_BUF_DST, lo, ct_part_lo(count, n, hi) - lo);
    }
    ct_sched_round(s);
    for (int m = span / 2; m >= 1; m /= 2) {
        int c = v + m;
        if (c >= n)
            continue;
        int hi = c + m < n ? c + m : n;
        size_t lo = ct_part_lo(count, n, c);
        ct_sched_send(s, (c + p->root) % n, CT_BUF_DST, lo, ct_part_lo(count, n, hi) - lo);
    }
    ct_ring_allgather(s, p, CT_BUF_DST, p->root);
    return s->error ? -1 : 0;
}
