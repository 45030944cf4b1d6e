/* Barrier on the node's shared flags: dissemination, ceil(log2 N) rounds; in
 * round k a rank raises its flag and waits for the rank 2^k below it to have
 * raised its own as far. No message, no data. */
#include "algorithms.h"

int ct_barrier_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank;
    ct_sched_round(s);
    unsigned step = 0;
    for (int d = 1; d < n; d *= 2) {
        ct_sched_signal(s, ++step);
        ct_sched_wait(s, (me - d + n) % n, step);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
