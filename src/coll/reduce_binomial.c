/* Reduce up a binomial tree: ceil(log2 N) rounds; each subtree is an interval
 * of ranks, so rank order is kept for non-commutative operations. */
#include "algorithms.h"

int ct_reduce_binomial(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.radix = 2;
    return ct_reduce_over_tree(&q, s, CT_TREE_KNOMIAL);
}
