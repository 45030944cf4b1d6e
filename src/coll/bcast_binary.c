/* Broadcast down a binary tree (children 2v+1, 2v+2 of virtual rank v). */
#include "algorithms.h"

int ct_bcast_binary(const ct_params *p, ct_sched *s)
{
    return ct_tree_bcast(s, p, CT_TREE_BINARY, p->root, CT_BUF_DST);
}
