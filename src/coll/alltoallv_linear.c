/* Alltoallv linear with a window: every rank posts its sends to r+1, r+2, ...
 * and receives from r-1, r-2, ..., p->radix peers per round (the radix option
 * is the window; the MPI libraries' "linear" posts all N-1 at once, a window
 * of N). A wide window overlaps more messages; a narrow one floods no rank. */
#include "algorithms.h"

int ct_alltoallv_linear(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank, w = p->radix >= 1 ? p->radix : 1;
    ct_sched_round(s);
    ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, r), CT_BUF_DST, ct_vrdispl(p, r), ct_vcount(p, r));
    for (int k = 1; k < n; k++) {
        if ((k - 1) % w == 0)
            ct_sched_round(s);
        int to = (r + k) % n, from = (r - k + n) % n;
        ct_sched_send(s, to, CT_BUF_SRC, ct_vdispl(p, to), ct_vcount(p, to));
        ct_sched_recv(s, from, CT_BUF_DST, ct_vrdispl(p, from), ct_vrcount(p, from));
    }
    return s->error ? -1 : 0;
}
