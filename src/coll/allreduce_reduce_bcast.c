/* Allreduce as a binomial reduce to rank 0 followed by a binomial broadcast,
 * both segmented when a segment size is given. Keeps rank order. */
#include "algorithms.h"

int ct_allreduce_reduce_bcast(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.radix = 2;
    q.root = 0;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    if (ct_tree_reduce(s, &q, CT_TREE_KNOMIAL, 0, in_buf, p->rank == 0 ? CT_BUF_DST : in_buf))
        return -1;
    return ct_tree_bcast(s, &q, CT_TREE_KNOMIAL, 0, CT_BUF_DST);
}
