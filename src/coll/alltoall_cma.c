/* Alltoall in one copy: every rank reads its block from each other rank's send
 * buffer (cross-memory attach), starting with its right neighbour; nobody leaves
 * before everyone has read. Where the node does not allow it (p->cma 0),
 * alltoall_shm. */
#include "algorithms.h"

int ct_alltoall_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_alltoall_shm(p, s);
    int n = p->size, me = p->rank;
    ct_sched_round(s);
    ct_sched_copy(s, CT_BUF_SRC, (size_t)me * p->count, CT_BUF_DST, (size_t)me * p->count,
                  p->count);
    ct_sched_signal(s, 1);
    for (int k = 1; k < n; k++) {
        int r = (me + k) % n;
        ct_sched_wait(s, r, 1);
        ct_sched_pull(s, r, CT_BUF_SRC, (size_t)me * p->count, CT_BUF_DST,
                      (size_t)r * p->count, p->count);
    }
    /* Everyone has read what it needs from everyone: the buffers are free again. */
    ct_sched_signal(s, 2);
    ct_shm_wait_others(s, p, 2);
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
