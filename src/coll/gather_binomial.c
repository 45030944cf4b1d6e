/* Gather up a binomial tree: ceil(log2 N) rounds, each rank sending its
 * subtree's blocks as one region. */
#include "algorithms.h"

int ct_gather_binomial(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.radix = 2;
    return ct_tree_gather_blocks(s, &q, CT_TREE_KNOMIAL, p->root,
                                 p->in_place ? CT_BUF_DST : CT_BUF_SRC,
                                 p->in_place ? (size_t)p->rank * p->count : 0, CT_BUF_DST);
}
