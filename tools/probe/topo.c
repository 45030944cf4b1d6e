#include "topo.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef CT_HAVE_HWLOC
#include <hwloc.h>
static hwloc_topology_t topology;
#endif
static int loaded;

int topo_init(const char **why)
{
    if (loaded)
        return 0;
#ifdef CT_HAVE_HWLOC
    if (hwloc_topology_init(&topology) < 0 || hwloc_topology_load(topology) < 0) {
        *why = "hwloc could not load the topology";
        return -1;
    }
#else
    (void)why;
#endif
    loaded = 1;
    return 0;
}

void topo_fini(void)
{
#ifdef CT_HAVE_HWLOC
    if (loaded)
        hwloc_topology_destroy(topology);
#endif
    loaded = 0;
}

int topo_can_bind(void)
{
#ifdef CT_HAVE_HWLOC
    const struct hwloc_topology_support *s = hwloc_topology_get_support(topology);
    return s->cpubind->set_thisthread_cpubind && s->cpubind->set_thisproc_cpubind;
#else
    return 0;
#endif
}

const char *topo_binder(void)
{
#ifdef CT_HAVE_HWLOC
    static char text[64];
    unsigned v = hwloc_get_api_version();
    snprintf(text, sizeof text, "hwloc %u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
    return text;
#else
    return "none (built without hwloc)";
#endif
}

#ifdef CT_HAVE_HWLOC
static int first_pu(hwloc_obj_t o)
{
    return (int)hwloc_bitmap_first(o->cpuset);
}

/* The cores of the topology; machines whose hwloc shows no Core objects use PUs. */
static hwloc_obj_type_t core_type(void)
{
    return hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
                                                                  : HWLOC_OBJ_PU;
}

static hwloc_obj_t core_obj(int id)
{
    hwloc_obj_type_t t = core_type();
    int n = hwloc_get_nbobjs_by_type(topology, t);
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topology, t, (unsigned)i);
        if (first_pu(o) == id)
            return o;
    }
    return NULL;
}
#endif

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int topo_cores(int *ids, int max)
{
    int n = 0;
#ifdef CT_HAVE_HWLOC
    hwloc_obj_type_t t = core_type();
    int total = hwloc_get_nbobjs_by_type(topology, t);
    for (int i = 0; i < total && n < max; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topology, t, (unsigned)i);
        if (!hwloc_bitmap_iszero(o->cpuset))
            ids[n++] = first_pu(o);
    }
#else
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < online && n < max; i++)
        ids[n++] = (int)i;
#endif
    qsort(ids, (size_t)n, sizeof *ids, cmp_int);
    return n;
}

int topo_bind_core(int id, int thread, const char **why)
{
#ifdef CT_HAVE_HWLOC
    if (!topo_can_bind()) {
        *why = "hwloc cannot bind on this system";
        return -1;
    }
    hwloc_obj_t o = core_obj(id);
    if (!o) {
        *why = "no such core in the topology";
        return -1;
    }
    /* The whole core (all its PUs), then one PU of it so the thread stays put. */
    hwloc_bitmap_t set = hwloc_bitmap_dup(o->cpuset);
    hwloc_bitmap_singlify(set);
    int rc = hwloc_set_cpubind(topology, set,
                               HWLOC_CPUBIND_STRICT |
                                   (thread ? HWLOC_CPUBIND_THREAD : HWLOC_CPUBIND_PROCESS));
    if (rc < 0)
        rc = hwloc_set_cpubind(topology, set,
                               thread ? HWLOC_CPUBIND_THREAD : HWLOC_CPUBIND_PROCESS);
    int err = errno;
    hwloc_bitmap_free(set);
    if (rc < 0) {
        static _Thread_local char msg[160];
        snprintf(msg, sizeof msg, "binding to core %d refused: %s", id, strerror(err));
        *why = msg;
        return -1;
    }
    return 0;
#else
    (void)id;
    (void)thread;
    *why = "built without hwloc: threads and ranks are not bound";
    return -1;
#endif
}

void topo_current_cpus(char *buf, size_t len)
{
    cpu_set_t set;
    buf[0] = 0;
    if (len == 0 || sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    size_t used = 0;
    for (int c = 0; c < CPU_SETSIZE && used + 16 < len; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        used += (size_t)snprintf(buf + used, len - used, used ? ",%d" : "%d", c);
        if (e > c)
            used += (size_t)snprintf(buf + used, len - used, "-%d", e);
        c = e;
    }
}

#ifdef CT_HAVE_HWLOC
static const char *cache_type(hwloc_obj_t o)
{
    switch (o->attr->cache.type) {
    case HWLOC_OBJ_CACHE_DATA:
        return "Data";
    case HWLOC_OBJ_CACHE_INSTRUCTION:
        return "Instruction";
    default:
        return "Unified";
    }
}

/* The cores whose first PU lies in `set`, as a JSON list. */
static void print_cores_in(FILE *out, hwloc_const_cpuset_t set)
{
    int ids[CT_MAX_CORES];
    int n = topo_cores(ids, CT_MAX_CORES), first = 1;
    fputc('[', out);
    for (int i = 0; i < n; i++)
        if (hwloc_bitmap_isset(set, (unsigned)ids[i])) {
            fprintf(out, first ? "%d" : ",%d", ids[i]);
            first = 0;
        }
    fputc(']', out);
}
#endif

void topo_print_json(FILE *out)
{
    int ids[CT_MAX_CORES];
    int n = topo_cores(ids, CT_MAX_CORES);
    fprintf(out, "{\"binder\":\"%s\",\"can_bind\":%s,\"page_size\":%ld,\"cores\":[",
            topo_binder(), topo_can_bind() ? "true" : "false", sysconf(_SC_PAGESIZE));
    for (int i = 0; i < n; i++)
        fprintf(out, i ? ",%d" : "%d", ids[i]);
    fputs("],\"caches\":[", out);
#ifdef CT_HAVE_HWLOC
    int first = 1;
    for (int depth = 0; depth < hwloc_topology_get_depth(topology); depth++) {
        int count = hwloc_get_nbobjs_by_depth(topology, depth);
        for (int i = 0; i < count; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(topology, depth, (unsigned)i);
            if (!hwloc_obj_type_is_cache(o->type))
                continue;
            fprintf(out,
                    "%s{\"level\":%u,\"type\":\"%s\",\"size_bytes\":%llu,\"line_bytes\":%u,"
                    "\"associativity\":%d,\"cores\":",
                    first ? "" : ",", o->attr->cache.depth, cache_type(o),
                    (unsigned long long)o->attr->cache.size, o->attr->cache.linesize,
                    o->attr->cache.associativity);
            print_cores_in(out, o->cpuset);
            fputc('}', out);
            first = 0;
        }
    }
#endif
    fputs("]}\n", out);
}

int topo_export_xml(const char *path, const char *name, int n, const int *ids,
                    const double *latency_ns, const char **why)
{
#ifdef CT_HAVE_HWLOC
#if HWLOC_API_VERSION >= 0x00020500
    hwloc_obj_t *objs = calloc((size_t)n, sizeof *objs);
    hwloc_uint64_t *values = calloc((size_t)n * (size_t)n, sizeof *values);
    if (!objs || !values) {
        free(objs);
        free(values);
        *why = "out of memory";
        return -1;
    }
    for (int i = 0; i < n; i++) {
        objs[i] = hwloc_get_pu_obj_by_os_index(topology, (unsigned)ids[i]);
        if (!objs[i]) {
            free(objs);
            free(values);
            *why = "a measured core is not in the topology";
            return -1;
        }
    }
    for (int i = 0; i < n * n; i++)
        values[i] = latency_ns[i] > 0 ? (hwloc_uint64_t)(latency_ns[i] + 0.5) : 0;
    hwloc_distances_add_handle_t h = hwloc_distances_add_create(
        topology, name, HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
    int rc = h ? hwloc_distances_add_values(topology, h, (unsigned)n, objs, values, 0) : -1;
    if (rc == 0)
        rc = hwloc_distances_add_commit(topology, h, 0);
    free(objs);
    free(values);
    if (rc < 0) {
        *why = "hwloc refused the distances matrix";
        return -1;
    }
    if (hwloc_topology_export_xml(topology, path, 0) < 0) {
        *why = "hwloc could not write the XML file";
        return -1;
    }
    return 0;
#else
    (void)path; (void)name; (void)n; (void)ids; (void)latency_ns;
    *why = "hwloc older than 2.5 cannot add a distances matrix";
    return -1;
#endif
#else
    (void)path;
    (void)name;
    (void)n;
    (void)ids;
    (void)latency_ns;
    *why = "built without hwloc: no XML topology export";
    return -1;
#endif
}
