/* The sequential-task-flow runtime (see stf.h). One lock guards the task graph (nodes, edges,
 * handles' current versions); one the ready queue; one the requests handed to the thread
 * that tests them. Graph nodes are tasks, sends and receives: a send is a reader of the
 * version it sends (the next writer waits for it), a receive a writer of this rank's copy. */
#include "stf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef CT_HAVE_DYN
#include "../dyn/dyn.h"
#endif

enum { N_TASK, N_SEND, N_RECV };

typedef struct node node;
typedef struct copy {
    void *buf;
    int refs; /* the readers that hold it, plus one while it is the current version's copy */
} copy;
typedef struct version {
    int ready; /* the producing task has finished (or there was none) */
    void *dyn; /* ct_dyn_data of this version once a dyn send was posted */
    struct version *next;
} version;

struct node {
    int kind, deps, done, priority;
    long seq;
    node **succ;
    int nsucc, capsucc;
    node *next_all;
    /* task */
    ct_stf_fn fn;
    void *arg;
    int n;
    void **bufs;
    copy **copies; /* copies to release when done (n entries, NULL where none) */
    version **outs; /* versions this task produces (n entries, NULL where none) */
    /* send / receive */
    ct_stf_data *h;
    version *ver;
    int peer, tag;
    void *buf;
};

struct ct_stf_data {
    int owner, count;
    MPI_Datatype type;
    int type_size;
    void *home;
    int vid; /* the current version's number: the same on every rank, the transfers' tag */
    /* owner */
    node *writer;
    node **readers;
    int nreaders, capreaders;
    version *ver;
    unsigned char *sent; /* ranks the current version was sent to */
    /* other ranks */
    copy *cur;
    ct_stf_data *next;
};

typedef struct pending_req {
    MPI_Request req;
    node *n;
} pending_req;

struct ct_stf {
    MPI_Comm comm; /* private duplicate (plain MPI back end) */
    int rank, size, nworkers, tag_ub;
    ct_stf_comm how;
    pthread_mutex_t lock; /* graph */
    long pending;         /* this rank's nodes not done */
    long next_seq;
    int next_vid;
    node *all_nodes;
    version *all_versions;
    ct_stf_data *handles;
    /* ready queue: a binary heap on (priority desc, seq asc) */
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    node **heap;
    int nheap, capheap, stop;
    pthread_t *threads;
    /* requests posted by any thread, tested by the waiting thread */
    pthread_mutex_t rlock;
    pending_req *inbox;
    int ninbox, capinbox;
    ct_stf_stats stats;
    /* The first MPI or dyn error of a transfer, returned by ct_stf_wait_all. A transfer
     * that could not be posted is handed on as MPI_REQUEST_NULL and counted done by the
     * waiting loop, so the graph still runs out instead of waiting for it forever. */
    atomic_int error;
};

static void note_error(ct_stf *s, int rc)
{
    int none = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        atomic_compare_exchange_strong(&s->error, &none, rc);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort(); /* out of memory in the runtime: nothing sensible to fall back to */
    return q;
}

#define GROW(arr, len, cap)                                                       \
    do {                                                                          \
        if ((len) == (cap)) {                                                     \
            (cap) = (cap) ? 2 * (cap) : 4;                                        \
            (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));               \
        }                                                                         \
    } while (0)

/* ---- ready queue ---- */

static int before(const node *a, const node *b)
{
    return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}

static void queue_push(ct_stf *s, node *t)
{
    pthread_mutex_lock(&s->qlock);
    GROW(s->heap, s->nheap, s->capheap);
    int i = s->nheap++;
    while (i > 0 && before(t, s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = t;
    pthread_cond_signal(&s->qcond);
    pthread_mutex_unlock(&s->qlock);
}

static node *queue_pop_locked(ct_stf *s)
{
    node *top = s->heap[0], *last = s->heap[--s->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && before(s->heap[c + 1], s->heap[c]))
            c++;
        if (!before(s->heap[c], last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

/* ---- requests ---- */

static void hand_request(ct_stf *s, MPI_Request req, node *n)
{
    pthread_mutex_lock(&s->rlock);
    GROW(s->inbox, s->ninbox, s->capinbox);
    s->inbox[s->ninbox++] = (pending_req){req, n};
    pthread_mutex_unlock(&s->rlock);
}

/* The plain back end's send, once the version exists. */
static void post_mpi_send(ct_stf *s, node *n)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Isend(n->buf, n->h->count, n->h->type, n->peer, n->tag, s->comm, &req);
    if (rc != MPI_SUCCESS) {
        note_error(s, rc);
        req = MPI_REQUEST_NULL;
    }
    hand_request(s, req, n);
}

/* ---- graph ---- */

static node *node_new(ct_stf *s, int kind)
{
    node *n = calloc(1, sizeof *n);
    if (!n)
        abort();
    n->kind = kind;
    n->seq = s->next_seq++;
    n->next_all = s->all_nodes;
    s->all_nodes = n;
    s->pending++;
    return n;
}

/* succ waits for pred unless pred is already done. Graph lock held. */
static void add_dep(node *pred, node *succ)
{
    if (!pred || pred->done || pred == succ) /* a task naming one data twice */
        return;
    GROW(pred->succ, pred->nsucc, pred->capsucc);
    pred->succ[pred->nsucc++] = succ;
    succ->deps++;
}

static void release_copy(copy *c)
{
    if (c && --c->refs == 0) {
        free(c->buf);
        free(c);
    }
}

/* A node whose predecessors are all done starts: tasks go to the workers, plain sends are
 * posted. Graph lock not held. */
static void start_node(ct_stf *s, node *n)
{
    if (n->kind == N_TASK)
        queue_push(s, n);
    else if (n->kind == N_SEND)
        post_mpi_send(s, n);
}

/* n is complete: release its successors and what it held. */
static void node_done(ct_stf *s, node *n)
{
    node *stack[64];
    node **ready = stack;
    int nready = 0;
    pthread_mutex_lock(&s->lock);
    n->done = 1;
    s->pending--;
    if (n->nsucc > 64)
        ready = xrealloc(NULL, (size_t)n->nsucc * sizeof *ready);
    for (int i = 0; i < n->nsucc; i++)
        if (--n->succ[i]->deps == 0)
            ready[nready++] = n->succ[i];
    if (n->kind == N_TASK) {
        for (int i = 0; i < n->n; i++) {
            release_copy(n->copies[i]);
            n->copies[i] = NULL;
            version *v = n->outs[i];
            if (v) {
                v->ready = 1;
#ifdef CT_HAVE_DYN
                if (v->dyn)
                    note_error(s, ct_dyn_ready(v->dyn));
#endif
            }
        }
        s->stats.tasks++;
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < nready; i++)
        start_node(s, ready[i]);
    if (ready != stack)
        free(ready);
}

static void *worker(void *arg)
{
    ct_stf *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->qlock);
        while (s->nheap == 0 && !s->stop)
            pthread_cond_wait(&s->qcond, &s->qlock);
        if (s->nheap == 0) {
            pthread_mutex_unlock(&s->qlock);
            return NULL;
        }
        node *t = queue_pop_locked(s);
        pthread_mutex_unlock(&s->qlock);
        t->fn(t->bufs, t->arg);
        node_done(s, t);
    }
}

/* ---- public ---- */

int ct_stf_create(MPI_Comm comm, int workers, ct_stf_comm how, ct_stf **out)
{
    int provided, flag, *ub;
    *out = NULL;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE || workers < 1)
        return MPI_ERR_OTHER;
#ifndef CT_HAVE_DYN
    if (how != CT_STF_COMM_MPI)
        return MPI_ERR_OTHER;
#endif
    ct_stf *s = calloc(1, sizeof *s);
    if (!s)
        return MPI_ERR_NO_MEM;
    s->how = how;
    s->nworkers = workers;
    int rc = MPI_Comm_dup(comm, &s->comm);
    if (rc != MPI_SUCCESS) {
        free(s);
        return rc;
    }
    atomic_init(&s->error, MPI_SUCCESS);
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    MPI_Comm_get_attr(s->comm, MPI_TAG_UB, &ub, &flag);
    s->tag_ub = flag ? *ub : 32767;
#ifdef CT_HAVE_DYN
    if (how != CT_STF_COMM_MPI) {
        /* No progress thread: ct_stf_wait_all's loop is this rank's communication
         * thread already and drives the engine (ct_dyn_progress); a second polling
         * thread per rank only takes cores from the workers (on 4 ranks of 2 cores,
         * 0.14 s against 0.063 s for N = 1920, docs/CHOLESKY.md). */
        rc = ct_dyn_init_polled(s->comm);
        if (rc != MPI_SUCCESS) {
            MPI_Comm_free(&s->comm);
            free(s);
            return rc;
        }
        ct_dyn_set_grouping(how == CT_STF_COMM_DYN);
    }
#endif
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->qlock, NULL);
    pthread_mutex_init(&s->rlock, NULL);
    pthread_cond_init(&s->qcond, NULL);
    s->threads = calloc((size_t)workers, sizeof *s->threads);
    for (int i = 0; i < workers; i++)
        pthread_create(&s->threads[i], NULL, worker, s);
    *out = s;
    return MPI_SUCCESS;
}

ct_stf_data *ct_stf_register(ct_stf *s, void *buf, int count, MPI_Datatype type, int owner)
{
    ct_stf_data *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->owner = owner;
    h->count = count;
    h->type = type;
    MPI_Type_size(type, &h->type_size);
    h->home = owner == s->rank ? buf : NULL;
    pthread_mutex_lock(&s->lock);
    if (s->next_vid >= s->tag_ub) { /* every version needs a tag of its own */
        pthread_mutex_unlock(&s->lock);
        free(h);
        return NULL;
    }
    h->vid = s->next_vid++;
    if (owner == s->rank) {
        h->sent = calloc((size_t)s->size, 1);
        h->ver = calloc(1, sizeof *h->ver);
        h->ver->ready = 1; /* the registered data */
        h->ver->next = s->all_versions;
        s->all_versions = h->ver;
    }
    h->next = s->handles;
    s->handles = h;
    pthread_mutex_unlock(&s->lock);
    return h;
}

/* The owner's side of rank `dest` reading h's current version. Graph lock held. */
static int need_send(ct_stf *s, ct_stf_data *h, int dest)
{
    if (h->sent[dest])
        return MPI_SUCCESS;
    h->sent[dest] = 1;
    node *n = node_new(s, N_SEND);
    n->h = h;
    n->ver = h->ver;
    n->peer = dest;
    n->tag = h->vid;
    n->buf = h->home;
    GROW(h->readers, h->nreaders, h->capreaders);
    h->readers[h->nreaders++] = n;
    s->stats.sends++;
    s->stats.bytes_sent += (long)h->count * h->type_size;
    if (s->how == CT_STF_COMM_MPI) {
        n->deps = 1; /* held until wired */
        add_dep(h->writer, n);
        return --n->deps == 0 ? 1 : MPI_SUCCESS; /* 1: post it once the lock is released */
    }
#ifdef CT_HAVE_DYN
    /* Posted now, before the version exists: that is what lets the layer group them. */
    version *v = h->ver;
    int rc = MPI_SUCCESS;
    if (!v->dyn) {
        ct_dyn_data *d;
        rc = ct_dyn_data_create(h->home, h->count, h->type, &d);
        if (rc == MPI_SUCCESS) {
            v->dyn = d;
            if (v->ready)
                rc = ct_dyn_ready(d);
        }
    }
    MPI_Request req = MPI_REQUEST_NULL;
    if (rc == MPI_SUCCESS && (rc = ct_dyn_isend(v->dyn, dest, n->tag, &req)) != MPI_SUCCESS)
        req = MPI_REQUEST_NULL;
    note_error(s, rc);
    hand_request(s, req, n);
    return rc;
#else
    return MPI_SUCCESS;
#endif
}

/* This rank's copy of h's current version (owned elsewhere), received once. Graph lock held. */
static copy *need_copy(ct_stf *s, ct_stf_data *h)
{
    if (h->cur)
        return h->cur;
    copy *c = calloc(1, sizeof *c);
    c->buf = malloc((size_t)h->count * (size_t)h->type_size);
    if (!c || !c->buf)
        abort();
    c->refs = 1;
    node *r = node_new(s, N_RECV);
    r->h = h;
    r->peer = h->owner;
    r->tag = h->vid;
    r->buf = c->buf;
    /* Away from the owner the receive is what produces this rank's copy: readers wait for it. */
    h->writer = r;
    h->cur = c;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
#ifdef CT_HAVE_DYN
    if (s->how != CT_STF_COMM_MPI)
        rc = ct_dyn_irecv(c->buf, h->count, h->type, h->owner, r->tag, &req);
    else
#endif
        rc = MPI_Irecv(c->buf, h->count, h->type, h->owner, r->tag, s->comm, &req);
    if (rc != MPI_SUCCESS) { /* the readers run on a copy never received: see s->error */
        note_error(s, rc);
        req = MPI_REQUEST_NULL;
    }
    hand_request(s, req, r);
    s->stats.recvs++;
    return c;
}

int ct_stf_submit(ct_stf *s, int rank, int priority, ct_stf_fn fn, const void *arg,
                  size_t arg_size, int n, ct_stf_data *const *data, const ct_stf_mode *modes)
{
    if (rank < 0 || rank >= s->size || n < 0 || !fn)
        return MPI_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (modes[i] == CT_STF_RW && data[i]->owner != rank)
            return MPI_ERR_ARG;
    node *post[16];
    int npost = 0, rc = MPI_SUCCESS;
    pthread_mutex_lock(&s->lock);
    int new_versions = 0;
    for (int i = 0; i < n; i++)
        new_versions += modes[i] == CT_STF_RW;
    if (new_versions > s->tag_ub - s->next_vid) {
        pthread_mutex_unlock(&s->lock);
        return MPI_ERR_TAG; /* more versions than tags: the graph is too large */
    }
    node *t = NULL;
    if (rank == s->rank) {
        t = node_new(s, N_TASK);
        t->deps = 1; /* held until wired */
        t->priority = priority;
        t->fn = fn;
        t->n = n;
        t->bufs = calloc((size_t)n + 1, sizeof *t->bufs);
        t->copies = calloc((size_t)n + 1, sizeof *t->copies);
        t->outs = calloc((size_t)n + 1, sizeof *t->outs);
        t->arg = xrealloc(NULL, arg_size);
        if (arg_size)
            memcpy(t->arg, arg, arg_size);
    }
    for (int i = 0; i < n; i++) {
        ct_stf_data *h = data[i];
        int mine = h->owner == s->rank;
        if (modes[i] == CT_STF_R) {
            if (t && mine) {
                add_dep(h->writer, t);
                GROW(h->readers, h->nreaders, h->capreaders);
                h->readers[h->nreaders++] = t;
                t->bufs[i] = h->home;
            } else if (t) {
                copy *c = need_copy(s, h);
                c->refs++;
                t->copies[i] = c;
                t->bufs[i] = c->buf;
                add_dep(h->writer, t);
            } else if (mine) {
                int r = need_send(s, h, rank);
                if (r == 1 && npost < 16)
                    post[npost++] = h->readers[h->nreaders - 1];
                else if (r == 1) { /* rare: many sends in one task; post under the lock */
                    node *sn = h->readers[h->nreaders - 1];
                    post_mpi_send(s, sn);
                } else if (r != MPI_SUCCESS)
                    rc = r;
            }
            continue;
        }
        /* read-write: a new version, on every rank */
        h->vid = s->next_vid++;
        if (mine) {
            add_dep(h->writer, t);
            for (int j = 0; j < h->nreaders; j++)
                add_dep(h->readers[j], t);
            h->nreaders = 0;
            h->writer = t;
            memset(h->sent, 0, (size_t)s->size);
            version *v = calloc(1, sizeof *v);
            v->next = s->all_versions;
            s->all_versions = v;
            h->ver = v;
            t->outs[i] = v;
            t->bufs[i] = h->home;
        } else if (h->cur) {
            release_copy(h->cur);
            h->cur = NULL;
            h->writer = NULL;
        }
    }
    int start = t && --t->deps == 0;
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < npost; i++)
        post_mpi_send(s, post[i]);
    if (start)
        queue_push(s, t);
    return rc;
}

int ct_stf_wait_all(ct_stf *s)
{
    pending_req *act = NULL, *failed = NULL;
    MPI_Request *reqs = NULL;
    int *idx = NULL, nact = 0, cap = 0, idle = 0, nfailed = 0, capfailed = 0;
    for (;;) {
        pthread_mutex_lock(&s->rlock);
        if (nact + s->ninbox > cap) {
            cap = 2 * (nact + s->ninbox) + 16;
            act = xrealloc(act, (size_t)cap * sizeof *act);
            reqs = xrealloc(reqs, (size_t)cap * sizeof *reqs);
            idx = xrealloc(idx, (size_t)cap * sizeof *idx);
        }
        nfailed = 0;
        for (int i = 0; i < s->ninbox; i++) {
            if (s->inbox[i].req == MPI_REQUEST_NULL) { /* could not be posted */
                GROW(failed, nfailed, capfailed);
                failed[nfailed++] = s->inbox[i];
                continue;
            }
            act[nact] = s->inbox[i];
            reqs[nact++] = s->inbox[i].req;
        }
        s->ninbox = 0;
        pthread_mutex_unlock(&s->rlock);
        for (int i = 0; i < nfailed; i++) /* their successors may post more: look again */
            node_done(s, failed[i].n);
        if (nfailed)
            continue;
        if (nact == 0) {
            pthread_mutex_lock(&s->lock);
            long pending = s->pending;
            pthread_mutex_unlock(&s->lock);
            if (pending == 0)
                break;
        }
        int outcount = 0;
        if (s->how != CT_STF_COMM_MPI)
            ct_dyn_progress(); /* forwards even without a progress thread */
        if (nact > 0) {
            int rc = MPI_Testsome(nact, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
            note_error(s, rc);
            if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
                /* nothing says which requests are left: give up on all of them */
                for (int i = 0; i < nact; i++)
                    node_done(s, act[i].n);
                nact = 0;
                continue;
            }
        }
        if (outcount > 0 && outcount != MPI_UNDEFINED) {
            for (int i = 0; i < outcount; i++)
                node_done(s, act[idx[i]].n);
            int k = 0;
            for (int i = 0; i < nact; i++)
                if (reqs[i] != MPI_REQUEST_NULL) {
                    act[k] = act[i];
                    reqs[k++] = reqs[i];
                }
            nact = k;
            idle = 0;
        } else if (++idle > 64) {
            /* Nothing moved for a while: leave the core to the workers (and to other ranks
             * when oversubscribed) rather than spin. */
            struct timespec ts = {0, idle > 1024 ? 200000 : 20000};
            nanosleep(&ts, NULL);
        }
    }
    free(act);
    free(failed);
    free(reqs);
    free(idx);
    /* Everything is done: forget the finished nodes and versions. */
    pthread_mutex_lock(&s->lock);
    for (ct_stf_data *h = s->handles; h; h = h->next) {
        h->writer = NULL;
        h->nreaders = 0;
    }
    for (node *n = s->all_nodes, *nx; n; n = nx) {
        nx = n->next_all;
        free(n->succ);
        free(n->bufs);
        free(n->copies);
        free(n->outs);
        free(n->arg);
        free(n);
    }
    s->all_nodes = NULL;
    for (ct_stf_data *h = s->handles; h; h = h->next)
        if (h->ver)
            h->ver->ready = 2; /* still current: kept */
    version *keep = NULL;
    for (version *v = s->all_versions, *nx; v; v = nx) {
        nx = v->next;
#ifdef CT_HAVE_DYN
        if (v->dyn)
            ct_dyn_data_free(v->dyn);
#endif
        v->dyn = NULL;
        if (v->ready == 2) {
            v->ready = 1;
            v->next = keep;
            keep = v;
        } else {
            free(v);
        }
    }
    s->all_versions = keep;
    pthread_mutex_unlock(&s->lock);
    return atomic_load(&s->error);
}

int ct_stf_destroy(ct_stf *s)
{
    if (!s)
        return MPI_SUCCESS;
    int rc = ct_stf_wait_all(s);
    pthread_mutex_lock(&s->qlock);
    s->stop = 1;
    pthread_cond_broadcast(&s->qcond);
    pthread_mutex_unlock(&s->qlock);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->threads[i], NULL);
    for (ct_stf_data *h = s->handles, *nx; h; h = nx) {
        nx = h->next;
        release_copy(h->cur);
        free(h->readers);
        free(h->sent);
        free(h);
    }
    for (version *v = s->all_versions, *nx; v; v = nx) {
        nx = v->next;
        free(v);
    }
#ifdef CT_HAVE_DYN
    if (s->how != CT_STF_COMM_MPI)
        ct_dyn_finalize();
#endif
    MPI_Comm_free(&s->comm);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->qlock);
    pthread_mutex_destroy(&s->rlock);
    pthread_cond_destroy(&s->qcond);
    free(s->heap);
    free(s->inbox);
    free(s->threads);
    free(s);
    return rc;
}

void ct_stf_stats_get(const ct_stf *s, ct_stf_stats *out)
{
    *out = s->stats;
}
