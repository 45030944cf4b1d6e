/* Allreduce by recursive doubling: log2(N) exchanges of the whole vector
 * among the largest power of two of ranks (the others fold in first and get
 * the result last). Latency-optimal for short vectors; keeps rank order, so
 * it serves non-commutative operations. */
#include "algorithms.h"

int ct_allreduce_recursive_doubling(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    int pof2 = ct_pof2_floor(n), rem = n - pof2;

    /* Fold: among the first 2*rem ranks, each even rank gives its vector to
     * the odd rank above it, which becomes the pair's representative. */
    if (r < 2 * rem && r % 2 == 0) {
        ct_sched_round(s);
        ct_sched_send(s, r + 1, in_buf, 0, count);
        ct_sched_round(s);
        ct_sched_recv(s, r + 1, CT_BUF_DST, 0, count);
        return s->error ? -1 : 0;
    }
    int tmp = ct_sched_tmp(s, count);
    int acc = CT_BUF_DST, other = tmp;
    ct_sched_round(s);
    ct_sched_copy(s, in_buf, 0, CT_BUF_DST, 0, count);
    if (r < 2 * rem) {
        ct_sched_recv(s, r - 1, tmp, 0, count);
        ct_sched_reduce(s, tmp, 0, CT_BUF_DST, 0, count); /* x_{r-1} op x_r */
    }
    int nr = r < 2 * rem ? r / 2 : r - rem;
    for (int mask = 1; mask < pof2; mask *= 2) {
        int pn = nr ^ mask;
        int partner = pn < rem ? 2 * pn + 1 : pn + rem;
        ct_sched_round(s);
        ct_sched_send(s, partner, acc, 0, count);
        ct_sched_recv(s, partner, other, 0, count);
        if (pn < nr || p->commutative) {
            ct_sched_reduce(s, other, 0, acc, 0, count);   /* theirs op ours */
        } else {
            ct_sched_reduce(s, acc, 0, other, 0, count);   /* ours op theirs */
            int t = acc;
            acc = other;
            other = t;
        }
    }
    if (acc != CT_BUF_DST) {
        ct_sched_round(s);
        ct_sched_copy(s, acc, 0, CT_BUF_DST, 0, count);
    }
    if (r < 2 * rem) {
        ct_sched_round(s);
        ct_sched_send(s, r - 1, CT_BUF_DST, 0, count);
    }
    return s->error ? -1 : 0;
}
