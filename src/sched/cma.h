/*
 * Cross-memory attach (Linux process_vm_readv): one copy from another process's
 * memory, for the one-copy algorithms' PULL steps (sched.h). Whether it works is a
 * property of the node and its policy (the kernel, Yama's ptrace_scope, a
 * container's seccomp filter, the ranks' user ids), so it is probed, never assumed.
 */
#ifndef CT_SCHED_CMA_H
#define CT_SCHED_CMA_H

#include <mpi.h>
#include <stddef.h>

/* Collective over group (ranks sharing a node): 1 on every rank when each rank
 * could read a word of its neighbour's memory and got the value the neighbour
 * wrote, else 0 on every rank. COLLTUNE_CMA=off makes it answer 0 without trying
 * (the copy-through path, for tests and for nodes whose policy logs refusals).
 * With COLLTUNE_LOG warn or debug, rank 0 of the group says once why it is 0. */
int ct_cma_probe(MPI_Comm group);

/* Copies len bytes at remote in process pid into local. MPI_SUCCESS, or
 * MPI_ERR_OTHER when the kernel refuses (after a successful probe: the peer
 * exited, or the policy changed). */
int ct_cma_read(int pid, const void *remote, void *local, size_t len);

/* This process's id, as the PULL steps publish it (cached: getpid once). */
int ct_cma_pid(void);

#endif
