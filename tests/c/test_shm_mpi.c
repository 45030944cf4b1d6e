/*
 * A race test of the shared-memory algorithms' flag protocol: thousands of shm
 * collectives back to back, every operation in turn, on two communicators used
 * alternately (their segments apart), roots moving, sizes from 0 to several
 * times the segment (run with a small COLLTUNE_SHM_BYTES: chunks and reused
 * slots), every result checked exactly against values computed by hand. A rank
 * that ran ahead into the next call, or wrote a slot before it was read, shows
 * as a wrong value here. Prints "shm race: C calls, 0 failures" at rank 0.
 * With "hier" (and COLLTUNE_NODES=R for made-up nodes), bcast, reduce,
 * allreduce, allgather and barrier run hierarchically with the shm intra part
 * (each node's segment) and the others flat (the communicator's segment), so
 * the two kinds of segment alternate on one communicator.
 * Then bcast, allreduce, reduce and barrier alternate on MPI_COMM_WORLD (shm, then
 * point-to-point algorithms), buffers alternating too: the kept jobs' fast path.
 * With COLLTUNE_MONITOR=count it also checks the monitor's segment bytes: a
 * bcast of B bytes is B written at the root and B read at every other rank.
 *   mpiexec -n N test_shm_mpi [ITERATIONS [hier]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colltune.h"
#include "monitor/monitor.h"

static int rank, nprocs, failures;

static int val(int it, int r, int i) { return (it * 7919 + r * 131 + i * 17) % 100003; }

static void fail(const char *what, int it, int i, int got, int want)
{
    if (failures++ < 10)
        fprintf(stderr, "rank %d: %s, iteration %d, element %d: got %d, want %d\n", rank, what,
                it, i, got, want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ct_monitor_init(); /* linked with the library, not the drop-in: its MPI_Init is MPI's */
    int iterations = argc > 1 ? atoi(argv[1]) : 2000, calls = 0;
    MPI_Comm comms[2];
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    /* Counts in ints: 0, small, and up to 12 000 (48 KB, several 16 KB segments). */
    static const int counts[] = {0, 1, 3, 64, 1000, 4099, 12000};
    enum { NCOUNTS = sizeof counts / sizeof counts[0], MAXC = 12000 };
    int n = nprocs;
    int *a = malloc(sizeof(int) * (size_t)MAXC * (size_t)n);
    int *b = malloc(sizeof(int) * (size_t)MAXC * (size_t)n);
    int hier = argc > 2 && strcmp(argv[2], "hier") == 0;
    ct_options flat, node;
    ct_options_init(&flat);
    flat.algorithm = "shm";
    ct_options_init(&node);
    node.algorithm = "hier";
    node.intra = "shm"; /* the default where nodes share memory; named: never p2p here */
    for (int it = 0; it < iterations; it++) {
        MPI_Comm comm = comms[it % 2];
        int op = it % 8, count = counts[(it / 8) % NCOUNTS], root = (it / 3) % n;
        /* bcast, reduce, allreduce, allgather (op 5) and barrier have a hier form */
        ct_options o = hier && (op <= 2 || op == 5 || op == 7) ? node : flat;
        if (op >= 3 && op <= 6 && count > MAXC / 4)
            count /= 4; /* blocks per rank: keep the all-to-all buffers small */
        int rc = MPI_SUCCESS;
        switch (op) {
        case 0: /* bcast */
            for (int i = 0; i < count; i++)
                a[i] = rank == root ? val(it, root, i) : -1;
            rc = ct_bcast(a, count, MPI_INT, root, comm, &o);
            for (int i = 0; i < count; i++)
                if (a[i] != val(it, root, i))
                    fail("bcast", it, i, a[i], val(it, root, i));
            break;
        case 1: /* allreduce */
        case 2: /* reduce */
            for (int i = 0; i < count; i++) {
                a[i] = val(it, rank, i);
                b[i] = -1;
            }
            rc = op == 1 ? ct_allreduce(a, b, count, MPI_INT, MPI_SUM, comm, &o)
                         : ct_reduce(a, b, count, MPI_INT, MPI_SUM, root, comm, &o);
            for (int i = 0; (op == 1 || rank == root) && i < count; i++) {
                int s = 0;
                for (int r = 0; r < n; r++)
                    s += val(it, r, i);
                if (b[i] != s)
                    fail(op == 1 ? "allreduce" : "reduce", it, i, b[i], s);
            }
            break;
        case 3: /* scatter */
            for (int i = 0; rank == root && i < count * n; i++)
                a[i] = val(it, i / (count ? count : 1), i % (count ? count : 1));
            for (int i = 0; i < count; i++)
                b[i] = -1;
            rc = ct_scatter(a, count, MPI_INT, b, count, MPI_INT, root, comm, &o);
            for (int i = 0; i < count; i++)
                if (b[i] != val(it, rank, i))
                    fail("scatter", it, i, b[i], val(it, rank, i));
            break;
        case 4: /* gather */
        case 5: /* allgather */
            for (int i = 0; i < count; i++)
                a[i] = val(it, rank, i);
            for (int i = 0; i < count * n; i++)
                b[i] = -1;
            rc = op == 4 ? ct_gather(a, count, MPI_INT, b, count, MPI_INT, root, comm, &o)
                         : ct_allgather(a, count, MPI_INT, b, count, MPI_INT, comm, &o);
            for (int i = 0; (op == 5 || rank == root) && i < count * n; i++)
                if (b[i] != val(it, i / count, i % count))
                    fail(op == 4 ? "gather" : "allgather", it, i, b[i],
                         val(it, i / count, i % count));
            break;
        case 6: /* alltoall: block j of rank r holds val(it, r * n + j, i) */
            for (int j = 0; j < n; j++)
                for (int i = 0; i < count; i++) {
                    a[j * count + i] = val(it, rank * n + j, i);
                    b[j * count + i] = -1;
                }
            rc = ct_alltoall(a, count, MPI_INT, b, count, MPI_INT, comm, &o);
            for (int r = 0; r < n; r++)
                for (int i = 0; i < count; i++)
                    if (b[r * count + i] != val(it, r * n + rank, i))
                        fail("alltoall", it, i, b[r * count + i], val(it, r * n + rank, i));
            break;
        default:
            rc = ct_barrier(comm, &o);
            break;
        }
        if (rc != MPI_SUCCESS)
            fail("call failed", it, -1, rc, MPI_SUCCESS);
        calls++;
    }
    /* Alternating as programs do (bcast, allreduce, reduce, barrier, bcast, ...), each call
     * equal to its predecessor four calls back but for its buffers, which alternate between
     * two sets: every call after the first round reuses a kept job (the fast path, one per
     * slot of the communicator), with new buffers and new values each time. shm and a
     * point-to-point algorithm alike. */
    int *bufs[2][2] = {{a, b}, {b + MAXC / 2, a + MAXC / 2}};
    static const char *const algs[] = {"shm", "binomial"};
    for (int ai = 0; ai < 2; ai++) {
        ct_options o;
        ct_options_init(&o);
        o.algorithm = algs[ai];
        ct_options bar = o;
        bar.algorithm = ai ? "dissemination" : "shm";
        ct_options ar = o;
        ar.algorithm = ai ? "recursive_doubling" : "shm";
        for (int it = 0; it < iterations / 2; it++) {
            int *x = bufs[it % 2][0], *y = bufs[it % 2][1], count = 1000, root = n - 1, rc;
            switch (it % 4) {
            case 0:
                for (int i = 0; i < count; i++)
                    x[i] = rank == root ? val(it, root, i) : -1;
                rc = ct_bcast(x, count, MPI_INT, root, MPI_COMM_WORLD, &o);
                for (int i = 0; i < count; i++)
                    if (x[i] != val(it, root, i))
                        fail("alternating bcast", it, i, x[i], val(it, root, i));
                break;
            case 1:
            case 2:
                for (int i = 0; i < count; i++) {
                    x[i] = val(it, rank, i);
                    y[i] = -1;
                }
                rc = it % 4 == 1 ? ct_allreduce(x, y, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &ar)
                                 : ct_reduce(x, y, count, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &o);
                for (int i = 0; (it % 4 == 1 || rank == 0) && i < count; i++) {
                    int sum = 0;
                    for (int r = 0; r < n; r++)
                        sum += val(it, r, i);
                    if (y[i] != sum)
                        fail("alternating reduction", it, i, y[i], sum);
                }
                break;
            default:
                rc = ct_barrier(MPI_COMM_WORLD, &bar);
                break;
            }
            if (rc != MPI_SUCCESS)
                fail("alternating call failed", it, -1, rc, MPI_SUCCESS);
            calls++;
        }
    }
    if (ct_monitor_level >= CT_MON_COUNT) {
        unsigned long long w0, r0, w1, r1;
        int count = 1000, root = n - 1;
        ct_monitor_shm_bytes(&w0, &r0);
        for (int i = 0; i < count; i++)
            a[i] = rank == root ? val(0, root, i) : -1;
        if (ct_bcast(a, count, MPI_INT, root, MPI_COMM_WORLD, &flat) != MPI_SUCCESS)
            fail("monitored bcast failed", -1, -1, 0, 0);
        ct_monitor_shm_bytes(&w1, &r1);
        long long bytes = (long long)count * (long long)sizeof(int);
        long long wrote = (long long)(w1 - w0), read = (long long)(r1 - r0);
        if (n > 1 && (wrote != (rank == root ? bytes : 0) || read != (rank == root ? 0 : bytes)))
            fail("monitor: segment bytes written, read", -1, -1, (int)wrote, (int)read);
        if (rank == 0)
            printf("monitor: a %lld-byte shm bcast counted as %lld written at the root, "
                   "%lld read at rank 0\n", bytes, rank == root ? wrote : 0, read);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("shm race: %d calls, %d failures\n", calls, all);
    free(a);
    free(b);
    MPI_Comm_free(&comms[1]);
    if (ct_monitor_level)
        ct_monitor_finish();
    MPI_Finalize();
    return all != 0;
}
