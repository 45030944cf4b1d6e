/* Reduce-scatter pairwise (reduce_scatter and reduce_scatter_block): at step k
 * rank r sends its contribution to block r+k and receives r-k's contribution
 * to its own block; at the end it reduces the N contributions in rank order,
 * so any operation works. N-1 latencies, N blocks of temporary. */
#include "algorithms.h"

int ct_reduce_scatter_pairwise(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t c = ct_vcount(p, r);
    int got = ct_sched_tmp(s, c ? (size_t)n * c : 1);
    if (got < 0)
        return -1;
    ct_sched_round(s);
    ct_sched_copy(s, in, ct_vdispl(p, r), got, (size_t)r * c, c);
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = (r - k + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, to, in, ct_vdispl(p, to), ct_vcount(p, to));
        ct_sched_recv(s, from, got, (size_t)from * c, c);
    }
    /* x_0 op (x_1 op (... op x_{N-1})): b = a op b, a on the left. After every
     * send: in place, DST is the input until here. */
    ct_sched_round(s);
    ct_sched_copy(s, got, (size_t)(n - 1) * c, CT_BUF_DST, 0, c);
    for (int j = n - 2; j >= 0; j--)
        ct_sched_reduce(s, got, (size_t)j * c, CT_BUF_DST, 0, c);
    return s->error ? -1 : 0;
}
