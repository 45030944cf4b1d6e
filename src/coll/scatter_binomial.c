/* Scatter down a binomial tree: ceil(log2 N) rounds, each rank forwarding the
 * blocks of its subtree, the largest subtree first (as MPICH and Open MPI). */
#include "algorithms.h"

int ct_scatter_binomial(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.radix = 2;
    return ct_tree_scatter_blocks(s, &q, CT_TREE_KNOMIAL, p->root, CT_BUF_SRC,
                                  p->in_place ? -1 : CT_BUF_DST, 0);
}
