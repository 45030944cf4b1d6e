/* Allgatherv on a ring: in each of N-1 steps every rank passes the block it
 * received last to its right neighbour, each block with its own count and
 * displacement. Bandwidth-optimal whatever the counts, N-1 latencies. */
#include "algorithms.h"

int ct_allgatherv_ring(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    if (!p->in_place) {
        ct_sched_round(s);
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, ct_vdispl(p, r), ct_vcount(p, r));
    }
    for (int step = 0; step < n - 1; step++) {
        int sb = (r - step + n) % n, rb = (r - step - 1 + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, right, CT_BUF_DST, ct_vdispl(p, sb), ct_vcount(p, sb));
        ct_sched_recv(s, left, CT_BUF_DST, ct_vdispl(p, rb), ct_vcount(p, rb));
    }
    return s->error ? -1 : 0;
}
