#include "common.h"

#include <stdlib.h>

static int vto_real(int v, int top, int size) { return (v + top) % size; }

int ct_tree_build(ct_tree *t, ct_tree_kind kind, int radix, int size, int rank, int top)
{
    int v = (rank - top + size) % size;
    t->parent = -1;
    t->nchildren = 0;
    t->children = NULL;
    int maxc;
    switch (kind) {
    case CT_TREE_FLAT:
        maxc = v == 0 ? size - 1 : 0;
        break;
    case CT_TREE_CHAIN:
        maxc = 1;
        break;
    case CT_TREE_BINARY:
    case CT_TREE_SPLIT:
        maxc = 2;
        break;
    default:
        maxc = 64 * (radix > 1 ? radix : 2);
        break;
    }
    if (maxc > 0) {
        t->children = malloc(sizeof(int) * (size_t)maxc);
        if (!t->children)
            return -1;
    }
    int pv = -1;
    switch (kind) {
    case CT_TREE_FLAT:
        if (v != 0)
            pv = 0;
        else
            for (int c = 1; c < size; c++)
                t->children[t->nchildren++] = c;
        break;
    case CT_TREE_CHAIN:
        if (v > 0)
            pv = v - 1;
        if (v + 1 < size)
            t->children[t->nchildren++] = v + 1;
        break;
    case CT_TREE_BINARY:
        if (v > 0)
            pv = (v - 1) / 2;
        for (int c = 2 * v + 1; c <= 2 * v + 2; c++)
            if (c < size)
                t->children[t->nchildren++] = c;
        break;
    case CT_TREE_SPLIT: {
        /* Walk down from the root's interval [0, size) to v's. */
        int lo = 0, hi = size;
        while (lo != v) {
            int mid = lo + 1 + (hi - lo) / 2; /* left part gets ceil((len-1)/2) */
            pv = lo;
            if (v < mid) {
                lo = lo + 1;
                hi = mid;
            } else {
                lo = mid;
            }
        }
        int mid = lo + 1 + (hi - lo) / 2;
        if (lo + 1 < hi)
            t->children[t->nchildren++] = lo + 1;
        if (mid < hi)
            t->children[t->nchildren++] = mid;
        break;
    }
    case CT_TREE_KNOMIAL: {
        long k = radix < 2 ? 2 : radix;
        /* The lowest nonzero base-k digit of v tells its parent; children sit
         * at every lower digit position. */
        long place = 1;
        while (place < size) {
            long digit = (v / place) % k;
            if (digit != 0) {
                pv = (int)(v - digit * place);
                break;
            }
            place *= k;
        }
        for (long m = 1; m < place && m < size; m *= k)
            for (long j = 1; j < k; j++) {
                long c = v + j * m;
                if (c < size)
                    t->children[t->nchildren++] = (int)c;
            }
        break;
    }
    }
    t->parent = pv < 0 ? -1 : vto_real(pv, top, size);
    for (int i = 0; i < t->nchildren; i++)
        t->children[i] = vto_real(t->children[i], top, size);
    return 0;
}

void ct_tree_free(ct_tree *t)
{
    free(t->children);
    t->children = NULL;
    t->nchildren = 0;
}

size_t ct_nsegs(const ct_params *p)
{
    if (p->segcount == 0 || p->count <= p->segcount)
        return 1;
    return (p->count + p->segcount - 1) / p->segcount;
}

void ct_seg(const ct_params *p, size_t seg, size_t *off, size_t *len)
{
    if (p->segcount == 0 || p->count <= p->segcount) {
        *off = 0;
        *len = p->count;
        return;
    }
    *off = seg * p->segcount;
    size_t rest = p->count - *off;
    *len = rest < p->segcount ? rest : p->segcount;
}

int ct_tree_bcast(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top, int buf)
{
    ct_tree t;
    if (ct_tree_build(&t, kind, p->radix, p->size, p->rank, top))
        return -1;
    size_t nseg = ct_nsegs(p), off, len;
    int leaf = t.nchildren == 0;
    if (t.parent < 0 || leaf) {
        /* The root sends every segment at once, a leaf receives every one
         * at once: neither has anything to wait for between segments. */
        ct_sched_round(s);
        for (size_t g = 0; g < nseg; g++) {
            ct_seg(p, g, &off, &len);
            if (t.parent >= 0)
                ct_sched_recv(s, t.parent, buf, off, len);
            else
                for (int i = t.nchildren - 1; i >= 0; i--)
                    ct_sched_send(s, t.children[i], buf, off, len);
        }
    } else {
        for (size_t g = 0; g <= nseg; g++) {
            ct_sched_round(s);
            if (g < nseg) {
                ct_seg(p, g, &off, &len);
                ct_sched_recv(s, t.parent, buf, off, len);
            }
            if (g > 0) {
                ct_seg(p, g - 1, &off, &len);
                for (int i = t.nchildren - 1; i >= 0; i--)
                    ct_sched_send(s, t.children[i], buf, off, len);
            }
        }
    }
    ct_tree_free(&t);
    return s->error ? -1 : 0;
}

int ct_tree_reduce(ct_sched *s, const ct_params *p, ct_tree_kind kind, int top,
                   int in_buf, int out_buf)
{
    ct_tree t;
    if (ct_tree_build(&t, kind, p->radix, p->size, p->rank, top))
        return -1;
    size_t nseg = ct_nsegs(p), off, len;
    int k = t.nchildren, is_top = t.parent < 0;
    size_t n = p->count;

    if (k == 0) {
        ct_sched_round(s);
        for (size_t g = 0; g < nseg; g++) {
            ct_seg(p, g, &off, &len);
            if (is_top)
                ct_sched_copy(s, in_buf, off, out_buf, off, len);
            else
                ct_sched_send(s, t.parent, in_buf, off, len);
        }
        ct_tree_free(&t);
        return s->error ? -1 : 0;
    }

    /* Where each child's contribution lands and where the result builds up.
     * The last child is received straight into the output at the top when
     * that does not overwrite our own input. */
    int in_place_top = is_top && in_buf == out_buf;
    int last_in_out = is_top && !in_place_top;
    int nslots = last_in_out ? k - 1 : k;
    int tmp = nslots > 0 ? ct_sched_tmp(s, (size_t)nslots * n) : -1;
    int acc_buf = last_in_out ? out_buf : tmp;
    size_t acc_base = last_in_out ? 0 : (size_t)(k - 1) * n;
    int commutative_in_place = in_place_top && p->commutative;

    for (size_t g = 0; g <= nseg; g++) {
        ct_sched_round(s);
        if (g > 0 && !is_top) {
            ct_seg(p, g - 1, &off, &len);
            ct_sched_send(s, t.parent, acc_buf, acc_base + off, len);
        }
        if (g == nseg)
            break;
        ct_seg(p, g, &off, &len);
        for (int i = 0; i < k; i++) {
            if (i == k - 1)
                ct_sched_recv(s, t.children[i], acc_buf, acc_base + off, len);
            else
                ct_sched_recv(s, t.children[i], tmp, (size_t)i * n + off, len);
        }
        if (commutative_in_place) {
            /* Any order will do: fold everything straight into the output. */
            for (int i = 0; i < k - 1; i++)
                ct_sched_reduce(s, tmp, (size_t)i * n + off, out_buf, off, len);
            ct_sched_reduce(s, acc_buf, acc_base + off, out_buf, off, len);
            continue;
        }
        /* acc = x_self (op) c_0 (op) ... (op) c_{k-1}, built right to left
         * because the local reduction puts its input on the left. */
        for (int i = k - 2; i >= 0; i--)
            ct_sched_reduce(s, tmp, (size_t)i * n + off, acc_buf, acc_base + off, len);
        ct_sched_reduce(s, in_buf, off, acc_buf, acc_base + off, len);
        if (in_place_top)
            ct_sched_copy(s, acc_buf, acc_base + off, out_buf, off, len);
    }
    ct_tree_free(&t);
    return s->error ? -1 : 0;
}

int ct_reduce_over_tree(const ct_params *p, ct_sched *s, ct_tree_kind kind)
{
    int in_buf = (p->in_place && p->rank == p->root) ? CT_BUF_DST : CT_BUF_SRC;
    if (p->commutative || p->root == 0)
        return ct_tree_reduce(s, p, kind, p->root, in_buf,
                              p->rank == p->root ? CT_BUF_DST : in_buf);
    /* Rank order matters: the tree's intervals must start at rank 0, so the
     * result is built there and then handed to the root. */
    int out = p->rank == 0 ? ct_sched_tmp(s, p->count) : in_buf;
    if (ct_tree_reduce(s, p, kind, 0, in_buf, out))
        return -1;
    ct_sched_round(s);
    if (p->rank == 0)
        ct_sched_send(s, p->root, out, 0, p->count);
    else if (p->rank == p->root)
        ct_sched_recv(s, 0, CT_BUF_DST, 0, p->count);
    return s->error ? -1 : 0;
}

void ct_ring_allgather(ct_sched *s, const ct_params *p, int buf, int first)
{
    int n = p->size;
    int v = (p->rank - first + n) % n;
    int right = (p->rank + 1) % n, left = (p->rank - 1 + n) % n;
    for (int step = 0; step < n - 1; step++) {
        int sp = ((v - step) % n + n) % n;
        int rp = ((v - step - 1) % n + n) % n;
        ct_sched_round(s);
        ct_sched_send(s, right, buf, ct_part_lo(p->count, n, sp), ct_part_len(p->count, n, sp));
        ct_sched_recv(s, left, buf, ct_part_lo(p->count, n, rp), ct_part_len(p->count, n, rp));
    }
}

void ct_binomial_scatter_parts(ct_sched *s, const ct_params *p, int buf)
{
    int n = p->size;
    int v = (p->rank - p->root + n) % n;
    size_t count = p->count;
    /* Virtual rank v owns part v; it receives the parts of its binomial
     * subtree, [v, v + lowbit(v)), and passes on its children's. */
    int top = ct_pof2_floor(n);
    if (top < n)
        top *= 2;
    int span = v == 0 ? top : (v & -v);
    ct_sched_round(s);
    if (v != 0) {
        int parent = ((v - span) + p->root) % n;
        int hi = v + span < n ? v + span : n;
        size_t lo = ct_part_lo(count, n, v);
        ct_sched_recv(s, parent, buf, lo, ct_part_lo(count, n, hi) - lo);
    }
    ct_sched_round(s);
    for (int m = span / 2; m >= 1; m /= 2) {
        int c = v + m;
        if (c >= n)
            continue;
        int hi = c + m < n ? c + m : n;
        size_t lo = ct_part_lo(count, n, c);
        ct_sched_send(s, (c + p->root) % n, buf, lo, ct_part_lo(count, n, hi) - lo);
    }
}

/* Parts [first, first + cnt) modulo n, as one or two contiguous regions. */
static void parts_wrapped(ct_sched *s, int is_send, int peer, const ct_params *p, int buf,
                          int first, int cnt)
{
    int n = p->size, a = first % n, c1 = cnt < n - a ? cnt : n - a;
    size_t lo = ct_part_lo(p->count, n, a);
    size_t len = ct_part_lo(p->count, n, a + c1) - lo;
    size_t len2 = ct_part_lo(p->count, n, cnt - c1);
    if (is_send) {
        ct_sched_send(s, peer, buf, lo, len);
        ct_sched_send(s, peer, buf, 0, len2);
    } else {
        ct_sched_recv(s, peer, buf, lo, len);
        ct_sched_recv(s, peer, buf, 0, len2);
    }
}

void ct_bruck_allgather(ct_sched *s, const ct_params *p, int buf, int first)
{
    int n = p->size;
    int v = (p->rank - first + n) % n;
    for (int d = 1; d < n; d *= 2) {
        int cnt = d < n - d ? d : n - d;
        int to = ((v - d + n) % n + first) % n, from = ((v + d) % n + first) % n;
        ct_sched_round(s);
        parts_wrapped(s, 1, to, p, buf, v, cnt);
        parts_wrapped(s, 0, from, p, buf, v + d, cnt);
    }
}

int ct_rsag_real(const ct_params *p, int top, int rem, int nr)
{
    int v = nr < rem ? 2 * nr : nr + rem;
    return (v + top) % p->size;
}

void ct_rsag_range(size_t count, int pof2, int wlo, int whi, size_t *off, size_t *len)
{
    *off = ct_part_lo(count, pof2, wlo);
    *len = ct_part_lo(count, pof2, whi) - *off;
}

int ct_rsag_reduce_scatter(ct_sched *s, const ct_params *p, int top, int work, ct_rsag *st)
{
    int n = p->size;
    size_t count = p->count;
    st->pof2 = ct_pof2_floor(n);
    st->rem = n - st->pof2;
    st->vrank = (p->rank - top + n) % n;
    st->work = work;
    int v = st->vrank;
    int in_buf = p->in_place ? CT_BUF_DST : CT_BUF_SRC;

    /* Fold the ranks beyond the largest power of two: among the first 2*rem
     * virtual ranks, each odd one hands its vector to the even one below and
     * sits out, so virtual rank 0 always stays in. */
    if (v < 2 * st->rem && (v % 2) == 1) {
        st->newrank = -1;
        ct_sched_round(s);
        ct_sched_send(s, (p->rank - 1 + n) % n, in_buf, 0, count);
        return s->error ? -1 : 0;
    }
    st->newrank = v < 2 * st->rem ? v / 2 : v - st->rem;
    int tmp = ct_sched_tmp(s, count);
    ct_sched_round(s);
    if (v < 2 * st->rem)
        ct_sched_recv(s, (p->rank + 1) % n, tmp, 0, count);
    ct_sched_copy(s, in_buf, 0, work, 0, count);
    if (v < 2 * st->rem)
        ct_sched_reduce(s, tmp, 0, work, 0, count);

    int wlo = 0, whi = st->pof2;
    for (int mask = st->pof2 / 2; mask >= 1; mask /= 2) {
        int partner = ct_rsag_real(p, top, st->rem, st->newrank ^ mask);
        int mid = (wlo + whi) / 2;
        int klo, khi, slo, shi; /* kept and sent windows */
        if (st->newrank & mask) {
            klo = mid; khi = whi; slo = wlo; shi = mid;
        } else {
            klo = wlo; khi = mid; slo = mid; shi = whi;
        }
        size_t koff, klen, soff, slen;
        ct_rsag_range(count, st->pof2, klo, khi, &koff, &klen);
        ct_rsag_range(count, st->pof2, slo, shi, &soff, &slen);
        ct_sched_round(s);
        ct_sched_send(s, partner, work, soff, slen);
        ct_sched_recv(s, partner, tmp, koff, klen);
        ct_sched_reduce(s, tmp, koff, work, koff, klen);
        wlo = klo;
        whi = khi;
    }
    return s->error ? -1 : 0;
}

/* ---- Shared-memory algorithms --------------------------------------------- */

size_t ct_shm_chunks(const ct_params *p, size_t count, size_t areas, size_t *chunk,
                     size_t *nslots)
{
    *chunk = *nslots = 1;
    if (!count || !p->shm_count || p->shm_count < areas)
        return 0;
    size_t fit = p->shm_count / areas, c = p->segcount ? p->segcount : count;
    if (c > fit)
        c = fit;
    /* Steps are numbered within 24 bits, a few per chunk. */
    size_t min_chunk = count / (1u << 21) + 1;
    if (c < min_chunk)
        c = min_chunk <= fit ? min_chunk : fit;
    size_t slots = fit / c;
    *chunk = c;
    *nslots = slots > 8 ? 8 : slots;
    return (count + c - 1) / c;
}

void ct_shm_wait_others(ct_sched *s, const ct_params *p, unsigned step)
{
    for (int r = 0; r < p->size; r++)
        if (r != p->rank)
            ct_sched_wait(s, r, step);
}

/* Vectors up to this many bytes are reduced whole by every rank that needs the
 * result (one synchronisation); larger ones slice by slice (each rank reduces
 * 1/N of the vector, then the result is copied out: two). */
enum { SHM_SMALL_BYTES = 2048 };

int ct_shm_reduce(const ct_params *p, ct_sched *s, int root)
{
    int n = p->size, me = p->rank;
    size_t chunk, nslots;
    size_t nchunks = ct_shm_chunks(p, p->count, (size_t)n + 1, &chunk, &nslots);
    if (!nchunks && p->count)
        return -1; /* no segment, or one too small */
    int small = p->count * p->type_size <= SHM_SMALL_BYTES;
    int in = p->in_place ? CT_BUF_DST : CT_BUF_SRC, out = root < 0 || me == root;
    size_t result = (size_t)n * chunk;
    ct_sched_shm(s, chunk * ((size_t)n + 1));
    ct_sched_round(s);
    for (int r = 0; r < n; r++)
        ct_sched_wait(s, r, CT_STEP_PREV); /* every slot is written: nobody may still read */
    for (size_t c = 0; c < nchunks; c++) {
        size_t off = c * chunk, len = c + 1 < nchunks ? chunk : p->count - off;
        size_t lo = ct_part_lo(len, n, me), l = ct_part_len(len, n, me);
        unsigned base = 3 * (unsigned)c;
        for (int r = 0; r < n && c > 0; r++)
            ct_sched_wait(s, r, base); /* everyone is done with the last chunk */
        if (small) {
            ct_sched_copy(s, in, off, CT_BUF_SHM, (size_t)me * chunk, len);
        } else { /* only the slices the others reduce: this rank reads its own in place */
            ct_sched_copy(s, in, off, CT_BUF_SHM, (size_t)me * chunk, lo);
            ct_sched_copy(s, in, off + lo + l, CT_BUF_SHM, (size_t)me * chunk + lo + l,
                          len - lo - l);
        }
        ct_sched_signal(s, base + 1);
        for (int j = 0; j < n; j++)
            if (j != me)
                ct_sched_wait(s, j, base + 1);
        if (small) {
            if (out) { /* x_0 op (x_1 op (... op x_{N-1})): b = a op b, a on the left */
                ct_sched_copy(s, CT_BUF_SHM, (size_t)(n - 1) * chunk, CT_BUF_DST, off, len);
                for (int j = n - 2; j >= 0; j--)
                    ct_sched_reduce(s, CT_BUF_SHM, (size_t)j * chunk, CT_BUF_DST, off, len);
            }
        } else {
            /* This rank's slice, x_0 op (x_1 op ... x_{N-1}), own input read where it
             * lies; accumulated straight into the output where the output is not also
             * the input (in place, x_me would be overwritten before its turn). */
            int acc = out && !p->in_place ? CT_BUF_DST : CT_BUF_SHM;
            size_t acc_off = acc == CT_BUF_DST ? off + lo : result + lo;
            for (int j = n - 1; j >= 0 && l; j--) {
                int from = j == me ? in : CT_BUF_SHM;
                size_t from_off = j == me ? off + lo : (size_t)j * chunk + lo;
                if (j == n - 1)
                    ct_sched_copy(s, from, from_off, acc, acc_off, l);
                else
                    ct_sched_reduce(s, from, from_off, acc, acc_off, l);
            }
            if (acc == CT_BUF_DST && root < 0 && l)
                ct_sched_copy(s, CT_BUF_DST, off + lo, CT_BUF_SHM, result + lo, l);
            ct_sched_signal(s, base + 2);
            if (out) {
                for (int j = 0; j < n; j++)
                    if (j != me)
                        ct_sched_wait(s, j, base + 2);
                if (acc == CT_BUF_DST) { /* the others' slices */
                    ct_sched_copy(s, CT_BUF_SHM, result, CT_BUF_DST, off, lo);
                    ct_sched_copy(s, CT_BUF_SHM, result + lo + l, CT_BUF_DST, off + lo + l,
                                  len - lo - l);
                } else {
                    ct_sched_copy(s, CT_BUF_SHM, result, CT_BUF_DST, off, len);
                }
            }
        }
        ct_sched_signal(s, base + 3);
    }
    ct_sched_signal(s, CT_STEP_DONE);
    return s->error ? -1 : 0;
}
