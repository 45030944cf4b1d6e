/* Gatherv up a binomial tree: each rank packs its subtree's blocks (virtual
 * ranks v .. v + lowbit(v), their real ranks consecutive from r) back to back
 * in a temporary and sends them to its parent in one message; the root puts
 * the blocks at their displacements. ceil(log2 N) latencies instead of N-1,
 * for small blocks. Every rank needs every count of its subtree: the API
 * broadcasts the root's counts first. */
#include "algorithms.h"

int ct_gatherv_binomial(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank, root = p->root;
    int v = (r - root + n) % n;
    int low = v ? (v & -v) : n;                  /* v's subtree: [v, v + low) */
    int sub = v + low < n ? low : n - v;
    if (sub == 1) { /* a leaf sends its own block as it is */
        ct_sched_round(s);
        ct_sched_send(s, (v - low + root) % n, CT_BUF_SRC, 0, ct_vcount(p, r));
        return s->error ? -1 : 0;
    }
    size_t mine = ct_vsum(p, r, sub);
    int tmp = ct_sched_tmp(s, mine ? mine : 1);
    if (tmp < 0)
        return -1;
    ct_sched_round(s);
    if (p->in_place) /* the root's own block is already in DST */
        ct_sched_copy(s, CT_BUF_DST, ct_vdispl(p, r), tmp, 0, ct_vcount(p, r));
    else
        ct_sched_copy(s, CT_BUF_SRC, 0, tmp, 0, ct_vcount(p, r));
    /* Children v + 1, v + 2, v + 4, ... below low: child v + m holds [v + m, v + 2m). */
    for (int m = 1; m < low && v + m < n; m *= 2) {
        int c = v + m, csub = c + m < n ? m : n - c;
        ct_sched_recv(s, (c + root) % n, tmp, ct_vsum(p, r, m), ct_vsum(p, (c + root) % n, csub));
    }
    ct_sched_round(s);
    if (v) {
        ct_sched_send(s, (v - low + root) % n, tmp, 0, mine);
        return s->error ? -1 : 0;
    }
    size_t off = 0;
    for (int u = 0; u < n; u++) {
        int b = (u + root) % n;
        if (u > 0 || !p->in_place)
            ct_sched_copy(s, tmp, off, CT_BUF_DST, ct_vdispl(p, b), ct_vcount(p, b));
        off += ct_vcount(p, b);
    }
    return s->error ? -1 : 0;
}
