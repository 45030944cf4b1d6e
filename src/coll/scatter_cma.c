/* Scatter in one copy: every other rank reads its block straight out of the root's
 * send buffer (cross-memory attach); the root stays in the call until every reader
 * is done. Where the node does not allow it (p->cma 0), scatter_shm. */
#include "algorithms.h"

int ct_scatter_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_scatter_shm(p, s);
    int me = p->rank, root = p->root;
    ct_sched_round(s);
    if (me == root) {
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, (size_t)me * p->count, CT_BUF_DST, 0, p->count);
        ct_sched_signal(s, 1);
        ct_shm_wait_others(s, p, CT_STEP_DONE);
    } else {
        ct_sched_wait(s, root, 1);
        ct_sched_pull(s, root, CT_BUF_SRC, (size_t)me * p->count, CT_BUF_DST, 0, p->count);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
