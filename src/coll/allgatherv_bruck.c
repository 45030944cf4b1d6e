/* Allgatherv after Bruck: ceil(log2 N) steps for any N. A temporary holds the
 * blocks of ranks r, r+1, ... back to back; at distance d = 1, 2, 4, ... rank r
 * sends its first min(d, N-d) blocks to r-d and appends those of r+d, which
 * are the next ones it lacks. The blocks then go to their displacements. Few
 * latencies at the price of a packed copy: for small and uneven blocks. */
#include "algorithms.h"

int ct_allgatherv_bruck(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t total = ct_vsum(p, 0, n);
    int tmp = ct_sched_tmp(s, total ? total : 1);
    if (tmp < 0)
        return -1;
    ct_sched_round(s);
    if (p->in_place)
        ct_sched_copy(s, CT_BUF_DST, ct_vdispl(p, r), tmp, 0, ct_vcount(p, r));
    else
        ct_sched_copy(s, CT_BUF_SRC, 0, tmp, 0, ct_vcount(p, r));
    for (int d = 1; d < n; d *= 2) {
        int nb = d < n - d ? d : n - d;
        ct_sched_round(s);
        /* My blocks 0..nb-1 are ranks r..r+nb-1: what r-d lacks at its d..d+nb-1. */
        ct_sched_send(s, (r - d + n) % n, tmp, 0, ct_vsum(p, r, nb));
        ct_sched_recv(s, (r + d) % n, tmp, ct_vsum(p, r, d), ct_vsum(p, (r + d) % n, nb));
    }
    ct_sched_round(s);
    size_t off = 0;
    for (int j = 0; j < n; j++) {
        int b = (r + j) % n;
        if (j > 0 || !p->in_place)
            ct_sched_copy(s, tmp, off, CT_BUF_DST, ct_vdispl(p, b), ct_vcount(p, b));
        off += ct_vcount(p, b);
    }
    return s->error ? -1 : 0;
}
