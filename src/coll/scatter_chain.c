/* Scatter down a chain: each rank keeps its block and forwards the rest, so
 * the data for the far end crosses every link; segmented, the forwarding
 * overlaps with the next segment's arrival. */
#include "algorithms.h"

int ct_scatter_chain(const ct_params *p, ct_sched *s)
{
    ct_params q = *p;
    return ct_tree_scatter_blocks(s, &q, CT_TREE_CHAIN, p->root, CT_BUF_SRC,
                                  p->in_place ? -1 : CT_BUF_DST, 0);
}
