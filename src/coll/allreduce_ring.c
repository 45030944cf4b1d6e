/* Allreduce on a ring: a ring reduce-scatter (N-1 steps, each rank reducing one
 * part per step) then a ring allgather. Bandwidth-optimal, N-1 latencies per
 * half; needs a commutative operation (each part is reduced in ring order). */
#include "algorithms.h"

int ct_allreduce_ring(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    ct_sched_round(s);
    ct_sched_copy(s, in_buf, 0, CT_BUF_DST, 0, count);
    if (n == 1)
        return s->error ? -1 : 0;
    int tmp = ct_sched_tmp(s, count);
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    for (int step = 0; step < n - 1; step++) {
        int sp = ((r - step) % n + n) % n;
        int rp = ((r - step - 1) % n + n) % n;
        size_t roff = ct_part_lo(count, n, rp), rlen = ct_part_len(count, n, rp);
        ct_sched_round(s);
        ct_sched_send(s, right, CT_BUF_DST, ct_part_lo(count, n, sp), ct_part_len(count, n, sp));
        ct_sched_recv(s, left, tmp, roff, rlen);
        ct_sched_reduce(s, tmp, roff, CT_BUF_DST, roff, rlen);
    }
    /* Rank r now holds the reduced part r+1: rotate the allgather by one. */
    ct_ring_allgather(s, p, CT_BUF_DST, n - 1);
    return s->error ? -1 : 0;
}
