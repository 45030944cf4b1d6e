#include "splittree.h"

#include <math.h>

/* floor(log2 n) for n >= 1, in integers: log2 of a double can land a hair
 * below an exact power of two. */
static int floor_log2(int n)
{
    int k = 0;
    while (n >> (k + 1))
        k++;
    return k;
}

int ct_split_height(int n)
{
    if (n < 1)
        return -1;
    int h = 0;
    while ((1LL << h) < (long long)n)
        h++;
    return h;
}

double ct_split_level_comms(int n, int level)
{
    int h = ct_split_height(n);
    if (h < 0 || level < 1 || level > h)
        return NAN;
    int fl = floor_log2(n);
    long long r = (long long)n - (1LL << fl);
    int below = h - level; /* levels under this one */
    /* The fraction of the first term is the paper's (see splittree.h). */
    double full = ldexp(1.0, fl - (below + 1));
    long long extra = (r + (1LL << below)) / (1LL << (below + 1));
    return full + (double)extra;
}

double ct_split_upper(int n, int p, int s)
{
    int h = ct_split_height(n);
    if (h < 0 || s < 0)
        return NAN;
    int levels = h - s > 0 ? h - s : 0;
    if (levels == 0)
        return 0.0;
    if (p <= 0)
        return INFINITY;
    double t = 0.0;
    for (int i = 1; i <= levels; i++)
        t += ceil(ct_split_level_comms(n, i) / (double)p);
    return t;
}

double ct_split_nonblocking(int n, int p, int s)
{
    double up = ct_split_upper(n, p, s);
    if (isnan(up))
        return NAN;
    int h = ct_split_height(n);
    return (double)(s < h ? s : h) + up;
}

double ct_split_overlapped(int n, int p, int s, double c)
{
    double up = ct_split_upper(n, p, s);
    if (isnan(up) || isnan(c))
        return NAN;
    int h = ct_split_height(n);
    double comp = c > 0 ? c : 0.0;
    return (double)(s < h ? s : h) + (comp > up ? comp : up);
}

double ct_split_blocking(int n)
{
    int h = ct_split_height(n);
    return h < 0 ? NAN : (double)h;
}

int ct_split_best_s(int n, int p, double c, double *t_best)
{
    int h = ct_split_height(n);
    if (h < 0 || isnan(c))
        return -1;
    int best = -1;
    double tb = INFINITY;
    /* Strictly smaller only: ties keep the smaller S, which overlaps more.
     * With p <= 0 every S < H costs +INFINITY and S = H, always finite,
     * wins. */
    for (int s = 0; s <= h; s++) {
        double t = ct_split_overlapped(n, p, s, c);
        if (best < 0 || t < tb) {
            best = s;
            tb = t;
        }
    }
    if (t_best)
        *t_best = tb;
    return best;
}

double ct_split_paper_compute(int nproc, int n)
{
    if (n < 1 || n > nproc)
        return NAN;
    return (double)nproc / (double)n * (double)ct_split_height(nproc);
}

int ct_split_paper_best_s(int nproc, int n, double *t_best)
{
    double c = ct_split_paper_compute(nproc, n);
    if (isnan(c))
        return -1;
    return ct_split_best_s(n, nproc - n, c, t_best);
}
