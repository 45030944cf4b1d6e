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

/* The MPI library's own collective for c (through PMPI): the non-blocking one
 * when c->request is set. */
int ct_call_native(const ct_call *c);

#endif
