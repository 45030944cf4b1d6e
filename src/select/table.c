/*
 * The tuning table at run time: loading a colltune-table/1 file (docs/TABLE.md)
 * and the lookup the drop-in and the API make on every call without an
 * algorithm. A small JSON reader for that one schema, so the library needs no
 * JSON dependency; the file is read once.
 */
#include "table.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- A minimal JSON reader ------------------------------------------------ */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    double num;
    char *str;
    struct jval *items; /* array elements or object values */
    char **keys;        /* object keys */
    int n;
    int line;           /* where the value starts, from 1 */
} jval;

/* Deeper nesting is refused (a table is 3 levels deep): no recursion without end. */
#define JSON_MAX_DEPTH 32

typedef struct jparser {
    const char *p;
    int depth;
    int line;          /* of p, from 1 */
    const char *error; /* what is wrong at `line`, when parsing fails */
} jparser;

static void jfree(jval *v)
{
    if (!v)
        return;
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static void skip(jparser *j)
{
    while (isspace((unsigned char)*j->p))
        if (*j->p++ == '\n')
            j->line++;
}

static int fail(jparser *j, const char *what)
{
    if (!j->error)
        j->error = what;
    return -1;
}

static int parse_value(jparser *j, jval *out);

static int parse_string(jparser *j, char **out)
{
    if (*j->p != '"')
        return fail(j, "a string was expected");
    const char *s = ++j->p;
    size_t cap = 16, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    while (*s && *s != '"') {
        char c = *s++;
        if (c == '\n')
            j->line++;
        if (c == '\\') {
            c = *s++;
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c == 'u') { /* kept as '?': names in the schema are ASCII */
                for (int k = 0; k < 4 && *s; k++)
                    s++;
                c = '?';
            } else if (!c) {
                break;
            }
        }
        if (len + 2 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                return -1;
            }
            buf = nb;
        }
        buf[len++] = c;
    }
    if (*s != '"') {
        free(buf);
        return fail(j, "a string has no end");
    }
    buf[len] = '\0';
    j->p = s + 1;
    *out = buf;
    return 0;
}

static int push_item(jval *v, jval *item, char *key)
{
    jval *ni = realloc(v->items, sizeof *ni * (size_t)(v->n + 1));
    if (!ni)
        return -1;
    v->items = ni;
    if (v->t == J_OBJ) {
        char **nk = realloc(v->keys, sizeof *nk * (size_t)(v->n + 1));
        if (!nk)
            return -1;
        v->keys = nk;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = *item;
    return 0;
}

static int parse_container(jparser *j, jval *out, char close)
{
    out->t = close == '}' ? J_OBJ : J_ARR;
    j->p++;
    skip(j);
    if (*j->p == close) {
        j->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        jval item = {0};
        skip(j);
        if (out->t == J_OBJ) {
            if (parse_string(j, &key))
                return -1;
            skip(j);
            if (*j->p++ != ':') {
                free(key);
                return fail(j, "':' was expected after a key");
            }
        }
        if (parse_value(j, &item) || push_item(out, &item, key)) {
            free(key);
            jfree(&item);
            return -1;
        }
        skip(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p == close) {
            j->p++;
            return 0;
        }
        return fail(j, close == '}' ? "',' or '}' was expected" : "',' or ']' was expected");
    }
}

static int parse_value(jparser *j, jval *out)
{
    memset(out, 0, sizeof *out);
    skip(j);
    out->line = j->line;
    if (++j->depth > JSON_MAX_DEPTH)
        return fail(j, "nested deeper than 32 levels");
    int rc = 0;
    char c = *j->p;
    if (c == '{' || c == '[') {
        rc = parse_container(j, out, c == '{' ? '}' : ']');
    } else if (c == '"') {
        out->t = J_STR;
        rc = parse_string(j, &out->str);
    } else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
        out->t = J_BOOL;
        out->num = c == 't';
        j->p += c == 't' ? 4 : 5;
    } else if (!strncmp(j->p, "null", 4)) {
        out->t = J_NULL;
        j->p += 4;
    } else {
        char *end;
        out->t = J_NUM;
        /* JSON numbers only: strtod would take inf, nan and hexadecimal too */
        int ok = *j->p == '-' || isdigit((unsigned char)*j->p);
        out->num = ok ? strtod(j->p, &end) : 0;
        if (!ok || end == j->p || !isfinite(out->num)) {
            rc = fail(j, "a value was expected");
        } else {
            for (const char *q = j->p; q < end; q++)
                if (*q == 'x' || *q == 'X' || *q == 'n' || *q == 'N' || *q == 'i' || *q == 'I')
                    rc = fail(j, "a value was expected");
            j->p = end;
        }
    }
    j->depth--;
    return rc;
}

static const jval *member(const jval *obj, const char *key)
{
    if (!obj || obj->t != J_OBJ)
        return NULL;
    for (int i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return &obj->items[i];
    return NULL;
}

static const char *str_of(const jval *obj, const char *key)
{
    const jval *v = member(obj, key);
    return v && v->t == J_STR ? v->str : NULL;
}

static int num_of(const jval *obj, const char *key, double *out)
{
    const jval *v = member(obj, key);
    if (!v || v->t != J_NUM)
        return -1;
    *out = v->num;
    return 0;
}

/* ---- The loaded table ------------------------------------------------------ */

/* A choice of algorithm: the entry's own, or its no-thread alternative. */
typedef struct choice {
    char *algorithm; /* NULL: none */
    long long segsize;
    int split; /* CT_SPLIT_AUTO: the split-tree model */
} choice;

/* An entry's call form (its field `nonblocking`): blocking "bcast", non-blocking "ibcast",
 * persistent "bcast_init". The started forms share the split level and progress fields. */
enum { FORM_BLOCKING = 0, FORM_NONBLOCKING = 1, FORM_PERSISTENT = 2 };

typedef struct entry {
    int coll, ranks, nonblocking, progress_thread; /* nonblocking: FORM_* */
    long long size;
    choice best, no_thread; /* no_thread: only for entries measured with the thread */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;
static int nentries;
static atomic_int loaded; /* nentries, read without the lock on every call */
/* Bumped at every load and unload: a thread's cached answer of another generation
 * is stale. */
static atomic_int generation;
/* What the finalize summary says of the loaded table: its file and its MPI. */
static char loaded_path[512], loaded_mpi[160];
/* Per operation, over all its entries and forms: 0 when one names a colltune algorithm,
 * else CT_TABLE_NATIVE (entries, all native) or CT_TABLE_NO_ENTRY (ct_table_op_status). */
static atomic_int op_status[CT_NCOLL];

static int names_colltune(const choice *c)
{
    return c->algorithm && strcmp(c->algorithm, "native") != 0;
}

/* Under the lock, after entries changed. */
static void set_op_status(void)
{
    for (int k = 0; k < CT_NCOLL; k++) {
        int status = CT_TABLE_NO_ENTRY;
        for (int i = 0; i < nentries && status != 0; i++)
            if (entries[i].coll == k)
                status = names_colltune(&entries[i].best) ||
                                 names_colltune(&entries[i].no_thread)
                             ? 0
                             : CT_TABLE_NATIVE;
        atomic_store(&op_status[k], status);
    }
}

/* This thread's recent lookups, two per operation and form. A program calls the same
 * collectives at the same sizes again and again, but alternating (bcast, barrier, bcast,
 * ...): with one remembered lookup for all, every call of such a loop scanned the table
 * again (two logarithms an entry, under the lock): 1,424 instructions a call with the
 * 46-entry table of make run, half of what a call the table leaves native cost through the
 * drop-in (docs/BENCHMARKS.md section 45). The memory is the thread's, on the heap (freed
 * by the key's destructor when the thread ends): only a pointer is thread-local, because
 * the library has initial-exec TLS (CT_TLS_FAST), so all of its TLS must fit the static TLS
 * block when the Python CLI dlopens it, and 5 KB did not. */
enum { CACHE_FORMS = FORM_PERSISTENT + 1, CACHE_WAYS = 2 };
typedef struct cached_lookup {
    int valid; /* the table's generation + 1 when filled; 0 (zero-initialised): empty */
    int comm_size, thread_running, rc;
    long long bytes;
    ct_table_choice choice;
} cached_lookup;
typedef cached_lookup recent_lookups[CT_NCOLL][CACHE_FORMS][CACHE_WAYS];
/* initial-exec: a pointer's 8 bytes of static TLS, and no __tls_get_addr a lookup */
static _Thread_local recent_lookups *recent __attribute__((tls_model("initial-exec")));
static pthread_key_t recent_key;
static pthread_once_t recent_once = PTHREAD_ONCE_INIT;
static int recent_key_ok;

/* At the thread's end. The pointer is cleared too: another key's destructor may still
 * call MPI in this thread, and then gets fresh memory rather than freed memory. */
static void drop_recent(void *r)
{
    free(r);
    recent = NULL;
}

static void make_recent_key(void)
{
    recent_key_ok = pthread_key_create(&recent_key, drop_recent) == 0;
}

/* This thread's lookups, made on first use; NULL without memory (then no caching). */
static recent_lookups *my_recent(void)
{
    if (recent)
        return recent;
    pthread_once(&recent_once, make_recent_key);
    if (!recent_key_ok)
        return NULL;
    recent_lookups *r = calloc(1, sizeof *r);
    if (r && pthread_setspecific(recent_key, r) != 0) {
        free(r);
        r = NULL;
    }
    return recent = r;
}

/* The remembered answer's rc (*choice filled when 0), or 1 when nothing is remembered
 * (no rc is 1: they are 0 and the negative CT_TABLE_*). */
static int cached(int coll, int kind, int comm_size, long long bytes, int thread,
                  ct_table_choice *choice)
{
    recent_lookups *r = my_recent();
    if (!r || (unsigned)coll >= CT_NCOLL || (unsigned)kind >= CACHE_FORMS)
        return 1;
    int want = atomic_load(&generation) + 1;
    const cached_lookup *w = (*r)[coll][kind];
    for (int i = 0; i < CACHE_WAYS; i++)
        if (w[i].valid == want && w[i].comm_size == comm_size && w[i].bytes == bytes &&
            w[i].thread_running == thread) {
            if (w[i].rc == 0)
                *choice = w[i].choice;
            return w[i].rc;
        }
    return 1;
}

static int remember(int gen, int coll, int kind, int comm_size, long long bytes, int thread,
                    int rc, const ct_table_choice *choice)
{
    recent_lookups *r = my_recent();
    if (!r || (unsigned)coll >= CT_NCOLL || (unsigned)kind >= CACHE_FORMS)
        return rc;
    cached_lookup *w = (*r)[coll][kind];
    for (int i = CACHE_WAYS - 1; i > 0; i--) /* the newest first, the oldest dropped */
        w[i] = w[i - 1];
    w[0] = (cached_lookup){gen + 1, comm_size, thread, rc, bytes,
                           rc == 0 ? *choice : (ct_table_choice){0}};
    return rc;
}

void ct_table_unload(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nentries; i++) {
        free(entries[i].best.algorithm);
        free(entries[i].no_thread.algorithm);
    }
    free(entries);
    entries = NULL;
    nentries = 0;
    set_op_status();
    atomic_store(&loaded, 0);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
}

static void cpu_model(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *v = strchr(line, ':');
            if (v) {
                v++;
                while (*v == ' ' || *v == '\t')
                    v++;
                v[strcspn(v, "\n")] = '\0';
                snprintf(out, len, "%s", v);
            }
            break;
        }
    if (f)
        fclose(f);
}

/* Whether this process runs the MPI the table was made with: its
 * implementation and version in MPI_Get_library_version's text. */
static int same_mpi(const char *impl, const char *version)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, init = 0;
    MPI_Initialized(&init);
    if (!init || MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        return 1; /* cannot tell before MPI_Init: the caller checks again later */
    int ours_ompi = strstr(lib, "Open MPI") != NULL;
    int theirs_ompi = strstr(impl, "Open MPI") != NULL;
    if (ours_ompi != theirs_ompi || (!ours_ompi && !strstr(lib, impl)))
        return 0;
    return strstr(lib, version) != NULL;
}

/* "bcast, reduce, ..." or "native, binomial, ..." for the messages. */
static void list_names(int coll, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    if (coll < 0) {
        for (int c = 0; c < CT_NCOLL && used < len; c++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", c ? ", " : "",
                                     ct_coll_name((ct_coll)c));
        return;
    }
    for (int i = 0; i < ct_algorithm_count() && used < len; i++) {
        const ct_algorithm_info *a = ct_algorithm_get(i);
        if ((int)a->coll == coll)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", a->name);
    }
}

/* A whole number in [lo, hi] at key, or a message naming the key and what it allows. */
static int whole_of(const jval *e, const char *key, double lo, double hi, double *out,
                    char *why, size_t len)
{
    const jval *v = member(e, key);
    if (!v) {
        snprintf(why, len, "%s: missing", key);
        return -1;
    }
    if (v->t != J_NUM) {
        snprintf(why, len, "%s: not a number", key);
        return -1;
    }
    if (v->num != floor(v->num)) {
        snprintf(why, len, "%s: %.15g is not an integer", key, v->num);
        return -1;
    }
    if (v->num < lo || v->num > hi) {
        snprintf(why, len, "%s: %.15g is out of range: allowed %.0f to %.0f", key, v->num, lo, hi);
        return -1;
    }
    *out = v->num;
    return 0;
}

/* The operation of an entry: "bcast" ..., "ibcast" ... for the non-blocking form (kind
 * FORM_NONBLOCKING), "bcast_init" ... for the persistent one (FORM_PERSISTENT). */
static int check_op(const jval *e, int *coll, int *nonblocking, char *why, size_t len)
{
    char names[640];
    const jval *op = member(e, "op");
    if (!op || op->t != J_STR) {
        snprintf(why, len, "op: %s", op ? "not a string" : "missing");
        return -1;
    }
    *nonblocking = FORM_BLOCKING;
    size_t n = strlen(op->str);
    if ((*coll = ct_coll_from_name(op->str)) < 0 && op->str[0] == 'i' &&
        (*coll = ct_coll_from_name(op->str + 1)) >= 0)
        *nonblocking = FORM_NONBLOCKING;
    if (*coll < 0 && n > 5 && n < 64 && !strcmp(op->str + n - 5, "_init")) {
        char base[64];
        snprintf(base, sizeof base, "%.*s", (int)(n - 5), op->str);
        if ((*coll = ct_coll_from_name(base)) >= 0)
            *nonblocking = FORM_PERSISTENT;
    }
    if (*coll < 0) {
        list_names(-1, names, sizeof names);
        int m = snprintf(why, len, "op: '%.64s' is not an operation; valid: %s", op->str, names);
        if (m > 0 && (size_t)m < len) /* a long list of names may leave no room: then without */
            snprintf(why + m, len - (size_t)m, ", each with an 'i' before it for the "
                                               "non-blocking form or '_init' after it for "
                                               "the persistent one");
        return -1;
    }
    return 0;
}

/* The algorithm, segment size and (non-blocking) split level of obj: an entry, or
 * an entry's no_thread choice. */
static int check_choice(const jval *obj, int coll, int nonblocking, const char *prefix,
                        choice *out, char *why, size_t len)
{
    char names[640], key[48];
    const char *op = ct_coll_name((ct_coll)coll);
    double seg = 0;
    snprintf(key, sizeof key, "%ssegsize", prefix);
    if (whole_of(obj, "segsize", 0, 1073741824.0, &seg, why, len)) {
        if (*prefix) { /* name the nested key */
            char inner[512];
            snprintf(inner, sizeof inner, "%s%s", prefix, why);
            snprintf(why, len, "%s", inner);
        }
        return -1;
    }
    const jval *a = member(obj, "algorithm");
    if (!a || a->t != J_STR) {
        snprintf(why, len, "%salgorithm: %s", prefix, a ? "not a string" : "missing");
        return -1;
    }
    const ct_algorithm_info *info = ct_algorithm_find((ct_coll)coll, a->str);
    if (!info) {
        list_names(coll, names, sizeof names);
        snprintf(why, len, "%salgorithm: '%.64s' is not %s %s algorithm; valid: %s", prefix,
                 a->str, strchr("aeiou", op[0]) ? "an" : "a", op, names);
        return -1;
    }
    if (seg > 0 && !(info->flags & CT_ALG_SEGMENTABLE)) {
        snprintf(why, len, "%s: %.0f given for %s '%s', which takes no segment size; use 0",
                 key, seg, op, a->str);
        return -1;
    }
    out->segsize = (long long)seg;
    out->split = CT_SPLIT_AUTO;
    const jval *split = nonblocking ? member(obj, "split") : NULL;
    if (split && !(split->t == J_STR && !strcmp(split->str, "model"))) {
        double levels = 0;
        if (whole_of(obj, "split", 0, 63, &levels, why, len)) {
            char inner[512];
            snprintf(inner, sizeof inner, "%s%s (or \"model\")", prefix, why);
            snprintf(why, len, "%s", inner);
            return -1;
        }
        out->split = (int)levels;
    }
    out->algorithm = strdup(info->name);
    return out->algorithm ? 0 : -1;
}

/* One entry of the table: the operation, the sizes and the choice, each checked with a
 * message that names the field and what it allows. */
static int check_entry(const jval *e, entry *out, char *why, size_t len)
{
    double ranks = 0, bytes = 0;
    if (e->t != J_OBJ) {
        snprintf(why, len, "not an object");
        return -1;
    }
    memset(out, 0, sizeof *out);
    /* ranks fit a C int; sizes up to 2^53 (exact in a double) */
    if (check_op(e, &out->coll, &out->nonblocking, why, len) ||
        whole_of(e, "ranks", 1, 2147483647.0, &ranks, why, len) ||
        whole_of(e, "size_bytes", 0, 9007199254740992.0, &bytes, why, len) ||
        check_choice(e, out->coll, out->nonblocking, "", &out->best, why, len))
        return -1;
    out->ranks = (int)ranks;
    out->size = (long long)bytes;
    if (!out->nonblocking)
        return 0;
    const jval *progress = member(e, "progress");
    if (progress && (progress->t != J_STR ||
                     (strcmp(progress->str, "thread") && strcmp(progress->str, "none")))) {
        snprintf(why, len, "progress: must be \"thread\" or \"none\"");
        return -1;
    }
    out->progress_thread = progress && !strcmp(progress->str, "thread");
    const jval *alt = member(e, "no_thread");
    if (alt && !out->progress_thread) {
        snprintf(why, len, "no_thread: given for an entry measured without the thread "
                           "(progress \"none\")");
        return -1;
    }
    if (alt && alt->t != J_OBJ) {
        snprintf(why, len, "no_thread: not an object");
        return -1;
    }
    return alt ? check_choice(alt, out->coll, 1, "no_thread.", &out->no_thread, why, len) : 0;
}

int ct_table_load(const char *path, char *why, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, len, "cannot open %s", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = size > 0 && size < (64L << 20) ? malloc((size_t)size + 1) : NULL;
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(text);
        snprintf(why, len, "cannot read %s", path);
        return -1;
    }
    fclose(f);
    text[size] = '\0';
    jparser j = {text, 0, 1, NULL};
    jval doc;
    int bad = parse_value(&j, &doc);
    if (!bad) {
        skip(&j);
        if (*j.p)
            bad = fail(&j, "text follows the end of the document");
    }
    free(text);
    if (bad) {
        jfree(&doc);
        snprintf(why, len, "%s is not valid JSON: line %d: %s", path, j.line,
                 j.error ? j.error : "out of memory");
        return -1;
    }
    double version = 0, cores = 0;
    const char *schema = str_of(&doc, "schema");
    const jval *machine = member(&doc, "machine"), *mpi = member(&doc, "mpi");
    const jval *list = member(&doc, "entries");
    char model[256];
    cpu_model(model, sizeof model);
    const char *their_model = str_of(machine, "cpu_model");
    const char *impl = str_of(mpi, "implementation"), *mver = str_of(mpi, "version");
    int rc = -1;
    if (!schema || strcmp(schema, "colltune-table"))
        snprintf(why, len, "%s: schema is not colltune-table", path);
    else if (num_of(&doc, "schema_version", &version) || version != 1)
        snprintf(why, len, "%s: schema_version %g is not supported (this colltune reads 1)",
                 path, version);
    else if (!list || list->t != J_ARR)
        snprintf(why, len, "%s: entries: missing or not a list", path);
    else if (!their_model || num_of(machine, "logical_cores", &cores))
        snprintf(why, len, "%s: machine: cpu_model and logical_cores needed", path);
    else if (strcmp(their_model, model) || (long)cores != sysconf(_SC_NPROCESSORS_ONLN))
        snprintf(why, len, "%s was made for another machine (%s, %g cores; this one: %s, "
                           "%ld cores)", path, their_model, cores, model,
                 sysconf(_SC_NPROCESSORS_ONLN));
    else if (!impl || !mver)
        snprintf(why, len, "%s: mpi: implementation and version needed", path);
    else if (!same_mpi(impl, mver))
        snprintf(why, len, "%s was made for %s %s, not the MPI this program runs", path, impl,
                 mver);
    else
        rc = 0;
    char mpi_text[sizeof loaded_mpi]; /* impl and mver live in doc, freed below */
    snprintf(mpi_text, sizeof mpi_text, "%s %s", impl ? impl : "", mver ? mver : "");
    entry *es = NULL;
    int n = 0;
    if (rc == 0 && !(es = calloc((size_t)list->n + 1, sizeof *es)))
        rc = -1;
    for (int i = 0; rc == 0 && i < list->n; i++) {
        char entry_why[768];
        if (check_entry(&list->items[i], &es[n], entry_why, sizeof entry_why) != 0) {
            snprintf(why, len, "%s: %s (entry %d, line %d)", path, entry_why, i + 1,
                     list->items[i].line);
            free(es[n].best.algorithm);
            free(es[n].no_thread.algorithm);
            rc = -1;
        } else {
            n++;
        }
    }
    jfree(&doc);
    if (rc != 0) {
        for (int i = 0; i < n; i++) {
            free(es[i].best.algorithm);
            free(es[i].no_thread.algorithm);
        }
        free(es);
        return -1;
    }
    ct_table_unload();
    pthread_mutex_lock(&lock);
    snprintf(loaded_path, sizeof loaded_path, "%s", path);
    snprintf(loaded_mpi, sizeof loaded_mpi, "%s", mpi_text);
    entries = es;
    nentries = n;
    set_op_status();
    atomic_store(&loaded, n);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
    return 0;
}

void ct_table_describe(char *path, size_t path_len, char *mpi, size_t mpi_len)
{
    pthread_mutex_lock(&lock);
    snprintf(path, path_len, "%s", nentries ? loaded_path : "");
    snprintf(mpi, mpi_len, "%s", nentries ? loaded_mpi : "");
    pthread_mutex_unlock(&lock);
}

int ct_table_loaded(void)
{
    return atomic_load(&loaded) > 0;
}

int ct_table_op_status(ct_coll coll)
{
    return (int)coll >= 0 && (int)coll < CT_NCOLL ? atomic_load(&op_status[coll])
                                                  : CT_TABLE_NO_ENTRY;
}

/* Whether x is at least as near key u as key v in log scale, ties to the smaller key:
 * for u < v, |log x - log u| <= |log v - log x| is x*x <= u*v, in exact integers (a key or
 * a size of 0 needs no logarithm: only 0 is nearer 0 than any positive key). The rule of
 * python/colltune/tune/table.py (nearest), which export-rules uses: both must send every
 * call to the same entry (tests/python/test_table_lookup.py). 128-bit products: sizes
 * reach 2^40 and more. */
static int nearer(long long u, long long v, long long x)
{
    if (u == v)
        return 1;
    if (u > v)
        return !nearer(v, u, x);
    unsigned __int128 xx = (unsigned __int128)(x > 0 ? x : 0) * (unsigned __int128)(x > 0 ? x : 0);
    return xx <= (unsigned __int128)u * (unsigned __int128)v;
}

/* The entry for the call among those of (coll, nonblocking): the nearest
 * communicator size, then the nearest message size, both in log scale, the
 * smaller on ties. Under the lock. */
static const entry *nearest(ct_coll coll, int nonblocking, int comm_size, long long bytes)
{
    int best_ranks = -1;
    for (int i = 0; i < nentries; i++) {
        const entry *e = &entries[i];
        if (e->coll != (int)coll || e->nonblocking != nonblocking)
            continue;
        if (best_ranks < 0 || (e->ranks != best_ranks && nearer(e->ranks, best_ranks, comm_size)))
            best_ranks = e->ranks;
    }
    const entry *pick = NULL;
    for (int i = 0; best_ranks >= 0 && i < nentries; i++) {
        const entry *e = &entries[i];
        if (e->coll != (int)coll || e->nonblocking != nonblocking || e->ranks != best_ranks)
            continue;
        if (!pick || (e->size != pick->size && nearer(e->size, pick->size, bytes)))
            pick = e;
    }
    return pick;
}

/* 0 and *out filled when c names a colltune algorithm; -1 for native or none. */
static int answer(ct_coll coll, const choice *c, int progress_thread, ct_table_choice *out)
{
    if (!c->algorithm || !strcmp(c->algorithm, "native"))
        return CT_TABLE_NATIVE;
    const ct_algorithm_info *info = ct_algorithm_find(coll, c->algorithm);
    out->algorithm = info->name; /* the registry's storage outlives any table */
    out->info = info;
    out->segsize = c->segsize;
    out->split = c->split;
    out->progress_thread = progress_thread;
    return 0;
}

int ct_table_lookup(ct_coll coll, int comm_size, long long bytes, ct_table_choice *choice)
{
    if (!atomic_load(&loaded))
        return CT_TABLE_NO_ENTRY;
    int known = cached(coll, 0, comm_size, bytes, 0, choice);
    if (known != 1)
        return known;
    pthread_mutex_lock(&lock);
    int gen = atomic_load(&generation);
    const entry *pick = nearest(coll, 0, comm_size, bytes);
    int rc = pick ? answer(coll, &pick->best, 0, choice) : CT_TABLE_NO_ENTRY;
    pthread_mutex_unlock(&lock);
    return remember(gen, coll, 0, comm_size, bytes, 0, rc, choice);
}

/* A started form's lookup (kind FORM_NONBLOCKING or FORM_PERSISTENT): its own entries,
 * else the blocking operation's. */
static int lookup_started(int kind, ct_coll coll, int comm_size, long long bytes,
                          int thread_running, ct_table_choice *choice)
{
    if (!atomic_load(&loaded))
        return CT_TABLE_NO_ENTRY;
    thread_running = thread_running != 0;
    int known = cached(coll, kind, comm_size, bytes, thread_running, choice);
    if (known != 1)
        return known;
    pthread_mutex_lock(&lock);
    int gen = atomic_load(&generation);
    const entry *pick = nearest(coll, kind, comm_size, bytes);
    int rc;
    if (!pick) { /* no entries of this form: the blocking operation's choice */
        pick = nearest(coll, 0, comm_size, bytes);
        rc = pick ? answer(coll, &pick->best, 0, choice) : CT_TABLE_NO_ENTRY;
    } else if (pick->progress_thread && !thread_running) {
        rc = answer(coll, &pick->no_thread, 0, choice);
    } else {
        rc = answer(coll, &pick->best, pick->progress_thread, choice);
    }
    pthread_mutex_unlock(&lock);
    return remember(gen, coll, kind, comm_size, bytes, thread_running, rc, choice);
}

int ct_table_lookup_nonblocking(ct_coll coll, int comm_size, long long bytes,
                                int thread_running, ct_table_choice *choice)
{
    return lookup_started(FORM_NONBLOCKING, coll, comm_size, bytes, thread_running, choice);
}

int ct_table_lookup_persistent(ct_coll coll, int comm_size, long long bytes,
                               int thread_running, ct_table_choice *choice)
{
    return lookup_started(FORM_PERSISTENT, coll, comm_size, bytes, thread_running, choice);
}

int ct_table_wants_progress(void)
{
    int wants = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nentries && !wants; i++)
        wants = entries[i].nonblocking && entries[i].progress_thread &&
                entries[i].best.algorithm && strcmp(entries[i].best.algorithm, "native");
    pthread_mutex_unlock(&lock);
    return wants;
}
