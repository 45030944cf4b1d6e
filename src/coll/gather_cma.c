/* Gather in one copy: the root reads every rank's block straight out of its send
 * buffer (cross-memory attach); the others stay in the call until the root is
 * done. Where the node does not allow it (p->cma 0), gather_shm. */
#include "algorithms.h"

int ct_gather_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_gather_shm(p, s);
    int n = p->size, me = p->rank, root = p->root;
    ct_sched_round(s);
    if (me == root) {
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)me * p->count, p->count);
        for (int k = 1; k < n; k++) {
            int r = (me + k) % n;
            ct_sched_wait(s, r, 1);
            ct_sched_pull(s, r, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)r * p->count, p->count);
        }
    } else {
        ct_sched_signal(s, 1);
        ct_sched_wait(s, root, CT_STEP_DONE);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
