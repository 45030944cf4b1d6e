/* Allreduce in one copy a byte: rank r owns slice r of the vector; it reads slice r
 * of every rank's input straight out of that rank's buffer (cross-memory attach),
 * chunk by chunk into a small temporary that stays in cache, and reduces it in rank
 * order (x_0 op (x_1 op ... x_{N-1}): non-commutative operations too); then every
 * rank reads the other reduced slices out of their owners' outputs. Against
 * allreduce_shm (copy in, reduce in the segment, copy out) each byte crosses
 * between processes once each way and nothing is bounded by the segment's size.
 * Where the node does not allow it (p->cma 0), allreduce_shm. */
#include "algorithms.h"

static size_t slice_at(const ct_params *p, int r)
{
    return p->count / (size_t)p->size * (size_t)r +
           (p->count % (size_t)p->size < (size_t)r ? p->count % (size_t)p->size : (size_t)r);
}

int ct_allreduce_cma(const ct_params *p, ct_sched *s)
{
    if (!p->cma)
        return ct_allreduce_shm(p, s);
    int n = p->size, me = p->rank;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t lo = slice_at(p, me), len = slice_at(p, me + 1) - lo;
    size_t chunk = p->segcount ? p->segcount : len;
    if (chunk == 0)
        chunk = 1;
    ct_sched_round(s);
    int tmp = ct_sched_tmp(s, chunk < len ? chunk : (len ? len : 1));
    int mine = in; /* where this rank's own slice is read from */
    if (p->in_place && len) {
        /* The accumulator overwrites the own input slice in DST: keep it first. */
        mine = ct_sched_tmp(s, len);
        ct_sched_copy(s, CT_BUF_DST, lo, mine, 0, len);
    }
    size_t mine_off = mine == in ? lo : 0;
    ct_sched_signal(s, 1); /* inputs published */
    for (int r = 0; r < n; r++)
        if (r != me)
            ct_sched_wait(s, r, 1);
    for (size_t c = 0; c < len; c += chunk) {
        size_t m = len - c < chunk ? len - c : chunk;
        for (int k = n - 1; k >= 0; k--) {
            if (k == n - 1) {
                if (k == me)
                    ct_sched_copy(s, mine, mine_off + c, CT_BUF_DST, lo + c, m);
                else
                    ct_sched_pull(s, k, in, lo + c, CT_BUF_DST, lo + c, m);
            } else if (k == me) {
                ct_sched_reduce(s, mine, mine_off + c, CT_BUF_DST, lo + c, m);
            } else {
                ct_sched_pull(s, k, in, lo + c, tmp, 0, m);
                ct_sched_reduce(s, tmp, 0, CT_BUF_DST, lo + c, m);
            }
        }
    }
    ct_sched_signal(s, 2); /* slice reduced */
    for (int k = 1; k < n; k++) {
        int r = (me + k) % n;
        size_t rlo = slice_at(p, r);
        ct_sched_wait(s, r, 2);
        ct_sched_pull(s, r, CT_BUF_DST, rlo, CT_BUF_DST, rlo, slice_at(p, r + 1) - rlo);
    }
    /* Everyone has read what it needs from everyone: the buffers are free again. */
    ct_sched_signal(s, 3);
    ct_shm_wait_others(s, p, 3);
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
