/* Hierarchical allgather: every node gathers its blocks to its lowest rank
 * (intra gather), the leaders allgather the nodes' blocks (inter; each node's
 * share padded to the largest node's, so the inter part sees equal blocks),
 * then every leader broadcasts the whole result inside its node (the intra
 * part's bcast). With block placement on equal nodes the nodes' shares are
 * already in rank order and everything happens in the output; otherwise the
 * leaders gather into a temporary and put the blocks in rank order. */
#include "registry.h"

int ct_allgather_hier(const ct_params *p, ct_sched *s)
{
    ct_layout L;
    const char *intra, *inter;
    if (ct_hier_begin(p, &L, 0, 0, &intra, &inter))
        return -1;
    int me = p->rank, k = L.node_of[me], K = L.nnodes, M = L.max_node, rc = 0;
    size_t c = p->count;
    int *leaders = L.leader;
    int leader = me == leaders[k];
    const int *node = L.members + L.start[k];
    int nsize = L.start[k + 1] - L.start[k];
    int in_order = L.contiguous && (size_t)K * (size_t)M == (size_t)p->size;
    int all = !leader ? -1 : in_order ? CT_BUF_DST : ct_sched_tmp(s, (size_t)K * M * c);

    ct_params q = ct_part_params(p, CT_GATHER, intra, nsize, L.local[me], 0);
    int src = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t src_off = p->in_place ? (size_t)me * c : 0;
    rc = ct_compose(s, intra, &q, node, src, src_off, all, (size_t)k * M * c, 0);
    if (!rc && leader && K > 1) {
        q = ct_part_params(p, CT_ALLGATHER, inter, K, k, 0);
        q.count = (size_t)M * c;
        q.in_place = 1;
        rc = ct_compose(s, inter, &q, leaders, -1, 0, all, 0, 0);
    }
    if (!rc && leader && !in_order) {
        ct_sched_round(s);
        for (int j = 0; j < K; j++)
            for (int i = L.start[j]; i < L.start[j + 1]; i++)
                ct_sched_copy(s, all, ((size_t)j * M + (size_t)(i - L.start[j])) * c,
                              CT_BUF_DST, (size_t)L.members[i] * c, c);
    }
    if (!rc) {
        q = ct_part_params(p, CT_BCAST, intra, nsize, L.local[me], 0);
        q.count = (size_t)p->size * c;
        rc = ct_compose(s, intra, &q, node, -1, 0, CT_BUF_DST, 0, 0);
    }
    return ct_hier_end(s, &L, rc || s->error ? -1 : 0);
}
