/*
 * ct_probe: the machine probe's measurements that need no MPI (run by `colltune probe`).
 *
 *   ct_probe topo
 *       the topology hwloc sees (cores, caches and the cores sharing each), as JSON
 *   ct_probe traverse --sets "0;0,1" --sizes B,B,... [--min-accesses N] [--reps R]
 *       Servet's cache traversal (mcalibrator): for each size and each set of cores, every
 *       core of the set (one thread each, bound to it, all started together) walks its own
 *       array of that size with a 1 KiB stride; the next position is read from the array
 *       itself, so neither the compiler nor a prefetcher can run ahead. Pages are visited
 *       in a random order and the 1 KiB slots of a page in a random order (a walk in address
 *       order lets today's prefetchers fetch ahead: 2 ns an access at 64 MiB here), a cycle
 *       walked twice to warm up, then R short repeats of N accesses each along it. Prints
 *       per core the nanoseconds per access (minimum and median over the repeats): on a
 *       busy machine most repeats are disturbed, the minimum is the undisturbed one.
 *   ct_probe copy --sets "0;0,1" --bytes B [--reps R]
 *       copy bandwidth: every core of a set copies its own array of B bytes into another
 *       at the same time; GB/s counted as STREAM does (bytes read + bytes written).
 *   ct_probe xml --cores 0,1 --latency-ns v00,v01,v10,v11 --out FILE [--name NAME]
 *       the topology as hwloc XML with the measured latencies as a distances matrix.
 *
 * Results are JSON Lines on stdout; "progress DONE TOTAL" lines and warnings on stderr.
 * Binding is never fatal: a refused binding is reported in the result ("bound": false, and
 * "bind_error") and the measurement goes on unbound.
 */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"
#include "topo.h"

#define SLOT 1024 /* the traversal stride */
#define MAX_SET 1024

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* xorshift64*: a fixed seed per thread, so a run is reproducible. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void shuffle(size_t *v, size_t n, uint64_t *seed)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rnd(seed) % i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int huge_pages; /* --huge: transparent huge pages instead of base pages */

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#if defined(MADV_NOHUGEPAGE) && defined(MADV_HUGEPAGE)
    /* Base pages, as the probabilistic cache model assumes (page size = sysconf's). */
    madvise(p, bytes, huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
    return p;
}

/* Buffers kept per core between the sets of one command, so that a core measured in many
 * pairs builds its chain (or fills its copy arrays) once. Only the thread of that core
 * touches its entry, and the sets run one after the other. */
typedef struct kept {
    size_t bytes;
    char *a, *b;
} kept;
static kept keep[CT_MAX_CORES];

static kept *kept_for(int cpu, size_t bytes, int two, int *fresh)
{
    kept *k = &keep[cpu >= 0 && cpu < CT_MAX_CORES ? cpu : 0];
    *fresh = 0;
    if (k->a && k->bytes == bytes && (!two || k->b))
        return k;
    if (k->a)
        munmap(k->a, k->bytes);
    if (k->b)
        munmap(k->b, k->bytes);
    k->a = map(bytes);
    k->b = two ? map(bytes) : NULL;
    k->bytes = bytes;
    *fresh = 1;
    if (!k->a || (two && !k->b)) {
        if (k->a)
            munmap(k->a, bytes);
        if (k->b)
            munmap(k->b, bytes);
        k->a = k->b = NULL;
        return NULL;
    }
    return k;
}

/* ---------------------------------------------------------------- arguments */

static int parse_list(const char *text, long long *out, int max)
{
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno)
            return -1;
        if (*end == 'K' || *end == 'k')
            v <<= 10, end++;
        else if (*end == 'M' || *end == 'm')
            v <<= 20, end++;
        else if (*end == 'G' || *end == 'g')
            v <<= 30, end++;
        out[n++] = v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        p = end;
    }
    return n;
}

/* The sets of cores that run at once, one measurement each; as many as the caller gives
 * (every pair of a many-core machine is thousands). */
typedef struct cpuset_list {
    int n;
    int *size;
    int **cpu;
} cpuset_list;

static void free_sets(cpuset_list *sets)
{
    for (int i = 0; i < sets->n; i++)
        free(sets->cpu[i]);
    free(sets->cpu);
    free(sets->size);
    memset(sets, 0, sizeof *sets);
}

/* "0;0,1;2" -> sets {0}, {0,1}, {2}; -1 on a malformed list or no memory. */
static int parse_sets(const char *text, cpuset_list *sets)
{
    int cap = 1;
    for (const char *c = text; *c; c++)
        cap += *c == ';';
    char *copy = strdup(text), *save = NULL;
    memset(sets, 0, sizeof *sets);
    sets->size = calloc((size_t)cap, sizeof *sets->size);
    sets->cpu = calloc((size_t)cap, sizeof *sets->cpu);
    long long *v = malloc(MAX_SET * sizeof *v);
    int ok = copy && sets->size && sets->cpu && v;
    for (char *tok = ok ? strtok_r(copy, ";", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ";", &save)) {
        int k = parse_list(tok, v, MAX_SET);
        int *cpus = k > 0 ? malloc((size_t)k * sizeof *cpus) : NULL;
        if (!cpus) {
            ok = 0;
            break;
        }
        for (int i = 0; i < k; i++)
            cpus[i] = (int)v[i];
        sets->cpu[sets->n] = cpus;
        sets->size[sets->n++] = k;
    }
    free(v);
    free(copy);
    if (!ok) {
        free_sets(sets);
        return -1;
    }
    return sets->n;
}

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return def;
}

/* ---------------------------------------------------------------- threads */

typedef struct worker {
    int cpu;
    int bound;
    const char *bind_error;
    pthread_barrier_t *start;
    /* traversal */
    size_t bytes;
    long long min_accesses;
    int reps;
    /* results */
    double best, med;
    int failed;
    uint64_t sink;
} worker;

static void bind_self(worker *w)
{
    const char *why = NULL;
    w->bound = topo_bind_core(w->cpu, 1, &why) == 0;
    w->bind_error = w->bound ? NULL : why;
}

/* A cyclic chain through every 1 KiB slot of buf: pages in a random order, the slots of
 * one page in a random order. Each slot's first word holds the offset of the next slot. */
static void build_chain(char *buf, size_t bytes, uint64_t seed)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (page < SLOT || page % SLOT)
        page = SLOT;
    size_t npages = (bytes + page - 1) / page, per = page / SLOT;
    size_t *order = malloc(npages * sizeof *order), slots[64];
    for (size_t i = 0; i < npages; i++)
        order[i] = i;
    shuffle(order, npages, &seed);
    size_t first = SIZE_MAX, prev = SIZE_MAX;
    for (size_t i = 0; i < npages; i++) {
        size_t n = 0;
        for (size_t s = 0; s < per && s < 64; s++) {
            size_t off = order[i] * page + s * SLOT;
            if (off + sizeof(size_t) <= bytes)
                slots[n++] = off;
        }
        shuffle(slots, n, &seed);
        for (size_t s = 0; s < n; s++) {
            if (prev == SIZE_MAX)
                first = slots[s];
            else
                *(size_t *)(buf + prev) = slots[s];
            prev = slots[s];
        }
    }
    *(size_t *)(buf + prev) = first;
    free(order);
}

static size_t walk(const char *buf, size_t start, long long steps)
{
    size_t j = start;
    long long i = 0;
    for (; i + 8 <= steps; i += 8) {
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
        j = *(const size_t *)(buf + j);
    }
    for (; i < steps; i++)
        j = *(const size_t *)(buf + j);
    return j;
}

static void *traverse_thread(void *arg)
{
    worker *w = arg;
    bind_self(w);
    int fresh;
    kept *k = kept_for(w->cpu, w->bytes, 0, &fresh);
    char *buf = k ? k->a : NULL;
    if (!buf)
        w->failed = 1;
    else if (fresh)
        build_chain(buf, w->bytes, 0x9E3779B97F4A7C15ULL ^ (uint64_t)w->bytes ^ (uint64_t)w->cpu);
    pthread_barrier_wait(w->start);
    if (w->failed)
        return NULL;
    long long slots = (long long)(w->bytes / SLOT);
    if (slots < 1)
        slots = 1;
    /* Short repeats, many of them, continuing along the cycle: the minimum is a repeat
     * that nothing (another process, an interrupt) disturbed. */
    long long steps = w->min_accesses;
    double t[256];
    int reps = w->reps > 256 ? 256 : w->reps;
    size_t j = walk(buf, 0, slots * 2); /* warm up: caches and TLB */
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        j = walk(buf, j, steps);
        t[r] = (now_ns() - t0) / (double)steps;
    }
    w->sink += j;
    w->best = t[0];
    for (int r = 1; r < reps; r++)
        if (t[r] < w->best)
            w->best = t[r];
    w->med = ct_median(t, reps);
    return NULL;
}

typedef void *(*thread_fn)(void *);

static int run_set(int n, worker *w, thread_fn fn)
{
    pthread_barrier_t start;
    pthread_t tid[MAX_SET];
    pthread_barrier_init(&start, NULL, (unsigned)n);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        w[i].start = &start;
        if (pthread_create(&tid[i], NULL, fn, &w[i]) != 0) {
            fprintf(stderr, "ct_probe: cannot start a thread\n");
            exit(1);
        }
    }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < n; i++)
        rc |= w[i].failed;
    return rc;
}

static void print_bind(const worker *w, int n)
{
    int all = 1;
    for (int i = 0; i < n; i++)
        all &= w[i].bound;
    printf(",\"bound\":%s", all ? "true" : "false");
    for (int i = 0; i < n; i++)
        if (!w[i].bound) {
            printf(",\"bind_error\":\"%s\"", w[i].bind_error ? w[i].bind_error : "?");
            break;
        }
}

/* ,"key":[v0,v1,...] with each worker's best (or median) figure. */
static void print_figures(const char *key, const worker *w, int n, int median)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf(i ? ",%.4f" : "%.4f", median ? w[i].med : w[i].best);
    printf("]");
}

static void print_cpus(const worker *w, int n)
{
    printf("\"cpus\":[");
    for (int i = 0; i < n; i++)
        printf(i ? ",%d" : "%d", w[i].cpu);
    printf("]");
}

static int cmd_traverse(int argc, char **argv)
{
    cpuset_list sets;
    long long sizes[4096];
    const char *s = opt(argc, argv, "--sets", "0"), *z = opt(argc, argv, "--sizes", NULL);
    int nsizes = z ? parse_list(z, sizes, 4096) : -1;
    if (parse_sets(s, &sets) <= 0 || nsizes <= 0) {
        fprintf(stderr, "ct_probe traverse: need --sets \"0;0,1\" and --sizes B,B,...\n");
        free_sets(&sets);
        return 2;
    }
    long long min_acc = atoll(opt(argc, argv, "--min-accesses", "4000"));
    huge_pages = atoi(opt(argc, argv, "--huge", "0"));
    int reps = atoi(opt(argc, argv, "--reps", "5"));
    if (reps < 1)
        reps = 1;
    int total = nsizes * sets.n, done = 0, rc = 0;
    for (int k = 0; k < nsizes; k++)
        for (int si = 0; si < sets.n; si++) {
            worker w[MAX_SET];
            int n = sets.size[si];
            memset(w, 0, sizeof w);
            for (int i = 0; i < n; i++) {
                w[i].cpu = sets.cpu[si][i];
                w[i].bytes = (size_t)sizes[k];
                w[i].min_accesses = min_acc;
                w[i].reps = reps;
            }
            int failed = run_set(n, w, traverse_thread);
            printf("{\"size\":%lld,", sizes[k]);
            print_cpus(w, n);
            if (failed) {
                printf(",\"error\":\"cannot allocate %lld bytes per core\"}\n", sizes[k]);
                rc = 1;
            } else {
                print_figures("ns", w, n, 0);
                print_figures("ns_median", w, n, 1);
                print_bind(w, n);
                printf("}\n");
            }
            fflush(stdout);
            fprintf(stderr, "progress %d %d\n", ++done, total);
        }
    free_sets(&sets);
    return rc;
}

/* ---------------------------------------------------------------- copy bandwidth */

static void *copy_thread(void *arg)
{
    worker *w = arg;
    bind_self(w);
    int fresh;
    kept *k = kept_for(w->cpu, w->bytes, 1, &fresh);
    char *src = k ? k->a : NULL, *dst = k ? k->b : NULL;
    if (!k)
        w->failed = 1;
    else if (fresh) {
        memset(src, 1, w->bytes);
        memset(dst, 2, w->bytes);
    }
    pthread_barrier_wait(w->start);
    if (!w->failed) {
        double t[64];
        int reps = w->reps > 64 ? 64 : w->reps;
        memcpy(dst, src, w->bytes);
        for (int r = 0; r < reps; r++) {
            double t0 = now_ns();
            memcpy(dst, src, w->bytes);
            t[r] = now_ns() - t0;
            w->sink += (uint64_t)dst[(size_t)r * 4096 % w->bytes];
        }
        /* GB/s, STREAM's way: bytes read plus bytes written. */
        double best = t[0];
        for (int r = 1; r < reps; r++)
            if (t[r] < best)
                best = t[r];
        w->best = 2.0 * (double)w->bytes / best;
        w->med = 2.0 * (double)w->bytes / ct_median(t, reps);
    }
    return NULL;
}

static int cmd_copy(int argc, char **argv)
{
    cpuset_list sets;
    const char *s = opt(argc, argv, "--sets", "0");
    long long bytes = 0;
    if (parse_sets(s, &sets) <= 0 || parse_list(opt(argc, argv, "--bytes", "0"), &bytes, 1) != 1
        || bytes < 4096) {
        fprintf(stderr, "ct_probe copy: need --sets \"0;0,1\" and --bytes B\n");
        free_sets(&sets);
        return 2;
    }
    int reps = atoi(opt(argc, argv, "--reps", "5")), rc = 0;
    for (int si = 0; si < sets.n; si++) {
        worker w[MAX_SET];
        int n = sets.size[si];
        memset(w, 0, sizeof w);
        for (int i = 0; i < n; i++) {
            w[i].cpu = sets.cpu[si][i];
            w[i].bytes = (size_t)bytes;
            w[i].reps = reps < 1 ? 1 : reps;
        }
        int failed = run_set(n, w, copy_thread);
        printf("{\"bytes\":%lld,", bytes);
        print_cpus(w, n);
        if (failed) {
            printf(",\"error\":\"cannot allocate 2 x %lld bytes per core\"}\n", bytes);
            rc = 1;
        } else {
            print_figures("gbps", w, n, 1);
            print_figures("gbps_best", w, n, 0);
            print_bind(w, n);
            printf("}\n");
        }
        fflush(stdout);
        fprintf(stderr, "progress %d %d\n", si + 1, sets.n);
    }
    free_sets(&sets);
    return rc;
}

/* ---------------------------------------------------------------- xml */

static int cmd_xml(int argc, char **argv)
{
    long long ids[CT_MAX_CORES];
    const char *c = opt(argc, argv, "--cores", NULL), *l = opt(argc, argv, "--latency-ns", NULL);
    const char *out = opt(argc, argv, "--out", NULL);
    int n = c ? parse_list(c, ids, CT_MAX_CORES) : -1;
    if (n <= 0 || !l || !out) {
        fprintf(stderr, "ct_probe xml: need --cores, --latency-ns and --out\n");
        return 2;
    }
    double *lat = calloc((size_t)n * (size_t)n, sizeof *lat);
    int *cid = calloc((size_t)n, sizeof *cid);
    char *copy = strdup(l), *save = NULL;
    int k = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && k < n * n;
         tok = strtok_r(NULL, ",", &save))
        lat[k++] = strtod(tok, NULL);
    free(copy);
    if (k != n * n) {
        fprintf(stderr, "ct_probe xml: --latency-ns needs %d values, got %d\n", n * n, k);
        free(lat);
        free(cid);
        return 2;
    }
    for (int i = 0; i < n; i++)
        cid[i] = (int)ids[i];
    const char *why = NULL;
    int rc = topo_export_xml(out, opt(argc, argv, "--name", "colltune MPI latency (ns)"), n,
                             cid, lat, &why);
    free(lat);
    free(cid);
    if (rc < 0) {
        fprintf(stderr, "ct_probe xml: %s\n", why);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ct_probe topo|traverse|copy|xml [options]\n");
        return 2;
    }
    const char *why = NULL;
    if (topo_init(&why) < 0) {
        fprintf(stderr, "ct_probe: %s\n", why);
        return 1;
    }
    int rc;
    if (!strcmp(argv[1], "topo")) {
        topo_print_json(stdout);
        rc = 0;
    } else if (!strcmp(argv[1], "traverse"))
        rc = cmd_traverse(argc, argv);
    else if (!strcmp(argv[1], "copy"))
        rc = cmd_copy(argc, argv);
    else if (!strcmp(argv[1], "xml"))
        rc = cmd_xml(argc, argv);
    else {
        fprintf(stderr, "ct_probe: unknown command '%s'\n", argv[1]);
        rc = 2;
    }
    topo_fini();
    return rc;
}
