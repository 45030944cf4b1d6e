/*
 * An ordinary MPI program (plain mpicc, no colltune header, no colltune library) for the
 * drop-in's error handling: tests/python/test_dropin_errors.py runs it natively and with
 * LD_PRELOAD=libcolltune_pmpi.so and compares what it prints.
 *
 *   plain_errors          MPI_ERRORS_RETURN on MPI_COMM_WORLD, MPI_COMM_SELF and a duplicate
 *                         of MPI_COMM_WORLD, then every intercepted collective (MPI_Bcast,
 *                         MPI_Reduce, MPI_Allreduce, MPI_Scatter, MPI_Gather, MPI_Allgather,
 *                         MPI_Alltoall, MPI_Barrier; MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce,
 *                         MPI_Iscatter, MPI_Igather; and their MPI-4 _c forms where the MPI
 *                         has them) with every kind of invalid argument that applies: a root
 *                         of -5 and of the communicator's size, negative counts,
 *                         MPI_DATATYPE_NULL, a derived datatype never committed, MPI_OP_NULL,
 *                         predefined operations not defined for the datatype, MPI_COMM_NULL.
 *                         Every rank passes the same invalid arguments, and MPI checks them
 *                         before it communicates, so no rank is left inside a collective.
 *                         Rank 0 prints "case NAME -> CLASS" per case (the error class of
 *                         the return; for a non-blocking call that starts, the class of the
 *                         MPI_Wait that completes it; "rR:CLASS ..." per rank if the ranks
 *                         disagree). After every case a correct call of the same function
 *                         runs and its result is checked by hand. Rank 0 ends with "all ok".
 *   plain_errors --valid  one correct call of each function, "case NAME_valid -> CLASS" each
 *                         (a result is checked where the call succeeded; "error NAME_valid:
 *                         TEXT", MPI_Error_string's, where it failed): the run where the
 *                         drop-in itself fails a call (an unknown forced algorithm), the
 *                         program going on after it; then 3000 MPI_Bcast calls in a row,
 *                         "case bcast_valid_x3000 -> CLASS" (every return must be the same).
 *
 * The classes are collected at rank 0 by point-to-point messages, so the report does not
 * rely on the collectives under test.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define HAVE_LARGE_COUNT 1
#else
#define HAVE_LARGE_COUNT 0
#endif

enum fn { BCAST, REDUCE, ALLREDUCE, SCATTER, GATHER, ALLGATHER, ALLTOALL, BARRIER, NFN };
static const char *const fn_names[NFN] = {"bcast",  "reduce",    "allreduce", "scatter",
                                          "gather", "allgather", "alltoall",  "barrier"};
/* The blocking call, the non-blocking one (MPI_I...), and their large-count (_c) forms. */
enum form { PLAIN, NB, LARGE, LARGE_NB, NFORM };

static int rank, size, failures;
static MPI_Comm dup; /* where the cases run (MPI_COMM_NULL cases aside) */
static MPI_Datatype uncommitted;

static int rooted(int f) { return f == BCAST || f == REDUCE || f == SCATTER || f == GATHER; }
static int reducing(int f) { return f == REDUCE || f == ALLREDUCE; }

/* Whether the drop-in intercepts this form of f (and this MPI has it). */
static int has_form(int f, int form)
{
    int nb = f <= GATHER; /* MPI_Ibcast ... MPI_Igather */
    switch (form) {
    case PLAIN:
        return 1;
    case NB:
        return nb;
    case LARGE:
        return HAVE_LARGE_COUNT && f != BARRIER;
    default:
        return HAVE_LARGE_COUNT && nb;
    }
}

static void form_name(int f, int form, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", form == NB || form == LARGE_NB ? "i" : "", fn_names[f],
             form >= LARGE ? "_c" : "");
}

/* ---- One call, whatever the function and form ------------------------------------------ */

typedef struct args {
    const void *sbuf;
    int scount;
    MPI_Datatype stype;
    void *rbuf;
    int rcount;
    MPI_Datatype rtype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} args;

/* Runs the call; a non-blocking one that starts is completed by MPI_Wait, whose return is
 * the result. */
static int call(int f, int form, const args *a)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_ERR_INTERN;
    if (form == PLAIN) {
        switch (f) {
        case BCAST:
            return MPI_Bcast(a->rbuf, a->rcount, a->rtype, a->root, a->comm);
        case REDUCE:
            return MPI_Reduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, a->comm);
        case ALLREDUCE:
            return MPI_Allreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
        case SCATTER:
            return MPI_Scatter(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                               a->root, a->comm);
        case GATHER:
            return MPI_Gather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                              a->root, a->comm);
        case ALLGATHER:
            return MPI_Allgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                                 a->comm);
        case ALLTOALL:
            return MPI_Alltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                                a->comm);
        case BARRIER:
            return MPI_Barrier(a->comm);
        default:
            return MPI_ERR_INTERN;
        }
    }
    if (form == NB) {
        switch (f) {
        case BCAST:
            rc = MPI_Ibcast(a->rbuf, a->rcount, a->rtype, a->root, a->comm, &req);
            break;
        case REDUCE:
            rc = MPI_Ireduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, a->comm,
                             &req);
            break;
        case ALLREDUCE:
            rc = MPI_Iallreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm, &req);
            break;
        case SCATTER:
            rc = MPI_Iscatter(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                              a->root, a->comm, &req);
            break;
        case GATHER:
            rc = MPI_Igather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype,
                             a->root, a->comm, &req);
            break;
        default:
            break;
        }
    }
#if HAVE_LARGE_COUNT
    MPI_Count sc = a->scount, rcn = a->rcount;
    if (form == LARGE) {
        switch (f) {
        case BCAST:
            return MPI_Bcast_c(a->rbuf, rcn, a->rtype, a->root, a->comm);
        case REDUCE:
            return MPI_Reduce_c(a->sbuf, a->rbuf, rcn, a->rtype, a->op, a->root, a->comm);
        case ALLREDUCE:
            return MPI_Allreduce_c(a->sbuf, a->rbuf, rcn, a->rtype, a->op, a->comm);
        case SCATTER:
            return MPI_Scatter_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->root,
                                 a->comm);
        case GATHER:
            return MPI_Gather_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->root,
                                a->comm);
        case ALLGATHER:
            return MPI_Allgather_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->comm);
        case ALLTOALL:
            return MPI_Alltoall_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->comm);
        default:
            return MPI_ERR_INTERN;
        }
    }
    if (form == LARGE_NB) {
        switch (f) {
        case BCAST:
            rc = MPI_Ibcast_c(a->rbuf, rcn, a->rtype, a->root, a->comm, &req);
            break;
        case REDUCE:
            rc = MPI_Ireduce_c(a->sbuf, a->rbuf, rcn, a->rtype, a->op, a->root, a->comm, &req);
            break;
        case ALLREDUCE:
            rc = MPI_Iallreduce_c(a->sbuf, a->rbuf, rcn, a->rtype, a->op, a->comm, &req);
            break;
        case SCATTER:
            rc = MPI_Iscatter_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->root, a->comm,
                                &req);
            break;
        case GATHER:
            rc = MPI_Igather_c(a->sbuf, sc, a->stype, a->rbuf, rcn, a->rtype, a->root, a->comm,
                               &req);
            break;
        default:
            break;
        }
    }
#endif
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

/* ---- Reporting -------------------------------------------------------------------------- */

static const char *class_name(int cls)
{
#define C(x)                                                                                \
    case x:                                                                                 \
        return #x
    switch (cls) {
        C(MPI_SUCCESS);
        C(MPI_ERR_BUFFER);
        C(MPI_ERR_COUNT);
        C(MPI_ERR_TYPE);
        C(MPI_ERR_TAG);
        C(MPI_ERR_COMM);
        C(MPI_ERR_RANK);
        C(MPI_ERR_REQUEST);
        C(MPI_ERR_ROOT);
        C(MPI_ERR_GROUP);
        C(MPI_ERR_OP);
        C(MPI_ERR_TOPOLOGY);
        C(MPI_ERR_DIMS);
        C(MPI_ERR_ARG);
        C(MPI_ERR_UNKNOWN);
        C(MPI_ERR_TRUNCATE);
        C(MPI_ERR_OTHER);
        C(MPI_ERR_INTERN);
        C(MPI_ERR_IN_STATUS);
        C(MPI_ERR_PENDING);
    default:
        return NULL;
    }
#undef C
}

/* Rank 0 prints "case NAME -> CLASS" from every rank's class (point-to-point, on
 * MPI_COMM_WORLD, never through a collective). */
static void report(const char *name, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS)
        cls = -1;
    if (rank != 0) {
        MPI_Send(&cls, 1, MPI_INT, 0, 91, MPI_COMM_WORLD);
        return;
    }
    int *all = malloc(sizeof(int) * (size_t)size), same = 1;
    all[0] = cls;
    for (int r = 1; r < size; r++) {
        MPI_Recv(&all[r], 1, MPI_INT, r, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        same = same && all[r] == cls;
    }
    char line[1024];
    int n = snprintf(line, sizeof line, "case %s ->", name);
    for (int r = 0; r < (same ? 1 : size) && n < (int)sizeof line - 40; r++) {
        const char *c = class_name(all[r]);
        char num[32];
        if (!c) {
            snprintf(num, sizeof num, "class %d", all[r]);
            c = num;
        }
        if (same)
            n += snprintf(line + n, sizeof line - (size_t)n, " %s", c);
        else
            n += snprintf(line + n, sizeof line - (size_t)n, " r%d:%s", r, c);
    }
    printf("%s\n", line);
    fflush(stdout);
    free(all);
}

static void fail(const char *what, const char *after)
{
    if (failures++ < 20)
        printf("FAIL rank %d: %s (after %s)\n", rank, what, after);
}

/* ---- A correct call, checked by hand ---------------------------------------------------- */

enum { N = 3 }; /* ints per block */
enum { REPEAT = 3000 }; /* --valid: MPI_Bcast calls in a row at the end */

static int v(int seq, int from, int to, int i) { return seq * 10007 + from * 1009 + to * 31 + i; }

/* A correct call of f in this form on `dup`, its root and values changing with seq; returns
 * its result and checks the data if it succeeded. */
static int correct(int f, int form, int seq, const char *after)
{
    int root = seq % size, *s = malloc(sizeof(int) * (size_t)(N * size));
    int *r = malloc(sizeof(int) * (size_t)(N * size));
    for (int i = 0; i < N * size; i++)
        s[i] = r[i] = -1;
    args a = {s, N, MPI_INT, r, N, MPI_INT, MPI_SUM, root, dup};
    switch (f) {
    case BCAST:
        for (int i = 0; i < N; i++)
            r[i] = rank == root ? v(seq, root, 0, i) : -1;
        break;
    case REDUCE:
    case ALLREDUCE:
        for (int i = 0; i < N; i++)
            s[i] = v(seq, rank, 0, i);
        break;
    case SCATTER:
        if (rank == root)
            for (int i = 0; i < N * size; i++)
                s[i] = v(seq, root, i / N, i % N);
        break;
    case GATHER:
    case ALLGATHER:
        for (int i = 0; i < N; i++)
            s[i] = v(seq, rank, 0, i);
        break;
    case ALLTOALL:
        for (int i = 0; i < N * size; i++)
            s[i] = v(seq, rank, i / N, i % N);
        break;
    default:
        break;
    }
    int rc = call(f, form, &a), ok = 1;
    if (rc == MPI_SUCCESS) {
        long long sum;
        switch (f) {
        case BCAST:
            for (int i = 0; i < N; i++)
                ok = ok && r[i] == v(seq, root, 0, i);
            break;
        case REDUCE:
        case ALLREDUCE:
            if (f == REDUCE && rank != root)
                break;
            for (int i = 0; i < N; i++) {
                sum = 0;
                for (int q = 0; q < size; q++)
                    sum += v(seq, q, 0, i);
                ok = ok && r[i] == (int)sum;
            }
            break;
        case SCATTER:
            for (int i = 0; i < N; i++)
                ok = ok && r[i] == v(seq, root, rank, i);
            break;
        case GATHER:
        case ALLGATHER:
            if (f == GATHER && rank != root)
                break;
            for (int i = 0; i < N * size; i++)
                ok = ok && r[i] == v(seq, i / N, 0, i % N);
            break;
        case ALLTOALL:
            for (int i = 0; i < N * size; i++)
                ok = ok && r[i] == v(seq, i / N, rank, i % N);
            break;
        default:
            break;
        }
    }
    char name[32], what[96];
    form_name(f, form, name, sizeof name);
    if (rc != MPI_SUCCESS && after) {
        snprintf(what, sizeof what, "a correct %s returned an error", name);
        fail(what, after);
    } else if (!ok) {
        snprintf(what, sizeof what, "wrong result of a correct %s", name);
        fail(what, after ? after : "nothing");
    }
    free(s);
    free(r);
    return rc;
}

/* ---- The invalid calls ------------------------------------------------------------------ */

enum kind {
    ROOT_NEGATIVE,
    ROOT_SIZE,
    COUNT_NEGATIVE,
    TYPE_NULL,
    TYPE_UNCOMMITTED,
    OP_NULL,
    OP_BAND_DOUBLE,
    OP_LAND_DOUBLE,
    OP_MAXLOC_INT,
    OP_SUM_BYTE,
    COMM_NULL,
    NKIND
};
static const char *const kind_names[NKIND] = {
    "root_negative", "root_size",   "count_negative", "type_null",
    "type_uncommitted", "op_null", "op_band_double", "op_land_double",
    "op_maxloc_int", "op_sum_byte", "comm_null"};

static int applies(int f, int form, int k)
{
    (void)form;
    if (f == BARRIER)
        return k == COMM_NULL;
    if (k == ROOT_NEGATIVE || k == ROOT_SIZE)
        return rooted(f);
    if (k >= OP_NULL && k <= OP_SUM_BYTE)
        return reducing(f);
#if defined(MPICH_VERSION)
    /* MPICH 5.0.2 itself crashes in the reductions with a negative count or
     * MPI_DATATYPE_NULL (its checks read the datatype first). */
    if ((k == COUNT_NEGATIVE || k == TYPE_NULL) && reducing(f))
        return 0;
#endif
#if defined(OPEN_MPI)
    /* Open MPI 5.0.11 dereferences MPI_COMM_NULL in MPI_Allgather before checking it. */
    if (k == COMM_NULL && f == ALLGATHER)
        return 0;
#endif
    return 1;
}

static double sbuf[512], rbuf[512]; /* room for any block of the invalid calls */

static int invalid(int f, int form, int k)
{
    args a = {sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_SUM, 0, dup};
    switch (k) {
    case ROOT_NEGATIVE:
        a.root = -5;
        break;
    case ROOT_SIZE:
        a.root = size;
        break;
    case COUNT_NEGATIVE:
        a.scount = a.rcount = -1;
        break;
    case TYPE_NULL:
        a.stype = a.rtype = MPI_DATATYPE_NULL;
        break;
    case TYPE_UNCOMMITTED:
        a.stype = a.rtype = uncommitted;
        break;
    case OP_NULL:
        a.op = MPI_OP_NULL;
        break;
    case OP_BAND_DOUBLE:
        a.op = MPI_BAND;
        a.stype = a.rtype = MPI_DOUBLE;
        break;
    case OP_LAND_DOUBLE:
        a.op = MPI_LAND;
        a.stype = a.rtype = MPI_DOUBLE;
        break;
    case OP_MAXLOC_INT:
        a.op = MPI_MAXLOC;
        break;
    case OP_SUM_BYTE:
        a.op = MPI_SUM;
        a.stype = a.rtype = MPI_BYTE;
        break;
    case COMM_NULL:
        a.comm = MPI_COMM_NULL;
        break;
    default:
        break;
    }
    return call(f, form, &a);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int valid_only = argc > 1 && strcmp(argv[1], "--valid") == 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted); /* never committed */

    int seq = 1;
    for (int f = 0; f < NFN; f++)
        for (int form = 0; form < NFORM; form++) {
            if (!has_form(f, form))
                continue;
            char fname[32], name[96];
            form_name(f, form, fname, sizeof fname);
            if (valid_only) {
                snprintf(name, sizeof name, "%s_valid", fname);
                int rc = correct(f, form, seq++, NULL);
                report(name, rc);
                char text[MPI_MAX_ERROR_STRING];
                int len;
                if (rc != MPI_SUCCESS && rank == 0 &&
                    MPI_Error_string(rc, text, &len) == MPI_SUCCESS)
                    printf("error %s: %s\n", name, text);
                continue;
            }
            for (int k = 0; k < NKIND; k++) {
                if (!applies(f, form, k))
                    continue;
                snprintf(name, sizeof name, "%s_%s", fname, kind_names[k]);
                report(name, invalid(f, form, k));
                correct(f, form, seq++, name);
            }
        }

    if (valid_only) {
        /* Many calls in a row: a program that goes on after an error may make them all. */
        int x = rank, rc = MPI_SUCCESS, differ = 0;
        for (int i = 0; i < REPEAT; i++) {
            int r = MPI_Bcast(&x, 1, MPI_INT, 0, dup);
            differ = differ || (i > 0 && r != rc);
            rc = r;
            if (rc == MPI_SUCCESS && x != 0)
                fail("wrong result of a repeated correct bcast", "nothing");
        }
        if (differ)
            fail("repeated bcasts returned different codes", "nothing");
        char name[64];
        snprintf(name, sizeof name, "bcast_valid_x%d", REPEAT);
        report(name, rc);
    }
    MPI_Type_free(&uncommitted);
    MPI_Comm_free(&dup);
    /* The verdict, point-to-point as well. */
    if (rank != 0) {
        MPI_Send(&failures, 1, MPI_INT, 0, 92, MPI_COMM_WORLD);
    } else {
        int total = failures;
        for (int r = 1; r < size; r++) {
            int n;
            MPI_Recv(&n, 1, MPI_INT, r, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += n;
        }
        printf("%s\n", total ? "FAILED" : "all ok");
        failures = total;
    }
    MPI_Finalize();
    return rank == 0 && failures ? 1 : 0;
}
