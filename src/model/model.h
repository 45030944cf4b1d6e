/*
 * The schedule model: predicts a collective's completion time by replaying the
 * schedules of all N ranks (generated in one process, no MPI) with measured
 * point-to-point costs (p2p.json, docs/P2P.md), after the communication
 * schedules of Vadhiyar, Fagg and Dongarra (section 3.3 of the seed paper).
 *
 * Costs of one message of m bytes from rank a to rank b:
 *   os(m)  a's processor is busy posting it (MPI_Isend's time);
 *   g(m)   a starts no two sends closer than the gap of the first;
 *   T(m)   one-way time (half a ping-pong): data posted at s is complete at b
 *          at s + T(m) when b is waiting for it;
 *   or(m)  b's processor is busy completing it: b's receives complete one
 *          after another, each at max(ready, b's clock) + or(m), where
 *          ready = s + T(m) - or(m).
 * Modes: "immediate" and "blocking" sends leave whether or not the receive is
 * posted (the send completes at s + g); a "rendezvous" send moves its data only
 * once the receive is posted: s becomes max(s, receive posted), and the send
 * completes when the data has arrived. os and g grow with the number of sends
 * the rank has pending (the sends posted before it in the same round, which
 * have not been waited for): os_pending/g_pending give their value at each of
 * the measured pending counts, interpolated between.
 *
 * Round semantics are the executor's (sched.h): a rank posts every SEND and
 * RECV of a round in order, waits for all of them, then runs the round's
 * REDUCEs and COPYs (costed from the local table) before the next round.
 * Costs are interpolated linearly in message size between measured points,
 * the first point's value below it and the last point's cost per byte above.
 */
#ifndef CT_MODEL_H
#define CT_MODEL_H

#include <stddef.h>

#include "sched/sched.h"

enum { CT_MODE_IMMEDIATE = 0, CT_MODE_BLOCKING = 1, CT_MODE_RENDEZVOUS = 2 };

/* Point-to-point costs of one communication layer, all in microseconds; the
 * arrays are the caller's (the model copies nothing) and sizes ascend. */
typedef struct ct_cost_table {
    int npoints;
    const double *size_bytes;
    const double *os_us, *or_us, *g_us, *oneway_us;
    const int *mode;             /* CT_MODE_* per point */
    int npending;                /* 0: os and g do not depend on pending sends */
    const double *pending_counts;        /* ascending, the first usually 1 */
    const double *os_pending_us;         /* npending x npoints, row k = count k */
    const double *g_pending_us;
    int nlocal;                  /* 0: local operations cost nothing */
    const double *local_bytes;
    const double *copy_us, *reduce_us;
} ct_cost_table;

typedef struct ct_model_result {
    double total_us;             /* the last rank's finish */
    double *rank_us;             /* caller's array of n finishes, or NULL */
    long messages;               /* messages replayed */
    char error[160];
} ct_model_result;

/* Replays the n schedules (one per rank) of one collective call; element
 * size elem_size bytes. 0, or -1 with res->error set (a schedule waits for a
 * message nobody sends, bad cost table, no memory). */
int ct_model_run(const ct_cost_table *costs, int n, ct_sched *const *scheds, size_t elem_size,
                 ct_model_result *res);

/* The same with two layers: a message between ranks of different nodes
 * (node_of[a] != node_of[b]) costs inter's os, or, g, T and mode, every other
 * message costs's; local operations always cost costs' local table. inter or
 * node_of NULL: costs everywhere (ct_model_run). */
int ct_model_run_layers(const ct_cost_table *costs, const ct_cost_table *inter,
                        const int *node_of, int n, ct_sched *const *scheds, size_t elem_size,
                        ct_model_result *res);

/* Generates every rank's schedule of algorithm alg for the call described by
 * p (p->rank ignored) and replays them. */
int ct_model_predict(const ct_cost_table *costs, const char *alg, const ct_params *p,
                     ct_model_result *res);

/* The same with two layers, the node of each rank from p->node_of (which the
 * hierarchical algorithms also follow). */
int ct_model_predict_layers(const ct_cost_table *costs, const ct_cost_table *inter,
                            const char *alg, const ct_params *p, ct_model_result *res);

/* The same by names, for callers without ct_params (Python through ctypes):
 * op as ct_coll_from_name takes it, count in elements of type_size bytes (per
 * block for the data-movement operations), segsize in bytes (0: unsegmented,
 * -1: the algorithm's default; ignored by algorithms that do not segment),
 * radix 0 for the default. rank_us may be NULL; err gets the reason of a -1. */
int ct_model_predict_named(const ct_cost_table *costs, const char *op, const char *alg, int n,
                           int root, long long count, int type_size, long long segsize_bytes,
                           int radix, double *total_us, double *rank_us, char *err, int errlen);

/* ct_model_predict_named with two layers and a node layout (node_of: n
 * entries numbered by first appearance, or NULL for one node), and the parts
 * of a hierarchical algorithm (NULL: its defaults; see ct_options.intra). */
int ct_model_predict_nodes_named(const ct_cost_table *costs, const ct_cost_table *inter,
                                 const int *node_of, const char *op, const char *alg,
                                 const char *intra_part, const char *inter_part, int n,
                                 int root, long long count, int type_size,
                                 long long segsize_bytes, int radix, double *total_us,
                                 double *rank_us, char *err, int errlen);

/* Interpolated cost of m bytes in one of the table's columns (exposed for the
 * tests and the split-tree model). */
double ct_cost_at(const ct_cost_table *costs, const double *column, double m);

#endif
