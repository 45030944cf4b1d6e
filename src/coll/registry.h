/* Internal view of the registry: the public info plus the generator. */
#ifndef CT_REGISTRY_H
#define CT_REGISTRY_H

#include "colltune.h"
#include "algorithms.h"

typedef struct ct_registry_entry {
    ct_algorithm_info info;
    ct_generator generate; /* NULL for native */
} ct_registry_entry;

const ct_registry_entry *ct_registry_find(ct_coll coll, const char *name);

/* The position of a registry entry's info among ct_algorithm_get's (0 ..
 * ct_algorithm_count() - 1), in constant time: counters indexed per algorithm. */
int ct_registry_index(const ct_algorithm_info *info);

/* Generates the schedule of p->rank for algorithm alg of collective p->coll.
 * Returns 0, or -1 when the algorithm does not exist or is native. (Declared with
 * the registry that defines it: the schedule layer below knows no algorithm.) */
int ct_sched_generate(const char *alg, const ct_params *p, ct_sched *s);

/* The parts of coll's hierarchical algorithm (see ct_options.intra / .inter in
 * colltune.h): resolves NULL or empty names to the defaults and checks the
 * others. On success *intra_out / *inter_out are the registry's own name
 * strings and *flags the CT_ALG_NEEDS_COMMUTE of either part and the
 * CT_ALG_SHARED_MEMORY of the intra part (its segment is then the node's: see
 * ct_compose); -1 with the reason in why (an inter part may not be a
 * shared-memory one). */
int ct_hier_parts(ct_coll coll, const char *intra, const char *inter, const char **intra_out,
                  const char **inter_out, unsigned *flags, char *why, size_t whylen);

/* The start of every hierarchical generator: its parts (p->intra / p->inter
 * or the defaults) and the layout (one_node: all ranks on one node). With
 * keep_order, a non-commutative operation on a layout whose nodes are not
 * intervals of ranks gets the one-node layout (reductions keep rank order
 * only on intervals). -1 on bad parts or layout. */
int ct_hier_begin(const ct_params *p, ct_layout *L, int one_node, int keep_order,
                  const char **intra, const char **inter);

/* The end of every hierarchical generator: frees the layout and, after
 * shared-memory parts, signals the call done with the segment; returns rc, or
 * -1 when that fails. */
int ct_hier_end(ct_sched *s, ct_layout *L, int rc);

#endif
