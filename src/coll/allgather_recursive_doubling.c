/* Allgather by recursive doubling: log2(N) exchanges among the largest power
 * of two of ranks, each exchange swapping everything gathered so far, so the
 * size doubles every step. Latency-optimal for short blocks.
 *
 * Non-powers of two are folded like allreduce recursive_doubling: among the
 * first 2*rem ranks (rem = N - pof2) each even rank hands its block to the odd
 * rank above it and gets the whole result back at the end. Each participant
 * then stands for an interval of real ranks (a pair or a single rank), and
 * the intervals of consecutive participants are adjacent, so every window
 * exchanged is one contiguous run of blocks: one message per step. */
#include "algorithms.h"

/* First real rank stood for by participant nr (nr = pof2 gives N). */
static int real_lo(int nr, int rem) { return nr < rem ? 2 * nr : nr + rem; }

int ct_allgather_recursive_doubling(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    size_t count = p->count, total = (size_t)n * count;
    int pof2 = ct_pof2_floor(n), rem = n - pof2;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;
    size_t in_off = p->in_place ? (size_t)r * count : 0;

    if (r < 2 * rem && r % 2 == 0) {
        /* Folded out: only the final result comes back, own block included
         * (the same values), so DST needs no copy of the input. */
        ct_sched_round(s);
        ct_sched_send(s, r + 1, in_buf, in_off, count);
        ct_sched_round(s);
        ct_sched_recv(s, r + 1, CT_BUF_DST, 0, total);
        return s->error ? -1 : 0;
    }
    ct_sched_round(s);
    if (!p->in_place)
        ct_sched_copy(s, CT_BUF_SRC, 0, CT_BUF_DST, (size_t)r * count, count);
    if (r < 2 * rem)
        ct_sched_recv(s, r - 1, CT_BUF_DST, (size_t)(r - 1) * count, count);

    int nr = r < 2 * rem ? r / 2 : r - rem;
    for (int mask = 1; mask < pof2; mask *= 2) {
        /* We hold the blocks of participants [mine, mine + mask), the
         * partner those of [theirs, theirs + mask). */
        int mine = nr & ~(mask - 1), theirs = mine ^ mask;
        int pn = nr ^ mask;
        int partner = real_lo(pn, rem) + (pn < rem ? 1 : 0);
        size_t soff = (size_t)real_lo(mine, rem) * count;
        size_t send = (size_t)real_lo(mine + mask, rem) * count - soff;
        size_t roff = (size_t)real_lo(theirs, rem) * count;
        size_t recv = (size_t)real_lo(theirs + mask, rem) * count - roff;
        ct_sched_round(s);
        ct_sched_send(s, partner, CT_BUF_DST, soff, send);
        ct_sched_recv(s, partner, CT_BUF_DST, roff, recv);
    }
    if (r < 2 * rem) {
        ct_sched_round(s);
        ct_sched_send(s, r - 1, CT_BUF_DST, 0, total);
    }
    return s->error ? -1 : 0;
}
