/*
 * The drop-in's Fortran entry points (docs/DROPIN.md, "Fortran").
 *
 * Open MPI's Fortran bindings call PMPI_* directly (mpi_bcast_ in libmpi_mpifh is
 * ompi_bcast_f, which calls PMPI_Bcast; mpi_f08's mpi_bcast_f08_ in libmpi_usempif08
 * calls ompi_bcast_f), and MPICH's mpi_f08 calls PMPI_* for the routines without a
 * buffer (mpi_barrier_f08_, mpi_wait_f08_, mpi_init_f08_, ...). A Fortran program
 * under LD_PRELOAD=libcolltune_pmpi.so would bypass the C wrappers (bindings.c, pmpi.c).
 * So the Fortran symbols of every C function the drop-in defines that Fortran can call
 * are defined here too: each converts its arguments and calls the C MPI_* function,
 * which resolves to colltune's own, so a Fortran call is tuned, logged and monitored
 * like a C one. The MPI 4 persistent collectives (mpi_bcast_init ... mpi_exscan_init,
 * mpi_start, mpi_startall) call the C MPI_*_init and MPI_Start(all) the same way:
 * colltune's where the drop-in defines them, the library's where it does not, so they
 * are right either way. (The large-count _c forms have no Fortran names but mpi_f08's
 * MPICH *_f08ts_large_, which reach the C functions by themselves.)
 *
 * Symbols, per operation: the mpif.h / `use mpi` names under the four manglings of
 * Fortran compilers (mpi_bcast_, mpi_bcast__, mpi_bcast, MPI_BCAST), and the specific
 * procedure the mpi_f08 module binds (mpi_bcast_f08_), which in Open MPI 4.1 and in
 * MPICH 4 takes the same arguments: buffers as plain addresses, handles as their
 * INTEGER (TYPE(MPI_Comm) is one INTEGER, MPI_VAL), statuses in the mpif.h layout,
 * and an OPTIONAL ierror, a NULL pointer when the caller leaves it out. (MPICH's
 * mpi_f08 routines with a buffer are mpi_bcast_f08ts_, which take a C descriptor and
 * call the C MPI_Bcast: colltune's already.)
 *
 * Conversions: handles with MPI_Comm_f2c, MPI_Type_f2c, MPI_Op_f2c, MPI_Info_f2c,
 * MPI_Request_f2c / MPI_Request_c2f, MPI_Message_f2c / c2f; INTEGER arrays of counts
 * and displacements as int arrays; statuses with MPI_Status_c2f, the Fortran
 * MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE recognised by address (MPI_F_STATUS_IGNORE,
 * MPI_F_STATUSES_IGNORE and mpi_f08's MPI_F08_STATUS(ES)_IGNORE); request arrays into a
 * C array and back (completed ones come back as MPI_REQUEST_NULL); the indices of
 * Waitany, Testany, Waitsome and Testsome 1-based; LOGICAL flags as gfortran's .TRUE.
 * (1) and .FALSE. (0). MPI_IN_PLACE and MPI_BOTTOM arrive as the addresses of
 * variables in the MPI's Fortran common blocks, found by name with dlsym (below) and
 * turned into the C constants.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include <mpi.h>

#include "dropin.h" /* CT_HAVE_PERSISTENT_COLL */

typedef MPI_Fint F;

/* Fortran INTEGER arrays (indices, counts) are handed to C as int arrays. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not an int");

#ifndef MPI_F_STATUS_SIZE /* MPI 4's name; the Fortran status is the C one as INTEGERs */
#define MPI_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

enum { F_TRUE = 1, F_FALSE = 0 };

/* ---- MPI_IN_PLACE and MPI_BOTTOM ----------------------------------------------------- */

enum { F_BOTTOM, F_IN_PLACE, F_KINDS, F_PLACES = 8 };

/* Where each MPI keeps them: `element` is an INTEGER's index inside the symbol. The
 * program's common block and the library's are one (the executable's copy, which the
 * dynamic linker binds every reference to), and dlsym(RTLD_DEFAULT) finds that one. */
static const struct {
    int kind;
    const char *symbol;
    int element;
} fortran_places[] = {
#if defined(OPEN_MPI)
/* A common block per constant (ompi/mpi/fortran/base/constants.h), for mpif.h, `use mpi`
 * and mpi_f08 alike, under the mangling of the Fortran compiler it was built with. */
#define OMPI_PLACE(kind, lower, upper)                                                      \
    {kind, lower, 0}, {kind, lower "_", 0}, {kind, lower "__", 0}, {kind, upper, 0}
    OMPI_PLACE(F_BOTTOM, "mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM"),
    OMPI_PLACE(F_IN_PLACE, "mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE"),
#elif defined(MPICH)
    /* mpif.h (and `use mpi`): COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, ... */
    {F_BOTTOM, "mpipriv1_", 0},
    {F_IN_PLACE, "mpipriv1_", 1},
    /* mpi_f08's (its routines with a buffer reach the C functions by themselves) */
    {F_BOTTOM, "MPIR_F08_MPI_BOTTOM", 0},
    {F_IN_PLACE, "MPIR_F08_MPI_IN_PLACE", 0},
#endif
};

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static const char *place_at[F_KINDS][F_PLACES]; /* NULL-terminated when not full */

/* Once, at the first Fortran call: where the constants are (and MPICH's own set-up). */
static void fortran_setup(void)
{
    int used[F_KINDS] = {0};
    for (size_t i = 0; i < sizeof fortran_places / sizeof fortran_places[0]; i++) {
        const char *p = dlsym(RTLD_DEFAULT, fortran_places[i].symbol);
        int k = fortran_places[i].kind;
        if (p && used[k] < F_PLACES)
            place_at[k][used[k]++] = p + fortran_places[i].element * (int)sizeof(MPI_Fint);
    }
#if defined(MPICH)
    /* MPICH's own wrappers run its Fortran layer's set-up at their first call (it points
     * MPI_F_STATUS_IGNORE, MPI_F_STATUSES_IGNORE and the C side's MPI_BOTTOM at the
     * common blocks); these entry points replace some of them, so they do the same. */
    int *need_init = dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit");
    void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mpirinitf_");
    if (need_init && *need_init && init) {
        init();
        *need_init = 0;
    }
#endif
}

static int is_place(int kind, const void *p)
{
    for (int i = 0; i < F_PLACES && place_at[kind][i]; i++)
        if (p == place_at[kind][i])
            return 1;
    return 0;
}

/* A buffer argument: MPI_IN_PLACE and MPI_BOTTOM become the C constants. */
static void *buf(void *p)
{
    pthread_once(&setup_once, fortran_setup);
    if (is_place(F_IN_PLACE, p))
        return MPI_IN_PLACE;
    if (is_place(F_BOTTOM, p))
        return MPI_BOTTOM;
    return p;
}

/* ---- Statuses ------------------------------------------------------------------------- */

static int status_ignored(const F *f)
{
    pthread_once(&setup_once, fortran_setup);
#if MPI_VERSION >= 4
    if (f == (const F *)MPI_F08_STATUS_IGNORE)
        return 1;
#endif
    return f == MPI_F_STATUS_IGNORE;
}

static int statuses_ignored(const F *f)
{
    pthread_once(&setup_once, fortran_setup);
#if MPI_VERSION >= 4
    if (f == (const F *)MPI_F08_STATUSES_IGNORE)
        return 1;
#endif
    return f == MPI_F_STATUSES_IGNORE;
}

/* The C status to pass for Fortran status f: `own`, or MPI_STATUS_IGNORE. */
static MPI_Status *status_in(const F *f, MPI_Status *own)
{
    return status_ignored(f) ? MPI_STATUS_IGNORE : own;
}

static void status_out(int rc, const MPI_Status *c, F *f)
{
    if (c != MPI_STATUS_IGNORE && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS))
        MPI_Status_c2f(c, f);
}

/* ---- Arrays of requests and statuses: on the stack up to STACK ------------------------ */

enum { STACK = 16 };

typedef struct arrays {
    MPI_Request req_stack[STACK];
    MPI_Status st_stack[STACK];
    MPI_Request *req;
    MPI_Status *st; /* MPI_STATUSES_IGNORE when the caller ignores them */
} arrays;

/* Converts n Fortran requests and gives their statuses a place, unless fst is NULL (none
 * wanted) or the Fortran MPI_STATUSES_IGNORE; MPI_ERR_NO_MEM when out of memory. */
static int arrays_in(arrays *a, int n, const F *freq, const F *fst)
{
    int small = n <= STACK;
    size_t len = (size_t)(n > 0 ? n : 1);
    int want_st = fst && !statuses_ignored(fst);
    a->req = small ? a->req_stack : malloc(sizeof(MPI_Request) * len);
    a->st = !want_st ? MPI_STATUSES_IGNORE /* NULL in Open MPI */
            : small  ? a->st_stack
                     : malloc(sizeof(MPI_Status) * len);
    if (!a->req || (want_st && !a->st)) {
        if (a->req != a->req_stack)
            free(a->req);
        if (want_st && a->st != a->st_stack)
            free(a->st);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < n; i++)
        a->req[i] = MPI_Request_f2c(freq[i]);
    return MPI_SUCCESS;
}

/* Back to Fortran: the n requests (completed ones are MPI_REQUEST_NULL now) and the first
 * nst statuses. */
static void arrays_out(arrays *a, int rc, int n, F *freq, F *fst, int nst)
{
    for (int i = 0; i < n; i++)
        freq[i] = MPI_Request_c2f(a->req[i]);
    if (a->st != MPI_STATUSES_IGNORE && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS))
        for (int k = 0; k < nst; k++)
            MPI_Status_c2f(&a->st[k], fst + (size_t)k * MPI_F_STATUS_SIZE);
    if (a->req != a->req_stack)
        free(a->req);
    if (a->st != a->st_stack && a->st != MPI_STATUSES_IGNORE)
        free(a->st);
}

/* ---- The entry points ------------------------------------------------------------------ */

/* Defines the Fortran entry points of one MPI routine: `lower_` with the body that
 * follows, and `lower__`, `lower`, `UPPER` and `lower_f08_` as aliases of it. */
#define FORTRAN(lower, UPPER, params)                                                       \
    void lower##_ params;                                                                   \
    void lower##__ params __attribute__((alias(#lower "_")));                               \
    void lower params __attribute__((alias(#lower "_")));                                   \
    void UPPER params __attribute__((alias(#lower "_")));                                   \
    void lower##_f08_ params __attribute__((alias(#lower "_")));                            \
    void lower##_ params

/* ierror is OPTIONAL in mpi_f08: NULL when left out. */
#define RETURN(rc)                                                                          \
    do {                                                                                    \
        int rc_ = (rc);                                                                     \
        if (ierr)                                                                           \
            *ierr = rc_;                                                                    \
        return;                                                                             \
    } while (0)

#define COMM(f) MPI_Comm_f2c(*(f))
#define TYPE(f) MPI_Type_f2c(*(f))
#define OP(f) MPI_Op_f2c(*(f))

/* A call that makes a request, which it writes to `r_`: the handle goes back to Fortran. */
#define RETURN_REQUEST(call, freq)                                                          \
    do {                                                                                    \
        MPI_Request r_ = MPI_REQUEST_NULL;                                                  \
        int rc2_ = (call);                                                                  \
        if (rc2_ == MPI_SUCCESS)                                                            \
            *(freq) = MPI_Request_c2f(r_);                                                  \
        RETURN(rc2_);                                                                       \
    } while (0)

/* A call that fills the status `st_` (MPI_STATUS_IGNORE when Fortran ignores it). */
#define RETURN_STATUS(call, fst)                                                            \
    do {                                                                                    \
        MPI_Status own_;                                                                    \
        MPI_Status *st_ = status_in(fst, &own_);                                            \
        int rc2_ = (call);                                                                  \
        status_out(rc2_, st_, fst);                                                         \
        RETURN(rc2_);                                                                       \
    } while (0)

/* -- Collectives -- */

FORTRAN(mpi_bcast, MPI_BCAST, (void *b, F *count, F *type, F *root, F *comm, F *ierr))
{
    RETURN(MPI_Bcast(buf(b), *count, TYPE(type), *root, COMM(comm)));
}

FORTRAN(mpi_reduce, MPI_REDUCE,
        (void *sb, void *rb, F *count, F *type, F *op, F *root, F *comm, F *ierr))
{
    RETURN(MPI_Reduce(buf(sb), buf(rb), *count, TYPE(type), OP(op), *root, COMM(comm)));
}

FORTRAN(mpi_allreduce, MPI_ALLREDUCE,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *ierr))
{
    RETURN(MPI_Allreduce(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm)));
}

FORTRAN(mpi_scatter, MPI_SCATTER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *ierr))
{
    RETURN(MPI_Scatter(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root, COMM(comm)));
}

FORTRAN(mpi_gather, MPI_GATHER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *ierr))
{
    RETURN(MPI_Gather(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root, COMM(comm)));
}

FORTRAN(mpi_allgather, MPI_ALLGATHER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *ierr))
{
    RETURN(MPI_Allgather(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), COMM(comm)));
}

FORTRAN(mpi_alltoall, MPI_ALLTOALL,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *ierr))
{
    RETURN(MPI_Alltoall(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), COMM(comm)));
}

FORTRAN(mpi_barrier, MPI_BARRIER, (F *comm, F *ierr))
{
    RETURN(MPI_Barrier(COMM(comm)));
}

FORTRAN(mpi_ibcast, MPI_IBCAST,
        (void *b, F *count, F *type, F *root, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ibcast(buf(b), *count, TYPE(type), *root, COMM(comm), &r_), req);
}

FORTRAN(mpi_ireduce, MPI_IREDUCE,
        (void *sb, void *rb, F *count, F *type, F *op, F *root, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ireduce(buf(sb), buf(rb), *count, TYPE(type), OP(op), *root,
                               COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_iallreduce, MPI_IALLREDUCE,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iallreduce(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm),
                                  &r_),
                   req);
}

FORTRAN(mpi_iscatter, MPI_ISCATTER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iscatter(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root,
                                COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_igather, MPI_IGATHER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Igather(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root,
                               COMM(comm), &r_),
                   req);
}

/* v-variants, reduce-scatters and scans (pmpi_v.c). Counts and displacements are
 * INTEGER arrays, which are int arrays (the _Static_assert above). */
#define INTS(f) ((const int *)(f))

FORTRAN(mpi_allgatherv, MPI_ALLGATHERV,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *comm, F *ierr))
{
    RETURN(MPI_Allgatherv(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs), INTS(displs), TYPE(rt),
                          COMM(comm)));
}

FORTRAN(mpi_alltoallv, MPI_ALLTOALLV,
        (void *sb, F *scs, F *sdispls, F *st, void *rb, F *rcs, F *rdispls, F *rt, F *comm,
         F *ierr))
{
    RETURN(MPI_Alltoallv(buf(sb), INTS(scs), INTS(sdispls), TYPE(st), buf(rb), INTS(rcs),
                         INTS(rdispls), TYPE(rt), COMM(comm)));
}

FORTRAN(mpi_gatherv, MPI_GATHERV,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *root, F *comm,
         F *ierr))
{
    RETURN(MPI_Gatherv(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs), INTS(displs), TYPE(rt),
                       *root, COMM(comm)));
}

FORTRAN(mpi_scatterv, MPI_SCATTERV,
        (void *sb, F *scs, F *displs, F *st, void *rb, F *rc, F *rt, F *root, F *comm,
         F *ierr))
{
    RETURN(MPI_Scatterv(buf(sb), INTS(scs), INTS(displs), TYPE(st), buf(rb), *rc, TYPE(rt),
                        *root, COMM(comm)));
}

FORTRAN(mpi_reduce_scatter, MPI_REDUCE_SCATTER,
        (void *sb, void *rb, F *rcs, F *type, F *op, F *comm, F *ierr))
{
    RETURN(MPI_Reduce_scatter(buf(sb), buf(rb), INTS(rcs), TYPE(type), OP(op), COMM(comm)));
}

FORTRAN(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
        (void *sb, void *rb, F *rc, F *type, F *op, F *comm, F *ierr))
{
    RETURN(MPI_Reduce_scatter_block(buf(sb), buf(rb), *rc, TYPE(type), OP(op), COMM(comm)));
}

FORTRAN(mpi_scan, MPI_SCAN, (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *ierr))
{
    RETURN(MPI_Scan(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm)));
}

FORTRAN(mpi_exscan, MPI_EXSCAN,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *ierr))
{
    RETURN(MPI_Exscan(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm)));
}

/* The rest of the non-blocking family (pmpi.c's Iallgather and Ialltoall, pmpi_v.c's). */

FORTRAN(mpi_iallgather, MPI_IALLGATHER,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iallgather(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), COMM(comm),
                                  &r_),
                   req);
}

FORTRAN(mpi_ialltoall, MPI_IALLTOALL,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ialltoall(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), COMM(comm),
                                 &r_),
                   req);
}

FORTRAN(mpi_ibarrier, MPI_IBARRIER, (F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ibarrier(COMM(comm), &r_), req);
}

FORTRAN(mpi_iallgatherv, MPI_IALLGATHERV,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *comm, F *req,
         F *ierr))
{
    RETURN_REQUEST(MPI_Iallgatherv(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs), INTS(displs),
                                   TYPE(rt), COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_ialltoallv, MPI_IALLTOALLV,
        (void *sb, F *scs, F *sdispls, F *st, void *rb, F *rcs, F *rdispls, F *rt, F *comm,
         F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ialltoallv(buf(sb), INTS(scs), INTS(sdispls), TYPE(st), buf(rb),
                                  INTS(rcs), INTS(rdispls), TYPE(rt), COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_igatherv, MPI_IGATHERV,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *root, F *comm,
         F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Igatherv(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs), INTS(displs),
                                TYPE(rt), *root, COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_iscatterv, MPI_ISCATTERV,
        (void *sb, F *scs, F *displs, F *st, void *rb, F *rc, F *rt, F *root, F *comm,
         F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iscatterv(buf(sb), INTS(scs), INTS(displs), TYPE(st), buf(rb), *rc,
                                 TYPE(rt), *root, COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_ireduce_scatter, MPI_IREDUCE_SCATTER,
        (void *sb, void *rb, F *rcs, F *type, F *op, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ireduce_scatter(buf(sb), buf(rb), INTS(rcs), TYPE(type), OP(op),
                                       COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK,
        (void *sb, void *rb, F *rc, F *type, F *op, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Ireduce_scatter_block(buf(sb), buf(rb), *rc, TYPE(type), OP(op),
                                             COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_iscan, MPI_ISCAN,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iscan(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm), &r_),
                   req);
}

FORTRAN(mpi_iexscan, MPI_IEXSCAN,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Iexscan(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm), &r_),
                   req);
}

/* -- Persistent collectives (MPI 4; Open MPI 5 has them while it says MPI 3.1) --
 * Each calls the C MPI_*_init and MPI_Start(all): colltune's where the drop-in defines
 * them, the library's otherwise (then the Fortran call still works, natively). A
 * persistent request keeps its handle across starts; it is converted back all the same,
 * as the C side may hand out a request of its own. */
#if CT_HAVE_PERSISTENT_COLL
#define INFO(f) MPI_Info_f2c(*(f))

FORTRAN(mpi_bcast_init, MPI_BCAST_INIT,
        (void *b, F *count, F *type, F *root, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Bcast_init(buf(b), *count, TYPE(type), *root, COMM(comm), INFO(info),
                                  &r_),
                   req);
}

FORTRAN(mpi_reduce_init, MPI_REDUCE_INIT,
        (void *sb, void *rb, F *count, F *type, F *op, F *root, F *comm, F *info, F *req,
         F *ierr))
{
    RETURN_REQUEST(MPI_Reduce_init(buf(sb), buf(rb), *count, TYPE(type), OP(op), *root,
                                   COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_allreduce_init, MPI_ALLREDUCE_INIT,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Allreduce_init(buf(sb), buf(rb), *count, TYPE(type), OP(op),
                                      COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_scatter_init, MPI_SCATTER_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *info, F *req,
         F *ierr))
{
    RETURN_REQUEST(MPI_Scatter_init(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root,
                                    COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_gather_init, MPI_GATHER_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *root, F *comm, F *info, F *req,
         F *ierr))
{
    RETURN_REQUEST(MPI_Gather_init(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt), *root,
                                   COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_allgather_init, MPI_ALLGATHER_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Allgather_init(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt),
                                      COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_alltoall_init, MPI_ALLTOALL_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rc, F *rt, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Alltoall_init(buf(sb), *sc, TYPE(st), buf(rb), *rc, TYPE(rt),
                                     COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_barrier_init, MPI_BARRIER_INIT, (F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Barrier_init(COMM(comm), INFO(info), &r_), req);
}

FORTRAN(mpi_allgatherv_init, MPI_ALLGATHERV_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *comm, F *info,
         F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Allgatherv_init(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs),
                                       INTS(displs), TYPE(rt), COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_alltoallv_init, MPI_ALLTOALLV_INIT,
        (void *sb, F *scs, F *sdispls, F *st, void *rb, F *rcs, F *rdispls, F *rt, F *comm,
         F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Alltoallv_init(buf(sb), INTS(scs), INTS(sdispls), TYPE(st), buf(rb),
                                      INTS(rcs), INTS(rdispls), TYPE(rt), COMM(comm),
                                      INFO(info), &r_),
                   req);
}

FORTRAN(mpi_gatherv_init, MPI_GATHERV_INIT,
        (void *sb, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *root, F *comm,
         F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Gatherv_init(buf(sb), *sc, TYPE(st), buf(rb), INTS(rcs), INTS(displs),
                                    TYPE(rt), *root, COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_scatterv_init, MPI_SCATTERV_INIT,
        (void *sb, F *scs, F *displs, F *st, void *rb, F *rc, F *rt, F *root, F *comm,
         F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Scatterv_init(buf(sb), INTS(scs), INTS(displs), TYPE(st), buf(rb),
                                     *rc, TYPE(rt), *root, COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_reduce_scatter_init, MPI_REDUCE_SCATTER_INIT,
        (void *sb, void *rb, F *rcs, F *type, F *op, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Reduce_scatter_init(buf(sb), buf(rb), INTS(rcs), TYPE(type), OP(op),
                                           COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_reduce_scatter_block_init, MPI_REDUCE_SCATTER_BLOCK_INIT,
        (void *sb, void *rb, F *rc, F *type, F *op, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Reduce_scatter_block_init(buf(sb), buf(rb), *rc, TYPE(type), OP(op),
                                                 COMM(comm), INFO(info), &r_),
                   req);
}

FORTRAN(mpi_scan_init, MPI_SCAN_INIT,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Scan_init(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm),
                                 INFO(info), &r_),
                   req);
}

FORTRAN(mpi_exscan_init, MPI_EXSCAN_INIT,
        (void *sb, void *rb, F *count, F *type, F *op, F *comm, F *info, F *req, F *ierr))
{
    RETURN_REQUEST(MPI_Exscan_init(buf(sb), buf(rb), *count, TYPE(type), OP(op), COMM(comm),
                                   INFO(info), &r_),
                   req);
}

FORTRAN(mpi_start, MPI_START, (F *req, F *ierr))
{
    MPI_Request r = MPI_Request_f2c(*req);
    int rc = MPI_Start(&r);
    if (rc == MPI_SUCCESS)
        *req = MPI_Request_c2f(r);
    RETURN(rc);
}

FORTRAN(mpi_startall, MPI_STARTALL, (F *count, F *reqs, F *ierr))
{
    arrays a;
    int rc = arrays_in(&a, *count, reqs, NULL);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    rc = MPI_Startall(*count, a.req);
    arrays_out(&a, rc, rc == MPI_SUCCESS ? *count : 0, reqs, NULL, 0);
    RETURN(rc);
}
#endif /* CT_HAVE_PERSISTENT_COLL */

/* -- Completion -- */

FORTRAN(mpi_wait, MPI_WAIT, (F *req, F *status, F *ierr))
{
    MPI_Request r = MPI_Request_f2c(*req);
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int rc = MPI_Wait(&r, st);
    *req = MPI_Request_c2f(r);
    status_out(rc, st, status);
    RETURN(rc);
}

FORTRAN(mpi_test, MPI_TEST, (F *req, F *flag, F *status, F *ierr))
{
    MPI_Request r = MPI_Request_f2c(*req);
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int done = 0, rc = MPI_Test(&r, &done, st);
    *req = MPI_Request_c2f(r);
    *flag = done ? F_TRUE : F_FALSE;
    if (done)
        status_out(rc, st, status);
    RETURN(rc);
}

FORTRAN(mpi_waitall, MPI_WAITALL, (F *count, F *reqs, F *statuses, F *ierr))
{
    arrays a;
    int rc = arrays_in(&a, *count, reqs, statuses);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    rc = MPI_Waitall(*count, a.req, a.st);
    arrays_out(&a, rc, *count, reqs, statuses, *count);
    RETURN(rc);
}

FORTRAN(mpi_testall, MPI_TESTALL, (F *count, F *reqs, F *flag, F *statuses, F *ierr))
{
    arrays a;
    int done = 0, rc = arrays_in(&a, *count, reqs, statuses);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    rc = MPI_Testall(*count, a.req, &done, a.st);
    *flag = done ? F_TRUE : F_FALSE;
    arrays_out(&a, rc, *count, reqs, statuses, done ? *count : 0);
    RETURN(rc);
}

/* The three ways to ask about an array of requests: the get_status forms (MPI 4.1) leave
 * the requests as they are. */
enum { WAIT, TEST, GET_STATUS };
#define MPI_4_1 (MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1))

/* Waitany, Testany, Request_get_status_any: the index of the one complete, 1-based, or
 * MPI_UNDEFINED. */
static void any(int how, F *count, F *reqs, F *index, F *flag, F *status, F *ierr)
{
    arrays a;
    int rc = arrays_in(&a, *count, reqs, NULL);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int i = MPI_UNDEFINED, done = 1;
    if (how == WAIT)
        rc = MPI_Waitany(*count, a.req, &i, st);
    else if (how == TEST)
        rc = MPI_Testany(*count, a.req, &i, &done, st);
#if MPI_4_1
    else
        rc = MPI_Request_get_status_any(*count, a.req, &i, &done, st);
#endif
    arrays_out(&a, rc, how == GET_STATUS ? 0 : *count, reqs, NULL, 0);
    if (flag)
        *flag = done ? F_TRUE : F_FALSE;
    if (rc == MPI_SUCCESS)
        *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
    if (done)
        status_out(rc, st, status);
    RETURN(rc);
}

FORTRAN(mpi_waitany, MPI_WAITANY, (F *count, F *reqs, F *index, F *status, F *ierr))
{
    any(WAIT, count, reqs, index, NULL, status, ierr);
}

FORTRAN(mpi_testany, MPI_TESTANY, (F *count, F *reqs, F *index, F *flag, F *status, F *ierr))
{
    any(TEST, count, reqs, index, flag, status, ierr);
}

/* Waitsome, Testsome, Request_get_status_some: indices 1-based; statuses[k] belongs to
 * requests[indices[k]], in Fortran as in C (the statuses come back packed). */
static void some(int how, F *incount, F *reqs, F *outcount, F *indices, F *statuses, F *ierr)
{
    arrays a;
    int rc = arrays_in(&a, *incount, reqs, statuses);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    int n = MPI_UNDEFINED;
    if (how == WAIT)
        rc = MPI_Waitsome(*incount, a.req, &n, (int *)indices, a.st);
    else if (how == TEST)
        rc = MPI_Testsome(*incount, a.req, &n, (int *)indices, a.st);
#if MPI_4_1
    else
        rc = MPI_Request_get_status_some(*incount, a.req, &n, (int *)indices, a.st);
#endif
    int done = (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && n != MPI_UNDEFINED ? n : 0;
    arrays_out(&a, rc, how == GET_STATUS ? 0 : *incount, reqs, statuses, done);
    for (int k = 0; k < done; k++)
        indices[k] += 1;
    *outcount = n;
    RETURN(rc);
}

FORTRAN(mpi_waitsome, MPI_WAITSOME,
        (F *incount, F *reqs, F *outcount, F *indices, F *statuses, F *ierr))
{
    some(WAIT, incount, reqs, outcount, indices, statuses, ierr);
}

FORTRAN(mpi_testsome, MPI_TESTSOME,
        (F *incount, F *reqs, F *outcount, F *indices, F *statuses, F *ierr))
{
    some(TEST, incount, reqs, outcount, indices, statuses, ierr);
}

#if MPI_4_1
FORTRAN(mpi_request_get_status_all, MPI_REQUEST_GET_STATUS_ALL,
        (F *count, F *reqs, F *flag, F *statuses, F *ierr))
{
    arrays a;
    int done = 0, rc = arrays_in(&a, *count, reqs, statuses);
    if (rc != MPI_SUCCESS)
        RETURN(rc);
    rc = MPI_Request_get_status_all(*count, a.req, &done, a.st);
    *flag = done ? F_TRUE : F_FALSE;
    arrays_out(&a, rc, 0, reqs, statuses, done ? *count : 0);
    RETURN(rc);
}

FORTRAN(mpi_request_get_status_any, MPI_REQUEST_GET_STATUS_ANY,
        (F *count, F *reqs, F *index, F *flag, F *status, F *ierr))
{
    any(GET_STATUS, count, reqs, index, flag, status, ierr);
}

FORTRAN(mpi_request_get_status_some, MPI_REQUEST_GET_STATUS_SOME,
        (F *incount, F *reqs, F *outcount, F *indices, F *statuses, F *ierr))
{
    some(GET_STATUS, incount, reqs, outcount, indices, statuses, ierr);
}
#endif

FORTRAN(mpi_request_free, MPI_REQUEST_FREE, (F *req, F *ierr))
{
    MPI_Request r = MPI_Request_f2c(*req);
    int rc = MPI_Request_free(&r);
    if (rc == MPI_SUCCESS)
        *req = MPI_Request_c2f(r);
    RETURN(rc);
}

FORTRAN(mpi_request_get_status, MPI_REQUEST_GET_STATUS, (F *req, F *flag, F *status, F *ierr))
{
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int done = 0, rc = MPI_Request_get_status(MPI_Request_f2c(*req), &done, st);
    *flag = done ? F_TRUE : F_FALSE;
    if (done)
        status_out(rc, st, status);
    RETURN(rc);
}

FORTRAN(mpi_cancel, MPI_CANCEL, (F *req, F *ierr))
{
    MPI_Request r = MPI_Request_f2c(*req);
    RETURN(MPI_Cancel(&r));
}

FORTRAN(mpi_op_free, MPI_OP_FREE, (F *op, F *ierr))
{
    MPI_Op o = MPI_Op_f2c(*op);
    int rc = MPI_Op_free(&o);
    if (rc == MPI_SUCCESS)
        *op = MPI_Op_c2f(o);
    RETURN(rc);
}

/* -- Start and end: the progress thread and the monitor start for Fortran programs too -- */

FORTRAN(mpi_init, MPI_INIT, (F *ierr))
{
    pthread_once(&setup_once, fortran_setup);
    RETURN(MPI_Init(NULL, NULL));
}

FORTRAN(mpi_init_thread, MPI_INIT_THREAD, (F *required, F *provided, F *ierr))
{
    pthread_once(&setup_once, fortran_setup);
    int p = MPI_THREAD_SINGLE, rc = MPI_Init_thread(NULL, NULL, *required, &p);
    *provided = p;
    RETURN(rc);
}

FORTRAN(mpi_finalize, MPI_FINALIZE, (F *ierr))
{
    RETURN(MPI_Finalize());
}

/* -- Point-to-point, for the monitor -- */

#define SEND(lower, UPPER, Name)                                                            \
    FORTRAN(lower, UPPER, (void *b, F *count, F *type, F *dest, F *tag, F *comm, F *ierr))  \
    {                                                                                       \
        RETURN(Name(buf(b), *count, TYPE(type), *dest, *tag, COMM(comm)));                  \
    }
#define ISEND(lower, UPPER, Name)                                                           \
    FORTRAN(lower, UPPER,                                                                   \
            (void *b, F *count, F *type, F *dest, F *tag, F *comm, F *req, F *ierr))        \
    {                                                                                       \
        RETURN_REQUEST(Name(buf(b), *count, TYPE(type), *dest, *tag, COMM(comm), &r_), req); \
    }

SEND(mpi_send, MPI_SEND, MPI_Send)
SEND(mpi_ssend, MPI_SSEND, MPI_Ssend)
SEND(mpi_rsend, MPI_RSEND, MPI_Rsend)
SEND(mpi_bsend, MPI_BSEND, MPI_Bsend)
ISEND(mpi_isend, MPI_ISEND, MPI_Isend)
ISEND(mpi_issend, MPI_ISSEND, MPI_Issend)
ISEND(mpi_irsend, MPI_IRSEND, MPI_Irsend)
ISEND(mpi_ibsend, MPI_IBSEND, MPI_Ibsend)
ISEND(mpi_irecv, MPI_IRECV, MPI_Irecv) /* the same arguments, source for dest */

FORTRAN(mpi_recv, MPI_RECV,
        (void *b, F *count, F *type, F *src, F *tag, F *comm, F *status, F *ierr))
{
    RETURN_STATUS(MPI_Recv(buf(b), *count, TYPE(type), *src, *tag, COMM(comm), st_), status);
}

FORTRAN(mpi_sendrecv, MPI_SENDRECV,
        (void *sb, F *sc, F *st, F *dest, F *stag, void *rb, F *rc, F *rt, F *src, F *rtag,
         F *comm, F *status, F *ierr))
{
    RETURN_STATUS(MPI_Sendrecv(buf(sb), *sc, TYPE(st), *dest, *stag, buf(rb), *rc, TYPE(rt),
                               *src, *rtag, COMM(comm), st_),
                  status);
}

FORTRAN(mpi_sendrecv_replace, MPI_SENDRECV_REPLACE,
        (void *b, F *count, F *type, F *dest, F *stag, F *src, F *rtag, F *comm, F *status,
         F *ierr))
{
    RETURN_STATUS(MPI_Sendrecv_replace(buf(b), *count, TYPE(type), *dest, *stag, *src, *rtag,
                                       COMM(comm), st_),
                  status);
}

FORTRAN(mpi_mprobe, MPI_MPROBE, (F *src, F *tag, F *comm, F *msg, F *status, F *ierr))
{
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int rc = MPI_Mprobe(*src, *tag, COMM(comm), &m, st);
    if (rc == MPI_SUCCESS)
        *msg = MPI_Message_c2f(m);
    status_out(rc, st, status);
    RETURN(rc);
}

FORTRAN(mpi_improbe, MPI_IMPROBE,
        (F *src, F *tag, F *comm, F *flag, F *msg, F *status, F *ierr))
{
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status own;
    MPI_Status *st = status_in(status, &own);
    int found = 0, rc = MPI_Improbe(*src, *tag, COMM(comm), &found, &m, st);
    *flag = found ? F_TRUE : F_FALSE;
    if (rc == MPI_SUCCESS && found) {
        *msg = MPI_Message_c2f(m);
        status_out(rc, st, status);
    }
    RETURN(rc);
}
