/* Exscan by recursive doubling: scan's exchanges (scan_recursive_doubling.c)
 * where the result starts empty: the first lower group's partial is copied
 * in, later ones folded on the left; rank 0 never has one and its output is
 * left alone, as MPI leaves it undefined. */
#include "algorithms.h"

int ct_exscan_recursive_doubling(const ct_params *p, ct_sched *s)
{
    return ct_scan_doubling(p, s, 1);
}
