/*
 * Bad input returns an MPI error through the communicator's error handler
 * (MPI_ERRORS_RETURN here), with a message that says what was wrong; it never
 * aborts or hangs, and a correct call afterwards still works.
 */
#include <stdio.h>
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
