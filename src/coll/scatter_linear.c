/* Scatter from a flat tree: the root sends every rank its block directly
 * (N-1 messages from one rank; with segments, one segment per rank per round). */
#include "algorithms.h"

int ct_scatter_linear(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    return ct_tree_scatter_blocks(s, &q, CT_TREE_FLAT, p->root, CT_BUF_SRC,
                                  p->in_place ? -1 : CT_BUF_DST, 0);
}
