/* Scan along a chain: rank r receives the reduction of ranks 0..r-1 from r-1,
 * folds its own input in on the right and passes the result to r+1. N-1
 * latencies in a row but one message per rank and no temporary beyond one
 * vector: for few ranks or as the reference. Rank order is kept. */
#include "algorithms.h"

int ct_scan_linear(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    ct_sched_round(s);
    if (r > 0) {
        int got = ct_sched_tmp(s, count);
        if (got < 0)
            return -1;
        ct_sched_recv(s, r - 1, got, 0, count);
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, 0, count);
        ct_sched_reduce(s, got, 0, CT_BUF_DST, 0, count);
    } else if (!p->in_place) {
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, 0, count);
    }
    ct_sched_round(s);
    if (r < n - 1)
        ct_sched_send(s, r + 1, CT_BUF_DST, 0, count);
    return s->error ? -1 : 0;
}
