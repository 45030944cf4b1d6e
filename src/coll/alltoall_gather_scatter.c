/* Alltoall through rank 0: a binomial gather of every rank's whole send
 * buffer (N blocks, gathered as one unit) to rank 0, a local transposition
 * there so that the N blocks destined to each rank are contiguous, then a
 * binomial scatter of those. Few latencies (2 ceil(log2 N)) but everything
 * crosses rank 0, which also needs 2 N^2 blocks of memory: a baseline, only
 * for tiny blocks. */
#include "algorithms.h"

int ct_alltoall_gather_scatter(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count, row = (size_t)n * count;
    ct_params q = *p;
    q.root = 0;
    q.radix = 2;
    q.segcount = 0;
    q.count = row; /* one gathered or scattered unit: N blocks */
    int all = r == 0 ? ct_sched_tmp(s, (size_t)n * row) : CT_BUF_DST;
    if (ct_tree_gather_blocks(s, &q, CT_TREE_KNOMIAL, 0, CT_BUF_SRC, 0, all))
        return -1;
    int sorted = CT_BUF_SRC; /* only rank 0 scatters from it */
    if (r == 0) {
        /* all holds block (i, j), from rank i to rank j, at i * row + j * count;
         * rank j's unit wants it at j * row + i * count. */
        sorted = ct_sched_tmp(s, (size_t)n * row);
        ct_sched_round(s);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                ct_sched_copy(s, all, (size_t)i * row + (size_t)j * count, sorted,
                              (size_t)j * row + (size_t)i * count, count);
    }
    return ct_tree_scatter_blocks(s, &q, CT_TREE_KNOMIAL, 0, sorted, CT_BUF_DST, 0);
}
