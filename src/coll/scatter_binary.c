/* Scatter down a balanced binary tree whose subtrees are contiguous rank
 * intervals, so every subtree's blocks travel as one region: depth
 * ceil(log2 N), two children per rank. */
#include "algorithms.h"

int ct_scatter_binary(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    return ct_tree_scatter_blocks(s, &q, CT_TREE_SPLIT, p->root, CT_BUF_SRC,
                                  p->in_place ? -1 : CT_BUF_DST, 0);
}
