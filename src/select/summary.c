/* The finalize summary (select.h): what served this process's calls, counted as they end,
 * and said once by rank 0 at MPI_Finalize. The counts are relaxed atomic increments into
 * static arrays: no lock and no allocation on a call's path, and a program that calls
 * from several threads still counts every call. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "coll/registry.h"
#include "select.h"
#include "table.h"

enum { MAX_ALGS = 256 }; /* the registry holds fewer (checked where counted) */

static unsigned long long served[MAX_ALGS];
/* A segmented algorithm's segment size: 0 none seen yet, -1 several (the table chose
 * different ones at different sizes). */
static long long served_seg[MAX_ALGS];
static unsigned long long gone_native[CT_NCOLL][CT_NWHY];

static _Thread_local ct_native_why refusal = CT_NWHY; /* CT_NWHY: none noted */

void ct_select_count_served(ct_coll coll, const ct_algorithm_info *alg, int has_segsize,
                            long long segsize)
{
    int i = alg ? ct_registry_index(alg) : -1;
    if (i < 0 || i >= MAX_ALGS || (int)coll < 0 || coll >= CT_NCOLL)
        return;
    __atomic_fetch_add(&served[i], 1, __ATOMIC_RELAXED);
    if (!has_segsize || segsize <= 0)
        return;
    long long seen = __atomic_load_n(&served_seg[i], __ATOMIC_RELAXED);
    if (seen == segsize || seen == -1)
        return;
    if (seen == 0 && __atomic_compare_exchange_n(&served_seg[i], &seen, segsize, 0,
                                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    if (seen != segsize) /* another size was there first */
        __atomic_store_n(&served_seg[i], -1, __ATOMIC_RELAXED);
}

void ct_select_count_native(ct_coll coll, ct_native_why why)
{
    if ((int)coll < 0 || coll >= CT_NCOLL || (int)why < 0 || why >= CT_NWHY)
        return;
    __atomic_fetch_add(&gone_native[coll][why], 1, __ATOMIC_RELAXED);
}

const char *ct_select_why_text(ct_native_why why)
{
    switch (why) {
    case CT_WHY_NOT_CHOSEN:
        return "not forced, no table";
    case CT_WHY_NO_ENTRY:
        return "not in the table";
    case CT_WHY_TABLE_NATIVE:
        return "the table says native";
    case CT_WHY_SIZES_DIFFER:
        return "sizes differ between ranks";
    case CT_WHY_NONCOMMUTATIVE:
        return "non-commutative op";
    case CT_WHY_INTER:
        return "inter-communicator";
    case CT_WHY_ARGS:
        return "arguments colltune does not take";
    case CT_WHY_FORM:
        return "form not served";
    case CT_WHY_SHM_ELEMENT:
        return "element too large for the shared segment";
    case CT_WHY_NOT_ONE_NODE:
        return "ranks on several nodes";
    case CT_WHY_LARGE_COUNT:
        return "large count";
    default:
        return "?";
    }
}

void ct_select_refused(ct_native_why why)
{
    refusal = why;
}

ct_native_why ct_select_take_refusal(void)
{
    ct_native_why why = refusal;
    refusal = CT_NWHY;
    return why == CT_NWHY ? CT_WHY_ARGS : why; /* a refusal not noted: its arguments */
}

/* One line on stderr in one write, so that it does not mix with other ranks' output. */
static void say(const char *line, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, line, n);
        if (w <= 0)
            return;
        line += w;
        n -= (size_t)w;
    }
}

/* Appends to buf (used so far *n) without overflowing: a cut line is still one line. */
static void add(char *buf, size_t len, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    if (*n >= len - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (m > 0)
        *n = *n + (size_t)m < len - 1 ? *n + (size_t)m : len - 1;
}

void ct_select_summary(void)
{
    static int said;
    if (ct_select_log_level() == CT_LOG_QUIET || !ct_select_active() ||
        __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0)
        return;
    char line[2048];
    size_t n = 0;
    if (ct_table_loaded()) {
        char path[512], mpi[160];
        ct_table_describe(path, sizeof path, mpi, sizeof mpi);
        add(line, sizeof line, &n, "colltune: table %s (%s, %d ranks)\n", path, mpi, size);
        say(line, n);
    }
    n = 0;
    for (int c = 0; c < CT_NCOLL; c++) {
        const char *forced = ct_select_forced_text((ct_coll)c);
        if (forced)
            add(line, sizeof line, &n, "%sCOLLTUNE_%s_ALGORITHM=%s", n ? ", " : "colltune: forced ",
                ct_select_upper_name((ct_coll)c), forced);
    }
    if (n) {
        add(line, sizeof line, &n, " (%d ranks)\n", size);
        say(line, n);
    }
    int any = 0;
    for (int c = 0; c < CT_NCOLL; c++) {
        unsigned long long total = 0;
        for (int i = 0; i < ct_algorithm_count() && i < MAX_ALGS; i++)
            if ((int)ct_algorithm_get(i)->coll == c)
                total += __atomic_load_n(&served[i], __ATOMIC_RELAXED);
        for (int w = 0; w < CT_NWHY; w++)
            total += __atomic_load_n(&gone_native[c][w], __ATOMIC_RELAXED);
        if (!total)
            continue;
        n = 0;
        any = 1;
        add(line, sizeof line, &n, "colltune: %s %llu call%s:", ct_coll_name((ct_coll)c), total,
            total == 1 ? "" : "s");
        const char *sep = " ";
        for (int i = 0; i < ct_algorithm_count() && i < MAX_ALGS; i++) {
            const ct_algorithm_info *a = ct_algorithm_get(i);
            unsigned long long k = __atomic_load_n(&served[i], __ATOMIC_RELAXED);
            if ((int)a->coll != c || !k)
                continue;
            add(line, sizeof line, &n, "%s%llu %s", sep, k, a->name);
            long long seg = __atomic_load_n(&served_seg[i], __ATOMIC_RELAXED);
            if (seg > 0)
                add(line, sizeof line, &n, " (segsize %lld)", seg);
            else if (seg < 0)
                add(line, sizeof line, &n, " (several segment sizes)");
            sep = ", ";
        }
        for (int w = 0; w < CT_NWHY; w++) {
            unsigned long long k = __atomic_load_n(&gone_native[c][w], __ATOMIC_RELAXED);
            if (k) {
                add(line, sizeof line, &n, "%s%llu native (%s)", sep, k,
                    ct_select_why_text((ct_native_why)w));
                sep = ", ";
            }
        }
        add(line, sizeof line, &n, "\n");
        say(line, n);
    }
    if (!any) {
        static const char none[] = "colltune: no collective calls on rank 0\n";
        say(none, sizeof none - 1);
    }
}
