/* Exscan along a chain: rank r receives the reduction of ranks 0..r-1 from
 * r-1, which is its result, and passes that folded with its own input on to
 * r+1. N-1 latencies in a row, one message per rank; rank order is kept. */
#include "algorithms.h"

int ct_exscan_linear(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    if (r == 0) {
        ct_sched_round(s);
        ct_sched_send(s, 1, in, 0, count);
        return s->error ? -1 : 0;
    }
    int got = ct_sched_tmp(s, count), next = -1;
    if (got < 0)
        return -1;
    ct_sched_round(s);
    ct_sched_recv(s, r - 1, got, 0, count);
    if (r < n - 1) {
        if ((next = ct_sched_tmp(s, count)) < 0)
            return -1;
        /* Before DST is overwritten: in place it holds x_r. */
        ct_sched_copy(s, in, 0, next, 0, count);
        ct_sched_reduce(s, got, 0, next, 0, count);
    }
    ct_sched_copy(s, got, 0, CT_BUF_DST, 0, count);
    if (r < n - 1) {
        ct_sched_round(s);
        ct_sched_send(s, r + 1, next, 0, count);
    }
    return s->error ? -1 : 0;
}
