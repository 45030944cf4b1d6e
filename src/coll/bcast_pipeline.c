/* Broadcast pipelined along a chain: the chain with segmentation on by default,
 * so each rank forwards segment i while it receives segment i+1. */
#include "algorithms.h"

int ct_bcast_pipeline(const ct_params *p, ct_sched *s)
{
    return ct_tree_bcast(s, p, CT_TREE_CHAIN, p->root, CT_BUF_DST);
}
