/* Bruck's allgather: in step k every rank sends the 2^k blocks it has
 * gathered so far to rank - 2^k and receives as many from rank + 2^k, so
 * ceil(log2 N) steps suffice for any N (the last step sends only what is
 * still missing): latency-optimal like recursive doubling, with no fold for
 * non-powers of two. For short blocks.
 *
 * The blocks are kept rotated in a temporary (position i holds block
 * rank + i) so that what a step sends and receives is always one contiguous
 * run: exactly one message per step. ct_bruck_allgather avoids the final
 * rotation by working in place, but splits every run that wraps past block
 * N-1 into two messages; for the short blocks Bruck is meant for, a local
 * copy of the result is cheaper than up to twice the messages. */
#include "algorithms.h"

int ct_allgather_bruck(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t in_off = p->in_place ? (size_t)r * count : 0;
    int tmp = ct_sched_tmp(s, (size_t)n * count);

    for (int d = 1; d < n; d *= 2) {
        size_t len = (size_t)(d < n - d ? d : n - d) * count;
        ct_sched_round(s);
        /* The first step sends our own block straight from the input, which
         * meanwhile becomes position 0 of the temporary. */
        ct_sched_send(s, (r - d + n) % n, d == 1 ? in_buf : tmp, d == 1 ? in_off : 0, len);
        ct_sched_recv(s, (r + d) % n, tmp, (size_t)d * count, len);
        if (d == 1)
            ct_sched_copy(s, in_buf, in_off, tmp, 0, count);
    }
    /* Undo the rotation: positions [0, n - r) are blocks [r, n), the rest
     * blocks [0, r). Our own block is already in place when in-place. */
    size_t skip = p->in_place ? count : 0;
    ct_sched_copy(s, tmp, skip, CT_BUF_DST, (size_t)r * count + skip,
                  (size_t)(n - r) * count - skip);
    ct_sched_copy(s, tmp, (size_t)(n - r) * count, CT_BUF_DST, 0, (size_t)r * count);
    return s->error ? -1 : 0;
}
