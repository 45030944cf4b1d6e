/* Broadcast down a binomial tree: N-1 messages in ceil(log2 N) rounds, the
 * largest subtree served first. */
#include "algorithms.h"

int ct_bcast_binomial(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.radix = 2;
    return ct_tree_bcast(s, &q, CT_TREE_KNOMIAL, p->root, CT_BUF_DST);
}
