/*
 * The drop-in: MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Scatter, MPI_Gather,
 * MPI_Allgather, MPI_Alltoall and MPI_Barrier defined over the PMPI profiling
 * interface, so an unmodified MPI program gets colltune by linking
 * libcolltune_pmpi or with LD_PRELOAD (`colltune preload` prints its path).
 *
 * Choice of algorithm, per call, in this order:
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
 */
#include <limits.h>
#include <pthread.h>
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
#include "tune/table.h"

typedef struct forced {
    const char *algorithm; /* NULL: not forced */
    int invalid;           /* the name given is not in the registry */
} forced;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static forced forced_alg[CT_NCOLL];
static long long env_segsize;
static const char *env_segsize_invalid; /* the bad text, if any */
static int log_debug;
static int log_warn; /* COLLTUNE_LOG=warn or debug: what a program did that MPI calls erroneous */
static int env_split = CT_SPLIT_AUTO;
static int env_split_given; /* COLLTUNE_SPLIT=S overrides the table's split level */

static void read_env(void)
{
    for (int c = 0; c < CT_NCOLL; c++) {
        char var[64];
        snprintf(var, sizeof var, "COLLTUNE_%.15s_ALGORITHM", ct_dropin_upper_name((ct_coll)c));
        const char *v = getenv(var);
        if (v && *v) {
            forced_alg[c].algorithm = v;
            forced_alg[c].invalid = ct_algorithm_find((ct_coll)c, v) == NULL;
        }
    }
    /* COLLTUNE_SEGSIZE: bytes, with the units `colltune bench --segsize` takes (B, K/KiB,
     * M/MiB, G/GiB, any case), from 1 B to 1 GiB; anything else is refused, never clamped
     * (env_segsize -1: not a size, -2: out of range). */
    const char *seg = getenv("COLLTUNE_SEGSIZE");
    if (seg && *seg) {
        static const struct {
            const char *unit;
            long long scale;
        } units[] = {{"", 1},          {"b", 1},          {"k", 1LL << 10}, {"kb", 1LL << 10},
                     {"kib", 1LL << 10}, {"m", 1LL << 20}, {"mb", 1LL << 20}, {"mib", 1LL << 20},
                     {"g", 1LL << 30}, {"gb", 1LL << 30}, {"gib", 1LL << 30}};
        const char *p = seg;
        while (*p == ' ')
            p++;
        long long digits = 0, value = 0;
        for (; *p >= '0' && *p <= '9'; p++, digits++)
            if (value <= (1LL << 40)) /* past any allowed size: stays out of range */
                value = value * 10 + (*p - '0');
        char unit[8] = "";
        size_t u = 0;
        for (; ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') && u < sizeof unit - 1; p++)
            unit[u++] = (char)(*p | 0x20);
        unit[u] = '\0';
        while (*p == ' ')
            p++;
        long long scale = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(unit, units[i].unit))
                scale = units[i].scale;
        if (!digits || !scale || *p) {
            env_segsize = -1;
            env_segsize_invalid = seg;
        } else if (value < 1 || value > (1LL << 30) / scale) {
            env_segsize = -2;
            env_segsize_invalid = seg;
        } else {
            env_segsize = value * scale;
        }
    }
    const char *split = getenv("COLLTUNE_SPLIT");
    if (split && *split && strcmp(split, "auto") != 0) {
        char *end;
        long v = strtol(split, &end, 10);
        if (*end == '\0' && v >= 0 && v < 64) {
            env_split = (int)v;
            env_split_given = 1;
        } else {
            fprintf(stderr, "colltune: COLLTUNE_SPLIT='%s' is neither 'auto' nor a number of "
                            "levels; using auto\n", split);
        }
    }
    const char *log = getenv("COLLTUNE_LOG");
    log_debug = log && strcmp(log, "debug") == 0;
    log_warn = log_debug || (log && strcmp(log, "warn") == 0);
    const char *table = getenv("COLLTUNE_TABLE");
    char why[512];
    if (table && *table && ct_table_load(table, why, sizeof why) != 0) {
        ct_table_unload(); /* the unchecked look before MPI_Init may have loaded it */
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) /* once, not once per rank */
            fprintf(stderr, "colltune: COLLTUNE_TABLE not used: %s; every call goes native\n",
                    why);
    }
}

/* "binomial, chain, ..." for the error message of an unknown name. */
static void valid_names(ct_coll coll, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ct_algorithm_count(); i++) {
        const ct_algorithm_info *a = ct_algorithm_get(i);
        if (a->coll == coll && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", a->name);
    }
}

/* A bad setting in the environment: said on stderr (the user may not check
 * return codes) and raised as MPI_ERR_ARG with the same text. The setting fails
 * every call of its operation, and a program going on under MPI_ERRORS_RETURN
 * makes many: each text gets one error code (MPICH 5.0.2 crashes after some
 * 2000 made with MPI_Add_error_code) and is said once. */
static int env_error(MPI_Comm comm, const char *msg)
{
    static struct {
        char msg[MPI_MAX_ERROR_STRING];
        int code;
    } made[CT_NCOLL + 1]; /* an unknown algorithm per operation, a bad segment size */
    static int nmade;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int code = MPI_ERR_ARG, i;
    pthread_mutex_lock(&lock);
    for (i = 0; i < nmade && strcmp(made[i].msg, msg) != 0; i++)
        ;
    if (i < nmade) {
        code = made[i].code;
    } else {
        /* A fatal handler (the default) prints the message itself as it aborts: said once. */
        MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
        int fatal = PMPI_Comm_get_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm,
                                             &eh) == MPI_SUCCESS &&
                    eh == MPI_ERRORS_ARE_FATAL;
#if MPI_VERSION >= 4
        fatal = fatal || eh == MPI_ERRORS_ABORT;
#endif
        if (eh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&eh);
        if (!fatal)
            fprintf(stderr, "%s\n", msg);
        if (nmade < (int)(sizeof made / sizeof made[0]) &&
            MPI_Add_error_code(MPI_ERR_ARG, &code) == MPI_SUCCESS) {
            MPI_Add_error_string(code, msg);
            snprintf(made[nmade].msg, sizeof made[nmade].msg, "%s", msg);
            made[nmade++].code = code;
        } else {
            code = MPI_ERR_ARG;
        }
    }
    pthread_mutex_unlock(&lock);
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

static int unknown_algorithm(ct_coll coll, MPI_Comm comm)
{
    char names[512], msg[MPI_MAX_ERROR_STRING];
    valid_names(coll, names, sizeof names);
    int n = snprintf(msg, sizeof msg,
                     "colltune: COLLTUNE_%s_ALGORITHM='%s' is not %s %s algorithm; valid: %s",
                     ct_dropin_upper_name(coll), forced_alg[coll].algorithm,
                     strchr("aeiou", ct_coll_name(coll)[0]) ? "an" : "a", ct_coll_name(coll),
                     names);
    if (n < 0)
        return MPI_ERR_ARG;
    return env_error(comm, msg); /* a very long name is cut: still the right message */
}

/* Fills opts for this call; returns 0 to run colltune, 1 for native. A bad
 * environment sets *err (and the call must return it). */
static int choose(const ct_call *c, long long bytes, ct_options *opts, int *err)
{
    ct_coll coll = c->coll;
    MPI_Comm comm = c->comm;
    pthread_once(&env_once, read_env);
    ct_options_init(opts);
    opts->split = env_split;
    *err = MPI_SUCCESS;
    if (forced_alg[coll].algorithm) {
        if (forced_alg[coll].invalid) {
            *err = unknown_algorithm(coll, comm);
            return 1;
        }
        opts->algorithm = forced_alg[coll].algorithm;
        if (env_segsize_invalid) {
            char msg[MPI_MAX_ERROR_STRING];
            int n = snprintf(msg, sizeof msg, "colltune: COLLTUNE_SEGSIZE='%.64s' %s",
                             env_segsize_invalid,
                             env_segsize == -2
                                 ? "is out of range: allowed 1 B to 1 GiB"
                                 : "is not a size: a whole number of bytes with an optional "
                                   "unit B, K/KiB, M/MiB, G/GiB (e.g. 64K)");
            *err = n < 0 ? MPI_ERR_ARG : env_error(comm, msg);
            return 1;
        }
        /* An algorithm that needs a commutative operation, given one that is not: native
         * runs instead, and the process says so once per operation. */
        const ct_algorithm_info *info = ct_algorithm_find(coll, opts->algorithm);
        int commutative = 1;
        if (info && (info->flags & CT_ALG_NEEDS_COMMUTE) &&
            (coll == CT_REDUCE || coll == CT_ALLREDUCE) && c->op != MPI_OP_NULL &&
            PMPI_Op_commutative(c->op, &commutative) == MPI_SUCCESS && !commutative) {
            static int said[CT_NCOLL];
            if (!__atomic_exchange_n(&said[coll], 1, __ATOMIC_RELAXED)) {
                char name[24]; /* MPI_Allreduce, MPI_Iallreduce, ... */
                snprintf(name, sizeof name, c->request ? "MPI_I%s" : "MPI_%s",
                         c->request ? ct_coll_name(coll) : ct_dropin_mpi_name(coll));
                fprintf(stderr,
                        "colltune: COLLTUNE_%s_ALGORITHM=%s needs a commutative operation and "
                        "this %s has one that is not: native %s ran instead (said once per "
                        "process)\n",
                        ct_dropin_upper_name(coll), opts->algorithm, name, name);
            }
            return 1;
        }
        if (env_segsize > 0) {
            opts->has_segsize = 1;
            opts->segsize = env_segsize;
        }
        return 0;
    }
    ct_table_choice choice;
    int size = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return 1;
    if (c->request) {
        ct_progress_info info;
        ct_progress_query(&info);
        if (ct_table_lookup_nonblocking(coll, size, bytes, info.running, &choice) != 0)
            return 1;
        if (!env_split_given)
            opts->split = choice.split;
    } else if (ct_table_lookup(coll, size, bytes, &choice) != 0) {
        return 1;
    }
    opts->algorithm = choice.algorithm;
    opts->has_segsize = choice.segsize > 0;
    opts->segsize = choice.segsize;
    return 0;
}

/* dropin.h */
int ct_dropin_choose(const ct_call *c, const ct_vargs *v, long long bytes, ct_options *opts,
                     int *err)
{
    (void)v;
    if (c->coll <= CT_BARRIER)
        return choose(c, bytes, opts, err);
    return ct_dropin_choose_v(c, bytes, opts, err);
}

static void log_call(ct_coll coll, MPI_Comm comm, long long bytes, const char *ran,
                     const ct_options *opts, int nonblocking)
{
    if (!log_debug)
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
        snprintf(name, sizeof name, "%s", ct_dropin_mpi_name(coll));
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s %lld bytes -> %s", rank,
                     size, name, bytes, ran);
    const ct_algorithm_info *info = native ? NULL : ct_algorithm_find(coll, ran);
    int segmented = info && (info->flags & CT_ALG_SEGMENTABLE) && opts->has_segsize;
    if (segmented && n > 0 && n < (int)sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, " segsize %lld", opts->segsize);
    if (n > 0 && n < (int)sizeof line - 1) {
        line[n++] = '\n';
        ssize_t w = write(2, line, (size_t)n);
        (void)w;
    }
}

static int is_inter(MPI_Comm comm)
{
    int inter = 0;
    return comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter;
}

/* Whether nothing of colltune's can serve coll: no algorithm forced, no table, and
 * neither the monitor nor the debug log wants the call seen. Such a call goes to the
 * library at once: a program that preloads the drop-in and keeps native pays no lookup
 * (issue 36: 15-50% at 8 B before). */
static int left_alone(ct_coll coll)
{
    pthread_once(&env_once, read_env);
    return !forced_alg[coll].algorithm && !ct_table_loaded() && !ct_monitor_level &&
           !log_debug;
}

/* dropin.h */
int ct_dropin_intercept(const ct_call *c)
{
    ct_nbc_poll_orphans();
    if (left_alone(c->coll))
        return ct_call_native(c);
    ct_options o;
    int err = MPI_SUCCESS;
    long long bytes = ct_call_bytes(c);
    int native = is_inter(c->comm) || choose(c, bytes, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    int rc;
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    if (native)
        rc = ct_call_native(c); /* the non-blocking one when c->request is set */
    else if (c->request)
        rc = ct_nbc_start(c, NULL, &o, 1, &ran);
    else
        rc = ct_call_run(c, &o, 1, &ran);
    ct_monitor_in_collective = 0;
    if (ct_monitor_level) {
        ct_monitor_time(ct_monitor_ticks() - t0);
        if (!strcmp(ran, "native"))
            ct_monitor_native(c->coll, bytes);
    }
    log_call(c->coll, c->comm, bytes, ran, &o, c->request != NULL);
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

int MPI_Wait(MPI_Request *request, MPI_Status *status)
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

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
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

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
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

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
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

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
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

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
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

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    int rc = some(1, incount, requests, outcount, indices, statuses);
    if (ct_monitor_level)
        ct_monitor_time(ct_monitor_ticks() - t0);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    return some(0, incount, requests, outcount, indices, statuses);
}

/* MPI_Request_free on a collective's request is erroneous (MPI 4.1, 6.12), yet MPICH
 * and Open MPI accept it and programs do it (polling MPI_Request_get_status, then
 * freeing): a request that is over is freed; one in flight completes in the background
 * and is freed then (ct_nbc_release), with a warning under COLLTUNE_LOG=warn or debug. */
int MPI_Request_free(MPI_Request *request)
{
    ct_nbc_req *r = request ? ct_nbc_find(*request) : NULL;
    if (r) {
        int in_flight = 0, rc = ct_nbc_release(r, request, &in_flight);
        if (in_flight && log_warn)
            fprintf(stderr, "colltune: warning: MPI_Request_free on a collective's request "
                            "in flight (erroneous in MPI): it completes in the background\n");
        return rc;
    }
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
    pthread_once(&env_once, read_env);
    if (ct_table_wants_progress())
        return 1;
    for (size_t i = 0; i < sizeof nonblocking / sizeof *nonblocking; i++)
        if (forced_alg[nonblocking[i]].algorithm && !forced_alg[nonblocking[i]].invalid)
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

int MPI_Init(int *argc, char ***argv)
{
    progress_mode mode = progress_wanted();
    int provided, level = thread_level(mode, MPI_THREAD_SINGLE);
    int rc = level != MPI_THREAD_SINGLE ? PMPI_Init_thread(argc, argv, level, &provided)
                                        : PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        start_progress(mode);
        ct_monitor_init();
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    progress_mode mode = progress_wanted();
    int rc = PMPI_Init_thread(argc, argv, thread_level(mode, required), provided);
    if (rc == MPI_SUCCESS) {
        start_progress(mode);
        ct_monitor_init();
    }
    return rc;
}

int MPI_Finalize(void)
{
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
