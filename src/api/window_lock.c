/*
 * Open MPI 5.0.11 crashes when two threads of a process create windows at once
 * (osc/ucx sets UCX up and tears it down in every window's component query), and
 * colltune creates a shared-memory window on the first call of the shm family on
 * a communicator: threads calling collectives on different communicators, as
 * MPI_THREAD_MULTIPLE allows, would crash a program that never made a window.
 *
 * A process-wide mutex held across the collective window creation would
 * deadlock: a thread of rank 0 holding it waits inside the creation for rank 1,
 * whose lock another thread holds while waiting for rank 0. So every rank of the
 * creating group only tries the lock, the group agrees (MPI_MIN over their
 * successes) and goes on only when all hold it; otherwise those that got it let
 * go and all try again after a random, growing pause. Nobody ever blocks on the
 * mutex while a peer waits on it, and the random pauses break the symmetry.
 * Once per communicator and segment: the cost does not matter.
 */
#include "window_lock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;

static int threaded(void)
{
    int provided = MPI_THREAD_SINGLE;
    return PMPI_Query_thread(&provided) == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE;
}

static void pause_a_while(int attempt, unsigned *seed)
{
    long cap_us = 50L << (attempt < 10 ? attempt : 10); /* 50 us .. 51 ms */
    long us = 20 + (long)(rand_r(seed) % (unsigned)cap_us);
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

int ct_window_lock(MPI_Comm comm)
{
    if (!threaded())
        return MPI_SUCCESS;
    unsigned seed = (unsigned)(size_t)&seed ^ (unsigned)time(NULL);
    for (int attempt = 0;; attempt++) {
        int mine = pthread_mutex_trylock(&window_lock) == 0, all = 0;
        int rc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
        if (rc == MPI_SUCCESS && all)
            return MPI_SUCCESS;
        if (mine)
            pthread_mutex_unlock(&window_lock);
        if (rc != MPI_SUCCESS)
            return rc;
        pause_a_while(attempt, &seed);
    }
}

void ct_window_unlock(void)
{
    if (threaded())
        pthread_mutex_unlock(&window_lock);
}
