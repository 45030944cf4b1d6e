/* Growing a reused buffer: the executor's workspace (exec.c) and a job's pack and count
 * buffers (src/api/setup.c). */
#ifndef CT_SCHED_GROW_H
#define CT_SCHED_GROW_H

#include <mpi.h>
#include <stdlib.h>

/* ct_grow's realloc, out of line and marked cold: the inline part at each call site is
 * then one compare and a branch, and the executor's loops that call it (pull, in
 * end_round) keep their registers. */
__attribute__((noinline, cold, unused)) static int ct_grow_realloc(void **buf, size_t *cap,
                                                                   size_t need)
{
    void *n = realloc(*buf, need);
    if (!n)
        return MPI_ERR_NO_MEM;
    *buf = n;
    *cap = need;
    return MPI_SUCCESS;
}

/* Makes *buf (of *cap bytes; NULL and 0 at first) hold at least need bytes: MPI_SUCCESS,
 * or MPI_ERR_NO_MEM with *buf and *cap as they were (the caller still frees *buf).
 * The contents are kept (realloc), though no caller reads them before writing.
 *
 * Growth policy: exactly need bytes, never more. Each of these buffers belongs to a job
 * or workspace that a repeated call reuses, so the call that sets the size is followed
 * by equal calls that allocate nothing; rounding up (doubling) would only save reallocs
 * for sizes that creep up call after call, and would keep up to twice the largest
 * message's temporaries for the life of the communicator. Appending one item at a time
 * (the schedule's operations, sched.c) is the case for doubling, and does its own.
 *
 * Inline: the executor asks on every call (ct_exec_begin), and the answer is almost
 * always "large enough already". */
static inline int ct_grow(void **buf, size_t *cap, size_t need)
{
    return need <= *cap ? MPI_SUCCESS : ct_grow_realloc(buf, cap, need);
}

#endif
