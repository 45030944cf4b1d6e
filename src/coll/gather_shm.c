/* Gather through the node's shared segment: every rank copies its block in
 * (chunk by chunk, a ring of slots), the root copies each one out as soon as it
 * is signalled. No message. */
#include "algorithms.h"

int ct_gather_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank, root = p->root;
    size_t ch, nslots, nchunks = ct_shm_chunks(p, p->count, (size_t)n, &ch, &nslots);
    if (!nchunks)
        return -1;
    ct_sched_shm(s, ch * (size_t)n * nslots);
    ct_sched_round(s);
    if (me == root) {
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)root * p->count, p->count);
    } else {
        /* Whoever read the segment in the last call (its root, any rank) is done. */
        ct_shm_wait_others(s, p, CT_STEP_PREV);
    }
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * ch, len = c + 1 < nchunks ? ch : p->count - off;
        size_t slot = (c % nslots) * ch * (size_t)n;
        unsigned step = (unsigned)c + 1;
        if (me == root) {
            for (int r = 0; r < n; r++)
                if (r != root) {
                    ct_sched_wait(s, r, step);
                    ct_sched_copy(s, CT_BUF_SHM, slot + (size_t)r * ch, CT_BUF_DST,
                                  (size_t)r * p->count + off, len);
                }
        } else {
            if (c >= nslots)
                ct_sched_wait(s, root, step - (unsigned)nslots); /* slot consumed */
            ct_sched_copy(s, CT_BUF_SRC, off, CT_BUF_SHM, slot + (size_t)me * ch, len);
        }
        ct_sched_signal(s, step);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
