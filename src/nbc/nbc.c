/*
 * Non-blocking collectives: generalized MPI requests driven by one progress
 * thread per process, and the split tree of Denis et al. (Euro-Par 2018).
 *
 * A call is prepared like a blocking one (src/api: checks, byte views,
 * schedule) into a job the request owns. Tree schedules are cut in two: the
 * upper levels (the edges whose child subtree is at least S high) go to the
 * progress thread; the last S levels run on the application's core, after
 * the thread's part for one-to-all operations (bcast, scatter: inside the
 * wait) and before it for all-to-one ones (reduce, gather: inside the call,
 * before the hand-off). Whoever runs the last part unpacks the result and
 * completes the generalized request, which is then the last touch of the
 * request by that side. MPI never sees a colltune request in its completion
 * calls while it is in flight: the wait and test family (src/nbc/complete.c)
 * checks colltune's requests itself and hands MPI only the others, then frees a
 * finished request with PMPI_Wait (greq_free queues it; what it holds is
 * released outside MPI's callbacks, by ct_nbc_reap). A persistent call's start
 * (borrowed) makes no generalized request: the program holds the plan's handle, not
 * the request's, so MPI has nothing to know; collecting it does what the callbacks
 * would (ct_nbc_collect), which halved a start's instructions besides MPI's own.
 *
 * Threads: the application thread prepares, starts and waits; the progress
 * thread steps the offloaded parts. They share a request only through the
 * engine's queue (under its lock) and the atomic thread_done flag, whose
 * release/acquire orders the thread's writes to the buffers before the
 * application's part reads them.
 */
#include "nbc.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../api/job.h"
#include "../model/splittree.h"
#include "../select/select.h"
#include "../monitor/monitor.h"

#ifdef CT_HAVE_HWLOC
#include <hwloc.h>
#endif

typedef enum { SHAPE_NONE = 0, SHAPE_ONE_TO_ALL, SHAPE_ALL_TO_ONE } tree_shape;

struct ct_nbc_req {
    ct_job *job;              /* own_job, or a persistent call's (borrowed) */
    int borrowed;             /* job is a persistent call's: neither freed nor released here */
    MPI_Request key;          /* what the program holds: greq, or the persistent handle */
    const ct_sched *thread_sched, *app_sched; /* what each side runs (NULL: nothing) */
    int has_upper, has_lower;
    int app_pending;          /* the application still has to run its part */
    int app_started;
    atomic_int thread_done;   /* the thread's part is over (release) */
    int rc;                   /* first MPI error of either part */
    /* Published by complete() before MPI_Grequest_complete: MPI's own ordering
     * is invisible to ThreadSanitizer (MPI is not instrumented), so the
     * callbacks acquire what the completing thread released. */
    atomic_int final_rc;
    atomic_int done;          /* final_rc is set: the operation is over (release) */
    int retained;             /* ct_job_retain holds the job's handles */
    MPI_Errhandler errh;      /* the communicator's error handler at the start (a
                                 persistent start's: fetched only for a failure, below) */
    MPI_Comm prog_comm;       /* a persistent start's: the program's communicator */
    MPI_Request greq;         /* MPI_REQUEST_NULL for a persistent call's start */
    struct ct_nbc_req *next;     /* the progress thread's queue */
    struct ct_nbc_req *app_next; /* the list of application parts to drive */
    struct ct_nbc_req *freed_next; /* freed by MPI, waiting for ct_nbc_reap */
    struct ct_nbc_req *orphan_next; /* freed by the program in flight (ct_nbc_release) */
    ct_plan *orphan_plan;           /* a persistent call's plan, freed after it */
    atomic_int *active;             /* a persistent call's "started" mark, cleared once
                                       the start is collected (ct_nbc_start_job) */
    /* The large members last: a request taken again (req_new) clears only what is above
     * (see spare_req). */
    ct_exec_run run;          /* the part being run (by one side at a time; ct_exec_begin
                                 sets it up) */
    ct_sched upper, lower;    /* the split tree's parts, when the schedule is cut */
    ct_job own_job;
    int cut; /* upper and lower hold a split's parts (kept across req_new): req_free frees
                them only then, as freeing two empty schedules was 200 instructions of a
                persistent start that never splits (shm) */
};

/* ---- Requests known to colltune ---------------------------------------- */

/* MPI_Request is an integer in MPICH and a pointer in Open MPI: keyed by its
 * bytes. A small open-addressing table, under its own lock. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t key;
    ct_nbc_req *req;
} *table;
static size_t table_cap, table_used;
static atomic_long live; /* requests in the table: the waits skip the lookup when none */

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

static size_t slot_of(uint64_t k, size_t cap)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

static int table_put(MPI_Request r, ct_nbc_req *req)
{
    pthread_mutex_lock(&table_lock);
    if (2 * (table_used + 1) > table_cap) {
        size_t ncap = table_cap ? 2 * table_cap : 64;
        void *nt = calloc(ncap, sizeof *table);
        if (!nt) {
            pthread_mutex_unlock(&table_lock);
            return MPI_ERR_NO_MEM;
        }
        __typeof__(table) old = table;
        size_t ocap = table_cap;
        table = nt;
        table_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].req) {
                size_t j = slot_of(old[i].key, ncap);
                while (table[j].req)
                    j = (j + 1) & (ncap - 1);
                table[j] = old[i];
            }
        free(old);
    }
    uint64_t k = req_key(r);
    size_t j = slot_of(k, table_cap);
    while (table[j].req)
        j = (j + 1) & (table_cap - 1);
    table[j].key = k;
    table[j].req = req;
    table_used++;
    atomic_fetch_add(&live, 1);
    pthread_mutex_unlock(&table_lock);
    return MPI_SUCCESS;
}

ct_nbc_req *ct_nbc_find(MPI_Request r)
{
    if (r == MPI_REQUEST_NULL || atomic_load(&live) == 0)
        return NULL;
    ct_nbc_req *found = NULL;
    uint64_t k = req_key(r);
    pthread_mutex_lock(&table_lock);
    if (table_cap) {
        size_t j = slot_of(k, table_cap);
        while (table[j].req) {
            if (table[j].key == k) {
                found = table[j].req;
                break;
            }
            j = (j + 1) & (table_cap - 1);
        }
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

static void table_remove(ct_nbc_req *req)
{
    pthread_mutex_lock(&table_lock);
    /* From the key's slot (r->key is what table_put hashed), not a scan of the table. */
    size_t j = 0;
    int hit = 0;
    if (table_cap)
        for (j = slot_of(req_key(req->key), table_cap); table[j].req;
             j = (j + 1) & (table_cap - 1))
            if (table[j].req == req) {
                hit = 1;
                break;
            }
    if (hit) {
        /* Backward-shift deletion keeps the probe chains whole. */
        table[j].req = NULL;
        table_used--;
        atomic_fetch_sub(&live, 1);
        size_t i = (j + 1) & (table_cap - 1);
        while (table[i].req) {
            ct_nbc_req *r = table[i].req;
            uint64_t k = table[i].key;
            table[i].req = NULL;
            size_t s = slot_of(k, table_cap);
            while (table[s].req)
                s = (s + 1) & (table_cap - 1);
            table[s].key = k;
            table[s].req = r;
            i = (i + 1) & (table_cap - 1);
        }
    }
    pthread_mutex_unlock(&table_lock);
}

/* ---- Generalized request callbacks ------------------------------------ */

/* The empty status MPI gives a completed collective; its error is reported by
 * the wait and test family (complete.c), not through MPI's own call. */
static int greq_query(void *extra, MPI_Status *status)
{
    (void)extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    return MPI_SUCCESS;
}

/* One finished request kept for the next start: a request is several kilobytes (a job,
 * two schedules, an executor), and clearing a fresh one took three quarters of a
 * persistent start's instructions (docs/BENCHMARKS.md section 39). It is kept with its
 * schedules reset and its own job as the last non-blocking call left it, memory and
 * schedule included: ct_call_prepare reuses a job as the blocking calls' kept jobs do, so
 * the next equal non-blocking call skips the schedule's generation (its key, compared
 * bytewise, holds everything the schedule depends on, not the communicator). */
static _Atomic(ct_nbc_req *) spare_req;

static void req_free(ct_nbc_req *r)
{
    if (r->cut) {
        ct_sched_free(&r->upper);
        ct_sched_free(&r->lower);
        r->cut = 0;
    }
    ct_nbc_req *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&spare_req, &none, r, memory_order_acq_rel,
                                                memory_order_relaxed))
        return;
    ct_job_free(&r->own_job);
    free(r);
}

/* Requests MPI has freed: what they hold (a communicator's private duplicate, a
 * datatype, an op) is released by ct_nbc_reap, outside MPI's callback. */
static pthread_mutex_t freed_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_nbc_req *freed;
static atomic_int nfreed; /* ct_nbc_reap skips the lock while 0: a persistent start has no
                             generalized request, so nothing is ever queued for it */

static int greq_free(void *extra)
{
    ct_nbc_req *r = extra;
    (void)atomic_load_explicit(&r->final_rc, memory_order_acquire); /* see final_rc */
    table_remove(r);
    pthread_mutex_lock(&freed_lock);
    r->freed_next = freed;
    freed = r;
    atomic_fetch_add_explicit(&nfreed, 1, memory_order_relaxed);
    pthread_mutex_unlock(&freed_lock);
    return MPI_SUCCESS;
}

/* What MPI's free callback and ct_nbc_reap do for a request, at once: a persistent call's
 * start, which has no generalized request. */
static void borrowed_free(ct_nbc_req *r)
{
    table_remove(r);
    if (r->active) /* after the table forgets it: a new start may take the handle again */
        atomic_store_explicit(r->active, 0, memory_order_release);
    if (r->retained)
        ct_job_release(r->job);
    if (r->errh != MPI_ERRHANDLER_NULL)
        PMPI_Errhandler_free(&r->errh);
    req_free(r);
}

void ct_nbc_reap(void)
{
    /* A request MPI freed on this thread (ct_nbc_collect's PMPI_Wait) was counted before
     * this load in the same thread; one freed on another thread meanwhile waits for the
     * next reap, as it would behind the lock too. */
    if (atomic_load_explicit(&nfreed, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&freed_lock);
    ct_nbc_req *list = freed;
    freed = NULL;
    atomic_store_explicit(&nfreed, 0, memory_order_relaxed);
    pthread_mutex_unlock(&freed_lock);
    while (list) {
        ct_nbc_req *r = list;
        list = r->freed_next;
        if (r->retained)
            ct_job_release(r->job);
        if (r->errh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&r->errh);
        req_free(r);
    }
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS; /* a collective cannot be cancelled: MPI_Test_cancelled says no */
}

/* ---- The progress engine ----------------------------------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    ct_nbc_req *incoming;
    int running, stop, core, comm_cores, tried;
    atomic_long completed, parts_done;
    atomic_int live; /* running, readable without the lock (launch asks at every start) */
    pthread_t tid;
} eng = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .core = -1};

/* The last part of a request is over: the result goes to the caller's buffer
 * and MPI learns the request is complete. Nothing touches r afterwards: done
 * is published first, as a program whose MPI_Wait reaches PMPI directly (not
 * through complete.c) may free r as soon as MPI_Grequest_complete returns. */
static void complete(ct_nbc_req *r, int by_thread)
{
    if (r->rc == MPI_SUCCESS)
        r->rc = ct_job_finish(r->job);
    if (by_thread)
        atomic_fetch_add(&eng.completed, 1);
    MPI_Request greq = r->greq;
    atomic_store_explicit(&r->final_rc, r->rc, memory_order_release);
    atomic_store_explicit(&r->done, 1, memory_order_release);
    if (greq != MPI_REQUEST_NULL) /* a persistent call's start has none */
        MPI_Grequest_complete(greq);
}

static void bind_thread(int core)
{
    if (core < 0)
        return;
#ifdef CT_HAVE_HWLOC
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        hwloc_bitmap_only(set, (unsigned)core);
        if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
            eng.core = -1;
        hwloc_bitmap_free(set);
        hwloc_topology_destroy(topo);
        return;
    }
#endif
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        eng.core = -1;
}

/* ---- The poll hook (nbc.h) ---------------------------------------------- */

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*hook_fn)(void);
static atomic_int hook_on;

void ct_progress_set_hook(int (*poll)(void))
{
    pthread_mutex_lock(&hook_lock); /* waits for a call of the old hook to end */
    hook_fn = poll;
    atomic_store(&hook_on, poll != NULL);
    pthread_mutex_unlock(&hook_lock);
    ct_progress_kick();
}

void ct_progress_kick(void)
{
    pthread_mutex_lock(&eng.lock);
    pthread_cond_signal(&eng.wake);
    pthread_mutex_unlock(&eng.lock);
}

static int run_hook(void)
{
    if (!atomic_load(&hook_on))
        return 0;
    pthread_mutex_lock(&hook_lock);
    int r = hook_fn ? hook_fn() : 0;
    pthread_mutex_unlock(&hook_lock);
    return r;
}

/* Without the thread the waits run the hook (see nbc.h). */
static int hook_in_waits(void)
{
    if (!atomic_load(&hook_on))
        return 0;
    pthread_mutex_lock(&eng.lock);
    int running = eng.running;
    pthread_mutex_unlock(&eng.lock);
    return !running;
}

/* The hook's nap while it is idle: short at first, as a broadcast often comes
 * in bursts, then up to COLLTUNE_HOOK_IDLE_US. */
static void hook_nap(long *nap_us)
{
    static long max_us = -1;
    if (max_us < 0) {
        const char *e = getenv("COLLTUNE_HOOK_IDLE_US");
        max_us = e && *e ? atol(e) : 200;
        if (max_us < 1)
            max_us = 1;
    }
    *nap_us = *nap_us ? (*nap_us * 2 > max_us ? max_us : *nap_us * 2) : 1;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += *nap_us * 1000;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&eng.lock);
    if (!eng.incoming && !eng.stop)
        pthread_cond_timedwait(&eng.wake, &eng.lock, &t);
    pthread_mutex_unlock(&eng.lock);
}

static void *progress_main(void *arg)
{
    (void)arg;
    bind_thread(eng.core);
    ct_monitor_in_collective = 1; /* everything this thread sends is a collective's */
    ct_nbc_req *mine = NULL;
    long nap_us = 0;
    for (;;) {
        pthread_mutex_lock(&eng.lock);
        while (!mine && !eng.incoming && !eng.stop && !atomic_load(&hook_on))
            pthread_cond_wait(&eng.wake, &eng.lock); /* idle: sleep, not spin */
        while (eng.incoming) { /* keep arrival order: MPI matches in posting order */
            ct_nbc_req *r = eng.incoming, **tail = &mine;
            eng.incoming = r->next;
            r->next = NULL;
            while (*tail)
                tail = &(*tail)->next;
            *tail = r;
        }
        int stop = eng.stop;
        pthread_mutex_unlock(&eng.lock);
        if (!mine && stop)
            break;
        int moved = 0;
        for (ct_nbc_req **p = &mine; *p;) {
            ct_nbc_req *r = *p;
            int done = 0, rc = ct_exec_step(&r->run, &done);
            if (rc != MPI_SUCCESS && r->rc == MPI_SUCCESS)
                r->rc = rc;
            if (!done && rc == MPI_SUCCESS) {
                p = &r->next;
                continue;
            }
            moved = 1;
            *p = r->next;
            r->next = NULL;
            atomic_fetch_add(&eng.parts_done, 1);
            if (r->app_pending)
                atomic_store_explicit(&r->thread_done, 1, memory_order_release);
            else
                complete(r, 1);
        }
        int hooked = run_hook();
        if (hooked & CT_PROGRESS_MOVED)
            moved = 1, nap_us = 0;
        if (!moved && !mine && !(hooked & CT_PROGRESS_BUSY) && atomic_load(&hook_on))
            hook_nap(&nap_us);
        else if (!moved)
            sched_yield(); /* in flight but nothing arrived: let the core breathe */
    }
    return NULL;
}

static void submit(ct_nbc_req *r)
{
    pthread_mutex_lock(&eng.lock);
    ct_nbc_req **tail = &eng.incoming;
    while (*tail)
        tail = &(*tail)->next;
    *tail = r;
    pthread_cond_signal(&eng.wake);
    pthread_mutex_unlock(&eng.lock);
}

void ct_progress_stop(void)
{
    pthread_mutex_lock(&eng.lock);
    int running = eng.running;
    eng.stop = 1;
    pthread_cond_signal(&eng.wake);
    pthread_mutex_unlock(&eng.lock);
    if (running)
        pthread_join(eng.tid, NULL);
    pthread_mutex_lock(&eng.lock);
    eng.running = 0;
    atomic_store(&eng.live, 0);
    pthread_mutex_unlock(&eng.lock);
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: the thread stops
 * there, before MPI goes away under it. */
static int self_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    ct_progress_stop();
    return MPI_SUCCESS;
}

static int parse_cores(const char *text, int *cores, int max)
{
    int n = 0;
    while (text && *text && n < max) {
        char *end;
        long v = strtol(text, &end, 10);
        if (end == text || v < 0)
            return -1;
        cores[n++] = (int)v;
        text = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

/* The node's communication cores: the online CPUs no rank of comm on this
 * node is bound to. */
static int free_cores(MPI_Comm comm, int *cores, int max, int *local_rank)
{
    MPI_Comm node;
    int nlocal, rank, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu <= 0 || ncpu > 4096)
        return 0;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return 0;
    PMPI_Comm_size(node, &nlocal);
    PMPI_Comm_rank(node, &rank);
    *local_rank = rank;
    unsigned char *mine = calloc((size_t)ncpu, 1), *all = calloc((size_t)ncpu * nlocal, 1);
    int n = 0;
    if (mine && all) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int c = 0; c < ncpu; c++)
                mine[c] = CPU_ISSET(c, &set) != 0;
        PMPI_Allgather(mine, ncpu, MPI_UNSIGNED_CHAR, all, ncpu, MPI_UNSIGNED_CHAR, node);
        for (int c = 0; c < ncpu && n < max; c++) {
            int used = 0;
            for (int r = 0; r < nlocal; r++)
                used |= all[(size_t)r * ncpu + c];
            if (!used)
                cores[n++] = c;
        }
    }
    free(mine);
    free(all);
    PMPI_Comm_free(&node);
    return n;
}

static int progress_start(MPI_Comm comm, int need_free_core)
{
    int provided = MPI_THREAD_SINGLE, rc;
    pthread_mutex_lock(&eng.lock);
    int tried = eng.tried;
    eng.tried = 1;
    pthread_mutex_unlock(&eng.lock);
    if (tried)
        return eng.running ? MPI_SUCCESS : MPI_ERR_OTHER;
    const char *off = getenv("COLLTUNE_PROGRESS");
    if (off && (!strcmp(off, "off") || !strcmp(off, "0")))
        return MPI_ERR_OTHER;
    PMPI_Query_thread(&provided);
    int cores[4096], ncores, local_rank = 0;
    const char *given = getenv("COLLTUNE_PROGRESS_CORES");
    if (given && *given) {
        PMPI_Comm_rank(comm, &local_rank);
        MPI_Comm node;
        if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS) {
            PMPI_Comm_rank(node, &local_rank);
            PMPI_Comm_free(&node);
        }
        ncores = parse_cores(given, cores, 4096);
        if (ncores < 0) {
            fprintf(stderr, "colltune: COLLTUNE_PROGRESS_CORES='%s' is not a list of core "
                            "ids; the progress thread is not bound\n", given);
            ncores = 0;
        }
    } else {
        ncores = free_cores(comm, cores, 4096, &local_rank); /* collective */
    }
    if (provided < MPI_THREAD_MULTIPLE)
        return MPI_ERR_OTHER;
    if (need_free_core && ncores <= 0) {
        /* Every core runs a rank: a thread would take time from them. Not tried,
         * so that an explicit ct_progress_start (the dyn layer's) still may. */
        pthread_mutex_lock(&eng.lock);
        eng.tried = 0;
        pthread_mutex_unlock(&eng.lock);
        return MPI_ERR_OTHER;
    }
    static int self_keyval = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &self_keyval, NULL) ==
        MPI_SUCCESS)
        PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL);
    pthread_mutex_lock(&eng.lock);
    eng.comm_cores = ncores;
    eng.core = ncores > 0 ? cores[local_rank % ncores] : -1;
    eng.stop = 0;
    rc = pthread_create(&eng.tid, NULL, progress_main, NULL);
    eng.running = rc == 0;
    atomic_store(&eng.live, eng.running);
    pthread_mutex_unlock(&eng.lock);
    return rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int ct_progress_start(MPI_Comm comm)
{
    return progress_start(comm, 0);
}

int ct_progress_start_on_free_core(MPI_Comm comm)
{
    return progress_start(comm, 1);
}

void ct_progress_query(ct_progress_info *info)
{
    pthread_mutex_lock(&eng.lock);
    info->running = eng.running;
    info->core = eng.running ? eng.core : -1;
    info->comm_cores = eng.comm_cores;
    pthread_mutex_unlock(&eng.lock);
    info->completed = atomic_load(&eng.completed);
    info->parts_done = atomic_load(&eng.parts_done);
}

/* ---- The split tree ------------------------------------------------------ */

static tree_shape shape_of(int coll)
{
    switch (coll) {
    case CT_BCAST:
    case CT_SCATTER:
        return SHAPE_ONE_TO_ALL;
    case CT_REDUCE:
    case CT_GATHER:
        return SHAPE_ALL_TO_ONE;
    default:
        return SHAPE_NONE;
    }
}

/* The tree the schedules of all ranks form (one-to-all: each rank receives
 * from one parent; all-to-one: sends to one parent), and each rank's subtree
 * height. -1 when the algorithm is no tree (or its tree has a cycle). */
static int tree_heights(const ct_job *job, tree_shape shape, int *height)
{
    const ct_params *p0 = &job->params;
    int n = p0->size, rc = 0;
    int *parent = malloc((size_t)n * sizeof *parent);
    ct_sched s;
    ct_sched_init(&s);
    if (!parent)
        return -1;
    for (int r = 0; r < n && rc == 0; r++) {
        ct_params p = *p0;
        p.rank = r;
        ct_sched_reset(&s);
        if (ct_sched_generate(job->alg->info.name, &p, &s)) {
            rc = -1;
            break;
        }
        parent[r] = -1;
        height[r] = 0;
        for (int i = 0; i < s.nops; i++) {
            const ct_op *o = &s.ops[i];
            if (o->kind == CT_OP_SIGNAL || o->kind == CT_OP_WAIT)
                rc = -1; /* shared memory: no tree to split */
            int up = shape == SHAPE_ONE_TO_ALL ? o->kind == CT_OP_RECV : o->kind == CT_OP_SEND;
            if (!up)
                continue;
            if (parent[r] >= 0 && parent[r] != o->peer)
                rc = -1; /* two parents: not a tree */
            parent[r] = o->peer;
        }
    }
    for (int r = 0; r < n && rc == 0; r++) {
        int h = 0, v = r, steps = 0;
        while (parent[v] >= 0 && steps++ <= n) {
            v = parent[v];
            h++;
            if (height[v] < h)
                height[v] = h;
            else if (height[v] >= h)
                h = height[v];
        }
        if (steps > n)
            rc = -1;
    }
    ct_sched_free(&s);
    free(parent);
    return rc;
}

/* The last tree read (the same collective in a loop is the common case): reading
 * it generates every rank's schedule, which need not happen at every call. */
static pthread_mutex_t heights_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const ct_registry_entry *alg;
    ct_params params; /* rank 0: the tree does not depend on the caller's rank */
    int *height, ok;
} last_tree;

static int cached_heights(const ct_job *job, tree_shape shape, int *height)
{
    ct_params key;
    memset(&key, 0, sizeof key); /* padding too: compared with memcmp */
    memcpy(&key, &job->params, sizeof key);
    key.rank = 0;
    int n = key.size, rc;
    pthread_mutex_lock(&heights_lock);
    if (last_tree.height && last_tree.alg == job->alg &&
        !memcmp(&key, &last_tree.params, sizeof key)) {
        memcpy(height, last_tree.height, sizeof *height * (size_t)n);
        rc = last_tree.ok;
    } else {
        rc = tree_heights(job, shape, height);
        int *copy = malloc(sizeof *copy * (size_t)n);
        if (copy) {
            memcpy(copy, height, sizeof *copy * (size_t)n);
            free(last_tree.height);
            last_tree.height = copy;
            last_tree.alg = job->alg;
            last_tree.params = key;
            last_tree.ok = rc;
        }
    }
    pthread_mutex_unlock(&heights_lock);
    return rc;
}

/* Cuts the rank's schedule: an edge is low (application) when the child end's
 * subtree is less than S high. A local operation goes with the part that
 * produced its input; one on the rank's own input with the part that runs
 * first. */
static int split_schedule(ct_nbc_req *r, tree_shape shape, const int *height, int s_levels)
{
    const ct_sched *full = &r->job->sched;
    int me = r->job->params.rank;
    r->cut = 1; /* upper and lower are written from here on */
    int first_low = shape == SHAPE_ALL_TO_ONE; /* which part runs first */
    int *low = malloc((size_t)(full->nops ? full->nops : 1) * sizeof *low);
    if (!low)
        return -1;
    for (int i = 0; i < full->nops; i++) {
        const ct_op *o = &full->ops[i];
        int child;
        if (o->kind == CT_OP_SEND)
            child = shape == SHAPE_ONE_TO_ALL ? o->peer : me;
        else if (o->kind == CT_OP_RECV)
            child = shape == SHAPE_ONE_TO_ALL ? me : o->peer;
        else
            child = -1;
        if (child >= 0) {
            low[i] = height[child] < s_levels;
            continue;
        }
        /* After every earlier op that wrote what it reads (a; b too for a
         * reduction) or what it overwrites (b): in the later part if any of
         * them is there. */
        int second = !first_low, later = 0;
        const ct_region *deps[2] = {&o->a, &o->b};
        for (int d = 0; d < 2 && !later; d++)
            for (int j = i - 1; j >= 0; j--) {
                const ct_op *w = &full->ops[j];
                const ct_region *out = w->kind == CT_OP_RECV ? &w->a
                                       : (w->kind == CT_OP_REDUCE || w->kind == CT_OP_COPY)
                                           ? &w->b
                                           : NULL;
                const ct_region *in = deps[d];
                if (out && out->buf == in->buf && out->off < in->off + in->count &&
                    in->off < out->off + out->count) {
                    later = low[j] == second;
                    break;
                }
            }
        low[i] = later ? second : first_low;
    }
    ct_sched *parts[2] = {&r->upper, &r->lower};
    for (int k = 0; k < 2; k++) {
        parts[k]->nbufs = full->nbufs;
        memcpy(parts[k]->buf_count, full->buf_count, sizeof full->buf_count);
    }
    for (int rd = 0; rd < full->nrounds; rd++) {
        ct_sched_round(&r->upper);
        ct_sched_round(&r->lower);
        int a = full->round_start[rd], len = ct_sched_round_len(full, rd);
        for (int i = a; i < a + len; i++)
            ct_sched_add_op(parts[low[i]], &full->ops[i]);
    }
    free(low);
    return r->upper.error || r->lower.error ? -1 : 0;
}

static int auto_split(const ct_job *job, int height_root)
{
    ct_progress_info info;
    ct_progress_query(&info);
    if (!info.running || info.comm_cores <= 0)
        return height_root; /* nobody to offload to: the blocking algorithm */
    int n = job->params.size;
    int s = ct_split_paper_best_s(n + info.comm_cores, n, NULL);
    return s < 0 ? 0 : s;
}

/* ---- Application parts ---------------------------------------------------
 * Requests whose application part is still to run, driven by every call of
 * the wait and test family (whichever requests it names: MPI's progress rule
 * makes a wait on one request progress the others), one step each, never
 * blocking on one: ranks may complete their collectives in different orders. */

static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_nbc_req *app_list;
static atomic_int app_count;

static void app_add(ct_nbc_req *r)
{
    pthread_mutex_lock(&app_lock);
    ct_nbc_req **tail = &app_list; /* in start order: MPI matches in posting order */
    while (*tail)
        tail = &(*tail)->app_next;
    r->app_next = NULL;
    *tail = r;
    atomic_fetch_add(&app_count, 1);
    pthread_mutex_unlock(&app_lock);
}

static int app_part(ct_nbc_req *r);
static int orphans_collect(void);

int ct_nbc_poll(void)
{
    int moved = 0;
    /* One thread drives at a time; another one polling meanwhile just tests MPI. */
    if (atomic_load(&app_count) > 0 && pthread_mutex_trylock(&app_lock) == 0) {
        int was = ct_monitor_in_collective;
        ct_monitor_in_collective = 1;
        for (ct_nbc_req **p = &app_list; *p;) {
            /* The next one is read first: once app_part completes r, the thread waiting
             * for it may free it at once (TSan caught the read after it). */
            ct_nbc_req *r = *p, *next = r->app_next;
            if (app_part(r)) {
                *p = next;
                atomic_fetch_sub(&app_count, 1);
                moved = 1;
            } else {
                p = &r->app_next;
            }
        }
        ct_monitor_in_collective = was;
        pthread_mutex_unlock(&app_lock);
    }
    if (hook_in_waits() && (run_hook() & CT_PROGRESS_MOVED))
        moved = 1;
    if (orphans_collect())
        moved = 1;
    return moved;
}

/* ---- Requests the program freed while in flight ------------------------------
 * MPI calls MPI_Request_free on a collective's request erroneous, yet the libraries
 * complete such an operation in the background and programs rely on it (MPICH's own
 * tests). colltune does the same: the request leaves the program's hands at once, its
 * operation still runs (the progress thread's part as ever, the application's part in
 * every later poll), and the first poll that finds it over frees it; MPI_Finalize
 * drains what is left (ct_nbc_drain). */

static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_nbc_req *orphans;
static atomic_int orphan_count;

/* Completes and frees r, which is done: its MPI request, then a persistent call's plan
 * (its handle, which r ran under). */
static void release_done(ct_nbc_req *r, ct_plan *plan, MPI_Request handle)
{
    MPI_Request h = r->borrowed ? handle : r->greq;
    ct_nbc_collect(r, &h, MPI_STATUS_IGNORE); /* frees r */
    if (plan)
        ct_plan_free(plan, &handle);
}

int ct_nbc_release(ct_nbc_req *r, MPI_Request *request, int *in_flight)
{
    ct_plan *plan = r->borrowed ? ct_plan_find(*request) : NULL;
    *in_flight = !ct_nbc_done(r);
    if (!*in_flight) {
        release_done(r, plan, *request);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    r->orphan_plan = plan;
    pthread_mutex_lock(&orphan_lock);
    r->orphan_next = orphans;
    orphans = r;
    atomic_fetch_add(&orphan_count, 1);
    pthread_mutex_unlock(&orphan_lock);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

/* Frees the orphans that are over; nonzero when one was. */
static int orphans_collect(void)
{
    if (atomic_load(&orphan_count) == 0)
        return 0;
    ct_nbc_req *done = NULL;
    pthread_mutex_lock(&orphan_lock);
    for (ct_nbc_req **p = &orphans; *p;) {
        ct_nbc_req *r = *p;
        if (ct_nbc_done(r)) {
            *p = r->orphan_next;
            r->orphan_next = done;
            done = r;
            atomic_fetch_sub(&orphan_count, 1);
        } else {
            p = &r->orphan_next;
        }
    }
    pthread_mutex_unlock(&orphan_lock);
    int any = done != NULL;
    while (done) {
        ct_nbc_req *r = done;
        done = r->orphan_next;
        release_done(r, r->orphan_plan, r->key);
    }
    return any;
}

void ct_nbc_drain(void)
{
    while (atomic_load(&orphan_count) > 0) {
        if (!ct_nbc_poll())
            sched_yield(); /* the other ranks' parts, or the progress thread's */
    }
}

void ct_nbc_poll_orphans(void)
{
    if (atomic_load_explicit(&orphan_count, memory_order_relaxed) > 0)
        ct_nbc_poll();
}

int ct_nbc_busy(void)
{
    return atomic_load(&app_count) > 0 || atomic_load(&orphan_count) > 0 || hook_in_waits();
}

int ct_nbc_done(const ct_nbc_req *r)
{
    return atomic_load_explicit(&((ct_nbc_req *)r)->done, memory_order_acquire);
}

/* A persistent start's error handler, fetched when a failure needs it: the one the
 * program's communicator has at the completion (a non-blocking call's is the one at its
 * start, as its communicator may be freed by then; a persistent plan's communicator is
 * the one its every start already uses). Freed with r. */
static void borrowed_errh(ct_nbc_req *r)
{
    if (r->borrowed && r->errh == MPI_ERRHANDLER_NULL && r->prog_comm != MPI_COMM_NULL &&
        PMPI_Comm_get_errhandler(r->prog_comm, &r->errh) != MPI_SUCCESS)
        r->errh = MPI_ERRHANDLER_NULL;
}

int ct_nbc_collect(ct_nbc_req *r, MPI_Request *request, MPI_Status *status)
{
    int rc = atomic_load_explicit(&r->final_rc, memory_order_acquire);
    if (rc != MPI_SUCCESS)
        borrowed_errh(r);
    if (rc != MPI_SUCCESS && (r->retained || r->borrowed) && r->errh != MPI_ERRHANDLER_NULL) {
        /* The program's error handler of the communicator, as it was at the start
         * (the communicator itself may be freed by now; a persistent start's: see
         * borrowed_errh). */
        PMPI_Comm_set_errhandler(r->job->x.comm, r->errh);
        PMPI_Comm_call_errhandler(r->job->x.comm, rc);
    }
    if (r->borrowed) {
        /* A persistent call's handle stays the program's, inactive again. */
        if (status != MPI_STATUS_IGNORE)
            greq_query(NULL, status);
        borrowed_free(r);
    } else {
        MPI_Status own;
        PMPI_Wait(request, status == MPI_STATUS_IGNORE ? &own : status); /* frees r */
    }
    if (status != MPI_STATUS_IGNORE)
        status->MPI_ERROR = rc;
    ct_nbc_reap();
    return rc;
}

int ct_nbc_peek(const ct_nbc_req *r, MPI_Status *status)
{
    int rc = atomic_load_explicit(&((ct_nbc_req *)r)->final_rc, memory_order_acquire);
    if (status != MPI_STATUS_IGNORE) {
        greq_query(NULL, status);
        status->MPI_ERROR = rc;
    }
    return rc;
}

int ct_nbc_misuse(MPI_Request request, const char *call)
{
    ct_nbc_req *r = ct_nbc_find(request);
    if (!r)
        return MPI_SUCCESS;
    MPI_Comm comm = r->job->x.comm;
    borrowed_errh(r);
    if (r->errh != MPI_ERRHANDLER_NULL)
        PMPI_Comm_set_errhandler(comm, r->errh);
    return ct_raise_error(comm, MPI_ERR_REQUEST,
                          "%s on the request of a%s collective (%s) in flight: erroneous in "
                          "MPI; the request is left as it was, complete it with a wait or test",
                          call, r->borrowed ? " persistent" : " non-blocking",
                          ct_coll_name(r->job->params.coll));
}

/* ---- Starting ---------------------------------------------------------------- */

/* A cleared request (own_job: the last one's, see spare_req); borrowed: for a persistent
 * call's job. */
static ct_nbc_req *req_new(int borrowed)
{
    ct_nbc_req *r = atomic_exchange_explicit(&spare_req, NULL, memory_order_acq_rel);
    if (r) {
        memset(r, 0, offsetof(ct_nbc_req, run)); /* req_free reset the schedules */
    } else {
        if (!(r = calloc(1, sizeof *r)))
            return NULL;
        ct_sched_init(&r->upper);
        ct_sched_init(&r->lower);
        ct_sched_init(&r->own_job.sched);
    }
    r->borrowed = borrowed;
    r->job = &r->own_job;
    r->errh = MPI_ERRHANDLER_NULL;
    atomic_init(&r->thread_done, 0);
    atomic_init(&r->final_rc, 0);
    atomic_init(&r->done, 0);
    return r;
}

/* A request that never reached MPI: what it holds goes back at once. */
static void req_drop(ct_nbc_req *r)
{
    if (r->active) /* a persistent start that never ran: the plan is idle again */
        atomic_store_explicit(r->active, 0, memory_order_release);
    if (r->retained)
        ct_job_release(r->job);
    if (r->errh != MPI_ERRHANDLER_NULL)
        PMPI_Errhandler_free(&r->errh);
    req_free(r);
}

/* COLLTUNE_LOG=debug: what a started call runs, whichever door it came in by (the
 * drop-in's MPI_I* and MPI_Start, the public ct_i*): the same call under the same table
 * and environment must say the same (tests/python/test_select.py). */
static void log_start(const ct_nbc_req *r, ct_coll coll, MPI_Comm comm, const ct_options *opts)
{
    int rank = -1, size = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    char split[16] = "model", line[256];
    if (opts && opts->split != CT_SPLIT_AUTO)
        snprintf(split, sizeof split, "%d", opts->split);
    int n = snprintf(line, sizeof line,
                     "colltune: rank %d/%d %s started: %s segsize %lld split %s thread %s\n",
                     rank, size, ct_coll_name(coll),
                     r->job->alg ? r->job->alg->info.name : "?",
                     opts && opts->has_segsize ? opts->segsize : 0LL, split,
                     r->has_upper ? "yes" : "no");
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: the ranks' lines do not mix */
        (void)w;
    }
}

/* Which side runs what: everything in the waits without the thread; else the
 * thread's part and, for a tree cut at S levels, the application's. */
static int assign_parts(ct_nbc_req *r, ct_coll coll, const ct_options *opts, int threaded)
{
    if (!threaded) { /* no tree to read: its heights (an allocation, a lock) only cut it */
        r->app_sched = &r->job->sched;
        return 0;
    }
    tree_shape shape = shape_of(coll);
    int split = opts ? opts->split : CT_SPLIT_AUTO;
    int n = r->job->params.size, root_height = 0, rc = 0;
    int *height = malloc((size_t)n * sizeof *height);
    int tree = height && shape != SHAPE_NONE && cached_heights(r->job, shape, height) == 0;
    if (tree)
        root_height = height[r->job->params.root];
    if (split == CT_SPLIT_AUTO)
        split = tree ? auto_split(r->job, root_height) : 0;
    if (!tree || split <= 0) {
        r->thread_sched = &r->job->sched;
    } else if ((rc = split_schedule(r, shape, height, split)) == 0) {
        r->thread_sched = r->upper.nops ? &r->upper : NULL;
        r->app_sched = r->lower.nops ? &r->lower : NULL;
    }
    free(height);
    return rc;
}

/* Starts r's prepared job: the generalized request, known to the waits under
 * r->key (set here for a request of its own), and the parts set going. */
static int launch(ct_nbc_req *r, ct_coll coll, MPI_Comm comm, const ct_options *opts,
                  MPI_Request *out)
{
    int rc;
    /* A persistent start leaves it to a failure (borrowed_errh): fetching and freeing it at
     * every start was ~200 instructions of ~1,800, MPICH's own lock included. */
    if (!r->borrowed && PMPI_Comm_get_errhandler(comm, &r->errh) != MPI_SUCCESS)
        r->errh = MPI_ERRHANDLER_NULL;
    int threaded = atomic_load(&eng.live);
    if (!r->job->empty && assign_parts(r, coll, opts, threaded)) {
        req_drop(r);
        return ct_raise_error(comm, MPI_ERR_NO_MEM, "%s: out of memory", ct_coll_name(coll));
    }
    r->has_upper = r->thread_sched != NULL;
    r->has_lower = r->app_sched != NULL;
    if (ct_select_log_level() >= CT_LOG_DEBUG)
        log_start(r, coll, comm, opts);
    r->greq = MPI_REQUEST_NULL;
    if (!r->borrowed) {
        if ((rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, r, &r->greq)) !=
            MPI_SUCCESS) {
            req_drop(r);
            return rc;
        }
        r->key = r->greq;
    }
    if ((rc = table_put(r->key, r)) != MPI_SUCCESS) {
        /* Untracked, it cannot be driven: completed at once with the error. */
        r->rc = rc;
        atomic_store_explicit(&r->final_rc, rc, memory_order_release);
        atomic_store_explicit(&r->done, 1, memory_order_release);
        if (r->borrowed) { /* the program's handle knows nothing of it */
            req_drop(r);
        } else {
            MPI_Grequest_complete(r->greq);
            *out = r->greq;
        }
        return rc;
    }
    if (!r->borrowed)
        *out = r->greq;
    if (r->job->empty) {
        complete(r, 0);
        return MPI_SUCCESS;
    }
    if (shape_of(coll) == SHAPE_ALL_TO_ONE && threaded && r->has_lower) {
        /* Reduce, gather: the leaves' levels here and now, then the hand-off. */
        ct_exec_run x;
        rc = ct_exec_begin(&x, r->app_sched, &r->job->x, &r->job->work);
        if (rc == MPI_SUCCESS)
            rc = ct_exec_finish(&x);
        r->rc = rc;
        r->has_lower = 0;
    }
    r->app_pending = r->has_lower;
    if (!r->has_upper || r->rc != MPI_SUCCESS) {
        if (!r->app_pending)
            complete(r, 0);
        else
            app_add(r);
        return MPI_SUCCESS;
    }
    if ((rc = ct_exec_begin(&r->run, r->thread_sched, &r->job->x, &r->job->work)) !=
        MPI_SUCCESS) {
        r->rc = rc;
        if (!r->app_pending) {
            complete(r, 0);
        } else {
            atomic_store(&r->thread_done, 1);
            app_add(r);
        }
        return MPI_SUCCESS;
    }
    atomic_store(&r->thread_done, 0);
    if (r->app_pending)
        app_add(r); /* before the thread may finish its part */
    submit(r);
    return MPI_SUCCESS;
}

int ct_nbc_start(const ct_call *c, const ct_vargs *v, const ct_options *opts,
                 int native_on_reject, const char **ran)
{
    ct_nbc_req *r = req_new(0);
    if (!r)
        return ct_raise_error(c->comm, MPI_ERR_NO_MEM, "%s: out of memory",
                              ct_coll_name(c->coll));
    int go, rc = ct_call_prepare(c, v, opts, native_on_reject, r->job, &go, ran);
    if (go != 1) {
        req_free(r);
        return rc; /* native MPI took the call (or refused it) */
    }
    if ((rc = ct_job_retain(r->job)) != MPI_SUCCESS) {
        req_free(r);
        return ct_raise_error(c->comm, rc, "%s: cannot keep the call's handles",
                              ct_coll_name(c->coll));
    }
    r->retained = 1;
    return launch(r, c->coll, c->comm, opts, c->request);
}

int ct_nbc_start_job(ct_job *job, ct_coll coll, MPI_Comm comm, const ct_options *opts,
                     MPI_Request handle, atomic_int *active)
{
    /* The plan's own mark, not a look-up of handle in the table (its lock, at every start). */
    if (atomic_load_explicit(active, memory_order_acquire))
        return ct_raise_error(comm, MPI_ERR_REQUEST,
                              "MPI_Start on a persistent %s that is still active: erroneous "
                              "in MPI; complete it with a wait or test first",
                              ct_coll_name(coll));
    int rc = ct_job_restart(job);
    if (rc != MPI_SUCCESS)
        return ct_raise_error(comm, rc, "%s: cannot copy the input", ct_coll_name(coll));
    ct_nbc_req *r = req_new(1);
    if (!r)
        return ct_raise_error(comm, MPI_ERR_NO_MEM, "%s: out of memory", ct_coll_name(coll));
    r->job = job;
    r->key = handle;
    r->prog_comm = comm;
    r->active = active;
    atomic_store_explicit(active, 1, memory_order_relaxed);
    return launch(r, coll, comm, opts, NULL);
}

/* One step of the application's part of r (once the thread's part, if any, is
 * over). Returns 1 once r is complete for MPI, 0 while it is not. */
static int app_part(ct_nbc_req *r)
{
    if (!r->app_pending)
        return 1;
    if (r->has_upper && !atomic_load_explicit(&r->thread_done, memory_order_acquire))
        return 0;
    if (!r->app_started) {
        r->app_started = 1;
        int rc = r->rc == MPI_SUCCESS ? ct_exec_begin(&r->run, r->app_sched, &r->job->x,
                                                      &r->job->work)
                                      : r->rc;
        if (rc != MPI_SUCCESS) {
            r->rc = rc;
            r->app_pending = 0;
            complete(r, 0);
            return 1;
        }
    }
    int done = 1, rc = ct_exec_step(&r->run, &done);
    if (rc != MPI_SUCCESS && r->rc == MPI_SUCCESS)
        r->rc = rc;
    if (!done && rc == MPI_SUCCESS)
        return 0;
    r->app_pending = 0;
    complete(r, 0);
    return 1;
}
