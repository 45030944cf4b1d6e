/* Scatterv down a binomial tree: the root packs the blocks in virtual rank
 * order, each rank receives its subtree's blocks (virtual ranks v .. v +
 * lowbit(v)) in one message and passes its children theirs, larger subtrees
 * first. ceil(log2 N) latencies instead of N-1, for small blocks. Every rank
 * needs every count of its subtree: the API broadcasts the root's counts. */
#include "algorithms.h"

int ct_scatterv_binomial(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank, root = p->root;
    int v = (r - root + n) % n;
    int low = v ? (v & -v) : n;
    int sub = v + low < n ? low : n - v;
    if (sub == 1) {
        ct_sched_round(s);
        ct_sched_recv(s, (v - low + root) % n, CT_BUF_DST, 0, ct_vcount(p, r));
        return s->error ? -1 : 0;
    }
    size_t mine = ct_vsum(p, r, sub);
    int tmp = ct_sched_tmp(s, mine ? mine : 1);
    if (tmp < 0)
        return -1;
    ct_sched_round(s);
    if (v) {
        ct_sched_recv(s, (v - low + root) % n, tmp, 0, mine);
    } else {
        size_t off = 0;
        for (int u = 0; u < n; u++) {
            int b = (u + root) % n;
            if (u > 0) /* the root's own block goes straight to DST below */
                ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, b), tmp, off, ct_vcount(p, b));
            off += ct_vcount(p, b);
        }
    }
    ct_sched_round(s);
    int top = 1;
    while (top * 2 < low && v + top * 2 < n)
        top *= 2;
    for (int m = top; m >= 1; m /= 2) {
        int c = v + m;
        if (c >= n)
            continue;
        int csub = c + m < n ? m : n - c;
        ct_sched_send(s, (c + root) % n, tmp, ct_vsum(p, r, m), ct_vsum(p, (c + root) % n, csub));
    }
    if (v)
        ct_sched_copy(s, tmp, 0, CT_BUF_DST, 0, ct_vcount(p, r));
    else if (!p->in_place)
        ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, r), CT_BUF_DST, 0, ct_vcount(p, r));
    return s->error ? -1 : 0;
}
