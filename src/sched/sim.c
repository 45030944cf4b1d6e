#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pending {
    int rank, op;
} pending;

typedef struct queue {
    pending *items;
    int head, len, cap;
} queue;

typedef struct sim {
    int n;
    ct_sched *const *scheds;
    unsigned char **bufs; /* n * CT_MAX_BUFS base pointers */
    size_t *bufcount;     /* n * CT_MAX_BUFS sizes in elements (SIZE_MAX: unknown) */
    size_t esz;
    queue *sendq, *recvq; /* per (src, dst) pair */
    int *round, *posted, *left;
    /* heard[r * n + q]: rank r has heard from rank q's start (causally);
     * told[] is the same at the start of r's current round, what its sends carry. */
    unsigned char *heard, *told;
    /* Shared memory: one segment for all ranks, each rank's flag (its last step)
     * and, per SIGNAL, what the rank had heard then (what a WAIT on it learns). */
    unsigned char *shm;
    size_t shm_count;
    unsigned *flag;
    int *local;           /* each rank's next local operation in its round */
    struct signal_seen {
        unsigned step;
        unsigned char *heard;
    } **signals;
    int *nsignals;
    ct_sim_result *res;
} sim;

static int push(queue *q, pending p)
{
    if (q->len == q->cap) {
        int ncap = q->cap ? 2 * q->cap : 8;
        pending *ni = realloc(q->items, sizeof(pending) * (size_t)ncap);
        if (!ni)
            return -1;
        q->items = ni;
        q->cap = ncap;
    }
    q->items[q->len++] = p;
    return 0;
}

static unsigned char *addr(sim *S, int rank, const ct_region *r, const char *what)
{
    if (r->buf < 0 || (r->buf >= S->scheds[rank]->nbufs && r->buf != CT_BUF_SHM) ||
        r->off + r->count > S->bufcount[rank * CT_MAX_BUFS + r->buf]) {
        snprintf(S->res->error, sizeof S->res->error,
                 "rank %d: %s region buf %d [%zu,+%zu) out of range", rank, what, r->buf,
                 r->off, r->count);
        return NULL;
    }
    unsigned char *base = S->bufs[rank * CT_MAX_BUFS + r->buf];
    if (!base) {
        snprintf(S->res->error, sizeof S->res->error, "rank %d: %s uses missing buffer %d",
                 rank, what, r->buf);
        return NULL;
    }
    return base + r->off * S->esz;
}

static int try_match(sim *S, int src, int dst)
{
    queue *sq = &S->sendq[src * S->n + dst], *rq = &S->recvq[dst * S->n + src];
    while (sq->head < sq->len && rq->head < rq->len) {
        pending ps = sq->items[sq->head++], pr = rq->items[rq->head++];
        const ct_op *so = &S->scheds[src]->ops[ps.op], *ro = &S->scheds[dst]->ops[pr.op];
        if (so->a.count != ro->a.count) {
            snprintf(S->res->error, sizeof S->res->error,
                     "message %d->%d: send of %zu elements matched a receive of %zu", src, dst,
                     so->a.count, ro->a.count);
            return -1;
        }
        if (ro->a.buf == CT_BUF_SRC) {
            snprintf(S->res->error, sizeof S->res->error, "rank %d receives into its input",
                     dst);
            return -1;
        }
        for (int q = 0; q < S->n; q++)
            S->heard[dst * S->n + q] |= S->told[src * S->n + q];
        if (so->a.count > 0) {
            unsigned char *from = addr(S, src, &so->a, "send");
            unsigned char *to = addr(S, dst, &ro->a, "recv");
            if (!from || !to)
                return -1;
            memmove(to, from, so->a.count * S->esz);
        }
        S->res->messages++;
        S->res->elements += (long long)so->a.count;
        S->left[src]--;
        S->left[dst]--;
    }
    return 0;
}

/* Rank's local operations of round r from where it stopped: 0 when done, 1 when
 * a WAIT stops it (its peer has not signalled yet), -1 on error. */
static int local_ops(sim *S, int rank, int r, ct_sim_reduce_fn reduce)
{
    const ct_sched *s = S->scheds[rank];
    int first = s->round_start[r], len = ct_sched_round_len(s, r), n = S->n;
    for (int i = first + S->local[rank]; i < first + len; i++, S->local[rank]++) {
        const ct_op *o = &s->ops[i];
        if (o->kind == CT_OP_SIGNAL) {
            unsigned step = (unsigned)o->a.off;
            if (step < S->flag[rank]) {
                snprintf(S->res->error, sizeof S->res->error,
                         "rank %d: signals step %u after step %u", rank, step, S->flag[rank]);
                return -1;
            }
            S->flag[rank] = step;
            struct signal_seen *ns = realloc(S->signals[rank], sizeof *ns *
                                                               (size_t)(S->nsignals[rank] + 1));
            if (!ns)
                return -1;
            S->signals[rank] = ns;
            ns[S->nsignals[rank]].step = step;
            if (!(ns[S->nsignals[rank]].heard = malloc((size_t)n)))
                return -1;
            memcpy(ns[S->nsignals[rank]++].heard, &S->heard[rank * n], (size_t)n);
            continue;
        }
        if (o->kind == CT_OP_WAIT) {
            unsigned step = (unsigned)o->a.off;
            if (o->peer < 0 || o->peer >= n) {
                snprintf(S->res->error, sizeof S->res->error, "rank %d: waits on rank %d",
                         rank, o->peer);
                return -1;
            }
            if (step == CT_STEP_PREV)
                continue; /* one call: every rank is done with the one before */
            if (S->flag[o->peer] < step)
                return 1;
            for (int k = 0; k < S->nsignals[o->peer]; k++)
                if (S->signals[o->peer][k].step >= step) {
                    for (int q = 0; q < n; q++)
                        S->heard[rank * n + q] |= S->signals[o->peer][k].heard[q];
                    break;
                }
            continue;
        }
        if (o->kind == CT_OP_PULL) {
            /* One copy out of the peer's buffer, as it is now: the schedules' WAITs
             * order it after the peer's writes, as the flags do on a node. */
            if (o->peer < 0 || o->peer >= n || (o->a.buf != CT_BUF_SRC && o->a.buf != CT_BUF_DST)) {
                snprintf(S->res->error, sizeof S->res->error,
                         "rank %d: pulls buffer %d of rank %d", rank, o->a.buf, o->peer);
                return -1;
            }
            unsigned char *from = addr(S, o->peer, &o->a, "pull source");
            unsigned char *to = addr(S, rank, &o->b, "pull destination");
            if (!from || !to)
                return -1;
            if (o->b.buf == CT_BUF_SRC) {
                snprintf(S->res->error, sizeof S->res->error, "rank %d pulls into its input",
                         rank);
                return -1;
            }
            memmove(to, from, o->a.count * S->esz);
            continue;
        }
        if (o->kind != CT_OP_REDUCE && o->kind != CT_OP_COPY)
            continue;
        unsigned char *a = addr(S, rank, &o->a, "local source");
        unsigned char *b = addr(S, rank, &o->b, "local destination");
        if (!a || !b)
            return -1;
        if (o->b.buf == CT_BUF_SRC) {
            snprintf(S->res->error, sizeof S->res->error, "rank %d writes its input buffer",
                     rank);
            return -1;
        }
        if (o->kind == CT_OP_COPY)
            memmove(b, a, o->a.count * S->esz);
        else
            reduce(a, b, o->a.count);
    }
    S->local[rank] = 0;
    return 0;
}

int ct_sim_run(int n, ct_sched *const *scheds, void *const *src, void *const *dst,
               size_t src_count, size_t dst_count, size_t elem_size, ct_sim_reduce_fn reduce,
               ct_sim_result *res)
{
    return ct_sim_run_nodes(n, NULL, scheds, src, dst, src_count, dst_count, elem_size, reduce,
                            res);
}

int ct_sim_run_nodes(int n, const int *node_of, ct_sched *const *scheds, void *const *src,
                     void *const *dst, size_t src_count, size_t dst_count, size_t elem_size,
                     ct_sim_reduce_fn reduce, ct_sim_result *res)
{
    memset(res, 0, sizeof *res);
    sim S = {.n = n, .scheds = scheds, .esz = elem_size, .res = res};
    int rc = -1;
    S.bufs = calloc((size_t)n * CT_MAX_BUFS, sizeof *S.bufs);
    S.bufcount = calloc((size_t)n * CT_MAX_BUFS, sizeof *S.bufcount);
    S.sendq = calloc((size_t)n * n, sizeof(queue));
    S.recvq = calloc((size_t)n * n, sizeof(queue));
    S.round = calloc((size_t)n, sizeof(int));
    S.posted = calloc((size_t)n, sizeof(int));
    S.left = calloc((size_t)n, sizeof(int));
    S.heard = calloc((size_t)n * n, 1);
    S.told = calloc((size_t)n * n, 1);
    S.flag = calloc((size_t)n, sizeof *S.flag);
    S.local = calloc((size_t)n, sizeof *S.local);
    S.signals = calloc((size_t)n, sizeof *S.signals);
    S.nsignals = calloc((size_t)n, sizeof *S.nsignals);
    for (int r = 0; r < n; r++)
        if (scheds[r]->buf_count[CT_BUF_SHM] > S.shm_count)
            S.shm_count = scheds[r]->buf_count[CT_BUF_SHM];
    int nnodes = 1;
    for (int r = 0; node_of && r < n; r++)
        if (node_of[r] >= nnodes)
            nnodes = node_of[r] + 1;
    S.shm = calloc((S.shm_count ? S.shm_count : 1) * (size_t)nnodes, elem_size);
    if (!S.bufs || !S.bufcount || !S.sendq || !S.recvq || !S.round || !S.posted || !S.left ||
        !S.heard || !S.told || !S.flag || !S.local || !S.signals || !S.nsignals || !S.shm) {
        snprintf(res->error, sizeof res->error, "out of memory");
        goto out;
    }
    for (int r = 0; r < n; r++) {
        const ct_sched *s = scheds[r];
        if (s->error) {
            snprintf(res->error, sizeof res->error, "rank %d: schedule has an error", r);
            goto out;
        }
        S.bufs[r * CT_MAX_BUFS + CT_BUF_SRC] = src[r];
        S.bufs[r * CT_MAX_BUFS + CT_BUF_DST] = dst[r];
        S.bufcount[r * CT_MAX_BUFS + CT_BUF_SRC] = src[r] ? src_count : 0;
        S.bufcount[r * CT_MAX_BUFS + CT_BUF_DST] = dst[r] ? dst_count : 0;
        S.heard[r * n + r] = 1;
        S.bufs[r * CT_MAX_BUFS + CT_BUF_SHM] =
            S.shm + (node_of ? (size_t)node_of[r] * S.shm_count * elem_size : 0);
        S.bufcount[r * CT_MAX_BUFS + CT_BUF_SHM] = S.shm_count;
        for (int b = CT_BUF_TMP0; b < s->nbufs; b++) {
            S.bufcount[r * CT_MAX_BUFS + b] = s->buf_count[b];
            S.bufs[r * CT_MAX_BUFS + b] = calloc(s->buf_count[b] ? s->buf_count[b] : 1, elem_size);
            if (!S.bufs[r * CT_MAX_BUFS + b]) {
                snprintf(res->error, sizeof res->error, "out of memory");
                goto out;
            }
        }
        if (s->nrounds > res->max_rounds)
            res->max_rounds = s->nrounds;
        for (int i = 0; i < s->nops; i++)
            if ((s->ops[i].kind == CT_OP_SEND || s->ops[i].kind == CT_OP_RECV) &&
                (s->ops[i].peer < 0 || s->ops[i].peer >= n || s->ops[i].peer == r)) {
                snprintf(res->error, sizeof res->error, "rank %d: op %d has bad peer %d", r, i,
                         s->ops[i].peer);
                goto out;
            }
    }

    for (int progress = 1; progress;) {
        progress = 0;
        for (int r = 0; r < n; r++) {
            const ct_sched *s = scheds[r];
            if (S.round[r] >= s->nrounds)
                continue;
            int rd = S.round[r];
            if (!S.posted[r]) {
                S.posted[r] = 1;
                progress = 1;
                memcpy(&S.told[r * n], &S.heard[r * n], (size_t)n);
                int first = s->round_start[rd], len = ct_sched_round_len(s, rd);
                for (int i = first; i < first + len; i++) {
                    const ct_op *o = &s->ops[i];
                    if (o->kind == CT_OP_SEND) {
                        S.left[r]++;
                        if (push(&S.sendq[r * n + o->peer], (pending){r, i}))
                            goto oom;
                    } else if (o->kind == CT_OP_RECV) {
                        S.left[r]++;
                        if (push(&S.recvq[r * n + o->peer], (pending){r, i}))
                            goto oom;
                    }
                }
                for (int i = first; i < first + len; i++) {
                    const ct_op *o = &s->ops[i];
                    if (o->kind == CT_OP_SEND && try_match(&S, r, o->peer))
                        goto out;
                    if (o->kind == CT_OP_RECV && try_match(&S, o->peer, r))
                        goto out;
                }
            }
            if (S.left[r] == 0) {
                int before = S.local[r], stalled = local_ops(&S, r, rd, reduce);
                if (stalled < 0) {
                    if (!res->error[0])
                        snprintf(res->error, sizeof res->error, "out of memory");
                    goto out;
                }
                if (stalled) {
                    progress |= S.local[r] != before;
                    continue;
                }
                S.round[r]++;
                S.posted[r] = 0;
                progress = 1;
            }
        }
    }
    for (int r = 0; r < n; r++)
        if (S.round[r] < scheds[r]->nrounds) {
            snprintf(res->error, sizeof res->error,
                     "deadlock: rank %d stuck in round %d of %d (%d ops pending)", r,
                     S.round[r], scheds[r]->nrounds, S.left[r]);
            goto out;
        }
    for (int i = 0; i < n * n; i++)
        if (S.sendq[i].head != S.sendq[i].len || S.recvq[i].head != S.recvq[i].len) {
            snprintf(res->error, sizeof res->error, "unmatched message between ranks %d and %d",
                     i / n, i % n);
            goto out;
        }
    res->all_synchronized = 1;
    for (int i = 0; i < n * n; i++)
        if (!S.heard[i])
            res->all_synchronized = 0;
    rc = 0;
    goto out;
oom:
    snprintf(res->error, sizeof res->error, "out of memory");
out:
    if (S.bufs)
        for (int r = 0; r < n; r++)
            for (int b = CT_BUF_TMP0; b < CT_BUF_SHM; b++)
                free(S.bufs[r * CT_MAX_BUFS + b]);
    if (S.sendq)
        for (int i = 0; i < n * n; i++) {
            free(S.sendq[i].items);
            free(S.recvq[i].items);
        }
    free(S.bufs);
    free(S.bufcount);
    free(S.sendq);
    free(S.recvq);
    free(S.round);
    free(S.posted);
    free(S.left);
    free(S.heard);
    free(S.told);
    for (int r = 0; S.signals && r < n; r++) {
        for (int k = 0; k < S.nsignals[r]; k++)
            free(S.signals[r][k].heard);
        free(S.signals[r]);
    }
    free(S.signals);
    free(S.nsignals);
    free(S.flag);
    free(S.local);
    free(S.shm);
    return rc;
}
