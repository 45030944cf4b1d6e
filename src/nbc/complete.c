/*
 * The wait and test family over any mix of requests: colltune's non-blocking
 * collectives, the program's point-to-point and native collective requests,
 * MPI_REQUEST_NULL and inactive persistent requests, in any order.
 *
 * MPI never sees a colltune request (a generalized request) in one of its
 * completion calls while it is in flight: each call here splits its array into
 * colltune's requests, which it checks itself, and a copy holding only the
 * others (colltune's slots set to MPI_REQUEST_NULL), which it hands to the
 * matching PMPI test call. Until the call may return, it polls: one step of
 * every pending application part (ct_nbc_poll: all of them, not only those
 * named, since ranks may complete their collectives in different orders), then
 * MPI. A finished colltune request is freed with PMPI_Wait, which returns at
 * once. With no colltune request named and none in flight, each call is MPI's.
 *
 * Why not hand generalized requests to MPI's array calls: MPICH 5.0.2 asserts
 * in MPI_Waitall on a generalized request mixed with others (1 rank), and a
 * blocking wait inside MPI cannot run colltune's application part.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "nbc.h"

enum { STACK = 32 };

/* A request array seen apart: colltune's requests and a copy of the others. */
typedef struct view {
    int n, ours;          /* colltune's requests named, not yet collected */
    MPI_Request *native;  /* the array, colltune's slots MPI_REQUEST_NULL */
    ct_nbc_req **mine;    /* colltune's request at i, NULL once collected or native */
    char *was_mine;       /* slot i held a colltune request */
    MPI_Request native_stack[STACK];
    ct_nbc_req *mine_stack[STACK];
    char was_stack[STACK];
} view;

/* Returns the number of colltune requests, -1 without memory. */
static int view_open(view *v, int n, const MPI_Request *reqs)
{
    v->n = n > 0 ? n : 0;
    v->ours = 0;
    int small = v->n <= STACK;
    v->native = small ? v->native_stack : malloc(sizeof *v->native * (size_t)v->n);
    v->mine = small ? v->mine_stack : malloc(sizeof *v->mine * (size_t)v->n);
    v->was_mine = small ? v->was_stack : malloc((size_t)v->n);
    if (!v->native || !v->mine || !v->was_mine)
        return -1;
    for (int i = 0; i < v->n; i++) {
        v->mine[i] = ct_nbc_find(reqs[i]);
        v->was_mine[i] = v->mine[i] != NULL;
        v->native[i] = v->mine[i] ? MPI_REQUEST_NULL : reqs[i];
        v->ours += v->mine[i] != NULL;
    }
    return v->ours;
}

static void view_close(view *v)
{
    if (v->native != v->native_stack)
        free(v->native);
    if (v->mine != v->mine_stack)
        free(v->mine);
    if (v->was_mine != v->was_stack)
        free(v->was_mine);
}

/* What MPI did to the others goes back into the program's array. */
static void view_back(const view *v, MPI_Request *reqs)
{
    for (int i = 0; i < v->n; i++)
        if (!v->was_mine[i])
            reqs[i] = v->native[i];
}

static int all_mine_done(const view *v)
{
    for (int i = 0; i < v->n; i++)
        if (v->mine[i] && !ct_nbc_done(v->mine[i]))
            return 0;
    return 1;
}

/* Frees colltune's request at i; returns its operation's result. */
static int collect_at(view *v, int i, MPI_Request *reqs, MPI_Status *status)
{
    int rc = ct_nbc_collect(v->mine[i], &reqs[i], status);
    v->mine[i] = NULL;
    v->ours--;
    return rc;
}

static void pause_if_idle(int moved)
{
    if (!moved)
        sched_yield(); /* nothing arrived: let the progress thread or another rank run */
}

static int no_memory(view *v)
{
    view_close(v);
    return MPI_ERR_NO_MEM;
}

/* MPI_ERR_IN_STATUS from a call whose native part reported rc_native: every
 * status then says whether its request failed. */
static int in_status(int rc_native, const int *native_idx, int nnative, MPI_Status *statuses)
{
    if (statuses != MPI_STATUSES_IGNORE && rc_native == MPI_SUCCESS)
        for (int k = 0; k < nnative; k++)
            statuses[native_idx ? native_idx[k] : k].MPI_ERROR = MPI_SUCCESS;
    return MPI_ERR_IN_STATUS;
}

/* ---- Wait and test ------------------------------------------------------- */

int ct_wait(MPI_Request *request, MPI_Status *status)
{
    ct_nbc_req *r = ct_nbc_find(*request);
    if (!r && !ct_nbc_busy())
        return PMPI_Wait(request, status);
    for (;;) {
        int moved = ct_nbc_poll();
        if (r) {
            if (ct_nbc_done(r))
                return ct_nbc_collect(r, request, status);
        } else {
            int flag = 0, rc = PMPI_Test(request, &flag, status);
            if (rc != MPI_SUCCESS || flag)
                return rc;
            if (!ct_nbc_busy())
                return PMPI_Wait(request, status);
        }
        pause_if_idle(moved);
    }
}

int ct_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    ct_nbc_req *r = ct_nbc_find(*request);
    if (!r) {
        if (ct_nbc_busy())
            ct_nbc_poll();
        return PMPI_Test(request, flag, status);
    }
    ct_nbc_poll();
    *flag = ct_nbc_done(r);
    return *flag ? ct_nbc_collect(r, request, status) : MPI_SUCCESS;
}

/* ---- All ------------------------------------------------------------------- */

/* colltune's requests of a view whose native part is complete (rc_native). */
static int collect_all(view *v, MPI_Request *reqs, MPI_Status *statuses, int rc_native)
{
    int failed = rc_native == MPI_ERR_IN_STATUS;
    int *native_idx = malloc(sizeof(int) * (size_t)(v->n ? v->n : 1)), nnative = 0;
    view_back(v, reqs);
    for (int i = 0; i < v->n; i++) {
        if (v->mine[i]) {
            if (collect_at(v, i, reqs, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                                        : &statuses[i]) !=
                MPI_SUCCESS)
                failed = 1;
        } else if (!v->was_mine[i] && native_idx) {
            native_idx[nnative++] = i;
        }
    }
    int rc = failed && native_idx ? in_status(rc_native, native_idx, nnative, statuses)
                                  : rc_native;
    free(native_idx);
    return rc;
}

/* Polls MPI's part of a wait-all once with MPI_Testsome, each completion's
 * status into its slot of `statuses` (which may be ignored); got[i] marks the
 * slots done. Returns 1 once none is active. Why not MPI_Testall: MPICH 5.0.2's
 * reports MPI_ERR_IN_STATUS (the others MPI_ERR_PENDING) while a persistent
 * collective of its own is still in flight, which a program's MPI_Waitall never
 * sees without colltune (tests/c/plain_persistent.c under the drop-in). */
static int native_some(view *v, int *idx, MPI_Status *tmp, char *got, MPI_Status *statuses,
                       int *failed, int *rc_native)
{
    int outn = 0;
    int rc = PMPI_Testsome(v->n, v->native, &outn, idx, tmp);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        *rc_native = rc;
        return 1;
    }
    if (outn == MPI_UNDEFINED)
        return 1;
    for (int j = 0; j < outn; j++) {
        if (rc == MPI_SUCCESS)
            tmp[j].MPI_ERROR = MPI_SUCCESS;
        else if (tmp[j].MPI_ERROR != MPI_SUCCESS)
            *failed = 1;
        got[idx[j]] = 1;
        if (statuses != MPI_STATUSES_IGNORE)
            statuses[idx[j]] = tmp[j];
    }
    return 0;
}

int ct_waitall(int count, MPI_Request requests[], MPI_Status *statuses)
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Waitall(count, requests, statuses);
    }
    int idx_stack[STACK];
    MPI_Status tmp_stack[STACK];
    char got_stack[STACK];
    int small = v.n <= STACK;
    int *idx = small ? idx_stack : malloc(sizeof *idx * (size_t)v.n);
    MPI_Status *tmp = small ? tmp_stack : malloc(sizeof *tmp * (size_t)v.n);
    char *got = small ? got_stack : calloc((size_t)v.n, 1);
    if (!idx || !tmp || !got) {
        if (!small)
            free(idx), free(tmp), free(got);
        return no_memory(&v);
    }
    if (small)
        memset(got, 0, (size_t)v.n);
    int native_done = 0, failed = 0, rc_native = MPI_SUCCESS;
    for (;;) {
        int moved = ct_nbc_poll();
        if (!native_done)
            native_done = native_some(&v, idx, tmp, got, statuses, &failed, &rc_native);
        if (native_done && all_mine_done(&v))
            break;
        pause_if_idle(moved);
    }
    if (rc_native == MPI_SUCCESS && statuses != MPI_STATUSES_IGNORE)
        for (int i = 0; i < v.n; i++)
            if (!v.was_mine[i] && !got[i]) { /* null or inactive: MPI's empty status */
                MPI_Request none = MPI_REQUEST_NULL;
                PMPI_Wait(&none, &statuses[i]);
                statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
    if (failed && rc_native == MPI_SUCCESS)
        rc_native = MPI_ERR_IN_STATUS;
    if (!small)
        free(idx), free(tmp), free(got);
    int rc = collect_all(&v, requests, statuses, rc_native);
    view_close(&v);
    return rc;
}

int ct_testall(int count, MPI_Request requests[], int *flag, MPI_Status *statuses)
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Testall(count, requests, flag, statuses);
    }
    ct_nbc_poll();
    *flag = 0;
    int rc = MPI_SUCCESS;
    /* All or nothing: MPI's part is asked (and freed) only once colltune's are over. */
    if (all_mine_done(&v)) {
        rc = PMPI_Testall(count, v.native, flag, statuses);
        if (*flag || rc != MPI_SUCCESS)
            rc = collect_all(&v, requests, statuses, rc), *flag = 1;
    }
    view_close(&v);
    return rc;
}

/* ---- Any ------------------------------------------------------------------- */

/* One pass: a finished colltune request first, then MPI's. */
static int any_pass(view *v, MPI_Request *reqs, int *index, int *flag, MPI_Status *status)
{
    for (int i = 0; i < v->n; i++)
        if (v->mine[i] && ct_nbc_done(v->mine[i])) {
            *index = i;
            *flag = 1;
            return collect_at(v, i, reqs, status);
        }
    int rc = PMPI_Testany(v->n, v->native, index, flag, status);
    if (rc != MPI_SUCCESS)
        return rc;
    if (*flag && *index != MPI_UNDEFINED) {
        reqs[*index] = v->native[*index];
        return MPI_SUCCESS;
    }
    if (*flag && v->ours > 0) /* MPI's are all inactive, colltune's are not */
        *flag = 0;
    if (!*flag)
        *index = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int ct_waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Waitany(count, requests, index, status);
    }
    int rc, flag = 0;
    for (;;) {
        int moved = ct_nbc_poll();
        rc = any_pass(&v, requests, index, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            break;
        pause_if_idle(moved);
    }
    view_close(&v);
    return rc;
}

int ct_testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Testany(count, requests, index, flag, status);
    }
    ct_nbc_poll();
    int rc = any_pass(&v, requests, index, flag, status);
    view_close(&v);
    return rc;
}

/* ---- Some ------------------------------------------------------------------ */

static int some_pass(view *v, MPI_Request *reqs, int *outcount, int *indices,
                     MPI_Status *statuses)
{
    int k = 0, failed = 0;
    for (int i = 0; i < v->n; i++)
        if (v->mine[i] && ct_nbc_done(v->mine[i])) {
            indices[k] = i;
            if (collect_at(v, i, reqs,
                           statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                            : &statuses[k]) != MPI_SUCCESS)
                failed = 1;
            k++;
        }
    int outn = 0;
    int rc = PMPI_Testsome(v->n, v->native, &outn, indices + k,
                           statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + k);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
        return rc;
    if (outn != MPI_UNDEFINED) {
        for (int j = 0; j < outn; j++)
            reqs[indices[k + j]] = v->native[indices[k + j]];
        if (failed || rc == MPI_ERR_IN_STATUS)
            rc = in_status(rc, NULL, outn,
                           statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + k);
        k += outn;
    } else if (failed) {
        rc = MPI_ERR_IN_STATUS;
    }
    *outcount = (k == 0 && outn == MPI_UNDEFINED && v->ours == 0) ? MPI_UNDEFINED : k;
    return rc;
}

int ct_waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[])
{
    view v;
    int ours = view_open(&v, incount, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    int rc;
    for (;;) {
        int moved = ct_nbc_poll();
        rc = some_pass(&v, requests, outcount, indices, statuses);
        if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || *outcount != 0)
            break;
        pause_if_idle(moved);
    }
    view_close(&v);
    return rc;
}

int ct_testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[])
{
    view v;
    int ours = view_open(&v, incount, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    }
    ct_nbc_poll();
    int rc = some_pass(&v, requests, outcount, indices, statuses);
    view_close(&v);
    return rc;
}

/* ---- Status without freeing ---------------------------------------------- */

int ct_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    ct_nbc_req *r = ct_nbc_find(request);
    if (!r) {
        if (ct_nbc_busy())
            ct_nbc_poll();
        return PMPI_Request_get_status(request, flag, status);
    }
    ct_nbc_poll();
    *flag = ct_nbc_done(r);
    return *flag ? ct_nbc_peek(r, status) : MPI_SUCCESS;
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
/* The MPI 4.1 forms: MPI's own for the others, which skip null and inactive
 * requests as MPI says. */

int ct_request_get_status_all(int count, const MPI_Request requests[], int *flag,
                              MPI_Status statuses[])
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Request_get_status_all(count, requests, flag, statuses);
    }
    ct_nbc_poll();
    *flag = 0;
    int rc = MPI_SUCCESS;
    if (all_mine_done(&v)) {
        rc = PMPI_Request_get_status_all(count, v.native, flag, statuses);
        int failed = 0;
        for (int i = 0; *flag && i < count; i++)
            if (v.mine[i] && ct_nbc_peek(v.mine[i], statuses == MPI_STATUSES_IGNORE
                                                        ? MPI_STATUS_IGNORE
                                                        : &statuses[i]) != MPI_SUCCESS)
                failed = 1;
        if (failed)
            rc = MPI_ERR_IN_STATUS;
    }
    view_close(&v);
    return rc;
}

int ct_request_get_status_any(int count, const MPI_Request requests[], int *index, int *flag,
                              MPI_Status *status)
{
    view v;
    int ours = view_open(&v, count, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Request_get_status_any(count, requests, index, flag, status);
    }
    ct_nbc_poll();
    int rc = MPI_SUCCESS;
    for (int i = 0; i < count; i++)
        if (v.mine[i] && ct_nbc_done(v.mine[i])) {
            *index = i;
            *flag = 1;
            rc = ct_nbc_peek(v.mine[i], status);
            view_close(&v);
            return rc;
        }
    rc = PMPI_Request_get_status_any(count, v.native, index, flag, status);
    if (rc == MPI_SUCCESS && *flag && *index == MPI_UNDEFINED && ours > 0)
        *flag = 0; /* colltune's are active */
    view_close(&v);
    return rc;
}

int ct_request_get_status_some(int incount, const MPI_Request requests[], int *outcount,
                               int indices[], MPI_Status statuses[])
{
    view v;
    int ours = view_open(&v, incount, requests);
    if (ours < 0)
        return no_memory(&v);
    if (ours == 0 && !ct_nbc_busy()) {
        view_close(&v);
        return PMPI_Request_get_status_some(incount, requests, outcount, indices, statuses);
    }
    ct_nbc_poll();
    int k = 0, failed = 0, outn = 0;
    for (int i = 0; i < incount; i++)
        if (v.mine[i] && ct_nbc_done(v.mine[i])) {
            indices[k] = i;
            if (ct_nbc_peek(v.mine[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE
                                                                       : &statuses[k]) !=
                MPI_SUCCESS)
                failed = 1;
            k++;
        }
    int rc = PMPI_Request_get_status_some(
        incount, v.native, &outn, indices + k,
        statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + k);
    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {
        if (outn != MPI_UNDEFINED) {
            if (failed || rc == MPI_ERR_IN_STATUS)
                rc = in_status(rc, NULL, outn,
                               statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE
                                                                : statuses + k);
            k += outn;
        } else if (failed) {
            rc = MPI_ERR_IN_STATUS;
        }
        *outcount = (k == 0 && outn == MPI_UNDEFINED && ours == 0) ? MPI_UNDEFINED : k;
    }
    view_close(&v);
    return rc;
}
#endif
