/*
 * The schedule model against closed forms, without MPI. With constant costs
 * (os = 1, or = 1, g = 2, T = 10 us, immediate sends) the replay of the
 * generators' schedules must give exactly what one derives by hand:
 *   flat tree, k segments to N-1 children: the root starts a send every g,
 *     the last one at (k(N-1) - 1) g, and it lands T later;
 *   binomial tree, N = 2^d, one segment, largest subtree first: d T;
 *   chain of N ranks, k segments: (N-1) T for the first segment to reach the
 *     end, then one segment every g: (N-1) T + (k-1) g;
 * plus hand-built schedules for the rendezvous rule (data moves once the
 * receive is posted), growing costs with pending sends, the local table, and
 * a schedule that can never finish.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "colltune.h"
#include "model/model.h"

static int failures;

#define CHECK_NEAR(got, want, what, ...)                                                      \
    do {                                                                                      \
        double got_ = (got), want_ = (want);                                                  \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_))) {                                  \
            failures++;                                                                       \
            printf("FAIL " what ": got %.6f, want %.6f\n", __VA_ARGS__, got_, want_);         \
        }                                                                                     \
    } while (0)

enum { NPTS = 4 };
static const double sizes[NPTS] = {1, 1024, 1 << 20, 16 << 20};
static double os[NPTS], orr[NPTS], gap[NPTS], oneway[NPTS];
static int modes[NPTS];

static ct_cost_table constant_table(double o_s, double o_r, double g, double t, int mode)
{
    for (int i = 0; i < NPTS; i++) {
        os[i] = o_s;
        orr[i] = o_r;
        gap[i] = g;
        oneway[i] = t;
        modes[i] = mode;
    }
    return (ct_cost_table){.npoints = NPTS, .size_bytes = sizes, .os_us = os, .or_us = orr,
                           .g_us = gap, .oneway_us = oneway, .mode = modes};
}

static double predict(const ct_cost_table *c, int coll, const char *alg, int n, size_t count,
                      size_t segcount)
{
    ct_params p = {.coll = coll, .size = n, .root = 0, .count = count, .type_size = 1,
                   .segcount = segcount, .radix = 2, .commutative = 1};
    ct_model_result res = {0};
    if (ct_model_predict(c, alg, &p, &res)) {
        failures++;
        printf("FAIL %s N=%d: %s\n", alg, n, res.error);
        return -1;
    }
    return res.total_us;
}

static void closed_forms(void)
{
    const double o_s = 1, g = 2, t = 10;
    ct_cost_table c = constant_table(o_s, 1, g, t, CT_MODE_IMMEDIATE);
    const int ns[] = {2, 3, 5, 8, 13, 16};
    const size_t ks[] = {1, 3, 8};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof ks / sizeof *ks; b++) {
            int n = ns[a];
            size_t k = ks[b], seg = 100;
            double flat = predict(&c, CT_BCAST, "linear", n, k * seg, seg);
            CHECK_NEAR(flat, (double)(k * (size_t)(n - 1) - 1) * g + t, "flat N=%d k=%zu", n,
                       k);
            double chain = predict(&c, CT_BCAST, "chain", n, k * seg, seg);
            CHECK_NEAR(chain, (n - 1) * t + (double)(k - 1) * g, "chain N=%d k=%zu", n, k);
        }
    for (int d = 0; d <= 6; d++) {
        int n = 1 << d;
        double bin = predict(&c, CT_BCAST, "binomial", n, 4096, 0);
        CHECK_NEAR(bin, d * t, "binomial N=%d", n);
    }
}

/* Rank 1 first hears from rank 2, and only then posts its receive from rank 0.
 * Immediate: rank 0's data waits at rank 1, which finishes at T + or.
 * Rendezvous: the data leaves rank 0 when rank 1 posts, at T: done at 2T. */
static void rendezvous_waits_for_the_receive(void)
{
    const double t = 10, o_r = 1;
    ct_sched s[3], *ps[3] = {&s[0], &s[1], &s[2]};
    for (int i = 0; i < 3; i++)
        ct_sched_init(&s[i]);
    ct_sched_round(&s[0]);
    ct_sched_send(&s[0], 1, CT_BUF_SRC, 0, 4096);
    ct_sched_round(&s[2]);
    ct_sched_send(&s[2], 1, CT_BUF_SRC, 0, 8);
    ct_sched_round(&s[1]);
    ct_sched_recv(&s[1], 2, CT_BUF_DST, 0, 8);
    ct_sched_round(&s[1]);
    ct_sched_recv(&s[1], 0, CT_BUF_DST, 0, 4096);
    double ranks[3];
    ct_model_result res = {.rank_us = ranks};
    ct_cost_table c = constant_table(0.5, o_r, 2, t, CT_MODE_IMMEDIATE);
    if (ct_model_run(&c, 3, ps, 1, &res))
        printf("FAIL rendezvous setup: %s\n", res.error), failures++;
    CHECK_NEAR(ranks[1], t + o_r, "immediate: rank %d", 1);
    c = constant_table(0.5, o_r, 2, t, CT_MODE_RENDEZVOUS);
    if (ct_model_run(&c, 3, ps, 1, &res))
        printf("FAIL rendezvous: %s\n", res.error), failures++;
    CHECK_NEAR(ranks[1], 2 * t, "rendezvous: rank %d", 1);
    CHECK_NEAR(ranks[0], 2 * t, "rendezvous: the sender waits too, rank %d", 0);
    CHECK_NEAR(res.total_us, 2 * t, "rendezvous total%s", "");
    for (int i = 0; i < 3; i++)
        ct_sched_free(&s[i]);
}

/* os grows with pending sends: 1, 2, 3 us for the first three (counts 1 and 4
 * measured at 1 and 4 us), the gap (0.5) never limits. Flat bcast to 3
 * children: sends start at 0, 1, 3; the last lands at 3 + T. */
static void pending_sends_cost_more(void)
{
    const double t = 10;
    ct_cost_table c = constant_table(1, 1, 0.5, t, CT_MODE_IMMEDIATE);
    static const double counts[2] = {1, 4};
    static double osp[2 * NPTS], gp[2 * NPTS];
    for (int i = 0; i < NPTS; i++) {
        osp[i] = 1;
        osp[NPTS + i] = 4;
        gp[i] = gp[NPTS + i] = 0.5;
    }
    c.npending = 2;
    c.pending_counts = counts;
    c.os_pending_us = osp;
    c.g_pending_us = gp;
    CHECK_NEAR(predict(&c, CT_BCAST, "linear", 4, 64, 0), 3 + t, "pending%s", "");
}

/* The local table: a copy of m bytes costs m / 1000 us. Linear reduce to the
 * root of 2 ranks: whatever the root copies and reduces, the total is the
 * message plus those local costs; checked against the same schedule replayed
 * with free local operations plus their count. */
static void local_operations_are_costed(void)
{
    ct_cost_table c = constant_table(1, 1, 2, 10, CT_MODE_IMMEDIATE);
    static const double lb[2] = {1000, 1000000}, cu[2] = {1, 1000}, ru[2] = {2, 2000};
    double free_total = predict(&c, CT_REDUCE, "linear", 2, 8000, 0);
    c.nlocal = 2;
    c.local_bytes = lb;
    c.copy_us = cu;
    c.reduce_us = ru;
    double costed = predict(&c, CT_REDUCE, "linear", 2, 8000, 0);
    /* At the root: one reduce of 8000 bytes (16 us), plus a copy of 8000 (8 us) when its
     * schedule copies its own contribution first. */
    ct_params p = {.coll = CT_REDUCE, .size = 2, .rank = 0, .root = 0, .count = 8000,
                   .type_size = 1, .radix = 2, .commutative = 1};
    ct_sched s;
    ct_sched_init(&s);
    ct_sched_generate("linear", &p, &s);
    double want = free_total;
    for (int i = 0; i < s.nops; i++)
        want += s.ops[i].kind == CT_OP_COPY     ? 8
                : s.ops[i].kind == CT_OP_REDUCE ? 16
                                                : 0;
    ct_sched_free(&s);
    CHECK_NEAR(costed, want, "local costs%s", "");
}

/* Shared memory: no message; copies at their local cost, a WAIT ends a copy of one
 * line (64 bytes, here 1 us) after the SIGNAL it waits for. */
static void shared_memory_steps(void)
{
    ct_cost_table c = constant_table(1, 1, 2, 10, CT_MODE_IMMEDIATE);
    static const double lb[2] = {1000, 1000000}, cu[2] = {1, 1000}, ru[2] = {2, 2000};
    c.nlocal = 2;
    c.local_bytes = lb;
    c.copy_us = cu;
    c.reduce_us = ru;
    /* bcast: the root copies 8000 bytes in (8 us) and signals; the other rank sees it
     * 1 us later and copies them out (8 us). */
    CHECK_NEAR(predict(&c, CT_BCAST, "shm", 2, 8000, 0), 17.0, "bcast/shm N=%d", 2);
    /* barrier: dissemination, one flag line per round. */
    CHECK_NEAR(predict(&c, CT_BARRIER, "shm", 4, 0, 0), 2.0, "barrier/shm N=%d", 4);
    CHECK_NEAR(predict(&c, CT_BARRIER, "shm", 5, 0, 0), 3.0, "barrier/shm N=%d", 5);
}

static void interpolation(void)
{
    ct_cost_table c = constant_table(1, 1, 2, 10, CT_MODE_IMMEDIATE);
    static double col[NPTS] = {1, 2, 1026, 16386};
    CHECK_NEAR(ct_cost_at(&c, col, 0), 1, "below the first point%s", "");
    CHECK_NEAR(ct_cost_at(&c, col, 512.5), 1.5, "between points%s", "");
    CHECK_NEAR(ct_cost_at(&c, col, 32 << 20), 2 * 16386, "per byte beyond%s", "");
}

static void never_finishes(void)
{
    ct_sched s[2], *ps[2] = {&s[0], &s[1]};
    ct_sched_init(&s[0]);
    ct_sched_init(&s[1]);
    ct_sched_round(&s[0]);
    ct_sched_recv(&s[0], 1, CT_BUF_DST, 0, 8);
    ct_cost_table c = constant_table(1, 1, 2, 10, CT_MODE_IMMEDIATE);
    ct_model_result res = {0};
    if (ct_model_run(&c, 2, ps, 1, &res) != -1 || !strstr(res.error, "rank 0 waits forever")) {
        failures++;
        printf("FAIL a receive nobody answers: '%s'\n", res.error);
    }
    ct_cost_table bad = c;
    static const double unsorted[NPTS] = {1, 1 << 20, 1024, 16 << 20};
    bad.size_bytes = unsorted;
    if (ct_model_run(&bad, 2, ps, 1, &res) != -1 || !strstr(res.error, "ascend")) {
        failures++;
        printf("FAIL unsorted sizes accepted: '%s'\n", res.error);
    }
    ct_sched_free(&s[0]);
    ct_sched_free(&s[1]);
}

/* Two layers: inside nodes T = 10 us, between them T = 100 us (os = or = 1, g =
 * 2). Hierarchical bcast, binomial at both levels, K = 2^a nodes of P = 2^b
 * ranks: the leaders' binomial takes a T_inter, then each node's b T_intra,
 * so a T_inter + b T_intra in all, in block and round-robin placement. The
 * flat binomial costs the same on both (edges r -> r + 2^j cross nodes for
 * the a levels j >= b in block placement, j < a in round-robin), while the
 * flat chain's hops r -> r + 1 cross K - 1 times in block placement and every
 * time in round-robin: (K-1) T_inter + (N-K) T_intra against (N-1) T_inter.
 * Without a layout, every message costs T_intra. */
static double ti_os[NPTS], ti_or[NPTS], ti_g[NPTS], ti_t[NPTS];
static int ti_mode[NPTS];

static double predict_nodes(const ct_cost_table *intra, const ct_cost_table *inter,
                            const char *alg, int n, const int *node_of)
{
    ct_params p = {.coll = CT_BCAST, .size = n, .root = 0, .count = 4096, .type_size = 1,
                   .radix = 2, .commutative = 1, .node_of = node_of, .layout_id = 1};
    ct_model_result res = {0};
    if (ct_model_predict_layers(intra, inter, alg, &p, &res)) {
        failures++;
        printf("FAIL %s N=%d two layers: %s\n", alg, n, res.error);
        return -1;
    }
    return res.total_us;
}

static void two_layers(void)
{
    const double t_intra = 10, t_inter = 100;
    ct_cost_table intra = constant_table(1, 1, 2, t_intra, CT_MODE_IMMEDIATE);
    for (int i = 0; i < NPTS; i++) {
        ti_os[i] = 1;
        ti_or[i] = 1;
        ti_g[i] = 2;
        ti_t[i] = t_inter;
        ti_mode[i] = CT_MODE_IMMEDIATE;
    }
    ct_cost_table inter = {.npoints = NPTS, .size_bytes = sizes, .os_us = ti_os,
                           .or_us = ti_or, .g_us = ti_g, .oneway_us = ti_t, .mode = ti_mode};
    int map[64];
    for (int a = 0; a <= 3; a++)
        for (int b = 0; b <= 3; b++) {
            int k = 1 << a, ppn = 1 << b, n = k * ppn;
            for (int r = 0; r < n; r++)
                map[r] = r / ppn;
            double want = a * t_inter + b * t_intra;
            CHECK_NEAR(predict_nodes(&intra, &inter, "hier", n, map), want,
                       "hier bcast, %d nodes x %d ranks, block", k, ppn);
            CHECK_NEAR(predict_nodes(&intra, &inter, "binomial", n, map), want,
                       "flat binomial, %d nodes x %d ranks, block", k, ppn);
            CHECK_NEAR(predict_nodes(&intra, &inter, "chain", n, map),
                       (k - 1) * t_inter + (n - k) * t_intra,
                       "flat chain, %d nodes x %d ranks, block", k, ppn);
            for (int r = 0; r < n; r++)
                map[r] = r % k;
            CHECK_NEAR(predict_nodes(&intra, &inter, "hier", n, map), want,
                       "hier bcast, %d nodes x %d ranks, round-robin", k, ppn);
            /* In round-robin placement the flat binomial's a inter-node levels each
             * have ppn senders per node at once, which now share their node's link
             * (each holds it for g): between a T_inter + b T_intra and a + (ppn - 1) g
             * per level more. */
            double rr = predict_nodes(&intra, &inter, "binomial", n, map);
            if (rr < want - 1e-9 || rr > want + a * (ppn - 1) * ti_g[0] + 1e-9) {
                failures++;
                printf("FAIL flat binomial, %d nodes x %d ranks, round-robin: %.3f outside "
                       "[%.3f, %.3f]\n", k, ppn, rr, want, want + a * (ppn - 1) * ti_g[0]);
            }
            CHECK_NEAR(predict_nodes(&intra, &inter, "chain", n, map),
                       (k > 1 ? n - 1 : 0) * t_inter + (k > 1 ? 0 : n - 1) * t_intra,
                       "flat chain, %d nodes x %d ranks, round-robin", k, ppn);
            /* Without a layout everything is one node: the intra layer only. */
            CHECK_NEAR(predict_nodes(&intra, &inter, "hier", n, NULL), (a + b) * t_intra,
                       "hier bcast, %d ranks on one node", n);
        }
}

/* Messages between nodes share their node's link: ranks 0 and 1 (node 0) send
 * one message each to ranks 2 and 3 (node 1) in the same round. Each holds the
 * link for g = 50, so the second transfer starts at 50 and lands at 50 + T;
 * its sender is done at 50 + g. Without a layout (one node) both land at T. */
static void links_are_shared(void)
{
    const double t = 100, g = 50, o = 1;
    ct_sched s[4], *ps[4] = {&s[0], &s[1], &s[2], &s[3]};
    for (int i = 0; i < 4; i++) {
        ct_sched_init(&s[i]);
        ct_sched_round(&s[i]);
    }
    ct_sched_send(&s[0], 2, CT_BUF_SRC, 0, 1024);
    ct_sched_send(&s[1], 3, CT_BUF_SRC, 0, 1024);
    ct_sched_recv(&s[2], 0, CT_BUF_DST, 0, 1024);
    ct_sched_recv(&s[3], 1, CT_BUF_DST, 0, 1024);
    ct_cost_table c = constant_table(o, o, g, t, CT_MODE_IMMEDIATE);
    const int nodes[4] = {0, 0, 1, 1};
    double ranks[4];
    ct_model_result res = {.rank_us = ranks};
    if (ct_model_run_layers(&c, &c, nodes, 4, ps, 1, &res))
        printf("FAIL shared link: %s\n", res.error), failures++;
    CHECK_NEAR(ranks[2], t, "shared link: first receiver, rank %d", 2);
    CHECK_NEAR(ranks[3], g + t, "shared link: second receiver, rank %d", 3);
    CHECK_NEAR(ranks[1], 2 * g, "shared link: second sender, rank %d", 1);
    const int apart[4] = {0, 1, 2, 3};
    if (ct_model_run_layers(&c, &c, apart, 4, ps, 1, &res))
        printf("FAIL own links: %s\n", res.error), failures++;
    CHECK_NEAR(res.total_us, t, "a link each: both land at T%s", "");
    if (ct_model_run(&c, 4, ps, 1, &res))
        printf("FAIL one node: %s\n", res.error), failures++;
    CHECK_NEAR(res.total_us, t, "one node: no shared link%s", "");
    /* The same table for both layers: what decides is whether a message leaves its node. */
    const int one_node[4] = {0, 0, 0, 0};
    if (ct_model_run_layers(&c, &c, one_node, 4, ps, 1, &res))
        printf("FAIL one node, two tables: %s\n", res.error), failures++;
    CHECK_NEAR(res.total_us, t, "one node given as a layout: no shared link%s", "");
    for (int i = 0; i < 4; i++)
        ct_sched_free(&s[i]);
}

int main(void)
{
    two_layers();
    links_are_shared();
    closed_forms();
    rendezvous_waits_for_the_receive();
    pending_sends_cost_more();
    local_operations_are_costed();
    shared_memory_steps();
    interpolation();
    never_finishes();
    if (failures) {
        printf("%d model check(s) failed\n", failures);
        return 1;
    }
    printf("model: all closed forms hold\n");
    return 0;
}
