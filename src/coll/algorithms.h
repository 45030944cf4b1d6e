/* Prototypes of every generator; the registry (registry.c) lists them. */
#ifndef CT_ALGORITHMS_H
#define CT_ALGORITHMS_H

#include "common.h"

#define CT_GENERATOR(name) int name(const ct_params *p, ct_sched *s)

CT_GENERATOR(ct_bcast_linear);
CT_GENERATOR(ct_bcast_chain);
CT_GENERATOR(ct_bcast_pipeline);
CT_GENERATOR(ct_bcast_binary);
CT_GENERATOR(ct_bcast_binomial);
CT_GENERATOR(ct_bcast_knomial);
CT_GENERATOR(ct_bcast_scatter_allgather);
CT_GENERATOR(ct_bcast_scatter_bruck);
CT_GENERATOR(ct_bcast_hier);
CT_GENERATOR(ct_bcast_shm);
CT_GENERATOR(ct_bcast_cma);

CT_GENERATOR(ct_reduce_linear);
CT_GENERATOR(ct_reduce_chain);
CT_GENERATOR(ct_reduce_binary);
CT_GENERATOR(ct_reduce_binomial);
CT_GENERATOR(ct_reduce_rabenseifner);
CT_GENERATOR(ct_reduce_hier);
CT_GENERATOR(ct_reduce_shm);

CT_GENERATOR(ct_allreduce_reduce_bcast);
CT_GENERATOR(ct_allreduce_allgather_reduce);
CT_GENERATOR(ct_allreduce_recursive_doubling);
CT_GENERATOR(ct_allreduce_ring);
CT_GENERATOR(ct_allreduce_rabenseifner);
CT_GENERATOR(ct_allreduce_hier);
CT_GENERATOR(ct_allreduce_shm);
CT_GENERATOR(ct_allreduce_cma);

CT_GENERATOR(ct_scatter_linear);
CT_GENERATOR(ct_scatter_chain);
CT_GENERATOR(ct_scatter_binary);
CT_GENERATOR(ct_scatter_binomial);
CT_GENERATOR(ct_scatter_shm);
CT_GENERATOR(ct_scatter_cma);

CT_GENERATOR(ct_gather_linear);
CT_GENERATOR(ct_gather_chain);
CT_GENERATOR(ct_gather_binary);
CT_GENERATOR(ct_gather_binomial);
CT_GENERATOR(ct_gather_shm);
CT_GENERATOR(ct_gather_cma);

CT_GENERATOR(ct_allgather_gather_bcast);
CT_GENERATOR(ct_allgather_ring);
CT_GENERATOR(ct_allgather_recursive_doubling);
CT_GENERATOR(ct_allgather_bruck);
CT_GENERATOR(ct_allgather_hier);
CT_GENERATOR(ct_allgather_shm);
CT_GENERATOR(ct_allgather_cma);

CT_GENERATOR(ct_alltoall_gather_scatter);
CT_GENERATOR(ct_alltoall_pairwise);
CT_GENERATOR(ct_alltoall_bruck);
CT_GENERATOR(ct_alltoall_shm);
CT_GENERATOR(ct_alltoall_cma);

CT_GENERATOR(ct_barrier_ring);
CT_GENERATOR(ct_barrier_binomial);
CT_GENERATOR(ct_barrier_tournament);
CT_GENERATOR(ct_barrier_dissemination);
CT_GENERATOR(ct_barrier_hier);
CT_GENERATOR(ct_barrier_shm);

CT_GENERATOR(ct_allgatherv_ring);
CT_GENERATOR(ct_allgatherv_bruck);
CT_GENERATOR(ct_alltoallv_pairwise);
CT_GENERATOR(ct_alltoallv_linear);
CT_GENERATOR(ct_gatherv_linear);
CT_GENERATOR(ct_gatherv_binomial);
CT_GENERATOR(ct_scatterv_linear);
CT_GENERATOR(ct_scatterv_binomial);
CT_GENERATOR(ct_reduce_scatter_ring);
CT_GENERATOR(ct_reduce_scatter_pairwise);
CT_GENERATOR(ct_reduce_scatter_recursive_halving);
CT_GENERATOR(ct_reduce_scatter_block_ring);
CT_GENERATOR(ct_reduce_scatter_block_pairwise);
CT_GENERATOR(ct_reduce_scatter_block_recursive_halving);
CT_GENERATOR(ct_scan_linear);
CT_GENERATOR(ct_scan_recursive_doubling);
CT_GENERATOR(ct_exscan_linear);
CT_GENERATOR(ct_exscan_recursive_doubling);
/* The exchanges of both recursive-doubling scans (scan_recursive_doubling.c). */
int ct_scan_doubling(const ct_params *p, ct_sched *s, int exclusive);

#endif
