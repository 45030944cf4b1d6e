/* Reduce-scatter on a ring (reduce_scatter and reduce_scatter_block): in each
 * of N-1 steps every rank passes the partial sum of one block to its right
 * neighbour, which adds its own contribution; block b ends complete at rank b.
 * Bandwidth-optimal (each rank sends the vector less its block once), N-1
 * latencies; block b is reduced in ring order from b+1, so the operation must
 * be commutative. */
#include "algorithms.h"

int ct_reduce_scatter_ring(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    size_t total = ct_vsum(p, 0, n), biggest = 1;
    for (int i = 0; i < n; i++)
        if (ct_vcount(p, i) > biggest)
            biggest = ct_vcount(p, i);
    int work = ct_sched_tmp(s, total), got = ct_sched_tmp(s, biggest);
    if (work < 0 || got < 0)
        return -1;
    ct_sched_round(s);
    ct_sched_copy(s, p->in_place ? CT_BUF_DST : CT_BUF_SRC, 0, work, 0, total);
    for (int step = 0; step < n - 1; step++) {
        int sb = (r - step - 1 + n) % n, rb = (r - step - 2 + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, right, work, ct_vdispl(p, sb), ct_vcount(p, sb));
        ct_sched_recv(s, left, got, 0, ct_vcount(p, rb));
        ct_sched_reduce(s, got, 0, work, ct_vdispl(p, rb), ct_vcount(p, rb));
    }
    ct_sched_copy(s, work, ct_vdispl(p, r), CT_BUF_DST, 0, ct_vcount(p, r));
    return s->error ? -1 : 0;
}
