/* The drop-in's shared helpers (dropin.h). */
#include "dropin.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "monitor/monitor.h"


void ct_dropin_count_native(ct_coll coll, MPI_Comm comm, const char *call, ct_native_why why)
{
    ct_select_count_native(coll, why);
    if (ct_monitor_level)
        ct_monitor_native(coll, 0);
    if (ct_select_log_level() < CT_LOG_DEBUG)
        return;
    int rank = -1, size = 0;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    char line[200];
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d %s 0 bytes -> native (%s)\n", rank,
                     size, call, ct_select_why_text(why));
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

ct_native_why ct_dropin_outcome(ct_coll coll, int native, const ct_choice *choice,
                                const char *ran, const ct_options *opts)
{
    if (native) {
        ct_select_count_native(coll, choice->why);
        return choice->why;
    }
    /* ran is the registry's own string of the algorithm that ran (the engine finds the one
     * it was given by address): the same pointer as the choice's name on the common path,
     * and a string compare only otherwise. */
    if (!choice->algorithm ||
        (ran != choice->algorithm->name && strcmp(ran, "native") == 0)) {
        ct_native_why why = ct_select_take_refusal();
        ct_select_count_native(coll, why);
        return why;
    }
    ct_select_count_served(coll, choice->algorithm,
                           opts->has_segsize && (choice->algorithm->flags & CT_ALG_SEGMENTABLE),
                           opts->segsize);
    return CT_NWHY;
}

/* dropin.h */
void ct_dropin_profile(const ct_call *c, int form, long long bytes, const char *ran,
                       const ct_options *o, unsigned long long t0, int rc)
{
    int size = 0;
    if (c->comm != MPI_COMM_NULL)
        PMPI_Comm_size(c->comm, &size);
    long long seg = 0;
    if (o && o->has_segsize && strcmp(ran, "native") != 0) { /* as the log shows it */
        const ct_algorithm_info *info = ct_algorithm_find(c->coll, ran);
        if (info && (info->flags & CT_ALG_SEGMENTABLE))
            seg = o->segsize;
    }
    int p = ct_profile_point(c->coll, form, size, bytes, ran, seg);
    if (form == CT_PROF_BLOCKING)
        ct_profile_record(p, bytes, t0, ct_monitor_ticks(), c->comm);
    else if (rc == MPI_SUCCESS && c->request && form == CT_PROF_NONBLOCKING)
        ct_profile_begin(*c->request, p, bytes, t0, c->comm);
    else if (rc == MPI_SUCCESS && c->request)
        ct_profile_persistent(*c->request, p, bytes, c->comm);
}

/* dropin.h */
void ct_dropin_profile_library(ct_coll coll, int form, MPI_Comm comm, MPI_Request *request,
                               unsigned long long t0, int rc)
{
    ct_call c = {.coll = coll, .comm = comm, .request = request};
    ct_dropin_profile(&c, form, 0, "native", NULL, t0, rc);
}

int ct_dropin_comm_size(MPI_Comm comm)
{
    int n = 0, inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
        return 0;
    return n;
}

int ct_dropin_is_root(MPI_Comm comm, int root)
{
    int r = -1;
    return comm != MPI_COMM_NULL && PMPI_Comm_rank(comm, &r) == MPI_SUCCESS && r == root;
}

#if MPI_VERSION >= 4
int ct_dropin_counts_to_int(const MPI_Count *a, int n, int **out)
{
    *out = NULL;
    if (!a)
        return 0;
    int *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!CT_FITS_INT(a[i])) {
            free(b);
            return -1;
        }
        b[i] = (int)a[i];
    }
    *out = b;
    return 0;
}

int ct_dropin_displs_to_int(const MPI_Aint *a, int n, int **out)
{
    *out = NULL;
    if (!a)
        return 0;
    int *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!b)
        return -1;
    for (int i = 0; i < n; i++) {
        if (a[i] < INT_MIN || a[i] > INT_MAX) {
            free(b);
            return -1;
        }
        b[i] = (int)a[i];
    }
    *out = b;
    return 0;
}
#endif
