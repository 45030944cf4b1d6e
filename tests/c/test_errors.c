/*
 * Bad input returns an MPI error through the communicator's error handler
 * (MPI_ERRORS_RETURN here), with a message that says what was wrong; it never
 * aborts or hangs, and a correct call afterwards still works.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"

static int rank, nprocs, failures;

static void noncomm_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = ((int *)in)[i];
}

static void expect(const char *what, int rc, int want_class, const char *want_text)
{
    int cls = MPI_SUCCESS;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
    }
    int ok = rc != MPI_SUCCESS && cls == want_class && (!want_text || strstr(msg, want_text));
    if (!ok) {
        failures++;
        fprintf(stderr, "FAIL rank %d: %s: rc=%d class=%d (want %d) message '%s' (want '%s')\n",
                rank, what, rc, cls, want_class, msg, want_text ? want_text : "");
    } else if (rank == 0) {
        printf("ok   %-45s -> %s\n", what, msg);
    }
}

/* Bad input to scatter, gather, allgather, alltoall and barrier. Every rank
 * makes a call that fails before any message, except where MPI makes the
 * argument significant at some ranks only: then only those ranks call (the
 * root's own call would be valid and wait for the others). */
static void movement_errors(ct_options *o)
{
    int n = nprocs, root = n - 1, is_root = rank == root;
    int *s = calloc((size_t)n * 8, sizeof(int)), *r = calloc((size_t)n * 8, sizeof(int));
    MPI_Comm W = MPI_COMM_WORLD;

    /* Root out of range. */
    ct_options_init(o);
    o->algorithm = "binomial";
    expect("scatter root = size", ct_scatter(s, 2, MPI_INT, r, 2, MPI_INT, n, W, o),
           MPI_ERR_ROOT, "scatter: root");
    expect("gather root = -1", ct_gather(s, 2, MPI_INT, r, 2, MPI_INT, -1, W, o), MPI_ERR_ROOT,
           "gather: root");

    /* Negative counts (significant at every rank in these calls). */
    expect("scatter negative recvcount", ct_scatter(s, 2, MPI_INT, r, -2, MPI_INT, 0, W, o),
           MPI_ERR_COUNT, "scatter: negative count");
    expect("gather negative sendcount", ct_gather(s, -1, MPI_INT, r, 2, MPI_INT, 0, W, o),
           MPI_ERR_COUNT, "gather: negative count");
    o->algorithm = "ring";
    expect("allgather negative recvcount",
           ct_allgather(s, 2, MPI_INT, r, -1, MPI_INT, W, o), MPI_ERR_COUNT,
           "allgather: negative count");
    o->algorithm = "pairwise";
    expect("alltoall negative sendcount", ct_alltoall(s, -3, MPI_INT, r, 2, MPI_INT, W, o),
           MPI_ERR_COUNT, "alltoall: negative count");
    /* The root's sendcount of a scatter is significant at the root only. */
    o->algorithm = "linear";
    if (rank == 0) /* only the root calls: rank 0, so that its result is printed */
        expect("scatter negative sendcount at the root",
               ct_scatter(s, -1, MPI_INT, r, 2, MPI_INT, 0, W, o), MPI_ERR_COUNT,
               "scatter: negative count -1");

    /* MPI_DATATYPE_NULL. */
    expect("scatter recvtype MPI_DATATYPE_NULL",
           ct_scatter(s, 2, MPI_INT, r, 2, MPI_DATATYPE_NULL, 0, W, o), MPI_ERR_TYPE,
           "scatter: MPI_DATATYPE_NULL");
    expect("gather sendtype MPI_DATATYPE_NULL",
           ct_gather(s, 2, MPI_DATATYPE_NULL, r, 2, MPI_INT, 0, W, o), MPI_ERR_TYPE,
           "gather: MPI_DATATYPE_NULL");
    o->algorithm = "bruck";
    expect("allgather recvtype MPI_DATATYPE_NULL",
           ct_allgather(s, 2, MPI_INT, r, 2, MPI_DATATYPE_NULL, W, o), MPI_ERR_TYPE,
           "allgather: MPI_DATATYPE_NULL");
    expect("alltoall sendtype MPI_DATATYPE_NULL",
           ct_alltoall(s, 2, MPI_DATATYPE_NULL, r, 2, MPI_INT, W, o), MPI_ERR_TYPE,
           "alltoall: MPI_DATATYPE_NULL");

    /* MPI_COMM_NULL. */
    expect("scatter on MPI_COMM_NULL",
           ct_scatter(s, 2, MPI_INT, r, 2, MPI_INT, 0, MPI_COMM_NULL, o), MPI_ERR_COMM,
           "scatter on MPI_COMM_NULL");
    expect("gather on MPI_COMM_NULL",
           ct_gather(s, 2, MPI_INT, r, 2, MPI_INT, 0, MPI_COMM_NULL, NULL), MPI_ERR_COMM,
           "gather on MPI_COMM_NULL");
    expect("allgather on MPI_COMM_NULL",
           ct_allgather(s, 2, MPI_INT, r, 2, MPI_INT, MPI_COMM_NULL, o), MPI_ERR_COMM,
           "allgather on MPI_COMM_NULL");
    expect("alltoall on MPI_COMM_NULL",
           ct_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, MPI_COMM_NULL, NULL), MPI_ERR_COMM,
           "alltoall on MPI_COMM_NULL");
    expect("barrier on MPI_COMM_NULL", ct_barrier(MPI_COMM_NULL, NULL), MPI_ERR_COMM,
           "barrier on MPI_COMM_NULL");

    /* MPI_IN_PLACE where MPI does not allow it. */
    o->algorithm = "binomial";
    expect("scatter sendbuf MPI_IN_PLACE",
           ct_scatter(MPI_IN_PLACE, 2, MPI_INT, r, 2, MPI_INT, 0, W, o), MPI_ERR_BUFFER,
           "scatter: MPI_IN_PLACE is only valid as the root's receive buffer");
    expect("gather recvbuf MPI_IN_PLACE",
           ct_gather(s, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, 0, W, o), MPI_ERR_BUFFER,
           "gather: MPI_IN_PLACE is only valid as the root's send buffer");
    o->algorithm = "recursive_doubling";
    expect("allgather recvbuf MPI_IN_PLACE",
           ct_allgather(s, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, W, o), MPI_ERR_BUFFER,
           "allgather: MPI_IN_PLACE as receive buffer");
    o->algorithm = "bruck";
    expect("alltoall recvbuf MPI_IN_PLACE",
           ct_alltoall(MPI_IN_PLACE, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, W, o),
           MPI_ERR_BUFFER, "alltoall: MPI_IN_PLACE as receive buffer");
    o->algorithm = "chain";
    if (!is_root) { /* the root's own call would be valid: it does not call */
        expect("scatter recvbuf MPI_IN_PLACE at a non-root",
               ct_scatter(s, 2, MPI_INT, MPI_IN_PLACE, 2, MPI_INT, root, W, o), MPI_ERR_BUFFER,
               "scatter: MPI_IN_PLACE is only valid as the root's receive buffer");
        expect("gather sendbuf MPI_IN_PLACE at a non-root",
               ct_gather(MPI_IN_PLACE, 2, MPI_INT, r, 2, MPI_INT, root, W, o), MPI_ERR_BUFFER,
               "gather: MPI_IN_PLACE is only valid as the root's send buffer");
    }

    /* Aliased send and receive buffers. */
    if (rank == 0) {
        expect("scatter aliased buffers at the root",
               ct_scatter(s, 2, MPI_INT, s, 2, MPI_INT, 0, W, o), MPI_ERR_BUFFER,
               "scatter: send and receive buffers alias");
        expect("gather aliased buffers at the root",
               ct_gather(r, 2, MPI_INT, r, 2, MPI_INT, 0, W, o), MPI_ERR_BUFFER,
               "gather: send and receive buffers alias");
    }
    o->algorithm = "ring";
    expect("allgather aliased buffers", ct_allgather(r, 2, MPI_INT, r, 2, MPI_INT, W, o),
           MPI_ERR_BUFFER, "allgather: send and receive buffers alias");
    o->algorithm = "pairwise";
    expect("alltoall aliased buffers", ct_alltoall(r, 2, MPI_INT, r, 2, MPI_INT, W, NULL),
           MPI_ERR_BUFFER, "alltoall: send and receive buffers alias");

    /* Send and receive sizes of a block that differ at a rank that does both. */
    expect("allgather sends more than it receives",
           ct_allgather(s, 2, MPI_INT, r, 1, MPI_INT, W, o), MPI_ERR_TRUNCATE,
           "allgather: 8 bytes sent per block but only 4 received");
    expect("alltoall sends less than it receives",
           ct_alltoall(s, 1, MPI_INT, r, 1, MPI_DOUBLE, W, o), MPI_ERR_ARG,
           "alltoall: 4 bytes sent per block but 8 expected");
    o->algorithm = "binary";
    if (rank == 0) {
        expect("scatter root sends more than it receives",
               ct_scatter(s, 4, MPI_INT, r, 1, MPI_DOUBLE, 0, W, o), MPI_ERR_TRUNCATE,
               "scatter: 16 bytes sent per block but only 8 received");
        expect("gather root sends less than it receives",
               ct_gather(s, 1, MPI_BYTE, r, 1, MPI_INT, 0, W, o), MPI_ERR_ARG,
               "gather: 1 bytes sent per block but 4 expected");
    }

    /* Unknown algorithms, one of another collective among them. */
    o->algorithm = "no_such_algorithm";
    expect("scatter unknown algorithm", ct_scatter(s, 2, MPI_INT, r, 2, MPI_INT, 0, W, o),
           MPI_ERR_ARG, "unknown scatter algorithm 'no_such_algorithm'");
    o->algorithm = "ring"; /* an allgather and barrier name */
    expect("gather algorithm of another collective",
           ct_gather(s, 2, MPI_INT, r, 2, MPI_INT, 0, W, o), MPI_ERR_ARG,
           "unknown gather algorithm 'ring'");
    o->algorithm = "pairwise";
    expect("allgather algorithm of another collective",
           ct_allgather(s, 2, MPI_INT, r, 2, MPI_INT, W, o), MPI_ERR_ARG,
           "unknown allgather algorithm 'pairwise'");
    o->algorithm = "binomial";
    expect("alltoall algorithm of another collective",
           ct_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, W, o), MPI_ERR_ARG,
           "unknown alltoall algorithm 'binomial'");
    o->algorithm = "bruck";
    expect("barrier algorithm of another collective", ct_barrier(W, o), MPI_ERR_ARG,
           "unknown barrier algorithm 'bruck'");

    /* Segment sizes <= 0. */
    o->algorithm = "chain";
    o->has_segsize = 1;
    o->segsize = 0;
    expect("scatter segment size 0", ct_scatter(s, 2, MPI_INT, r, 2, MPI_INT, 0, W, o),
           MPI_ERR_ARG, "segment size must be > 0");
    o->algorithm = "binomial";
    o->segsize = -64;
    expect("gather segment size < 0", ct_gather(s, 2, MPI_INT, r, 2, MPI_INT, 0, W, o),
           MPI_ERR_ARG, "segment size must be > 0");
    o->algorithm = "ring";
    expect("allgather segment size < 0", ct_allgather(s, 2, MPI_INT, r, 2, MPI_INT, W, o),
           MPI_ERR_ARG, "segment size must be > 0");
    o->algorithm = "bruck";
    o->segsize = 0;
    expect("alltoall segment size 0", ct_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, W, o),
           MPI_ERR_ARG, "segment size must be > 0");
    o->algorithm = "dissemination";
    expect("barrier segment size 0", ct_barrier(W, o), MPI_ERR_ARG, "segment size must be > 0");

    /* Correct calls afterwards work, with colltune's own algorithms. */
    struct {
        ct_coll coll;
        const char *alg;
    } fine[] = {{CT_SCATTER, "binomial"}, {CT_GATHER, "chain"},  {CT_ALLGATHER, "ring"},
                {CT_ALLTOALL, "pairwise"}, {CT_BARRIER, "dissemination"}};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        ct_options_init(o);
        o->algorithm = fine[i].alg;
        for (int j = 0; j < n * 2; j++) {
            s[j] = rank * 1000 + j;
            r[j] = -1;
        }
        int rc = MPI_SUCCESS, ok = 1;
        switch (fine[i].coll) {
        case CT_SCATTER: /* root's s[2k], s[2k+1] go to rank k */
            rc = ct_scatter(s, 2, MPI_INT, r, 2, MPI_INT, root, W, o);
            ok = r[0] == root * 1000 + 2 * rank && r[1] == root * 1000 + 2 * rank + 1;
            break;
        case CT_GATHER:
            rc = ct_gather(s, 2, MPI_INT, r, 2, MPI_INT, root, W, o);
            for (int k = 0; k < n && is_root; k++)
                ok &= r[2 * k] == k * 1000 && r[2 * k + 1] == k * 1000 + 1;
            ok &= is_root || r[0] == -1;
            break;
        case CT_ALLGATHER:
            rc = ct_allgather(s, 2, MPI_INT, r, 2, MPI_INT, W, o);
            for (int k = 0; k < n; k++)
                ok &= r[2 * k] == k * 1000 && r[2 * k + 1] == k * 1000 + 1;
            break;
        case CT_ALLTOALL: /* rank k's s[2j], s[2j+1] go to rank j */
            rc = ct_alltoall(s, 2, MPI_INT, r, 2, MPI_INT, W, o);
            for (int k = 0; k < n; k++)
                ok &= r[2 * k] == k * 1000 + 2 * rank && r[2 * k + 1] == k * 1000 + 2 * rank + 1;
            break;
        default:
            rc = ct_barrier(W, o);
            break;
        }
        if (rc != MPI_SUCCESS || !ok) {
            char msg[MPI_MAX_ERROR_STRING] = "";
            int len;
            if (rc != MPI_SUCCESS)
                MPI_Error_string(rc, msg, &len);
            failures++;
            fprintf(stderr, "FAIL rank %d: valid %s/%s after errors: rc=%d %s%s\n", rank,
                    ct_coll_name(fine[i].coll), fine[i].alg, rc, msg, ok ? "" : " wrong result");
        }
    }
    /* Arguments MPI declares insignificant may hold anything: the non-roots'
     * send side of a scatter and receive side of a gather, the root's receive
     * side of an in-place scatter, the send side of an in-place allgather or
     * alltoall. */
    {
        int rc1, rc2, rc3, rc4, ok = 1;
        ct_options_init(o);
        o->algorithm = "binomial";
        for (int j = 0; j < n * 2; j++) {
            s[j] = rank * 1000 + j;
            r[j] = -1;
        }
        rc1 = ct_scatter(is_root ? s : NULL, is_root ? 2 : -1,
                         is_root ? MPI_INT : MPI_DATATYPE_NULL, is_root ? MPI_IN_PLACE : r,
                         is_root ? -1 : 2, is_root ? MPI_DATATYPE_NULL : MPI_INT, root, W, o);
        ok &= is_root ? r[0] == -1
                      : r[0] == root * 1000 + 2 * rank && r[1] == root * 1000 + 2 * rank + 1;
        for (int j = 0; j < n * 2; j++) /* the root's own block is in place */
            r[j] = is_root && j / 2 == rank ? s[j % 2] : -1;
        rc2 = ct_gather(is_root ? MPI_IN_PLACE : s, is_root ? -1 : 2,
                        is_root ? MPI_DATATYPE_NULL : MPI_INT, is_root ? r : NULL,
                        is_root ? 2 : -1, is_root ? MPI_INT : MPI_DATATYPE_NULL, root, W, o);
        for (int k = 0; k < n && is_root; k++)
            ok &= r[2 * k] == k * 1000 && r[2 * k + 1] == k * 1000 + 1;
        o->algorithm = "bruck";
        for (int j = 0; j < n * 2; j++)
            r[j] = j / 2 == rank ? s[j % 2] : -1;
        rc3 = ct_allgather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, 2, MPI_INT, W, o);
        for (int k = 0; k < n; k++)
            ok &= r[2 * k] == k * 1000 && r[2 * k + 1] == k * 1000 + 1;
        for (int j = 0; j < n * 2; j++)
            r[j] = s[j];
        rc4 = ct_alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, r, 2, MPI_INT, W, o);
        for (int k = 0; k < n; k++)
            ok &= r[2 * k] == k * 1000 + 2 * rank && r[2 * k + 1] == k * 1000 + 2 * rank + 1;
        if (rc1 || rc2 || rc3 || rc4 || !ok) {
            failures++;
            fprintf(stderr,
                    "FAIL rank %d: insignificant arguments not ignored: scatter rc=%d gather "
                    "rc=%d allgather rc=%d alltoall rc=%d%s\n",
                    rank, rc1, rc2, rc3, rc4, ok ? "" : ", wrong result");
        }
    }

    /* Count 0 and in-place forms are fine. */
    o->algorithm = "linear";
    if (ct_scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, 0, W, o) != MPI_SUCCESS ||
        ct_gather(rank == 0 ? MPI_IN_PLACE : s, 2, MPI_INT, r, 2, MPI_INT, 0, W, o) !=
            MPI_SUCCESS ||
        ct_allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, W, NULL) != MPI_SUCCESS) {
        failures++;
        fprintf(stderr, "FAIL rank %d: count 0 or an in-place gather was refused\n", rank);
    }
    free(s);
    free(r);
    ct_options_init(o);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int buf[8] = {0}, out[8] = {0};
    ct_options o;
    MPI_Op nc;
    MPI_Op_create(noncomm_op, 0, &nc);

    ct_options_init(&o);
    o.algorithm = "binomial";
    expect("bcast root = size", ct_bcast(buf, 8, MPI_INT, nprocs, MPI_COMM_WORLD, &o),
           MPI_ERR_ROOT, "root");
    expect("bcast root = -1", ct_bcast(buf, 8, MPI_INT, -1, MPI_COMM_WORLD, &o), MPI_ERR_ROOT,
           "root");
    expect("reduce root = size",
           ct_reduce(buf, out, 8, MPI_INT, MPI_SUM, nprocs, MPI_COMM_WORLD, &o), MPI_ERR_ROOT,
           "root");
    expect("bcast negative count", ct_bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD, &o),
           MPI_ERR_COUNT, "negative count");
    expect("allreduce negative count",
           ct_allreduce(buf, out, -4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL), MPI_ERR_COUNT,
           "negative count");
    expect("bcast on MPI_COMM_NULL", ct_bcast(buf, 8, MPI_INT, 0, MPI_COMM_NULL, &o),
           MPI_ERR_COMM, "MPI_COMM_NULL");
    expect("allreduce on MPI_COMM_NULL",
           ct_allreduce(buf, out, 8, MPI_INT, MPI_SUM, MPI_COMM_NULL, NULL), MPI_ERR_COMM,
           "MPI_COMM_NULL");
    o.algorithm = "no_such_algorithm";
    expect("unknown algorithm", ct_bcast(buf, 8, MPI_INT, 0, MPI_COMM_WORLD, &o), MPI_ERR_ARG,
           "unknown bcast algorithm 'no_such_algorithm'");
    o.algorithm = "scatter_allgather"; /* a bcast name, not a reduce one */
    expect("algorithm of another collective",
           ct_reduce(buf, out, 8, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &o), MPI_ERR_ARG,
           "unknown reduce algorithm");
    o.algorithm = "chain";
    o.has_segsize = 1;
    o.segsize = 0;
    expect("segment size 0", ct_bcast(buf, 8, MPI_INT, 0, MPI_COMM_WORLD, &o), MPI_ERR_ARG,
           "segment size");
    o.segsize = -1024;
    o.algorithm = "reduce_bcast";
    expect("segment size < 0",
           ct_allreduce(buf, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &o), MPI_ERR_ARG,
           "segment size");
    ct_options_init(&o);
    o.algorithm = "knomial";
    o.radix = 1;
    expect("radix 1", ct_bcast(buf, 8, MPI_INT, 0, MPI_COMM_WORLD, &o), MPI_ERR_ARG, "radix");
    ct_options_init(&o);
    o.algorithm = "ring";
    expect("non-commutative op on allreduce ring",
           ct_allreduce(buf, out, 8, MPI_INT, nc, MPI_COMM_WORLD, &o), MPI_ERR_OP,
           "needs a commutative operation");
    o.algorithm = "rabenseifner";
    expect("non-commutative op on allreduce rabenseifner",
           ct_allreduce(buf, out, 8, MPI_INT, nc, MPI_COMM_WORLD, &o), MPI_ERR_OP,
           "needs a commutative operation");
    o.algorithm = "binary";
    expect("non-commutative op on reduce binary",
           ct_reduce(buf, out, 8, MPI_INT, nc, 0, MPI_COMM_WORLD, &o), MPI_ERR_OP,
           "needs a commutative operation");
    expect("MPI_OP_NULL", ct_reduce(buf, out, 8, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD, &o),
           MPI_ERR_OP, "MPI_OP_NULL");
    expect("MPI_DATATYPE_NULL",
           ct_bcast(buf, 8, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD, NULL), MPI_ERR_TYPE,
           "MPI_DATATYPE_NULL");
    if (nprocs > 1) {
        /* Only the non-roots are wrong here; the root must not wait for them,
         * so it makes a valid call of its own on a separate communicator. */
        o.algorithm = "binomial";
        if (rank != 0)
            expect("reduce MPI_IN_PLACE at a non-root",
                   ct_reduce(MPI_IN_PLACE, out, 8, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &o),
                   MPI_ERR_BUFFER, "MPI_IN_PLACE");
    }
    expect("aliased send and receive buffers",
           ct_allreduce(buf, buf, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL), MPI_ERR_BUFFER,
           "alias");

    movement_errors(&o);

    /* Shared memory with counts that differ between ranks: an error where it is seen
     * (MPI_ERR_TRUNCATE), no hang, no write past the smaller buffer; then a correct call. */
    if (nprocs > 1) {
        ct_options_init(&o);
        o.algorithm = "shm";
        int last = rank == nprocs - 1, big[8];
        for (int i = 0; i < 8; i++)
            big[i] = rank == 0 ? 100 + i : -1;
        int rc = ct_bcast(big, last ? 4 : 8, MPI_INT, 0, MPI_COMM_WORLD, &o);
        if (last) {
            expect("shm bcast, one rank's count smaller", rc, MPI_ERR_TRUNCATE, NULL);
            if (big[4] != -1) {
                failures++;
                fprintf(stderr, "FAIL rank %d: shm bcast wrote past its count\n", rank);
            }
        }
        rc = ct_allreduce(buf, out, rank == 0 ? 6 : 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &o);
        expect("shm allreduce, rank 0's count smaller", rc, MPI_ERR_TRUNCATE, NULL);
        for (int i = 0; i < 8; i++)
            big[i] = rank == 0 ? 200 + i : -1;
        rc = ct_bcast(big, 8, MPI_INT, 0, MPI_COMM_WORLD, &o);
        for (int i = 0; i < 8; i++)
            if (rc != MPI_SUCCESS || big[i] != 200 + i) {
                failures++;
                fprintf(stderr, "FAIL rank %d: shm bcast after the mismatch: rc %d, [%d] = %d\n",
                        rank, rc, i, big[i]);
                break;
            }
    }

    /* Still usable after all that, and count 0 is fine. */
    for (int i = 0; i < 8; i++)
        buf[i] = rank + i;
    o.algorithm = "ring";
    int rc = ct_allreduce(buf, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &o);
    int want0 = nprocs * (nprocs - 1) / 2;
    if (rc != MPI_SUCCESS || out[0] != want0 || out[7] != want0 + 7 * nprocs) {
        failures++;
        fprintf(stderr, "FAIL rank %d: valid allreduce after errors: rc=%d out0=%d\n", rank, rc,
                out[0]);
    }
    o.algorithm = "binomial";
    if (ct_bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD, &o) != MPI_SUCCESS ||
        ct_bcast(buf, 0, MPI_INT, 0, MPI_COMM_WORLD, NULL) != MPI_SUCCESS) {
        failures++;
        fprintf(stderr, "FAIL rank %d: count 0 was refused\n", rank);
    }
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s (%d failures)\n", all ? "FAILED" : "all errors reported", all);
    MPI_Op_free(&nc);
    MPI_Finalize();
    return all ? 1 : 0;
}
