/*
 * The public API's options: their defaults, the select layer's choice for a ct_* call
 * that names no algorithm (the entry points themselves are generated:
 * src/public/public.c), and the table a program chooses (ct_table_use).
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "../select/select.h"
#include "../select/table.h"

void ct_options_init(ct_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->split = CT_SPLIT_AUTO;
}

/* ---- Public entry points ------------------------------------------------ */

const ct_options *ct_call_public_options(const ct_call *c, const ct_vargs *v,
                                         const ct_options *opts, int thread_running,
                                         int persistent, ct_options *chosen, int *err)
{
    *err = MPI_SUCCESS;
    if (opts && opts->algorithm && opts->algorithm[0])
        return opts; /* the caller's algorithm */
    int size = 0, inter = 0;
    if (c->comm == MPI_COMM_NULL || PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS ||
        inter || PMPI_Comm_size(c->comm, &size) != MPI_SUCCESS)
        return opts; /* the engine says what is wrong, or leaves it to MPI */
    ct_select_query q = {c->coll,
                         persistent   ? CT_FORM_PERSISTENT
                         : c->request ? CT_FORM_NONBLOCKING
                                      : CT_FORM_BLOCKING,
                         c->comm, size, c->op, ct_call_bytes_v(c, v), ct_call_same_size_v(c->coll),
                         thread_running};
    ct_choice choice;
    if (ct_select(&q, &choice, err))
        return opts; /* native, or *err */
    /* The caller's other options (radix, hier parts) stay; what it left to the choice
     * (segment size, split) is the choice's. */
    if (opts)
        *chosen = *opts;
    else
        ct_options_init(chosen);
    chosen->algorithm = choice.algorithm->name;
    if (!chosen->has_segsize) {
        chosen->has_segsize = choice.has_segsize;
        chosen->segsize = choice.segsize;
    }
    if (chosen->split == CT_SPLIT_AUTO)
        chosen->split = choice.split;
    return chosen;
}

int ct_table_use(const char *path, char *why, int len)
{
    char buf[512];
    if (ct_table_load(path, buf, sizeof buf) != 0) {
        if (why && len > 0)
            snprintf(why, (size_t)len, "%s", buf);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}
