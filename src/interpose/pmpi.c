/*
 * The drop-in: MPI_Bcast, MPI_Reduce and MPI_Allreduce defined over the PMPI
 * profiling interface, so an unmodified MPI program gets colltune by linking
 * libcolltune_pmpi or with LD_PRELOAD (`colltune preload` prints its path).
 *
 * Choice of algorithm, per call, in this order:
 *   1. forced by the environment: COLLTUNE_BCAST_ALGORITHM=binomial (likewise
 *      COLLTUNE_REDUCE_ALGORITHM, COLLTUNE_ALLREDUCE_ALGORITHM), with
 *      COLLTUNE_SEGSIZE=bytes for segmentable algorithms;
 *   2. the tuning table (ct_table_lookup; no table is loaded yet);
 *   3. the native collective.
 * Inter-communicators, and anything an algorithm cannot serve, go to native.
 * COLLTUNE_LOG=debug logs every intercepted call and its choice to stderr.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colltune.h"
#include "tune/table.h"

typedef struct forced {
    const char *algorithm; /* NULL: not forced */
    int invalid;           /* the name given is not in the registry */
} forced;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static forced forced_alg[CT_NCOLL];
static long long env_segsize;
static const char *env_segsize_invalid; /* the bad text, if any */
static int log_debug;

static void read_env(void)
{
    static const char *const vars[CT_NCOLL] = {
        "COLLTUNE_BCAST_ALGORITHM", "COLLTUNE_REDUCE_ALGORITHM", "COLLTUNE_ALLREDUCE_ALGORITHM"};
    for (int c = 0; c < CT_NCOLL; c++) {
        const char *v = getenv(vars[c]);
        if (v && *v) {
            forced_alg[c].algorithm = v;
            forced_alg[c].invalid = ct_algorithm_find((ct_coll)c, v) == NULL;
        }
    }
    const char *seg = getenv("COLLTUNE_SEGSIZE");
    if (seg && *seg) {
        char *end;
        env_segsize = strtoll(seg, &end, 10);
        if (*end != '\0' || env_segsize <= 0)
            env_segsize_invalid = seg;
    }
    const char *log = getenv("COLLTUNE_LOG");
    log_debug = log && strcmp(log, "debug") == 0;
}

/* "binomial, chain, ..." for the error message of an unknown name. */
static void valid_names(ct_coll coll, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ct_algorithm_count(); i++) {
        const ct_algorithm_info *a = ct_algorithm_get(i);
        if (a->coll == coll && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", a->name);
    }
}

/* A bad setting in the environment: said on stderr (the user may not check
 * return codes) and raised as MPI_ERR_ARG with the same text. */
static int env_error(MPI_Comm comm, const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    int code;
    if (MPI_Add_error_code(MPI_ERR_ARG, &code) != MPI_SUCCESS)
        code = MPI_ERR_ARG;
    else
        MPI_Add_error_string(code, msg);
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

static int unknown_algorithm(ct_coll coll, MPI_Comm comm)
{
    char names[512], msg[MPI_MAX_ERROR_STRING];
    valid_names(coll, names, sizeof names);
    int n = snprintf(msg, sizeof msg,
                     "colltune: COLLTUNE_%s_ALGORITHM='%s' is not a %s algorithm; valid: %s",
                     coll == CT_BCAST ? "BCAST" : coll == CT_REDUCE ? "REDUCE" : "ALLREDUCE",
                     forced_alg[coll].algorithm, ct_coll_name(coll), names);
    if (n < 0)
        return MPI_ERR_ARG;
    return env_error(comm, msg); /* a very long name is cut: still the right message */
}

/* Fills opts for this call; returns 0 to run colltune, 1 for native. A bad
 * environment sets *err (and the call must return it). */
static int choose(ct_coll coll, MPI_Comm comm, int count, MPI_Datatype dt, ct_options *opts,
                  int *err)
{
    pthread_once(&env_once, read_env);
    ct_options_init(opts);
    *err = MPI_SUCCESS;
    if (forced_alg[coll].algorithm) {
        if (forced_alg[coll].invalid) {
            *err = unknown_algorithm(coll, comm);
            return 1;
        }
        opts->algorithm = forced_alg[coll].algorithm;
        if (env_segsize_invalid) {
            char msg[MPI_MAX_ERROR_STRING];
            int n = snprintf(msg, sizeof msg,
                             "colltune: COLLTUNE_SEGSIZE='%.64s' is not a positive number of "
                             "bytes",
                             env_segsize_invalid);
            *err = n < 0 ? MPI_ERR_ARG : env_error(comm, msg);
            return 1;
        }
        if (env_segsize > 0) {
            opts->has_segsize = 1;
            opts->segsize = env_segsize;
        }
        return 0;
    }
    ct_table_choice choice;
    int size = 0, type_size = 0;
    if (comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        dt != MPI_DATATYPE_NULL && PMPI_Type_size(dt, &type_size) == MPI_SUCCESS &&
        ct_table_lookup(coll, size, (long long)count * type_size, &choice) == 0) {
        opts->algorithm = choice.algorithm;
        opts->has_segsize = choice.segsize > 0;
        opts->segsize = choice.segsize;
        return 0;
    }
    return 1;
}

static void log_call(ct_coll coll, MPI_Comm comm, int count, MPI_Datatype dt,
                     const ct_options *opts, int native)
{
    if (!log_debug)
        return;
    int rank = -1, size = 0, tsize = 0;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    if (dt != MPI_DATATYPE_NULL)
        PMPI_Type_size(dt, &tsize);
    /* One write per line, so the ranks' lines do not interleave on a shared stderr. */
    char line[256];
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s %lld bytes -> %s", rank,
                     size, coll == CT_BCAST ? "Bcast" : coll == CT_REDUCE ? "Reduce" : "Allreduce",
                     (long long)count * tsize, native ? "native" : opts->algorithm);
    if (!native && opts->has_segsize && n > 0 && n < (int)sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, " segsize %lld", opts->segsize);
    if (n > 0 && n < (int)sizeof line - 1) {
        line[n++] = '\n';
        ssize_t w = write(2, line, (size_t)n);
        (void)w;
    }
}

static int is_inter(MPI_Comm comm)
{
    int inter = 0;
    return comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    ct_options o;
    int err = MPI_SUCCESS;
    int native = is_inter(comm) || choose(CT_BCAST, comm, count, datatype, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    log_call(CT_BCAST, comm, count, datatype, &o, native);
    return native ? PMPI_Bcast(buf, count, datatype, root, comm)
                  : ct_bcast(buf, count, datatype, root, comm, &o);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    ct_options o;
    int err = MPI_SUCCESS;
    int native = is_inter(comm) || choose(CT_REDUCE, comm, count, datatype, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    log_call(CT_REDUCE, comm, count, datatype, &o, native);
    return native ? PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm)
                  : ct_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, &o);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    ct_options o;
    int err = MPI_SUCCESS;
    int native = is_inter(comm) || choose(CT_ALLREDUCE, comm, count, datatype, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    log_call(CT_ALLREDUCE, comm, count, datatype, &o, native);
    return native ? PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm)
                  : ct_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &o);
}
