/*
 * One choice for every door (issue 35): run preloaded with the drop-in and linked with
 * libcolltune, so MPI_Ibcast (the drop-in) and ct_ibcast (the public API) see the same
 * table and environment. tests/python/test_select.py compares what each started
 * (COLLTUNE_LOG=debug: "ibcast started: ALG segsize S split L thread yes|no").
 *   plain_select ibcast BYTES   MPI_Ibcast, then ct_ibcast(opts NULL), both checked
 *   plain_select bad            with MPI_ERRORS_RETURN: the error string of MPI_Bcast,
 *                               MPI_Ibcast, MPI_Bcast_init, ct_bcast and ct_ibcast, one line
 *                               each ("form NAME: TEXT"), and the same for the barrier, for a
 *                               bad COLLTUNE_BCAST_ALGORITHM and COLLTUNE_BARRIER_ALGORITHM
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"

/* The persistent collectives: MPI 4, and Open MPI 5, which has them while it says 3.1. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT_COLL 1
#else
#define HAVE_PERSISTENT_COLL 0
#endif

static int check(const unsigned char *b, int n, int seed)
{
    for (int i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 7 + seed))
            return 0;
    return 1;
}

static void fill(unsigned char *b, int n, int rank, int seed)
{
    for (int i = 0; i < n; i++)
        b[i] = rank == 0 ? (unsigned char)(i * 7 + seed) : 0;
}

static void say(int rank, const char *form, int rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, text, &len);
    printf("rank %d form %s: %s\n", rank, form, rc == MPI_SUCCESS ? "success" : text);
}

int main(int argc, char **argv)
{
    int rank, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2 && !strcmp(argv[1], "ibcast")) {
        int n = atoi(argv[2]);
        unsigned char *b = malloc((size_t)(n > 0 ? n : 1));
        MPI_Request r;
        fill(b, n, rank, 1);
        MPI_Ibcast(b, n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        ok &= check(b, n, 1);
        MPI_Barrier(MPI_COMM_WORLD); /* the two doors' log lines apart */
        fill(b, n, rank, 2);
        ct_ibcast(b, n, MPI_BYTE, 0, MPI_COMM_WORLD, NULL, &r);
        ct_wait(&r, MPI_STATUS_IGNORE);
        ok &= check(b, n, 2);
        printf("rank %d %s\n", rank, ok ? "ok" : "WRONG");
        free(b);
    } else if (argc > 1 && !strcmp(argv[1], "bad")) {
        int x = 0;
        MPI_Request r;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        say(rank, "MPI_Bcast", MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD));
        say(rank, "MPI_Ibcast", MPI_Ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, &r));
#if HAVE_PERSISTENT_COLL
        say(rank, "MPI_Bcast_init",
            MPI_Bcast_init(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
#endif
        say(rank, "ct_bcast", ct_bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL));
        say(rank, "ct_ibcast", ct_ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL, &r));
        /* The barrier's non-blocking form chose in another file once, with a bare
         * MPI_ERR_ARG (issue 35). */
        say(rank, "MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
        say(rank, "MPI_Ibarrier", MPI_Ibarrier(MPI_COMM_WORLD, &r));
#if HAVE_PERSISTENT_COLL
        say(rank, "MPI_Barrier_init", MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &r));
#endif
        say(rank, "ct_barrier", ct_barrier(MPI_COMM_WORLD, NULL));
        say(rank, "ct_ibarrier", ct_ibarrier(MPI_COMM_WORLD, NULL, &r));
    }
    MPI_Finalize();
    return 0;
}
