/*
 * The tuning table's lookup, as the drop-in and the API use it: for one
 * {collective, communicator size, message size}, the best {algorithm, segment
 * size}, or "no entry" (then the caller runs the native collective).
 * `colltune tune` writes tables (docs/TABLE.md); the drop-in loads the one
 * COLLTUNE_TABLE names. With none loaded every lookup answers "no entry".
 */
#ifndef CT_TABLE_H
#define CT_TABLE_H

#include "colltune.h"

typedef struct ct_table_choice {
    const char *algorithm; /* a registry name, valid as long as the table is loaded */
    const ct_algorithm_info *info; /* its registry entry: no search of the registry a call */
    long long segsize;     /* bytes; 0 = the algorithm's default */
    int split;             /* non-blocking: the split tree's S, or CT_SPLIT_AUTO (model) */
    int progress_thread;   /* non-blocking: the entry was measured with the progress thread */
} ct_table_choice;

/* 0 and *choice filled when the loaded table has an entry for this call (the
 * nearest communicator size, then the nearest message size, both in log scale,
 * the smaller on ties) naming a colltune algorithm; CT_TABLE_NATIVE (-1) when its
 * winner there is native; CT_TABLE_NO_ENTRY (-2) when it has no entry for the
 * operation, or when no table is loaded. */
enum { CT_TABLE_NATIVE = -1, CT_TABLE_NO_ENTRY = -2 };
int ct_table_lookup(ct_coll coll, int comm_size, long long bytes, ct_table_choice *choice);

/* The same for a non-blocking call (MPI_Ibcast, ...): its own entries (op
 * "ibcast", ...) when the table has some for the operation, else the blocking
 * operation's. An entry measured with the progress thread, looked up while no
 * thread runs (thread_running 0), answers with what the table measured best
 * without one (its "no_thread" choice), or -1 (native) when it has none. */
int ct_table_lookup_nonblocking(ct_coll coll, int comm_size, long long bytes,
                                int thread_running, ct_table_choice *choice);

/* The same for a persistent call (MPI_Bcast_init ...): its own entries (op
 * "bcast_init", ...) when the table has some for the operation, else the blocking
 * operation's; the progress thread as for the non-blocking entries. */
int ct_table_lookup_persistent(ct_coll coll, int comm_size, long long bytes,
                               int thread_running, ct_table_choice *choice);

/* The loaded table's file and MPI ("MPICH 5.0.2"), empty strings when none. */
void ct_table_describe(char *path, size_t path_len, char *mpi, size_t mpi_len);

/* Whether some non-blocking entry of the loaded table wants the progress
 * thread (the drop-in then starts one where the node has a free core). */
int ct_table_wants_progress(void);

/* Loads a colltune-table/1 file as the table of every lookup (replacing any).
 * -1 with the reason in why: unreadable, malformed, another schema version, or
 * made for another machine (CPU model, core count) or MPI (implementation,
 * version; checked once MPI is initialized). */
int ct_table_load(const char *path, char *why, size_t len);
int ct_table_loaded(void);

/* Over all the loaded table's entries of the operation, whatever their form, size and
 * communicator size: 0 when some entry names a colltune algorithm (a lookup may answer
 * with one), CT_TABLE_NATIVE when all it has are native, CT_TABLE_NO_ENTRY when it has
 * none (or no table is loaded). Lets a call the table can only send native skip the
 * lookup. */
int ct_table_op_status(ct_coll coll);
void ct_table_unload(void);

#endif
