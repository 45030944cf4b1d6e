/*
 * What the drop-in's files share (pmpi.c, pmpi_v.c, pmpi_persistent.c, fortran.c and the
 * generated bindings.c): the
 * choice of algorithm for a call, the MPI names of the operations, and the
 * conversions of the large-count (_c) forms. Internal to libcolltune_pmpi.
 */
#ifndef CT_INTERPOSE_DROPIN_H
#define CT_INTERPOSE_DROPIN_H

#include <mpi.h>

#include "api/call.h"
#include "monitor/monitor.h"
#include "select/select.h"

#define CT_DROPIN_HIDDEN __attribute__((visibility("hidden")))

/* Fills opts for c (size: its communicator's ranks, from the ct_call_comm_shape the
 * caller asked already for the inter-communicator test; bytes: ct_call_bytes_v) with the
 * select layer's choice (src/select/select.h: forced > table > native) for the call's
 * form, and *choice with it (the algorithm's registry entry, or why native); 0 to run
 * colltune, 1 for the library. A bad environment (an unknown forced algorithm, a bad
 * segment size) sets *err, which the call must return: the same message for every form
 * of the operation. */
CT_DROPIN_HIDDEN int ct_dropin_choose(const ct_call *c, const ct_vargs *v, ct_form form,
                                      int size, long long bytes, ct_options *opts,
                                      ct_choice *choice, int *err);

/* A call's outcome, counted once for the finalize summary (src/select/summary.c):
 * served by the algorithm that ran (ran, with opts' segment size), or native, why:
 * choice->why when the select layer said native (native 1), else the engine's refusal.
 * Returns why a native call went native (for the debug line). */
CT_DROPIN_HIDDEN ct_native_why ct_dropin_outcome(ct_coll coll, int native,
                                                 const ct_choice *choice, const char *ran,
                                                 const ct_options *opts);

/* Per operation (ct_coll), set once MPI_Init returns (ct_dropin_settle): nonzero when
 * colltune can only send its calls to the library (no algorithm forced for it, no table
 * entry naming a colltune algorithm, no monitor, profile or debug log watching): its
 * blocking and non-blocking entry points call the library at once (ct_dropin_passed),
 * the drop-in's cost a load, a branch and, when a table or another operation's forced
 * algorithm makes the finalize summary count it, the count (docs/BENCHMARKS.md section 39).
 * 1: nothing to count; 2 + why: counted as native for why (ct_native_why). 0 before
 * MPI_Init, and whenever colltune may serve the call. */
CT_DROPIN_HIDDEN extern unsigned char ct_dropin_pass[CT_NCOLL];
CT_DROPIN_HIDDEN void ct_dropin_settle(void);

/* An entry point's call of coll goes to the library at once: the summary's count. pass:
 * ct_dropin_pass[coll] as the entry point read it for its test (nonzero), read once. */
static inline void ct_dropin_passed(ct_coll coll, unsigned char pass)
{
    if (pass > 1)
        ct_select_count_native(coll, (ct_native_why)(pass - 2));
}

/* The dispatchers the generated entry points (bindings.c, from collectives.def) hand
 * their calls to: ct_dropin_intercept (pmpi.c) chooses and runs a blocking or
 * non-blocking call of the eight classic operations, ct_dropin_intercept_v
 * (pmpi_v.c) one of the others (v NULL: no per-rank arrays) and MPI_Ibarrier. */
CT_DROPIN_HIDDEN int ct_dropin_intercept(const ct_call *c);
CT_DROPIN_HIDDEN int ct_dropin_intercept_v(const ct_call *c, const ct_vargs *v);

/* A _c call left to the library (call: its MPI name, "MPI_Allgatherv_c"; why: its counts
 * do not fit an int, or a non-blocking v-form whose int copies of the arrays would have to
 * outlive the call): counted by the monitor as a native call and by the finalize summary,
 * and logged under COLLTUNE_LOG=debug (its size unknown: 0 bytes). */
CT_DROPIN_HIDDEN void ct_dropin_count_native(ct_coll coll, MPI_Comm comm, const char *call,
                                             ct_native_why why);

/* The profile (src/monitor/profile.h, COLLTUNE_PROFILE=on) of a call of c that ran
 * `ran` (with options o when colltune's) in form (CT_PROF_*), started at t0 and returned
 * rc: a blocking call is recorded now, a non-blocking one when the wait family sees its
 * request complete, a persistent init registers its request for MPI_Start. */
CT_DROPIN_HIDDEN void ct_dropin_profile(const ct_call *c, int form, long long bytes,
                                        const char *ran, const ct_options *o,
                                        unsigned long long t0, int rc);

/* A large-count (_c) call the library serves itself (counts past an int), started at t0
 * and returned rc: profiled as a native call of unknown size (0). */
CT_DROPIN_HIDDEN void ct_dropin_profile_library(ct_coll coll, int form, MPI_Comm comm,
                                                MPI_Request *request, unsigned long long t0,
                                                int rc);
/* The generated _c entry points' library call: `return call`, timed for the profile
 * when it is on. */
#define CT_DROPIN_LIBRARY_C(coll, form, comm, request, call)                                  \
    do {                                                                                      \
        if (!ct_profile_on)                                                                   \
            return call;                                                                      \
        unsigned long long t0_ = ct_monitor_ticks();                                          \
        int rc_ = call;                                                                       \
        ct_dropin_profile_library(coll, form, comm, request, t0_, rc_);                       \
        return rc_;                                                                           \
    } while (0)

/* The ranks of comm, or 0 for an inter-communicator or a bad one (the library
 * then decides). */
CT_DROPIN_HIDDEN int ct_dropin_comm_size(MPI_Comm comm);
CT_DROPIN_HIDDEN int ct_dropin_is_root(MPI_Comm comm, int root);

/* MPI 4's persistent collectives (MPI_Bcast_init ...): Open MPI 5 has them while
 * it says MPI 3.1, without the large-count (_c) forms, which need MPI 4. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define CT_HAVE_PERSISTENT_COLL 1
#else
#define CT_HAVE_PERSISTENT_COLL 0
#endif

#if CT_HAVE_PERSISTENT_COLL
/* pmpi_persistent.c, for the generated inits: colltune's plan for c when it takes
 * the call (*native 0; the result is returned), else *native = 1 and the caller
 * makes the library's request, whose result (rc) ct_dropin_made_native counts and
 * logs, and returns (ct_dropin_made_native_c: a _c init's, its size unknown). */
CT_DROPIN_HIDDEN int ct_dropin_plan(const ct_call *c, const ct_vargs *v, int *native);
CT_DROPIN_HIDDEN int ct_dropin_made_native(int rc, const ct_call *c, const ct_vargs *v);
#if MPI_VERSION >= 4
CT_DROPIN_HIDDEN int ct_dropin_made_native_c(int rc, ct_coll coll, MPI_Comm comm,
                                            MPI_Request *request);
#endif
#endif
/* pmpi_persistent.c: MPI_Request_free (pmpi.c) of a persistent collective's handle: its
 * later starts are not the summary's or the debug log's any more (a handle MPI gives out
 * again may be a point-to-point request). Cheap where no persistent collective is kept. */
CT_DROPIN_HIDDEN void ct_dropin_persistent_forget(MPI_Request handle);

#if MPI_VERSION >= 4
#define CT_FITS_INT(n) ((n) >= 0 && (n) <= INT_MAX)
/* The arrays of the _c forms as ints: 0 when every entry fits (counts are
 * non-negative too), -1 when one does not or memory is short. The caller frees
 * *out; a NULL array stays NULL. */
CT_DROPIN_HIDDEN int ct_dropin_counts_to_int(const MPI_Count *a, int n, int **out);
CT_DROPIN_HIDDEN int ct_dropin_displs_to_int(const MPI_Aint *a, int n, int **out);
#endif

#endif
