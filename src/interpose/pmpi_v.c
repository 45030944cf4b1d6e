/*
 * The drop-in's v-variants, reduce-scatters and scans (issue 22): MPI_Allgatherv,
 * MPI_Alltoallv, MPI_Gatherv, MPI_Scatterv, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Scan and MPI_Exscan, and their _c large-count forms
 * where the MPI has them, defined over PMPI like the eight in pmpi.c.
 *
 * The choice, per call, is the select layer's (src/select/select.h), as for the
 * eight in pmpi.c: COLLTUNE_<OP>_ALGORITHM (the operation's name in
 * capitals: COLLTUNE_REDUCE_SCATTER_BLOCK_ALGORITHM, ...) forces an algorithm;
 * else the loaded tuning table (COLLTUNE_TABLE), only for the operations whose
 * size every rank knows alike (allgatherv and reduce_scatter: the average
 * block; reduce_scatter_block, scan, exscan: the vector). Gatherv, scatterv and
 * alltoallv see only their own counts on most ranks: a size-keyed choice could
 * differ between ranks and deadlock, so they run native unless forced. A
 * commutative-only algorithm given a non-commutative op, arguments colltune
 * does not take (negative displacements, ...) and inter-communicators go to the
 * library; the monitor counts those native calls. COLLTUNE_LOG=debug logs each
 * call as pmpi.c does.
 *
 * The _c forms take the int path when every count and displacement fits in
 * an int, else go to the library's _c function (counted native).
 *
 * Non-blocking: MPI_Ibarrier and the MPI_I* of all eight (MPI_Iallgatherv ...
 * MPI_Iexscan) choose the same way (the blocking operation's
 * COLLTUNE_<OP>_ALGORITHM, or the table's non-blocking entries, else its
 * blocking ones) and run through
 * src/nbc (a generalized request that pmpi.c's wait and test family drives).
 * Their _c forms take the int path like the blocking ones where they have no
 * per-rank arrays; MPI_Iallgatherv_c, MPI_Ialltoallv_c, MPI_Igatherv_c,
 * MPI_Iscatterv_c and MPI_Ireduce_scatter_c go to the library, counted (the
 * int copies of their arrays would have to outlive the call).
 *
 * The entry points themselves are generated (bindings.c, from
 * src/interpose/collectives.def); this file chooses and dispatches.
 */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "dropin.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"
#include "select/select.h"

static void log_call(const ct_call *c, long long bytes, const char *ran, const ct_choice *choice,
                     const ct_options *o, ct_native_why why)
{
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    char line[256];
    int native = strcmp(ran, "native") == 0;
    char seg[40] = ""; /* a segmented algorithm's segment size, as pmpi.c says it */
    if (!native && choice->algorithm && (choice->algorithm->flags & CT_ALG_SEGMENTABLE) &&
        o->has_segsize)
        snprintf(seg, sizeof seg, " segsize %lld", o->segsize);
    native = native && why != CT_NWHY;
    int n = snprintf(line, sizeof line,
                     "colltune: rank %d/%d MPI_%s%s %lld bytes -> %s%s%s%s%s\n", rank, size,
                     c->request ? "I" : "",
                     c->request ? ct_coll_name(c->coll) : ct_select_mpi_name(c->coll), bytes, ran,
                     seg, native ? " (" : "", native ? ct_select_why_text(why) : "",
                     native ? ")" : "");
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

/* dropin.h */
int ct_dropin_intercept_v(const ct_call *c, const ct_vargs *v)
{
    ct_options o;
    ct_choice choice = {.why = CT_WHY_INTER};
    int err = MPI_SUCCESS, size, rank, inter;
    long long bytes = ct_call_bytes_v(c, v);
    ct_call_comm_shape(c->comm, &size, &rank, &inter); /* once: the inter test and the choice */
    int native = inter ||
                 ct_dropin_choose(c, v, c->request ? CT_FORM_NONBLOCKING : CT_FORM_BLOCKING,
                                  size, bytes, &o, &choice, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    unsigned long long t0 = ct_monitor_level || ct_profile_on ? ct_monitor_ticks() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    if (ct_profile_on)
        ct_profile_op = (int)c->coll + 1;
    int rc = native       ? ct_call_native_v(c, v) /* the non-blocking one with a request */
             : c->request ? ct_nbc_start(c, v, &o, 1, &ran)
                          : ct_call_run_v(c, v, &o, 1, &ran);
    ct_monitor_in_collective = 0;
    if (ct_profile_on) {
        ct_profile_op = 0;
        ct_dropin_profile(c, c->request ? CT_PROF_NONBLOCKING : CT_PROF_BLOCKING, bytes, ran,
                          native ? NULL : &o, t0, rc);
    }
    if (ct_monitor_level) {
        ct_monitor_time(ct_monitor_ticks() - t0);
        if (!strcmp(ran, "native"))
            ct_monitor_native(c->coll, bytes);
    }
    log_call(c, bytes, ran, &choice, &o, ct_dropin_outcome(c->coll, native, &choice, ran, &o));
    return rc;
}

/* The entry points (MPI_Allgatherv ... MPI_Iexscan, MPI_Ibarrier, the _c forms) are
 * generated from src/interpose/collectives.def into bindings.c, which hands each call
 * here. */
