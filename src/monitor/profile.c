/* The collective profile and its timeline (profile.h). */
#include "profile.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colltune.h"
#include "monitor.h"

int ct_profile_on;
_Thread_local int ct_profile_op __attribute__((tls_model("initial-exec")));
_Atomic int ct_profile_pending;

/* Points: a fixed open-addressing table. A slot is claimed by compare-and-swap on state
 * (0 free, 1 being written, 2 ready), so lookups take no lock. */
enum { NPOINTS = 2048, ALG_LEN = 32, HIST = 64, NINFLIGHT = 4096, NPERSIST = 4096 };

typedef struct point {
    _Atomic int state;
    int op, form, comm_size;
    long long bucket, segsize;
    char alg[ALG_LEN];
    const char *alg_ptr; /* the name as its first caller passed it, for the hint */
    int native;
    _Atomic unsigned long long calls, inits, bytes_total, ticks, bytes_min, bytes_max;
    _Atomic unsigned long long hist[HIST]; /* durations: bin b holds [2^(b-1), 2^b) ticks */
} point;

typedef struct inflight {
    _Atomic int state; /* 0 free, 1 being written, 2 in flight */
    MPI_Request req;
    int p;
    long long bytes;
    unsigned long long t0;
    MPI_Comm comm;
} inflight;

typedef struct persist {
    _Atomic int state;
    MPI_Request req;
    int p;
    long long bytes;
    MPI_Comm comm;
} persist;

typedef struct event {
    int p, comm_id;
    long long bytes;
    unsigned long long t0, t1;
} event;

static point *points;
/* Per operation and form, the point its last call found: a call like the previous one
 * (the common case of a loop) is checked against it field by field, the algorithm by its
 * pointer, and needs no hash. A stale hint is only a miss. */
static _Atomic int hint[CT_NCOLL][CT_PROF_NFORMS];
static inflight *flights;
static persist *persists;
static _Atomic long flights_top, persists_top; /* one past the highest slot ever used */
static _Atomic unsigned long long op_shm[CT_NCOLL];

static const char *trace_path;
static event *events;
static _Atomic unsigned long long nevents;
enum { NCOMMS = 256 };
static _Atomic(MPI_Comm) comm_ids[NCOMMS];
static _Atomic int ncomm_ids;

static unsigned long long start_ticks;
static double start_wall, start_epoch_us;
static int world_rank, world_size;

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds a tick lasts, measured over the run so far (the TSC on x86-64). */
static double tick_seconds(void)
{
    unsigned long long dt = ct_monitor_ticks() - start_ticks;
    double dw = now_wall() - start_wall;
    return dt && dw > 0 ? dw / (double)dt : 1e-9;
}

void ct_profile_init(void)
{
    const char *v = getenv("COLLTUNE_PROFILE");
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int on = 0;
    if (v && *v && strcmp(v, "off") != 0) {
        if (strcmp(v, "on") == 0)
            on = 1;
        else if (world_rank == 0)
            fprintf(stderr, "colltune: error: COLLTUNE_PROFILE='%.64s' is neither on nor off; "
                            "the profile is off\n", v);
    }
    const char *t = getenv("COLLTUNE_TRACE");
    if (!(v && *v) && t && *t)
        on = 1; /* a timeline asked for alone brings its profile */
    if (!on)
        return;
    points = calloc(NPOINTS, sizeof *points);
    flights = calloc(NINFLIGHT, sizeof *flights);
    persists = calloc(NPERSIST, sizeof *persists);
    if (t && *t) {
        events = malloc(sizeof *events * CT_PROFILE_TRACE_CAP);
        trace_path = events ? t : NULL;
    }
    if (!points || !flights || !persists) {
        fprintf(stderr, "colltune: profile: out of memory; the profile is off\n");
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    start_epoch_us = (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
    start_wall = now_wall();
    start_ticks = ct_monitor_ticks();
    ct_profile_on = 1;
}

static long long bucket_of(long long bytes)
{
    if (bytes <= 0)
        return 0;
    return 1LL << (63 - __builtin_clzll((unsigned long long)bytes));
}

static unsigned hash(int op, int form, int comm_size, long long bucket, const char *alg,
                     long long segsize)
{
    uint64_t h = 1469598103934665603ULL;
    uint64_t k[5] = {(uint64_t)op, (uint64_t)form, (uint64_t)comm_size, (uint64_t)bucket,
                     (uint64_t)segsize};
    for (int i = 0; i < 5; i++)
        h = (h ^ k[i]) * 1099511628211ULL;
    for (const char *s = alg; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (unsigned)(h ^ (h >> 29));
}

int ct_profile_point(int op, int form, int comm_size, long long bytes, const char *alg,
                     long long segsize)
{
    if (!points)
        return -1;
    long long bucket = bucket_of(bytes);
    int known = op >= 0 && op < CT_NCOLL && form >= 0 && form < CT_PROF_NFORMS;
    if (known) {
        int s = atomic_load_explicit(&hint[op][form], memory_order_relaxed);
        point *pt = &points[s];
        if (atomic_load_explicit(&pt->state, memory_order_acquire) == 2 && pt->alg_ptr == alg &&
            pt->op == op && pt->form == form && pt->comm_size == comm_size &&
            pt->bucket == bucket && pt->segsize == segsize)
            return s;
    }
    unsigned h = hash(op, form, comm_size, bucket, alg, segsize);
    for (unsigned i = 0; i < NPOINTS; i++) {
        unsigned s = (h + i) & (NPOINTS - 1);
        point *pt = &points[s];
        int st = atomic_load_explicit(&pt->state, memory_order_acquire);
        if (st == 0) {
            int zero = 0;
            if (atomic_compare_exchange_strong(&pt->state, &zero, 1)) {
                pt->op = op;
                pt->form = form;
                pt->comm_size = comm_size;
                pt->bucket = bucket;
                pt->segsize = segsize;
                snprintf(pt->alg, sizeof pt->alg, "%s", alg);
                pt->alg_ptr = alg;
                pt->native = strcmp(alg, "native") == 0;
                atomic_store_explicit(&pt->bytes_min, ~0ULL, memory_order_relaxed);
                atomic_store_explicit(&pt->state, 2, memory_order_release);
                if (known)
                    atomic_store_explicit(&hint[op][form], (int)s, memory_order_relaxed);
                return (int)s;
            }
            st = atomic_load_explicit(&pt->state, memory_order_acquire);
        }
        while (st == 1) /* another thread is writing this key: a few stores away */
            st = atomic_load_explicit(&pt->state, memory_order_acquire);
        if (pt->op == op && pt->form == form && pt->comm_size == comm_size &&
            pt->bucket == bucket && pt->segsize == segsize && strcmp(pt->alg, alg) == 0) {
            if (known)
                atomic_store_explicit(&hint[op][form], (int)s, memory_order_relaxed);
            return (int)s;
        }
    }
    return -1;
}

static int comm_id(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return 0;
    int n = atomic_load(&ncomm_ids);
    for (int i = 0; i < n && i < NCOMMS; i++)
        if (atomic_load(&comm_ids[i]) == comm)
            return i + 1;
    int i = atomic_fetch_add(&ncomm_ids, 1);
    if (i >= NCOMMS)
        return NCOMMS; /* the rest share one row */
    atomic_store(&comm_ids[i], comm);
    return i + 1;
}

void ct_profile_record(int p, long long bytes, unsigned long long t0, unsigned long long t1,
                       MPI_Comm comm)
{
    if (p < 0)
        return;
    point *pt = &points[p];
    unsigned long long d = t1 - t0, b = bytes > 0 ? (unsigned long long)bytes : 0;
    atomic_fetch_add_explicit(&pt->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pt->bytes_total, b, memory_order_relaxed);
    atomic_fetch_add_explicit(&pt->ticks, d, memory_order_relaxed);
    atomic_fetch_add_explicit(&pt->hist[d ? 64 - __builtin_clzll(d) : 0], 1,
                              memory_order_relaxed);
    unsigned long long m = atomic_load_explicit(&pt->bytes_min, memory_order_relaxed);
    while (b < m && !atomic_compare_exchange_weak(&pt->bytes_min, &m, b))
        ;
    m = atomic_load_explicit(&pt->bytes_max, memory_order_relaxed);
    while (b > m && !atomic_compare_exchange_weak(&pt->bytes_max, &m, b))
        ;
    if (events) {
        unsigned long long k = atomic_fetch_add_explicit(&nevents, 1, memory_order_relaxed);
        if (k < CT_PROFILE_TRACE_CAP)
            events[k] = (event){p, comm_id(comm), bytes, t0, t1};
    }
}

void ct_profile_shm(int op, unsigned long long n)
{
    if (op >= 0 && op < CT_NCOLL)
        atomic_fetch_add_explicit(&op_shm[op], n, memory_order_relaxed);
}

/* ---- In flight ------------------------------------------------------------------ */

static void raise_top(_Atomic long *top, long i)
{
    long t = atomic_load(top);
    while (i + 1 > t && !atomic_compare_exchange_weak(top, &t, i + 1))
        ;
}

void ct_profile_begin(MPI_Request req, int p, long long bytes, unsigned long long t0,
                      MPI_Comm comm)
{
    if (p < 0 || req == MPI_REQUEST_NULL)
        return;
    for (long i = 0; i < NINFLIGHT; i++) {
        int zero = 0;
        if (atomic_load_explicit(&flights[i].state, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&flights[i].state, &zero, 1)) {
            flights[i].req = req;
            flights[i].p = p;
            flights[i].bytes = bytes;
            flights[i].t0 = t0;
            flights[i].comm = comm;
            raise_top(&flights_top, i);
            atomic_fetch_add(&ct_profile_pending, 1);
            atomic_store_explicit(&flights[i].state, 2, memory_order_release);
            return;
        }
    }
    /* full: this call goes unprofiled (4096 collectives in flight at once) */
}

long ct_profile_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL || !flights)
        return -1;
    long top = atomic_load_explicit(&flights_top, memory_order_acquire);
    for (long i = 0; i < top; i++)
        if (atomic_load_explicit(&flights[i].state, memory_order_acquire) == 2 &&
            flights[i].req == req)
            return i;
    return -1;
}

void ct_profile_end(long e, unsigned long long t1)
{
    if (e < 0)
        return;
    inflight *f = &flights[e];
    int two = 2;
    if (!atomic_compare_exchange_strong(&f->state, &two, 1))
        return;
    ct_profile_record(f->p, f->bytes, f->t0, t1, f->comm);
    atomic_fetch_sub(&ct_profile_pending, 1);
    atomic_store_explicit(&f->state, 0, memory_order_release);
}

void ct_profile_persistent(MPI_Request req, int p, long long bytes, MPI_Comm comm)
{
    if (p < 0 || req == MPI_REQUEST_NULL)
        return;
    atomic_fetch_add_explicit(&points[p].inits, 1, memory_order_relaxed);
    for (long i = 0; i < NPERSIST; i++) {
        int zero = 0;
        if (atomic_load_explicit(&persists[i].state, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&persists[i].state, &zero, 1)) {
            persists[i].req = req;
            persists[i].p = p;
            persists[i].bytes = bytes;
            persists[i].comm = comm;
            raise_top(&persists_top, i);
            atomic_store_explicit(&persists[i].state, 2, memory_order_release);
            return;
        }
    }
}

static long persist_find(MPI_Request req)
{
    long top = atomic_load_explicit(&persists_top, memory_order_acquire);
    for (long i = 0; i < top; i++)
        if (atomic_load_explicit(&persists[i].state, memory_order_acquire) == 2 &&
            persists[i].req == req)
            return i;
    return -1;
}

void ct_profile_started(MPI_Request req, unsigned long long t0)
{
    if (!persists || req == MPI_REQUEST_NULL)
        return;
    long i = persist_find(req);
    if (i >= 0)
        ct_profile_begin(req, persists[i].p, persists[i].bytes, t0, persists[i].comm);
}

void ct_profile_forget(MPI_Request req)
{
    if (!flights || req == MPI_REQUEST_NULL)
        return;
    long e = ct_profile_find(req);
    int two = 2;
    if (e >= 0 && atomic_compare_exchange_strong(&flights[e].state, &two, 0))
        atomic_fetch_sub(&ct_profile_pending, 1);
    long i = persist_find(req);
    two = 2;
    if (i >= 0)
        atomic_compare_exchange_strong(&persists[i].state, &two, 0);
}

/* ---- Totals (MPI_T) --------------------------------------------------------------- */

void ct_profile_op_totals(int op, unsigned long long *colltune_calls,
                          unsigned long long *native_calls, double *seconds,
                          unsigned long long *bytes, unsigned long long *shm_bytes)
{
    unsigned long long cc = 0, nc = 0, t = 0, b = 0;
    for (int s = 0; points && s < NPOINTS; s++) {
        point *pt = &points[s];
        if (atomic_load_explicit(&pt->state, memory_order_acquire) != 2 || pt->op != op)
            continue;
        unsigned long long c = atomic_load_explicit(&pt->calls, memory_order_relaxed);
        *(pt->native ? &nc : &cc) += c;
        t += atomic_load_explicit(&pt->ticks, memory_order_relaxed);
        b += atomic_load_explicit(&pt->bytes_total, memory_order_relaxed);
    }
    *colltune_calls = cc;
    *native_calls = nc;
    *seconds = points ? (double)t * tick_seconds() : 0;
    *bytes = b;
    *shm_bytes = op >= 0 && op < CT_NCOLL ? atomic_load(&op_shm[op]) : 0;
}

/* ---- Finalize: gathering and writing --------------------------------------------- */

/* One point of one rank as it travels to rank 0 (plain bytes: every rank is the same
 * build). */
typedef struct wire {
    int op, form, comm_size, native;
    long long bucket, segsize;
    char alg[ALG_LEN];
    unsigned long long calls, inits, bytes_total, bytes_min, bytes_max;
    double seconds;
    unsigned long long hist[HIST];
    double tick_s; /* this rank's tick, for the histogram's bins */
} wire;

/* One timeline event as it travels. */
typedef struct wire_event {
    int op, form, comm_id, comm_size;
    long long bytes, segsize;
    double ts_us, dur_us;
    char alg[ALG_LEN];
} wire_event;

static wire *merged; /* rank 0: the points of every rank, equal keys merged */
static int nmerged;

static int same_key(const wire *a, const wire *b)
{
    return a->op == b->op && a->form == b->form && a->comm_size == b->comm_size &&
           a->bucket == b->bucket && a->segsize == b->segsize && !strcmp(a->alg, b->alg);
}

/* Median seconds of the durations of the ranks' histograms of one point: bins are
 * log2 of ticks, each rank's tick converted; the median bin found in seconds and
 * interpolated linearly within it. */
typedef struct bin_s {
    double lo, hi;
    unsigned long long n;
} bin_s;

static int by_lo(const void *a, const void *b)
{
    double x = ((const bin_s *)a)->lo, y = ((const bin_s *)b)->lo;
    return (x > y) - (x < y);
}

static const char *const form_names[CT_PROF_NFORMS] = {"blocking", "nonblocking",
                                                       "persistent"};

static void gather_points(wire **all, int *nall)
{
    int mine = 0;
    double ts = tick_seconds();
    for (int s = 0; s < NPOINTS; s++)
        mine += atomic_load(&points[s].state) == 2;
    wire *w = calloc((size_t)(mine ? mine : 1), sizeof *w);
    int k = 0;
    for (int s = 0; w && s < NPOINTS && k < mine; s++) {
        point *pt = &points[s];
        if (atomic_load(&pt->state) != 2)
            continue;
        wire *x = &w[k++];
        x->op = pt->op;
        x->form = pt->form;
        x->comm_size = pt->comm_size;
        x->native = pt->native;
        x->bucket = pt->bucket;
        x->segsize = pt->segsize;
        memcpy(x->alg, pt->alg, ALG_LEN);
        x->calls = atomic_load(&pt->calls);
        x->inits = atomic_load(&pt->inits);
        x->bytes_total = atomic_load(&pt->bytes_total);
        x->bytes_min = atomic_load(&pt->bytes_min);
        x->bytes_max = atomic_load(&pt->bytes_max);
        x->seconds = (double)atomic_load(&pt->ticks) * ts;
        for (int b = 0; b < HIST; b++)
            x->hist[b] = atomic_load(&pt->hist[b]);
        x->tick_s = ts;
    }
    if (!w)
        k = 0;
    int nbytes = k * (int)sizeof(wire), *counts = NULL, *displs = NULL;
    if (world_rank == 0) {
        counts = calloc((size_t)world_size, sizeof *counts);
        displs = calloc((size_t)world_size, sizeof *displs);
    }
    PMPI_Gather(&nbytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *buf = NULL;
    if (world_rank == 0) {
        long long total = 0;
        for (int r = 0; r < world_size; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        buf = malloc((size_t)(total ? total : 1));
        *nall = (int)(total / (long long)sizeof(wire));
    }
    PMPI_Gatherv(w, nbytes, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    *all = (wire *)buf;
    free(w);
    free(counts);
    free(displs);
}

static void merge(wire *all, int nall)
{
    merged = calloc((size_t)(nall ? nall : 1), sizeof *merged);
    for (int i = 0; i < nall; i++) {
        int j = 0;
        while (j < nmerged && !same_key(&merged[j], &all[i]))
            j++;
        if (j == nmerged) {
            merged[nmerged] = all[i];
            merged[nmerged].calls = merged[nmerged].inits = 0;
            merged[nmerged].bytes_total = merged[nmerged].bytes_max = 0;
            merged[nmerged].bytes_min = ~0ULL;
            merged[nmerged].seconds = 0;
            nmerged++;
        }
        wire *m = &merged[j];
        m->calls += all[i].calls;
        m->inits += all[i].inits;
        m->bytes_total += all[i].bytes_total;
        if (all[i].calls && all[i].bytes_min < m->bytes_min)
            m->bytes_min = all[i].bytes_min;
        if (all[i].calls && all[i].bytes_max > m->bytes_max)
            m->bytes_max = all[i].bytes_max;
        m->seconds += all[i].seconds;
    }
}

static double median_of(const wire *key, const wire *all, int nall)
{
    bin_s *bins = malloc(sizeof *bins * (size_t)(nall ? nall : 1) * HIST);
    int nb = 0;
    unsigned long long n = 0;
    for (int i = 0; bins && i < nall; i++) {
        if (!same_key(key, &all[i]))
            continue;
        for (int b = 0; b < HIST; b++) {
            if (!all[i].hist[b])
                continue;
            double lo = b ? (double)(1ULL << (b - 1)) : 0, hi = b ? 2 * lo : 1;
            bins[nb++] = (bin_s){lo * all[i].tick_s, hi * all[i].tick_s, all[i].hist[b]};
            n += all[i].hist[b];
        }
    }
    double median = 0, half = (double)n / 2, seen = 0;
    if (n) {
        /* the ranks' bins overlap where their ticks differ a little: taken in order of
         * their lower ends, an approximation well inside a bin's factor of two */
        qsort(bins, (size_t)nb, sizeof *bins, by_lo);
        median = bins[nb - 1].hi;
        for (int b = 0; b < nb; b++) {
            if (seen + (double)bins[b].n >= half) {
                double f = (half - seen) / (double)bins[b].n;
                median = bins[b].lo + f * (bins[b].hi - bins[b].lo);
                break;
            }
            seen += (double)bins[b].n;
        }
    }
    free(bins);
    return median;
}

static wire *gathered;
static int ngathered;

static void write_trace(void)
{
    unsigned long long taken = atomic_load(&nevents);
    unsigned long long kept = taken < CT_PROFILE_TRACE_CAP ? taken : CT_PROFILE_TRACE_CAP;
    double ts = tick_seconds();
    wire_event *w = calloc((size_t)(kept ? kept : 1), sizeof *w);
    int k = 0;
    for (unsigned long long i = 0; w && i < kept; i++) {
        const event *e = &events[i];
        const point *pt = &points[e->p];
        wire_event *x = &w[k++];
        x->op = pt->op;
        x->form = pt->form;
        x->comm_id = e->comm_id;
        x->comm_size = pt->comm_size;
        x->bytes = e->bytes;
        x->segsize = pt->segsize;
        x->ts_us = start_epoch_us + (double)(e->t0 - start_ticks) * ts * 1e6;
        x->dur_us = (double)(e->t1 - e->t0) * ts * 1e6;
        memcpy(x->alg, pt->alg, ALG_LEN);
    }
    long long sizes[2] = {(long long)k * (long long)sizeof(wire_event),
                          (long long)(taken - kept)};
    long long *all_sizes = world_rank == 0 ? calloc((size_t)world_size * 2, sizeof(long long))
                                           : NULL;
    PMPI_Gather(sizes, 2, MPI_LONG_LONG, all_sizes, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    int *counts = NULL, *displs = NULL;
    char *buf = NULL;
    if (world_rank == 0) {
        counts = calloc((size_t)world_size, sizeof *counts);
        displs = calloc((size_t)world_size, sizeof *displs);
        long long total = 0;
        for (int r = 0; r < world_size; r++) {
            counts[r] = (int)all_sizes[2 * r];
            displs[r] = (int)total;
            total += counts[r];
        }
        buf = malloc((size_t)(total ? total : 1));
    }
    PMPI_Gatherv(w, (int)sizes[0], MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(w);
    if (world_rank == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", trace_path);
        FILE *f = fopen(tmp, "w");
        if (!f) {
            fprintf(stderr, "colltune: trace: cannot write %s: %s\n", tmp, strerror(errno));
        } else {
            double t_min = -1;
            for (int r = 0; r < world_size; r++) {
                const wire_event *e = (const wire_event *)(buf + displs[r]);
                int n = counts[r] / (int)sizeof(wire_event);
                for (int i = 0; i < n; i++)
                    if (t_min < 0 || e[i].ts_us < t_min)
                        t_min = e[i].ts_us;
            }
            if (t_min < 0)
                t_min = 0;
            fprintf(f, "{\"traceEvents\":[");
            int first = 1;
            for (int r = 0; r < world_size; r++) {
                fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                           "\"args\":{\"name\":\"rank %d\"}}", first ? "" : ",\n", r, r);
                first = 0;
                const wire_event *e = (const wire_event *)(buf + displs[r]);
                int n = counts[r] / (int)sizeof(wire_event);
                for (int i = 0; i < n; i++) {
                    double t = e[i].ts_us - t_min;
                    fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,"
                               "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"bytes\":%lld,"
                               "\"comm_size\":%d,\"algorithm\":\"%s\",\"segsize\":%lld,"
                               "\"form\":\"%s\"}}",
                            ct_coll_name((ct_coll)e[i].op), form_names[e[i].form], r,
                            e[i].comm_id, t < 0 ? 0 : t, e[i].dur_us < 0 ? 0 : e[i].dur_us,
                            e[i].bytes, e[i].comm_size, e[i].alg, e[i].segsize,
                            form_names[e[i].form]);
                }
            }
            fprintf(f, "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"schema\":"
                       "\"colltune-trace/1\",\"ranks\":%d,\"capacity_per_rank\":%d,"
                       "\"dropped\":[", world_size, CT_PROFILE_TRACE_CAP);
            for (int r = 0; r < world_size; r++)
                fprintf(f, "%s%lld", r ? "," : "", all_sizes[2 * r + 1]);
            fprintf(f, "],\"tid\":\"a communicator: 0 is MPI_COMM_WORLD, others numbered "
                       "by first use on each rank\"}}\n");
            fclose(f);
            if (rename(tmp, trace_path) != 0)
                fprintf(stderr, "colltune: trace: cannot write %s: %s\n", trace_path,
                        strerror(errno));
        }
    }
    free(buf);
    free(counts);
    free(displs);
    free(all_sizes);
}

void ct_profile_gather(void)
{
    if (!ct_profile_on)
        return;
    gather_points(&gathered, &ngathered);
    if (world_rank == 0)
        merge(gathered, ngathered);
    if (trace_path)
        write_trace();
}

static int by_key(const void *a, const void *b)
{
    const wire *x = a, *y = b;
    if (x->op != y->op)
        return x->op - y->op;
    if (x->form != y->form)
        return x->form - y->form;
    if (x->comm_size != y->comm_size)
        return x->comm_size - y->comm_size;
    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    int c = strcmp(x->alg, y->alg);
    if (c)
        return c;
    return (x->segsize > y->segsize) - (x->segsize < y->segsize);
}

void ct_profile_write_json(FILE *f)
{
    qsort(merged, (size_t)nmerged, sizeof *merged, by_key);
    fprintf(f, "\"profile\":{\"schema\":\"colltune-profile/1\",\"ranks\":%d,\"points\":[",
            world_size);
    int first = 1;
    for (int i = 0; i < nmerged; i++) {
        const wire *m = &merged[i];
        if (!m->calls && !m->inits)
            continue;
        double calls = m->comm_size > 0 ? (double)m->calls / m->comm_size : (double)m->calls;
        fprintf(f, "%s\n{\"op\":\"%s\",\"form\":\"%s\",\"comm_size\":%d,\"bytes\":%lld,"
                   "\"bytes_min\":%llu,\"bytes_max\":%llu,\"algorithm\":\"%s\",\"segsize\":%lld,",
                first ? "" : ",", ct_coll_name((ct_coll)m->op), form_names[m->form],
                m->comm_size, m->bucket, m->calls ? m->bytes_min : 0ULL, m->bytes_max, m->alg,
                m->segsize);
        if (calls == (double)(long long)calls)
            fprintf(f, "\"calls\":%lld,", (long long)calls);
        else
            fprintf(f, "\"calls\":%.3f,", calls);
        fprintf(f, "\"rank_calls\":%llu,\"bytes_total\":%llu,\"time_total_s\":%.9g,"
                   "\"time_median_s\":%.6g",
                m->calls, m->bytes_total, m->seconds, median_of(m, gathered, ngathered));
        if (m->form == CT_PROF_PERSISTENT) {
            double inits = m->comm_size > 0 ? (double)m->inits / m->comm_size : m->inits;
            fprintf(f, ",\"inits\":%.0f", inits);
        }
        fputc('}', f);
        first = 0;
    }
    fprintf(f, "]}");
    free(merged);
    free(gathered);
    merged = gathered = NULL;
    nmerged = ngathered = 0;
}
