/* A small distributed sequential-task-flow (STF) runtime, after StarPU-MPI's model.
 *
 * Every rank submits the same sequence of tasks. A task names the rank that runs it and the
 * data it accesses (read, or read-write); each piece of data has an owner rank, and a task that
 * writes a piece of data runs on its owner ("owner computes"). From the order of submission
 * each rank infers, for the tasks it runs, the local dependencies (read after write, write
 * after read, write after write) and the transfers that cross ranks: each version of a piece
 * of data goes at most once to each rank that reads it. A send is posted when the task that
 * produces the version is submitted, before the data exists: with dynamic broadcasts
 * (src/dyn) the sends of one version posted before it is ready become one broadcast.
 *
 * Tasks run on a pool of worker threads; the thread that calls ct_stf_wait_all tests the
 * communications. Requires MPI_THREAD_MULTIPLE (workers post sends as data become ready).
 */
#ifndef CT_STF_H
#define CT_STF_H

#include <mpi.h>
#include <stddef.h>

typedef struct ct_stf ct_stf;
typedef struct ct_stf_data ct_stf_data;

/* How a task accesses a piece of data. */
typedef enum { CT_STF_R = 1, CT_STF_RW = 3 } ct_stf_mode;

/* How versions travel between ranks. */
typedef enum {
    CT_STF_COMM_MPI = 0,      /* MPI_Isend when the data is ready, one per destination
                                 (StarPU over MPI: the baseline, "dynbcast off") */
    CT_STF_COMM_DYN = 1,      /* ct_dyn_isend at submission, ct_dyn_ready when produced:
                                 sends grouped into broadcasts ("dynbcast on") */
    CT_STF_COMM_DYN_PLAIN = 2 /* ct_dyn with grouping off: the same layer, plain sends */
} ct_stf_comm;

/* A task body: buffers[i] is the local copy of the task's i-th piece of data. */
typedef void (*ct_stf_fn)(void **buffers, void *arg);

/* Collective over comm. workers >= 1 threads run the tasks. Fails with MPI_ERR_OTHER when MPI
 * was not initialised with MPI_THREAD_MULTIPLE, or when the dyn back end was asked for and
 * colltune was built without it. */
int ct_stf_create(MPI_Comm comm, int workers, ct_stf_comm how, ct_stf **stf);

/* Collective: waits for everything (ct_stf_wait_all, whose error it returns), stops the
 * workers, frees every copy and handle. Owners' buffers stay the caller's. */
int ct_stf_destroy(ct_stf *stf);

/* Registers count elements of type owned by rank owner, in the same order on every rank. buf
 * is the owner's storage (read and written in place); other ranks pass NULL. */
ct_stf_data *ct_stf_register(ct_stf *stf, void *buf, int count, MPI_Datatype type, int owner);

/* Submits a task run by rank `rank` (every rank calls it with the same arguments). arg
 * (arg_size bytes) is copied. Higher priority runs first among ready tasks. A read-write
 * access on another rank's data is refused (MPI_ERR_ARG). */
int ct_stf_submit(ct_stf *stf, int rank, int priority, ct_stf_fn fn, const void *arg,
                  size_t arg_size, int n, ct_stf_data *const *data, const ct_stf_mode *modes);

/* Runs communications until every task and transfer submitted so far is complete on this
 * rank (not a barrier). Returns the first error of a transfer since ct_stf_create (MPI's or
 * the dyn layer's): a transfer that failed counts as done, so the graph runs out, but the
 * tasks that read its data ran on a copy that was never received. */
int ct_stf_wait_all(ct_stf *stf);

/* This rank's counters since ct_stf_create. */
typedef struct ct_stf_stats {
    long tasks;     /* tasks run here */
    long sends;     /* versions sent (one per destination) */
    long recvs;     /* versions received */
    long bytes_sent;
} ct_stf_stats;
void ct_stf_stats_get(const ct_stf *stf, ct_stf_stats *s);

#endif
