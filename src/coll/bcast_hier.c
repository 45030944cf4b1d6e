/* Hierarchical broadcast: the root's node leader (the root itself) broadcasts
 * among the node leaders (the inter part: one message per node reached, K-1
 * across nodes for K nodes with a tree), then every leader broadcasts inside
 * its node (the intra part). Data crosses the slow layer once per node. */
#include "registry.h"

int ct_bcast_hier(const ct_params *p, ct_sched *s)
{
    ct_layout L;
    const char *intra, *inter;
    if (ct_hier_begin(p, &L, 0, 0, &intra, &inter))
        return -1;
    int me = p->rank, k = L.node_of[me], kr = L.node_of[p->root], rc = 0;
    /* Leaders: the root on its node, the lowest rank elsewhere. */
    int *leaders = L.leader;
    leaders[kr] = p->root;
    const int *node = L.members + L.start[k];
    int nsize = L.start[k + 1] - L.start[k];
    if (me == leaders[k] && L.nnodes > 1) {
        ct_params q = ct_part_params(p, CT_BCAST, inter, L.nnodes, k, kr);
        rc = ct_compose(s, inter, &q, leaders, -1, 0, CT_BUF_DST, 0, 0);
    }
    if (!rc) {
        ct_params q = ct_part_params(p, CT_BCAST, intra, nsize, L.local[me],
                                     L.local[leaders[k]]);
        rc = ct_compose(s, intra, &q, node, -1, 0, CT_BUF_DST, 0, 0);
    }
    return ct_hier_end(s, &L, rc);
}
