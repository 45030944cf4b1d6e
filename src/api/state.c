/*
 * colltune's state of a communicator (its private duplicate, kept jobs, node layout)
 * and the node's shared segments, freed before MPI finalizes.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"
#include "../sched/cma.h"

/* ---- Per-communicator state --------------------------------------------- */

int ct_state_keyval = MPI_KEYVAL_INVALID;
atomic_uint ct_state_generation = 1;
_Thread_local ct_state_cache ct_state_last CT_TLS_FAST; /* engine.h: ct_comm_state_find */
static pthread_mutex_t keyval_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Every live segment, freed before MPI finalizes -------------------------------
 * A segment's group communicator must go before MPI finalizes (MPI_COMM_WORLD's
 * attributes go late, in ompi_comm_finalize: freeing there crashed Debian's Open MPI
 * 4.1.4 when segments were MPI windows, issue 37). MPI deletes MPI_COMM_SELF's attributes
 * first: an attribute there frees every segment still alive, on every rank in the order
 * they were made (the order in which the ranks made them together), before anything else
 * goes. Under keyval_lock. */
typedef struct live_segment {
    void *base;   /* the mapping (flags, then data) */
    size_t len;
    MPI_Comm comm;
    shm_segment *owner; /* NULL once its state is gone (left for MPI_Finalize) */
} live_segment;
static live_segment *live;
static size_t nlive, live_cap;
static int self_keyval = MPI_KEYVAL_INVALID;

static int segments_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    pthread_mutex_lock(&keyval_lock);
    for (size_t i = 0; i < nlive; i++) {
        munmap(live[i].base, live[i].len);
        PMPI_Comm_free(&live[i].comm);
        if (live[i].owner)
            live[i].owner->state = 0; /* the communicator's own deletion frees nothing */
    }
    free(live);
    live = NULL;
    nlive = live_cap = 0;
    pthread_mutex_unlock(&keyval_lock);
    return MPI_SUCCESS;
}

/* Records seg, just made; the MPI_COMM_SELF attribute on the first. */
static int segment_track(shm_segment *seg)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&keyval_lock);
    if (self_keyval == MPI_KEYVAL_INVALID &&
        ((rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, segments_finalize, &self_keyval,
                                       NULL)) != MPI_SUCCESS ||
         (rc = PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL)) != MPI_SUCCESS))
        self_keyval = MPI_KEYVAL_INVALID;
    if (rc == MPI_SUCCESS && nlive == live_cap) {
        size_t cap = live_cap ? 2 * live_cap : 8;
        live_segment *grown = realloc(live, cap * sizeof *grown);
        if (grown) {
            live = grown;
            live_cap = cap;
        } else {
            rc = MPI_ERR_NO_MEM;
        }
    }
    if (rc == MPI_SUCCESS)
        live[nlive++] = (live_segment){seg->base, seg->map_bytes, seg->comm, seg};
    pthread_mutex_unlock(&keyval_lock);
    return rc;
}

/* The state owning seg goes. collective: its window is freed now, on every rank of the
 * segment at once; otherwise it stays for MPI_Finalize. */
static void segment_untrack(shm_segment *seg, int collective)
{
    live_segment gone = {NULL, 0, MPI_COMM_NULL, NULL};
    pthread_mutex_lock(&keyval_lock);
    for (size_t i = 0; i < nlive; i++) {
        if (live[i].owner != seg)
            continue;
        if (collective) {
            gone = live[i];
            memmove(&live[i], &live[i + 1], (nlive - i - 1) * sizeof *live);
            nlive--;
        } else {
            live[i].owner = NULL;
        }
        break;
    }
    pthread_mutex_unlock(&keyval_lock);
    /* Outside the lock: freeing the communicator may wait for the segment's other ranks,
     * whose other threads may need the lock meanwhile. */
    if (gone.owner) {
        munmap(gone.base, gone.len);
        PMPI_Comm_free(&gone.comm);
    }
}

/* Drops a reference; the last frees the state. collective: the caller is the attribute's
 * deletion (MPI_Comm_free, on every rank at once), where the segment's communicator can
 * go too; after a non-blocking job outlived the communicator the ranks release at
 * different moments, and the segment is left to MPI_Finalize. */
void ct_state_unref(comm_state *st, int collective)
{
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    shm_segment *segs[2] = {&st->shm, &st->node_shm};
    for (int i = 0; i < 2; i++)
        if (segs[i]->state > 0)
            segment_untrack(segs[i], collective);
    if (st->priv != MPI_COMM_NULL)
        PMPI_Comm_free(&st->priv);
    for (int i = 0; i < JOB_SLOTS; i++)
        ct_job_free(&st->slots[i].job);
    free(st->node_of);
    free(st);
}

/* ---- The node's shared segment ------------------------------------------------ */


/* COLLTUNE_SHM_BYTES (bytes, K/M/G suffixes), default 4 MiB: the data of each lane of a
 * communicator's segment; its size bounds the shared-memory algorithms' chunks. */
static size_t shm_segment_bytes(void)
{
    const char *e = getenv("COLLTUNE_SHM_BYTES");
    if (!e || !*e)
        return CT_SHM_DEFAULT_BYTES;
    char *end;
    double v = strtod(e, &end);
    double scale = *end == 'K' || *end == 'k' ? 1024.0
                   : *end == 'M' || *end == 'm' ? 1048576.0
                   : *end == 'G' || *end == 'g' ? 1073741824.0
                                                 : 1.0;
    if (v < 4096 / scale || v * scale > 1e12)
        return CT_SHM_DEFAULT_BYTES;
    return (size_t)(v * scale);
}

/* Collective over group (grank its rank): *base is one mapping of len bytes that every
 * rank of the group shares, or the same error on every rank. POSIX shared memory rather
 * than an MPI window (MPI_Win_allocate_shared, before issue 36): a window brings in the
 * library's one-sided component, which Open MPI 5.0.11 announces on stderr ("osc_ucx
 * ... Error: OSC UCX component priority set inside component query failed", every rank,
 * every run), crashes when two threads make windows at once, and whose teardown crashed
 * Debian's Open MPI 4.1.4 in MPI_Finalize. The group's rank 0 creates the object under a
 * name unique to its process, the others open it, and it is unlinked once all have it
 * mapped: nothing is left in /dev/shm, even when a process dies later. */
static int map_shared(MPI_Comm group, int grank, size_t len, void **base)
{
    static atomic_uint made;
    char name[64] = "";
    void *p = MAP_FAILED;
    int fd = -1;
    if (grank == 0) {
        snprintf(name, sizeof name, "/colltune-%ld-%u", (long)getpid(),
                 atomic_fetch_add(&made, 1));
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
            if (fd >= 0)
                shm_unlink(name);
            name[0] = '\0'; /* tells the others: no segment */
        }
    }
    int rc = PMPI_Bcast(name, sizeof name, MPI_CHAR, 0, group);
    if (rc == MPI_SUCCESS && name[0]) {
        if (grank != 0)
            fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0)
            p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (fd >= 0)
        close(fd);
    int mapped = p != MAP_FAILED;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, group);
    if (grank == 0 && name[0])
        shm_unlink(name); /* every rank has it mapped, or gave up */
    if (rc == MPI_SUCCESS && !mapped)
        rc = MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS) {
        if (p != MAP_FAILED)
            munmap(p, len);
        return rc;
    }
    *base = p;
    return MPI_SUCCESS;
}

/* Collective over st->priv, on the first call that needs seg: the segment over the
 * ranks of group (color: ranks of equal color form one group), its flags each set to
 * "done with call 0". It is refused, on every rank alike, when a group's ranks do
 * not all share memory. */
int ct_segment_setup(comm_state *st, shm_segment *seg, int color, int size, int rank)
{
    if (seg->state)
        return MPI_SUCCESS;
    MPI_Comm group, node;
    int rc = PMPI_Comm_split(st->priv, color, rank, &group);
    if (rc != MPI_SUCCESS)
        return rc;
    int gsize = 0, nsize = 0, shared;
    PMPI_Comm_size(group, &gsize);
    if ((rc = PMPI_Comm_split_type(group, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node)) !=
        MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    PMPI_Comm_size(node, &nsize);
    PMPI_Comm_free(&node);
    shared = nsize == gsize;
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MIN, st->priv)) !=
        MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    if (!shared) {
        PMPI_Comm_free(&group);
        seg->state = -1;
        return MPI_SUCCESS;
    }
    int grank;
    PMPI_Comm_rank(group, &grank);
    /* Every lane's flags (SHM_LANES x N cache lines), then every lane's data:
     * pages are only touched as calls use them. */
    size_t lane_flags = (size_t)size * FLAG_STRIDE, data = shm_segment_bytes();
    size_t header = SHM_LANES * lane_flags, len = header + SHM_LANES * data;
    void *base = NULL;
    if ((rc = map_shared(group, grank, len, &base)) != MPI_SUCCESS) {
        PMPI_Comm_free(&group);
        return rc;
    }
    if (grank == 0)
        for (int k = 0; k < SHM_LANES; k++)
            for (int r = 0; r < size; r++)
                atomic_store((_Atomic unsigned long long *)((char *)base + k * lane_flags +
                                                            (size_t)r * FLAG_STRIDE),
                             (unsigned long long)CT_STEP_DONE);
    seg->comm = group;
    seg->base = base;
    seg->map_bytes = len;
    if ((rc = PMPI_Barrier(group)) != MPI_SUCCESS || (rc = segment_track(seg)) != MPI_SUCCESS) {
        munmap(base, len);
        PMPI_Comm_free(&group);
        return rc;
    }
    seg->cma = ct_cma_probe(group);
    for (int k = 0; k < SHM_LANES; k++) {
        seg->lane[k].flags = (char *)base + k * lane_flags;
        seg->lane[k].data = (char *)base + header + k * data;
        seg->lane[k].seq = 0;
    }
    seg->starts = 0;
    seg->bytes = data;
    seg->state = 1;
    return MPI_SUCCESS;
}

static int state_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    atomic_fetch_add_explicit(&ct_state_generation, 1, memory_order_release);
    ct_state_unref(attr, 1);
    return MPI_SUCCESS;
}

/* The node layout of the communicator, computed on its first hierarchical
 * call (collective over it, as that call is): ranks sharing memory
 * (MPI_COMM_TYPE_SHARED) form a node, numbered by first appearance. The
 * testing override COLLTUNE_NODES=R puts ranks r with equal r / R together. */
int ct_node_layout(comm_state *st, int size, int rank)
{
    static unsigned next_id; /* under keyval_lock */
    if (st->node_of)
        return MPI_SUCCESS;
    int *first = malloc(sizeof(int) * (size_t)size), *node_of = malloc(sizeof(int) * (size_t)size);
    int *number = malloc(sizeof(int) * (size_t)size);
    int rc = MPI_SUCCESS;
    if (!first || !node_of || !number) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    const char *env = getenv("COLLTUNE_NODES");
    int ppn = env ? atoi(env) : 0;
    if (ppn > 0) {
        for (int r = 0; r < size; r++)
            first[r] = r - r % ppn;
    } else {
        MPI_Comm node;
        int lowest = rank;
        if ((rc = PMPI_Comm_split_type(st->priv, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                       &node)) != MPI_SUCCESS)
            goto out;
        rc = PMPI_Allreduce(&rank, &lowest, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Allgather(&lowest, 1, MPI_INT, first, 1, MPI_INT, st->priv);
        if (rc != MPI_SUCCESS)
            goto out;
    }
    /* A node's lowest rank opens it: numbering in rank order of those is
     * numbering by first appearance. */
    int k = 0;
    for (int r = 0; r < size; r++) {
        if (first[r] == r)
            number[r] = k++;
        node_of[r] = number[first[r]];
    }
    st->node_of = node_of;
    node_of = NULL;
    pthread_mutex_lock(&keyval_lock);
    st->layout_id = ++next_id ? next_id : ++next_id;
    pthread_mutex_unlock(&keyval_lock);
out:
    free(first);
    free(node_of);
    free(number);
    return rc;
}

int ct_comm_state_get(MPI_Comm comm, comm_state **out)
{
    int rc, flag;
    pthread_mutex_lock(&keyval_lock);
    if (ct_state_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, state_delete, &ct_state_keyval, NULL);
    else
        rc = MPI_SUCCESS;
    pthread_mutex_unlock(&keyval_lock);
    if (rc != MPI_SUCCESS)
        return rc;
    comm_state *st;
    if ((rc = PMPI_Comm_get_attr(comm, ct_state_keyval, &st, &flag)) != MPI_SUCCESS)
        return rc;
    if (!flag) {
        if (!(st = calloc(1, sizeof *st)))
            return MPI_ERR_NO_MEM;
        atomic_init(&st->refs, 1);
        for (int i = 0; i < JOB_SLOTS; i++)
            ct_sched_init(&st->slots[i].job.sched);
        st->current = &st->slots[0];
        if ((rc = PMPI_Comm_size(comm, &st->size)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_rank(comm, &st->rank)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_test_inter(comm, &st->inter)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_dup(comm, &st->priv)) != MPI_SUCCESS ||
            (rc = PMPI_Comm_set_attr(comm, ct_state_keyval, st)) != MPI_SUCCESS) {
            if (st->priv != MPI_COMM_NULL)
                PMPI_Comm_free(&st->priv);
            free(st);
            return rc;
        }
    }
    *out = st;
    return MPI_SUCCESS;
}

