/* Allreduce as an allgather of every rank's whole vector (ring), then a local
 * reduction in rank order on every rank. N times the memory and traffic of the
 * vector: only worth it for very short vectors; keeps rank order. */
#include "algorithms.h"

int ct_allreduce_allgather_reduce(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    int all = ct_sched_tmp(s, count * (size_t)n);
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    ct_sched_round(s);
    ct_sched_copy(s, in_buf, 0, all, (size_t)r * count, count);
    for (int step = 0; step < n - 1; step++) {
        int sb = ((r - step) % n + n) % n, rb = ((r - step - 1) % n + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, right, all, (size_t)sb * count, count);
        ct_sched_recv(s, left, all, (size_t)rb * count, count);
    }
    ct_sched_round(s);
    ct_sched_copy(s, all, (size_t)(n - 1) * count, CT_BUF_DST, 0, count);
    for (int b = n - 2; b >= 0; b--)
        ct_sched_reduce(s, all, (size_t)b * count, CT_BUF_DST, 0, count);
    return s->error ? -1 : 0;
}
