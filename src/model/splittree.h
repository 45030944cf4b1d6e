/*
 * The split-tree model of Denis, Jaeger, Jeannot, Pérache and Taboada
 * (Euro-Par 2018, section 4; seed paper split-tree-progress-threads-nbc): a
 * binomial-tree collective of N ranks whose upper H(N) - S levels run on P
 * communication cores (progress threads), fully overlapped with computation,
 * and whose last S levels run on the application cores, not overlapped.
 *
 * Unit of time: one point-to-point transfer of the collective's buffer (the
 * paper's unit); latency, cache effects and contention are ignored. Levels
 * are numbered from 1 at the root to H(N) at the leaves.
 *
 *   H(N)        = ceil(log2 N), 0 for N = 1                       (eq. 1)
 *   R(N)        = N - 2^floor(log2 N)
 *   F(N,i)      = 2^(floor(log2 N) - (H - i + 1))
 *                 + floor((R + 2^(H-i)) / 2^(H-i+1))               (eq. 3)
 *   upper(S)    = sum_{i=1}^{max(0, H-S)} ceil(F(N,i) / P)
 *   T_nb(S)     = min(S, H) + upper(S)                            (eq. 4)
 *   T_ov(S)     = min(S, H) + max(C, upper(S))                    (eq. 5)
 *
 * F's first term is a fraction when floor(log2 N) < H - i + 1 (N = 5, i = 1:
 * 0.5); it is kept real as printed, and the ceiling of F/P rounds it. So the
 * levels' F sum to N - 1 only for N a power of two, N - 1/2 otherwise.
 *
 * The paper's own setting (Nproc cores, N of them application cores):
 * P = Nproc - N and C(N) = (Nproc / N) * H(Nproc): computation sized to last
 * one blocking collective at Nproc, fixed global work spread over N ranks.
 * Equation (2) as printed has N / Nproc; the text (less ranks, longer
 * computation) and the paper's numbers (figure 3: optimum S = 0 at N = 51 of
 * 64) need the ratio this way up (docs/MODEL.md, "Split-tree model").
 *
 * Errors: arguments out of range (n < 1, s < 0, a level outside 1..H(n), a
 * NaN computation time) give NaN from the double functions and -1 from the
 * int ones. P <= 0 (no communication core) is not an error: any S < H then
 * leaves levels nobody can run, so their times are +INFINITY and the best S
 * is H, the blocking algorithm.
 */
#ifndef CT_SPLITTREE_H
#define CT_SPLITTREE_H

/* H(n): levels of the binomial tree over n ranks; -1 for n < 1. */
int ct_split_height(int n);

/* F(n, level): communications in one level (1 = root .. H(n) = leaves). */
double ct_split_level_comms(int n, int level);

/* Time of the upper max(0, H - s) levels folded onto p communication cores. */
double ct_split_upper(int n, int p, int s);

/* T_nonblocking(s, n) with p communication cores (equation 4). */
double ct_split_nonblocking(int n, int p, int s);

/* T_overlapped(s, n) with p communication cores and computation c (equation
 * 5), c in the model's unit. A negative c means no computation: the result is
 * T_nonblocking. */
double ct_split_overlapped(int n, int p, int s, double c);

/* T_blocking(n) = H(n) (equation 1), NaN for n < 1. */
double ct_split_blocking(int n);

/* The S in 0..H(n) that minimises T_overlapped(S, n) with p communication
 * cores and computation c (negative: none, so T_nonblocking is minimised),
 * the smallest S on ties (the most overlap for the same time). Its time goes
 * to *t_best when t_best is not NULL. p <= 0 gives H(n). -1 on bad input.
 * For a runtime: c is the computation time divided by the time of one
 * point-to-point transfer of the buffer. */
int ct_split_best_s(int n, int p, double c, double *t_best);

/* The paper's computation time C(n) = (nproc / n) * H(nproc); NaN unless
 * 1 <= n <= nproc. */
double ct_split_paper_compute(int nproc, int n);

/* ct_split_best_s in the paper's setting: p = nproc - n, c = C(n). -1 unless
 * 1 <= n <= nproc. */
int ct_split_paper_best_s(int nproc, int n, double *t_best);

#endif
