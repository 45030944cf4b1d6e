/*
 * Hardware counters of this process through perf_event_open (user space only),
 * shared by the message monitor and the benchmark suite (tools/suite).
 */
#ifndef CT_HWCOUNT_H
#define CT_HWCOUNT_H

#include <stddef.h>
#include <stdint.h>

/* Opens one PERF_TYPE_HARDWARE counter (config: PERF_COUNT_HW_*) counting this
 * process from now on (disabled: until PERF_EVENT_IOC_ENABLE; inherit: its
 * threads created later too). Returns the descriptor, or -1 with the reason in
 * why (errno, the kernel's perf_event_paranoid, and that a VM may expose no
 * counters). */
int ct_hwcount_open(uint64_t config, const char *name, int disabled, int inherit, char *why,
                    size_t whylen);

#endif
