#include "model.h"

#include "coll/registry.h"
#include "colltune.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ costs */

/* Index of the last point at or below m (0 below the first). */
static int point_below(const ct_cost_table *c, double m)
{
    int lo = 0, hi = c->npoints - 1;
    if (m <= c->size_bytes[0])
        return 0;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (c->size_bytes[mid] <= m)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

double ct_cost_at(const ct_cost_table *c, const double *column, double m)
{
    int last = c->npoints - 1, i = point_below(c, m);
    if (m <= c->size_bytes[0])
        return column[0];
    if (i == last) /* beyond the measured range: the last point's cost per byte */
        return c->size_bytes[last] > 0 ? column[last] * m / c->size_bytes[last] : column[last];
    double x0 = c->size_bytes[i], x1 = c->size_bytes[i + 1];
    return column[i] + (column[i + 1] - column[i]) * (m - x0) / (x1 - x0);
}

static int mode_at(const ct_cost_table *c, double m)
{
    return c->mode ? c->mode[point_below(c, m)] : CT_MODE_IMMEDIATE;
}

/* os or g of the k-th pending send (k >= 1), between the measured counts. */
static double pending_cost(const ct_cost_table *c, const double *plain, const double *rows,
                           double m, int k)
{
    if (c->npending <= 0 || !rows)
        return ct_cost_at(c, plain, m);
    const double *cnt = c->pending_counts;
    if (k <= cnt[0])
        return ct_cost_at(c, rows, m);
    int j = 0;
    while (j + 1 < c->npending && cnt[j + 1] < k)
        j++;
    if (j + 1 >= c->npending)
        return ct_cost_at(c, rows + (size_t)j * (size_t)c->npoints, m);
    double a = ct_cost_at(c, rows + (size_t)j * (size_t)c->npoints, m);
    double b = ct_cost_at(c, rows + (size_t)(j + 1) * (size_t)c->npoints, m);
    return a + (b - a) * (k - cnt[j]) / (cnt[j + 1] - cnt[j]);
}

static const char *check_table(const ct_cost_table *c)
{
    if (!c || c->npoints < 1 || !c->size_bytes || !c->os_us || !c->or_us || !c->g_us ||
        !c->oneway_us)
        return "cost table: no points";
    for (int i = 0; i < c->npoints; i++) {
        if (i && c->size_bytes[i] <= c->size_bytes[i - 1])
            return "cost table: sizes do not ascend";
        if (c->os_us[i] < 0 || c->or_us[i] < 0 || c->g_us[i] < 0 || c->oneway_us[i] < 0)
            return "cost table: negative cost";
    }
    if (c->npending > 0) {
        if (!c->pending_counts || !c->os_pending_us || !c->g_pending_us)
            return "cost table: pending counts without their costs";
        for (int j = 1; j < c->npending; j++)
            if (c->pending_counts[j] <= c->pending_counts[j - 1])
                return "cost table: pending counts do not ascend";
    }
    if (c->nlocal > 0 && (!c->local_bytes || !c->copy_us || !c->reduce_us))
        return "cost table: local sizes without their costs";
    if (c->nconc > 0) {
        if (!c->conc_pairs || !c->oneway_conc_us)
            return "cost table: concurrent pair counts without their times";
        for (int j = 0; j < c->nconc; j++) {
            if (c->conc_pairs[j] < 1 || (j && c->conc_pairs[j] <= c->conc_pairs[j - 1]))
                return "cost table: concurrent pair counts do not ascend from 1";
            for (int i = 0; i < c->npoints; i++)
                if (!(c->oneway_conc_us[(size_t)j * (size_t)c->npoints + i] >= 0))
                    return "cost table: negative concurrent one-way time";
        }
    }
    if (c->nstream_sizes > 0) {
        if (!c->stream_bytes || !c->stream_pair_us)
            return "cost table: stream sizes without the pair's gaps";
        if (c->nfanin > 0 && (!c->fanin_flows || !c->stream_fanin_us))
            return "cost table: fan-in counts without their gaps";
        for (int i = 0; i < c->nstream_sizes; i++) {
            if (i && c->stream_bytes[i] <= c->stream_bytes[i - 1])
                return "cost table: stream sizes do not ascend";
            if (!(c->stream_pair_us[i] > 0) ||
                (c->stream_duplex_us && !(c->stream_duplex_us[i] > 0)))
                return "cost table: stream gap not positive";
            for (int j = 0; j < c->nfanin; j++)
                if (!(c->stream_fanin_us[(size_t)j * (size_t)c->nstream_sizes + i] > 0))
                    return "cost table: stream gap not positive";
        }
        for (int j = 0; j < c->nfanin; j++)
            if (c->fanin_flows[j] < 2 || (j && c->fanin_flows[j] <= c->fanin_flows[j - 1]))
                return "cost table: fan-in counts do not ascend from 2";
    }
    return NULL;
}

static int has_contention(const ct_cost_table *c)
{
    return c && c->nconc > 0 && c->conc_pairs && c->oneway_conc_us;
}

double ct_contention_factor(const ct_cost_table *c, double m, double k)
{
    if (!has_contention(c) || k <= 1)
        return 1;
    const double *kk = c->conc_pairs;
    size_t np = (size_t)c->npoints;
    int j = kk[0] <= 1 ? 1 : 0; /* the first count above one pair */
    double x0 = 1, y0 = j ? ct_cost_at(c, c->oneway_conc_us, m) : ct_cost_at(c, c->oneway_us, m);
    if (j >= c->nconc || !(y0 > 0))
        return 1; /* only one pair measured, or no time to stretch */
    double ref = y0, t = y0;
    for (; j < c->nconc; j++) {
        double x1 = kk[j], y1 = ct_cost_at(c, c->oneway_conc_us + (size_t)j * np, m);
        if (k <= x1 || j == c->nconc - 1) { /* between, or beyond the last: its segment */
            t = y0 + (y1 - y0) * (k - x0) / (x1 - x0);
            break;
        }
        x0 = x1;
        y0 = y1;
    }
    double f = t / ref;
    return f > 1 ? f : 1;
}

static int has_stack(const ct_cost_table *c)
{
    return c && c->nstream_sizes > 0 && c->stream_bytes && c->stream_pair_us;
}

double ct_stack_factor(const ct_cost_table *c, double m, double fanin, double duplex)
{
    if (!has_stack(c))
        return 1;
    /* The streams have their own sizes: a view of them as a cost table. */
    ct_cost_table view = {.npoints = c->nstream_sizes, .size_bytes = c->stream_bytes};
    double pair = ct_cost_at(&view, c->stream_pair_us, m), f = 1;
    if (!(pair > 0))
        return 1;
    if (c->nfanin > 0 && fanin > 1) {
        size_t ns = (size_t)c->nstream_sizes;
        double x0 = 1, y0 = pair, t = pair;
        for (int j = 0; j < c->nfanin; j++) {
            double x1 = c->fanin_flows[j];
            double y1 = ct_cost_at(&view, c->stream_fanin_us + (size_t)j * ns, m);
            if (fanin <= x1 || j == c->nfanin - 1) { /* between, or beyond the last */
                t = y0 + (y1 - y0) * (fanin - x0) / (x1 - x0);
                break;
            }
            x0 = x1;
            y0 = y1;
        }
        f = t / pair;
    }
    /* A rendezvous message's handshake crosses the link once before its data, so the
     * duplex stream, whose every handshake waits behind the other direction's data, says
     * nothing of it (Open MPI on the bed: 1.53x at 256 KiB in the stream, none in a
     * recursive doubling's single exchanges, 17.5 ms at 1 MiB for the 17.5 of the wire) */
    if (c->stream_duplex_us && duplex > 0 && mode_at(c, m) != CT_MODE_RENDEZVOUS) {
        double d = duplex < 1 ? duplex : 1;
        double s = 1 + d * (ct_cost_at(&view, c->stream_duplex_us, m) / pair - 1);
        if (s > f)
            f = s;
    }
    return f > 1 ? f : 1;
}

static double local_cost(const ct_cost_table *c, const double *column, double m)
{
    if (c->nlocal <= 0 || m <= 0)
        return 0;
    /* The local table has its own sizes: a view of it as a cost table. */
    ct_cost_table view = {.npoints = c->nlocal, .size_bytes = c->local_bytes};
    return ct_cost_at(&view, column, m);
}

/* --------------------------------------------------------------- channels */

/* One direction of one pair: its sends and receives, matched in order. */
typedef struct msg_end {
    double t;      /* send: its start s; receive: when it was posted */
    double bytes;
    double xfer;   /* send: when its data starts to move (after any wait for the
                      node's link); -1 until known */
    long id;       /* send: the message's number in posting order (the same in
                      every pass of a replay) */
    double late;   /* send: what the link's bucket lacked adds to T (model.h) */
    double shared; /* send: what sharing the link with its round's other sends adds
                      to T (model.h, sends of one round) */
} msg_end;

typedef struct channel {
    long long key;
    msg_end *sends, *recvs;
    int nsends, nrecvs, cap_sends, cap_recvs;
} channel;

typedef struct channel_map {
    channel **slots; /* open addressing; NULL = empty. The channels themselves never
                        move: the posted operations keep pointers to them while the
                        map grows */
    size_t cap, used;
} channel_map;

static size_t hash_key(long long key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (cap - 1);
}

static int map_grow(channel_map *m)
{
    size_t ncap = m->cap ? 2 * m->cap : 256;
    channel **ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i])
            continue;
        size_t j = hash_key(m->slots[i]->key, ncap);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

static channel *map_get(channel_map *m, long long key)
{
    if (2 * (m->used + 1) > m->cap && map_grow(m))
        return NULL;
    size_t j = hash_key(key, m->cap);
    while (m->slots[j] && m->slots[j]->key != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j]) {
        if (!(m->slots[j] = calloc(1, sizeof *m->slots[j])))
            return NULL;
        m->slots[j]->key = key;
        m->used++;
    }
    return m->slots[j];
}

static void map_free(channel_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i]) {
            free(m->slots[i]->sends);
            free(m->slots[i]->recvs);
            free(m->slots[i]);
        }
    free(m->slots);
}

static int push_end(msg_end **v, int *n, int *cap, msg_end e)
{
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 4;
        msg_end *nv = realloc(*v, (size_t)ncap * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = ncap;
    }
    (*v)[(*n)++] = e;
    return 0;
}

/* ------------------------------------------------------------------ replay */

typedef struct posted_op {
    channel *ch;
    int index;     /* position in the channel's sends or receives */
    double g;      /* send: its gap */
} posted_op;

typedef struct flag_signal {
    unsigned step;
    double t;
} flag_signal;

typedef struct rank_state {
    int round;     /* current round; nrounds = done */
    int posted;    /* the current round's operations are posted */
    double clock;  /* the rank's processor */
    double link;   /* earliest start of its next send */
    posted_op *ops;
    int cap_ops;
    /* The round's local operations, which a WAIT may stop midway: where, and when. */
    int in_local, local;
    double local_clock;
    int shared_round; /* 1 + the round whose sends have shared the link (0: none yet) */
    flag_signal *signals; /* shared memory: the steps this rank has signalled, in order */
    int nsignals, cap_signals;
} rank_state;

/* Where and when one message's data moved (contention, see model.h). */
typedef struct xfer_rec {
    double begin, end; /* [x, x + T']; end < begin: not moved (yet) */
    double hold;       /* host stacks: held over [x, x + hold] (its link occupancy) */
    double bytes;
    int res[2];        /* its resources, -1 for none */
    int from_node, to_node; /* between nodes with host stacks; else -1 */
    const ct_cost_table *lc;
} xfer_rec;

/* The busy intervals of one node's link to the other nodes, in start order. */
typedef struct link_use {
    double *begin, *end;
    double *level; /* the bucket's level after each interval (link bucket) */
    int n, cap;
} link_use;

typedef struct replay {
    const ct_cost_table *c;      /* the intra-node layer (and the local costs) */
    const ct_cost_table *inter;  /* between nodes; NULL: c everywhere */
    const int *node_of;
    link_use *links;             /* per node, when inter is used without contention */
    int nnodes;                  /* with a layout; else 0 */
    double *bucket_start;        /* per node: its link's bucket level as a call starts;
                                    NULL: no link bucket */
    double *bucket_next;         /* the same, steady state after this pass */
    int track;                   /* record every transfer (contention) */
    int impatient;               /* no progress otherwise: a rendezvous receive takes
                                    its link slot without waiting for the sender's
                                    round to share it (share_round_sends) */
    const double *stretch;       /* per message: T' / T of this pass; NULL: 1 */
    long nstretch;
    xfer_rec *recs;              /* per message, when tracking */
    long nrecs, cap_recs;
    int n;
    ct_sched *const *scheds;
    double esz;
    channel_map map;
    rank_state *st;
    ct_model_result *res;
} replay;

/* Whether a message between a and b goes from one node to another. */
static int crosses(const replay *R, int a, int b)
{
    return R->inter && R->node_of && R->node_of[a] != R->node_of[b];
}

/* The layer a message between a and b crosses. */
static const ct_cost_table *layer(const replay *R, int a, int b)
{
    return crosses(R, a, b) ? R->inter : R->c;
}

/* Message se's stretch in this pass (contention and host stack), 1 in the first. */
static double stretch_of(const replay *R, const msg_end *se)
{
    return R->stretch && se->id < R->nstretch ? R->stretch[se->id] : 1;
}

/* The one-way time of message se in this pass: T, stretched by its contention. */
static double oneway_of(const replay *R, const ct_cost_table *lc, const msg_end *se)
{
    return ct_cost_at(lc, lc->oneway_us, se->bytes) * stretch_of(R, se) + se->late +
           se->shared;
}

/* Records where and when the data of se (from -> to) moved, starting at x. */
static void record_xfer(replay *R, int from, int to, const msg_end *se, double x,
                        const ct_cost_table *lc, double occupancy)
{
    if (!R->track || se->id >= R->nrecs)
        return;
    xfer_rec *r = &R->recs[se->id];
    r->begin = x;
    r->end = x + oneway_of(R, lc, se);
    r->bytes = se->bytes;
    r->lc = lc;
    r->hold = 0;
    r->from_node = r->to_node = -1;
    int nn = R->nnodes > 0 ? R->nnodes : 1;
    if (crosses(R, from, to)) {
        r->res[0] = nn + R->node_of[from];     /* its node's way out */
        r->res[1] = 2 * nn + R->node_of[to];   /* the other node's way in */
        if (has_stack(lc)) { /* its sending node's out-stack, the other's in-stack */
            r->from_node = R->node_of[from];
            r->to_node = R->node_of[to];
            r->hold = occupancy >= 0 ? occupancy
                                     : ct_link_occupancy(lc, se->bytes) * stretch_of(R, se);
        }
    } else {
        r->res[0] = R->node_of ? R->node_of[from] : 0;
        r->res[1] = -1;
    }
}

/* G of model.h: the sustained cost of a byte on a link, 0 when unknown. A pair's
 * back-to-back stream (the host stack measurement) shows what the wire takes, headers
 * included: 83.6 ns a byte at 100 Mbit/s on the test bed. Without one, LogGP's per-byte
 * gap of the largest message, the only one that streams past the token bucket; it ends
 * with its last bytes still in the socket buffers, so it reads 10-15% fast (70 ns a byte
 * there). Priced with that, every collective that keeps a link busy came out 13% short at
 * 100 Mbit/s; the rate alone (without the sharing of one round's sends, model.h) turned
 * tree scatters that send their subtrees at once to the wrong segment (BENCHMARKS 23). */
static double sustained_per_byte(const ct_cost_table *c)
{
    if (has_stack(c)) {
        int ls = c->nstream_sizes - 1;
        return c->stream_pair_us[ls] / c->stream_bytes[ls];
    }
    int last = c->npoints - 1;
    return last >= 0 && c->size_bytes[last] > 0 ? c->g_us[last] / c->size_bytes[last] : 0;
}

double ct_link_occupancy(const ct_cost_table *c, double m)
{
    double g = ct_cost_at(c, c->g_us, m), per_byte = sustained_per_byte(c);
    return m * per_byte > g ? m * per_byte : g;
}

/* When the data of send se (from -> to, of layer lc) starts to move, given that it
 * could from `ready` on. Messages between nodes share their node's link: each
 * occupies it for ct_link_occupancy (its gap g(m), or its size at the link's
 * sustained rate when that is longer), in the first free interval from ready on. The
 * slot is taken once, by whichever side asks first, so sender and receiver agree.
 * -1: no memory. */
static double xfer_start(replay *R, int from, int to, msg_end *se, double ready,
                         const ct_cost_table *lc)
{
    if (se->xfer >= 0)
        return se->xfer;
    if (!R->links || !crosses(R, from, to)) {
        se->xfer = ready;
        record_xfer(R, from, to, se, ready, lc, -1);
        return ready;
    }
    link_use *L = &R->links[R->node_of[from]];
    /* a host stack that spaces its messages out spaces them on the link too */
    double d = ct_link_occupancy(lc, se->bytes) * stretch_of(R, se), t = ready;
    int at = 0;
    for (; at < L->n; at++) {
        if (L->end[at] <= t)
            continue;
        if (L->begin[at] >= t + d)
            break;
        t = L->end[at];
    }
    if (L->n == L->cap) {
        int cap = L->cap ? 2 * L->cap : 16;
        double *b = realloc(L->begin, (size_t)cap * sizeof *b);
        if (b)
            L->begin = b;
        double *e = b ? realloc(L->end, (size_t)cap * sizeof *e) : NULL;
        if (e)
            L->end = e;
        double *v = e ? realloc(L->level, (size_t)cap * sizeof *v) : NULL;
        if (!v)
            return -1;
        L->level = v;
        L->cap = cap;
    }
    /* The link's bucket (model.h): the slot was found for the message at the rate; what
     * the bucket holds at t shortens its hold on the link, what it lacks delays it. */
    double level = 0;
    double bucket = R->bucket_start ? lc->link_bucket_bytes : 0;
    double per_byte = sustained_per_byte(lc);
    if (bucket > 0 && per_byte > 0) {
        double credit = at > 0 ? L->level[at - 1] + (t - L->end[at - 1]) / per_byte
                               : R->bucket_start[R->node_of[from]];
        if (credit > bucket)
            credit = bucket;
        /* what a full bucket saved this size in the ping-pong, in bytes at the rate */
        double m = se->bytes, pingpong = ct_cost_at(lc, lc->oneway_us, m) - lc->oneway_us[0];
        double ahead = (m * per_byte - pingpong) / per_byte;
        ahead = ahead < 0 ? 0 : ahead > m ? m : ahead > bucket ? bucket : ahead;
        /* every byte takes a token while there are any and leaves ahead of the rate.
         * T(m) holds the ping-pong's own saving `ahead`, which is not a full bucket's:
         * a tbf link idles one one-way time between ping-pong messages, so it refills
         * about half of what each takes (the bed at 100 Mbit/s: T(16 KiB) = 690 us,
         * half the 1370 us of the rate). Saving `ahead * tokens / want` instead (a full
         * bucket worth only the ping-pong's saving) priced a 64 KiB reduce_bcast 15.9
         * ms in 16 KiB segments against 11.5 measured. */
        double want = m < bucket ? m : bucket, tokens = credit < want ? credit : want;
        double saved = tokens;
        double rest = (m - saved) * per_byte, g = ct_cost_at(lc, lc->g_us, m);
        d = (rest > g ? rest : g) * stretch_of(R, se);
        se->late = (ahead - saved) * per_byte;
        level = credit - tokens;
    }
    /* keep the intervals in start order: t lies after every interval before `at` */
    memmove(L->begin + at + 1, L->begin + at, (size_t)(L->n - at) * sizeof *L->begin);
    memmove(L->end + at + 1, L->end + at, (size_t)(L->n - at) * sizeof *L->end);
    memmove(L->level + at + 1, L->level + at, (size_t)(L->n - at) * sizeof *L->level);
    L->begin[at] = t;
    L->end[at] = t + d;
    L->level[at] = level;
    L->n++;
    se->xfer = t;
    record_xfer(R, from, to, se, t, lc, d);
    return t;
}

static long long pair_key(const replay *R, int from, int to)
{
    return (long long)from * R->n + to;
}

typedef struct round_send {
    msg_end *se;
    int to;
    long first;   /* the flow's first message */
    double ready; /* when its data could move */
    double end;   /* how far into its flow its last byte lies */
    double land;  /* the bytes the link has sent when it is out */
} round_send;

/* by receiver, each receiver's messages in posting order */
static int by_receiver(const void *a, const void *b)
{
    const round_send *x = a, *y = b;
    if (x->to != y->to)
        return (x->to > y->to) - (x->to < y->to);
    return (x->se->id > y->se->id) - (x->se->id < y->se->id);
}

/* flows in posting order (their first message), each flow's messages in order */
static int by_posting(const void *a, const void *b)
{
    const round_send *x = a, *y = b;
    if (x->first != y->first)
        return (x->first > y->first) - (x->first < y->first);
    return (x->se->id > y->se->id) - (x->se->id < y->se->id);
}

static int by_landing(const void *a, const void *b)
{
    const round_send *x = a, *y = b;
    if (x->land != y->land)
        return (x->land > y->land) - (x->land < y->land);
    return by_posting(a, b);
}

/* The bytes the link has sent when flow `at` (of flows, in posting order, fl[j] bytes
 * each) has its first o bytes out: round robin in posting order, each flow q bytes at a
 * turn (model.h, sends of one round). With o in flow at's k-th turn, every flow before it
 * has had k turns and every flow after it k - 1. q = 0: every flow its share at once. */
static double round_robin_sent(const double *fl, int flows, int at, double o, double q)
{
    double k = q > 0 ? ceil(o / q) : 0, sent = o;
    for (int j = 0; j < flows; j++) {
        if (j == at)
            continue;
        double upto = q > 0 ? (j < at ? k : k - 1) * q : o;
        sent += fl[j] < upto ? fl[j] : upto;
    }
    return sent;
}

/* The sends of one round that leave the node for several receivers share its link
 * (model.h, sends of one round). Each receiver's messages are one flow (a connection,
 * in order). The link's queue takes up to Q bytes of a flow ahead of the next (the
 * inter table's flow_head_bytes, measured by the p2p's fan-out), so the flows take turns
 * of Q bytes in posting order: in turn when small, sharing the rate when large. The
 * replay keeps the link's busy time as it is (the messages take it back to back in the
 * order they land) and makes each message arrive as late as the turns have it: `shared`
 * is the difference. A rendezvous send moves once its receiver is there: the round
 * shares once all are. 0 done (or nothing to share), 1 a receiver is not there yet, -1
 * out of memory. */
static int share_round_sends(replay *R, int rank)
{
    rank_state *s = &R->st[rank];
    const ct_sched *sc = R->scheds[rank];
    int first = sc->round_start[s->round], len = ct_sched_round_len(sc, s->round), n = 0;
    double per_byte = R->links ? sustained_per_byte(R->inter) : 0;
    if (!(per_byte > 0) || s->shared_round == s->round + 1)
        return 0; /* no link, or this round shared already */
    round_send *v = malloc((size_t)(len > 0 ? len : 1) * sizeof *v);
    double *fl = malloc((size_t)(len > 0 ? len : 1) * sizeof *fl);
    if (!v || !fl) {
        free(v);
        free(fl);
        return -1;
    }
    for (int i = 0; i < len; i++) {
        const ct_op *op = &sc->ops[first + i];
        const posted_op *po = &s->ops[i];
        if (!po->ch || op->kind != CT_OP_SEND || !crosses(R, rank, op->peer))
            continue;
        msg_end *se = &po->ch->sends[po->index];
        /* a message that holds the link for its gap, not at the rate, shares nothing */
        if (se->xfer >= 0 || se->bytes * per_byte <= ct_cost_at(R->inter, R->inter->g_us,
                                                                 se->bytes))
            continue;
        double ready = se->t;
        if (mode_at(R->inter, se->bytes) == CT_MODE_RENDEZVOUS) {
            if (po->index >= po->ch->nrecvs) { /* a receiver not there yet: later */
                free(v);
                free(fl);
                return 1;
            }
            if (po->ch->recvs[po->index].t > ready)
                ready = po->ch->recvs[po->index].t;
        }
        v[n++] = (round_send){.se = se, .to = op->peer, .first = se->id, .ready = ready};
    }
    s->shared_round = s->round + 1;
    qsort(v, (size_t)n, sizeof *v, by_receiver);
    for (int k = 1; k < n; k++)
        if (v[k].to == v[k - 1].to)
            v[k].first = v[k - 1].first;
    qsort(v, (size_t)n, sizeof *v, by_posting);
    int flows = 0;
    double offset = 0;
    for (int k = 0; k < n; k++) {
        if (!k || v[k].first != v[k - 1].first) {
            fl[flows++] = 0;
            offset = 0;
        }
        offset += v[k].se->bytes;
        v[k].end = offset;
        fl[flows - 1] = offset;
    }
    int rc = 0;
    if (flows > 1) {
        double q = R->inter->flow_head_bytes > 0 ? R->inter->flow_head_bytes : 0;
        for (int k = 0, f = -1; k < n; k++) {
            f += !k || v[k].first != v[k - 1].first;
            v[k].land = round_robin_sent(fl, flows, f, v[k].end, q);
        }
        qsort(v, (size_t)n, sizeof *v, by_landing);
        double taken = 0; /* the bytes of the messages that landed before, and this one */
        for (int k = 0; k < n && !rc; k++) {
            msg_end *se = v[k].se;
            if (xfer_start(R, rank, v[k].to, se, v[k].ready, R->inter) < 0)
                rc = -1;
            taken += se->bytes;
            se->shared = (v[k].land - taken) * per_byte * stretch_of(R, se);
        }
    }
    free(v);
    free(fl);
    return rc;
}

static int post_round(replay *R, int rank)
{
    rank_state *s = &R->st[rank];
    const ct_sched *sc = R->scheds[rank];
    int first = sc->round_start[s->round], len = ct_sched_round_len(sc, s->round);
    if (len > s->cap_ops) {
        posted_op *no = realloc(s->ops, (size_t)len * sizeof *no);
        if (!no)
            return -1;
        s->ops = no;
        s->cap_ops = len;
    }
    int pending = 0;
    for (int i = 0; i < len; i++) {
        const ct_op *op = &sc->ops[first + i];
        posted_op *po = &s->ops[i];
        po->ch = NULL;
        if (op->kind != CT_OP_SEND && op->kind != CT_OP_RECV)
            continue;
        double bytes = (double)op->a.count * R->esz;
        int send = op->kind == CT_OP_SEND;
        channel *ch = map_get(&R->map, send ? pair_key(R, rank, op->peer)
                                            : pair_key(R, op->peer, rank));
        if (!ch)
            return -1;
        if (send) {
            pending++;
            const ct_cost_table *c = layer(R, rank, op->peer);
            double os = pending_cost(c, c->os_us, c->os_pending_us, bytes, pending);
            po->g = pending_cost(c, c->g_us, c->g_pending_us, bytes, pending);
            /* contention slows the sender's injection as much as the transfer */
            if (R->stretch && R->res->messages < R->nstretch)
                po->g *= R->stretch[R->res->messages];
            /* Between nodes the node's link (xfer_start) spaces the transfers out, this
             * rank's included; the rank's own gap is its shared-memory engine's. */
            int on_link = R->links && crosses(R, rank, op->peer);
            double start = on_link || s->clock > s->link ? s->clock : s->link;
            s->clock = start + os;
            if (!on_link)
                s->link = start + po->g;
            po->index = ch->nsends;
            long id = R->res->messages;
            if (push_end(&ch->sends, &ch->nsends, &ch->cap_sends,
                         (msg_end){.t = start, .bytes = bytes, .xfer = -1, .id = id}))
                return -1;
            if (R->track) {
                if (id >= R->cap_recs) {
                    long ncap = R->cap_recs ? 2 * R->cap_recs : 256;
                    xfer_rec *nr = realloc(R->recs, (size_t)ncap * sizeof *nr);
                    if (!nr)
                        return -1;
                    R->recs = nr;
                    R->cap_recs = ncap;
                }
                R->recs[id] = (xfer_rec){.begin = 0, .end = -1, .res = {-1, -1},
                                         .from_node = -1, .to_node = -1};
                R->nrecs = id + 1;
            }
        } else {
            po->index = ch->nrecvs;
            if (push_end(&ch->recvs, &ch->nrecvs, &ch->cap_recvs,
                         (msg_end){.t = s->clock, .bytes = bytes}))
                return -1;
        }
        po->ch = ch;
        R->res->messages += send;
    }
    s->posted = 1;
    return share_round_sends(R, rank) < 0 ? -1 : 0;
}

typedef struct arrival {
    double ready, or_us;
} arrival;

static int by_ready(const void *a, const void *b)
{
    double x = ((const arrival *)a)->ready, y = ((const arrival *)b)->ready;
    return (x > y) - (x < y);
}

/* Finishes the rank's current round if every message of it is known: 1 done,
 * 0 waiting for a peer, -1 error. */
static int finish_round(replay *R, int rank, arrival *arr)
{
    rank_state *s = &R->st[rank];
    const ct_sched *sc = R->scheds[rank];
    const ct_cost_table *c = R->c;
    int first = sc->round_start[s->round], len = ct_sched_round_len(sc, s->round);
    int narr = 0;
    double end = s->clock;
    if (s->in_local)
        goto locals; /* the messages are done: resume at the WAIT that stopped */
    int shared = share_round_sends(R, rank);
    if (shared < 0)
        return -1;
    if (shared && !R->impatient)
        return 0; /* its rendezvous sends wait for all their receivers */
    for (int i = 0; i < len; i++) {
        const ct_op *op = &sc->ops[first + i];
        const posted_op *po = &s->ops[i];
        if (!po->ch)
            continue;
        const ct_cost_table *lc = layer(R, rank, op->peer);
        if (op->kind == CT_OP_SEND) {
            msg_end *se = &po->ch->sends[po->index];
            double done;
            if (mode_at(lc, se->bytes) == CT_MODE_RENDEZVOUS) {
                if (po->index >= po->ch->nrecvs)
                    return 0;
                double rp = po->ch->recvs[po->index].t;
                double x = xfer_start(R, rank, op->peer, se, se->t > rp ? se->t : rp, lc);
                if (x < 0)
                    return -1;
                done = x + oneway_of(R, lc, se);
            } else {
                double x = xfer_start(R, rank, op->peer, se, se->t, lc);
                if (x < 0)
                    return -1;
                done = x + po->g;
            }
            if (done > end)
                end = done;
        } else {
            if (po->index >= po->ch->nsends)
                return 0;
            msg_end *se = &po->ch->sends[po->index];
            double start = se->t, m = se->bytes;
            int rendezvous = mode_at(lc, m) == CT_MODE_RENDEZVOUS;
            if (se->xfer < 0 && R->links && crosses(R, op->peer, rank)) {
                /* the sender's round (still the current one: it ends only once its
                 * sends have moved) shares the link once all its receivers are there */
                int shared = share_round_sends(R, op->peer);
                if (shared < 0)
                    return -1;
                if (shared && rendezvous && !R->impatient)
                    return 0;
            }
            if (rendezvous && po->ch->recvs[po->index].t > start)
                start = po->ch->recvs[po->index].t;
            if ((start = xfer_start(R, op->peer, rank, se, start, lc)) < 0)
                return -1;
            double orr = ct_cost_at(lc, lc->or_us, m);
            if (rendezvous && crosses(R, op->peer, rank)) {
                /* A rendezvous receive moves the data once posted, so the p2p's or(m)
                 * holds the transfer; between hosts the network moves it, not this
                 * processor: what is left after the one-way time is the receive's. */
                double wire = ct_cost_at(lc, lc->oneway_us, m) - lc->oneway_us[0];
                orr = orr > wire ? orr - wire : 0;
            }
            arr[narr++] = (arrival){.ready = start + oneway_of(R, lc, se) - orr, .or_us = orr};
        }
    }
    qsort(arr, (size_t)narr, sizeof *arr, by_ready);
    double clock = s->clock;
    for (int i = 0; i < narr; i++)
        clock = (arr[i].ready > clock ? arr[i].ready : clock) + arr[i].or_us;
    if (clock > end)
        end = clock;
    s->in_local = 1;
    s->local = 0;
    s->local_clock = end;
locals:
    end = s->local_clock;
    for (; s->local < len; s->local++) {
        const ct_op *op = &sc->ops[first + s->local];
        double m = (double)op->a.count * R->esz;
        if (op->kind == CT_OP_COPY || op->kind == CT_OP_PULL) {
            /* A PULL is one copy too, out of the peer's memory (its system call's few
             * hundred nanoseconds are within the copy's fitted constant term). */
            end += local_cost(c, c->copy_us, m);
        } else if (op->kind == CT_OP_REDUCE) {
            end += local_cost(c, c->reduce_us, m);
        } else if (op->kind == CT_OP_SIGNAL) {
            if (s->nsignals == s->cap_signals) {
                int ncap = s->cap_signals ? 2 * s->cap_signals : 16;
                flag_signal *ns = realloc(s->signals, sizeof *ns * (size_t)ncap);
                if (!ns)
                    return -1;
                s->signals = ns;
                s->cap_signals = ncap;
            }
            s->signals[s->nsignals++] = (flag_signal){(unsigned)op->a.off, end};
        } else if (op->kind == CT_OP_WAIT && op->a.off != CT_STEP_PREV) {
            /* The flag's cache line comes over once the peer has raised it: as long as a
             * copy of one line. */
            const rank_state *peer = &R->st[op->peer];
            int k = 0;
            while (k < peer->nsignals && peer->signals[k].step < (unsigned)op->a.off)
                k++;
            if (k == peer->nsignals) {
                s->local_clock = end;
                return 0;
            }
            double t = peer->signals[k].t + local_cost(c, c->copy_us, 64);
            if (t > end)
                end = t;
        }
    }
    s->in_local = 0;
    s->clock = end;
    s->round++;
    s->posted = 0;
    return 1;
}

int ct_model_run(const ct_cost_table *costs, int n, ct_sched *const *scheds, size_t elem_size,
                 ct_model_result *res)
{
    return ct_model_run_layers(costs, NULL, NULL, n, scheds, elem_size, res);
}

/* The bucket level a link starts a call with when the call of length `period` runs in a
 * loop: its level after its last message, refilled over the idle time to its first
 * message of the next call (model.h, link bucket). */
static double steady_level(const replay *R, const link_use *L, double period)
{
    double bucket = R->inter->link_bucket_bytes, per_byte = sustained_per_byte(R->inter);
    if (L->n == 0 || per_byte <= 0)
        return bucket;
    int last = 0;
    for (int i = 1; i < L->n; i++)
        if (L->end[i] > L->end[last])
            last = i;
    double idle = period - L->end[last] + L->begin[0];
    double level = L->level[last] + (idle > 0 ? idle : 0) / per_byte;
    return level < bucket ? level : bucket;
}

/* One replay of the schedules (R's tables, layout and stretch set): per-rank
 * finishes into res. 0 or -1 with res->error. */
static int replay_pass(replay *R, ct_model_result *res)
{
    int n = R->n;
    ct_sched *const *scheds = R->scheds;
    res->total_us = 0;
    res->messages = 0;
    R->nrecs = 0;
    R->impatient = 0;
    memset(&R->map, 0, sizeof R->map);
    R->st = calloc((size_t)n, sizeof *R->st);
    R->links = NULL;
    if (R->inter && !has_contention(R->inter)) {
        R->links = calloc((size_t)R->nnodes, sizeof *R->links);
        if (!R->links) {
            free(R->st);
            snprintf(res->error, sizeof res->error, "out of memory");
            return -1;
        }
    }
    int maxlen = 1;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < scheds[r]->nrounds; k++)
            if (ct_sched_round_len(scheds[r], k) > maxlen)
                maxlen = ct_sched_round_len(scheds[r], k);
    arrival *arr = malloc((size_t)maxlen * sizeof *arr);
    int rc = 0, left = n;
    if (!R->st || !arr) {
        rc = -1;
        snprintf(res->error, sizeof res->error, "out of memory");
        goto out;
    }
    for (int r = 0; r < n; r++)
        if (scheds[r]->nrounds == 0)
            left--;
    while (left > 0) {
        int progress = 0;
        for (int r = 0; r < n; r++) {
            rank_state *s = &R->st[r];
            while (s->round < scheds[r]->nrounds) {
                if (!s->posted) {
                    if (post_round(R, r)) {
                        rc = -1;
                        snprintf(res->error, sizeof res->error, "out of memory");
                        goto out;
                    }
                    /* its sends and receives are visible now: a peer's round that waited
                     * for them (a rendezvous send for its receive) may finish */
                    progress = 1;
                }
                int was_local = s->in_local, was_at = s->local;
                int f = finish_round(R, r, arr);
                if (f < 0) {
                    rc = -1;
                    snprintf(res->error, sizeof res->error, "out of memory");
                    goto out;
                }
                if (f == 0) {
                    if (s->in_local != was_local || s->local != was_at)
                        progress = 1; /* went as far as a WAIT */
                    break;
                }
                progress = 1;
                if (s->round == scheds[r]->nrounds)
                    left--;
            }
        }
        if (progress) {
            R->impatient = 0;
        } else if (!R->impatient) {
            R->impatient = 1; /* let the rendezvous receives go one by one */
            continue;
        } else {
            for (int r = 0; r < n; r++)
                if (R->st[r].round < scheds[r]->nrounds) {
                    snprintf(res->error, sizeof res->error,
                             "rank %d waits forever in round %d (a message is never sent or "
                             "never received)", r, R->st[r].round);
                    break;
                }
            rc = -1;
            goto out;
        }
    }
    for (int r = 0; r < n; r++) {
        if (res->rank_us)
            res->rank_us[r] = R->st[r].clock;
        if (R->st[r].clock > res->total_us)
            res->total_us = R->st[r].clock;
    }
out:
    if (R->st)
        for (int r = 0; r < n; r++) {
            free(R->st[r].ops);
            free(R->st[r].signals);
        }
    free(R->st);
    R->st = NULL;
    free(arr);
    map_free(&R->map);
    memset(&R->map, 0, sizeof R->map);
    for (int k = 0; R->links && k < R->nnodes; k++) {
        if (R->bucket_next && rc == 0)
            R->bucket_next[k] = steady_level(R, &R->links[k], res->total_us);
        free(R->links[k].begin);
        free(R->links[k].end);
        free(R->links[k].level);
    }
    free(R->links);
    R->links = NULL;
    return rc;
}

/* One transfer's use of one resource, and the events of a resource's intervals. A use
 * that counts adds the transfer's interval to the resource; a probe only asks for the
 * resource's load over that interval (a host's other direction). */
enum { USE_WAY, USE_FANIN, USE_OUT_STACK, USE_DUPLEX_PROBE };

typedef struct use {
    int res;
    int kind; /* USE_* */
    long msg;
} use;

typedef struct edge {
    double t;
    int delta; /* +1 begin, -1 end */
} edge;

static int by_res(const void *a, const void *b)
{
    const use *x = a, *y = b;
    return (x->res > y->res) - (x->res < y->res);
}

static int by_time(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The integral, from the first event to t, of the number of intervals open: A(t). */
static double open_integral(const edge *e, const double *cum, const int *opn, int ne, double t)
{
    int lo = 0, hi = ne - 1; /* the last event at or before t */
    if (ne == 0 || t <= e[0].t)
        return 0;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (e[mid].t <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return cum[lo] + opn[lo] * (t - e[lo].t);
}

/* The interval a use covers: the transfer's [x, x + T'] on the ways, its hold on stacks. */
static double use_end(const xfer_rec *r, int kind)
{
    return kind == USE_WAY ? r->end : r->begin + r->hold;
}

/* The concurrency of every recorded transfer (model.h), into conc[msg] (ways out and in:
 * the larger of the two resources' time-weighted number of open intervals during its
 * own), fanin[msg] (its receiving node's in-stack, itself included) and duplex[msg]
 * (the larger of its sending node's in-stack and its receiving node's out-stack). */
static int concurrency(const replay *R, double *conc, double *fanin, double *duplex)
{
    long m = R->nrecs, nu = 0;
    int nn = R->nnodes > 0 ? R->nnodes : 1;
    use *u = malloc((size_t)(6 * m + 1) * sizeof *u);
    edge *e = malloc((size_t)(12 * m + 1) * sizeof *e);
    double *cum = malloc((size_t)(12 * m + 1) * sizeof *cum);
    int *opn = malloc((size_t)(12 * m + 1) * sizeof *opn);
    if (!u || !e || !cum || !opn) {
        free(u);
        free(e);
        free(cum);
        free(opn);
        return -1;
    }
    for (long i = 0; i < m; i++) {
        conc[i] = fanin[i] = 1;
        duplex[i] = 0;
        const xfer_rec *r = &R->recs[i];
        if (r->end > r->begin) /* one that took no time: no contention, none caused */
            for (int k = 0; k < 2; k++)
                if (r->res[k] >= 0)
                    u[nu++] = (use){r->res[k], USE_WAY, i};
        if (r->from_node >= 0 && r->hold > 0) {
            int out_a = 3 * nn + r->from_node, in_a = 4 * nn + r->from_node;
            int out_b = 3 * nn + r->to_node, in_b = 4 * nn + r->to_node;
            u[nu++] = (use){in_b, USE_FANIN, i};
            u[nu++] = (use){out_a, USE_OUT_STACK, i};
            u[nu++] = (use){in_a, USE_DUPLEX_PROBE, i};
            u[nu++] = (use){out_b, USE_DUPLEX_PROBE, i};
        }
    }
    qsort(u, (size_t)nu, sizeof *u, by_res);
    for (long a = 0, b; a < nu; a = b) {
        for (b = a; b < nu && u[b].res == u[a].res; b++)
            ;
        int ne = 0;
        for (long i = a; i < b; i++)
            if (u[i].kind != USE_DUPLEX_PROBE) {
                e[ne++] = (edge){R->recs[u[i].msg].begin, +1};
                e[ne++] = (edge){use_end(&R->recs[u[i].msg], u[i].kind), -1};
            }
        qsort(e, (size_t)ne, sizeof *e, by_time);
        int open = 0;
        cum[0] = 0;
        for (int k = 0; k < ne; k++) {
            if (k)
                cum[k] = cum[k - 1] + open * (e[k].t - e[k - 1].t);
            open += e[k].delta;
            opn[k] = open;
        }
        for (long i = a; i < b; i++) {
            if (u[i].kind == USE_OUT_STACK)
                continue; /* counted for the others, asks nothing */
            const xfer_rec *r = &R->recs[u[i].msg];
            double end = use_end(r, u[i].kind);
            double c = (open_integral(e, cum, opn, ne, end) -
                        open_integral(e, cum, opn, ne, r->begin)) /
                       (end - r->begin);
            double *into = u[i].kind == USE_WAY     ? &conc[u[i].msg]
                           : u[i].kind == USE_FANIN ? &fanin[u[i].msg]
                                                    : &duplex[u[i].msg];
            if (c > *into)
                *into = c;
        }
    }
    free(u);
    free(e);
    free(cum);
    free(opn);
    return 0;
}

int ct_model_run_layers(const ct_cost_table *costs, const ct_cost_table *inter,
                        const int *node_of, int n, ct_sched *const *scheds, size_t elem_size,
                        ct_model_result *res)
{
    res->total_us = 0;
    res->messages = 0;
    res->error[0] = 0;
    res->passes = 0;
    res->converged = 0;
    const char *bad = check_table(costs);
    const char *bad_inter = !bad && inter && node_of ? check_table(inter) : NULL;
    if (bad_inter) {
        snprintf(res->error, sizeof res->error, "inter-node %s", bad_inter);
        return -1;
    }
    if (bad || n < 1) {
        snprintf(res->error, sizeof res->error, "%s", bad ? bad : "no rank");
        return -1;
    }
    replay R = {.c = costs, .inter = node_of ? inter : NULL, .node_of = node_of, .n = n,
                .scheds = scheds, .esz = (double)elem_size, .res = res};
    if (node_of)
        for (int r = 0; r < n; r++)
            if (node_of[r] + 1 > R.nnodes)
                R.nnodes = node_of[r] + 1;
    R.track = has_contention(costs) || has_contention(R.inter) || has_stack(R.inter);
    double *levels = NULL;
    if (R.inter && !has_contention(R.inter) && R.inter->link_bucket_bytes > 0 && R.nnodes > 0) {
        levels = malloc(2 * (size_t)R.nnodes * sizeof *levels);
        if (!levels) {
            snprintf(res->error, sizeof res->error, "out of memory");
            return -1;
        }
        R.bucket_start = levels;
        R.bucket_next = levels + R.nnodes;
        for (int k = 0; k < R.nnodes; k++)
            R.bucket_start[k] = R.bucket_next[k] = R.inter->link_bucket_bytes;
    }
    int rc = replay_pass(&R, res);
    res->passes = 1;
    /* the links' steady state in a loop of calls (model.h, link bucket) */
    for (int pass = 1; !rc && levels && pass < CT_MODEL_BUCKET_PASSES; pass++) {
        double moved = 0;
        for (int k = 0; k < R.nnodes; k++) {
            double d = R.bucket_next[k] - R.bucket_start[k];
            d = d < 0 ? -d : d;
            moved = d > moved ? d : moved;
            R.bucket_start[k] = R.bucket_next[k];
        }
        if (moved < 1) /* bytes */
            break;
        rc = replay_pass(&R, res);
        res->passes++;
    }
    R.bucket_next = NULL; /* the contention passes keep the levels found */
    int bucket_passes = res->passes;
    res->converged = 1;
    if (rc || !R.track) {
        free(R.recs);
        free(levels);
        return rc;
    }
    /* Contention: replay again with the factors of the last pass's overlaps until they
     * settle (model.h). */
    long m = R.nrecs;
    double *conc = malloc((size_t)(m + 1) * sizeof *conc);
    double *used = malloc((size_t)(m + 1) * sizeof *used);
    double *fanin = malloc((size_t)(m + 1) * sizeof *fanin);
    double *duplex = malloc((size_t)(m + 1) * sizeof *duplex);
    double *used_fanin = malloc((size_t)(m + 1) * sizeof *used_fanin);
    double *used_duplex = malloc((size_t)(m + 1) * sizeof *used_duplex);
    double *stretch = malloc((size_t)(m + 1) * sizeof *stretch);
    res->converged = 0;
    if (!conc || !used || !fanin || !duplex || !used_fanin || !used_duplex || !stretch) {
        rc = -1;
        snprintf(res->error, sizeof res->error, "out of memory");
        goto done;
    }
    for (long i = 0; i < m; i++)
        used[i] = used_fanin[i] = stretch[i] = 1, used_duplex[i] = 0;
    R.stretch = stretch;
    R.nstretch = m;
    int damp = 0;
    double last_change = 0;
    for (int pass = 1; pass < CT_MODEL_MAX_PASSES; pass++) {
        if (R.nrecs != m || concurrency(&R, conc, fanin, duplex)) {
            rc = -1;
            snprintf(res->error, sizeof res->error, R.nrecs != m ? "model: passes differ"
                                                                  : "out of memory");
            goto done;
        }
        double change = 0; /* the largest relative change of a factor */
        for (long i = 0; i < m; i++) {
            /* damped once the changes grow: an alternation settles in between */
            double c = damp ? 0.5 * (used[i] + conc[i]) : conc[i];
            double fi = damp ? 0.5 * (used_fanin[i] + fanin[i]) : fanin[i];
            double du = damp ? 0.5 * (used_duplex[i] + duplex[i]) : duplex[i];
            const xfer_rec *r = &R.recs[i];
            double f = r->lc ? ct_contention_factor(r->lc, r->bytes, c) : 1;
            if (r->lc && r->from_node >= 0)
                f *= ct_stack_factor(r->lc, r->bytes, fi, du);
            double d = (f > stretch[i] ? f - stretch[i] : stretch[i] - f) / f;
            if (d > change)
                change = d;
            used[i] = c;
            used_fanin[i] = fi;
            used_duplex[i] = du;
            stretch[i] = f;
        }
        if (change <= CT_MODEL_FACTOR_TOLERANCE) { /* this pass ran with its own factors */
            res->converged = 1;
            break;
        }
        if (pass > 1 && change > last_change)
            damp = 1;
        last_change = change;
        if ((rc = replay_pass(&R, res)))
            goto done;
        res->passes = bucket_passes + pass;
    }
done:
    free(conc);
    free(used);
    free(fanin);
    free(duplex);
    free(used_fanin);
    free(used_duplex);
    free(stretch);
    free(R.recs);
    free(levels);
    return rc;
}

int ct_model_predict(const ct_cost_table *costs, const char *alg, const ct_params *p,
                     ct_model_result *res)
{
    return ct_model_predict_layers(costs, NULL, alg, p, res);
}

int ct_model_predict_layers(const ct_cost_table *costs, const ct_cost_table *inter,
                            const char *alg, const ct_params *p, ct_model_result *res)
{
    int n = p->size;
    res->error[0] = 0;
    if (n < 1) {
        snprintf(res->error, sizeof res->error, "no rank");
        return -1;
    }
    ct_sched *s = calloc((size_t)n, sizeof *s);
    ct_sched **ps = malloc((size_t)n * sizeof *ps);
    int rc = 0;
    if (!s || !ps) {
        snprintf(res->error, sizeof res->error, "out of memory");
        rc = -1;
        goto out;
    }
    for (int r = 0; r < n; r++) {
        ct_params q = *p;
        q.rank = r;
        /* The drop-in's default segment, for the shm algorithms and the shm intra parts of
         * hier (the others ignore it). */
        if (!q.shm_count && q.type_size)
            q.shm_count = CT_SHM_DEFAULT_BYTES / q.type_size;
        ct_sched_init(&s[r]);
        ps[r] = &s[r];
        if (ct_sched_generate(alg, &q, &s[r])) {
            snprintf(res->error, sizeof res->error,
                     "algorithm '%s' generated no schedule for rank %d of %d", alg, r, n);
            rc = -1;
            goto out;
        }
    }
    rc = ct_model_run_layers(costs, inter, p->node_of, n, ps, p->type_size, res);
out:
    if (s)
        for (int r = 0; r < n; r++)
            ct_sched_free(&s[r]);
    free(s);
    free(ps);
    return rc;
}

static int layout_ok(const int *node_of, int n)
{
    int k = 0;
    for (int r = 0; r < n; r++) {
        if (node_of[r] < 0 || node_of[r] > k)
            return 0;
        if (node_of[r] == k)
            k++;
    }
    return 1;
}

int ct_model_predict_named(const ct_cost_table *costs, const char *op, const char *alg, int n,
                           int root, long long count, int type_size, long long segsize_bytes,
                           int radix, double *total_us, double *rank_us, char *err, int errlen)
{
    return ct_model_predict_nodes_named(costs, NULL, NULL, op, alg, NULL, NULL, n, root, count,
                                        type_size, segsize_bytes, radix, total_us, rank_us,
                                        err, errlen);
}

/* A table as callers built it before the contention fields: those read as zero. */
static ct_cost_table without_contention(const ct_cost_table *c)
{
    ct_cost_table t = {0};
    memcpy(&t, c, offsetof(ct_cost_table, nconc));
    return t;
}

int ct_model_predict_nodes_named(const ct_cost_table *costs, const ct_cost_table *inter,
                                 const int *node_of, const char *op, const char *alg,
                                 const char *intra_part, const char *inter_part, int n,
                                 int root, long long count, int type_size,
                                 long long segsize_bytes, int radix, double *total_us,
                                 double *rank_us, char *err, int errlen)
{
    ct_cost_table c = {0}, x = {0};
    if (costs)
        c = without_contention(costs);
    if (inter)
        x = without_contention(inter);
    return ct_model_predict_contention_named(costs ? &c : NULL, inter ? &x : NULL, node_of, op,
                                             alg, intra_part, inter_part, n, root, count,
                                             type_size, segsize_bytes, radix, total_us, rank_us,
                                             err, errlen);
}

int ct_model_predict_contention_named(const ct_cost_table *costs, const ct_cost_table *inter,
                                      const int *node_of, const char *op, const char *alg,
                                      const char *intra_part, const char *inter_part, int n,
                                      int root, long long count, int type_size,
                                      long long segsize_bytes, int radix, double *total_us,
                                      double *rank_us, char *err, int errlen)
{
    ct_model_result res = {.rank_us = rank_us};
    int coll = ct_coll_from_name(op);
    int rc = -1;
    if (coll < 0)
        snprintf(res.error, sizeof res.error, "unknown operation '%s'", op);
    else if (n < 1 || root < 0 || root >= n || count < 0 || type_size < 1)
        snprintf(res.error, sizeof res.error, "bad call: %d ranks, root %d, count %lld", n,
                 root, count);
    else if (node_of && !layout_ok(node_of, n))
        snprintf(res.error, sizeof res.error,
                 "node layout: nodes must be numbered 0, 1, ... by first appearance");
    else {
        const ct_registry_entry *e = ct_registry_find((ct_coll)coll, alg);
        const char *ip = NULL, *xp = NULL;
        unsigned pf;
        if (e && (e->info.flags & CT_ALG_HIERARCHICAL) &&
            ct_hier_parts((ct_coll)coll, intra_part, inter_part, &ip, &xp, &pf, res.error,
                          sizeof res.error)) {
            *total_us = 0;
            if (err && errlen > 0)
                snprintf(err, (size_t)errlen, "%s", res.error);
            return -1;
        }
        if (e && segsize_bytes < 0) /* the algorithm's default, as the library runs it */
            segsize_bytes = e->info.default_segsize;
        if (e && !(e->info.flags & CT_ALG_SEGMENTABLE))
            segsize_bytes = 0;
        ct_params p = {.coll = coll, .size = n, .root = root, .count = (size_t)count,
                       .type_size = (size_t)type_size, .radix = radix > 1 ? radix : 4,
                       .commutative = 1,
                       .segcount = segsize_bytes > 0
                                       ? ct_segcount_for(segsize_bytes, (size_t)type_size)
                                       : 0,
                       .node_of = node_of, .layout_id = node_of ? 1 : 0, .intra = ip,
                       .inter = xp};
        rc = ct_model_predict_layers(costs, inter, alg, &p, &res);
    }
    *total_us = res.total_us;
    if (err && errlen > 0)
        snprintf(err, (size_t)errlen, "%s", res.error);
    return rc;
}
