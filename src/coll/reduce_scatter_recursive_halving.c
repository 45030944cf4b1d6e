/* Reduce-scatter by recursive halving (reduce_scatter and reduce_scatter_block),
 * as MPICH does it: with N not a power of two, the first 2*rem ranks fold in
 * pairs (the odd one keeps both blocks); then log2 steps each exchange half of
 * the current window of blocks with the partner at distance pof2/2, pof2/4,
 * ...; the odd ranks of the fold return the even ones' block. log2 N latencies
 * and about the ring's volume, for commutative operations (the halves are
 * reduced in exchange order). Needs the blocks back to back (the displacements
 * are the counts' prefix sums, as reduce_scatter defines them). */
#include "algorithms.h"

typedef struct halving {
    const ct_params *p;
    int rem;
} halving;

/* Elements of new rank nr's blocks: [lo, hi). */
static size_t new_lo(const halving *h, int nr)
{
    return ct_vdispl(h->p, nr < h->rem ? 2 * nr : nr + h->rem);
}
static size_t new_hi(const halving *h, int nr)
{
    int last = nr < h->rem ? 2 * nr + 1 : nr + h->rem;
    return ct_vdispl(h->p, last) + ct_vcount(h->p, last);
}

int ct_reduce_scatter_recursive_halving(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank, pof2 = ct_pof2_floor(n);
    halving h = {p, n - pof2};
    int rem = h.rem;
    size_t total = ct_vsum(p, 0, n);
    int work = ct_sched_tmp(s, total), got = ct_sched_tmp(s, total);
    if (work < 0 || got < 0)
        return -1;
    ct_sched_round(s);
    ct_sched_copy(s, p->in_place ? CT_BUF_DST : CT_BUF_SRC, 0, work, 0, total);
    int newrank;
    if (r < 2 * rem) {
        ct_sched_round(s);
        if (r % 2 == 0) {
            ct_sched_send(s, r + 1, work, 0, total);
            newrank = -1;
        } else {
            ct_sched_recv(s, r - 1, got, 0, total);
            ct_sched_reduce(s, got, 0, work, 0, total);
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }
    if (newrank >= 0) {
        int a = 0; /* the window of new ranks [a, a + 2 * mask) */
        for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
            int partner_new = newrank ^ mask;
            int partner = partner_new < rem ? 2 * partner_new + 1 : partner_new + rem;
            int keep_lo = newrank < partner_new;
            int ka = keep_lo ? a : a + mask, sa = keep_lo ? a + mask : a;
            size_t klo = new_lo(&h, ka), khi = new_hi(&h, ka + mask - 1);
            size_t slo = new_lo(&h, sa), shi = new_hi(&h, sa + mask - 1);
            ct_sched_round(s);
            ct_sched_send(s, partner, work, slo, shi - slo);
            ct_sched_recv(s, partner, got, klo, khi - klo);
            ct_sched_reduce(s, got, klo, work, klo, khi - klo);
            a = ka;
        }
    }
    ct_sched_round(s);
    if (r < 2 * rem && r % 2 == 0) {
        ct_sched_recv(s, r + 1, CT_BUF_DST, 0, ct_vcount(p, r));
    } else {
        if (r < 2 * rem)
            ct_sched_send(s, r - 1, work, ct_vdispl(p, r - 1), ct_vcount(p, r - 1));
        ct_sched_copy(s, work, ct_vdispl(p, r), CT_BUF_DST, 0, ct_vcount(p, r));
    }
    return s->error ? -1 : 0;
}
