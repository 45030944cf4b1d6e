/*
 * Schedule checks of the v-variants, reduce-scatters and scans without MPI:
 * every algorithm of those operations in the registry, N in {1, 2, 3, 5, 8,
 * 13}, every N up to 17 and 31..33, every root, even blocks (counts NULL, as the bench and the
 * model use them), uneven counts with zeros on some ranks, displacements out
 * of rank order with gaps, one rank alone holding data, in place where MPI
 * allows it, and a commutative and a non-commutative operation. The simulator
 * replays all ranks' schedules together (unmatched or mis-sized messages and
 * deadlocks fail) and every element of every output buffer is compared with
 * the expected one, gaps included (they must stay untouched).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/registry.h"
#include "sched/sim.h"

/* An element is an affine map x -> a*x + b: composition is associative but not
 * commutative, so a reduction out of rank order shows. */
typedef struct elem {
    uint32_t a, b;
} elem;

static elem compose(elem f, elem g) { return (elem){f.a * g.a, f.a * g.b + f.b}; }

static void reduce_affine(const void *in, void *inout, size_t n)
{
    const elem *x = in;
    elem *y = inout;
    for (size_t i = 0; i < n; i++)
        y[i] = compose(x[i], y[i]);
}

static void reduce_sum(const void *in, void *inout, size_t n)
{
    const elem *x = in;
    elem *y = inout;
    for (size_t i = 0; i < n; i++) {
        y[i].a += x[i].a;
        y[i].b += x[i].b;
    }
}

static elem op_apply(int commutative, elem a, elem b)
{
    return commutative ? (elem){a.a + b.a, a.b + b.b} : compose(a, b);
}

/* Rank r's element i (for alltoallv: of its block for rank j, j folded in). */
static elem input(int r, size_t i) { return (elem){(uint32_t)(r * 7 + i * 3) | 1u, (uint32_t)(r * 131 + i)}; }
static elem input_to(int r, int j, size_t i) { return input(r, i + (size_t)j * 1000); }
static const elem SENTINEL = {0xdeadbeefu, 0xfeedfaceu};

static int failures, cases;

#define MAXN 33

/* The blocks of one case: counts and displacements (NULL: even blocks). */
typedef enum { EVEN, UNEVEN, ONE_RANK } pattern;
static const char *const pattern_names[] = {"even", "uneven", "one-rank"};

typedef struct vcase {
    const ct_algorithm_info *info;
    int n, root, in_place, commutative;
    pattern pat;
    size_t count; /* even blocks */
    /* counts / displs as every rank sees them (alltoallv: per rank) */
    size_t counts[MAXN][MAXN], displs[MAXN][MAXN];
    size_t rcounts[MAXN][MAXN], rdispls[MAXN][MAXN];
} vcase;

#define FAIL(c, ...)                                                                           \
    do {                                                                                       \
        if (failures++ < 25) {                                                                 \
            fprintf(stderr, "FAIL %s/%s N=%d root=%d %s count=%zu inplace=%d comm=%d: ",       \
                    ct_coll_name((c)->info->coll), (c)->info->name, (c)->n, (c)->root,         \
                    pattern_names[(c)->pat], (c)->count, (c)->in_place, (c)->commutative);     \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

static size_t block_count(const vcase *c, int r, int i) { return c->pat == EVEN ? c->count : c->counts[r][i]; }
static size_t block_displ(const vcase *c, int r, int i) { return c->pat == EVEN ? (size_t)i * c->count : c->displs[r][i]; }
static size_t rblock_count(const vcase *c, int r, int i) { return c->pat == EVEN ? c->count : c->rcounts[r][i]; }
static size_t rblock_displ(const vcase *c, int r, int i) { return c->pat == EVEN ? (size_t)i * c->count : c->rdispls[r][i]; }

static int is_reduce_scatter(ct_coll k) { return k == CT_REDUCE_SCATTER || k == CT_REDUCE_SCATTER_BLOCK; }

/* Counts with zeros on some ranks and displacements in reverse rank order with
 * gaps; for the reduce-scatters the displacements are the prefix sums. */
static void make_blocks(vcase *c)
{
    int n = c->n;
    ct_coll k = c->info->coll;
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < n; i++) {
            size_t v;
            if (c->pat == ONE_RANK)
                v = i == n / 2 ? 5 : 0;
            else if (k == CT_ALLTOALLV) /* what r sends to i */
                v = (r + 2 * i) % 3 == 1 ? 0 : 1 + (size_t)(r * 3 + i * 5) % 6;
            else
                v = i % 3 == 1 ? 0 : 1 + (size_t)(i * 5) % 6;
            c->counts[r][i] = v;
        }
    }
    for (int r = 0; r < n; r++)
        for (int i = 0; i < n; i++)
            c->rcounts[r][i] = c->counts[i][r]; /* what r receives from i */
    for (int r = 0; r < n; r++) {
        size_t off = 0, roff = 1;
        if (is_reduce_scatter(k)) {
            for (int i = 0; i < n; i++) {
                c->displs[r][i] = off;
                off += c->counts[r][i];
            }
            continue;
        }
        off = 1;
        for (int i = n - 1; i >= 0; i--) {
            c->displs[r][i] = off;
            off += c->counts[r][i] + 2;
            c->rdispls[r][i] = roff;
            roff += c->rcounts[r][i] + 3;
        }
    }
}

static size_t extent_of(const vcase *c, int r, int recv)
{
    size_t e = 0;
    for (int i = 0; i < c->n; i++) {
        size_t end = recv ? rblock_displ(c, r, i) + rblock_count(c, r, i)
                          : block_displ(c, r, i) + block_count(c, r, i);
        if (end > e)
            e = end;
    }
    return e;
}

static int has_in_place(ct_coll k, int rank, int root)
{
    switch (k) {
    case CT_ALLGATHERV:
    case CT_REDUCE_SCATTER:
    case CT_REDUCE_SCATTER_BLOCK:
    case CT_SCAN:
    case CT_EXSCAN:
        return 1;
    case CT_GATHERV:
    case CT_SCATTERV:
        return rank == root;
    default:
        return 0;
    }
}

/* The reduction of rank lo..hi-1's element i of the whole vector. */
static elem reduced(const vcase *c, int lo, int hi, size_t i)
{
    elem acc = input(hi - 1, i);
    for (int q = hi - 2; q >= lo; q--)
        acc = op_apply(c->commutative, input(q, i), acc);
    return acc;
}

static void run_case(vcase *c)
{
    int n = c->n;
    ct_coll k = c->info->coll;
    cases++;
    size_t src_n = 1, dst_n = 1;
    /* Per-rank buffer sizes; the simulator takes the largest. */
    for (int r = 0; r < n; r++) {
        size_t s = 0, d = 0, own = block_count(c, r, r);
        switch (k) {
        case CT_ALLGATHERV:
            s = own;
            d = extent_of(c, r, 0);
            break;
        case CT_GATHERV:
            s = own;
            d = r == c->root ? extent_of(c, r, 0) : 0;
            break;
        case CT_SCATTERV:
            s = r == c->root ? extent_of(c, r, 0) : 0;
            d = own;
            break;
        case CT_ALLTOALLV:
            s = extent_of(c, r, 0);
            d = extent_of(c, r, 1);
            break;
        case CT_REDUCE_SCATTER:
        case CT_REDUCE_SCATTER_BLOCK:
            s = extent_of(c, r, 0);
            d = c->in_place ? s : own;
            break;
        default:
            s = d = c->count;
            break;
        }
        if (s > src_n)
            src_n = s;
        if (d > dst_n)
            dst_n = d;
    }
    elem *src[MAXN], *dst[MAXN], *want[MAXN];
    ct_sched scheds[MAXN];
    ct_sched *sp[MAXN];
    int bad = 0;
    for (int r = 0; r < n; r++) {
        int ip = c->in_place && has_in_place(k, r, c->root);
        src[r] = malloc(src_n * sizeof(elem));
        dst[r] = malloc(dst_n * sizeof(elem));
        want[r] = malloc(dst_n * sizeof(elem));
        for (size_t i = 0; i < src_n; i++)
            src[r][i] = SENTINEL;
        for (size_t i = 0; i < dst_n; i++)
            dst[r][i] = want[r][i] = SENTINEL;
        /* Inputs. */
        switch (k) {
        case CT_ALLGATHERV:
        case CT_GATHERV:
            for (size_t i = 0; i < block_count(c, r, r); i++) {
                if (ip)
                    dst[r][block_displ(c, r, r) + i] = input(r, i);
                else
                    src[r][i] = input(r, i);
            }
            break;
        case CT_SCATTERV:
            if (r == c->root)
                for (int j = 0; j < n; j++)
                    for (size_t i = 0; i < block_count(c, r, j); i++)
                        src[r][block_displ(c, r, j) + i] = input(j, i);
            break;
        case CT_ALLTOALLV:
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < block_count(c, r, j); i++)
                    src[r][block_displ(c, r, j) + i] = input_to(r, j, i);
            break;
        default: { /* the reductions: a whole vector */
            size_t len = is_reduce_scatter(k) ? extent_of(c, r, 0) : c->count;
            for (size_t i = 0; i < len; i++)
                (ip ? dst : src)[r][i] = input(r, i);
            break;
        }
        }
        /* Expected output. */
        memcpy(want[r], dst[r], dst_n * sizeof(elem));
        switch (k) {
        case CT_ALLGATHERV:
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < block_count(c, r, j); i++)
                    want[r][block_displ(c, r, j) + i] = input(j, i);
            break;
        case CT_GATHERV:
            if (r == c->root)
                for (int j = 0; j < n; j++)
                    for (size_t i = 0; i < block_count(c, r, j); i++)
                        want[r][block_displ(c, r, j) + i] = input(j, i);
            break;
        case CT_SCATTERV:
            if (!ip)
                for (size_t i = 0; i < block_count(c, r, r); i++)
                    want[r][i] = input(r, i);
            break;
        case CT_ALLTOALLV:
            for (int j = 0; j < n; j++)
                for (size_t i = 0; i < rblock_count(c, r, j); i++)
                    want[r][rblock_displ(c, r, j) + i] = input_to(j, r, i);
            break;
        case CT_REDUCE_SCATTER:
        case CT_REDUCE_SCATTER_BLOCK:
            for (size_t i = 0; i < block_count(c, r, r); i++)
                want[r][i] = reduced(c, 0, n, block_displ(c, r, r) + i);
            break;
        case CT_SCAN:
            for (size_t i = 0; i < c->count; i++)
                want[r][i] = reduced(c, 0, r + 1, i);
            break;
        case CT_EXSCAN:
            if (r > 0)
                for (size_t i = 0; i < c->count; i++)
                    want[r][i] = reduced(c, 0, r, i);
            break;
        default:
            break;
        }
        if (ip && k != CT_SCATTERV) { /* scatterv in place: the root's DST stays unwritten */
            free(src[r]);
            src[r] = NULL; /* in place: SRC must not be read */
        }
        ct_params p;
        memset(&p, 0, sizeof p);
        p.coll = (int)k;
        p.size = n;
        p.rank = r;
        p.root = c->root;
        p.count = c->count;
        p.type_size = sizeof(elem);
        p.radix = 2 + (n % 3); /* alltoallv linear's window: 2, 3 or 4 */
        p.commutative = c->commutative;
        p.in_place = ip;
        if (c->pat != EVEN && k != CT_REDUCE_SCATTER_BLOCK && k != CT_SCAN && k != CT_EXSCAN) {
            p.counts = c->counts[r];
            p.displs = c->displs[r];
            if (k == CT_ALLTOALLV) {
                p.rcounts = c->rcounts[r];
                p.rdispls = c->rdispls[r];
            }
        }
        ct_sched_init(&scheds[r]);
        sp[r] = &scheds[r];
        if (ct_sched_generate(c->info->name, &p, &scheds[r])) {
            FAIL(c, "rank %d: no schedule", r);
            bad = 1;
        }
    }
    ct_sim_result res;
    if (!bad && ct_sim_run(n, sp, (void *const *)src, (void *const *)dst, src_n, dst_n,
                           sizeof(elem), c->commutative ? reduce_sum : reduce_affine, &res)) {
        FAIL(c, "simulator: %s", res.error);
        bad = 1;
    }
    for (int r = 0; r < n && !bad; r++) {
        for (size_t i = 0; i < dst_n; i++) {
            if (dst[r][i].a != want[r][i].a || dst[r][i].b != want[r][i].b) {
                FAIL(c, "rank %d element %zu: got (%u,%u) want (%u,%u)", r, i, dst[r][i].a,
                     dst[r][i].b, want[r][i].a, want[r][i].b);
                bad = 1;
                break;
            }
        }
    }
    for (int r = 0; r < n; r++) {
        free(src[r]);
        free(dst[r]);
        free(want[r]);
        ct_sched_free(&scheds[r]);
    }
}

int main(void)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33};
    static const size_t even_counts[] = {0, 1, 7};
    static vcase c;
    int checked_ops[CT_NCOLL] = {0};
    for (int a = 0; a < ct_algorithm_count(); a++) {
        const ct_algorithm_info *info = ct_algorithm_get(a);
        if ((info->flags & CT_ALG_NATIVE) || info->coll <= CT_BARRIER)
            continue;
        checked_ops[info->coll] = 1;
        int before = failures, ncases = cases;
        ct_coll k = info->coll;
        int rooted = k == CT_GATHERV || k == CT_SCATTERV;
        int reduces = is_reduce_scatter(k) || k == CT_SCAN || k == CT_EXSCAN;
        int has_v = k != CT_REDUCE_SCATTER_BLOCK && k != CT_SCAN && k != CT_EXSCAN;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            int n = sizes[si];
            for (int root = 0; root < (rooted ? n : 1); root++) {
                for (int pat = EVEN; pat <= (has_v ? ONE_RANK : EVEN); pat++) {
                    for (size_t ci = 0; ci < (pat == EVEN ? 3u : 1u); ci++) {
                        for (int comm = 1; comm >= (reduces ? 0 : 1); comm--) {
                            if (!comm && (info->flags & CT_ALG_NEEDS_COMMUTE))
                                continue;
                            for (int ip = 0; ip <= 1; ip++) {
                                if (ip && !has_in_place(k, root, root))
                                    continue;
                                memset(&c, 0, sizeof c);
                                c.info = info;
                                c.n = n;
                                c.root = root;
                                c.pat = (pattern)pat;
                                c.count = pat == EVEN ? even_counts[ci] : 0;
                                c.commutative = comm;
                                c.in_place = ip;
                                if (pat != EVEN)
                                    make_blocks(&c);
                                run_case(&c);
                            }
                        }
                    }
                }
            }
        }
        printf("%-20s %-20s %6d cases %s\n", ct_coll_name(k), info->name, cases - ncases,
               failures == before ? "ok" : "FAILED");
    }
    /* Every new operation has at least one algorithm under test. */
    for (int k = CT_BARRIER + 1; k < CT_NCOLL; k++)
        if (!checked_ops[k]) {
            fprintf(stderr, "FAIL %s: no algorithm in the registry\n", ct_coll_name((ct_coll)k));
            failures++;
        }
    printf("%d cases, %d failures\n", cases, failures);
    return failures ? 1 : 0;
}
