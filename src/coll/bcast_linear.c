/* Broadcast, linear (flat tree): the root sends each segment to every other rank. */
#include "algorithms.h"

int ct_bcast_linear(const ct_params *p, ct_sched *s)
{
    return ct_tree_bcast(s, p, CT_TREE_FLAT, p->root, CT_BUF_DST);
}
