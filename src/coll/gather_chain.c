/* Gather along a chain: blocks accumulate towards the root, each rank adding
 * its own; segmented, pieces move on as soon as they are complete. */
#include "algorithms.h"

int ct_gather_chain(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    return ct_tree_gather_blocks(s, &q, CT_TREE_CHAIN, p->root,
                                 p->in_place ? CT_BUF_DST : CT_BUF_SRC,
                                 p->in_place ? (size_t)p->rank * p->count : 0, CT_BUF_DST);
}
