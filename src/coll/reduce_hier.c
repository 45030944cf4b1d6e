/* Hierarchical reduce: every node reduces to its leader (the intra part; the
 * root leads its own node), then the leaders reduce to the root (the inter
 * part). Rank order is kept when every node is an interval of ranks (block
 * placement) and the parts keep it; a non-commutative operation on any other
 * layout runs the intra part over all ranks as one node, which stays correct. */
#include "registry.h"

int ct_reduce_hier(const ct_params *p, ct_sched *s)
{
    ct_layout L;
    const char *intra, *inter;
    if (ct_hier_begin(p, &L, 0, 1, &intra, &inter))
        return -1;
    int me = p->rank, root = p->root, k = L.node_of[me], kr = L.node_of[root], rc = 0;
    int *leaders = L.leader;
    leaders[kr] = p->root;
    int leader = me == leaders[k], multi = L.nnodes > 1;
    const int *node = L.members + L.start[k];
    int nsize = L.start[k + 1] - L.start[k];
    /* The node's result: the output at the root, a temporary at other leaders. */
    int node_out = me == root ? CT_BUF_DST : (leader && multi) ? ct_sched_tmp(s, p->count) : -1;

    ct_params q = ct_part_params(p, CT_REDUCE, intra, nsize, L.local[me], L.local[leaders[k]]);
    q.in_place = me == root && p->in_place;
    rc = ct_compose(s, intra, &q, node, q.in_place ? -1 : CT_BUF_SRC, 0, node_out, 0, 0);
    if (!rc && leader && multi) {
        q = ct_part_params(p, CT_REDUCE, inter, L.nnodes, k, kr);
        q.in_place = me == root; /* the root's node result already sits in its output */
        rc = ct_compose(s, inter, &q, leaders, me == root ? -1 : node_out, 0,
                        me == root ? CT_BUF_DST : -1, 0, 0);
    }
    return ct_hier_end(s, &L, rc);
}
