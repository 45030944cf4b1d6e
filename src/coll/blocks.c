/*
 * Scatter and gather of per-rank blocks over any tree whose subtrees are
 * intervals of virtual ranks (flat, chain, split binary, k-nomial), with
 * segmentation. Shared by the scatter and gather algorithms and by the
 * composed allgather / alltoall ones.
 *
 * Everything is computed in virtual coordinates: virtual rank v = (rank - top)
 * mod N, and virtual element x belongs to virtual block x / count. The top
 * keeps its data in real rank order, where the virtual blocks wrap around at
 * W = N - top; every transfer is cut into pieces (segments of segcount from
 * the start of the range, also cut at W), which both sides of a transfer
 * compute alike, so every piece is one contiguous region at both ends.
 */
#include <stdlib.h>

#include "common.h"

typedef struct piece {
    size_t lo, hi; /* virtual elements [lo, hi) */
} piece;

/* The pieces of [lo, hi): *n of them, malloc'ed (NULL when none). */
static piece *pieces_of(const ct_params *p, int top, size_t lo, size_t hi, size_t *n)
{
    size_t seg = p->segcount ? p->segcount : (hi - lo);
    size_t wrap = (size_t)(p->size - top) * p->count; /* virtual start of real block 0 */
    size_t cap = (hi - lo + seg - 1) / seg + 1;
    piece *ps = malloc(sizeof(piece) * cap);
    *n = 0;
    if (!ps)
        return NULL;
    for (size_t a = lo; a < hi; a += seg) {
        size_t b = a + seg < hi ? a + seg : hi;
        if (top != 0 && a < wrap && wrap < b) {
            ps[(*n)++] = (piece){a, wrap};
            ps[(*n)++] = (piece){wrap, b};
        } else {
            ps[(*n)++] = (piece){a, b};
        }
    }
    return ps;
}

/* End (exclusive) of the interval of virtual ranks rooted at v. */
static int subtree_end(ct_tree_kind kind, int radix, int n, int v)
{
    int node = 0, end = n;
    while (node != v) {
        ct_tree t;
        if (ct_tree_build(&t, kind, radix, n, node, 0))
            return -1;
        int next = -1, next_end = end;
        for (int i = 0; i < t.nchildren; i++) {
            int lo = t.children[i], hi = i + 1 < t.nchildren ? t.children[i + 1] : end;
            if (lo <= v && v < hi) {
                next = lo;
                next_end = hi;
            }
        }
        ct_tree_free(&t);
        if (next < 0)
            return -1;
        node = next;
        end = next_end;
    }
    return end;
}

/* Where virtual element x sits in the top's buffer, which is in real rank order. */
static size_t real_offset(const ct_params *p, int top, size_t x)
{
    size_t b = x / p->count, real = (b + (size_t)top) % (size_t)p->size;
    return real * p->count + x % p->count;
}

/* This rank's place in the tree: virtual rank, interval, children and their
 * intervals (children sorted by virtual rank, as ct_tree_build lists them). */
typedef struct node {
    int v, end;
    ct_tree t;
    int *child_v, *child_end;
} node;

static int node_init(node *nd, const ct_params *p, ct_tree_kind kind, int top)
{
    int n = p->size;
    nd->v = (p->rank - top + n) % n;
    nd->child_v = nd->child_end = NULL;
    if (ct_tree_build(&nd->t, kind, p->radix, n, p->rank, top))
        return -1;
    nd->end = subtree_end(kind, p->radix, n, nd->v);
    int k = nd->t.nchildren;
    nd->child_v = malloc(sizeof(int) * (size_t)(k ? k : 1));
    nd->child_end = malloc(sizeof(int) * (size_t)(k ? k : 1));
    if (nd->end < 0 || !nd->child_v || !nd->child_end)
        return -1;
    for (int i = 0; i < k; i++)
        nd->child_v[i] = (nd->t.children[i] - top + n) % n;
    for (int i = 0; i < k; i++)
        nd->child_end[i] = i + 1 < k ? nd->child_v[i + 1] : nd->end;
    return 0;
}

static void node_free(node *nd)
{
    ct_tree_free(&nd->t);
    free(nd->child_v);
    free(nd->child_end);
}

/* Index of the piece of ps[0..n) that holds element x. */
static size_t piece_index(const piece *ps, size_t n, size_t x)
{
    size_t a = 0, b = n - 1; /* pieces are sorted and contiguous */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (ps[m].hi <= x)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

int ct_tree_scatter_blocks(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                           int src_buf, int dst_buf, size_t dst_off)
{
    node nd;
    size_t cnt = p->count, nin = 0;
    int rc = -1, k;
    piece *in = NULL, **out = NULL;
    size_t *nout = NULL;
    if (node_init(&nd, p, kind, top))
        goto done;
    k = nd.t.nchildren;
    size_t lo = (size_t)nd.v * cnt, hi = (size_t)nd.end * cnt;
    out = calloc((size_t)(k ? k : 1), sizeof *out);
    nout = calloc((size_t)(k ? k : 1), sizeof *nout);
    if (!out || !nout)
        goto done;
    for (int i = 0; i < k; i++)
        if (!(out[i] = pieces_of(p, top, (size_t)nd.child_v[i] * cnt,
                                 (size_t)nd.child_end[i] * cnt, &nout[i])))
            goto done;

    if (nd.t.parent < 0) {
        /* The top has everything: round g sends piece g to every child, the
         * largest subtree (the first child in a chain or tree) first. */
        size_t rounds = 0;
        for (int i = 0; i < k; i++)
            rounds = nout[i] > rounds ? nout[i] : rounds;
        ct_sched_round(s);
        if (dst_buf >= 0)
            ct_sched_copy(s, src_buf, real_offset(p, top, lo), dst_buf, dst_off, cnt);
        for (size_t g = 0; g < rounds; g++) {
            ct_sched_round(s);
            for (int i = 0; i < k; i++)
                if (g < nout[i])
                    ct_sched_send(s, nd.t.children[i], src_buf, real_offset(p, top, out[i][g].lo),
                                  out[i][g].hi - out[i][g].lo);
        }
        rc = 0;
        goto done;
    }
    if (!(in = pieces_of(p, top, lo, hi, &nin)))
        goto done;
    if (k == 0) {
        /* A leaf receives its own block straight into place. */
        ct_sched_round(s);
        for (size_t j = 0; j < nin; j++)
            ct_sched_recv(s, nd.t.parent, dst_buf, dst_off + (in[j].lo - lo),
                          in[j].hi - in[j].lo);
        rc = 0;
        goto done;
    }
    /* An inner rank stores its subtree's blocks in a temporary; piece j
     * arrives in round j, and a child's piece goes on in the round after the
     * last incoming piece it needs. */
    int tmp = ct_sched_tmp(s, hi - lo);
    size_t *sent = calloc((size_t)k, sizeof *sent);
    if (tmp < 0 || !sent) {
        free(sent);
        goto done;
    }
    size_t own_ready = piece_index(in, nin, lo + cnt - 1);
    for (size_t r = 0;; r++) {
        int more = r < nin;
        ct_sched_round(s);
        if (r < nin)
            ct_sched_recv(s, nd.t.parent, tmp, in[r].lo - lo, in[r].hi - in[r].lo);
        for (int i = 0; i < k; i++) {
            while (sent[i] < nout[i] && r > 0 &&
                   piece_index(in, nin, out[i][sent[i]].hi - 1) < r) {
                const piece *q = &out[i][sent[i]++];
                ct_sched_send(s, nd.t.children[i], tmp, q->lo - lo, q->hi - q->lo);
            }
            more |= sent[i] < nout[i];
        }
        if (r == own_ready)
            ct_sched_copy(s, tmp, 0, dst_buf, dst_off, cnt);
        if (!more)
            break;
    }
    free(sent);
    rc = 0;
done:
    if (out)
        for (int i = 0; i < nd.t.nchildren; i++)
            free(out[i]);
    free(out);
    free(nout);
    free(in);
    node_free(&nd);
    return rc || s->error ? -1 : 0;
}

int ct_tree_gather_blocks(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                          int src_buf, size_t src_off, int dst_buf)
{
    node nd;
    size_t cnt = p->count, nup = 0;
    int rc = -1, k;
    piece *up = NULL, **in = NULL;
    size_t *nin = NULL;
    if (node_init(&nd, p, kind, top))
        goto done;
    k = nd.t.nchildren;
    size_t lo = (size_t)nd.v * cnt, hi = (size_t)nd.end * cnt;
    in = calloc((size_t)(k ? k : 1), sizeof *in);
    nin = calloc((size_t)(k ? k : 1), sizeof *nin);
    if (!in || !nin)
        goto done;
    for (int i = 0; i < k; i++)
        if (!(in[i] = pieces_of(p, top, (size_t)nd.child_v[i] * cnt,
                                (size_t)nd.child_end[i] * cnt, &nin[i])))
            goto done;
    size_t rounds = 0;
    for (int i = 0; i < k; i++)
        rounds = nin[i] > rounds ? nin[i] : rounds;

    if (nd.t.parent < 0) {
        /* The top receives straight into place: round g takes piece g of
         * every child. */
        ct_sched_round(s);
        ct_sched_copy(s, src_buf, src_off, dst_buf, real_offset(p, top, lo), cnt);
        for (size_t g = 0; g < rounds; g++) {
            ct_sched_round(s);
            for (int i = 0; i < k; i++)
                if (g < nin[i])
                    ct_sched_recv(s, nd.t.children[i], dst_buf, real_offset(p, top, in[i][g].lo),
                                  in[i][g].hi - in[i][g].lo);
        }
        rc = 0;
        goto done;
    }
    if (!(up = pieces_of(p, top, lo, hi, &nup)))
        goto done;
    if (k == 0) {
        /* A leaf sends its own block from where it is. */
        ct_sched_round(s);
        for (size_t j = 0; j < nup; j++)
            ct_sched_send(s, nd.t.parent, src_buf, src_off + (up[j].lo - lo),
                          up[j].hi - up[j].lo);
        rc = 0;
        goto done;
    }
    /* An inner rank assembles its subtree in a temporary: its own block is
     * copied in round 0, piece g of each child arrives in round g; a piece
     * for the parent leaves in the round after all its elements are there. */
    int tmp = ct_sched_tmp(s, hi - lo);
    if (tmp < 0)
        goto done;
    size_t sent = 0;
    for (size_t r = 0;; r++) {
        ct_sched_round(s);
        for (int i = 0; i < k; i++)
            if (r < nin[i])
                ct_sched_recv(s, nd.t.children[i], tmp, in[i][r].lo - lo,
                              in[i][r].hi - in[i][r].lo);
        while (sent < nup && r > 0) {
            /* Ready when every element of the piece arrived before round r. */
            const piece *q = &up[sent];
            size_t ready = 1; /* the own block, copied in round 0 */
            for (int i = 0; i < k; i++) {
                size_t clo = (size_t)nd.child_v[i] * cnt, chi = (size_t)nd.child_end[i] * cnt;
                if (q->hi <= clo || q->lo >= chi)
                    continue;
                size_t last = q->hi < chi ? q->hi : chi;
                size_t g = piece_index(in[i], nin[i], last - 1) + 1;
                ready = g > ready ? g : ready;
            }
            if (ready > r)
                break;
            ct_sched_send(s, nd.t.parent, tmp, q->lo - lo, q->hi - q->lo);
            sent++;
        }
        if (r == 0)
            ct_sched_copy(s, src_buf, src_off, tmp, 0, cnt);
        if (r >= rounds && sent == nup)
            break;
    }
    rc = 0;
done:
    if (in)
        for (int i = 0; i < nd.t.nchildren; i++)
            free(in[i]);
    free(in);
    free(nin);
    free(up);
    node_free(&nd);
    return rc || s->error ? -1 : 0;
}
