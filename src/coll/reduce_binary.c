/* Reduce up a binary tree. Its subtrees are not rank intervals, so it needs a
 * commutative operation. */
#include "algorithms.h"

int ct_reduce_binary(const ct_params *p, ct_sched *s)
{
    return ct_reduce_over_tree(p, s, CT_TREE_BINARY);
}
