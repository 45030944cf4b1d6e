/*
 * The drop-in: MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Scatter, MPI_Gather,
 * MPI_Allgather, MPI_Alltoall and MPI_Barrier defined over the PMPI profiling
 * interface, so an unmodified MPI program gets colltune by linking
 * libcolltune_pmpi or with LD_PRELOAD (`colltune preload` prints its path). Their
 * entry points are generated (bindings.c); this file dispatches them
 * (ct_dropin_intercept) and holds what is not mechanical.
 *
 * Choice of algorithm, per call, made by the select layer (src/select/select.h) for
 * every operation and call form, in this order:
 *   1. forced by the environment: COLLTUNE_<OP>_ALGORITHM=<name> with <OP> one
 *      of BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, ALLGATHER, ALLTOALL,
 *      BARRIER, and COLLTUNE_SEGSIZE=bytes for segmentable algorithms;
 *   2. the tuning table COLLTUNE_TABLE=file names (docs/TABLE.md; one made for
 *      another machine or MPI is refused with a warning, and calls go native);
 *   3. the native collective.
 * Inter-communicators, calls whose arguments colltune would refuse (so the
 * application sees native MPI's own error), and algorithms that cannot serve
 * the call (non-commutative operation) go to native.
 * COLLTUNE_LOG=debug logs every intercepted call and what ran to stderr.
 *
 * Non-blocking: MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce, MPI_Iscatter,
 * MPI_Igather, MPI_Iallgather and MPI_Ialltoall choose the same way
 * (COLLTUNE_<OP>_ALGORITHM names the blocking operation's algorithms); their
 * requests are generalized requests, and the wait and test family (MPI_Wait,
 * MPI_Test, MPI_Waitall, MPI_Testall, MPI_Waitany, MPI_Testany, MPI_Waitsome,
 * MPI_Testsome) first runs the part of a colltune request that belongs to the
 * application's core.
 * COLLTUNE_SPLIT=auto (default) or S: the split tree's application levels.
 * MPI_Init and MPI_Init_thread ask for MPI_THREAD_MULTIPLE and start the
 * progress thread only when a non-blocking choice wants it (a table entry measured
 * with the thread, or an algorithm forced by environment) and the node has a
 * core no rank is bound to (before MPI_Init: fewer ranks on the node than
 * cores); where it has none, the table's choice measured
 * without a thread serves the call (COLLTUNE_PROGRESS=auto, the default; on:
 * always a thread; off: neither; COLLTUNE_PROGRESS_CORES: its cores);
 * MPI_Finalize stops it. A table's non-blocking entries (op "ibcast", ...) give
 * the split level too, unless COLLTUNE_SPLIT is set.
 *
 * COLLTUNE_MONITOR=counters|count|peers|sizes turns on the message monitor
 * (src/monitor/monitor.h): the send family is counted here, colltune's own
 * collectives apart from the application's point-to-point; so is the receive side
 * (MPI_Recv, MPI_Irecv completed through the wait and test family, MPI_Sendrecv,
 * MPI_Mprobe/MPI_Improbe, MPI_Isendrecv and the large-count variants where the MPI has
 * them).
 *
 * COLLTUNE_PROFILE=on keeps the collective profile (src/monitor/profile.h): every call timed
 * here and in pmpi_v.c / pmpi_persistent.c, non-blocking and persistent ones ended by the
 * wait and test family below when it completes them. pvars.c shows it as MPI_T pvars.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "api/job.h"
#include "colltune.h"
#include "dropin.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"
#include "select/select.h"
#include "select/table.h"

/* dropin.h: every operation and call form asks the select layer (src/select). The callers
 * sent inter-communicators to the library already. */
int ct_dropin_choose(const ct_call *c, const ct_vargs *v, ct_form form, int size,
                     long long bytes, ct_options *opts, ct_choice *choice, int *err)
{
    (void)v;
    ct_select_query q = {c->coll, form, c->comm, size, c->op, bytes,
                         ct_call_same_size_v(c->coll), 0};
    if (form != CT_FORM_BLOCKING) {
        ct_progress_info info;
        ct_progress_query(&info);
        q.thread_running = info.running;
    }
    int native = ct_select(&q, choice, err);
    if (!native)
        ct_choice_options(choice, opts);
    return native;
}

static void log_call(ct_coll coll, MPI_Comm comm, long long bytes, const char *ran,
                     const ct_options *opts, int nonblocking, ct_native_why why)
{
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    /* One write per line, so the ranks' lines do not interleave on a shared stderr. */
    char line[256];
    int native = strcmp(ran, "native") == 0;
    char name[24];
    if (nonblocking) /* MPI_Ibcast, MPI_Iallreduce, ... */
        snprintf(name, sizeof name, "I%s", ct_coll_name(coll));
    else
        snprintf(name, sizeof name, "%s", ct_select_mpi_name(coll));
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s %lld bytes -> %s", rank,
                     size, name, bytes, ran);
    const ct_algorithm_info *info = native ? NULL : ct_algorithm_find(coll, ran);
    int segmented = info && (info->flags & CT_ALG_SEGMENTABLE) && opts->has_segsize;
    if (segmented && n > 0 && n < (int)sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, " segsize %lld", opts->segsize);
    if (native && why != CT_NWHY && n > 0 && n < (int)sizeof line) /* the summary's reason */
        n += snprintf(line + n, sizeof line - (size_t)n, " (%s)", ct_select_why_text(why));
    if (n > 0 && n < (int)sizeof line - 1) {
        line[n++] = '\n';
        ssize_t w = write(2, line, (size_t)n);
        (void)w;
    }
}

/* Whether nothing of colltune's can serve coll: no algorithm forced, no table, and
 * neither the monitor nor the debug log wants the call seen. Such a call goes to the
 * library at once: a program that preloads the drop-in and keeps native pays no lookup
 * (issue 36: 15-50% at 8 B before). */
static int left_alone(ct_coll coll, int *counted, ct_native_why *why)
{
    int may = ct_select_may_serve(coll, why);
    *counted = may < 0; /* colltune is set for other calls: the summary counts this one */
    return may <= 0 && !ct_monitor_level && ct_select_log_level() < CT_LOG_DEBUG;
}

/* dropin.h */
int ct_dropin_intercept(const ct_call *c)
{
    ct_nbc_poll_orphans();
    int counted;
    ct_native_why why_native;
    if (left_alone(c->coll, &counted, &why_native)) {
        if (counted)
            ct_select_count_native(c->coll, why_native);
        if (!ct_profile_on)
            return ct_call_native(c);
        /* native whatever the choice: timed without asking the select layer */
        unsigned long long t0 = ct_monitor_ticks();
        int rc = ct_call_native(c);
        ct_dropin_profile(c, c->request ? CT_PROF_NONBLOCKING : CT_PROF_BLOCKING,
                          ct_call_bytes(c), "native", NULL, t0, rc);
        return rc;
    }
    ct_options o;
    ct_choice choice = {.why = CT_WHY_INTER};
    int err = MPI_SUCCESS, size, rank, inter;
    /* The communicator's shape, once: the inter test, the bytes (gather's and scatter's
     * depend on the rank) and the choice (the size) all read it. */
    ct_call_comm_shape(c->comm, &size, &rank, &inter);
    long long bytes = ct_call_bytes_at(c, rank);
    int native = inter ||
                 ct_dropin_choose(c, NULL, c->request ? CT_FORM_NONBLOCKING : CT_FORM_BLOCKING,
                                  size, bytes, &o, &choice, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    int rc;
    unsigned long long t0 = ct_monitor_level || ct_profile_on ? ct_monitor_ticks() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    if (ct_profile_on)
        ct_profile_op = (int)c->coll + 1;
    if (native)
        rc = ct_call_native(c); /* the non-blocking one when c->request is set */
    else if (c->request)
        rc = ct_nbc_start(c, NULL, &o, 1, &ran);
    else
        rc = ct_call_run(c, &o, 1, &ran);
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
    ct_native_why why = ct_dropin_outcome(c->coll, native, &choice, ran, &o);
    log_call(c->coll, c->comm, bytes, ran, &o, c->request != NULL, why);
    return rc;
}

/* The entry points (MPI_Bcast ... MPI_Ialltoall, the _c forms) are generated from
 * src/interpose/collectives.def into bindings.c, which hands each call here. The _c
 * forms whose counts fit an int take the classic path (mpi4py calls them on MPICH);
 * larger ones go to the MPI library. */

/* The wait and test family: colltune's application-side part first. While the monitor
 * has non-blocking receives pending, the handles and their slots in the monitor's table
 * are saved before they complete (the call sets them to MPI_REQUEST_NULL, and MPI may
 * give a handle to another thread's receive as soon as it completes: ct_monitor_find)
 * and statuses the caller ignores are given a place, so the completed receives can be
 * counted from their statuses. Up to MON_STACK requests this lives on the stack; only a
 * larger wait while receives are pending allocates. */

enum { MON_STACK = 64 };

typedef struct mon_saved {
    MPI_Request req_stack[MON_STACK];
    long slot_stack[MON_STACK];
    MPI_Status st_stack[MON_STACK];
    MPI_Request *req;
    long *slot;
    MPI_Status *st;
} mon_saved;

/* The statuses to pass on (the caller's or ours), or NULL when out of memory. */
static MPI_Status *mon_save(mon_saved *s, int count, const MPI_Request *requests,
                            MPI_Status *statuses)
{
    int small = count <= MON_STACK;
    s->req = small ? s->req_stack : malloc(sizeof(MPI_Request) * (size_t)count);
    s->slot = small ? s->slot_stack : malloc(sizeof(long) * (size_t)count);
    s->st = statuses;
    if (statuses == MPI_STATUSES_IGNORE)
        s->st = small ? s->st_stack : malloc(sizeof(MPI_Status) * (size_t)count);
    if (!s->req || !s->slot || !s->st) {
        if (s->req != s->req_stack)
            free(s->req);
        if (s->slot != s->slot_stack)
            free(s->slot);
        if (s->st != statuses && s->st != s->st_stack)
            free(s->st);
        return NULL;
    }
    memcpy(s->req, requests, sizeof(MPI_Request) * (size_t)count);
    for (int i = 0; i < count; i++)
        s->slot[i] = ct_monitor_find(requests[i]);
    return s->st;
}

static void mon_release(mon_saved *s, MPI_Status *statuses)
{
    if (s->req != s->req_stack)
        free(s->req);
    if (s->slot != s->slot_stack)
        free(s->slot);
    if (s->st != statuses && s->st != s->st_stack)
        free(s->st);
}

/* Request i of s completed (rc of the call) with status st: MPI_ERR_IN_STATUS says which. */
static void mon_complete(int rc, const mon_saved *s, int i, const MPI_Status *st)
{
    if (rc == MPI_SUCCESS || (rc == MPI_ERR_IN_STATUS && st->MPI_ERROR == MPI_SUCCESS))
        ct_monitor_complete_at(s->slot[i], s->req[i], st);
}

static int wait_mon(MPI_Request *request, MPI_Status *status)
{
    if (!ct_monitor_level)
        return ct_wait(request, status);
    unsigned long long t0 = ct_monitor_ticks();
    MPI_Request saved = *request;
    MPI_Status own;
    long slot = ct_monitor_pending ? ct_monitor_find(saved) : -1;
    if (slot >= 0 && status == MPI_STATUS_IGNORE)
        status = &own;
    int rc = ct_wait(request, status);
    if (slot >= 0 && rc == MPI_SUCCESS)
        ct_monitor_complete_at(slot, saved, status);
    ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

static int test_mon(MPI_Request *request, int *flag, MPI_Status *status)
{
    long slot;
    if (!ct_monitor_level || !ct_monitor_pending || (slot = ct_monitor_find(*request)) < 0)
        return ct_test(request, flag, status);
    MPI_Request saved = *request;
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE)
        status = &own;
    int rc = ct_test(request, flag, status);
    if (rc == MPI_SUCCESS && *flag)
        ct_monitor_complete_at(slot, saved, status);
    return rc;
}

static int waitall_mon(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (!ct_monitor_level)
        return ct_waitall(count, requests, statuses);
    unsigned long long t0 = ct_monitor_ticks();
    mon_saved s;
    MPI_Status *st = ct_monitor_pending && count > 0 ? mon_save(&s, count, requests, statuses)
                                                     : NULL;
    int rc = ct_waitall(count, requests, st ? st : statuses);
    if (st) {
        for (int i = 0; i < count; i++)
            mon_complete(rc, &s, i, &st[i]);
        mon_release(&s, statuses);
    }
    ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

static int testall_mon(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (!ct_monitor_level || !ct_monitor_pending || count <= 0)
        return ct_testall(count, requests, flag, statuses);
    mon_saved s;
    MPI_Status *st = mon_save(&s, count, requests, statuses);
    int rc = ct_testall(count, requests, flag, st ? st : statuses);
    if (st) {
        if (*flag)
            for (int i = 0; i < count; i++)
                mon_complete(rc, &s, i, &st[i]);
        mon_release(&s, statuses);
    }
    return rc;
}

static int waitany_mon(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (!ct_monitor_level)
        return ct_waitany(count, requests, index, status);
    unsigned long long t0 = ct_monitor_ticks();
    mon_saved s;
    MPI_Status own;
    MPI_Status *st = ct_monitor_pending && count > 0
                         ? mon_save(&s, count, requests, MPI_STATUSES_IGNORE) : NULL;
    int rc = ct_waitany(count, requests, index, st && status == MPI_STATUS_IGNORE ? &own : status);
    if (st) {
        if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED)
            ct_monitor_complete_at(s.slot[*index], s.req[*index],
                                   status == MPI_STATUS_IGNORE ? &own : status);
        mon_release(&s, MPI_STATUSES_IGNORE);
    }
    ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

static int testany_mon(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (!ct_monitor_level || !ct_monitor_pending || count <= 0)
        return ct_testany(count, requests, index, flag, status);
    mon_saved s;
    MPI_Status own;
    MPI_Status *st = mon_save(&s, count, requests, MPI_STATUSES_IGNORE);
    MPI_Status *use = st && status == MPI_STATUS_IGNORE ? &own : status;
    int rc = ct_testany(count, requests, index, flag, use);
    if (st) {
        if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
            ct_monitor_complete_at(s.slot[*index], s.req[*index], use);
        mon_release(&s, MPI_STATUSES_IGNORE);
    }
    return rc;
}

/* Waitsome and Testsome: statuses[k] belongs to requests[indices[k]]. */
static int some(int wait, int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[])
{
    if (!ct_monitor_level || !ct_monitor_pending || incount <= 0)
        return (wait ? ct_waitsome : ct_testsome)(incount, requests, outcount, indices, statuses);
    mon_saved s;
    MPI_Status *st = mon_save(&s, incount, requests, statuses);
    int rc = (wait ? ct_waitsome : ct_testsome)(incount, requests, outcount, indices,
                                          st ? st : statuses);
    if (st) {
        if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
            for (int k = 0; k < *outcount; k++)
                mon_complete(rc, &s, indices[k], &st[k]);
        mon_release(&s, statuses);
    }
    return rc;
}

static int waitsome_mon(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    int rc = some(1, incount, requests, outcount, indices, statuses);
    if (ct_monitor_level)
        ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

static int testsome_mon(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return some(0, incount, requests, outcount, indices, statuses);
}

/* The profile's view of the wait and test family: while non-blocking or persistent
 * collectives are in flight (ct_profile_pending), the entries of the requests passed are
 * found before the call (a completed handle may be reused at once) and ended after it for
 * the requests it completed. Up to PROF_STACK requests of one call are followed. */
enum { PROF_STACK = 256 };

typedef struct prof_seen {
    int n, index[PROF_STACK];
    long entry[PROF_STACK];
} prof_seen;

static int prof_find(prof_seen *s, int count, const MPI_Request requests[])
{
    s->n = 0;
    for (int i = 0; i < count && s->n < PROF_STACK; i++) {
        long e = ct_profile_find(requests[i]);
        if (e >= 0) {
            s->index[s->n] = i;
            s->entry[s->n++] = e;
        }
    }
    return s->n;
}

/* Ends the entries of requests whose index done() says completed. */
static void prof_end(const prof_seen *s, int all, int one, const int *some, int nsome)
{
    unsigned long long t1 = ct_monitor_ticks();
    for (int k = 0; k < s->n; k++) {
        int done = all || s->index[k] == one;
        for (int j = 0; !done && some && j < nsome; j++)
            done = some[j] == s->index[k];
        if (done)
            ct_profile_end(s->entry[k], t1);
    }
}

static inline int prof_busy(void)
{
    return atomic_load_explicit(&ct_profile_pending, memory_order_relaxed) > 0;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    long e;
    if (!prof_busy() || (e = ct_profile_find(*request)) < 0)
        return wait_mon(request, status);
    int rc = wait_mon(request, status);
    if (rc == MPI_SUCCESS)
        ct_profile_end(e, ct_monitor_ticks());
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    long e;
    if (!prof_busy() || (e = ct_profile_find(*request)) < 0)
        return test_mon(request, flag, status);
    int rc = test_mon(request, flag, status);
    if (rc == MPI_SUCCESS && *flag)
        ct_profile_end(e, ct_monitor_ticks());
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, count, requests))
        return waitall_mon(count, requests, statuses);
    int rc = waitall_mon(count, requests, statuses);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)
        prof_end(&s, 1, -1, NULL, 0);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, count, requests))
        return testall_mon(count, requests, flag, statuses);
    int rc = testall_mon(count, requests, flag, statuses);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *flag)
        prof_end(&s, 1, -1, NULL, 0);
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, count, requests))
        return waitany_mon(count, requests, index, status);
    int rc = waitany_mon(count, requests, index, status);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED)
        prof_end(&s, 0, *index, NULL, 0);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, count, requests))
        return testany_mon(count, requests, index, flag, status);
    int rc = testany_mon(count, requests, index, flag, status);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        prof_end(&s, 0, *index, NULL, 0);
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, incount, requests))
        return waitsome_mon(incount, requests, outcount, indices, statuses);
    int rc = waitsome_mon(incount, requests, outcount, indices, statuses);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
        prof_end(&s, 0, -1, indices, *outcount);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    prof_seen s;
    if (!prof_busy() || !prof_find(&s, incount, requests))
        return testsome_mon(incount, requests, outcount, indices, statuses);
    int rc = testsome_mon(incount, requests, outcount, indices, statuses);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
        prof_end(&s, 0, -1, indices, *outcount);
    return rc;
}

/* MPI_Request_free on a collective's request is erroneous (MPI 4.1, 6.12), yet MPICH
 * and Open MPI accept it and programs do it (polling MPI_Request_get_status, then
 * freeing): a request that is over is freed; one in flight completes in the background
 * and is freed then (ct_nbc_release), with a warning under COLLTUNE_LOG=warn or debug. */
int MPI_Request_free(MPI_Request *request)
{
    if (request)
        ct_dropin_persistent_forget(*request); /* its starts are no longer counted */
    ct_nbc_req *r = request ? ct_nbc_find(*request) : NULL;
    if (r && ct_profile_on)
        ct_profile_forget(*request); /* it may complete unseen */
    if (r) {
        int in_flight = 0, rc = ct_nbc_release(r, request, &in_flight);
        if (in_flight && ct_select_log_level() >= CT_LOG_WARN)
            fprintf(stderr, "colltune: warning: MPI_Request_free on a collective's request "
                            "in flight (erroneous in MPI): it completes in the background\n");
        return rc;
    }
    if (ct_profile_on && request)
        ct_profile_forget(*request);
    ct_plan *plan = ct_plan_find(*request); /* an inactive persistent collective of colltune's */
    if (plan)
        return ct_plan_free(plan, request);
    if (ct_monitor_pending)
        ct_monitor_forget(*request); /* its receive will never be seen complete */
    return PMPI_Request_free(request);
}

/* MPI_Cancel on a collective's request is erroneous (MPI 4.1, 6.12) and cannot be done:
 * colltune's say so through the communicator's error handler and leave the request
 * alone (its schedule is still running). */
int MPI_Cancel(MPI_Request *request)
{
    int rc = ct_nbc_misuse(*request, "MPI_Cancel");
    return rc != MPI_SUCCESS ? rc : PMPI_Cancel(request);
}

/* Inspecting without completing: colltune's requests are driven and asked here. */
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    return ct_request_get_status(request, flag, status);
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
int MPI_Request_get_status_all(int count, const MPI_Request requests[], int *flag,
                               MPI_Status statuses[])
{
    return ct_request_get_status_all(count, requests, flag, statuses);
}

int MPI_Request_get_status_any(int count, const MPI_Request requests[], int *index, int *flag,
                               MPI_Status *status)
{
    return ct_request_get_status_any(count, requests, index, flag, status);
}

int MPI_Request_get_status_some(int incount, const MPI_Request requests[], int *outcount,
                                int indices[], MPI_Status statuses[])
{
    return ct_request_get_status_some(incount, requests, outcount, indices, statuses);
}
#endif

/* A user-defined op still used by a pending collective is freed when that ends. */
int MPI_Op_free(MPI_Op *op)
{
    if (op && ct_op_free_deferred(op))
        return MPI_SUCCESS;
    return PMPI_Op_free(op);
}

/* ---- Start and end: the progress thread ------------------------------- */

typedef enum { PROGRESS_OFF, PROGRESS_ON, PROGRESS_AUTO } progress_mode;

/* COLLTUNE_PROGRESS: off (or 0), on (or 1), auto (the default). */
static progress_mode progress_wanted(void)
{
    const char *p = getenv("COLLTUNE_PROGRESS");
    if (!p || !*p || !strcmp(p, "auto"))
        return PROGRESS_AUTO;
    if (!strcmp(p, "off") || !strcmp(p, "0"))
        return PROGRESS_OFF;
    if (!strcmp(p, "on") || !strcmp(p, "1"))
        return PROGRESS_ON;
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "colltune: COLLTUNE_PROGRESS='%.64s' is not off, on or auto; using "
                        "auto\n", p);
    return PROGRESS_AUTO;
}

/* Whether a non-blocking call will run a colltune algorithm the thread can serve:
 * the table has an entry measured with it, or the environment forces one. */
static int nonblocking_wants_thread(void)
{
    static const ct_coll nonblocking[] = {CT_BCAST, CT_REDUCE, CT_ALLREDUCE, CT_SCATTER,
                                          CT_GATHER};
    (void)ct_select_log_level(); /* the environment read once: the table checked and loaded */
    if (ct_table_wants_progress())
        return 1;
    for (size_t i = 0; i < sizeof nonblocking / sizeof *nonblocking; i++)
        if (ct_select_forced(nonblocking[i]))
            return 1;
    return 0;
}

/* Before MPI starts: whether this node may have a core for the thread. The launcher
 * says how many ranks share the node (MPICH's and Intel MPI's hydra: MPI_LOCALNRANKS;
 * Open MPI: OMPI_COMM_WORLD_LOCAL_SIZE). With at least as many ranks as online cores,
 * auto starts no thread (progress_start finds no free core) when the ranks are unbound
 * (this process may run on every core: so may the others) or, as many as the cores,
 * each bound to one: then MPI_THREAD_MULTIPLE, which taxes every MPI call of MPICH by
 * 1-2 us (issue 36), is not asked for. More ranks than cores bound to single cores may
 * share some and leave others free (taskset), and COLLTUNE_PROGRESS_CORES names cores:
 * the thread stays possible, as do unknown counts. */
static int node_may_have_a_free_core(void)
{
    const char *given = getenv("COLLTUNE_PROGRESS_CORES");
    if (given && *given)
        return 1;
    static const char *const local_size[] = {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"};
    for (size_t i = 0; i < sizeof local_size / sizeof *local_size; i++) {
        const char *v = getenv(local_size[i]);
        char *end;
        long ranks = v ? strtol(v, &end, 10) : 0;
        if (!v || !*v || *end != '\0' || ranks <= 0)
            continue;
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_set_t mine;
        if (cores <= 0 || ranks < cores || sched_getaffinity(0, sizeof mine, &mine) != 0)
            return 1;
        long usable = CPU_COUNT(&mine);
        return !(usable >= cores || (usable == 1 && ranks == cores));
    }
    return 1;
}

/* Before MPI starts: whether a non-blocking choice may want the thread (a forced
 * algorithm, or the table, read without its MPI check, which comes after MPI_Init),
 * so that MPI_THREAD_MULTIPLE, which costs MPICH about a microsecond a call, is
 * asked only then. */
static int thread_may_be_wanted(void)
{
    if (!node_may_have_a_free_core())
        return 0;
    static const char *const forced[] = {"COLLTUNE_BCAST_ALGORITHM", "COLLTUNE_REDUCE_ALGORITHM",
                                         "COLLTUNE_ALLREDUCE_ALGORITHM",
                                         "COLLTUNE_SCATTER_ALGORITHM",
                                         "COLLTUNE_GATHER_ALGORITHM"};
    for (size_t i = 0; i < sizeof forced / sizeof *forced; i++) {
        const char *v = getenv(forced[i]);
        if (v && *v)
            return 1;
    }
    const char *table = getenv("COLLTUNE_TABLE");
    char why[512];
    return table && *table && ct_table_load(table, why, sizeof why) == 0 &&
           ct_table_wants_progress();
}

/* The thread level to ask MPI for: MPI_THREAD_MULTIPLE where a thread may start. */
static int thread_level(progress_mode mode, int required)
{
    if (mode == PROGRESS_ON || (mode == PROGRESS_AUTO && thread_may_be_wanted()))
        return MPI_THREAD_MULTIPLE;
    return required;
}

/* After MPI's own start: on, the thread whatever the cores; auto, only when a
 * non-blocking choice wants it and the node has a core no rank is bound to (else
 * the table's choices measured without a thread serve the calls). Collective over
 * MPI_COMM_WORLD either way, as every rank reads the same table and environment. */
static void start_progress(progress_mode mode)
{
    if (mode == PROGRESS_ON)
        ct_progress_start(MPI_COMM_WORLD);
    else if (mode == PROGRESS_AUTO && nonblocking_wants_thread())
        ct_progress_start_on_free_core(MPI_COMM_WORLD);
}

/* After MPI's start: an unknown COLLTUNE_LOG stops the program with one line (rank 0's,
 * out before any rank aborts), not a run at a log level the user did not ask for. */
static void check_log_setting(void)
{
    const char *problem = ct_select_log_problem();
    if (!problem)
        return;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "%s\n", problem);
    PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Abort(MPI_COMM_WORLD, 2);
}

unsigned char ct_dropin_pass[CT_NCOLL];

/* dropin.h: after MPI_Init, when the environment, the table, the monitor and the profile
 * are what they stay. */
void ct_dropin_settle(void)
{
    int watched = ct_monitor_level || ct_profile_on || ct_select_log_level() >= CT_LOG_DEBUG;
    for (int k = 0; k < CT_NCOLL; k++) {
        ct_native_why why = CT_WHY_NOT_CHOSEN;
        int may = ct_select_may_serve((ct_coll)k, &why);
        ct_dropin_pass[k] = watched || may > 0 ? 0 : may == 0 ? 1 : (unsigned char)(2 + why);
    }
}

int MPI_Init(int *argc, char ***argv)
{
    progress_mode mode = progress_wanted();
    int provided, level = thread_level(mode, MPI_THREAD_SINGLE);
    int rc = level != MPI_THREAD_SINGLE ? PMPI_Init_thread(argc, argv, level, &provided)
                                        : PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        check_log_setting();
        start_progress(mode);
        ct_monitor_init();
        ct_dropin_settle();
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    progress_mode mode = progress_wanted();
    int rc = PMPI_Init_thread(argc, argv, thread_level(mode, required), provided);
    if (rc == MPI_SUCCESS) {
        check_log_setting();
        start_progress(mode);
        ct_monitor_init();
        ct_dropin_settle();
    }
    return rc;
}

int MPI_Finalize(void)
{
    ct_select_summary(); /* rank 0: what served its calls (a table or forced algorithm) */
    ct_nbc_drain(); /* collectives freed in flight (MPI_Request_free) end first */
    ct_progress_stop();
    ct_nbc_reap();
    ct_monitor_finish();
    return PMPI_Finalize();
}

/* ---- The send family, for the monitor ---------------------------------- */

#define MONITORED(call, comm, dest, count, type)                                            \
    do {                                                                                    \
        if (!ct_monitor_level)                                                              \
            return call;                                                                    \
        ct_monitor_send(comm, dest, count, type);                                           \
        unsigned long long t0_ = ct_monitor_ticks();                                        \
        int rc_ = call;                                                                     \
        ct_monitor_time(ct_monitor_ticks() - t0_);                                          \
        return rc_;                                                                         \
    } while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Send(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Ssend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Rsend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Bsend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request *r)
{
    MONITORED(PMPI_Isend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Issend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Irsend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Ibsend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

/* ---- The receive side, for the monitor --------------------------------- */

/* A blocking receive (or Sendrecv, counted as a send first): from level count on,
 * `status` is given a place when the caller ignores it, and the receive is counted from
 * it (below that only the time is taken: an ignored status costs MPI less to fill). */
#define MONITORED_RECV(call, comm, status)                                                  \
    do {                                                                                    \
        if (!ct_monitor_level)                                                              \
            return call;                                                                    \
        MPI_Status own_;                                                                    \
        int count_ = ct_monitor_level >= CT_MON_COUNT;                                      \
        if (count_ && status == MPI_STATUS_IGNORE)                                          \
            status = &own_;                                                                 \
        unsigned long long t0_ = ct_monitor_ticks();                                        \
        int rc_ = call;                                                                     \
        ct_monitor_time(ct_monitor_ticks() - t0_);                                          \
        if (count_ && rc_ == MPI_SUCCESS)                                                   \
            ct_monitor_recv(comm, status);                                                  \
        return rc_;                                                                         \
    } while (0)

/* A non-blocking receive: noted with its request, counted when it completes. */
#define MONITORED_IRECV(call, comm, r)                                                      \
    do {                                                                                    \
        int rc_ = call;                                                                     \
        if (ct_monitor_level >= CT_MON_COUNT && rc_ == MPI_SUCCESS)                         \
            ct_monitor_post(comm, *r);                                                      \
        return rc_;                                                                         \
    } while (0)

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype st, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rt, int src, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    ct_monitor_send(comm, dest, scount, st);
    MONITORED_RECV(PMPI_Sendrecv(sbuf, scount, st, dest, stag, rbuf, rcount, rt, src, rtag,
                                 comm, status),
                   comm, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest, int stag, int src,
                         int rtag, MPI_Comm comm, MPI_Status *status)
{
    ct_monitor_send(comm, dest, count, t);
    MONITORED_RECV(PMPI_Sendrecv_replace(buf, count, t, dest, stag, src, rtag, comm, status),
                   comm, status);
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    MONITORED_RECV(PMPI_Recv(buf, count, t, src, tag, comm, status), comm, status);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
              MPI_Request *r)
{
    MONITORED_IRECV(PMPI_Irecv(buf, count, t, src, tag, comm, r), comm, r);
}

/* A matched probe takes the message off the queue for this rank: it is counted here, and
 * MPI_Mrecv / MPI_Imrecv (which name no communicator) are left alone. */
int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    MONITORED_RECV(PMPI_Mprobe(src, tag, comm, message, status), comm, status);
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    if (!ct_monitor_level)
        return PMPI_Improbe(src, tag, comm, flag, message, status);
    MPI_Status own;
    if (status == MPI_STATUS_IGNORE)
        status = &own;
    int rc = PMPI_Improbe(src, tag, comm, flag, message, status);
    if (rc == MPI_SUCCESS && *flag)
        ct_monitor_recv(comm, status);
    return rc;
}

/* MPI 4's Isendrecv (Open MPI 5 has it while saying MPI 3.1) and the large-count (_c)
 * variants, which mpi4py calls when the MPI has them. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
int MPI_Isendrecv(const void *sbuf, int scount, MPI_Datatype st, int dest, int stag, void *rbuf,
                  int rcount, MPI_Datatype rt, int src, int rtag, MPI_Comm comm,
                  MPI_Request *r)
{
    ct_monitor_send(comm, dest, scount, st);
    MONITORED_IRECV(PMPI_Isendrecv(sbuf, scount, st, dest, stag, rbuf, rcount, rt, src, rtag,
                                   comm, r),
                    comm, r);
}

int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype t, int dest, int stag, int src,
                          int rtag, MPI_Comm comm, MPI_Request *r)
{
    ct_monitor_send(comm, dest, count, t);
    MONITORED_IRECV(PMPI_Isendrecv_replace(buf, count, t, dest, stag, src, rtag, comm, r), comm,
                    r);
}
#endif

#if MPI_VERSION >= 4
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
               MPI_Comm comm)
{
    MONITORED(PMPI_Send_c(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                MPI_Comm comm)
{
    MONITORED(PMPI_Ssend_c(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                MPI_Comm comm)
{
    MONITORED(PMPI_Rsend_c(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                MPI_Comm comm)
{
    MONITORED(PMPI_Bsend_c(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                MPI_Comm comm, MPI_Request *r)
{
    MONITORED(PMPI_Isend_c(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                 MPI_Comm comm, MPI_Request *r)
{
    MONITORED(PMPI_Issend_c(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                 MPI_Comm comm, MPI_Request *r)
{
    MONITORED(PMPI_Irsend_c(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag,
                 MPI_Comm comm, MPI_Request *r)
{
    MONITORED(PMPI_Ibsend_c(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Sendrecv_c(const void *sbuf, MPI_Count scount, MPI_Datatype st, int dest, int stag,
                   void *rbuf, MPI_Count rcount, MPI_Datatype rt, int src, int rtag,
                   MPI_Comm comm, MPI_Status *status)
{
    ct_monitor_send(comm, dest, scount, st);
    MONITORED_RECV(PMPI_Sendrecv_c(sbuf, scount, st, dest, stag, rbuf, rcount, rt, src, rtag,
                                   comm, status),
                   comm, status);
}

int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype t, int dest, int stag,
                           int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    ct_monitor_send(comm, dest, count, t);
    MONITORED_RECV(PMPI_Sendrecv_replace_c(buf, count, t, dest, stag, src, rtag, comm, status),
                   comm, status);
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
               MPI_Status *status)
{
    MONITORED_RECV(PMPI_Recv_c(buf, count, t, src, tag, comm, status), comm, status);
}

int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
                MPI_Request *r)
{
    MONITORED_IRECV(PMPI_Irecv_c(buf, count, t, src, tag, comm, r), comm, r);
}

int MPI_Isendrecv_c(const void *sbuf, MPI_Count scount, MPI_Datatype st, int dest, int stag,
                    void *rbuf, MPI_Count rcount, MPI_Datatype rt, int src, int rtag,
                    MPI_Comm comm, MPI_Request *r)
{
    ct_monitor_send(comm, dest, scount, st);
    MONITORED_IRECV(PMPI_Isendrecv_c(sbuf, scount, st, dest, stag, rbuf, rcount, rt, src, rtag,
                                     comm, r),
                    comm, r);
}

int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype t, int dest, int stag,
                            int src, int rtag, MPI_Comm comm, MPI_Request *r)
{
    ct_monitor_send(comm, dest, count, t);
    MONITORED_IRECV(PMPI_Isendrecv_replace_c(buf, count, t, dest, stag, src, rtag, comm, r),
                    comm, r);
}
#endif
