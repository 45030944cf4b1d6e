/* Reduce, linear: the root receives every rank's vector and reduces them in
 * rank order (gather, then reduce). */
#include "algorithms.h"

int ct_reduce_linear(const ct_params *p, ct_sched *s)
{
    return ct_reduce_over_tree(p, s, CT_TREE_FLAT);
}
