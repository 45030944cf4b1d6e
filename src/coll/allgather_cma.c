/* Allgather in one copy: every rank reads each other rank's block straight out of
 * that rank's buffer (cross-memory attach), starting with its right neighbour so
 * that the readers spread over the ranks; nobody leaves before everyone has read.
 * Where the node does not allow it (p->cma 0), allgather_shm. */
#include "algorithms.h"

int ct_allgather_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_allgather_shm(p, s);
    int n = p->size, me = p->rank;
    /* MPI_IN_PLACE is every rank's or none's: a peer's block is then in its DST. */
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    ct_sched_round(s);
    if (!p->in_place)
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)me * p->count, p->count);
    ct_sched_signal(s, 1);
    for (int k = 1; k < n; k++) {
        int r = (me + k) % n;
        ct_sched_wait(s, r, 1);
        ct_sched_pull(s, r, in, p->in_place ? (size_t)r * p->count : 0, CT_BUF_DST,
                      (size_t)r * p->count, p->count);
    }
    /* Everyone has read what it needs from everyone: the buffers are free again. */
    ct_sched_signal(s, 2);
    ct_shm_wait_others(s, p, 2);
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
