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
} jval;

typedef struct jparser {
    const char *p;
    int depth;
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
        j->p++;
}

static int parse_value(jparser *j, jval *out);

static int parse_string(jparser *j, char **out)
{
    if (*j->p != '"')
        return -1;
    const char *s = ++j->p;
    size_t cap = 16, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    while (*s && *s != '"') {
        char c = *s++;
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
        return -1;
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
                return -1;
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
        return -1;
    }
}

static int parse_value(jparser *j, jval *out)
{
    memset(out, 0, sizeof *out);
    skip(j);
    if (++j->depth > 32)
        return -1;
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
        out->num = strtod(j->p, &end);
        rc = end == j->p ? -1 : 0;
        j->p = end;
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

typedef struct entry {
    int coll, ranks;
    long long size;
    char *algorithm;
    long long segsize;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;
static int nentries;
static atomic_int loaded; /* nentries, read without the lock on every call */

void ct_table_unload(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nentries; i++)
        free(entries[i].algorithm);
    free(entries);
    entries = NULL;
    nentries = 0;
    atomic_store(&loaded, 0);
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
    jparser j = {text, 0};
    jval doc;
    int bad = parse_value(&j, &doc);
    free(text);
    if (bad) {
        jfree(&doc);
        snprintf(why, len, "%s is not valid JSON", path);
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
    entry *es = NULL;
    int n = 0;
    if (rc == 0 && !(es = calloc((size_t)list->n + 1, sizeof *es)))
        rc = -1;
    for (int i = 0; rc == 0 && i < list->n; i++) {
        const jval *e = &list->items[i];
        const char *op = str_of(e, "op"), *alg = str_of(e, "algorithm");
        double ranks, bytes, seg;
        int coll = op ? ct_coll_from_name(op) : -1;
        if (coll < 0 || !alg || num_of(e, "ranks", &ranks) || num_of(e, "size_bytes", &bytes) ||
            num_of(e, "segsize", &seg) || ranks < 1 || bytes < 0 || seg < 0) {
            snprintf(why, len, "%s: entries[%d]: op, ranks, size_bytes, algorithm, segsize "
                               "needed", path, i);
            rc = -1;
        } else if (strcmp(alg, "native") && !ct_algorithm_find((ct_coll)coll, alg)) {
            snprintf(why, len, "%s: entries[%d]: '%s' is no %s algorithm", path, i, alg, op);
            rc = -1;
        } else {
            es[n] = (entry){coll, (int)ranks, (long long)bytes, strdup(alg), (long long)seg};
            if (!es[n++].algorithm)
                rc = -1;
        }
    }
    jfree(&doc);
    if (rc != 0) {
        for (int i = 0; i < n; i++)
            free(es[i].algorithm);
        free(es);
        return -1;
    }
    ct_table_unload();
    pthread_mutex_lock(&lock);
    entries = es;
    nentries = n;
    atomic_store(&loaded, n);
    pthread_mutex_unlock(&lock);
    return 0;
}

int ct_table_loaded(void)
{
    return atomic_load(&loaded) > 0;
}

static double log_distance(double a, double b)
{
    return fabs(log((a > 0 ? a : 0.5)) - log((b > 0 ? b : 0.5)));
}

int ct_table_lookup(ct_coll coll, int comm_size, long long bytes, ct_table_choice *choice)
{
    int rc = -1;
    pthread_mutex_lock(&lock);
    int best_ranks = -1;
    for (int i = 0; i < nentries; i++) { /* the nearest communicator size, smaller on ties */
        const entry *e = &entries[i];
        if (e->coll != (int)coll)
            continue;
        if (best_ranks < 0) {
            best_ranks = e->ranks;
            continue;
        }
        double d = log_distance(e->ranks, comm_size), db = log_distance(best_ranks, comm_size);
        if (d < db - 1e-12 || (fabs(d - db) <= 1e-12 && e->ranks < best_ranks))
            best_ranks = e->ranks;
    }
    const entry *pick = NULL;
    for (int i = 0; best_ranks >= 0 && i < nentries; i++) { /* then the nearest size */
        const entry *e = &entries[i];
        if (e->coll != (int)coll || e->ranks != best_ranks)
            continue;
        if (!pick) {
            pick = e;
            continue;
        }
        double d = log_distance((double)e->size, (double)bytes);
        double dp = log_distance((double)pick->size, (double)bytes);
        if (d < dp - 1e-12 || (fabs(d - dp) <= 1e-12 && e->size < pick->size))
            pick = e;
    }
    if (pick && strcmp(pick->algorithm, "native")) {
        const ct_algorithm_info *info = ct_algorithm_find(coll, pick->algorithm);
        choice->algorithm = info->name; /* the registry's storage outlives any table */
        choice->segsize = pick->segsize;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
