/* Hierarchical barrier: a zero-byte fan-in to each node's lowest rank (the
 * intra part's gather tree), a barrier among the leaders (inter), and a
 * zero-byte release down the intra part's bcast tree. Only the leaders'
 * barrier crosses nodes. */
#include "registry.h"

int ct_barrier_hier(const ct_params *p, ct_sched *s)
{
    ct_layout L;
    const char *intra, *inter;
    if (ct_hier_begin(p, &L, 0, 0, &intra, &inter))
        return -1;
    int me = p->rank, k = L.node_of[me], rc = 0;
    int *leaders = L.leader;
    const int *node = L.members + L.start[k];
    int nsize = L.start[k + 1] - L.start[k];
    /* One element, so the trees have their messages; sync makes them zero-byte. */
    ct_params q = ct_part_params(p, CT_GATHER, intra, nsize, L.local[me], 0);
    q.count = 1;
    q.segcount = 0;
    rc = ct_compose(s, intra, &q, node, -1, 0, -1, 0, 1);
    if (!rc && me == leaders[k] && L.nnodes > 1) {
        q = ct_part_params(p, CT_BARRIER, inter, L.nnodes, k, 0);
        rc = ct_compose(s, inter, &q, leaders, -1, 0, -1, 0, 0);
    }
    if (!rc) {
        q = ct_part_params(p, CT_BCAST, intra, nsize, L.local[me], 0);
        q.count = 1;
        q.segcount = 0;
        rc = ct_compose(s, intra, &q, node, -1, 0, -1, 0, 1);
    }
    return ct_hier_end(s, &L, rc);
}
