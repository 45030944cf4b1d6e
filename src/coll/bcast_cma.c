/* Broadcast in one copy: every other rank reads the message straight out of the
 * root's buffer (cross-memory attach), all at once; the root stays in the call
 * until every reader is done. The shared segment's flags only synchronise. Where
 * the node does not allow it (p->cma 0), the copy-through path of bcast_shm. */
#include "algorithms.h"

int ct_bcast_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_bcast_shm(p, s);
    int root = p->root;
    ct_sched_round(s);
    if (p->rank == root) {
        ct_sched_signal(s, 1); /* the root's buffer is published */
        ct_shm_wait_others(s, p, CT_STEP_DONE);
    } else {
        ct_sched_wait(s, root, 1);
        ct_sched_pull(s, root, CT_BUF_DST, 0, CT_BUF_DST, 0, p->count);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
