/* Allreduce, Rabenseifner: recursive-halving reduce-scatter, then a
 * recursive-doubling allgather, both among the largest power of two of ranks;
 * the others fold in first and get the result last. Needs a commutative
 * operation. */
#include "algorithms.h"

int ct_allreduce_rabenseifner(const ct_params *p, ct_sched *s)
{
    ct_rsag st;
    int n = p->size;
    if (ct_rsag_reduce_scatter(s, p, 0, CT_BUF_DST, &st))
        return -1;
    if (st.newrank < 0) {
        ct_sched_round(s);
        ct_sched_recv(s, (p->rank - 1 + n) % n, CT_BUF_DST, 0, p->count);
        return s->error ? -1 : 0;
    }
    int wlo = st.newrank, whi = st.newrank + 1;
    for (int mask = 1; mask < st.pof2; mask *= 2) {
        int pn = st.newrank ^ mask;
        int partner = ct_rsag_real(p, 0, st.rem, pn);
        /* The partner's window is our window's twin on the other side. */
        int plo = pn & ~(mask - 1), phi = plo + mask;
        size_t off, len, poff, plen;
        ct_rsag_range(p->count, st.pof2, wlo, whi, &off, &len);
        ct_rsag_range(p->count, st.pof2, plo, phi, &poff, &plen);
        ct_sched_round(s);
        ct_sched_send(s, partner, CT_BUF_DST, off, len);
        ct_sched_recv(s, partner, CT_BUF_DST, poff, plen);
        if (plo < wlo)
            wlo = plo;
        else
            whi = phi;
    }
    if (st.vrank < 2 * st.rem) {
        ct_sched_round(s);
        ct_sched_send(s, (p->rank + 1) % n, CT_BUF_DST, 0, p->count);
    }
    return s->error ? -1 : 0;
}
