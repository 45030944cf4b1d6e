/* Bruck's alltoall: ceil(log2 N) messages per rank instead of N-1, at the
 * price of sending each block up to log2(N) times and of local packing. After
 * a local rotation, position i of rank r holds the block r sends to r + i.
 * In step k every block whose position has bit k set moves 2^k ranks on (all
 * of them packed into one message to rank + 2^k), so a block at position i
 * travels exactly i ranks, and ends at rank r + i still at position i: rank r
 * then finds the block from rank r - i at position i. Works for any N: the
 * positions simply stop at N-1. For short blocks and many ranks. */
#include "algorithms.h"

/* Packs (to_pack) or unpacks the blocks of `work` whose position has bit
 * `bit` set, in ascending position, to / from the start of `packed`. */
static void pack(ct_sched *s, int n, size_t count, int bit, int work, int packed, int to_pack)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (!(i & bit))
            continue;
        if (to_pack)
            ct_sched_copy(s, work, (size_t)i * count, packed, at, count);
        else
            ct_sched_copy(s, packed, at, work, (size_t)i * count, count);
        at += count;
    }
}

static size_t npacked(int n, int bit)
{
    size_t c = 0;
    for (int i = 0; i < n; i++)
        c += (i & bit) != 0;
    return c;
}

int ct_alltoall_bruck(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count;
    size_t most = 0;
    for (int bit = 1; bit < n; bit *= 2)
        if (npacked(n, bit) > most)
            most = npacked(n, bit);
    int work = ct_sched_tmp(s, (size_t)n * count);
    int out = ct_sched_tmp(s, most * count), in = ct_sched_tmp(s, most * count);

    /* Rotation: work[i] = SRC[(r + i) % n], two contiguous runs. */
    ct_sched_round(s);
    ct_sched_copy(s, CT_BUF_SRC, (size_t)r * count, work, 0, (size_t)(n - r) * count);
    ct_sched_copy(s, CT_BUF_SRC, 0, work, (size_t)(n - r) * count, (size_t)r * count);
    pack(s, n, count, 1, work, out, 1);
    for (int bit = 1; bit < n; bit *= 2) {
        size_t len = npacked(n, bit) * count;
        ct_sched_round(s);
        ct_sched_send(s, (r + bit) % n, out, 0, len);
        ct_sched_recv(s, (r - bit + n) % n, in, 0, len);
        pack(s, n, count, bit, work, in, 0);
        if (bit * 2 < n) /* packed after unpacking: the next step's blocks include today's */
            pack(s, n, count, bit * 2, work, out, 1);
    }
    /* Inverse rotation: position i came from rank r - i. */
    for (int i = 0; i < n; i++)
        ct_sched_copy(s, work, (size_t)i * count, CT_BUF_DST,
                      (size_t)((r - i + n) % n) * count, count);
    return s->error ? -1 : 0;
}
