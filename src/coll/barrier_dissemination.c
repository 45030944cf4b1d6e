/* Dissemination barrier (Hensgen, Finkel, Manber): in round k every rank
 * signals rank + 2^k and waits for rank - 2^k (mod N). After round k a rank
 * has heard, directly or not, from the 2^(k+1) - 1 ranks before it, so
 * ceil(log2 N) rounds cover everyone for any N, with no root and no
 * release phase: the fewest latencies, at N ceil(log2 N) messages. */
#include "algorithms.h"

int ct_barrier_dissemination(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    for (int d = 1; d < n; d *= 2) {
        ct_sched_round(s);
        ct_sched_sync_send(s, (r + d) % n);
        ct_sched_sync_recv(s, (r - d + n) % n);
    }
    return s->error ? -1 : 0;
}
