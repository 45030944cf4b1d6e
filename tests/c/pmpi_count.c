/*
 * pmpi_count: a library preloaded after the drop-in (LD_PRELOAD="libcolltune_pmpi.so
 * libpmpi_count.so") that counts the PMPI_ completion and non-blocking reduce calls the
 * drop-in makes, and prints them at exit on stderr:
 *   "pmpi_count Ireduce N Iallreduce N Wait N Test N Waitall N Testall N Testany N Testsome N"
 *
 * Why: a call the table leaves native must cost what it costs without the drop-in, so the
 * drop-in's MPI_Wait on a request it did not make must be one PMPI_Wait and nothing else (no
 * PMPI_Test polling, which would stall MPICH's progress of a large rendezvous between its
 * calls). tests/python/test_osu_heap.py asserts these counts under ct_osu (issue 36: the
 * record's 3x native Ireduce was looked for here first; see docs/BENCHMARKS.md section 46).
 *
 * Each wrapper forwards to the next definition (the MPI library's) found with
 * dlsym(RTLD_NEXT); the program's own PMPI_ calls are counted too, so the test's program
 * (ct_osu) makes none of these itself.
 */
#ifndef _GNU_SOURCE /* RTLD_NEXT (the build defines it already) */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

enum { IREDUCE, IALLREDUCE, WAIT, TEST, WAITALL, TESTALL, TESTANY, TESTSOME, NCOUNT };
static long count[NCOUNT];

/* The next definition of a name, looked up once. */
#define NEXT(fn)                                                                               \
    static __typeof__(&fn) next_;                                                              \
    if (!next_)                                                                                \
        next_ = (__typeof__(&fn))dlsym(RTLD_NEXT, #fn)

int PMPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c,
                 MPI_Request *q)
{
    NEXT(PMPI_Ireduce);
    count[IREDUCE]++;
    return next_(s, r, n, t, op, root, c, q);
}

int PMPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                    MPI_Request *q)
{
    NEXT(PMPI_Iallreduce);
    count[IALLREDUCE]++;
    return next_(s, r, n, t, op, c, q);
}

int PMPI_Wait(MPI_Request *q, MPI_Status *st)
{
    NEXT(PMPI_Wait);
    count[WAIT]++;
    return next_(q, st);
}

int PMPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    NEXT(PMPI_Test);
    count[TEST]++;
    return next_(q, flag, st);
}

int PMPI_Waitall(int n, MPI_Request q[], MPI_Status st[])
{
    NEXT(PMPI_Waitall);
    count[WAITALL]++;
    return next_(n, q, st);
}

int PMPI_Testall(int n, MPI_Request q[], int *flag, MPI_Status st[])
{
    NEXT(PMPI_Testall);
    count[TESTALL]++;
    return next_(n, q, flag, st);
}

int PMPI_Testany(int n, MPI_Request q[], int *index, int *flag, MPI_Status *st)
{
    NEXT(PMPI_Testany);
    count[TESTANY]++;
    return next_(n, q, index, flag, st);
}

int PMPI_Testsome(int n, MPI_Request q[], int *outn, int idx[], MPI_Status st[])
{
    NEXT(PMPI_Testsome);
    count[TESTSOME]++;
    return next_(n, q, outn, idx, st);
}

__attribute__((destructor)) static void report(void)
{
    /* Only the MPI processes: the launcher's own processes inherit LD_PRELOAD too. */
    int was = 0;
    PMPI_Initialized(&was);
    if (!was)
        return;
    fprintf(stderr,
            "pmpi_count Ireduce %ld Iallreduce %ld Wait %ld Test %ld Waitall %ld Testall %ld "
            "Testany %ld Testsome %ld\n",
            count[IREDUCE], count[IALLREDUCE], count[WAIT], count[TEST], count[WAITALL],
            count[TESTALL], count[TESTANY], count[TESTSOME]);
}
