/* Tournament barrier: in round k the ranks still in play pair up by bit k;
 * the one with the bit set loses and signals the winner, who goes on to round
 * k+1 (a rank whose opponent does not exist, N not a power of two, has a bye).
 * Rank 0 wins every match, so once it has won the last round everyone has
 * arrived; it then wakes the opponents it beat, last round first, and each
 * woken rank does the same with its own, retracing the tournament downwards.
 * The matches are played one round at a time, as in the classic static
 * tournament barrier: each rank waits on at most one flag per round. */
#include "algorithms.h"

int ct_barrier_tournament(const ct_params *p, ct_sched *s)
{
    int n = p->size, r = p->rank;
    /* The round in which we lose (the lowest set bit), or past the last one
     * for the champion. */
    int lose = 1;
    while (lose < n && !(r & lose))
        lose *= 2;
    for (int bit = 1; bit < lose; bit *= 2) {
        ct_sched_round(s);
        if (r + bit < n)
            ct_sched_sync_recv(s, r + bit);
    }
    if (r != 0) {
        ct_sched_round(s);
        ct_sched_sync_send(s, r - lose);
        ct_sched_sync_recv(s, r - lose); /* the wake-up */
    }
    for (int bit = lose / 2; bit >= 1; bit /= 2) {
        ct_sched_round(s);
        if (r + bit < n)
            ct_sched_sync_send(s, r + bit);
    }
    return s->error ? -1 : 0;
}
