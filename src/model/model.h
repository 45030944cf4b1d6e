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
 *
 * Contention (optional: nconc = 0 gives the model without it, exactly). The
 * transfer of a message occupies [x, x + T'(m)] on its resources, x when its
 * data starts to move: a message inside a node uses that node (the sender's
 * node; every rank is on node 0 without a layout), a message between nodes
 * uses its sending node's outgoing link and its receiving node's incoming
 * link. Its concurrency c on a resource is the time-weighted mean number of
 * transfers on that resource during its own interval, itself included (k
 * transfers over the same interval: c = k; one that overlaps another for half
 * its time: 1.5), and c of the message is the larger of its resources'. Its
 * one-way time becomes T'(m) = T(m) F(c, m), where F is the measured per-pair
 * one-way time of c concurrent pairs over that of one pair (oneway_conc_us at
 * conc_pairs, interpolated linearly in c between the measured counts and
 * extrapolated linearly beyond the last two; the one-pair reference is the
 * row at count 1 when measured, else oneway_us), never below 1. The table
 * that prices the message (intra or inter layer) gives F. Its gap g is
 * stretched by the same F (the sender's injection shares the bandwidth; else
 * an eager pipeline would pile up transfers without bound); os and or are not.
 * Since T' moves the intervals, the replay is repeated, each pass taking c
 * from the intervals of the pass before (the first pass without contention),
 * until no factor moves by more than CT_MODEL_FACTOR_TOLERANCE of itself (at
 * most CT_MODEL_MAX_PASSES passes; once the changes grow from one pass to the
 * next, c is averaged with the previous pass's so that alternating solutions
 * settle in between). An inter layer
 * with contention data replaces the shared sending link of above (its
 * measured factor already contains the link's sharing); without it the link
 * queue stays as it is.
 *
 * Host stack (optional: nstream_sizes = 0 in the inter table gives the model without
 * it, exactly). Issue 21: on hosts whose network stacks share a few cores (the test
 * bed), a host that sends and receives at once, or receives several streams, spaces
 * the messages out more than its link does: per-message processing, not bandwidth.
 * Measured by `ct_p2p --stream` (colltune p2p) as per-message gaps of streams of
 * m-byte messages: one idle pair P(m), both directions of a pair D(m), k hosts sending
 * to one I(k, m). A message between nodes A -> B holds A's out-stack and B's in-stack
 * over [x, x + its link occupancy]. Over that interval, i is the time-weighted number
 * of holds on B's in-stack (itself included: its fan-in) and d the larger of the
 * time-weighted numbers of holds on A's in-stack and on B's out-stack (the other
 * direction at either end), at most 1. It is stretched by
 *   S = max(I(i, m) / P(m), 1 + d (D(m) / P(m) - 1)), never below 1
 * (I(1) = P; linear in i between the measured counts and beyond the last two; no duplex
 * term for a rendezvous message, whose one handshake the duplex stream, where each
 * handshake waits behind the other direction's data, does not describe): its
 * one-way time, its gap and its link occupancy. With contention data too, the two
 * factors multiply. The same repeated replays settle i and d as they settle c.
 *
 * Link bucket (optional: link_bucket_bytes = 0 gives the model without it, exactly). A
 * rate limiter such as tc tbf (the test bed) lets a link that has been idle send up to
 * B bytes ahead of its rate, and T(m), measured by ping-pong, has a full bucket: at
 * 1 Gbit/s T(256 KiB) is 1.2 ms where the wire needs 2.1 ms. A collective that keeps a
 * link busy sees the rate instead. With B, each node's link keeps a bucket level: a
 * message of m bytes starting at x finds c = min(B, level after the link's previous
 * message + idle time / G) tokens (G: the sustained cost of a byte, ct_link_occupancy).
 * The ping-pong saved it a = min(m, B, (m G - (T(m) - T(smallest))) / G) bytes (its own
 * steady state, not a full bucket: about m / 2 below 2B on a tbf link, which refills
 * over the one-way time it idles between messages); it takes u = min(c, m, B) tokens,
 * each a byte sent ahead of the rate: it holds the link for max(g(m), (m - u) G) and
 * arrives (a - u) G later than T(m) says (earlier when u > a).
 * The level a link starts with is its steady state in a loop of calls: the replay runs
 * again with each link starting from where the previous pass left it plus the idle
 * time around the end of the call (the call's length less the link's busy span), until
 * no level moves by a byte (at most CT_MODEL_BUCKET_PASSES; the first starts full).
 *
 * Sends of one round (between nodes, with a layout). The messages a rank posts in one
 * round to receivers on other nodes leave together, one flow a receiver (a connection,
 * in order). The link's queue takes up to Q = flow_head_bytes of a flow before the next
 * flow's bytes (its socket's and the limiter's share), so the flows take turns of Q
 * bytes in posting order: with o bytes of flow j out in its k-th turn (k = ceil(o / Q)),
 * the link has sent L = o + sum over the flows f before j of min(F_f, k Q) + over those
 * after it of min(F_f, (k - 1) Q), F_f their bytes. Small flows go in turn, large ones
 * share the rate (Q = 0: L = sum over all flows of min(F_f, o), TCP's fair share from the
 * first byte). The messages take the link back to back in the order they land; each
 * lands (L - the bytes that took the link up to and including it) G after its turn
 * says. A rendezvous send
 * moves once its receiver is there; the round shares once all are (a receive waits for
 * that unless nothing else can move). Messages that hold the link for their gap rather
 * than at the rate share nothing. Between nodes a rendezvous receive costs the receiver
 * or(m) less the transfer (T(m) - T(smallest)): the p2p's or(m) holds the transfer,
 * which the network moves, not the receiving processor.
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
    /* Contention (see above); nconc = 0: none. Appended last: callers that
     * built the table before these fields existed go through
     * ct_model_predict_nodes_named, which reads only the fields above. */
    int nconc;
    const double *conc_pairs;    /* ascending counts of concurrent pairs, >= 1 */
    const double *oneway_conc_us; /* nconc x npoints, row j = per-pair one-way
                                     time with conc_pairs[j] pairs at once */
    /* Host stacks (see "Host stack" above; an inter-node table only); nstream_sizes =
     * 0: none. Appended after the contention fields, with their own sizes like the
     * local table; per-message gaps of a stream of messages of each size. */
    int nstream_sizes;
    const double *stream_bytes;     /* ascending message sizes of the streams */
    const double *stream_pair_us;   /* one idle pair */
    const double *stream_duplex_us; /* both directions of one pair at once; NULL: none */
    int nfanin;                     /* fan-in counts measured (0: none) */
    const double *fanin_flows;      /* ascending counts >= 2 of hosts sending to one */
    const double *stream_fanin_us;  /* nfanin x nstream_sizes */
    /* Link bucket (see "Link bucket" above; an inter-node table without contention data
     * only); 0: none. Appended last. */
    double link_bucket_bytes;
    /* Sends of one round (see above; inter-node): the bytes of a flow the link takes
     * before the next flow's turn; 0: the flows share from their first byte. Appended
     * last. */
    double flow_head_bytes;
} ct_cost_table;

/* The replays stop once no factor moves by more than the tolerance, or after
 * CT_MODEL_MAX_PASSES (converged 0: the last pass's result). */
enum { CT_MODEL_MAX_PASSES = 64, CT_MODEL_BUCKET_PASSES = 8 };
#define CT_MODEL_FACTOR_TOLERANCE 1e-6

typedef struct ct_model_result {
    double total_us;             /* the last rank's finish */
    double *rank_us;             /* caller's array of n finishes, or NULL */
    long messages;               /* messages replayed */
    char error[160];
    int passes;                  /* replays run: 1 without contention */
    int converged;               /* the contention factors settled (1 without) */
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
 * of a hierarchical algorithm (NULL: its defaults; see ct_options.intra).
 * Reads the tables only up to reduce_us (the layout before contention, which
 * ctypes callers mirror): no contention. */
int ct_model_predict_nodes_named(const ct_cost_table *costs, const ct_cost_table *inter,
                                 const int *node_of, const char *op, const char *alg,
                                 const char *intra_part, const char *inter_part, int n,
                                 int root, long long count, int type_size,
                                 long long segsize_bytes, int radix, double *total_us,
                                 double *rank_us, char *err, int errlen);

/* The same, reading the whole tables, contention fields included. */
int ct_model_predict_contention_named(const ct_cost_table *costs, const ct_cost_table *inter,
                                      const int *node_of, const char *op, const char *alg,
                                      const char *intra_part, const char *inter_part, int n,
                                      int root, long long count, int type_size,
                                      long long segsize_bytes, int radix, double *total_us,
                                      double *rank_us, char *err, int errlen);

/* The contention factor F(c, m) of the table (1 without contention data;
 * exposed for the tests). */
double ct_contention_factor(const ct_cost_table *costs, double m, double c);

/* The host-stack factor S of an m-byte message with fan-in i and duplex share d (1
 * without stream data). */
double ct_stack_factor(const ct_cost_table *costs, double m, double fanin, double duplex);

/* Interpolated cost of m bytes in one of the table's columns (exposed for the
 * tests and the split-tree model). */
double ct_cost_at(const ct_cost_table *costs, const double *column, double m);

/* How long a message of m bytes between nodes holds its sending node's link: its gap
 * g(m), or m G when that is longer. G, the link's sustained cost of a byte: the gap a
 * byte of the largest stream of the host stack measurement when the table has one
 * (a pair streaming back to back, what the wire and its headers take), else the
 * per-byte gap of the table's largest point (LogGP's G). */
double ct_link_occupancy(const ct_cost_table *costs, double m);

#endif
