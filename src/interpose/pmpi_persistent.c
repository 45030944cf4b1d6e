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
 * The finalize summary and COLLTUNE_LOG=debug count a persistent collective once
 * per MPI_Start, as the profile does (a program that starts a plan 5 times made
 * 5 calls): the init says what it chose in its own debug line, and each start
 * of it, colltune's plan or the library's request, is a call the summary counts
 * and the debug log shows ("MPI_Start (Bcast_init) ... -> ...").
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "dropin.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"

/* ---- The inits' choices, counted at each start ------------------------------- */

/* What an init chose, kept by its handle while the summary or the debug log wants the
 * starts (a table or forced algorithm active, or COLLTUNE_LOG=debug): a few per program,
 * found by a scan under a lock only when some are kept. */
typedef struct kept {
    MPI_Request handle;
    ct_coll coll;
    const ct_algorithm_info *alg; /* what the plan runs; NULL: the library's request */
    long long segsize;            /* > 0: the plan's segment size, as the log says it */
    ct_native_why why;            /* alg NULL: why the init went native */
    long long bytes;
    int rank, size; /* in the communicator, for the debug line (no MPI call at a start) */
} kept;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept *kept_v;
static size_t nkept_v;
static atomic_int nkept; /* MPI_Start and MPI_Request_free skip the lock while 0 */
/* Bumped (under kept_lock) at every change of the list: a thread's last handle found by
 * count_start stays right while it is unchanged, so a loop of MPI_Start on one handle
 * takes neither the lock nor the scan (they were 170 instructions a start). */
static atomic_uint kept_gen;
static _Thread_local struct {
    kept k;
    unsigned gen;
    int valid;
} last_kept;

#if CT_HAVE_PERSISTENT_COLL
static size_t kept_cap;

static void keep(const ct_call *c, const ct_algorithm_info *alg, long long segsize,
                 ct_native_why why, long long bytes)
{
    if (!c->request || *c->request == MPI_REQUEST_NULL ||
        (!ct_select_active() && ct_select_log_level() < CT_LOG_DEBUG))
        return;
    kept k = {.handle = *c->request, .coll = c->coll, .alg = alg, .segsize = segsize,
              .why = why, .bytes = bytes < 0 ? 0 : bytes, .rank = -1};
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &k.rank);
        PMPI_Comm_size(c->comm, &k.size);
    }
    pthread_mutex_lock(&kept_lock);
    if (nkept_v == kept_cap) {
        size_t cap = kept_cap ? 2 * kept_cap : 16;
        kept *v = realloc(kept_v, cap * sizeof *v);
        if (!v) { /* out of memory: its starts go uncounted, the program goes on */
            pthread_mutex_unlock(&kept_lock);
            return;
        }
        kept_v = v;
        kept_cap = cap;
    }
    kept_v[nkept_v++] = k;
    atomic_store(&nkept, (int)nkept_v);
    atomic_fetch_add_explicit(&kept_gen, 1, memory_order_release);
    pthread_mutex_unlock(&kept_lock);
}
#endif

/* dropin.h */
void ct_dropin_persistent_forget(MPI_Request handle)
{
    if (atomic_load_explicit(&nkept, memory_order_relaxed) == 0 || handle == MPI_REQUEST_NULL)
        return;
    pthread_mutex_lock(&kept_lock);
    for (size_t i = 0; i < nkept_v; i++)
        if (kept_v[i].handle == handle) {
            kept_v[i] = kept_v[--nkept_v];
            atomic_fetch_add_explicit(&kept_gen, 1, memory_order_release);
            break;
        }
    atomic_store(&nkept, (int)nkept_v);
    pthread_mutex_unlock(&kept_lock);
}

/* A start of a kept handle: one call for the summary, one debug line. */
static void count_start(MPI_Request handle)
{
    if (atomic_load_explicit(&nkept, memory_order_relaxed) == 0)
        return;
    kept k = {0};
    int found = 0;
    unsigned gen = atomic_load_explicit(&kept_gen, memory_order_acquire);
    if (last_kept.valid && last_kept.gen == gen && last_kept.k.handle == handle) {
        k = last_kept.k;
        found = 1;
    } else {
        pthread_mutex_lock(&kept_lock);
        gen = atomic_load_explicit(&kept_gen, memory_order_relaxed);
        for (size_t i = 0; i < nkept_v && !found; i++)
            if (kept_v[i].handle == handle) {
                k = kept_v[i];
                found = 1;
            }
        pthread_mutex_unlock(&kept_lock);
        if (found) {
            last_kept.k = k;
            last_kept.gen = gen;
            last_kept.valid = 1;
        }
    }
    if (!found)
        return;
    if (k.alg)
        ct_select_count_served(k.coll, k.alg, k.segsize > 0, k.segsize);
    else
        ct_select_count_native(k.coll, k.why);
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    char line[256], seg[40] = "", why[96] = "";
    if (k.segsize > 0)
        snprintf(seg, sizeof seg, " segsize %lld", k.segsize);
    if (!k.alg)
        snprintf(why, sizeof why, " (%s)", ct_select_why_text(k.why));
    /* Not "MPI_<Op>_init N bytes ->": that is the init's line, which says the plan. */
    int n = snprintf(line, sizeof line,
                     "colltune: rank %d/%d MPI_Start (%s_init) %lld bytes -> %s%s%s\n", k.rank,
                     k.size, ct_select_mpi_name(k.coll), k.bytes, k.alg ? k.alg->name : "native",
                     seg, why);
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

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
    int err = MPI_SUCCESS, size, rank, inter, go = -1;
    long long bytes = ct_call_bytes_v(c, v);
    *native = 0;
    ct_call_comm_shape(c->comm, &size, &rank, &inter); /* once: the inter test and the choice */
    if (inter) {
        *native = 1;
        plan_why = CT_WHY_INTER;
        return MPI_SUCCESS;
    }
    if (ct_dropin_choose(c, v, CT_FORM_PERSISTENT, size, bytes, &o, &choice, &err)) {
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
    int segmented = choice.algorithm && (choice.algorithm->flags & CT_ALG_SEGMENTABLE) &&
                    o.has_segsize;
    if (rc == MPI_SUCCESS) { /* a plan made: its starts run the algorithm that was chosen */
        /* What ct_dropin_outcome would count for the call, counted at each start instead. */
        if (!choice.algorithm ||
            (ran != choice.algorithm->name && strcmp(ran, "native") == 0))
            keep(c, NULL, 0, ct_select_take_refusal(), bytes);
        else
            keep(c, choice.algorithm, segmented ? o.segsize : 0, CT_NWHY, bytes);
    }
    log_init(c, bytes, ran, segmented ? o.segsize : 0, CT_NWHY);
    if (ct_profile_on)
        ct_dropin_profile(c, CT_PROF_PERSISTENT, bytes, ran, &o, 0, rc);
    return rc;
}

/* The library's persistent request was made (rc): counted, logged. */
static int counted_native(int rc, const ct_call *c, long long bytes, ct_native_why why)
{
    if (rc == MPI_SUCCESS) /* the summary counts its starts */
        keep(c, NULL, 0, why, bytes);
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
    if (request)
        count_start(*request);
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
