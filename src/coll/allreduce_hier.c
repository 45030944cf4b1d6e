/* Hierarchical allreduce: every node reduces to its lowest rank (intra
 * reduce), the leaders allreduce among themselves (inter), and every leader
 * broadcasts the result inside its node (the intra part's bcast). Only the
 * leaders' vectors cross nodes. Rank order as in reduce_hier.c: kept for block
 * placement; a non-commutative operation on another layout runs the intra
 * reduce and bcast over all ranks. */
#include "registry.h"

int ct_allreduce_hier(const ct_params *p, ct_sched *s)
{
    ct_layout L;
    const char *intra, *inter;
    if (ct_hier_begin(p, &L, 0, 1, &intra, &inter))
        return -1;
    int me = p->rank, k = L.node_of[me], rc = 0;
    int *leaders = L.leader;
    int leader = me == leaders[k];
    const int *node = L.members + L.start[k];
    int nsize = L.start[k + 1] - L.start[k];

    ct_params q = ct_part_params(p, CT_REDUCE, intra, nsize, L.local[me], 0);
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    if (leader) {
        q.in_place = p->in_place;
        rc = ct_compose(s, intra, &q, node, p->in_place ? -1 : CT_BUF_SRC, 0, CT_BUF_DST, 0, 0);
    } else {
        rc = ct_compose(s, intra, &q, node, in_buf, 0, -1, 0, 0);
    }
    if (!rc && leader && L.nnodes > 1) {
        q = ct_part_params(p, CT_ALLREDUCE, inter, L.nnodes, k, 0);
        q.in_place = 1;
        rc = ct_compose(s, inter, &q, leaders, -1, 0, CT_BUF_DST, 0, 0);
    }
    if (!rc) {
        q = ct_part_params(p, CT_BCAST, intra, nsize, L.local[me], 0);
        rc = ct_compose(s, intra, &q, node, -1, 0, CT_BUF_DST, 0, 0);
    }
    return ct_hier_end(s, &L, rc);
}
