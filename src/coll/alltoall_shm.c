/* All-to-all through the node's shared segment: every rank copies the block for
 * each other rank into its area (chunk by chunk, a ring of slots) and copies the
 * block each other rank left for it out once signalled; a chunk's slot is
 * rewritten once everyone has read it. No message. */
#include "algorithms.h"

int ct_alltoall_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank;
    size_t nn = (size_t)n * (size_t)n;
    size_t ch, nslots, nchunks = ct_shm_chunks(p, p->count, nn, &ch, &nslots);
    if (!nchunks)
        return -1;
    ct_sched_shm(s, ch * nn * nslots);
    ct_sched_round(s);
    ct_shm_wait_others(s, p, CT_STEP_PREV);
    ct_sched_copy(s, CT_BUF_SRC, (size_t)me * p->count, CT_BUF_DST, (size_t)me * p->count,
                  p->count);
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * ch, len = c + 1 < nchunks ? ch : p->count - off;
        size_t slot = (c % nslots) * ch * nn;
        unsigned written = 2 * (unsigned)c + 1, read = written + 1;
        if (c >= nslots)
            ct_shm_wait_others(s, p, read - 2 * (unsigned)nslots); /* slot consumed */
        for (int j = 0; j < n; j++) /* block j of my area: for rank j */
            if (j != me)
                ct_sched_copy(s, CT_BUF_SRC, (size_t)j * p->count + off, CT_BUF_SHM,
                              slot + ((size_t)me * (size_t)n + (size_t)j) * ch, len);
        ct_sched_signal(s, written);
        for (int r = 0; r < n; r++)
            if (r != me) {
                ct_sched_wait(s, r, written);
                ct_sched_copy(s, CT_BUF_SHM, slot + ((size_t)r * (size_t)n + (size_t)me) * ch,
                              CT_BUF_DST, (size_t)r * p->count + off, len);
            }
        ct_sched_signal(s, read);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
