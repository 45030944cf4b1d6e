/* Scan by recursive doubling (as MPICH): at distance 1, 2, 4, ...
 * each rank swaps its partial (the reduction of its aligned group so far) with
 * the partner r ^ d; a higher rank folds the lower group's partial into its
 * result (exscan_recursive_doubling.c runs the same exchanges). ceil(log2 N) latencies; rank order is kept (lower groups always on
 * the left), so any operation works. */
#include "algorithms.h"

int ct_scan_doubling(const ct_params *p, ct_sched *s, int exclusive)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    int partial = ct_sched_tmp(s, count), got = ct_sched_tmp(s, count);
    if (partial < 0 || got < 0)
        return -1;
    ct_sched_round(s);
    ct_sched_copy(s, in, 0, partial, 0, count);
    if (!exclusive)
        ct_sched_copy(s, in, 0, CT_BUF_DST, 0, count); /* inclusive: x_r first */
    int have = !exclusive;
    for (int d = 1; d < n; d *= 2) {
        int peer = r ^ d;
        if (peer >= n)
            continue;
        ct_sched_round(s);
        ct_sched_send(s, peer, partial, 0, count);
        ct_sched_recv(s, peer, got, 0, count);
        if (r > peer) { /* the lower group goes on the left */
            ct_sched_reduce(s, got, 0, partial, 0, count);
            if (have)
                ct_sched_reduce(s, got, 0, CT_BUF_DST, 0, count);
            else
                ct_sched_copy(s, got, 0, CT_BUF_DST, 0, count);
            have = 1;
        } else {
            ct_sched_reduce(s, partial, 0, got, 0, count);
            ct_sched_copy(s, got, 0, partial, 0, count);
        }
    }
    return s->error ? -1 : 0;
}

int ct_scan_recursive_doubling(const ct_params *p, ct_sched *s)
{
    return ct_scan_doubling(p, s, 0);
}
