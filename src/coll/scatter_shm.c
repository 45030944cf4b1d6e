/* Scatter through the node's shared segment: the root copies every rank's block
 * in (chunk by chunk, a ring of slots), each rank copies its own block out as
 * soon as the chunk is signalled. No message. */
#include "algorithms.h"

int ct_scatter_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank, root = p->root;
    size_t ch, nslots, nchunks = ct_shm_chunks(p, p->count, (size_t)n, &ch, &nslots);
    if (!nchunks)
        return -1;
    ct_sched_shm(s, ch * (size_t)n * nslots);
    ct_sched_round(s);
    if (me == root) {
        ct_shm_wait_others(s, p, CT_STEP_PREV);
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, (size_t)root * p->count, CT_BUF_DST, 0, p->count);
    }
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * ch, len = c + 1 < nchunks ? ch : p->count - off;
        size_t slot = (c % nslots) * ch * (size_t)n;
        unsigned step = (unsigned)c + 1;
        if (me == root) {
            if (c >= nslots)
                ct_shm_wait_others(s, p, step - (unsigned)nslots); /* slot consumed */
            for (int r = 0; r < n; r++)
                if (r != root)
                    ct_sched_copy(s, CT_BUF_SRC, (size_t)r * p->count + off, CT_BUF_SHM,
                                  slot + (size_t)r * ch, len);
        } else {
            ct_sched_wait(s, root, step);
            ct_sched_copy(s, CT_BUF_SHM, slot + (size_t)me * ch, CT_BUF_DST, off, len);
        }
        ct_sched_signal(s, step);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
