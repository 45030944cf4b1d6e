/*
 * The split-tree model (src/model/splittree.h) against the paper's numbers
 * and hand-derived values, without MPI. The paper (Denis et al., Euro-Par
 * 2018, section 4, figure 3) reads for Nproc = 64: optimum S = 0 at N = 51
 * overall, S = 1 at N = 57, S = 2 at N = 60, S = 3 at N = 62. The switch
 * points below (64: 52, 58, 62; 48: 39, 44, 47, optimum at 38) come from an
 * independent script of the same equations, equation (2) turned right way up.
 */
#include <math.h>
#include <stdio.h>

#include "model/splittree.h"

static int failures;

#define CHECK(cond, what, ...)                                                                \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            failures++;                                                                       \
            printf("FAIL " what "\n", __VA_ARGS__);                                           \
        }                                                                                     \
    } while (0)

#define CHECK_NEAR(got, want, what, ...)                                                      \
    do {                                                                                      \
        double got_ = (got), want_ = (want);                                                  \
        if (!(fabs(got_ - want_) <= 1e-9 * (1 + fabs(want_)))) {                              \
            failures++;                                                                       \
            printf("FAIL " what ": got %.9g, want %.9g\n", __VA_ARGS__, got_, want_);         \
        }                                                                                     \
    } while (0)

/* Best S by N in the paper's setting, from the switch points sw[0..2]. */
static int expected_s(int n, const int sw[3])
{
    return (n >= sw[0]) + (n >= sw[1]) + (n >= sw[2]);
}

static void paper_setting(int nproc, const int sw[3], int best_n, double best_t)
{
    int opt_n = -1, opt_s = -1;
    double opt_t = INFINITY;
    for (int n = 2; n < nproc; n++) {
        double t;
        int s = ct_split_paper_best_s(nproc, n, &t);
        CHECK(s == expected_s(n, sw), "Nproc=%d N=%d: best S %d, want %d", nproc, n, s,
              expected_s(n, sw));
        double c = (double)nproc / n * ct_split_height(nproc);
        CHECK_NEAR(t, ct_split_overlapped(n, nproc - n, s, c), "Nproc=%d N=%d t_best", nproc, n);
        for (int other = 0; other <= ct_split_height(n); other++) {
            double to = ct_split_overlapped(n, nproc - n, other, c);
            CHECK(to > t || (to == t && other >= s),
                  "Nproc=%d N=%d: S=%d (%.4f) beats or ties the best S=%d (%.4f)", nproc, n,
                  other, to, s, t);
        }
        if (t < opt_t) {
            opt_t = t;
            opt_n = n;
            opt_s = s;
        }
    }
    CHECK(opt_n == best_n && opt_s == 0, "Nproc=%d: optimum at N=%d S=%d, want N=%d S=0", nproc,
          opt_n, opt_s, best_n);
    CHECK_NEAR(opt_t, best_t, "Nproc=%d optimum time", nproc);
}

static void levels(void)
{
    static const int want_h[] = {-1, 0, 1, 2, 2, 3, 3, 3, 3, 4};
    for (int n = 0; n <= 9; n++)
        CHECK(ct_split_height(n) == want_h[n], "H(%d) = %d, want %d", n, ct_split_height(n),
              want_h[n]);
    CHECK(ct_split_height(1 << 30) == 30 && ct_split_height((1 << 30) + 1) == 31,
          "H around 2^30: %d %d", ct_split_height(1 << 30), ct_split_height((1 << 30) + 1));
    /* A full tree doubles its communications at each level. */
    for (int i = 1; i <= 4; i++)
        CHECK_NEAR(ct_split_level_comms(16, i), 1 << (i - 1), "F(16,%d)", i);
    /* N = 5, 12: the first term is the paper's fraction, kept as printed. */
    CHECK_NEAR(ct_split_level_comms(5, 1), 0.5, "F(5,%d)", 1);
    CHECK_NEAR(ct_split_level_comms(5, 2), 1.0, "F(5,%d)", 2);
    CHECK_NEAR(ct_split_level_comms(5, 3), 3.0, "F(5,%d)", 3);
    static const double f12[] = {0.5, 2, 3, 6};
    for (int i = 1; i <= 4; i++)
        CHECK_NEAR(ct_split_level_comms(12, i), f12[i - 1], "F(12,%d)", i);
    /* The levels add up to the binomial tree's N - 1 communications only for
     * N a power of two; otherwise the root level's fraction leaves N - 1/2. */
    for (int n = 2; n <= 1000; n++) {
        double sum = 0;
        for (int i = 1; i <= ct_split_height(n); i++)
            sum += ct_split_level_comms(n, i);
        int pow2 = (n & (n - 1)) == 0;
        CHECK_NEAR(sum, pow2 ? n - 1 : n - 0.5, "sum of F(%d, i)", n);
    }
}

static void times(void)
{
    for (int n = 1; n <= 200; n++) {
        int h = ct_split_height(n);
        CHECK_NEAR(ct_split_blocking(n), h, "T_blocking(%d)", n);
        for (int p = 0; p <= 8; p++)
            for (int s = h; s <= h + 2; s++) {
                CHECK_NEAR(ct_split_nonblocking(n, p, s), h, "T_nb(N=%d, P=%d, S=%d)", n, p, s);
                CHECK_NEAR(ct_split_overlapped(n, p, s, 2.5), h + 2.5, "T_ov(N=%d, P=%d, S=%d)", n,
                           p, s);
            }
        /* One core per communication of the widest level: one step per level. */
        if (h > 0)
            CHECK_NEAR(ct_split_nonblocking(n, n, 0), h, "T_nb(N=%d, P=N, S=0)", n);
    }
    /* N = 16 folded on one core: 1 + 2 + 4 + 8 steps; S = 1 leaves 1 + 2 + 4. */
    CHECK_NEAR(ct_split_nonblocking(16, 1, 0), 15, "T_nb(16, 1, %d)", 0);
    CHECK_NEAR(ct_split_nonblocking(16, 1, 1), 1 + 7, "T_nb(16, 1, %d)", 1);
    CHECK_NEAR(ct_split_nonblocking(16, 3, 0), 1 + 1 + 2 + 3, "T_nb(16, 3, %d)", 0);
    /* Overlap hides the upper part up to the computation's length. */
    CHECK_NEAR(ct_split_overlapped(16, 1, 1, 10), 1 + 10, "T_ov(16, 1, %d, 10)", 1);
    CHECK_NEAR(ct_split_overlapped(16, 1, 1, 3), 1 + 7, "T_ov(16, 1, %d, 3)", 1);
    /* Negative computation: pure communication. */
    CHECK_NEAR(ct_split_overlapped(16, 3, 0, -1), ct_split_nonblocking(16, 3, 0), "c<0 %d", 0);
    double t;
    /* One core: S = 3 (3 + the root's 1) ties S = 4 (blocking); the smaller wins. */
    CHECK(ct_split_best_s(16, 1, -1, &t) == 3 && t == 4, "pure comm on one core: S=%d", 3);
    CHECK(ct_split_best_s(16, 8, -1, &t) == 0 && t == 4, "pure comm on 8 cores: S=%d", 0);
}

static void edges(void)
{
    double t = -7;
    /* N = 1: nothing to communicate; every S costs the computation alone. */
    CHECK(ct_split_best_s(1, 5, 3.0, &t) == 0 && t == 3.0, "N=1: S=0 T=3, got T=%g", t);
    CHECK(ct_split_nonblocking(1, 0, 0) == 0, "N=1 T_nb = %g", ct_split_nonblocking(1, 0, 0));
    /* No communication core: only the blocking algorithm, S = H. */
    CHECK(isinf(ct_split_nonblocking(16, 0, 3)), "P=0 S<H: %g", ct_split_nonblocking(16, 0, 3));
    CHECK(ct_split_best_s(16, 0, 2.0, &t) == 4 && t == 6.0, "P=0: S=H, T=H+C, got T=%g", t);
    CHECK(ct_split_best_s(16, -3, -1, &t) == 4 && t == 4.0, "P<0: S=H, got T=%g", t);
    CHECK(ct_split_paper_best_s(64, 64, &t) == 6 && t == 12.0, "N=Nproc: T=%g", t);
    CHECK(ct_split_best_s(16, 1, 1.0, NULL) >= 0, "t_best NULL%s", "");
    /* Bad input. */
    CHECK(ct_split_height(0) == -1 && ct_split_height(-4) == -1, "H(0) %d", ct_split_height(0));
    CHECK(isnan(ct_split_level_comms(0, 1)), "F(0,1)%s", "");
    CHECK(isnan(ct_split_level_comms(16, 0)) && isnan(ct_split_level_comms(16, 5)),
          "F(16, out of 1..4)%s", "");
    CHECK(isnan(ct_split_level_comms(1, 1)), "F(1,1): no level%s", "");
    CHECK(isnan(ct_split_nonblocking(16, 2, -1)), "S=-1%s", "");
    CHECK(isnan(ct_split_nonblocking(0, 2, 0)), "N=0%s", "");
    CHECK(isnan(ct_split_overlapped(16, 2, 0, NAN)), "C=NaN%s", "");
    CHECK(isnan(ct_split_blocking(0)), "T_blocking(0)%s", "");
    CHECK(ct_split_best_s(0, 2, 1, &t) == -1, "best S for N=0%s", "");
    CHECK(ct_split_best_s(16, 2, NAN, &t) == -1, "best S for C=NaN%s", "");
    CHECK(ct_split_paper_best_s(64, 65, &t) == -1 && ct_split_paper_best_s(64, 0, &t) == -1,
          "paper setting out of 1..Nproc%s", "");
    CHECK(isnan(ct_split_paper_compute(64, 0)), "C(0)%s", "");
}

int main(void)
{
    levels();
    times();
    edges();
    paper_setting(64, (const int[3]){52, 58, 62}, 51, 64.0 / 51 * 6);
    paper_setting(48, (const int[3]){39, 44, 47}, 38, 48.0 / 38 * 6);
    if (failures) {
        printf("%d split-tree check(s) failed\n", failures);
        return 1;
    }
    printf("splittree: the paper's numbers hold\n");
    return 0;
}
