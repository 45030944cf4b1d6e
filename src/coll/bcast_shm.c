/* Broadcast through the node's shared segment: the root copies the message in,
 * chunk by chunk (the segment size) into a ring of slots, and every other rank
 * copies each chunk out as soon as the root has signalled it, so copy-out
 * overlaps copy-in; a slot is written again only once every reader has
 * signalled that chunk consumed. No message: flags only. */
#include "algorithms.h"

int ct_bcast_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank, root = p->root;
    size_t chunk, nslots, nchunks = ct_shm_chunks(p, p->count, 1, &chunk, &nslots);
    if (!nchunks && p->count)
        return -1; /* no segment */
    ct_sched_shm(s, chunk * nslots);
    ct_sched_round(s);
    if (me == root)
        for (int r = 0; r < n; r++)
            ct_sched_wait(s, r, CT_STEP_PREV); /* nobody reads the last call's data */
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * chunk, len = c + 1 < nchunks ? chunk : p->count - off;
        size_t slot = (c % nslots) * chunk;
        unsigned step = (unsigned)c + 1;
        if (me == root) {
            for (int r = 0; r < n && c >= nslots; r++)
                if (r != root)
                    ct_sched_wait(s, r, step - (unsigned)nslots); /* slot consumed */
            ct_sched_copy(s, CT_BUF_DST, off, CT_BUF_SHM, slot, len);
        } else {
            ct_sched_wait(s, root, step);
            ct_sched_copy(s, CT_BUF_SHM, slot, CT_BUF_DST, off, len);
        }
        ct_sched_signal(s, step);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
