/* Reduce through the node's shared segment: as allreduce_shm, only the root
 * copies the result out (rank order kept: non-commutative operations served). */
#include "algorithms.h"

int ct_reduce_shm(const ct_params *p, ct_sched *s)
{
    return ct_shm_reduce(p, s, p->root);
}
