/* Pairwise-exchange alltoall: in step k (1 <= k < N) every rank sends its
 * block for rank + k and receives the block of rank - k, so each step is a
 * permutation: every rank sends and receives exactly one block, nobody is a
 * hotspot. N-1 latencies and the minimum volume: for large blocks. */
#include "algorithms.h"

int ct_alltoall_pairwise(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = (r - k + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, to, CT_BUF_SRC, (size_t)to * count, count);
        ct_sched_recv(s, from, CT_BUF_DST, (size_t)from * count, count);
        if (k == 1) /* our own block needs no message: copy it meanwhile */
            ct_sched_copy(s, CT_BUF_SRC, (size_t)r * count, CT_BUF_DST, (size_t)r * count,
                          count);
    }
    return s->error ? -1 : 0;
}
