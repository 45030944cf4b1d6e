#include "hwcount.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int ct_hwcount_open(uint64_t config, const char *name, int disabled, int inherit, char *why,
                    size_t whylen)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = disabled ? 1 : 0;
    a.inherit = inherit ? 1 : 0;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0 && why && whylen) {
        int err = errno, paranoid = -99;
        FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
        if (f) {
            if (fscanf(f, "%d", &paranoid) != 1)
                paranoid = -99;
            fclose(f);
        }
        snprintf(why, whylen,
                 "perf_event_open(%s): %s (perf_event_paranoid %d; a VM may expose no "
                 "hardware counters)", name, strerror(err), paranoid);
    }
    return fd;
}
