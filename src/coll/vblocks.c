/*
 * The schedule core's view of per-rank blocks: what the v-variants,
 * reduce-scatters and scans share, so that no generator repeats it (the
 * accessors themselves are inline in common.h).
 */
#include "common.h"

#include "colltune.h"

size_t ct_vsum(const ct_params *p, int first, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += ct_vcount(p, (first + i) % p->size);
    return total;
}

int ct_coll_is_v(int coll)
{
    return coll == CT_ALLGATHERV || coll == CT_ALLTOALLV || coll == CT_GATHERV ||
           coll == CT_SCATTERV || coll == CT_REDUCE_SCATTER || coll == CT_REDUCE_SCATTER_BLOCK;
}

int ct_call_empty(const ct_params *p)
{
    if (p->coll == CT_BARRIER)
        return 0;
    if (!ct_coll_is_v(p->coll))
        return p->count == 0;
    for (int i = 0; i < p->size; i++)
        if (ct_vcount(p, i) || (p->coll == CT_ALLTOALLV && ct_vrcount(p, i)))
            return 0;
    return 1;
}

void ct_sched_local_only(const ct_params *p, ct_sched *s)
{
    int r = p->rank;
    if (p->size != 1)
        return; /* no element anywhere: nothing to copy either */
    switch (p->coll) {
    case CT_BCAST:
    case CT_EXSCAN: /* rank 0's exscan result is undefined: left alone */
        return;
    case CT_ALLGATHERV:
    case CT_GATHERV:
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, ct_vdispl(p, r), ct_vcount(p, r));
        return;
    case CT_SCATTERV:
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, r), CT_BUF_DST, 0, ct_vcount(p, r));
        return;
    case CT_ALLTOALLV:
        ct_sched_copy(s, CT_BUF_SRC, ct_vdispl(p, r), CT_BUF_DST, ct_vrdispl(p, r),
                      ct_vcount(p, r));
        return;
    case CT_REDUCE_SCATTER:
    case CT_REDUCE_SCATTER_BLOCK:
        if (!p->in_place) /* in place, block 0 already sits at the start of DST */
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, 0, ct_vcount(p, r));
        return;
    default:
        if (!p->in_place)
            ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, 0, p->count);
        return;
    }
}
