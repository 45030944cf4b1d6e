/* Broadcast down a k-nomial tree (radix from the options, default 4): fewer
 * rounds than binomial for small messages, at the price of k-1 sends a round. */
#include "algorithms.h"

int ct_bcast_knomial(const ct_params *p, ct_sched *s)
{
    return ct_tree_bcast(s, p, CT_TREE_KNOMIAL, p->root, CT_BUF_DST);
}
