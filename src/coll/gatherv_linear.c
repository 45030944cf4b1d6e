/* Gatherv linear: every rank sends its block straight to the root, which
 * receives all N-1 at their displacements in one round. Only the root needs
 * the counts (as MPI gives them), so no count travels first. */
#include "algorithms.h"

int ct_gatherv_linear(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank, root = p->root;
    ct_sched_round(s);
    if (r != root) {
        ct_sched_send(s, root, CT_BUF_SRC, 0, ct_vcount(p, r));
        return s->error ? -1 : 0;
    }
    for (int i = 0; i < n; i++)
        if (i != root)
            ct_sched_recv(s, i, CT_BUF_DST, ct_vdispl(p, i), ct_vcount(p, i));
    if (!p->in_place)
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, ct_vdispl(p, r), ct_vcount(p, r));
    return s->error ? -1 : 0;
}
