/*
 * The drop-in's persistent collectives (MPI 4): MPI_Bcast_init ... for every
 * operation colltune knows, their _c large-count forms, and MPI_Start and
 * MPI_Startall. Built where the library has them (CT_HAVE_PERSISTENT_COLL:
 * Open MPI 5 too, which says MPI 3.1); the _c forms with an MPI 4.
 *
 * Init chooses as the non-blocking call would (COLLTUNE_<OP>_ALGORITHM, else
 * the tuning table; pmpi.c, pmpi_v.c) and prepares the call once
 * (src/nbc/persistent.c): checks, algorithm, schedule. Each MPI_Start runs that
 * plan through the non-blocking engine. A call colltune does not take (native
 * chosen, arguments it refuses, an inter-communicator, counts past an int)
 * gets the library's own persistent request, counted by the monitor once, at
 * init; MPI_Start and the waits then go to the library.
 *
 * MPI_Startall starts its requests in array order, colltune's and the
 * library's alike: persistent collectives must start in the same order on every
 * rank, and array order is the one the program wrote.
 *
 * The inits themselves are generated (bindings.c, from
 * src/interpose/collectives.def); this file plans and starts.
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

#if CT_HAVE_PERSISTENT_COLL

/* Why the init this thread is making went native (ct_dropin_plan to the generated init's
 * ct_dropin_made_native, on the same thread). */
static _Thread_local ct_native_why plan_why = CT_WHY_ARGS;

static void log_init(const ct_call *c, long long bytes, const char *ran, long long segsize,
                     ct_native_why why)
{
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    char line[256];
    int native = strcmp(ran, "native") == 0 && why != CT_NWHY;
    char seg[40] = ""; /* the segment size a plan was made with, as the other lines say it */
    if (segsize > 0)
        snprintf(seg, sizeof seg, " segsize %lld", segsize);
    int n = snprintf(line, sizeof line,
                     "colltune: rank %d/%d MPI_%s_init %lld bytes -> %s%s%s%s%s\n", rank, size,
                     ct_select_mpi_name(c->coll), bytes, ran, seg, native ? " (" : "",
                     native ? ct_select_why_text(why) : "", native ? ")" : "");
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

/* colltune's plan for c when it takes the call (*native 0; the result is
 * returned); else *native = 1 and the caller makes the library's request. */
/* dropin.h */
int ct_dropin_plan(const ct_call *c, const ct_vargs *v, int *native)
{
    ct_options o;
    ct_choice choice;
    int err = MPI_SUCCESS, inter = 0, go = -1;
    long long bytes = ct_call_bytes_v(c, v);
    *native = 0;
    if (c->comm != MPI_COMM_NULL && PMPI_Comm_test_inter(c->comm, &inter) == MPI_SUCCESS &&
        inter) {
        *native = 1;
        plan_why = CT_WHY_INTER;
        return MPI_SUCCESS;
    }
    if (ct_dropin_choose(c, v, CT_FORM_PERSISTENT, bytes, &o, &choice, &err)) {
        *native = err == MPI_SUCCESS;
        plan_why = choice.why;
        return err;
    }
    const char *ran = "native";
    int was = ct_monitor_in_collective;
    ct_monitor_in_collective = 1; /* preparing may exchange (a shared segment's set-up) */
    int rc = ct_plan_init(c, v, &o, &go, &ran);
    ct_monitor_in_collective = was;
    if (go == -1) {
        *native = 1;
        plan_why = ct_select_take_refusal();
        return MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS) /* a plan made: its starts run the algorithm that was chosen */
        ct_dropin_outcome(c->coll, 0, &choice, ran, &o);
    int segmented = choice.algorithm && (choice.algorithm->flags & CT_ALG_SEGMENTABLE) &&
                    o.has_segsize;
    log_init(c, bytes, ran, segmented ? o.segsize : 0, CT_NWHY);
    if (ct_profile_on)
        ct_dropin_profile(c, CT_PROF_PERSISTENT, bytes, ran, &o, 0, rc);
    return rc;
}

/* The library's persistent request was made (rc): counted, logged. */
static int counted_native(int rc, const ct_call *c, long long bytes, ct_native_why why)
{
    ct_select_count_native(c->coll, why);
    if (ct_monitor_level)
        ct_monitor_native(c->coll, bytes < 0 ? 0 : bytes);
    log_init(c, bytes, "native", 0, why);
    if (ct_profile_on)
        ct_dropin_profile(c, CT_PROF_PERSISTENT, bytes < 0 ? 0 : bytes, "native", NULL, 0, rc);
    return rc;
}

/* dropin.h */
int ct_dropin_made_native(int rc, const ct_call *c, const ct_vargs *v)
{
    ct_native_why why = plan_why;
    plan_why = CT_WHY_ARGS;
    return counted_native(rc, c, ct_call_bytes_v(c, v), why);
}

/* The inits (MPI_Bcast_init ... and their _c forms) are generated from
 * src/interpose/collectives.def into bindings.c: each makes its ct_call, asks
 * ct_dropin_plan, and where that says native makes the library's request and
 * hands it to ct_dropin_made_native (_c: the int path where everything fits, the
 * plan keeping its own copy of the arrays; else ct_dropin_made_native_c). */

#if MPI_VERSION >= 4
/* A _c init the library makes (counts past an int, arrays that do not convert, or
 * native chosen): counted and logged like the others, its size unknown (0).
 * dropin.h */
int ct_dropin_made_native_c(int rc, ct_coll coll, MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {.coll = coll, .comm = comm, .request = request};
    return counted_native(rc, &c, 0, CT_WHY_LARGE_COUNT);
}

#endif /* MPI_VERSION >= 4: the _c forms */
#endif /* CT_HAVE_PERSISTENT_COLL */

/* ---- Starting ---------------------------------------------------------------- */

static int start_one(MPI_Request *request)
{
    ct_plan *p = ct_plan_find(*request);
    if (!p && !ct_profile_on)
        return PMPI_Start(request);
    /* The profile times from the start to the completion the wait family sees; the
     * monitor counts the start's time and its messages as collective traffic. */
    unsigned long long t0 = ct_monitor_level || ct_profile_on ? ct_monitor_ticks() : 0;
    int rc;
    if (p) {
        int was = ct_monitor_in_collective;
        ct_monitor_in_collective = 1;
        rc = ct_plan_start(p);
        ct_monitor_in_collective = was;
        if (ct_monitor_level)
            ct_monitor_time(ct_monitor_ticks() - t0);
    } else {
        rc = PMPI_Start(request);
    }
    if (ct_profile_on && rc == MPI_SUCCESS)
        ct_profile_started(*request, t0);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    return start_one(request);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int rc = start_one(&requests[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
