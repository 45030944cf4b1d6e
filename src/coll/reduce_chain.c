/* Reduce along a chain: each rank receives the partial result of the ranks
 * after it, combines its own, and passes it on. */
#include "algorithms.h"

int ct_reduce_chain(const ct_params *p, ct_sched *s)
{
    return ct_reduce_over_tree(p, s, CT_TREE_CHAIN);
}
