/* Gather up a balanced binary tree of contiguous subtrees: depth
 * ceil(log2 N), two children per rank. */
#include "algorithms.h"

int ct_gather_binary(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    return ct_tree_gather_blocks(s, &q, CT_TREE_SPLIT, p->root,
                                 p->in_place ? CT_BUF_DST : CT_BUF_SRC,
                                 p->in_place ? (size_t)p->rank * p->count : 0, CT_BUF_DST);
}
