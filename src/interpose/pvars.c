/*
 * colltune's MPI_T performance variables (issue 39): the drop-in defines the MPI_T pvar
 * functions over PMPI so that a tool listing the library's pvars (TAU, Score-P, Caliper)
 * sees colltune's after them: indices num_library .. num_library + CT_NCOLL * NKIND - 1,
 * every other index and every library handle forwarded to PMPI.
 *
 * Per operation (ct_coll_name): colltune_<op>_calls_colltune, _calls_native (counters),
 * _time (timer, seconds, double), _bytes and _shm_bytes (counters); bound to no object,
 * read-only and continuous. They read the collective profile's counters of this rank
 * (src/monitor/profile.h), so they count while COLLTUNE_PROFILE=on and read 0 while it is
 * off (the profile costs nothing then). They are readable before MPI_Init and after
 * MPI_T_init_thread alone (zeros).
 *
 * A handle of ours is the address of an entry of a fixed pool, so that it can be told
 * from the library's without asking the library.
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "colltune.h"
#include "monitor/profile.h"

enum { KIND_COLLTUNE, KIND_NATIVE, KIND_TIME, KIND_BYTES, KIND_SHM, NKIND };
enum { NHANDLES = 1024 };

static const char *const kind_names[NKIND] = {"calls_colltune", "calls_native", "time",
                                              "bytes", "shm_bytes"};
static const char *const kind_docs[NKIND] = {
    "calls served by a colltune algorithm",
    "calls left to the MPI library (native)",
    "seconds inside the calls (non-blocking and persistent: start to completion)",
    "bytes of the calls (per rank, as the tuning table's lookup counts them)",
    "bytes colltune's shared-memory steps copied for the operation"};

typedef struct ours {
    _Atomic int used;
    int index; /* ours: 0 .. CT_NCOLL * NKIND - 1 */
    MPI_T_pvar_session session;
} ours;

static ours handles[NHANDLES];

static int library_num(void)
{
    int n = 0;
    if (PMPI_T_pvar_get_num(&n) != MPI_SUCCESS)
        n = 0;
    return n;
}

static ours *our_handle(MPI_T_pvar_handle h)
{
    const char *p = (const char *)h, *lo = (const char *)handles;
    if (p < lo || p >= lo + sizeof handles)
        return NULL;
    return (ours *)(void *)(lo + (size_t)(p - lo) / sizeof(ours) * sizeof(ours));
}

static void put_string(char *dst, int *len, const char *src)
{
    int need = (int)strlen(src) + 1;
    if (dst && len && *len > 0)
        snprintf(dst, (size_t)*len, "%s", src);
    if (len)
        *len = need;
}

int MPI_T_pvar_get_num(int *num_pvar)
{
    int rc = PMPI_T_pvar_get_num(num_pvar);
    if (rc == MPI_SUCCESS)
        *num_pvar += CT_NCOLL * NKIND;
    return rc;
}

int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                        int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                        int *desc_len, int *bind, int *readonly, int *continuous, int *atomic)
{
    int lib = library_num(), k = pvar_index - lib;
    if (pvar_index < lib)
        return PMPI_T_pvar_get_info(pvar_index, name, name_len, verbosity, var_class, datatype,
                                    enumtype, desc, desc_len, bind, readonly, continuous,
                                    atomic);
    if (k >= CT_NCOLL * NKIND)
        return MPI_T_ERR_INVALID_INDEX;
    int op = k / NKIND, kind = k % NKIND;
    char text[256];
    snprintf(text, sizeof text, "colltune_%s_%s", ct_coll_name((ct_coll)op), kind_names[kind]);
    put_string(name, name_len, text);
    snprintf(text, sizeof text, "colltune: MPI_%s: %s on this rank, from colltune's "
             "collective profile (COLLTUNE_PROFILE=on; 0 while it is off)",
             ct_coll_name((ct_coll)op), kind_docs[kind]);
    put_string(desc, desc_len, text);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_USER_BASIC;
    if (var_class)
        *var_class = kind == KIND_TIME ? MPI_T_PVAR_CLASS_TIMER : MPI_T_PVAR_CLASS_COUNTER;
    if (datatype)
        *datatype = kind == KIND_TIME ? MPI_DOUBLE : MPI_UNSIGNED_LONG_LONG;
    if (enumtype)
        *enumtype = MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly)
        *readonly = 1;
    if (continuous)
        *continuous = 1;
    if (atomic)
        *atomic = 0;
    return MPI_SUCCESS;
}

int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    int rc = PMPI_T_pvar_get_index(name, var_class, pvar_index);
    if (rc == MPI_SUCCESS || !name || strncmp(name, "colltune_", 9) != 0)
        return rc;
    int lib = library_num();
    for (int k = 0; k < CT_NCOLL * NKIND; k++) {
        char text[128];
        int kind = k % NKIND;
        snprintf(text, sizeof text, "colltune_%s_%s", ct_coll_name((ct_coll)(k / NKIND)),
                 kind_names[kind]);
        if (strcmp(text, name) != 0)
            continue;
        int cls = kind == KIND_TIME ? MPI_T_PVAR_CLASS_TIMER : MPI_T_PVAR_CLASS_COUNTER;
        if (var_class != cls)
            return MPI_T_ERR_INVALID_NAME;
        *pvar_index = lib + k;
        return MPI_SUCCESS;
    }
    return rc;
}

int MPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    return PMPI_T_pvar_session_create(session);
}

int MPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    MPI_T_pvar_session s = *session;
    int rc = PMPI_T_pvar_session_free(session);
    if (rc == MPI_SUCCESS) /* our handles of the session go with it */
        for (int i = 0; i < NHANDLES; i++)
            if (atomic_load(&handles[i].used) && handles[i].session == s)
                atomic_store(&handles[i].used, 0);
    return rc;
}

int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                            MPI_T_pvar_handle *handle, int *count)
{
    int lib = library_num();
    if (pvar_index < lib)
        return PMPI_T_pvar_handle_alloc(session, pvar_index, obj_handle, handle, count);
    if (pvar_index - lib >= CT_NCOLL * NKIND)
        return MPI_T_ERR_INVALID_INDEX;
    for (int i = 0; i < NHANDLES; i++) {
        int zero = 0;
        if (atomic_compare_exchange_strong(&handles[i].used, &zero, 1)) {
            handles[i].index = pvar_index - lib;
            handles[i].session = session;
            *handle = (MPI_T_pvar_handle)(void *)&handles[i];
            *count = 1;
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_OUT_OF_HANDLES;
}

int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    ours *h = our_handle(*handle);
    if (!h)
        return PMPI_T_pvar_handle_free(session, handle);
    atomic_store(&h->used, 0);
    *handle = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

/* Continuous variables cannot be started or stopped (MPI 4.1, 15.3.7). */
int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return our_handle(handle) ? MPI_T_ERR_PVAR_NO_STARTSTOP : PMPI_T_pvar_start(session, handle);
}

int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return our_handle(handle) ? MPI_T_ERR_PVAR_NO_STARTSTOP : PMPI_T_pvar_stop(session, handle);
}

int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    ours *h = our_handle(handle);
    if (!h)
        return PMPI_T_pvar_read(session, handle, buf);
    if (!atomic_load(&h->used) || h->session != session)
        return MPI_T_ERR_INVALID_HANDLE;
    unsigned long long cc, nc, b, shm;
    double s;
    ct_profile_op_totals(h->index / NKIND, &cc, &nc, &s, &b, &shm);
    switch (h->index % NKIND) {
    case KIND_COLLTUNE: *(unsigned long long *)buf = cc; break;
    case KIND_NATIVE: *(unsigned long long *)buf = nc; break;
    case KIND_TIME: *(double *)buf = s; break;
    case KIND_BYTES: *(unsigned long long *)buf = b; break;
    default: *(unsigned long long *)buf = shm; break;
    }
    return MPI_SUCCESS;
}

/* Read-only variables cannot be reset (MPI 4.1, 15.3.7). */
int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return our_handle(handle) ? MPI_T_ERR_PVAR_NO_WRITE : PMPI_T_pvar_reset(session, handle);
}

int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    return our_handle(handle) ? MPI_T_ERR_PVAR_NO_WRITE
                              : PMPI_T_pvar_readreset(session, handle, buf);
}
