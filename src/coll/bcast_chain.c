/* Broadcast along a chain root -> root+1 -> ...; segmented, it is a pipeline. */
#include "algorithms.h"

int ct_bcast_chain(const ct_params *p, ct_sched *s)
{
    return ct_tree_bcast(s, p, CT_TREE_CHAIN, p->root, CT_BUF_DST);
}
