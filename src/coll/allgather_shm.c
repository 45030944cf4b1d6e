/* Allgather through the node's shared segment: every rank copies its block in
 * (chunk by chunk, a ring of slots) and copies every other rank's out once
 * signalled; a chunk's slot is rewritten once everyone has read it. No message. */
#include "algorithms.h"

int ct_allgather_shm(const ct_params *p, ct_sched *s)
{
    int n = p->size, me = p->rank;
    size_t ch, nslots, nchunks = ct_shm_chunks(p, p->count, (size_t)n, &ch, &nslots);
    if (!nchunks)
        return -1;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t in_off = p->in_place ? (size_t)me * p->count : 0;
    ct_sched_shm(s, ch * (size_t)n * nslots);
    ct_sched_round(s);
    ct_shm_wait_others(s, p, CT_STEP_PREV);
    if (!p->in_place)
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)me * p->count, p->count);
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * ch, len = c + 1 < nchunks ? ch : p->count - off;
        size_t slot = (c % nslots) * ch * (size_t)n;
        unsigned written = 2 * (unsigned)c + 1, read = written + 1;
        if (c >= nslots)
            ct_shm_wait_others(s, p, read - 2 * (unsigned)nslots); /* slot consumed */
        ct_sched_copy(s, in, in_off + off, CT_BUF_SHM, slot + (size_t)me * ch, len);
        ct_sched_signal(s, written);
        for (int r = 0; r < n; r++)
            if (r != me) {
                ct_sched_wait(s, r, written);
                ct_sched_copy(s, CT_BUF_SHM, slot + (size_t)r * ch, CT_BUF_DST,
                              (size_t)r * p->count + off, len);
            }
        ct_sched_signal(s, read);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
