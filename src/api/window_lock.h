/* One window creation at a time in a process, agreed by the ranks that create
 * it together. Internal to colltune. */
#ifndef CT_WINDOW_LOCK_H
#define CT_WINDOW_LOCK_H

#include <mpi.h>

/* Collective over comm (the ranks that will create the window): returns once
 * every one of them holds its process's window lock, or an MPI error. Without
 * MPI_THREAD_MULTIPLE no other thread creates windows: nothing to take. */
int ct_window_lock(MPI_Comm comm);
/* Releases what ct_window_lock took (after the window exists, or failed). */
void ct_window_unlock(void);

#endif
