/*
 * Schedule checks without MPI: for every algorithm of the registry, every N
 * from 1 to 64 and several roots, counts, segment sizes and radices, the
 * schedules of all ranks are replayed together by the simulator, which fails
 * on any unmatched or mis-sized message and on any deadlock (sends complete
 * only against a posted receive). The data that comes out is compared with
 * the expected result, with a commutative and a non-commutative operation.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/registry.h"
#include "sched/sim.h"

/* An element is an affine map x -> a*x + b; composing them is associative but
 * not commutative, which catches any reduction done out of rank order. */
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

static elem input(int r, size_t i)
{
    return (elem){(uint32_t)(r * 7 + i * 3) | 1u, (uint32_t)(r * 131 + i)};
}

static int failures, cases;
static long long sim_messages;

#define FAIL(...)                                                                              \
    do {                                                                                       \
        if (failures++ < 20) {                                                                 \
            fprintf(stderr, "FAIL %s/%s N=%d root=%d count=%zu seg=%zu radix=%d comm=%d "      \
                            "inplace=%d nodes=%s parts=%s,%s: ",                               \
                    ct_coll_name(info->coll), info->name, n, root, count, segcount, radix,     \
                    commutative, in_place, cur_layout, cur_intra ? cur_intra : "-",            \
                    cur_inter ? cur_inter : "-");                                              \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

static int rooted(ct_coll c)
{
    return c == CT_BCAST || c == CT_REDUCE || c == CT_SCATTER || c == CT_GATHER;
}

/* Which collectives have an MPI_IN_PLACE form. */
static int has_in_place(ct_coll c)
{
    return c == CT_REDUCE || c == CT_ALLREDUCE || c == CT_SCATTER || c == CT_GATHER ||
           c == CT_ALLGATHER;
}

static elem *filled(size_t n, int r, size_t first)
{
    elem *b = calloc(n ? n : 1, sizeof(elem));
    for (size_t i = 0; i < n && r >= 0; i++)
        b[i] = input(r, first + i);
    return b;
}

/* Rank r's buffers and the result it must end with, per the conventions of
 * sched.h. src_n / dst_n are the buffer sizes in elements. */
static void setup_rank(ct_coll c, int n, int r, int root, size_t count, int commutative,
                       int in_place, void **src, void **dst, elem **expect, size_t *src_n,
                       size_t *dst_n)
{
    size_t all = (size_t)n * count;
    *src = *dst = NULL;
    *expect = NULL;
    switch (c) {
    case CT_BCAST:
        *dst_n = count;
        *dst = r == root ? filled(count, root, 0) : filled(count, -1, 0);
        *expect = filled(count, root, 0);
        break;
    case CT_REDUCE:
    case CT_ALLREDUCE: {
        int has_out = c == CT_ALLREDUCE || r == root;
        *src_n = *dst_n = count;
        if (in_place)
            *dst = filled(count, r, 0);
        else {
            *src = filled(count, r, 0);
            if (has_out)
                *dst = filled(count, -1, 0);
        }
        if (has_out) {
            *expect = filled(count, -1, 0);
            for (size_t i = 0; i < count; i++) {
                elem acc = input(n - 1, i);
                for (int q = n - 2; q >= 0; q--)
                    acc = commutative ? (elem){acc.a + input(q, i).a, acc.b + input(q, i).b}
                                      : compose(input(q, i), acc);
                (*expect)[i] = acc;
            }
        }
        break;
    }
    case CT_SCATTER:
        *src_n = all;
        *dst_n = count;
        if (r == root)
            *src = filled(all, root, 0);
        if (!in_place) {
            *dst = filled(count, -1, 0);
            *expect = filled(count, root, (size_t)r * count);
        }
        break;
    case CT_GATHER:
    case CT_ALLGATHER: {
        int has_out = c == CT_ALLGATHER || r == root;
        *src_n = count;
        *dst_n = all;
        if (!in_place)
            *src = filled(count, r, 0);
        if (has_out) {
            *dst = filled(all, -1, 0);
            if (in_place)
                for (size_t i = 0; i < count; i++)
                    ((elem *)*dst)[(size_t)r * count + i] = input(r, i);
            *expect = filled(all, -1, 0);
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < count; i++)
                    (*expect)[(size_t)q * count + i] = input(q, i);
        }
        break;
    }
    case CT_ALLTOALL:
        *src_n = *dst_n = all;
        *src = filled(all, r, 0);
        *dst = filled(all, -1, 0);
        *expect = filled(all, -1, 0);
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < count; i++)
                (*expect)[(size_t)q * count + i] = input(q, (size_t)r * count + i);
        break;
    default: /* barrier: no data */
        *src_n = *dst_n = 0;
        break;
    }
}

/* The node layout and parts of the hierarchical cases (NULL: one node, the
 * default parts), and the layout's name for messages. */
static const int *cur_nodes;
static const char *cur_intra, *cur_inter, *cur_layout = "-";
static long long inter_checked;

static int ceil_log2(int n)
{
    int d = 0;
    while ((1 << d) < n)
        d++;
    return d;
}

/* Messages that cross nodes, by the hierarchical algorithm's design, for the
 * parts whose count is exact; -1 when not checked. */
static int tree_bcast(const char *name)
{
    static const char *const trees[] = {"binomial", "chain", "linear", "binary", "knomial",
                                        "pipeline"};
    if (!name)
        return 1;
    for (size_t i = 0; i < sizeof trees / sizeof *trees; i++)
        if (!strcmp(name, trees[i]))
            return 1;
    return 0;
}

static long expected_inter(const ct_algorithm_info *info, int nnodes, int root_node,
                           size_t segcount, size_t count, int commutative, int contiguous)
{
    const char *inter = cur_inter;
    int k = nnodes;
    long segs = segcount ? (long)((count + segcount - 1) / segcount) : 1;
    if (!commutative && !contiguous)
        return -1; /* runs as one node: everything may cross */
    switch (info->coll) {
    case CT_BCAST: /* default or named tree among the leaders: one per node reached */
        if (tree_bcast(inter))
            return segs * (k - 1);
        return -1;
    case CT_REDUCE:
        /* Rank order: a non-commutative tree reduce builds at its rank 0 and
         * hands the result to its root, one more message when that is another
         * node. */
        if (!inter || !strcmp(inter, "binomial") || !strcmp(inter, "chain"))
            return segs * (k - 1) + (!commutative && root_node != 0);
        return -1;
    case CT_ALLREDUCE:
        if (inter && !strcmp(inter, "reduce_bcast"))
            return 2 * segs * (k - 1);
        return -1;
    case CT_ALLGATHER:
        if (inter && !strcmp(inter, "ring"))
            return (long)k * (k - 1);
        return -1;
    case CT_BARRIER:
        if (!inter || !strcmp(inter, "dissemination"))
            return (long)k * ceil_log2(k);
        return -1;
    default:
        return -1;
    }
}

static void run_case(const ct_algorithm_info *info, int n, int root, size_t count,
                     size_t segcount, int radix, int commutative, int in_place)
{
    ct_coll c = info->coll;
    ct_sched *scheds = calloc((size_t)n, sizeof *scheds);
    ct_sched **sp = calloc((size_t)n, sizeof *sp);
    void **src = calloc((size_t)n, sizeof *src), **dst = calloc((size_t)n, sizeof *dst);
    elem **expect = calloc((size_t)n, sizeof *expect);
    size_t src_n = 0, dst_n = 0;
    cases++;
    /* A hierarchical algorithm with a shared-memory intra part: each node has its own
     * segment, so a non-commutative reduction on a layout whose nodes are not
     * intervals of ranks (which must run its intra part over all ranks) is refused. */
    int intra_shm = (info->flags & CT_ALG_HIERARCHICAL) && cur_intra && !strcmp(cur_intra, "shm");
    int refused = 0;
    if (intra_shm && !commutative && count > 0 && (c == CT_REDUCE || c == CT_ALLREDUCE) &&
        cur_nodes)
        for (int r = 1; r < n; r++)
            if (cur_nodes[r] < cur_nodes[r - 1])
                refused = 1;
    for (int r = 0; r < n; r++) {
        ct_params p = {.coll = c, .size = n, .rank = r, .root = root, .count = count,
                       .type_size = sizeof(elem), .segcount = segcount, .radix = radix,
                       .commutative = commutative, .node_of = cur_nodes,
                       .layout_id = cur_nodes ? 1 : 0, .intra = cur_intra,
                       .inter = cur_inter};
        /* Shared-memory algorithms: a roomy segment for odd counts, for even ones one
         * that takes several chunks (slots reused) for all but the smallest. */
        if ((info->flags & CT_ALG_SHARED_MEMORY) || intra_shm)
            p.shm_count = count % 2   ? 10000
                          : c == CT_ALLTOALL ? (size_t)n * (size_t)n * 3 + 1 /* N^2 areas */
                                             : (size_t)(n + 1) * 7 + 3;
        /* One-copy algorithms: their PULL path, and for every third count the
         * copy-through path a node without cross-memory attach takes. */
        p.cma = (info->flags & CT_ALG_ONE_COPY) && count % 3 != 0;
        /* In-place applies at the root only for the rooted collectives. */
        p.in_place = in_place && (!rooted(c) || r == root || c == CT_ALLREDUCE);
        ct_sched_init(&scheds[r]);
        sp[r] = &scheds[r];
        setup_rank(c, n, r, root, count, commutative, p.in_place, &src[r], &dst[r], &expect[r],
                   &src_n, &dst_n);
        if (ct_sched_generate(info->name, &p, &scheds[r])) {
            if (!refused)
                FAIL("generation failed on rank %d", r);
            goto out;
        }
    }
    if (refused) {
        FAIL("a shared-memory intra part accepted a non-commutative op across "
             "interleaved nodes");
        goto out;
    }
    /* A call on a segment ends with SIGNAL(DONE) on every rank, or the next call's
     * writers wait for ever (the simulator sees one call only). */
    for (int r = 0; r < n && ((info->flags & CT_ALG_SHARED_MEMORY) || intra_shm); r++) {
        const ct_sched *sr = &scheds[r];
        if (!sr->nops || sr->ops[sr->nops - 1].kind != CT_OP_SIGNAL ||
            sr->ops[sr->nops - 1].a.off != CT_STEP_DONE) {
            FAIL("rank %d does not end the call with SIGNAL(DONE)", r);
            goto out;
        }
    }
    ct_sim_result res;
    if (ct_sim_run_nodes(n, cur_nodes, sp, src, dst, src_n, dst_n, sizeof(elem),
                         commutative ? reduce_sum : reduce_affine, &res)) {
        FAIL("%s", res.error);
        goto out;
    }
    sim_messages += res.messages;
    for (int r = 0; r < n; r++) {
        if (expect[r] && memcmp(dst[r], expect[r], dst_n * sizeof(elem)) != 0) {
            FAIL("wrong result on rank %d", r);
            goto out;
        }
    }
    for (int r = 0; r < n; r++) {
        if (!src[r])
            continue;
        elem *orig = filled(src_n, r == root || c != CT_SCATTER ? r : -1, 0);
        int same = memcmp(src[r], orig, src_n * sizeof(elem)) == 0;
        free(orig);
        if (!same) {
            FAIL("rank %d's input was modified", r);
            goto out;
        }
    }
    /* Every rank must have heard from every other before finishing: the
     * whole point of a barrier, and implied by any correct all-to-all. */
    if ((c == CT_BARRIER || ((c == CT_ALLGATHER || c == CT_ALLTOALL ||
                              c == CT_ALLREDUCE) && count > 0)) &&
        !res.all_synchronized)
        FAIL("a rank finished before hearing from every other rank");
    /* Hierarchical algorithms: the messages that cross nodes, from the
     * generated schedules. */
    if ((info->flags & CT_ALG_HIERARCHICAL) && (count > 0 || c == CT_BARRIER)) {
        int nnodes = 0, contiguous = 1;
        for (int r = 0; r < n; r++) {
            int v = cur_nodes ? cur_nodes[r] : 0;
            nnodes = v + 1 > nnodes ? v + 1 : nnodes;
            if (r && v < (cur_nodes ? cur_nodes[r - 1] : 0))
                contiguous = 0;
        }
        long want = expected_inter(info, nnodes, cur_nodes ? cur_nodes[root] : 0, segcount,
                                   count, commutative, contiguous);
        long got = 0;
        for (int r = 0; r < n; r++)
            for (int i = 0; i < scheds[r].nops; i++)
                if (scheds[r].ops[i].kind == CT_OP_SEND &&
                    (cur_nodes ? cur_nodes[r] != cur_nodes[scheds[r].ops[i].peer] : 0))
                    got++;
        if (want >= 0) {
            inter_checked++;
            if (got != want)
                FAIL("%ld messages between nodes, expected %ld for %d nodes", got, want, nnodes);
        }
    }
    /* Message counts every tree broadcast must have: one message per
     * segment per non-root rank. */
    if (c == CT_BCAST && count > 0 && strncmp(info->name, "scatter_", 8) != 0 &&
        !(info->flags & CT_ALG_SHARED_MEMORY) &&
        tree_bcast(cur_intra) && tree_bcast(cur_inter)) {
        long segs = segcount ? (long)((count + segcount - 1) / segcount) : 1;
        if (res.messages != segs * (n - 1))
            FAIL("%ld messages, expected %ld segments x (N-1) = %ld", res.messages, segs,
                 segs * (n - 1));
    }
    /* An unsegmented tree scatter or gather moves each subtree's blocks in one
     * message per edge (two where the range wraps past real rank 0). */
    if ((c == CT_SCATTER || c == CT_GATHER) && count > 0 && segcount == 0 &&
        !(info->flags & CT_ALG_SHARED_MEMORY)) {
        long lo = n - 1, hi = root == 0 ? n - 1 : 2L * (n - 1);
        if (res.messages < lo || res.messages > hi)
            FAIL("%ld messages, expected N-1 = %ld (up to %ld with wrap-around)", res.messages,
                 lo, hi);
    }
out:
    for (int r = 0; r < n; r++) {
        ct_sched_free(&scheds[r]);
        free(src[r]);
        free(dst[r]);
        free(expect[r]);
    }
    free(scheds);
    free(sp);
    free(src);
    free(dst);
    free(expect);
}

/* Synthetic node layouts of n ranks, numbered by first appearance. */
enum { L_ONE_NODE, L_BLOCK2, L_BLOCK3, L_ROUND2, L_ROUND3, L_UNEVEN, L_SCRAMBLED,
       L_ONE_PER_NODE, NLAYOUTS };
static const char *const layout_names[NLAYOUTS] = {
    "single node", "block 2/node", "block 3/node", "round-robin 2 nodes",
    "round-robin 3 nodes", "uneven 3+2+2...", "scrambled", "one per node"};

static const int *make_layout(int kind, int n, int *map)
{
    int raw[256];
    for (int r = 0; r < n; r++) {
        switch (kind) {
        case L_BLOCK2: raw[r] = r / 2; break;
        case L_BLOCK3: raw[r] = r / 3; break;
        case L_ROUND2: raw[r] = r % 2; break;
        case L_ROUND3: raw[r] = r % 3; break;
        case L_UNEVEN: { /* nodes of 3, 2, 2, 3, 2, 2, ... ranks */
            int k = 0, left = r;
            while (left >= (k % 3 == 0 ? 3 : 2))
                left -= (k++ % 3 == 0 ? 3 : 2);
            raw[r] = k;
            break;
        }
        case L_SCRAMBLED: raw[r] = (r * 5 + r / 3) % 4; break;
        case L_ONE_PER_NODE: raw[r] = r; break;
        default: return NULL;
        }
    }
    /* Renumber by first appearance. */
    int seen[256], next = 0;
    for (int r = 0; r < n; r++)
        seen[r] = -1;
    for (int r = 0; r < n; r++) {
        if (seen[raw[r]] < 0)
            seen[raw[r]] = next++;
        map[r] = seen[raw[r]];
    }
    return map;
}

/* Parts to try per hierarchical collective, beside the defaults (NULL). */
static const char *const hier_parts[][8][2] = {
    [CT_BCAST] = {{NULL, NULL}, {"chain", "linear"}, {"pipeline", "scatter_allgather"},
                  {"knomial", "binary"}, {"scatter_bruck", "chain"}, {"shm", NULL}},
    [CT_REDUCE] = {{NULL, NULL}, {"linear", "chain"}, {"chain", "rabenseifner"},
                   {"binary", "linear"}, {"rabenseifner", "binomial"}, {"shm", NULL}},
    [CT_ALLREDUCE] = {{NULL, NULL}, {"linear", "ring"}, {"chain", "rabenseifner"},
                      {"binary", "reduce_bcast"}, {"binomial", "allgather_reduce"},
                      {"shm", NULL}},
    [CT_ALLGATHER] = {{NULL, NULL}, {"linear", "ring"}, {"chain", "recursive_doubling"},
                      {"binary", "gather_bcast"}, {"shm", "ring"}},
    [CT_BARRIER] = {{NULL, NULL}, {"linear", "ring"}, {"chain", "tournament"},
                    {"binary", "binomial"}, {"shm", NULL}},
};

static int part_needs_commute(const ct_algorithm_info *info, const char *intra,
                              const char *inter)
{
    const char *names[2] = {intra, inter};
    ct_coll colls[2] = {info->coll == CT_ALLREDUCE ? CT_REDUCE : info->coll, info->coll};
    for (int i = 0; i < 2; i++) {
        const ct_algorithm_info *a = names[i] ? ct_algorithm_find(colls[i], names[i]) : NULL;
        if (a && (a->flags & CT_ALG_NEEDS_COMMUTE))
            return 1;
    }
    return 0;
}

/* Every hierarchical algorithm on every synthetic layout, with several parts,
 * roots, counts, segment sizes, operations and in place; data checked by the
 * simulator, messages between nodes counted from the schedules. */
static void hier_cases(int max_n)
{
    static const size_t counts[] = {0, 1, 7, 33};
    static const size_t segs[] = {0, 4};
    int map[256];
    for (int i = 0; i < ct_algorithm_count(); i++) {
        const ct_algorithm_info *info = ct_algorithm_get(i);
        if (!(info->flags & CT_ALG_HIERARCHICAL))
            continue;
        int before = failures, ncases = cases;
        long long checked = inter_checked;
        for (int pi = 0; pi < 8; pi++) {
            const char *intra = hier_parts[info->coll][pi][0];
            const char *inter = hier_parts[info->coll][pi][1];
            if (pi > 0 && !intra)
                break;
            cur_intra = intra;
            cur_inter = inter;
            int needs_commute = part_needs_commute(info, intra, inter);
            for (int lk = 0; lk < NLAYOUTS; lk++) {
                cur_layout = layout_names[lk];
                /* The other parts on fewer N: CI time. */
                for (int n = 1; n <= (pi ? (max_n < 11 ? max_n : 11) : max_n); n++) {
                    cur_nodes = make_layout(lk, n, map);
                    int roots[3] = {0, n - 1, n / 2}, nroots = rooted(info->coll) ? 3 : 1;
                    for (int ri = 0; ri < nroots; ri++) {
                        if (ri > 0 && (roots[ri] == roots[0] || roots[ri] == roots[ri - 1]))
                            continue;
                        for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                            if (info->coll == CT_BARRIER && ci > 0)
                                break;
                            for (size_t si = 0; si < sizeof segs / sizeof *segs; si++) {
                                if (si > 0 && !(info->flags & CT_ALG_SEGMENTABLE))
                                    break;
                                for (int comm = 1; comm >= 0; comm--) {
                                    int reduces = info->coll == CT_REDUCE ||
                                                  info->coll == CT_ALLREDUCE;
                                    if (!comm && (!reduces || needs_commute))
                                        continue;
                                    for (int ip = 0; ip <= has_in_place(info->coll); ip++)
                                        run_case(info, n, roots[ri], counts[ci], segs[si], 4,
                                                 comm, ip);
                                }
                            }
                        }
                    }
                }
            }
        }
        printf("%-10s %-20s %6d cases %s (synthetic node layouts; %lld inter-node counts "
               "checked)\n", ct_coll_name(info->coll), info->name, cases - ncases,
               failures == before ? "ok" : "FAILED", inter_checked - checked);
    }
    cur_nodes = NULL;
    cur_intra = cur_inter = NULL;
    cur_layout = "-";
}

int main(void)
{
    /* CT_TEST_SCHED_MAX_N lowers the largest N (the sanitizer builds, which run
     * at -O0 and many times slower, use it). */
    const char *env_n = getenv("CT_TEST_SCHED_MAX_N");
    int max_n = env_n && atoi(env_n) > 0 && atoi(env_n) < 64 ? atoi(env_n) : 64;
    static const size_t counts[] = {0, 1, 7, 33, 100};
    static const size_t segs[] = {0, 1, 4, 50};
    for (int i = 0; i < ct_algorithm_count(); i++) {
        const ct_algorithm_info *info = ct_algorithm_get(i);
        if ((info->flags & CT_ALG_NATIVE) || info->coll > CT_BARRIER)
            continue; /* the v-variants, reduce-scatters and scans: test_sched_v.c */
        int before = failures, ncases = cases;
        for (int n = 1; n <= max_n; n++) {
            int roots[4] = {0, n - 1, n / 2, 1 % n}, nroots = rooted(info->coll) ? 4 : 1;
            for (int ri = 0; ri < nroots; ri++) {
                if (ri > 0 && (roots[ri] == roots[0] || roots[ri] == roots[ri - 1]))
                    continue;
                for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                    if (info->coll == CT_BARRIER && ci > 0)
                        break; /* a barrier moves no data */
                    for (size_t si = 0; si < sizeof segs / sizeof segs[0]; si++) {
                        if (si > 0 && !(info->flags & CT_ALG_SEGMENTABLE))
                            break;
                        if (n > 20 && si > 1 && ci != 3)
                            continue; /* keep the big-N sweep quick */
                        if (n > 20 && si == 1 && ci > 2 && info->coll >= CT_SCATTER)
                            continue; /* one-element segments of N blocks: N^2 messages */
                        for (int radix = 2; radix <= 4; radix++) {
                            if (radix != 4 && !(info->flags & CT_ALG_TAKES_RADIX))
                                continue;
                            for (int comm = 1; comm >= 0; comm--) {
                                int reduces = info->coll == CT_REDUCE ||
                                              info->coll == CT_ALLREDUCE;
                                if (!comm && (!reduces || (info->flags & CT_ALG_NEEDS_COMMUTE)))
                                    continue;
                                for (int ip = 0; ip <= has_in_place(info->coll); ip++)
                                    run_case(info, n, roots[ri], counts[ci], segs[si], radix,
                                             comm, ip);
                            }
                        }
                    }
                }
            }
        }
        printf("%-10s %-20s %6d cases %s\n", ct_coll_name(info->coll), info->name,
               cases - ncases, failures == before ? "ok" : "FAILED");
    }

    hier_cases(max_n < 16 ? max_n : 16);

    /* The exact counts the foundation issue names. */
    const ct_algorithm_info *binomial = ct_algorithm_find(CT_BCAST, "binomial");
    const ct_algorithm_info *chain = ct_algorithm_find(CT_BCAST, "chain");
    for (int n = 1; n <= max_n; n++) {
        for (int k = 1; k <= 5; k++) {
            ct_sched *sc = calloc((size_t)n, sizeof *sc);
            ct_sched **sp = calloc((size_t)n, sizeof *sp);
            void **bufs = calloc((size_t)n, sizeof *bufs);
            for (int pass = 0; pass < 2; pass++) {
                if (!pass && k > 1)
                    continue; /* binomial: once per N is enough */
                const ct_algorithm_info *a = pass ? chain : binomial;
                size_t count = 12 * (size_t)k, segcount = pass ? 12 : 0;
                for (int r = 0; r < n; r++) {
                    ct_params p = {.coll = CT_BCAST, .size = n, .rank = r, .root = n / 3,
                                   .count = count, .type_size = 1, .segcount = segcount,
                                   .radix = 2, .commutative = 1};
                    ct_sched_init(&sc[r]);
                    sp[r] = &sc[r];
                    bufs[r] = calloc(count, 1);
                    ct_sched_generate(a->name, &p, &sc[r]);
                }
                ct_sim_result res;
                long want = pass ? (long)k * (n - 1) : n - 1;
                if (ct_sim_run(n, sp, bufs, bufs, count, count, 1, reduce_sum, &res) ||
                    res.messages != want) {
                    fprintf(stderr, "FAIL %s N=%d k=%d: %ld messages, want %ld %s\n", a->name, n,
                            k, res.messages, want, res.error);
                    failures++;
                }
                for (int r = 0; r < n; r++) {
                    ct_sched_free(&sc[r]);
                    free(bufs[r]);
                }
            }
            free(sc);
            free(sp);
            free(bufs);
        }
    }
    printf("%d cases, %lld messages simulated, %d failures\n", cases, sim_messages, failures);
    return failures ? 1 : 0;
}
