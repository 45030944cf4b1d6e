/* Medians for the measurement tools (probe, p2p): samples sorted in place. */
#ifndef CT_TOOLS_STATS_H
#define CT_TOOLS_STATS_H

#include <stdlib.h>

static inline int ct_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1; v ends sorted. */
static inline double ct_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, ct_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
