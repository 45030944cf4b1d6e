#include "monitor.h"

#include "hwcount.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "colltune.h"

enum { HIST_BINS = 48, NCOUNTERS = 3 };

int ct_monitor_level;
_Thread_local int ct_monitor_in_collective CT_TLS_FAST;

/* Per destination (world rank): [0] the application's point-to-point, [1] colltune's
 * collectives. Counters are plain: a rank's MPI calls come from its threads one at a time
 * except colltune's progress thread, whose messages are counted under the same rules; the
 * few racing increments that could be lost there are not worth a lock on every message. */
static int world_size, world_rank;
static uint64_t *msgs[2], *bytes[2], *hist[2];
static uint64_t total_msgs[2], total_bytes[2];
/* The receive side, per source (world rank), same two layers. */
static uint64_t *rmsgs[2], *rbytes[2];
static uint64_t total_rmsgs[2], total_rbytes[2];
static uint64_t untracked; /* non-blocking receives the pending table had no room for */
static uint64_t native_calls[CT_NCOLL], native_bytes[CT_NCOLL];
static double start_time;
static unsigned long long mpi_ticks, start_ticks;
static MPI_Group world_group;

/* Hardware counters and energy, or why not. */
static int perf_fd[NCOUNTERS] = {-1, -1, -1};
static char perf_why[160];
static long long energy_start_uj = -1;
static char energy_why[160], energy_path[256];

static const char *const counter_names[NCOUNTERS] = {"instructions", "cycles",
                                                     "cache_misses"};

static void open_counters(void)
{
    static const uint64_t config[NCOUNTERS] = {PERF_COUNT_HW_INSTRUCTIONS,
                                               PERF_COUNT_HW_CPU_CYCLES,
                                               PERF_COUNT_HW_CACHE_MISSES};
    for (int i = 0; i < NCOUNTERS; i++)
        perf_fd[i] = ct_hwcount_open(config[i], counter_names[i], 0, 1,
                                     perf_why[0] ? NULL : perf_why, sizeof perf_why);
}

static long long read_energy(void)
{
    FILE *f = fopen(energy_path, "r");
    long long v = -1;
    if (f) {
        if (fscanf(f, "%lld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static void open_energy(void)
{
    const char *p = "/sys/class/powercap/intel-rapl:0/energy_uj";
    snprintf(energy_path, sizeof energy_path, "%s", p);
    FILE *f = fopen(p, "r");
    if (!f) {
        snprintf(energy_why, sizeof energy_why, "%s: %s (no RAPL powercap here, or not "
                                                "readable)", p, strerror(errno));
        return;
    }
    fclose(f);
    energy_start_uj = read_energy();
    if (energy_start_uj < 0)
        snprintf(energy_why, sizeof energy_why, "%s: unreadable", p);
}

/* The sizes of the predefined datatypes, read once: the send path looks them up here
 * instead of calling MPI_Type_size on every message (half the monitor's cost per send).
 * Predefined handles are never freed, so the table never goes stale; any other type
 * (or a predefined one whose slot another took) asks MPI. Read-only after init. */
enum { TYPE_SLOTS = 128 };
static struct {
    MPI_Datatype type;
    int size, used;
} type_cache[TYPE_SLOTS];

static size_t type_slot(MPI_Datatype t)
{
    uintptr_t key = 0;
    memcpy(&key, &t, sizeof t < sizeof key ? sizeof t : sizeof key);
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 57) & (TYPE_SLOTS - 1);
}

static void fill_type_cache(void)
{
    const MPI_Datatype predefined[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT,
        MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL, MPI_INT8_T,
        MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_AINT, MPI_COUNT,
        MPI_OFFSET, MPI_PACKED, MPI_WCHAR, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
        MPI_2INT, MPI_SHORT_INT};
    for (size_t i = 0; i < sizeof predefined / sizeof *predefined; i++) {
        int size = 0;
        size_t h = type_slot(predefined[i]);
        if (predefined[i] == MPI_DATATYPE_NULL || type_cache[h].used ||
            PMPI_Type_size(predefined[i], &size) != MPI_SUCCESS)
            continue;
        type_cache[h].type = predefined[i];
        type_cache[h].size = size;
        type_cache[h].used = 1;
    }
}

/* The size of a predefined type from the table, else -1. */
static inline int type_size_cached(MPI_Datatype t)
{
    size_t h = type_slot(t);
    return type_cache[h].used && type_cache[h].type == t ? type_cache[h].size : -1;
}

static int type_size(MPI_Datatype t)
{
    int size = type_size_cached(t);
    if (size < 0) {
        size = 0;
        PMPI_Type_size(t, &size);
    }
    return size;
}

/* The bytes a completed receive's status holds: read from the status itself where the
 * MPI's public layout is known (MPICH and its derivatives: count_lo and the high bits of
 * count_hi_and_cancelled; Open MPI: _ucount, in bytes), else asked from MPI. */
static MPI_Count status_bytes(const MPI_Status *st)
{
#if defined(MPICH_VERSION)
    return (MPI_Count)((((uint64_t)(uint32_t)st->count_hi_and_cancelled >> 1) << 32) |
                       (uint64_t)(uint32_t)st->count_lo);
#elif defined(OPEN_MPI)
    return (MPI_Count)st->_ucount;
#else
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0)
        n = 0;
    return n;
#endif
}

void ct_monitor_init(void)
{
    const char *v = getenv("COLLTUNE_MONITOR");
    static const char *const names[] = {"off", "counters", "count", "peers", "sizes"};
    ct_monitor_level = CT_MON_OFF;
    ct_profile_init(); /* the collective profile (profile.h), written with this file */
    if (!v || !*v)
        return;
    for (int i = 0; i < 5; i++)
        if (!strcmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
            ct_monitor_level = i;
    if (ct_monitor_level == CT_MON_OFF && strcmp(v, "off") && strcmp(v, "0"))
        fprintf(stderr, "colltune: COLLTUNE_MONITOR='%s' is not off, counters, count, peers "
                        "or sizes; monitoring is off\n", v);
    if (ct_monitor_level == CT_MON_OFF)
        return;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    fill_type_cache();
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    for (int k = 0; k < 2; k++) {
        msgs[k] = calloc((size_t)world_size, sizeof **msgs);
        bytes[k] = calloc((size_t)world_size, sizeof **bytes);
        hist[k] = calloc((size_t)world_size * HIST_BINS, sizeof **hist);
        rmsgs[k] = calloc((size_t)world_size, sizeof **rmsgs);
        rbytes[k] = calloc((size_t)world_size, sizeof **rbytes);
        if (!msgs[k] || !bytes[k] || !hist[k] || !rmsgs[k] || !rbytes[k]) {
            fprintf(stderr, "colltune: monitor: out of memory; monitoring is off\n");
            ct_monitor_level = CT_MON_OFF;
            return;
        }
    }
    open_counters();
    open_energy();
    start_time = PMPI_Wtime();
    start_ticks = ct_monitor_ticks();
}

/* The world ranks of a communicator's ranks (remote ones for an
 * inter-communicator), made at its first message and kept as an attribute, so
 * later messages cost one attribute lookup: no group, no allocation. */
static _Atomic int ranks_keyval = MPI_KEYVAL_INVALID;

/* A communicator's world ranks outlive it while a receive posted on it is pending
 * (MPI_Comm_free lets such receives complete later, and their completion reads the
 * ranks): they are kept on this list until MPI_Finalize instead. Not the hot path. */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static void **retired;
static size_t nretired, cap_retired;

static int still_pending(const void *ranks);

static int free_ranks(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    if (!still_pending(attr)) {
        free(attr);
        return MPI_SUCCESS;
    }
    pthread_mutex_lock(&retired_lock);
    if (nretired == cap_retired) {
        size_t cap = cap_retired ? 2 * cap_retired : 16;
        void **r = realloc(retired, cap * sizeof *r);
        if (r) {
            retired = r;
            cap_retired = cap;
        }
    }
    if (nretired < cap_retired)
        retired[nretired++] = attr;
    /* else: no memory for the list; the ranks leak rather than dangle */
    pthread_mutex_unlock(&retired_lock);
    return MPI_SUCCESS;
}

/* Made once per communicator: the first messages on a communicator may come from several
 * threads at once (a task runtime's workers, colltune's progress thread), and a second
 * MPI_Comm_set_attr would free the first thread's array under it. */
static pthread_mutex_t ranks_lock = PTHREAD_MUTEX_INITIALIZER;

static int *make_world_ranks(MPI_Comm comm);

static int *world_ranks(MPI_Comm comm)
{
    int flag = 0, *ranks = NULL;
    int keyval = atomic_load_explicit(&ranks_keyval, memory_order_acquire);
    if (keyval != MPI_KEYVAL_INVALID) {
        PMPI_Comm_get_attr(comm, keyval, &ranks, &flag);
        if (flag)
            return ranks;
    }
    pthread_mutex_lock(&ranks_lock);
    ranks = make_world_ranks(comm);
    pthread_mutex_unlock(&ranks_lock);
    return ranks;
}

/* Under ranks_lock: the keyval, then the communicator's array unless another thread made
 * it meanwhile. */
static int *make_world_ranks(MPI_Comm comm)
{
    int flag = 0, *ranks = NULL, keyval = atomic_load(&ranks_keyval);
    if (keyval == MPI_KEYVAL_INVALID) {
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_ranks, &keyval, NULL))
            return NULL;
        atomic_store_explicit(&ranks_keyval, keyval, memory_order_release);
    }
    PMPI_Comm_get_attr(comm, keyval, &ranks, &flag);
    if (flag)
        return ranks;
    int inter = 0, n = 0;
    MPI_Group g;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g))
        return NULL;
    PMPI_Group_size(g, &n);
    int *local = malloc(sizeof(int) * (size_t)(n + 1));
    ranks = malloc(sizeof(int) * (size_t)(n + 1));
    if (local && ranks) {
        for (int i = 0; i < n; i++)
            local[i] = i;
        ranks[0] = n; /* the size first, for the bounds check */
        PMPI_Group_translate_ranks(g, n, local, world_group, ranks + 1);
        PMPI_Comm_set_attr(comm, keyval, ranks);
    } else {
        free(ranks);
        ranks = NULL;
    }
    free(local);
    PMPI_Group_free(&g);
    return ranks;
}

/* The world rank of dest in comm: the identity on MPI_COMM_WORLD. */
static int world_of(MPI_Comm comm, int dest)
{
    if (comm == MPI_COMM_WORLD)
        return dest;
    const int *ranks = world_ranks(comm);
    if (!ranks || dest >= ranks[0] || ranks[1 + dest] == MPI_UNDEFINED)
        return -1;
    return ranks[1 + dest];
}

static int log2_bin(uint64_t n)
{
    int b = n > 1 ? 63 - __builtin_clzll(n) : 0;
    return b < HIST_BINS - 1 ? b : HIST_BINS - 1;
}

/* n bytes sent on layer k to world rank w (-1: not known). No calls: see
 * ct_monitor_count_send. */
static inline void account_send(int k, int w, uint64_t n)
{
    total_msgs[k]++;
    total_bytes[k] += n;
    if (ct_monitor_level < CT_MON_PEERS || w < 0 || w >= world_size)
        return;
    msgs[k][w]++;
    bytes[k][w] += n;
    if (ct_monitor_level >= CT_MON_SIZES)
        hist[k][(size_t)w * HIST_BINS + (size_t)log2_bin(n)]++;
}

/* Another communicator than MPI_COMM_WORLD, or a type the table does not hold: MPI is
 * asked (out of line, so that the common case below needs no stack frame). */
__attribute__((noinline)) static void send_asking(MPI_Comm comm, int dest, MPI_Count count,
                                                  MPI_Datatype type)
{
    int k = ct_monitor_in_collective != 0;
    uint64_t n = (uint64_t)(count > 0 ? count : 0) * (uint64_t)type_size(type);
    account_send(k, ct_monitor_level >= CT_MON_PEERS ? world_of(comm, dest) : -1, n);
}

void ct_monitor_count_send(MPI_Comm comm, int dest, MPI_Count count, MPI_Datatype type)
{
    if (ct_monitor_level < CT_MON_COUNT || dest < 0 || dest == MPI_PROC_NULL)
        return;
    int tsize = type_size_cached(type);
    if (tsize < 0 || comm != MPI_COMM_WORLD) {
        send_asking(comm, dest, count, type); /* a tail call */
        return;
    }
    account_send(ct_monitor_in_collective != 0, dest,
                 (uint64_t)(count > 0 ? count : 0) * (uint64_t)tsize);
}

/* ---- The receive side ---------------------------------------------------------- */

/* ranks: the communicator's world ranks as world_ranks() keeps them, NULL for
 * MPI_COMM_WORLD. */
static inline void count_recv(const int *ranks, int k, const MPI_Status *st)
{
    int src = st->MPI_SOURCE;
    if (src < 0 || src == MPI_PROC_NULL)
        return; /* from MPI_PROC_NULL: no message */
    MPI_Count n = status_bytes(st);
    total_rmsgs[k]++;
    total_rbytes[k] += (uint64_t)n;
    if (ct_monitor_level < CT_MON_PEERS)
        return;
    int w = src;
    if (ranks)
        w = src < ranks[0] ? ranks[1 + src] : -1;
    if (w < 0 || w >= world_size)
        return;
    rmsgs[k][w]++;
    rbytes[k][w] += (uint64_t)n;
}

/* A receive on another communicator than MPI_COMM_WORLD (out of line: see send_asking). */
__attribute__((noinline)) static void recv_translating(MPI_Comm comm, const MPI_Status *status)
{
    const int *ranks = NULL;
    if (ct_monitor_level >= CT_MON_PEERS && !(ranks = world_ranks(comm)))
        return;
    count_recv(ranks, ct_monitor_in_collective != 0, status);
}

void ct_monitor_recv(MPI_Comm comm, const MPI_Status *status)
{
    if (ct_monitor_level < CT_MON_COUNT)
        return;
    if (comm != MPI_COMM_WORLD) {
        recv_translating(comm, status); /* a tail call */
        return;
    }
    count_recv(NULL, ct_monitor_in_collective != 0, status);
}

/* Pending non-blocking receives: open addressing over PEND_SLOTS keys. A receive probes
 * at most PEND_PROBE slots from its hash, so a lookup reads a bounded run (two cache
 * lines) and a slot can be emptied on completion without tombstones. Key 0 is a free
 * slot: no MPICH handle nor Open MPI pointer is 0.
 *
 * A handle is reused by MPI as soon as its request completes, so with several threads
 * one key may sit in two slots for a moment: the completed receive's, not yet emptied
 * by its thread, and a new one's. Each entry carries a generation (0: being written),
 * and the wait family finds the slot before the call, while the handle is live: the
 * newest entry with that key is then the caller's, since any older one belongs to a
 * receive already completed. After the call the slot found is emptied, whatever was
 * posted with the same key meanwhile. */
enum { PEND_SLOTS = 4096, PEND_PROBE = 16 };
static _Atomic uintptr_t pend_key[PEND_SLOTS + PEND_PROBE];
static _Atomic uint64_t pend_gen[PEND_SLOTS + PEND_PROBE];
static const int *pend_ranks[PEND_SLOTS + PEND_PROBE];
static unsigned char pend_layer[PEND_SLOTS + PEND_PROBE];
static _Atomic uint64_t pend_next_gen = 1;
_Atomic int ct_monitor_pending;

static int still_pending(const void *ranks)
{
    for (size_t i = 0; i < PEND_SLOTS + PEND_PROBE; i++)
        if (atomic_load_explicit(&pend_key[i], memory_order_acquire) && pend_ranks[i] == ranks)
            return 1;
    return 0;
}

static uintptr_t req_key(MPI_Request req)
{
    uintptr_t key = 0;
    memcpy(&key, &req, sizeof req < sizeof key ? sizeof req : sizeof key);
    return key;
}

static size_t req_slot(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
    return (size_t)(h >> 52) & (PEND_SLOTS - 1);
}

void ct_monitor_post(MPI_Comm comm, MPI_Request req)
{
    if (ct_monitor_level < CT_MON_COUNT || req == MPI_REQUEST_NULL)
        return;
    const int *ranks = NULL;
    if (comm != MPI_COMM_WORLD && ct_monitor_level >= CT_MON_PEERS &&
        !(ranks = world_ranks(comm)))
        return;
    uintptr_t key = req_key(req);
    size_t h = req_slot(key);
    for (size_t i = h; i < h + PEND_PROBE; i++) {
        uintptr_t free_key = 0;
        if (atomic_load_explicit(&pend_key[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&pend_key[i], &free_key, key)) {
            pend_ranks[i] = ranks;
            pend_layer[i] = (unsigned char)(ct_monitor_in_collective != 0);
            atomic_store_explicit(
                &pend_gen[i], atomic_fetch_add_explicit(&pend_next_gen, 1, memory_order_relaxed),
                memory_order_release);
            atomic_fetch_add_explicit(&ct_monitor_pending, 1, memory_order_relaxed);
            return;
        }
    }
    untracked++;
}

long ct_monitor_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return -1;
    uintptr_t key = req_key(req);
    size_t h = req_slot(key);
    long best = -1;
    uint64_t best_gen = 0;
    for (size_t i = h; i < h + PEND_PROBE; i++)
        if (atomic_load_explicit(&pend_key[i], memory_order_acquire) == key) {
            uint64_t g = atomic_load_explicit(&pend_gen[i], memory_order_acquire);
            if (g > best_gen)
                best = (long)i, best_gen = g;
        }
    return best;
}

/* Empties slot (found for req by ct_monitor_find); 0 when it no longer held req. The
 * generation is taken first, by compare-and-swap: only one caller can win it, and the key
 * is freed last, so a new post can only claim the slot (and write its own generation)
 * once this entry is gone. */
static int take_at(long slot, MPI_Request req, const int **ranks, int *layer)
{
    uintptr_t key = req_key(req);
    if (slot < 0 || atomic_load_explicit(&pend_key[slot], memory_order_acquire) != key)
        return 0;
    uint64_t g = atomic_load_explicit(&pend_gen[slot], memory_order_acquire); /* its post */
    *ranks = pend_ranks[slot];
    *layer = pend_layer[slot];
    if (g == 0 || !atomic_compare_exchange_strong(&pend_gen[slot], &g, 0))
        return 0;
    atomic_store_explicit(&pend_key[slot], 0, memory_order_release);
    atomic_fetch_sub_explicit(&ct_monitor_pending, 1, memory_order_relaxed);
    return 1;
}

int ct_monitor_complete_at(long slot, MPI_Request req, const MPI_Status *status)
{
    const int *ranks;
    int layer;
    if (!take_at(slot, req, &ranks, &layer))
        return 0;
    int cancelled = 0;
    PMPI_Test_cancelled(status, &cancelled);
    if (!cancelled && ct_monitor_level >= CT_MON_COUNT)
        count_recv(ranks, layer, status);
    return 1;
}

void ct_monitor_forget(MPI_Request req)
{
    const int *ranks;
    int layer;
    take_at(ct_monitor_find(req), req, &ranks, &layer);
}

void ct_monitor_received(int layer, int peer, unsigned long long *m, unsigned long long *b)
{
    int ok = layer >= 0 && layer < 2 && peer >= 0 && peer < world_size && rmsgs[layer];
    *m = ok ? rmsgs[layer][peer] : 0;
    *b = ok ? rbytes[layer][peer] : 0;
}

/* The executor runs on the progress thread too: atomic, relaxed (only summed at the end). */
static _Atomic unsigned long long shm_written, shm_read;

void ct_monitor_count_shm(unsigned long long written, unsigned long long read)
{
    if (ct_profile_on && ct_profile_op > 0)
        ct_profile_shm(ct_profile_op - 1, written + read);
    if (ct_monitor_level < CT_MON_COUNT)
        return;
    if (written)
        atomic_fetch_add_explicit(&shm_written, written, memory_order_relaxed);
    if (read)
        atomic_fetch_add_explicit(&shm_read, read, memory_order_relaxed);
}

void ct_monitor_shm_bytes(unsigned long long *written, unsigned long long *read)
{
    *written = atomic_load(&shm_written);
    *read = atomic_load(&shm_read);
}

void ct_monitor_native(int op, long long b)
{
    if (ct_monitor_level < CT_MON_COUNT || op < 0 || op >= CT_NCOLL)
        return;
    native_calls[op]++;
    native_bytes[op] += b > 0 ? (uint64_t)b : 0;
}

void ct_monitor_time(unsigned long long ticks)
{
    /* inside colltune's collectives (and on the progress thread) the enclosing call is
     * timed already */
    if (ct_monitor_level >= CT_MON_COUNTERS && !ct_monitor_in_collective)
        mpi_ticks += ticks;
}

/* ---- The record ------------------------------------------------------------ */

static void write_matrix(FILE *f, const char *name, const uint64_t *all, int n, int stride,
                         int bins)
{
    fprintf(f, "\"%s\":[", name);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s[", r ? "," : "");
        for (int c = 0; c < stride; c++)
            fprintf(f, "%s%llu", c ? "," : "",
                    (unsigned long long)all[(size_t)r * (size_t)stride + (size_t)c]);
        fputc(']', f);
    }
    fputc(']', f);
    (void)bins;
}

static const char *out_path(void)
{
    const char *out = getenv("COLLTUNE_MONITOR_OUT");
    return out && *out ? out : "colltune-monitor.json";
}

/* The profile on with the monitor off: the monitor's file with the profile alone. */
static void write_profile_only(void)
{
    int rank = 0, n = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    if (rank != 0)
        return;
    const char *out = out_path();
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "colltune: profile: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    fprintf(f, "{\"schema\":\"colltune-monitor\",\"schema_version\":2,\"level\":\"off\","
               "\"ranks\":%d,", n);
    ct_profile_write_json(f);
    fprintf(f, "}\n");
    fclose(f);
    if (rename(tmp, out) != 0)
        fprintf(stderr, "colltune: profile: cannot write %s: %s\n", out, strerror(errno));
}

void ct_monitor_finish(void)
{
    pthread_mutex_lock(&retired_lock);
    for (size_t i = 0; i < nretired; i++)
        free(retired[i]);
    free(retired);
    retired = NULL;
    nretired = cap_retired = 0;
    pthread_mutex_unlock(&retired_lock);
    ct_profile_gather(); /* collective: every rank, whatever the monitor's level */
    if (ct_monitor_level == CT_MON_OFF) {
        if (ct_profile_on)
            write_profile_only();
        return;
    }
    double wall = PMPI_Wtime() - start_time;
    unsigned long long run_ticks = ct_monitor_ticks() - start_ticks;
    double mpi_seconds = run_ticks ? wall * ((double)mpi_ticks / (double)run_ticks) : 0;
    /* Per rank: scalars, then the matrices' rows. */
    enum { NEXTRA = 7, NSCALAR = 8 + NCOUNTERS + 2 * CT_NCOLL + NEXTRA };
    double scal[NSCALAR];
    long long counter[NCOUNTERS];
    for (int i = 0; i < NCOUNTERS; i++) {
        counter[i] = -1;
        if (perf_fd[i] >= 0 && read(perf_fd[i], &counter[i], sizeof counter[i]) !=
                                   (ssize_t)sizeof counter[i])
            counter[i] = -1;
    }
    long long energy = energy_start_uj >= 0 ? read_energy() - energy_start_uj : -1;
    scal[0] = wall;
    scal[1] = mpi_seconds;
    scal[2] = (double)total_msgs[0];
    scal[3] = (double)total_bytes[0];
    scal[4] = (double)total_msgs[1];
    scal[5] = (double)total_bytes[1];
    scal[6] = (double)energy;
    scal[7] = world_rank;
    for (int i = 0; i < NCOUNTERS; i++)
        scal[8 + i] = (double)counter[i];
    for (int i = 0; i < CT_NCOLL; i++) {
        scal[8 + NCOUNTERS + i] = (double)native_calls[i];
        scal[8 + NCOUNTERS + CT_NCOLL + i] = (double)native_bytes[i];
    }
    double *extra = scal + 8 + NCOUNTERS + 2 * CT_NCOLL;
    extra[0] = (double)total_rmsgs[0];
    extra[1] = (double)total_rbytes[0];
    extra[2] = (double)total_rmsgs[1];
    extra[3] = (double)total_rbytes[1];
    extra[4] = (double)(untracked + (uint64_t)atomic_load(&ct_monitor_pending));
    extra[5] = (double)atomic_load(&shm_written);
    extra[6] = (double)atomic_load(&shm_read);
    int n = world_size, root = world_rank == 0;
    double *all_scal = root ? malloc(sizeof(double) * NSCALAR * (size_t)n) : NULL;
    PMPI_Gather(scal, NSCALAR, MPI_DOUBLE, all_scal, NSCALAR, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    enum { NPARTS = 10 };
    uint64_t *rows[NPARTS] = {0};
    uint64_t *mine[NPARTS] = {msgs[0],   bytes[0],  msgs[1],   bytes[1], rmsgs[0],
                              rbytes[0], rmsgs[1], rbytes[1], hist[0],  hist[1]};
    int widths[NPARTS] = {n, n, n, n, n, n, n, n, n * HIST_BINS, n * HIST_BINS};
    int parts = ct_monitor_level >= CT_MON_SIZES ? 10 : ct_monitor_level >= CT_MON_PEERS ? 8 : 0;
    for (int k = 0; k < parts; k++) {
        rows[k] = root ? malloc(sizeof(uint64_t) * (size_t)widths[k] * (size_t)n) : NULL;
        PMPI_Gather(mine[k], widths[k], MPI_UINT64_T, rows[k], widths[k], MPI_UINT64_T, 0,
                    MPI_COMM_WORLD);
    }
    if (root) {
        const char *out = getenv("COLLTUNE_MONITOR_OUT");
        char tmp[4096];
        out = out && *out ? out : "colltune-monitor.json";
        snprintf(tmp, sizeof tmp, "%s.tmp", out);
        FILE *f = fopen(tmp, "w");
        if (!f) {
            fprintf(stderr, "colltune: monitor: cannot write %s: %s\n", tmp, strerror(errno));
        } else {
            static const char *const lv[] = {"off", "counters", "count", "peers", "sizes"};
            fprintf(f, "{\"schema\":\"colltune-monitor\",\"schema_version\":2,\"level\":\"%s\","
                       "\"ranks\":%d,\"histogram_bins\":%d,", lv[ct_monitor_level], n,
                    HIST_BINS);
            fprintf(f, "\"counters_unavailable\":");
            if (perf_fd[0] < 0)
                fprintf(f, "\"%s\",", perf_why);
            else
                fprintf(f, "null,");
            fprintf(f, "\"energy_unavailable\":");
            if (energy_start_uj < 0)
                fprintf(f, "\"%s\",", energy_why);
            else
                fprintf(f, "null,");
            fprintf(f, "\"per_rank\":[");
            for (int r = 0; r < n; r++) {
                const double *s = all_scal + (size_t)r * NSCALAR;
                fprintf(f, "%s{\"rank\":%d,\"wall_s\":%.6f,\"mpi_s\":%.6f,\"app_messages\":%.0f,"
                           "\"app_bytes\":%.0f,\"coll_messages\":%.0f,\"coll_bytes\":%.0f,"
                           "\"energy_uj\":%s", r ? "," : "", r, s[0], s[1], s[2], s[3], s[4],
                        s[5], s[6] >= 0 ? "" : "null");
                const double *x = s + 8 + NCOUNTERS + 2 * CT_NCOLL;
                if (s[6] >= 0)
                    fprintf(f, "%.0f", s[6]);
                for (int i = 0; i < NCOUNTERS; i++) {
                    fprintf(f, ",\"%s\":", counter_names[i]);
                    if (s[8 + i] >= 0)
                        fprintf(f, "%.0f", s[8 + i]);
                    else
                        fprintf(f, "null");
                }
                fprintf(f, ",\"recv_messages\":%.0f,\"recv_bytes\":%.0f,"
                           "\"coll_recv_messages\":%.0f,\"coll_recv_bytes\":%.0f,"
                           "\"untracked_receives\":%.0f,\"shm_written_bytes\":%.0f,"
                           "\"shm_read_bytes\":%.0f",
                        x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
                fprintf(f, ",\"native\":{");
                for (int i = 0, first = 1; i < CT_NCOLL; i++) {
                    double calls = s[8 + NCOUNTERS + i];
                    if (calls <= 0)
                        continue;
                    fprintf(f, "%s\"%s\":{\"calls\":%.0f,\"bytes\":%.0f}", first ? "" : ",",
                            ct_coll_name((ct_coll)i), calls, s[8 + NCOUNTERS + CT_NCOLL + i]);
                    first = 0;
                }
                fprintf(f, "}}");
            }
            fprintf(f, "]");
            static const char *const names[NPARTS] = {
                "messages",      "bytes",          "coll_messages",      "coll_bytes",
                "recv_messages", "recv_bytes",     "coll_recv_messages", "coll_recv_bytes",
                "histogram",     "coll_histogram"};
            for (int k = 0; k < parts; k++) {
                fputc(',', f);
                write_matrix(f, names[k], rows[k], n, widths[k], HIST_BINS);
            }
            if (ct_profile_on) {
                fputc(',', f);
                ct_profile_write_json(f);
            }
            fprintf(f, "}\n");
            fclose(f);
            if (rename(tmp, out) != 0)
                fprintf(stderr, "colltune: monitor: cannot write %s: %s\n", out,
                        strerror(errno));
        }
    }
    free(all_scal);
    for (int k = 0; k < NPARTS; k++)
        free(rows[k]);
    for (int i = 0; i < NCOUNTERS; i++)
        if (perf_fd[i] >= 0)
            close(perf_fd[i]);
    PMPI_Group_free(&world_group);
    ct_monitor_level = CT_MON_OFF;
}
