/*
 * The drop-in's v-variants, reduce-scatters and scans (issue 22): MPI_Allgatherv,
 * MPI_Alltoallv, MPI_Gatherv, MPI_Scatterv, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter, MPI_Scan and MPI_Exscan, and their _c large-count forms
 * where the MPI has them, defined over PMPI like the eight in pmpi.c.
 *
 * The choice, per call: COLLTUNE_<OP>_ALGORITHM (the operation's name in
 * capitals: COLLTUNE_REDUCE_SCATTER_BLOCK_ALGORITHM, ...) forces an algorithm;
 * else the loaded tuning table (COLLTUNE_TABLE), only for the operations whose
 * size every rank knows alike (allgatherv and reduce_scatter: the average
 * block; reduce_scatter_block, scan, exscan: the vector). Gatherv, scatterv and
 * alltoallv see only their own counts on most ranks: a size-keyed choice could
 * differ between ranks and deadlock, so they run native unless forced. A
 * commutative-only algorithm given a non-commutative op, arguments colltune
 * does not take (negative displacements, ...) and inter-communicators go to the
 * library; the monitor counts those native calls. COLLTUNE_LOG=debug logs each
 * call as pmpi.c does.
 *
 * The _c forms take the int path when every count and displacement fits in
 * an int, else go to the library's _c function (counted native).
 *
 * Non-blocking: MPI_Ibarrier and the MPI_I* of all eight (MPI_Iallgatherv ...
 * MPI_Iexscan) choose the same way (the blocking operation's
 * COLLTUNE_<OP>_ALGORITHM, or the table's blocking entries) and run through
 * src/nbc (a generalized request that pmpi.c's wait and test family drives).
 * Their _c forms take the int path like the blocking ones where they have no
 * per-rank arrays; MPI_Iallgatherv_c, MPI_Ialltoallv_c, MPI_Igatherv_c,
 * MPI_Iscatterv_c and MPI_Ireduce_scatter_c go to the library, counted (the
 * int copies of their arrays would have to outlive the call).
 *
 * The entry points themselves are generated (bindings.c, from
 * src/interpose/collectives.def); this file chooses and dispatches.
 */
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "dropin.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"
#include "tune/table.h"

/* The operations whose COLLTUNE_<OP>_ALGORITHM this file reads (the barrier's for
 * MPI_Ibarrier; pmpi.c reads it too, for MPI_Barrier). */
static const ct_coll v_ops[] = {CT_ALLGATHERV, CT_ALLTOALLV, CT_GATHERV, CT_SCATTERV,
                                CT_REDUCE_SCATTER_BLOCK, CT_REDUCE_SCATTER, CT_SCAN,
                                CT_EXSCAN, CT_BARRIER};
#define NV ((int)(sizeof v_ops / sizeof v_ops[0]))

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static struct {
    const char *algorithm; /* NULL: not forced */
    int invalid;           /* not in the registry */
} forced[CT_NCOLL];
static int log_debug;

static void read_env(void)
{
    for (int i = 0; i < NV; i++) {
        char var[80];
        snprintf(var, sizeof var, "COLLTUNE_%s_ALGORITHM", ct_dropin_upper_name(v_ops[i]));
        const char *v = getenv(var);
        if (v && *v) {
            forced[v_ops[i]].algorithm = v;
            forced[v_ops[i]].invalid = ct_algorithm_find(v_ops[i], v) == NULL;
        }
    }
    const char *log = getenv("COLLTUNE_LOG");
    log_debug = log && strcmp(log, "debug") == 0;
    /* pmpi.c loads the table on its first call; a program whose first collective is one
     * of these loads it here (pmpi.c says what is wrong with a bad one). */
    const char *table = getenv("COLLTUNE_TABLE");
    char why[512];
    if (table && *table && !ct_table_loaded())
        (void)ct_table_load(table, why, sizeof why);
}

/* A forced name the registry does not know: said once per operation, raised as
 * MPI_ERR_ARG on every call (the program asked for something that does not exist). */
static int unknown_algorithm(ct_coll coll, MPI_Comm comm)
{
    static int said[CT_NCOLL];
    if (!__atomic_exchange_n(&said[coll], 1, __ATOMIC_RELAXED)) {
        char names[512];
        size_t used = 0;
        names[0] = '\0';
        for (int i = 0; i < ct_algorithm_count() && used < sizeof names; i++) {
            const ct_algorithm_info *a = ct_algorithm_get(i);
            if (a->coll == coll)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "", a->name);
        }
        fprintf(stderr, "colltune: COLLTUNE_%s_ALGORITHM='%s' is not a%s %s algorithm; valid: %s\n",
                ct_dropin_upper_name(coll), forced[coll].algorithm,
                strchr("aeiou", ct_coll_name(coll)[0]) ? "n" : "", ct_coll_name(coll), names);
    }
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, MPI_ERR_ARG);
    return MPI_ERR_ARG;
}

/* dropin.h */
int ct_dropin_choose_v(const ct_call *c, long long bytes, ct_options *opts, int *err)
{
    ct_coll coll = c->coll;
    pthread_once(&env_once, read_env);
    ct_options_init(opts);
    *err = MPI_SUCCESS;
    if (forced[coll].algorithm) {
        if (forced[coll].invalid) {
            *err = unknown_algorithm(coll, c->comm);
            return 1;
        }
        opts->algorithm = forced[coll].algorithm;
        /* (An algorithm that broadcasts the counts first cannot start a non-blocking
         * call: ct_call_prepare sends that one to the library.) */
        const ct_algorithm_info *info = ct_algorithm_find(coll, opts->algorithm);
        int commutative = 1;
        if (info && (info->flags & CT_ALG_NEEDS_COMMUTE) && c->op != MPI_OP_NULL &&
            PMPI_Op_commutative(c->op, &commutative) == MPI_SUCCESS && !commutative) {
            static int said[CT_NCOLL];
            if (!__atomic_exchange_n(&said[coll], 1, __ATOMIC_RELAXED))
                fprintf(stderr,
                        "colltune: COLLTUNE_%s_ALGORITHM=%s needs a commutative operation and "
                        "this MPI_%s has one that is not: native MPI_%s ran instead (said once "
                        "per process)\n",
                        ct_dropin_upper_name(coll), opts->algorithm, ct_dropin_mpi_name(coll), ct_dropin_mpi_name(coll));
            return 1;
        }
        return 0;
    }
    ct_table_choice choice;
    int size = 0;
    if (ct_call_same_size_v(coll) && c->comm != MPI_COMM_NULL &&
        PMPI_Comm_size(c->comm, &size) == MPI_SUCCESS &&
        ct_table_lookup(coll, size, bytes, &choice) == 0) {
        opts->algorithm = choice.algorithm;
        opts->has_segsize = choice.segsize > 0;
        opts->segsize = choice.segsize;
        return 0;
    }
    return 1;
}

static void log_call(const ct_call *c, long long bytes, const char *ran)
{
    if (!log_debug)
        return;
    int rank = -1, size = 0;
    if (c->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(c->comm, &rank);
        PMPI_Comm_size(c->comm, &size);
    }
    char line[256];
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s%s %lld bytes -> %s\n",
                     rank, size, c->request ? "I" : "",
                     c->request ? ct_coll_name(c->coll) : ct_dropin_mpi_name(c->coll), bytes, ran);
    if (n > 0 && n < (int)sizeof line) {
        ssize_t w = write(2, line, (size_t)n); /* one write: lines of ranks do not mix */
        (void)w;
    }
}

/* dropin.h */
int ct_dropin_intercept_v(const ct_call *c, const ct_vargs *v)
{
    ct_options o;
    int err = MPI_SUCCESS, inter = 0;
    long long bytes = ct_call_bytes_v(c, v);
    int native = (c->comm != MPI_COMM_NULL &&
                  PMPI_Comm_test_inter(c->comm, &inter) == MPI_SUCCESS && inter) ||
                 ct_dropin_choose_v(c, bytes, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    unsigned long long t0 = ct_monitor_level ? ct_monitor_ticks() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    int rc = native       ? ct_call_native_v(c, v) /* the non-blocking one with a request */
             : c->request ? ct_nbc_start(c, v, &o, 1, &ran)
                          : ct_call_run_v(c, v, &o, 1, &ran);
    ct_monitor_in_collective = 0;
    if (ct_monitor_level) {
        ct_monitor_time(ct_monitor_ticks() - t0);
        if (!strcmp(ran, "native"))
            ct_monitor_native(c->coll, bytes);
    }
    log_call(c, bytes, ran);
    return rc;
}

/* The entry points (MPI_Allgatherv ... MPI_Iexscan, MPI_Ibarrier, the _c forms) are
 * generated from src/interpose/collectives.def into bindings.c, which hands each call
 * here. */
