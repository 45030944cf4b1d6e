/*
 * Topology and binding for the machine probe (tools/probe), over hwloc when it was found at
 * build time (CT_HAVE_HWLOC), else a plain list of the online CPUs and no binding at all.
 *
 * A "core" is identified by the OS index of its first processing unit, the number Linux
 * shows in /sys/devices/system/cpu/cpuN and in shared_cpu_list.
 */
#ifndef CT_PROBE_TOPO_H
#define CT_PROBE_TOPO_H

#include <stddef.h>
#include <stdio.h>

#define CT_MAX_CORES 4096

/* Loads the topology once per process. Returns 0, or -1 with a message in *why. */
int topo_init(const char **why);
void topo_fini(void);

/* 1 when this build can bind threads and processes (hwloc present and supports it). */
int topo_can_bind(void);
/* "hwloc X.Y.Z" or "none (built without hwloc)". */
const char *topo_binder(void);

/* Core ids of this machine (first PU of each core), ascending; returns their number. */
int topo_cores(int *ids, int max);

/* Binds the calling thread (thread != 0) or the whole process to core `id`.
 * Returns 0, or -1 with a static message in *why (binding unsupported or refused). */
int topo_bind_core(int id, int thread, const char **why);

/* The CPUs the calling thread may run on now, as "0,2-3" into buf. */
void topo_current_cpus(char *buf, size_t len);

/* The topology as JSON (cores, caches with sharing, page size, hwloc version). */
void topo_print_json(FILE *out);

/* Writes the topology as hwloc XML with `n` x `n` latencies (nanoseconds) between the
 * cores `ids` as a distances matrix named `name`. Returns 0, or -1 with *why. */
int topo_export_xml(const char *path, const char *name, int n, const int *ids,
                    const double *latency_ns, const char **why);

#endif
