/* The choice of what runs a call (select.h): the environment read once, one error path,
 * forced > table > native for every operation and call form. */
#include "select.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

typedef struct forced {
    const char *text;              /* what the environment says; NULL: not forced */
    const ct_algorithm_info *info; /* its registry entry; NULL: unknown name */
} forced;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static struct {
    forced alg[CT_NCOLL];
    long long segsize;          /* 0: none; -1: not a size; -2: out of range */
    const char *segsize_text;   /* the bad text, if any */
    int split;                  /* COLLTUNE_SPLIT, or CT_SPLIT_AUTO */
    int split_given;            /* it overrides the table's split level */
    int log;                    /* CT_LOG_* */
    const char *log_text;       /* COLLTUNE_LOG when it is none of the allowed values */
    int any_forced;             /* some COLLTUNE_<OP>_ALGORITHM is set */
} env = {.split = CT_SPLIT_AUTO};

/* COLLTUNE_SEGSIZE: bytes, with the units `colltune bench --segsize` takes (B, K/KiB,
 * M/MiB, G/GiB, any case), from 1 B to 1 GiB; anything else is refused, never clamped. */
static long long parse_segsize(const char *seg)
{
    static const struct {
        const char *unit;
        long long scale;
    } units[] = {{"", 1},          {"b", 1},          {"k", 1LL << 10}, {"kb", 1LL << 10},
                 {"kib", 1LL << 10}, {"m", 1LL << 20}, {"mb", 1LL << 20}, {"mib", 1LL << 20},
                 {"g", 1LL << 30}, {"gb", 1LL << 30}, {"gib", 1LL << 30}};
    const char *p = seg;
    while (*p == ' ')
        p++;
    long long digits = 0, value = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        if (value <= (1LL << 40)) /* past any allowed size: stays out of range */
            value = value * 10 + (*p - '0');
    char unit[8] = "";
    size_t u = 0;
    for (; ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') && u < sizeof unit - 1; p++)
        unit[u++] = (char)(*p | 0x20);
    unit[u] = '\0';
    while (*p == ' ')
        p++;
    long long scale = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(unit, units[i].unit))
            scale = units[i].scale;
    if (!digits || !scale || *p)
        return -1;
    if (value < 1 || value > (1LL << 30) / scale)
        return -2;
    return value * scale;
}

static void read_env(void)
{
    for (int c = 0; c < CT_NCOLL; c++) {
        char var[64];
        snprintf(var, sizeof var, "COLLTUNE_%.40s_ALGORITHM", ct_select_upper_name((ct_coll)c));
        const char *v = getenv(var);
        if (v && *v) {
            env.alg[c].text = v;
            env.any_forced = 1;
            env.alg[c].info = ct_algorithm_find((ct_coll)c, v);
        }
    }
    const char *seg = getenv("COLLTUNE_SEGSIZE");
    if (seg && *seg) {
        env.segsize = parse_segsize(seg);
        if (env.segsize < 0)
            env.segsize_text = seg;
    }
    const char *split = getenv("COLLTUNE_SPLIT");
    if (split && *split && strcmp(split, "auto") != 0) {
        char *end;
        long v = strtol(split, &end, 10);
        if (*end == '\0' && v >= 0 && v < 64) {
            env.split = (int)v;
            env.split_given = 1;
        } else {
            fprintf(stderr, "colltune: COLLTUNE_SPLIT='%s' is neither 'auto' nor a number of "
                            "levels; using auto\n", split);
        }
    }
    const char *log = getenv("COLLTUNE_LOG");
    env.log = !log || !*log                ? CT_LOG_DEFAULT
              : !strcmp(log, "debug")      ? CT_LOG_DEBUG
              : !strcmp(log, "warn")       ? CT_LOG_WARN
              : !strcmp(log, "quiet")      ? CT_LOG_QUIET
                                           : CT_LOG_DEFAULT;
    if (log && *log && env.log == CT_LOG_DEFAULT)
        env.log_text = log; /* a typo (COLLTUNE_LOG=debgu) must not pass for the default */
    const char *table = getenv("COLLTUNE_TABLE");
    char why[512];
    if (table && *table && ct_table_load(table, why, sizeof why) != 0) {
        ct_table_unload(); /* the unchecked look before MPI_Init may have loaded it */
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) /* once, not once per rank */
            fprintf(stderr, "colltune: COLLTUNE_TABLE not used: %s; every call goes native\n",
                    why);
    }
}

static void env_read(void)
{
    pthread_once(&env_once, read_env);
}

const char *ct_select_mpi_name(ct_coll coll)
{
    static char names[CT_NCOLL][32];
    if ((int)coll < 0 || coll >= CT_NCOLL)
        return "?";
    char *m = names[coll];
    if (!m[0]) { /* the same text from every thread: a race writes the same bytes */
        snprintf(m, sizeof names[0], "%s", ct_coll_name(coll));
        m[0] = (char)(m[0] - 'a' + 'A'); /* MPI's names: the operation's, capitalized */
    }
    return m;
}

const char *ct_select_upper_name(ct_coll coll)
{
    static char names[CT_NCOLL][32];
    if ((int)coll < 0 || coll >= CT_NCOLL)
        return "?";
    char *u = names[coll];
    if (!u[0]) {
        const char *n = ct_coll_name(coll);
        size_t i = 0;
        for (; n[i] && i < sizeof names[0] - 1; i++)
            u[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 'a' + 'A' : n[i]);
        u[i] = '\0';
    }
    return u;
}

/* "MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init": the call the program made. */
static void call_name(ct_coll coll, ct_form form, char *buf, size_t len)
{
    if (form == CT_FORM_NONBLOCKING)
        snprintf(buf, len, "MPI_I%s", ct_coll_name(coll));
    else
        snprintf(buf, len, "MPI_%s%s", ct_select_mpi_name(coll),
                 form == CT_FORM_PERSISTENT ? "_init" : "");
}

/* A bad setting in the environment: said on stderr (the user may not check return
 * codes) and raised as MPI_ERR_ARG with the same text. The setting fails every call of
 * its operation, and a program going on under MPI_ERRORS_RETURN makes many: each text
 * gets one error code (MPICH 5.0.2 crashes after some 2000 made with
 * MPI_Add_error_code) and is said once. */
static int env_error(MPI_Comm comm, const char *msg)
{
    static struct {
        char msg[MPI_MAX_ERROR_STRING];
        int code;
    } made[CT_NCOLL + 1]; /* an unknown algorithm per operation, a bad segment size */
    static int nmade;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int code = MPI_ERR_ARG, i;
    if (comm == MPI_COMM_NULL)
        comm = MPI_COMM_WORLD;
    pthread_mutex_lock(&lock);
    for (i = 0; i < nmade && strcmp(made[i].msg, msg) != 0; i++)
        ;
    if (i < nmade) {
        code = made[i].code;
    } else {
        /* A fatal handler (the default) prints the message itself as it aborts: said once. */
        MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
        int fatal = PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS &&
                    eh == MPI_ERRORS_ARE_FATAL;
#if MPI_VERSION >= 4
        fatal = fatal || eh == MPI_ERRORS_ABORT;
#endif
        if (eh != MPI_ERRHANDLER_NULL)
            PMPI_Errhandler_free(&eh);
        if (!fatal)
            fprintf(stderr, "%s\n", msg);
        if (nmade < (int)(sizeof made / sizeof made[0]) &&
            PMPI_Add_error_code(MPI_ERR_ARG, &code) == MPI_SUCCESS) {
            PMPI_Add_error_string(code, msg);
            snprintf(made[nmade].msg, sizeof made[nmade].msg, "%s", msg);
            made[nmade++].code = code;
        } else {
            code = MPI_ERR_ARG;
        }
    }
    pthread_mutex_unlock(&lock);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

static int unknown_algorithm(ct_coll coll, MPI_Comm comm)
{
    char names[512], msg[MPI_MAX_ERROR_STRING];
    size_t used = 0;
    names[0] = '\0';
    for (int i = 0; i < ct_algorithm_count() && used < sizeof names; i++) {
        const ct_algorithm_info *a = ct_algorithm_get(i);
        if (a->coll == coll)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                     used ? ", " : "", a->name);
    }
    int n = snprintf(msg, sizeof msg,
                     "colltune: COLLTUNE_%s_ALGORITHM='%s' is not %s %s algorithm; valid: %s",
                     ct_select_upper_name(coll), env.alg[coll].text,
                     strchr("aeiou", ct_coll_name(coll)[0]) ? "an" : "a", ct_coll_name(coll),
                     names);
    if (n < 0)
        return MPI_ERR_ARG;
    return env_error(comm, msg); /* a very long name is cut: still the right message */
}

static int bad_segsize(MPI_Comm comm)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = snprintf(msg, sizeof msg, "colltune: COLLTUNE_SEGSIZE='%.64s' %s", env.segsize_text,
                     env.segsize == -2
                         ? "is out of range: allowed 1 B to 1 GiB"
                         : "is not a size: a whole number of bytes with an optional unit B, "
                           "K/KiB, M/MiB, G/GiB (e.g. 64K)");
    return n < 0 ? MPI_ERR_ARG : env_error(comm, msg);
}

/* An algorithm that needs a commutative operation, given one that is not: the library
 * runs the call, and the process says so once per operation. */
static int refuses_op(const ct_select_query *q, const ct_algorithm_info *info)
{
    int commutative = 1;
    if (!(info->flags & CT_ALG_NEEDS_COMMUTE) || q->op == MPI_OP_NULL ||
        PMPI_Op_commutative(q->op, &commutative) != MPI_SUCCESS || commutative)
        return 0;
    static int said[CT_NCOLL];
    if (!__atomic_exchange_n(&said[q->coll], 1, __ATOMIC_RELAXED) &&
        env.log != CT_LOG_QUIET) {
        char name[40];
        call_name(q->coll, q->form, name, sizeof name);
        fprintf(stderr,
                "colltune: COLLTUNE_%s_ALGORITHM=%s needs a commutative operation and this %s "
                "has one that is not: native %s ran instead (said once per process)\n",
                ct_select_upper_name(q->coll), info->name, name, name);
    }
    return 1;
}

int ct_select(const ct_select_query *q, ct_choice *choice, int *err)
{
    env_read();
    memset(choice, 0, sizeof *choice);
    choice->split = env.split;
    *err = MPI_SUCCESS;
    const forced *f = &env.alg[q->coll];
    if (f->text) {
        if (!f->info) {
            *err = unknown_algorithm(q->coll, q->comm);
            return 1;
        }
        if (env.segsize_text) {
            *err = bad_segsize(q->comm);
            return 1;
        }
        if (refuses_op(q, f->info)) {
            choice->why = CT_WHY_NONCOMMUTATIVE;
            return 1;
        }
        choice->algorithm = f->info;
        choice->has_segsize = env.segsize > 0;
        choice->segsize = env.segsize;
        return 0;
    }
    choice->why = ct_table_loaded() ? CT_WHY_NO_ENTRY : CT_WHY_NOT_CHOSEN;
    if (q->comm_size <= 0 || !ct_table_loaded())
        return 1;
    if (!q->sizes_agree) {
        choice->why = CT_WHY_SIZES_DIFFER;
        return 1;
    }
    ct_table_choice t;
    int found = q->form == CT_FORM_BLOCKING
                    ? ct_table_lookup(q->coll, q->comm_size, q->bytes, &t)
                : q->form == CT_FORM_NONBLOCKING
                    ? ct_table_lookup_nonblocking(q->coll, q->comm_size, q->bytes,
                                                  q->thread_running, &t)
                    : ct_table_lookup_persistent(q->coll, q->comm_size, q->bytes,
                                                 q->thread_running, &t);
    if (found != 0) {
        choice->why = found == CT_TABLE_NATIVE ? CT_WHY_TABLE_NATIVE : CT_WHY_NO_ENTRY;
        return 1;
    }
    /* The table resolved the name once (ct_algorithm_find scans the registry: 420
     * instructions a call, docs/BENCHMARKS.md section 45). */
    const ct_algorithm_info *info = t.info ? t.info : ct_algorithm_find(q->coll, t.algorithm);
    if (!info || (info->flags & CT_ALG_NATIVE)) {
        choice->why = CT_WHY_TABLE_NATIVE;
        return 1;
    }
    choice->algorithm = info;
    choice->has_segsize = t.segsize > 0;
    choice->segsize = t.segsize;
    choice->progress_thread = t.progress_thread;
    if (q->form != CT_FORM_BLOCKING && !env.split_given)
        choice->split = t.split;
    return 0;
}

void ct_choice_options(const ct_choice *choice, ct_options *opts)
{
    ct_options_init(opts);
    opts->algorithm = choice->algorithm ? choice->algorithm->name : NULL;
    opts->has_segsize = choice->has_segsize;
    opts->segsize = choice->segsize;
    opts->split = choice->split;
}

int ct_select_may_serve(ct_coll coll, ct_native_why *why)
{
    env_read();
    if (env.alg[coll].text)
        return 1;
    if (ct_table_loaded()) {
        int status = ct_table_op_status(coll);
        int sizes_differ = coll == CT_GATHERV || coll == CT_SCATTERV || coll == CT_ALLTOALLV;
        if (status == 0 || sizes_differ)
            return 1;
        *why = status == CT_TABLE_NATIVE ? CT_WHY_TABLE_NATIVE : CT_WHY_NO_ENTRY;
        return -1;
    }
    *why = CT_WHY_NOT_CHOSEN;
    return env.any_forced ? -1 : 0;
}

const ct_algorithm_info *ct_select_forced(ct_coll coll)
{
    env_read();
    return env.alg[coll].info;
}

int ct_select_log_level(void)
{
    env_read();
    return env.log;
}

const char *ct_select_log_problem(void)
{
    static char line[200];
    env_read();
    if (!env.log_text)
        return NULL;
    if (!line[0]) /* every thread writes the same bytes */
        snprintf(line, sizeof line,
                 "colltune: COLLTUNE_LOG='%.64s' is not a log level; allowed: quiet, warn, "
                 "debug (or unset for the default)", env.log_text);
    return line;
}

int ct_select_active(void)
{
    env_read();
    return env.any_forced || ct_table_loaded();
}

const char *ct_select_forced_text(ct_coll coll)
{
    env_read();
    return env.alg[coll].text;
}
