/*
 * One collective call, whatever the operation: the common form the public
 * API and the drop-in both hand to ct_call_run. Internal to colltune.
 */
#ifndef CT_API_CALL_H
#define CT_API_CALL_H

#include "colltune.h"

typedef struct ct_call {
    ct_coll coll;
    const void *sendbuf;    /* bcast: unused */
    int sendcount;          /* bcast / reduce / allreduce: equal to recvcount */
    MPI_Datatype sendtype;
    void *recvbuf;          /* bcast: the buffer */
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Op op;              /* reduce / allreduce */
    int root;               /* rooted operations */
    MPI_Comm comm;
    MPI_Request *request;   /* non-NULL: the non-blocking form (MPI_Ibcast, ...) */
} ct_call;

/* The per-rank arrays of the v-variants and reduce_scatter, as MPI gives them
 * (NULL where the call has none or they are not significant on this rank):
 * allgatherv and gatherv (root) recvcounts / rdispls; scatterv (root)
 * sendcounts / sdispls; alltoallv all four; reduce_scatter recvcounts. The
 * scalar sides (allgatherv's and gatherv's sendcount, scatterv's recvcount)
 * stay in ct_call; reduce_scatter_block, scan and exscan need none of these. */
typedef struct ct_vargs {
    const int *sendcounts, *sdispls;
    const int *recvcounts, *rdispls;
} ct_vargs;

/* What a call colltune does not run becomes (native_on_reject): the public
 * API's error, with colltune's message (RAISE); the library's own collective,
 * so the program sees exactly what native MPI does (NATIVE, the drop-in); or
 * nothing, reported to the caller, who starts the library's own (REPORT: the
 * persistent forms; ct_call_prepare only). */
enum { CT_REJECT_RAISE = 0, CT_REJECT_NATIVE = 1, CT_REJECT_REPORT = 2 };

/*
 * Runs c with the options' algorithm (NULL opts: native). On arguments
 * colltune rejects, the public API raises its own error (with a message); the
 * drop-in passes native_on_reject and the call goes to the MPI library, so the
 * application sees exactly the error (or behaviour) native MPI gives. The
 * same applies to an algorithm that cannot serve the call (a commutative-only
 * algorithm given a non-commutative operation). *ran is set to the name of
 * the algorithm that ran ("native" for the MPI library).
 */
int ct_call_run(const ct_call *c, const ct_options *opts, int native_on_reject,
                const char **ran);

/* Bytes per rank the call moves (the message, the vector, or one rank's block
 * of the data-movement operations; 0 for the barrier), for the tuning table and
 * the log; -1 when the arguments make no sense. */
long long ct_call_bytes(const ct_call *c);
/* The same where the caller knows its rank in c->comm (ct_call_comm_shape; 0 for
 * MPI_COMM_NULL), which gather's and scatter's depend on: the drop-in asks the shape
 * once per call and hands it here. */
long long ct_call_bytes_at(const ct_call *c, int rank);

/* The communicator's size, rank and whether it is an inter-communicator: from colltune's
 * state of it when it has one (a repeated call asks MPI nothing), else from MPI. */
void ct_call_comm_shape(MPI_Comm comm, int *size, int *rank, int *inter);

/* The MPI library's own collective for c (through PMPI): the non-blocking one
 * when c->request is set. */
int ct_call_native(const ct_call *c);

/* The options a public ct_* call runs with: the caller's when they name an
 * algorithm; else the select layer's choice for the call (src/select: forced by
 * COLLTUNE_<OP>_ALGORITHM, else the loaded table, its non-blocking entries for a
 * call with a request, its persistent ones for a ct_<op>_init (persistent 1)), the
 * caller's other options kept, in *chosen; else the caller's (no algorithm: the
 * library's collective). A bad environment sets *err, which the call returns: what
 * the drop-in's MPI_* calls say. */
const ct_options *ct_call_public_options(const ct_call *c, const ct_vargs *v,
                                         const ct_options *opts, int thread_running,
                                         int persistent, ct_options *chosen, int *err);

/* The same three for any operation, with its arrays (v NULL: none). Where the
 * ranks of a call cannot all know the same size (gatherv, scatterv, alltoallv:
 * each rank sees only its own counts), ct_call_bytes_v says the rank's own
 * block, and ct_call_same_size_v is 0: a size-keyed choice (the tuning table)
 * could differ between ranks and must not be made. */
int ct_call_run_v(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                  int native_on_reject, const char **ran);
long long ct_call_bytes_v(const ct_call *c, const ct_vargs *v);
int ct_call_same_size_v(ct_coll coll);
int ct_call_native_v(const ct_call *c, const ct_vargs *v);

#endif
