/*
 * The blocking collectives of the public API: argument checks, the choice of
 * algorithm, and the hand-over of a generated schedule to the executor.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../coll/registry.h"
#include "../sched/exec.h"
#include "colltune.h"

void ct_options_init(ct_options *opts)
{
    memset(opts, 0, sizeof *opts);
}

/* ---- Errors ------------------------------------------------------------- */

/* MPI error codes carrying colltune's own message, created on first use so
 * that MPI_Error_string explains what was wrong. */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static int raise_error(MPI_Comm comm, int errclass, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "colltune: ");
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);

    /* A small table of messages already registered, so repeated errors do
     * not create codes without bound. */
    static struct {
        char msg[MPI_MAX_ERROR_STRING];
        int code;
    } known[32];
    static int nknown;
    int code = errclass;
    pthread_mutex_lock(&err_lock);
    int i;
    for (i = 0; i < nknown; i++)
        if (strcmp(known[i].msg, msg) == 0)
            break;
    if (i < nknown) {
        code = known[i].code;
    } else if (MPI_Add_error_code(errclass, &code) == MPI_SUCCESS) {
        MPI_Add_error_string(code, msg);
        if (nknown < (int)(sizeof known / sizeof known[0])) {
            snprintf(known[nknown].msg, sizeof known[nknown].msg, "%s", msg);
            known[nknown++].code = code;
        }
    } else {
        code = errclass;
    }
    pthread_mutex_unlock(&err_lock);
    /* MPI_COMM_NULL has no handler: MPI raises such errors on MPI_COMM_WORLD. */
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

/* ---- Per-communicator state --------------------------------------------- */

/* Cache key of the last schedule: a collective repeated with the same shape
 * (the common case in loops) reuses its schedule instead of regenerating. */
typedef struct sched_key {
    const ct_registry_entry *alg;
    ct_params params;
} sched_key;

typedef struct comm_state {
    MPI_Comm priv;      /* private duplicate: our messages never meet the app's */
    unsigned seq;       /* calls so far, for tags */
    ct_sched sched;
    ct_workspace work;  /* the executor's memory, kept between calls */
    sched_key key;
    int have_key;
} comm_state;

static int state_keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t keyval_lock = PTHREAD_MUTEX_INITIALIZER;

static int state_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    comm_state *st = attr;
    if (st->priv != MPI_COMM_NULL)
        PMPI_Comm_free(&st->priv);
    ct_sched_free(&st->sched);
    ct_workspace_free(&st->work);
    free(st);
    return MPI_SUCCESS;
}

static int get_state(MPI_Comm comm, comm_state **out)
{
    int rc, flag;
    pthread_mutex_lock(&keyval_lock);
    if (state_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, state_delete, &state_keyval, NULL);
    else
        rc = MPI_SUCCESS;
    pthread_mutex_unlock(&keyval_lock);
    if (rc != MPI_SUCCESS)
        return rc;
    comm_state *st;
    if ((rc = PMPI_Comm_get_attr(comm, state_keyval, &st, &flag)) != MPI_SUCCESS)
        return rc;
    if (!flag) {
        if (!(st = calloc(1, sizeof *st)))
            return MPI_ERR_NO_MEM;
        ct_sched_init(&st->sched);
        if ((rc = PMPI_Comm_dup(comm, &st->priv)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_set_attr(comm, state_keyval, st)) != MPI_SUCCESS) {
            if (st->priv != MPI_COMM_NULL)
                PMPI_Comm_free(&st->priv);
            free(st);
            return rc;
        }
    }
    *out = st;
    return MPI_SUCCESS;
}

/* ---- The common path ---------------------------------------------------- */

typedef struct call {
    ct_coll coll;
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} call;

static int run_native(const call *c)
{
    switch (c->coll) {
    case CT_BCAST:
        return PMPI_Bcast(c->recvbuf, c->count, c->datatype, c->root, c->comm);
    case CT_REDUCE:
        return PMPI_Reduce(c->sendbuf, c->recvbuf, c->count, c->datatype, c->op, c->root,
                           c->comm);
    case CT_ALLREDUCE:
        return PMPI_Allreduce(c->sendbuf, c->recvbuf, c->count, c->datatype, c->op, c->comm);
    default:
        return MPI_ERR_INTERN;
    }
}

static int check_and_run(const call *c, const ct_options *opts)
{
    const char *cname = ct_coll_name(c->coll);
    int size, rank, inter, rc;
    if (c->comm == MPI_COMM_NULL)
        return raise_error(MPI_COMM_NULL, MPI_ERR_COMM, "%s on MPI_COMM_NULL", cname);
    if ((rc = PMPI_Comm_test_inter(c->comm, &inter)) != MPI_SUCCESS)
        return rc;
    PMPI_Comm_size(c->comm, &size);
    PMPI_Comm_rank(c->comm, &rank);
    if (c->count < 0)
        return raise_error(c->comm, MPI_ERR_COUNT, "%s: negative count %d", cname, c->count);
    if (c->datatype == MPI_DATATYPE_NULL)
        return raise_error(c->comm, MPI_ERR_TYPE, "%s: MPI_DATATYPE_NULL", cname);
    if (c->coll != CT_ALLREDUCE && !inter && (c->root < 0 || c->root >= size))
        return raise_error(c->comm, MPI_ERR_ROOT, "%s: root %d outside [0, %d)", cname, c->root,
                           size);
    int commutative = 1;
    if (c->coll != CT_BCAST) {
        if (c->op == MPI_OP_NULL)
            return raise_error(c->comm, MPI_ERR_OP, "%s: MPI_OP_NULL", cname);
        if ((rc = PMPI_Op_commutative(c->op, &commutative)) != MPI_SUCCESS)
            return rc;
        if (c->sendbuf == MPI_IN_PLACE && c->coll == CT_REDUCE && rank != c->root)
            return raise_error(c->comm, MPI_ERR_BUFFER,
                               "reduce: MPI_IN_PLACE is only valid at the root");
        if (c->count > 0 && c->sendbuf == c->recvbuf && c->recvbuf != NULL &&
            (c->coll == CT_ALLREDUCE || rank == c->root))
            return raise_error(c->comm, MPI_ERR_BUFFER,
                               "%s: send and receive buffers alias (use MPI_IN_PLACE)", cname);
    }

    const char *alg = (opts && opts->algorithm && opts->algorithm[0]) ? opts->algorithm : NULL;
    const ct_registry_entry *e = ct_registry_find(c->coll, alg ? alg : "native");
    if (!e)
        return raise_error(c->comm, MPI_ERR_ARG, "unknown %s algorithm '%s'", cname, alg);
    if (opts && opts->has_segsize && opts->segsize <= 0)
        return raise_error(c->comm, MPI_ERR_ARG, "segment size must be > 0 (got %lld)",
                           opts->segsize);
    if (opts && (opts->radix < 0 || opts->radix == 1))
        return raise_error(c->comm, MPI_ERR_ARG, "radix must be >= 2 (got %d)", opts->radix);
    if (!commutative && (e->info.flags & CT_ALG_NEEDS_COMMUTE))
        return raise_error(c->comm, MPI_ERR_OP,
                           "%s algorithm '%s' needs a commutative operation; "
                           "use one that keeps rank order",
                           cname, e->info.name);
    if ((e->info.flags & CT_ALG_NATIVE) || inter)
        return run_native(c); /* inter-communicators are MPI's business */

    ct_exec_ctx x;
    memset(&x, 0, sizeof x);
    if ((rc = ct_exec_describe_type(&x, c->datatype)) != MPI_SUCCESS)
        return raise_error(c->comm, rc, "%s: invalid datatype", cname);
    if (c->count == 0 || x.type_size == 0)
        return MPI_SUCCESS;

    comm_state *st;
    if ((rc = get_state(c->comm, &st)) != MPI_SUCCESS)
        return raise_error(c->comm, rc, "%s: cannot set up communicator state", cname);

    ct_params p;
    memset(&p, 0, sizeof p);
    p.coll = c->coll;
    p.size = size;
    p.rank = rank;
    p.root = c->coll == CT_ALLREDUCE ? 0 : c->root;
    p.count = (size_t)c->count;
    p.type_size = x.type_size;
    long long seg = (opts && opts->has_segsize) ? opts->segsize : e->info.default_segsize;
    p.segcount = (e->info.flags & CT_ALG_SEGMENTABLE) ? ct_segcount_for(seg, x.type_size) : 0;
    p.radix = (opts && opts->radix) ? opts->radix : 4;
    p.commutative = commutative;
    p.in_place = c->sendbuf == MPI_IN_PLACE && (c->coll == CT_ALLREDUCE || rank == c->root);

    sched_key key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    key.alg = e;
    memcpy(&key.params, &p, sizeof p);
    if (!st->have_key || memcmp(&key, &st->key, sizeof key) != 0) {
        st->have_key = 0;
        if (ct_sched_generate(e->info.name, &p, &st->sched))
            return raise_error(c->comm, MPI_ERR_NO_MEM, "%s: schedule generation failed", cname);
        memcpy(&st->key, &key, sizeof key);
        st->have_key = 1;
    }
    x.src = p.in_place ? c->recvbuf : (void *)c->sendbuf;
    x.dst = c->recvbuf;
    x.op = c->op;
    x.comm = st->priv;
    x.tag = (int)(st->seq++ & 0x7fff);
    rc = ct_exec(&st->sched, &x, &st->work);
    if (rc != MPI_SUCCESS)
        return raise_error(c->comm, rc, "%s/%s: communication failed", cname, e->info.name);
    return MPI_SUCCESS;
}

int ct_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
             const ct_options *opts)
{
    call c = {CT_BCAST, NULL, buf, count, datatype, MPI_OP_NULL, root, comm};
    return check_and_run(&c, opts);
}

int ct_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              int root, MPI_Comm comm, const ct_options *opts)
{
    call c = {CT_REDUCE, sendbuf, recvbuf, count, datatype, op, root, comm};
    return check_and_run(&c, opts);
}

int ct_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm, const ct_options *opts)
{
    call c = {CT_ALLREDUCE, sendbuf, recvbuf, count, datatype, op, 0, comm};
    return check_and_run(&c, opts);
}
