/*
 * colltune: MPI collectives tuned for the machine they run on.
 *
 * Public C API. Every collective has MPI semantics (any predefined or derived
 * datatype, MPI_IN_PLACE where MPI allows it, count 0, predefined and
 * user-defined operations) and returns an MPI error code. Bad arguments are
 * reported through the communicator's error handler (with MPI_ERRORS_RETURN the
 * code is returned), never by aborting. An error string for the code is
 * available through MPI_Error_string.
 *
 * The library runs on top of an existing MPI: it needs MPI to be initialised,
 * and it uses a private duplicate of each communicator it is called on, so its
 * messages never match the application's.
 */
#ifndef COLLTUNE_H
#define COLLTUNE_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CT_VERSION_STRING "0.1.0"

/* The collective operations colltune knows. */
typedef enum ct_coll {
    CT_BCAST = 0,
    CT_REDUCE,
    CT_ALLREDUCE,
    CT_SCATTER,
    CT_GATHER,
    CT_ALLGATHER,
    CT_ALLTOALL,
    CT_BARRIER,
    /* The v-variants, reduce-scatters and scans (issue 22). */
    CT_ALLGATHERV,
    CT_ALLTOALLV,
    CT_GATHERV,
    CT_SCATTERV,
    CT_REDUCE_SCATTER_BLOCK,
    CT_REDUCE_SCATTER,
    CT_SCAN,
    CT_EXSCAN,
    CT_NCOLL
} ct_coll;

/*
 * How to run one call. Pass NULL (or an options struct fresh from
 * ct_options_init) for the automatic choice: the tuning table when one is
 * loaded, else the native MPI collective.
 */
typedef struct ct_options {
    /* Registry name ("binomial", "ring", ... or "native"); NULL = automatic. */
    const char *algorithm;
    /* Nonzero: segsize holds the segment size in bytes and must be > 0.
     * Zero: the algorithm's default (no segmentation for most). */
    int has_segsize;
    long long segsize;
    /* Radix of k-nomial trees; 0 = the default (4). Must be >= 2 otherwise. */
    int radix;
    /* Non-blocking tree collectives: the number S of tree levels, counted from
     * the leaves, that run on the application's core (inside the wait for
     * one-to-all operations, before the hand-off for all-to-one ones); the
     * upper levels run on the progress thread. 0: everything offloaded;
     * >= the tree's height: the blocking algorithm. CT_SPLIT_AUTO (what
     * ct_options_init sets): chosen by the split-tree model. */
    int split;
    /* Hierarchical algorithms ("hier" of bcast, reduce, allreduce, allgather,
     * barrier): registry names of the part inside each node (intra) and of the
     * part among the node leaders (inter); NULL = the defaults. Which
     * collective each part names:
     *   bcast:     intra bcast,  inter bcast      (defaults binomial, binomial)
     *   reduce:    intra reduce, inter reduce     (binomial, binomial)
     *   allreduce: intra reduce to the leader and the bcast of the same name
     *              back (linear, chain, binary, binomial); inter allreduce
     *              (binomial, recursive_doubling)
     *   allgather: intra gather to the leader and the bcast of the same name
     *              back; inter allgather among leaders (binomial, bruck)
     *   barrier:   intra zero-byte gather (fan-in) and bcast (release) of that
     *              name; inter barrier (binomial, dissemination)
     * The node of each rank comes from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
     * (computed once per communicator, on its first hierarchical call);
     * COLLTUNE_NODES=R (testing only) instead puts ranks r with equal r / R on
     * one node. The leader of a node is its lowest rank (for bcast and reduce,
     * the root on the root's node). intra "shm" runs the shared-memory family
     * on each node's own segment (the ranks of every node must share memory;
     * not for a non-commutative reduction on nodes that interleave ranks).
     * Other algorithms ignore both fields. */
    const char *intra;
    const char *inter;
} ct_options;

#define CT_SPLIT_AUTO (-1)

/* Fills *opts with the automatic choice: the loaded tuning table's (see
 * ct_table_use), else the native collective. */
void ct_options_init(ct_options *opts);

/* Loads a tuning table made by `colltune tune` (docs/TABLE.md) for every call
 * made without an algorithm. MPI_SUCCESS, or MPI_ERR_OTHER with the reason in
 * why (unreadable, another schema version, another machine or MPI). */
int ct_table_use(const char *path, char *why, int len);

/* gen-bindings: begin blocking-classic (scripts/gen-bindings.py) */
/* Broadcast, as MPI_Bcast. */
int ct_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const ct_options *opts);

/* Reduce, as MPI_Reduce (sendbuf may be MPI_IN_PLACE at the root). */
int ct_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const ct_options *opts);

/* Allreduce, as MPI_Allreduce (sendbuf may be MPI_IN_PLACE). */
int ct_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm, const ct_options *opts);

/* Scatter, as MPI_Scatter (recvbuf may be MPI_IN_PLACE at the root). */
int ct_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               const ct_options *opts);

/* Gather, as MPI_Gather (sendbuf may be MPI_IN_PLACE at the root). */
int ct_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
              const ct_options *opts);

/* Allgather, as MPI_Allgather (sendbuf may be MPI_IN_PLACE). */
int ct_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts);

/* All-to-all, as MPI_Alltoall (sendbuf may be MPI_IN_PLACE). */
int ct_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts);

/* Barrier, as MPI_Barrier. */
int ct_barrier(MPI_Comm comm, const ct_options *opts);
/* gen-bindings: end blocking-classic */

/* The v-variants, reduce-scatters and scans, as their MPI functions (the
 * arguments MPI calls significant on a rank only there; MPI_IN_PLACE where MPI
 * allows it). */
/* gen-bindings: begin blocking-v (scripts/gen-bindings.py) */
int ct_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                  const ct_options *opts);
int ct_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                 MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts);
int ct_gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
               MPI_Comm comm, const ct_options *opts);
int ct_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, MPI_Comm comm, const ct_options *opts);
int ct_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            const ct_options *opts);
int ct_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const ct_options *opts);
int ct_scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
            MPI_Comm comm, const ct_options *opts);
int ct_exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, const ct_options *opts);
/* gen-bindings: end blocking-v */

/* ---- Non-blocking collectives ------------------------------------------ */

/*
 * As their MPI_I* functions: ct_ibcast as MPI_Ibcast, ... ct_iexscan as
 * MPI_Iexscan (every collective above has its non-blocking twin). The
 * request is a real MPI request (a generalized request), to be completed with
 * ct_wait, ct_test, ct_waitall, ct_testall (with any other requests) or the
 * drop-in's MPI_Wait / MPI_Test / MPI_Request_get_status families, which check
 * colltune's requests themselves and hand MPI only the others (docs/DROPIN.md);
 * MPI_Request_free and MPI_Cancel on it are erroneous, as MPI says (the drop-in's
 * MPI_Request_free accepts it all the same, as the libraries do: docs/DROPIN.md). A progress
 * thread (ct_progress_start) runs the offloaded part of the schedule while the
 * application computes; the part that runs on the application's core (the
 * last opts->split levels of a one-to-all tree) runs inside those calls.
 * Without a progress thread (no MPI_THREAD_MULTIPLE, or not started)
 * everything runs inside them. The communicator, datatype and op may be freed
 * right after the start (ct_handles_held).
 * Collectives on one communicator must be started in the same order on every
 * rank, as MPI requires; several may be outstanding.
 */
/* gen-bindings: begin nonblocking (scripts/gen-bindings.py) */
int ct_ibcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
              const ct_options *opts, MPI_Request *request);
int ct_ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                const ct_options *opts, MPI_Request *request);
int ct_igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
               const ct_options *opts, MPI_Request *request);
int ct_iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts,
                  MPI_Request *request);
int ct_ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts,
                 MPI_Request *request);
int ct_ibarrier(MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                   const ct_options *opts, MPI_Request *request);
int ct_ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts,
                  MPI_Request *request);
int ct_igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                             const ct_options *opts, MPI_Request *request);
int ct_ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const ct_options *opts,
                       MPI_Request *request);
int ct_iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm, const ct_options *opts, MPI_Request *request);
/* gen-bindings: end nonblocking */

/* ---- Persistent collectives -------------------------------------------- */

/*
 * As their MPI 4 MPI_X_init functions: ct_bcast_init as MPI_Bcast_init, ...
 * ct_exscan_init as MPI_Exscan_init (without the info). The call is checked,
 * its algorithm chosen (opts, else the select layer's choice: the table's
 * persistent entries, else its blocking ones) and its schedule made once;
 * each ct_start runs it through the non-blocking engine, completed with ct_wait / ct_test (or the drop-in's
 * MPI_Wait ...); ct_request_free frees an inactive one. A call colltune would
 * leave to the library (native chosen, an inter-communicator, arguments it
 * refuses, an algorithm that serves blocking calls only) is refused with
 * MPI_ERR_ARG: MPI's own MPI_X_init is the program's to call. The tuner times
 * the persistent form with these (ct_bench --form persistent).
 */
/* gen-bindings: begin persistent (scripts/gen-bindings.py) */
int ct_bcast_init(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                  const ct_options *opts, MPI_Request *request);
int ct_reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   int root, MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    const ct_options *opts, MPI_Request *request);
int ct_gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   const ct_options *opts, MPI_Request *request);
int ct_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts,
                      MPI_Request *request);
int ct_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const ct_options *opts,
                     MPI_Request *request);
int ct_barrier_init(MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                      const ct_options *opts, MPI_Request *request);
int ct_gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                    MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 const ct_options *opts, MPI_Request *request);
int ct_reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const ct_options *opts,
                           MPI_Request *request);
int ct_scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm, const ct_options *opts, MPI_Request *request);
int ct_exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, const ct_options *opts, MPI_Request *request);
/* gen-bindings: end persistent */
/* Starts a persistent collective of ct_X_init (MPI_Start: MPI_ERR_REQUEST while
 * the previous start is in flight); any other request goes to MPI_Start. */
int ct_start(MPI_Request *request);
/* Frees an inactive persistent collective of ct_X_init (*request becomes
 * MPI_REQUEST_NULL); any other request goes to MPI_Request_free. */
int ct_request_free(MPI_Request *request);

/* As MPI_Wait / MPI_Test / MPI_Waitall / MPI_Testall, for any mix of requests,
 * colltune's too: while they wait they drive every pending application part,
 * not only those named (ranks may complete their collectives in any order). */
int ct_wait(MPI_Request *request, MPI_Status *status);
int ct_test(MPI_Request *request, int *flag, MPI_Status *status);
int ct_waitall(int count, MPI_Request requests[], MPI_Status *statuses);
int ct_testall(int count, MPI_Request requests[], int *flag, MPI_Status *statuses);

/* What colltune holds for non-blocking collectives still pending (started and
 * not yet completed by a wait or test): communicators, duplicated derived
 * datatypes and user-defined ops whose free by the program is deferred. All
 * zero once every request is complete; leak checks read it (NULL: not wanted).
 * The program may free its communicator, datatype and op right after the
 * start, as MPI allows: colltune keeps what it needs until completion. */
void ct_handles_held(int *comms, int *datatypes, int *ops);

/* Starts this process's progress thread, pinned to a communication core of
 * its node: a core none of the node's ranks is bound to (the ranks of comm on
 * this node share them out), or COLLTUNE_PROGRESS_CORES="2,3" (a list of OS
 * core ids). Collective over comm; needs MPI_THREAD_MULTIPLE (else returns
 * MPI_ERR_OTHER and the non-blocking collectives progress inside the waits).
 * COLLTUNE_PROGRESS=off disables it. The thread sleeps while nothing is in
 * flight and stops at MPI_Finalize. Idempotent. */
int ct_progress_start(MPI_Comm comm);
/* The progress thread's state: whether it runs, the core it is bound to (-1:
 * not bound), the communication cores on the node, how many collectives it has
 * completed, and how many split-tree parts it has finished, whole collectives
 * included (what a test can watch without calling MPI). */
typedef struct ct_progress_info {
    int running;
    int core;
    int comm_cores;
    long completed;
    long parts_done;
} ct_progress_info;
void ct_progress_query(ct_progress_info *info);

/*
 * The data-movement collectives (scatter, gather, allgather, alltoall) move
 * bytes: the send and receive types may differ as MPI allows (equal type
 * signatures), and non-contiguous types are packed and unpacked locally. This
 * assumes a homogeneous data representation across ranks, as every shared-
 * memory or single-architecture cluster has.
 */

/* ---- The algorithm registry -------------------------------------------- */

/* Properties of an algorithm (bit flags of ct_algorithm_info.flags). */
enum {
    CT_ALG_SEGMENTABLE   = 1u << 0, /* takes a segment size (pipelining) */
    CT_ALG_NEEDS_COMMUTE = 1u << 1, /* only for commutative operations */
    CT_ALG_TAKES_RADIX   = 1u << 2, /* uses ct_options.radix */
    CT_ALG_NATIVE        = 1u << 3, /* the MPI library's own collective */
    CT_ALG_HIERARCHICAL  = 1u << 4, /* node-aware: uses ct_options.intra / .inter */
    CT_ALG_SHARED_MEMORY = 1u << 5, /* through the node's shared segment: every rank of
                                       the communicator on one node (else refused) */
    CT_ALG_ALL_COUNTS    = 1u << 6, /* gatherv / scatterv: every rank needs every count
                                       (the call broadcasts the root's first) */
    CT_ALG_ONE_COPY      = 1u << 7  /* shared memory without the segment's copy: each rank
                                       reads its peers' buffers in place (cross-memory
                                       attach, probed; where it fails, the copy-through
                                       path of the segment) */
};

typedef struct ct_algorithm_info {
    ct_coll coll;
    const char *name;        /* unique within its collective */
    unsigned flags;          /* CT_ALG_* */
    long long default_segsize; /* bytes; 0 = unsegmented unless asked */
    const char *summary;     /* one line, for listings and docs */
} ct_algorithm_info;

/* Number of registered algorithms, all collectives together. */
int ct_algorithm_count(void);
/* The i-th algorithm, 0 <= i < ct_algorithm_count(); NULL otherwise. */
const ct_algorithm_info *ct_algorithm_get(int i);
/* Looks an algorithm up by collective and name; NULL if unknown. */
const ct_algorithm_info *ct_algorithm_find(ct_coll coll, const char *name);
/* "bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall",
 * "barrier"; NULL for an unknown value. */
const char *ct_coll_name(ct_coll coll);
/* Parses a collective name; returns -1 if unknown. */
int ct_coll_from_name(const char *name);
/* The whole registry as a JSON array (static storage; no MPI needed). */
const char *ct_registry_json(void);

#ifdef __cplusplus
}
#endif
#endif /* COLLTUNE_H */
