/*
 * Local reductions for MPI's predefined operations on predefined types, in
 * loops the compiler vectorises.
 *
 * Why not MPI_Reduce_local: a reduction algorithm's time is mostly its local
 * reductions once the data is on the node, and the MPI libraries' kernels differ
 * by 3-4x (docs/BENCHMARKS.md section 45: MPICH's wheel reduces 128 KiB of floats
 * in about 4x Intel MPI's time). Each element is reduced on its own, in the same
 * order (inout[i] = in[i] op inout[i]), so the results are bitwise those of an
 * element-by-element loop; only several elements go at once.
 */
#ifndef CT_REDUCE_LOCAL_H
#define CT_REDUCE_LOCAL_H

#include <mpi.h>
#include <stddef.h>

/* inout[i] = in[i] (op) inout[i] for i < count; in and inout do not overlap. */
typedef void (*ct_reduce_fn)(const void *in, void *inout, size_t count);

/* The kernel for op on type, or NULL where colltune has none (user-defined
 * operations, derived or pair types, MPI_MAXLOC / MINLOC, ...): MPI_Reduce_local
 * then. Cheap enough per prepared call, not per element. */
ct_reduce_fn ct_reduce_kernel(MPI_Op op, MPI_Datatype type);

/* One reduction as the executor does it: the kernel where there is one, else
 * MPI_Reduce_local. Returns an MPI error code. */
int ct_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype type, MPI_Op op);

#endif
