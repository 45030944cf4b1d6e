/*
 * The drop-in: MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Scatter, MPI_Gather,
 * MPI_Allgather, MPI_Alltoall and MPI_Barrier defined over the PMPI profiling
 * interface, so an unmodified MPI program gets colltune by linking
 * libcolltune_pmpi or with LD_PRELOAD (`colltune preload` prints its path).
 *
 * Choice of algorithm, per call, in this order:
 *   1. forced by the environment: COLLTUNE_<OP>_ALGORITHM=<name> with <OP> one
 *      of BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, ALLGATHER, ALLTOALL,
 *      BARRIER, and COLLTUNE_SEGSIZE=bytes for segmentable algorithms;
 *   2. the tuning table COLLTUNE_TABLE=file names (docs/TABLE.md; one made for
 *      another machine or MPI is refused with a warning, and calls go native);
 *   3. the native collective.
 * Inter-communicators, calls whose arguments colltune would refuse (so the
 * application sees native MPI's own error), and algorithms that cannot serve
 * the call (non-commutative operation) go to native.
 * COLLTUNE_LOG=debug logs every intercepted call and what ran to stderr.
 *
 * Non-blocking: MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce, MPI_Iscatter and
 * MPI_Igather choose the same way (COLLTUNE_<OP>_ALGORITHM names the blocking
 * operation's algorithms); their requests are generalized requests, and the
 * wait and test family (MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall,
 * MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome) first runs the part
 * of a colltune request that belongs to the application's core.
 * COLLTUNE_SPLIT=auto (default) or S: the split tree's application levels.
 * MPI_Init and MPI_Init_thread ask for MPI_THREAD_MULTIPLE and start the
 * progress thread (COLLTUNE_PROGRESS=off: neither; COLLTUNE_PROGRESS_CORES:
 * its cores); MPI_Finalize stops it.
 *
 * COLLTUNE_MONITOR=counters|count|peers|sizes turns on the message monitor
 * (src/monitor/monitor.h): the send family is counted here, colltune's own
 * collectives apart from the application's point-to-point.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/call.h"
#include "colltune.h"
#include "monitor/monitor.h"
#include "nbc/nbc.h"
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
static int env_split = CT_SPLIT_AUTO;

/* "BCAST", "ALLGATHER", ... */
static const char *upper_name(ct_coll coll)
{
    static char names[CT_NCOLL][16];
    char *u = names[coll];
    if (!u[0]) {
        const char *n = ct_coll_name(coll);
        size_t i = 0;
        for (; n[i] && i < sizeof names[0] - 1; i++)
            u[i] = (char)(n[i] - 'a' + 'A');
        u[i] = '\0';
    }
    return u;
}

/* "Bcast", "Allgather", ... as in the MPI function names. */
static const char *mpi_name(ct_coll coll)
{
    static const char *const names[CT_NCOLL] = {"Bcast",  "Reduce",    "Allreduce",
                                                "Scatter", "Gather",   "Allgather",
                                                "Alltoall", "Barrier"};
    return names[coll];
}

static void read_env(void)
{
    for (int c = 0; c < CT_NCOLL; c++) {
        char var[64];
        snprintf(var, sizeof var, "COLLTUNE_%s_ALGORITHM", upper_name((ct_coll)c));
        const char *v = getenv(var);
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
    const char *split = getenv("COLLTUNE_SPLIT");
    if (split && *split && strcmp(split, "auto") != 0) {
        char *end;
        long v = strtol(split, &end, 10);
        if (*end == '\0' && v >= 0 && v < 64)
            env_split = (int)v;
        else
            fprintf(stderr, "colltune: COLLTUNE_SPLIT='%s' is neither 'auto' nor a number of "
                            "levels; using auto\n", split);
    }
    const char *log = getenv("COLLTUNE_LOG");
    log_debug = log && strcmp(log, "debug") == 0;
    const char *table = getenv("COLLTUNE_TABLE");
    char why[512];
    if (table && *table && ct_table_load(table, why, sizeof why) != 0) {
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) /* once, not once per rank */
            fprintf(stderr, "colltune: COLLTUNE_TABLE not used: %s; every call goes native\n",
                    why);
    }
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
                     upper_name(coll), forced_alg[coll].algorithm, ct_coll_name(coll), names);
    if (n < 0)
        return MPI_ERR_ARG;
    return env_error(comm, msg); /* a very long name is cut: still the right message */
}

/* Fills opts for this call; returns 0 to run colltune, 1 for native. A bad
 * environment sets *err (and the call must return it). */
static int choose(ct_coll coll, MPI_Comm comm, long long bytes, ct_options *opts, int *err)
{
    pthread_once(&env_once, read_env);
    ct_options_init(opts);
    opts->split = env_split;
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
    int size = 0;
    if (comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS &&
        ct_table_lookup(coll, size, bytes, &choice) == 0) {
        opts->algorithm = choice.algorithm;
        opts->has_segsize = choice.segsize > 0;
        opts->segsize = choice.segsize;
        return 0;
    }
    return 1;
}

static void log_call(ct_coll coll, MPI_Comm comm, long long bytes, const char *ran,
                     const ct_options *opts, int nonblocking)
{
    if (!log_debug)
        return;
    int rank = -1, size = 0;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    /* One write per line, so the ranks' lines do not interleave on a shared stderr. */
    char line[256];
    int native = strcmp(ran, "native") == 0;
    char name[24];
    if (nonblocking) /* MPI_Ibcast, MPI_Iallreduce, ... */
        snprintf(name, sizeof name, "I%s", ct_coll_name(coll));
    else
        snprintf(name, sizeof name, "%s", mpi_name(coll));
    int n = snprintf(line, sizeof line, "colltune: rank %d/%d MPI_%s %lld bytes -> %s", rank,
                     size, name, bytes, ran);
    const ct_algorithm_info *info = native ? NULL : ct_algorithm_find(coll, ran);
    int segmented = info && (info->flags & CT_ALG_SEGMENTABLE) && opts->has_segsize;
    if (segmented && n > 0 && n < (int)sizeof line)
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

static int intercept(const ct_call *c)
{
    ct_options o;
    int err = MPI_SUCCESS;
    long long bytes = ct_call_bytes(c);
    int native = is_inter(c->comm) || choose(c->coll, c->comm, bytes, &o, &err);
    if (err != MPI_SUCCESS)
        return err;
    const char *ran = "native";
    int rc;
    double t0 = ct_monitor_level ? PMPI_Wtime() : 0;
    ct_monitor_in_collective = 1; /* the executor's messages are collective traffic */
    if (native)
        rc = ct_call_native(c); /* the non-blocking one when c->request is set */
    else if (c->request)
        rc = ct_nbc_start(c, &o, 1, &ran);
    else
        rc = ct_call_run(c, &o, 1, &ran);
    ct_monitor_in_collective = 0;
    if (ct_monitor_level) {
        ct_monitor_time(PMPI_Wtime() - t0);
        if (!strcmp(ran, "native"))
            ct_monitor_native(c->coll, bytes);
    }
    log_call(c->coll, c->comm, bytes, ran, &o, c->request != NULL);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    ct_call c = {CT_BCAST, NULL, count, datatype, buf, count, datatype, MPI_OP_NULL, root, comm, NULL};
    return intercept(&c);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    ct_call c = {CT_REDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, root, comm, NULL};
    return intercept(&c);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    ct_call c = {CT_ALLREDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm, NULL};
    return intercept(&c);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    ct_call c = {CT_SCATTER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,  recvtype, MPI_OP_NULL, root,     comm, NULL};
    return intercept(&c);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    ct_call c = {CT_GATHER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount, recvtype, MPI_OP_NULL, root,     comm, NULL};
    return intercept(&c);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    ct_call c = {CT_ALLGATHER, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,    recvtype, MPI_OP_NULL, 0,        comm, NULL};
    return intercept(&c);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    ct_call c = {CT_ALLTOALL, sendbuf,  sendcount,   sendtype, recvbuf,
                 recvcount,   recvtype, MPI_OP_NULL, 0,        comm, NULL};
    return intercept(&c);
}

int MPI_Barrier(MPI_Comm comm)
{
    ct_call c = {CT_BARRIER, NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL,
                 MPI_OP_NULL, 0,    comm, NULL};
    return intercept(&c);
}

/* ---- Non-blocking collectives ------------------------------------------- */

int MPI_Ibcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    ct_call c = {CT_BCAST, NULL, count, datatype, buf, count, datatype, MPI_OP_NULL, root,
                 comm, request};
    return intercept(&c);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_REDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, root, comm,
                 request};
    return intercept(&c);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    ct_call c = {CT_ALLREDUCE, sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm,
                 request};
    return intercept(&c);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    ct_call c = {CT_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                 MPI_OP_NULL, root, comm, request};
    return intercept(&c);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request)
{
    ct_call c = {CT_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                 MPI_OP_NULL, root, comm, request};
    return intercept(&c);
}

/* The wait and test family: colltune's application-side part first. */

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return ct_wait(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    return ct_test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    return ct_waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    return ct_testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    ct_nbc_drive(count, requests, 0);
    int rc, flag = 0;
    /* One of them must finish: a colltune request may need its application
     * part to, so poll them all rather than block in PMPI_Waitany. */
    while ((rc = PMPI_Testany(count, requests, index, &flag, status)) == MPI_SUCCESS && !flag)
        ct_nbc_drive(count, requests, 0);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    ct_nbc_drive(count, requests, 0);
    return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    ct_nbc_drive(incount, requests, 0);
    int rc;
    while ((rc = PMPI_Testsome(incount, requests, outcount, indices, statuses)) ==
               MPI_SUCCESS &&
           *outcount == 0)
        ct_nbc_drive(incount, requests, 0);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    ct_nbc_drive(incount, requests, 0);
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

/* ---- Start and end: the progress thread ------------------------------- */

static int progress_wanted(void)
{
    const char *p = getenv("COLLTUNE_PROGRESS");
    return !(p && (!strcmp(p, "off") || !strcmp(p, "0")));
}

int MPI_Init(int *argc, char ***argv)
{
    int provided, rc = progress_wanted()
                           ? PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)
                           : PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        if (progress_wanted())
            ct_progress_start(MPI_COMM_WORLD);
        ct_monitor_init();
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, progress_wanted() ? MPI_THREAD_MULTIPLE : required,
                              provided);
    if (rc == MPI_SUCCESS) {
        if (progress_wanted())
            ct_progress_start(MPI_COMM_WORLD);
        ct_monitor_init();
    }
    return rc;
}

int MPI_Finalize(void)
{
    ct_progress_stop();
    ct_monitor_finish();
    return PMPI_Finalize();
}

/* ---- The send family, for the monitor ---------------------------------- */

#define MONITORED(call, comm, dest, count, type)                                            \
    do {                                                                                    \
        if (!ct_monitor_level)                                                              \
            return call;                                                                    \
        ct_monitor_send(comm, dest, count, type);                                           \
        double t0_ = PMPI_Wtime();                                                          \
        int rc_ = call;                                                                     \
        ct_monitor_time(PMPI_Wtime() - t0_);                                                \
        return rc_;                                                                         \
    } while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Send(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Ssend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Rsend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    MONITORED(PMPI_Bsend(buf, count, t, dest, tag, comm), comm, dest, count, t);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request *r)
{
    MONITORED(PMPI_Isend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Issend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Irsend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               MPI_Request *r)
{
    MONITORED(PMPI_Ibsend(buf, count, t, dest, tag, comm, r), comm, dest, count, t);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype st, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rt, int src, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    MONITORED(PMPI_Sendrecv(sbuf, scount, st, dest, stag, rbuf, rcount, rt, src, rtag, comm,
                            status),
              comm, dest, scount, st);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest, int stag, int src,
                         int rtag, MPI_Comm comm, MPI_Status *status)
{
    MONITORED(PMPI_Sendrecv_replace(buf, count, t, dest, stag, src, rtag, comm, status), comm,
              dest, count, t);
}
