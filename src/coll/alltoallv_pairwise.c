/* Alltoallv pairwise: N-1 steps, at step k rank r sends its block for r+k and
 * receives the block of r-k, each with its own count and displacement. One
 * message in flight per direction: no receiver flooded, N-1 latencies. */
#include "algorithms.h"

int ct_alltoallv_pairwise(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    ct_sched_round(s);
    ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, r), CT_BUF_DST, ct_vrdispl(p, r), ct_vcount(p, r));
    for (int k = 1; k < n; k++) {
        int to = (r + k) % n, from = (r - k + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, to, CT_BUF_SRC, ct_vdispl(p, to), ct_vcount(p, to));
        ct_sched_recv(s, from, CT_BUF_DST, ct_vrdispl(p, from), ct_vrcount(p, from));
    }
    return s->error ? -1 : 0;
}
