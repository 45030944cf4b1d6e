/* Allgather as a binomial gather of every block to rank 0, then a binomial
 * broadcast of all N blocks. 2 ceil(log2 N) latencies but every block goes
 * through rank 0 and the broadcast moves the whole result log2(N) times over:
 * the simple baseline, reasonable only for very short blocks. */
#include "algorithms.h"

int ct_allgather_gather_bcast(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    q.root = 0;
    q.radix = 2;
    q.segcount = 0;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t in_off = p->in_place ? (size_t)p->rank * p->count : 0;
    if (ct_tree_gather_blocks(s, &q, CT_TREE_KNOMIAL, 0, in_buf, in_off, CT_BUF_DST))
        return -1;
    q.count = (size_t)p->size * p->count;
    return ct_tree_bcast(s, &q, CT_TREE_KNOMIAL, 0, CT_BUF_DST);
}
