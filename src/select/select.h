/*
 * The one place that decides what runs a collective call: forced by the environment
 * (COLLTUNE_<OP>_ALGORITHM, COLLTUNE_SEGSIZE, COLLTUNE_SPLIT), else the loaded tuning
 * table (table.h), else the MPI library's own collective. The public API
 * (src/api, src/nbc) and the drop-in (src/interpose) both ask ct_select, for every
 * operation and call form, and hand its choice to the engine: the same call under the
 * same table and environment runs the same algorithm, split and segment size whichever
 * door it came through, and a bad setting gives one message for every form.
 * Internal to colltune; layer: above coll (the registry) and below the engine (api).
 */
#ifndef CT_SELECT_H
#define CT_SELECT_H

#include "colltune.h"

/* How the program called: MPI_Bcast, MPI_Ibcast or MPI_Bcast_init (the public API's
 * ct_ibcast is non-blocking). The non-blocking and persistent forms look up the table's
 * non-blocking entries (op "ibcast", ...) where it has some for the operation. */
typedef enum { CT_FORM_BLOCKING, CT_FORM_NONBLOCKING, CT_FORM_PERSISTENT } ct_form;

/* One call as the choice sees it. */
typedef struct ct_select_query {
    ct_coll coll;
    ct_form form;
    MPI_Comm comm;
    int comm_size;      /* the communicator's ranks (the table's key) */
    MPI_Op op;          /* MPI_OP_NULL where the operation has none */
    long long bytes;    /* ct_call_bytes_v: the table's other key */
    int sizes_agree;    /* every rank knows the same bytes (not gatherv, scatterv,
                           alltoallv): only then may a size-keyed table choose */
    int thread_running; /* the progress thread runs (non-blocking table entries) */
} ct_select_query;

/* Why a call went to the MPI library (the finalize summary's reasons): the select
 * layer's own (ct_select), the drop-in's (an inter-communicator, a large-count call) and
 * the engine's refusals (ct_call_prepare, under native_on_reject). */
typedef enum {
    CT_WHY_NOT_CHOSEN,     /* no table loaded and no algorithm forced for the operation */
    CT_WHY_NO_ENTRY,       /* no table entry for the operation */
    CT_WHY_TABLE_NATIVE,   /* the table's winner there is native */
    CT_WHY_SIZES_DIFFER,   /* gatherv, scatterv, alltoallv: no size every rank knows */
    CT_WHY_NONCOMMUTATIVE, /* the algorithm needs a commutative op, the call's is not */
    CT_WHY_INTER,          /* an inter-communicator */
    CT_WHY_ARGS,           /* a datatype, op, count or argument colltune does not take */
    CT_WHY_FORM,           /* the algorithm does not serve this form (counts-first v-variants, ...) */
    CT_WHY_SHM_ELEMENT,    /* an element larger than the shared segment's slot */
    CT_WHY_NOT_ONE_NODE,   /* a shared-memory algorithm, ranks on several nodes */
    CT_WHY_LARGE_COUNT,    /* a _c call whose counts do not fit an int */
    CT_NWHY
} ct_native_why;

/* What runs the call: a registry entry, never a name to look up again. */
typedef struct ct_choice {
    const ct_algorithm_info *algorithm; /* NULL: the library's own collective */
    int has_segsize;
    long long segsize;   /* bytes, when has_segsize */
    int split;           /* the split tree's application levels, or CT_SPLIT_AUTO */
    int progress_thread; /* the table measured this choice with the progress thread */
    ct_native_why why;   /* when ct_select answers native: why */
} ct_choice;

/* Fills *choice for q. Returns 0 when colltune runs the call, 1 when the library does
 * (nothing forced and no table entry, the table's winner is native, a forced algorithm
 * that needs a commutative op given one that is not: said once per operation). A bad
 * environment (an unknown forced name, a bad COLLTUNE_SEGSIZE) returns 1 with *err set
 * to the error raised on q->comm (one message and one error code per bad text, for every
 * call form); *err is MPI_SUCCESS otherwise. */
int ct_select(const ct_select_query *q, ct_choice *choice, int *err);

/* The choice as the engine's options: the algorithm's registry name (the registry's
 * own string, which the engine finds by address), segment size, split. */
void ct_choice_options(const ct_choice *choice, ct_options *opts);

/* Whether anything of colltune's may serve coll: 1, an algorithm forced for it, or a
 * loaded table with an entry for it that names a colltune algorithm; -1, the call is native
 * whatever its size (the table has no such entry, or no table is loaded but another
 * operation's algorithm is forced), and the finalize summary counts it with *why; 0,
 * nothing of colltune's is set at all. Without a 1 a drop-in call goes to the library
 * before any lookup (a table naming other operations cost a native bcast 8 B 900
 * instructions, docs/BENCHMARKS.md section 39). Operations whose sizes differ between
 * ranks (gatherv, scatterv, alltoallv) with a table loaded answer 1: their reason is
 * given by the lookup. */
int ct_select_may_serve(ct_coll coll, ct_native_why *why);

/* The valid algorithm COLLTUNE_<OP>_ALGORITHM forces for coll, or NULL. */
const ct_algorithm_info *ct_select_forced(ct_coll coll);

/* COLLTUNE_LOG: quiet (nothing but errors), the default (errors and warnings about the
 * setting), warn (also what a program did that MPI calls erroneous), debug (also a line
 * per intercepted call). */
enum { CT_LOG_QUIET = -1, CT_LOG_DEFAULT = 0, CT_LOG_WARN = 1, CT_LOG_DEBUG = 2 };
int ct_select_log_level(void);

/* NULL, or the line that says COLLTUNE_LOG holds none of the allowed values (quiet,
 * warn, debug, or empty for the default): the drop-in's MPI_Init stops the program with
 * it; elsewhere the default level applies and the line is said once. */
const char *ct_select_log_problem(void);

/* ---- The finalize summary's counts (summary.c) ---------------------------------------
 * Per operation, this process's calls served by each colltune algorithm and gone native
 * per reason: a relaxed atomic increment a call, no lock, no allocation. The drop-in
 * counts each call once, with its outcome (a persistent collective at each MPI_Start, with
 * what its init chose: pmpi_persistent.c). */
void ct_select_count_served(ct_coll coll, const ct_algorithm_info *alg, int has_segsize,
                            long long segsize);
void ct_select_count_native(ct_coll coll, ct_native_why why);
/* "not in the table", "non-commutative op", ...: the summary's and the debug log's words. */
const char *ct_select_why_text(ct_native_why why);

/* The engine, refusing a call it was asked to run (under native_on_reject), notes why
 * for this thread; the drop-in takes the note (and clears it) when the call ran native. */
void ct_select_refused(ct_native_why why);
ct_native_why ct_select_take_refusal(void);

/* At MPI_Finalize, before the library's: rank 0 of MPI_COMM_WORLD, once, writes a few
 * lines on stderr (the table or forced algorithms in force, then per operation its calls
 * served per algorithm and gone native per reason: rank 0's own calls) when a table or
 * a forced algorithm is active and COLLTUNE_LOG is not quiet. */
void ct_select_summary(void);

/* Whether a table is loaded or some algorithm forced: what the summary reports on. */
int ct_select_active(void);
/* What COLLTUNE_<OP>_ALGORITHM says for coll (a valid name or not), or NULL. */
const char *ct_select_forced_text(ct_coll coll);

/* "Bcast", "Reduce_scatter_block", ... as in the MPI function names, and "BCAST",
 * "REDUCE_SCATTER_BLOCK", ... as in COLLTUNE_<OP>_ALGORITHM. */
const char *ct_select_mpi_name(ct_coll coll);
const char *ct_select_upper_name(ct_coll coll);

#endif
