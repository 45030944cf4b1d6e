/* Extended ring barrier: a token leaves rank 0 and goes around the ring, so
 * when it is back rank 0 knows everyone has arrived; a second lap then
 * releases the ranks in ring order. The second lap stops at rank N-1: a last
 * hop back to rank 0 would tell it nothing. 2N-1 messages, 2N-1 latencies,
 * one neighbour per rank: only sensible for a handful of ranks or as a
 * baseline. */
#include "algorithms.h"

int ct_barrier_ring(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    if (r == 0) {
        ct_sched_round(s);
        ct_sched_sync_send(s, right);  /* arrival token */
        ct_sched_sync_recv(s, left);   /* ... back: everyone has arrived */
        ct_sched_round(s);
        ct_sched_sync_send(s, right);  /* release */
        return s->error ? -1 : 0;
    }
    ct_sched_round(s);
    ct_sched_sync_recv(s, left);       /* arrival token */
    ct_sched_round(s);
    ct_sched_sync_send(s, right);      /* pass it on (rank N-1: back to 0) */
    ct_sched_sync_recv(s, left);       /* release */
    if (r < n - 1) {
        ct_sched_round(s);
        ct_sched_sync_send(s, right);
    }
    return s->error ? -1 : 0;
}
