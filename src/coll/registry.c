/*
 * The registry: every algorithm colltune has, with its properties. Code (the
 * API, the bench, the tuner), docs (colltune algorithms) and tests (the
 * schedule checks iterate over it) all derive from this one table.
 */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SEG CT_ALG_SEGMENTABLE
#define COMM CT_ALG_NEEDS_COMMUTE
#define RADIX CT_ALG_TAKES_RADIX
#define NATIVE CT_ALG_NATIVE
#define HIER CT_ALG_HIERARCHICAL
#define SHM CT_ALG_SHARED_MEMORY
#define ONE CT_ALG_ONE_COPY

static const ct_registry_entry table[] = {
    {{CT_BCAST, "native", NATIVE, 0, "the MPI library's MPI_Bcast"}, NULL},
    {{CT_BCAST, "linear", SEG, 0, "root sends to every rank (flat tree)"}, ct_bcast_linear},
    {{CT_BCAST, "chain", SEG, 0, "chain root -> root+1 -> ..."}, ct_bcast_chain},
    {{CT_BCAST, "pipeline", SEG, 16384, "segmented chain, segments forwarded as they arrive"},
     ct_bcast_pipeline},
    {{CT_BCAST, "binary", SEG, 0, "binary tree"}, ct_bcast_binary},
    {{CT_BCAST, "binomial", SEG, 0, "binomial tree, largest subtree first"}, ct_bcast_binomial},
    {{CT_BCAST, "knomial", SEG | RADIX, 0, "k-nomial tree (radix option, default 4)"},
     ct_bcast_knomial},
    {{CT_BCAST, "scatter_allgather", 0, 0, "binomial scatter + ring allgather (large messages)"},
     ct_bcast_scatter_allgather},
    {{CT_BCAST, "scatter_bruck", 0, 0, "binomial scatter + Bruck allgather (log2 N steps)"},
     ct_bcast_scatter_bruck},
    {{CT_BCAST, "hier", SEG | HIER, 0,
      "node-aware: inter-node bcast among node leaders, then intra-node bcast"},
     ct_bcast_hier},
    {{CT_BCAST, "shm", SEG | SHM, 65536,
      "shared segment: root copies in chunk by chunk, the others copy out (one node)"},
     ct_bcast_shm},
    {{CT_BCAST, "cma", SHM | ONE, 0,
      "one copy: every rank reads the root's buffer in place (cross-memory attach; one node)"},
     ct_bcast_cma},

    {{CT_REDUCE, "native", NATIVE, 0, "the MPI library's MPI_Reduce"}, NULL},
    {{CT_REDUCE, "linear", SEG, 0, "root receives every vector, reduces in rank order"},
     ct_reduce_linear},
    {{CT_REDUCE, "chain", SEG, 0, "chain towards the root"}, ct_reduce_chain},
    {{CT_REDUCE, "binary", SEG | COMM, 0, "binary tree"}, ct_reduce_binary},
    {{CT_REDUCE, "binomial", SEG, 0, "binomial tree, rank order kept"}, ct_reduce_binomial},
    {{CT_REDUCE, "rabenseifner", COMM, 0, "reduce-scatter (recursive halving) + binomial gather"},
     ct_reduce_rabenseifner},
    {{CT_REDUCE, "hier", SEG | HIER, 0,
      "node-aware: intra-node reduce to each leader, then inter-node reduce"},
     ct_reduce_hier},
    {{CT_REDUCE, "shm", SEG | SHM, 0,
      "shared segment: inputs copied in, sliced reduction in place, root copies out"},
     ct_reduce_shm},

    {{CT_ALLREDUCE, "native", NATIVE, 0, "the MPI library's MPI_Allreduce"}, NULL},
    {{CT_ALLREDUCE, "reduce_bcast", SEG, 0, "binomial reduce to rank 0 + binomial bcast"},
     ct_allreduce_reduce_bcast},
    {{CT_ALLREDUCE, "allgather_reduce", 0, 0, "ring allgather of all vectors + local reduce"},
     ct_allreduce_allgather_reduce},
    {{CT_ALLREDUCE, "recursive_doubling", 0, 0, "log2(N) whole-vector exchanges"},
     ct_allreduce_recursive_doubling},
    {{CT_ALLREDUCE, "ring", COMM, 0, "ring reduce-scatter + ring allgather"}, ct_allreduce_ring},
    {{CT_ALLREDUCE, "rabenseifner", COMM, 0,
      "reduce-scatter (recursive halving) + allgather (recursive doubling)"},
     ct_allreduce_rabenseifner},
    {{CT_ALLREDUCE, "hier", SEG | HIER, 0,
      "node-aware: intra reduce, inter allreduce among leaders, intra bcast"},
     ct_allreduce_hier},
    {{CT_ALLREDUCE, "shm", SEG | SHM, 0,
      "shared segment: inputs copied in, sliced reduction in place, all copy out"},
     ct_allreduce_shm},
    {{CT_ALLREDUCE, "cma", SEG | SHM | ONE, 65536,
      "one copy: each rank reduces its slice read from the others' inputs in place, then "
      "reads the others' slices (cross-memory attach; one node)"},
     ct_allreduce_cma},

    {{CT_SCATTER, "native", NATIVE, 0, "the MPI library's MPI_Scatter"}, NULL},
    {{CT_SCATTER, "linear", SEG, 0, "root sends each rank its block (flat tree)"},
     ct_scatter_linear},
    {{CT_SCATTER, "chain", SEG, 0, "chain: each rank keeps its block, forwards the rest"},
     ct_scatter_chain},
    {{CT_SCATTER, "binary", SEG, 0, "balanced binary tree of contiguous subtrees"},
     ct_scatter_binary},
    {{CT_SCATTER, "binomial", SEG, 0, "binomial tree, ceil(log2 N) rounds"}, ct_scatter_binomial},
    {{CT_SCATTER, "shm", SEG | SHM, 0,
      "shared segment: root copies every block in, each rank copies its own out"},
     ct_scatter_shm},
    {{CT_SCATTER, "cma", SHM | ONE, 0,
      "one copy: each rank reads its block from the root's buffer (cross-memory attach)"},
     ct_scatter_cma},

    {{CT_GATHER, "native", NATIVE, 0, "the MPI library's MPI_Gather"}, NULL},
    {{CT_GATHER, "linear", SEG, 0, "root receives every block (flat tree)"}, ct_gather_linear},
    {{CT_GATHER, "chain", SEG, 0, "chain towards the root, blocks accumulating"},
     ct_gather_chain},
    {{CT_GATHER, "binary", SEG, 0, "balanced binary tree of contiguous subtrees"},
     ct_gather_binary},
    {{CT_GATHER, "binomial", SEG, 0, "binomial tree, ceil(log2 N) rounds"}, ct_gather_binomial},
    {{CT_GATHER, "shm", SEG | SHM, 0,
      "shared segment: every rank copies its block in, the root copies all out"},
     ct_gather_shm},
    {{CT_GATHER, "cma", SHM | ONE, 0,
      "one copy: the root reads every block from its rank's buffer (cross-memory attach)"},
     ct_gather_cma},

    {{CT_ALLGATHER, "native", NATIVE, 0, "the MPI library's MPI_Allgather"}, NULL},
    {{CT_ALLGATHER, "gather_bcast", 0, 0, "binomial gather to rank 0 + binomial bcast"},
     ct_allgather_gather_bcast},
    {{CT_ALLGATHER, "ring", 0, 0, "N-1 steps around a ring"}, ct_allgather_ring},
    {{CT_ALLGATHER, "recursive_doubling", 0, 0,
      "log2(N) exchanges of doubling size (non-powers of two folded in)"},
     ct_allgather_recursive_doubling},
    {{CT_ALLGATHER, "bruck", 0, 0, "Bruck: ceil(log2 N) steps, any N"}, ct_allgather_bruck},
    {{CT_ALLGATHER, "hier", HIER, 0,
      "node-aware: intra gather, inter allgather among leaders, intra bcast"},
     ct_allgather_hier},
    {{CT_ALLGATHER, "shm", SEG | SHM, 0,
      "shared segment: every rank copies its block in and all the others out"},
     ct_allgather_shm},
    {{CT_ALLGATHER, "cma", SHM | ONE, 0,
      "one copy: every rank reads each block from its owner's buffer (cross-memory attach)"},
     ct_allgather_cma},

    {{CT_ALLTOALL, "native", NATIVE, 0, "the MPI library's MPI_Alltoall"}, NULL},
    {{CT_ALLTOALL, "gather_scatter", 0, 0, "gather everything to rank 0, which scatters"},
     ct_alltoall_gather_scatter},
    {{CT_ALLTOALL, "pairwise", 0, 0, "N-1 steps, step k: send to rank+k, receive from rank-k"},
     ct_alltoall_pairwise},
    {{CT_ALLTOALL, "bruck", 0, 0, "Bruck: ceil(log2 N) steps of packed blocks"},
     ct_alltoall_bruck},
    {{CT_ALLTOALL, "shm", SEG | SHM, 0,
      "shared segment: every rank copies a block per rank in, and its own blocks out"},
     ct_alltoall_shm},
    {{CT_ALLTOALL, "cma", SHM | ONE, 0,
      "one copy: every rank reads its block from each rank's buffer (cross-memory attach)"},
     ct_alltoall_cma},

    {{CT_BARRIER, "native", NATIVE, 0, "the MPI library's MPI_Barrier"}, NULL},
    {{CT_BARRIER, "ring", 0, 0, "extended ring: a token around the ring, then a release around it"},
     ct_barrier_ring},
    {{CT_BARRIER, "binomial", 0, 0, "distributed binomial: fan-in to rank 0, fan-out"},
     ct_barrier_binomial},
    {{CT_BARRIER, "tournament", 0, 0, "tournament: pairwise winners up, release down"},
     ct_barrier_tournament},
    {{CT_BARRIER, "dissemination", 0, 0, "dissemination: ceil(log2 N) rounds, rank+2^k"},
     ct_barrier_dissemination},
    {{CT_BARRIER, "hier", HIER, 0,
      "node-aware: intra fan-in, inter barrier among leaders, intra release"},
     ct_barrier_hier},
    {{CT_BARRIER, "shm", SHM, 0, "shared flags: dissemination, no message (one node)"},
     ct_barrier_shm},

    {{CT_ALLGATHERV, "native", NATIVE, 0, "the MPI library's MPI_Allgatherv"}, NULL},
    {{CT_ALLGATHERV, "ring", 0, 0, "N-1 steps around a ring, blocks at their displacements"},
     ct_allgatherv_ring},
    {{CT_ALLGATHERV, "bruck", 0, 0, "Bruck: ceil(log2 N) steps of packed blocks, any N"},
     ct_allgatherv_bruck},

    {{CT_ALLTOALLV, "native", NATIVE, 0, "the MPI library's MPI_Alltoallv"}, NULL},
    {{CT_ALLTOALLV, "pairwise", 0, 0, "N-1 steps, step k: send to rank+k, receive from rank-k"},
     ct_alltoallv_pairwise},
    {{CT_ALLTOALLV, "linear", RADIX, 0,
      "all peers in windows of radix messages per round (radix option, default 4)"},
     ct_alltoallv_linear},

    {{CT_GATHERV, "native", NATIVE, 0, "the MPI library's MPI_Gatherv"}, NULL},
    {{CT_GATHERV, "linear", 0, 0, "root receives every block at its displacement (flat tree)"},
     ct_gatherv_linear},
    {{CT_GATHERV, "binomial", CT_ALG_ALL_COUNTS, 0,
      "binomial tree of packed subtrees, ceil(log2 N) rounds (counts broadcast first)"},
     ct_gatherv_binomial},

    {{CT_SCATTERV, "native", NATIVE, 0, "the MPI library's MPI_Scatterv"}, NULL},
    {{CT_SCATTERV, "linear", 0, 0, "root sends each rank its block (flat tree)"},
     ct_scatterv_linear},
    {{CT_SCATTERV, "binomial", CT_ALG_ALL_COUNTS, 0,
      "binomial tree of packed subtrees, ceil(log2 N) rounds (counts broadcast first)"},
     ct_scatterv_binomial},

    {{CT_REDUCE_SCATTER_BLOCK, "native", NATIVE, 0, "the MPI library's MPI_Reduce_scatter_block"},
     NULL},
    {{CT_REDUCE_SCATTER_BLOCK, "recursive_halving", COMM, 0,
      "log2(N) exchanges of halving windows (non-powers of two folded in)"},
     ct_reduce_scatter_block_recursive_halving},
    {{CT_REDUCE_SCATTER_BLOCK, "ring", COMM, 0, "N-1 steps around a ring, partial sums passed on"},
     ct_reduce_scatter_block_ring},
    {{CT_REDUCE_SCATTER_BLOCK, "pairwise", 0, 0,
      "N-1 pairwise exchanges of contributions, reduced in rank order"},
     ct_reduce_scatter_block_pairwise},

    {{CT_REDUCE_SCATTER, "native", NATIVE, 0, "the MPI library's MPI_Reduce_scatter"}, NULL},
    {{CT_REDUCE_SCATTER, "recursive_halving", COMM, 0,
      "log2(N) exchanges of halving windows (non-powers of two folded in)"},
     ct_reduce_scatter_recursive_halving},
    {{CT_REDUCE_SCATTER, "ring", COMM, 0, "N-1 steps around a ring, partial sums passed on"},
     ct_reduce_scatter_ring},
    {{CT_REDUCE_SCATTER, "pairwise", 0, 0,
      "N-1 pairwise exchanges of contributions, reduced in rank order"},
     ct_reduce_scatter_pairwise},

    {{CT_SCAN, "native", NATIVE, 0, "the MPI library's MPI_Scan"}, NULL},
    {{CT_SCAN, "recursive_doubling", 0, 0, "ceil(log2 N) exchanges of partial prefixes"},
     ct_scan_recursive_doubling},
    {{CT_SCAN, "linear", 0, 0, "chain: rank r-1's prefix, folded with r's input, to r+1"},
     ct_scan_linear},

    {{CT_EXSCAN, "native", NATIVE, 0, "the MPI library's MPI_Exscan"}, NULL},
    {{CT_EXSCAN, "recursive_doubling", 0, 0, "ceil(log2 N) exchanges of partial prefixes"},
     ct_exscan_recursive_doubling},
    {{CT_EXSCAN, "linear", 0, 0, "chain: rank r-1's prefix to r, which folds its input in"},
     ct_exscan_linear},
};

#define NENTRIES ((int)(sizeof table / sizeof table[0]))

static const char *const coll_names[CT_NCOLL] = {
    "bcast",   "reduce",  "allreduce", "scatter",  "gather",
    "allgather", "alltoall", "barrier", "allgatherv", "alltoallv",
    "gatherv", "scatterv", "reduce_scatter_block", "reduce_scatter", "scan",
    "exscan"};

int ct_algorithm_count(void) { return NENTRIES; }

const ct_algorithm_info *ct_algorithm_get(int i)
{
    return (i >= 0 && i < NENTRIES) ? &table[i].info : NULL;
}

int ct_registry_index(const ct_algorithm_info *info)
{
    /* info is the first member of an entry of table[] (the registry hands out no other). */
    return (int)((const ct_registry_entry *)(const void *)info - table);
}

const ct_registry_entry *ct_registry_find(ct_coll coll, const char *name)
{
    if (!name)
        return NULL;
    /* The select layer hands the engine the registry's own string: found by its
     * address, no string compared (issue 35: a name was resolved three times a call).
     * The compiler may merge equal literals of several operations: the operation too. */
    for (int i = 0; i < NENTRIES; i++)
        if (table[i].info.name == name && table[i].info.coll == coll)
            return &table[i];
    for (int i = 0; i < NENTRIES; i++)
        if (table[i].info.coll == coll && strcmp(table[i].info.name, name) == 0)
            return &table[i];
    return NULL;
}

const ct_algorithm_info *ct_algorithm_find(ct_coll coll, const char *name)
{
    const ct_registry_entry *e = ct_registry_find(coll, name);
    return e ? &e->info : NULL;
}

const char *ct_coll_name(ct_coll coll)
{
    return (coll >= 0 && coll < CT_NCOLL) ? coll_names[coll] : NULL;
}

int ct_coll_from_name(const char *name)
{
    for (int c = 0; c < CT_NCOLL; c++)
        if (name && strcmp(name, coll_names[c]) == 0)
            return c;
    return -1;
}

/* Whether a call of e runs on a shared segment: a shared-memory algorithm, or a
 * hierarchical one whose intra part is one (the node's segment). */
static int uses_segment(const ct_registry_entry *e, const ct_params *p)
{
    if (e->info.flags & SHM)
        return 1;
    const char *intra, *inter;
    unsigned flags;
    char why[160];
    return (e->info.flags & CT_ALG_HIERARCHICAL) &&
           !ct_hier_parts((ct_coll)p->coll, p->intra, p->inter, &intra, &inter, &flags, why,
                          sizeof why) &&
           (flags & SHM);
}

int ct_sched_generate(const char *alg, const ct_params *p, ct_sched *s)
{
    const ct_registry_entry *e = ct_registry_find((ct_coll)p->coll, alg);
    if (!e || !e->generate)
        return -1;
    ct_sched_reset(s);
    if (ct_call_empty(p) || p->size == 1) {
        /* Nothing to move; a single rank only copies its input. */
        ct_sched_local_only(p, s);
        if (uses_segment(e, p))
            ct_sched_signal(s, CT_STEP_DONE); /* every call on the segment ends so */
        return s->error ? -1 : 0;
    }
    int rc = e->generate(p, s);
    return (rc || s->error) ? -1 : 0;
}

static char registry_json[65536];

static void build_registry_json(void)
{
    char *buf = registry_json;
    size_t used = 0;
    used += (size_t)snprintf(buf + used, sizeof registry_json - used, "[");
    for (int i = 0; i < NENTRIES && used < sizeof registry_json; i++) {
        const ct_algorithm_info *a = &table[i].info;
        used += (size_t)snprintf(
            buf + used, sizeof registry_json - used,
            "%s{\"coll\":\"%s\",\"name\":\"%s\",\"segmentable\":%s,\"needs_commutative\":%s,"
            "\"takes_radix\":%s,\"native\":%s,\"hierarchical\":%s,\"shared_memory\":%s,"
            "\"blocking_only\":%s,\"default_segsize\":%lld,"
            "\"summary\":\"%s\"}",
            i ? "," : "", coll_names[a->coll], a->name, (a->flags & SEG) ? "true" : "false",
            (a->flags & COMM) ? "true" : "false", (a->flags & RADIX) ? "true" : "false",
            (a->flags & NATIVE) ? "true" : "false", (a->flags & HIER) ? "true" : "false",
            (a->flags & SHM) ? "true" : "false",
            /* what the engine refuses in a non-blocking or persistent call (check_form) */
            (a->flags & CT_ALG_ALL_COUNTS) ? "true" : "false",
            a->default_segsize, a->summary);
    }
    if (used < sizeof registry_json)
        snprintf(buf + used, sizeof registry_json - used, "]");
}

const char *ct_registry_json(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_registry_json);
    return registry_json;
}
