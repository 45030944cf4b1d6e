/* Reduce, Rabenseifner: a recursive-halving reduce-scatter leaves each of the
 * power-of-two participants with one reduced part, then a binomial gather
 * brings the parts to the root. Moves about 2x the message per rank, good for
 * long vectors. Needs a commutative operation. */
#include "algorithms.h"

int ct_reduce_rabenseifner(const ct_params *p, ct_sched *s)
{
    int am_root = p->rank == p->root;
    int work = am_root ? CT_BUF_DST : ct_sched_tmp(s, p->count);
    ct_rsag st;
    if (ct_rsag_reduce_scatter(s, p, p->root, work, &st))
        return -1;
    if (st.newrank < 0)
        return 0;
    /* Binomial gather of the parts towards new rank 0, which is the root. */
    int wlo = st.newrank, whi = st.newrank + 1;
    for (int mask = 1; mask < st.pof2; mask *= 2) {
        size_t off, len;
        ct_sched_round(s);
        if (st.newrank & mask) {
            int dst = ct_rsag_real(p, p->root, st.rem, st.newrank - mask);
            ct_rsag_range(p->count, st.pof2, wlo, whi, &off, &len);
            ct_sched_send(s, dst, work, off, len);
            break;
        }
        int src = ct_rsag_real(p, p->root, st.rem, st.newrank + mask);
        ct_rsag_range(p->count, st.pof2, whi, whi + mask, &off, &len);
        ct_sched_recv(s, src, work, off, len);
        whi += mask;
    }
    return s->error ? -1 : 0;
}
