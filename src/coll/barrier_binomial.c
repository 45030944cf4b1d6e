/* Distributed binomial barrier: arrivals are combined up a binomial tree to
 * rank 0 (a rank reports once its whole subtree has), then the release goes
 * back down the same tree. 2(N-1) messages over 2 ceil(log2 N) latencies,
 * and no rank handles more than log2(N) messages per phase. */
#include "algorithms.h"

int ct_barrier_binomial(const ct_params *p, ct_sched *s)
{
    ct_tree t;
    if (ct_tree_build(&t, CT_TREE_KNOMIAL, 2, p->size, p->rank, 0))
        return -1;
    ct_sched_round(s);
    for (int i = 0; i < t.nchildren; i++)
        ct_sched_sync_recv(s, t.children[i]);
    if (t.parent >= 0) {
        ct_sched_round(s);
        ct_sched_sync_send(s, t.parent);
        ct_sched_sync_recv(s, t.parent);
    }
    ct_sched_round(s);
    for (int i = t.nchildren - 1; i >= 0; i--) /* the largest subtree first */
        ct_sched_sync_send(s, t.children[i]);
    ct_tree_free(&t);
    return s->error ? -1 : 0;
}
