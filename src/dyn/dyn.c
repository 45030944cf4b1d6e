/*
 * Dynamic broadcasts over MPI point-to-point (docs/DYNBCAST.md).
 *
 * A dyn message is a header (origin, the (rank, tag) list of the subtree whose
 * root receives it, the payload size) on the private communicator's tag
 * DYN_TAG, with the payload inside when it is small (up to dyn_inline bytes:
 * one message, one latency) or else in a second message on DYN_DATA_TAG (the
 * user's own type, no packing, and received straight into a posted receive's
 * buffer: no staging copy). The receiver does not know it is part of a
 * broadcast, so the engine takes whatever arrives on DYN_TAG with
 * MPI_Improbe/MPI_Mrecv (sizes vary), forwards to the children that the list
 * gives once the payload is whole, then completes the matching ct_dyn_irecv or
 * keeps the data as unexpected. Inline sends are zero-copy too: an MPI struct
 * type over the header and the user's buffer (origin) or the received payload
 * (forwarder).
 *
 * Order: every dyn send of a rank is posted under dyn.lock, a header and its
 * data message back to back, so a rank's data messages leave in the order of
 * its headers; the receiver takes headers from one source in order (MPI's
 * non-overtaking rule) and posts the data receive at once, under the lock. So
 * one data tag suffices and the k-th data receive from s gets s's k-th data.
 *
 * One lock (dyn.lock) guards the whole engine: the posted receives, the
 * unexpected list, the requests in flight, the data objects' queues. The MPI
 * calls made under it do not block, but for MPI_Mrecv of a header already
 * matched (small: it is there, or about to be), so holding it across them
 * serialises only this rank's engine.
 */
#include "dyn.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../api/job.h"
#include "../monitor/monitor.h"
#include "../nbc/nbc.h"
#include "colltune.h"

enum {
    DYN_TAG = 1,
    DYN_DATA_TAG = 2,
    DYN_MAGIC = 0x44594e31, /* "DYN1" */
    DYN_DATA_FOLLOWS = 1,   /* flags: the payload is the next message on DYN_DATA_TAG */
    DYN_INLINE_DEFAULT = 16384
};

/* The header, in host byte order (a homogeneous MPI job); n (rank, tag) pairs
 * follow, the first being the receiver itself, then (inline) the payload at
 * hdr_bytes(n). */
typedef struct dyn_hdr {
    int32_t magic, origin, n, flags;
    int64_t data_bytes;
} dyn_hdr;

static size_t hdr_bytes(int n)
{
    return (sizeof(dyn_hdr) + 2 * sizeof(int32_t) * (size_t)n + 15) & ~(size_t)15;
}

/* A generalized request's state, owned by MPI once started: freed by greq_free. */
typedef struct dyn_greq {
    MPI_Request req;
    int source, tag;
    MPI_Count bytes;
    /* Released by the completing thread, acquired by the callbacks that run in
     * the waiting one: MPI's own ordering is invisible to ThreadSanitizer. */
    atomic_int rc;
    int cancelled; /* a receive still posted at ct_dyn_finalize */
} dyn_greq;

typedef struct dyn_recv {
    dyn_greq *g;
    void *buf;
    int count;
    MPI_Datatype type;
    int origin, tag;
    struct dyn_recv *next;
} dyn_recv;

/* A received message, shared by its forwards and its delivery. The payload is
 * inline in hdr, in a staging buffer, or (large data whose receive was posted
 * first) in that receive's buffer: into, completed once the forwards that read
 * it have left. */
typedef struct dyn_msg {
    char *hdr;             /* as received: header, inline payload */
    char *staging;
    const char *payload;   /* inline or staging; NULL with into */
    MPI_Count bytes;
    dyn_recv *into;
    int refs;              /* forwards in flight + 1 until delivered */
    int origin, tag;
    struct dyn_msg *next;  /* unexpected list */
} dyn_msg;

/* One send in flight: what to release and whom to complete when it is done. */
typedef struct dyn_send {
    int parts;     /* MPI sends not yet complete: 1 (inline), 2 (header, data) */
    int rc;        /* what its requests complete with: not MPI_SUCCESS when half sent */
    dyn_msg *msg;  /* forwarded message: a reference (NULL at the origin) */
    void *hdr;     /* the header this send carries */
    int ng;
    dyn_greq **gs; /* the origin's per-destination requests it carries */
    struct ct_dyn_data *data;
} dyn_send;

typedef struct dyn_pend {
    int dest, tag;
    dyn_greq *g;
} dyn_pend;

struct ct_dyn_data {
    void *buf;
    int count;
    MPI_Datatype type;
    MPI_Count bytes;
    int ready;
    int npend, cap;
    dyn_pend *pend;
    long inflight; /* sends not yet complete that read buf */
};

/* A growable array of MPI requests with a pointer beside each (Testsome). */
typedef struct reqvec {
    MPI_Request *req;
    void **what;
    int n, cap;
    int *idx;
} reqvec;

static struct {
    pthread_mutex_t lock;
    int on, rank, size, grouping, threaded;
    /* Not MPI_SUCCESS once the engine lost track of its message stream (a header it
     * could not read, a message half sent, a forward that failed): from then on it
     * takes no new message and sends nothing, since a data message could be paired
     * with the wrong header; the calls return this code (see engine_fail). */
    int failed;
    long drop_header_at; /* COLLTUNE_DYN_FAULT=drop-header:K (tests): the K-th header */
    long headers_seen;
    long inline_max;
    MPI_Comm comm;
    dyn_recv *posted, **posted_tail;
    dyn_msg *unexpected, **unexpected_tail;
    reqvec recvs, sends;
    ct_dyn_stats st;
} dyn = {.lock = PTHREAD_MUTEX_INITIALIZER, .grouping = 1};

/* ---- Small helpers ------------------------------------------------------- */

static int reqvec_push(reqvec *v, MPI_Request r, void *what)
{
    if (v->n == v->cap) {
        int nc = v->cap ? 2 * v->cap : 32;
        MPI_Request *nr = realloc(v->req, sizeof *nr * (size_t)nc);
        if (!nr)
            return MPI_ERR_NO_MEM;
        v->req = nr;
        void **nw = realloc(v->what, sizeof *nw * (size_t)nc);
        if (!nw)
            return MPI_ERR_NO_MEM;
        v->what = nw;
        int *ni = realloc(v->idx, sizeof *ni * (size_t)nc);
        if (!ni)
            return MPI_ERR_NO_MEM;
        v->idx = ni;
        v->cap = nc;
    }
    v->req[v->n] = r;
    v->what[v->n] = what;
    v->n++;
    return MPI_SUCCESS;
}

/* Drops the entries whose request MPI set to MPI_REQUEST_NULL. */
static void reqvec_compact(reqvec *v)
{
    int k = 0;
    for (int i = 0; i < v->n; i++)
        if (v->req[i] != MPI_REQUEST_NULL) {
            v->req[k] = v->req[i];
            v->what[k] = v->what[i];
            k++;
        }
    v->n = k;
}

static void reqvec_free(reqvec *v)
{
    free(v->req);
    free(v->what);
    free(v->idx);
    memset(v, 0, sizeof *v);
}

/* ---- Generalized requests ----------------------------------------------- */

static int greq_query(void *extra, MPI_Status *status)
{
    dyn_greq *g = extra;
    int rc = atomic_load_explicit(&g->rc, memory_order_acquire);
    MPI_Status_set_elements_x(status, MPI_BYTE, g->bytes);
    MPI_Status_set_cancelled(status, g->cancelled);
    status->MPI_SOURCE = g->source;
    status->MPI_TAG = g->tag;
    status->MPI_ERROR = rc;
    return rc;
}

static int greq_free(void *extra)
{
    dyn_greq *g = extra;
    (void)atomic_load_explicit(&g->rc, memory_order_acquire); /* see dyn_greq.rc */
    free(g);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS; /* not cancellable: MPI_Test_cancelled says no */
}

static int greq_new(int source, int tag, dyn_greq **out, MPI_Request *req)
{
    dyn_greq *g = calloc(1, sizeof *g);
    if (!g)
        return MPI_ERR_NO_MEM;
    g->source = source;
    g->tag = tag;
    atomic_init(&g->rc, MPI_SUCCESS);
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g, &g->req);
    if (rc != MPI_SUCCESS) {
        free(g);
        return rc;
    }
    *out = g;
    *req = g->req;
    return MPI_SUCCESS;
}

/* The last touch of g: MPI frees it once the application's wait returns. */
static void greq_done(dyn_greq *g, int rc)
{
    MPI_Request r = g->req;
    atomic_store_explicit(&g->rc, rc, memory_order_release);
    PMPI_Grequest_complete(r);
}

static void engine_fail(int rc);

/* ---- Sending ------------------------------------------------------------ */

/* The monitor's view of the runtime's messages (they go by PMPI, below the drop-in):
 * colltune's collective traffic, sends when posted, receives when matched. */
static void monitor_sent(int dest, MPI_Count bytes)
{
    if (ct_monitor_level < CT_MON_COUNT)
        return;
    int was = ct_monitor_in_collective;
    ct_monitor_in_collective = 1;
    ct_monitor_count_send(dyn.comm, dest, bytes, MPI_BYTE);
    ct_monitor_in_collective = was;
}

static void monitor_received(int source, MPI_Count bytes)
{
    if (ct_monitor_level < CT_MON_COUNT)
        return;
    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.MPI_SOURCE = source;
    st.MPI_TAG = DYN_TAG;
    PMPI_Status_set_elements_x(&st, MPI_BYTE, bytes);
    int was = ct_monitor_in_collective;
    ct_monitor_in_collective = 1;
    ct_monitor_recv(dyn.comm, &st);
    ct_monitor_in_collective = was;
}

/* Posts one message to list[0].rank: header for the n entries of list, then
 * count elements of type at buf. Under dyn.lock. */
static int post_message(int origin, const int32_t *list, int n, const void *buf, int count,
                        MPI_Datatype type, MPI_Count bytes, dyn_send *s)
{
    if (dyn.failed)
        return dyn.failed;
    size_t hb = hdr_bytes(n);
    char *h = calloc(1, hb);
    if (!h)
        return MPI_ERR_NO_MEM;
    int apart = bytes > dyn.inline_max;
    dyn_hdr hd = {DYN_MAGIC, origin, n, apart ? DYN_DATA_FOLLOWS : 0, (int64_t)bytes};
    memcpy(h, &hd, sizeof hd);
    memcpy(h + sizeof hd, list, 2 * sizeof(int32_t) * (size_t)n);
    s->hdr = h;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc;
    if (apart) {
        rc = PMPI_Isend(h, (int)hb, MPI_BYTE, list[0], DYN_TAG, dyn.comm, &r[0]);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Isend(buf, count, type, list[0], DYN_DATA_TAG, dyn.comm, &r[1]);
    } else {
        int bl[2] = {(int)hb, count};
        MPI_Aint disp[2];
        MPI_Datatype types[2] = {MPI_BYTE, type}, t;
        PMPI_Get_address(h, &disp[0]);
        PMPI_Get_address(buf, &disp[1]);
        rc = PMPI_Type_create_struct(count ? 2 : 1, bl, disp, types, &t);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Type_commit(&t);
        if (rc == MPI_SUCCESS) {
            rc = PMPI_Isend(MPI_BOTTOM, 1, t, list[0], DYN_TAG, dyn.comm, &r[0]);
            PMPI_Type_free(&t); /* MPI keeps it alive for the send in flight */
        }
    }
    if (rc == MPI_SUCCESS) {
        monitor_sent(list[0], apart ? (MPI_Count)hb : (MPI_Count)hb + bytes);
        if (apart)
            monitor_sent(list[0], bytes);
    }
    for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++)
        if (r[i] != MPI_REQUEST_NULL && (rc = reqvec_push(&dyn.sends, r[i], s)) == MPI_SUCCESS)
            s->parts++;
    if (rc != MPI_SUCCESS) {
        /* Half sent (the header left, its data did not): s stays in flight and
         * completes with rc when the header has left; the caller keeps it. The
         * receiver now waits for a data message that will not come. */
        if (s->parts == 0) {
            free(h);
            s->hdr = NULL;
        } else {
            s->rc = rc;
            engine_fail(rc);
        }
        return rc;
    }
    dyn.st.messages_sent++;
    dyn.st.bytes_sent += (long)bytes;
    return MPI_SUCCESS;
}

/* The binomial tree over list[0..n) (list[0]: the sender): the child at
 * position m = 2^j roots positions [m, min(2m, n)). The loops over children go
 * from the largest m down: the farthest subtree is the deepest, so it starts
 * first (the origin sends ceil(log2 n) messages). */
static int top_pow2(int n)
{
    int m = 1;
    while (2 * m < n)
        m *= 2;
    return n > 1 ? m : 0;
}

static int subtree_len(int m, int n)
{
    return 2 * m < n ? m : n - m;
}

/* Sends to dest alone (a plain send), completing g when it leaves; g is
 * completed here, with the error, when nothing could be sent. */
static int plain_send(ct_dyn_data *d, int dest, int tag, dyn_greq *g)
{
    dyn_send *s = calloc(1, sizeof *s);
    dyn_greq **gs = malloc(sizeof *gs);
    if (!s || !gs) {
        free(s);
        free(gs);
        greq_done(g, MPI_ERR_NO_MEM);
        return MPI_ERR_NO_MEM;
    }
    gs[0] = g;
    s->gs = gs;
    s->ng = 1;
    s->data = d;
    int32_t list[2] = {dest, tag};
    int rc = post_message(dyn.rank, list, 1, d->buf, d->count, d->type, d->bytes, s);
    if (rc != MPI_SUCCESS && s->parts == 0) {
        free(gs);
        free(s);
        greq_done(g, rc);
        return rc;
    }
    d->inflight++;
    dyn.st.plain_sends++;
    return rc;
}

/* ---- Receiving ---------------------------------------------------------- */

static void complete_into(dyn_msg *m)
{
    dyn_recv *r = m->into;
    r->g->source = m->origin;
    r->g->tag = m->tag;
    r->g->bytes = m->bytes;
    greq_done(r->g, MPI_SUCCESS);
    free(r);
}

static void msg_release(dyn_msg *m)
{
    if (--m->refs > 0)
        return;
    if (m->into)
        complete_into(m);
    free(m->hdr);
    free(m->staging);
    free(m);
}

/* Copies m's payload into r's buffer and completes r. */
static int deliver(dyn_recv *r, dyn_msg *m)
{
    MPI_Count bytes = m->bytes;
    int size, d = 1, rc = PMPI_Type_size(r->type, &size);
    if (rc == MPI_SUCCESS && (MPI_Count)size * r->count < bytes)
        rc = MPI_ERR_TRUNCATE;
    if (rc == MPI_SUCCESS)
        rc = ct_type_dense(r->type, &d);
    if (rc == MPI_SUCCESS && bytes > 0) {
        if (d) {
            memcpy(r->buf, m->payload, (size_t)bytes);
        } else if (bytes > INT_MAX) {
            rc = MPI_ERR_COUNT;
        } else {
            int pos = 0;
            rc = PMPI_Unpack(m->payload, (int)bytes, &pos, r->buf, (int)(bytes / size),
                             r->type, MPI_COMM_SELF);
        }
    }
    r->g->source = m->origin;
    r->g->tag = m->tag;
    r->g->bytes = rc == MPI_SUCCESS ? bytes : 0;
    greq_done(r->g, rc);
    free(r);
    return rc;
}

static int matches(int want_origin, int want_tag, int origin, int tag)
{
    return (want_origin == MPI_ANY_SOURCE || want_origin == origin) &&
           (want_tag == MPI_ANY_TAG || want_tag == tag);
}

/* The oldest posted receive that matches m (and can hold it when big), taken
 * off the list; NULL if none. */
static dyn_recv *take_posted(const dyn_msg *m, int need_room)
{
    for (dyn_recv **p = &dyn.posted; *p; p = &(*p)->next) {
        dyn_recv *r = *p;
        if (!matches(r->origin, r->tag, m->origin, m->tag))
            continue;
        if (need_room) {
            int size;
            if (PMPI_Type_size(r->type, &size) != MPI_SUCCESS || size == 0 ||
                (MPI_Count)size * r->count < m->bytes || m->bytes % size)
                return NULL; /* the staging path reports the error at delivery */
        }
        *p = r->next;
        if (!*p)
            dyn.posted_tail = p;
        return r;
    }
    return NULL;
}

/* m's payload is whole: forward it, then deliver or keep it. */
static int arrived(dyn_msg *m)
{
    const dyn_hdr *h = (const dyn_hdr *)(void *)m->hdr;
    const int32_t *list = (const int32_t *)(const void *)(m->hdr + sizeof *h);
    int n = h->n, rc = MPI_SUCCESS, size = 1;
    const void *from = m->payload;
    int count = (int)m->bytes;
    MPI_Datatype type = MPI_BYTE;
    if (m->into) { /* forward from the receive's buffer, in its own type */
        from = m->into->buf;
        type = m->into->type;
        PMPI_Type_size(type, &size);
        count = size ? (int)(m->bytes / size) : 0;
    }
    dyn.st.received++;
    for (int first = top_pow2(n); first >= 1; first >>= 1) {
        int len = subtree_len(first, n);
        dyn_send *s = calloc(1, sizeof *s);
        if (!s) {
            rc = MPI_ERR_NO_MEM;
            break;
        }
        s->msg = m;
        m->refs++;
        int r = post_message(m->origin, list + 2 * first, len, from, count, type, m->bytes, s);
        if (r != MPI_SUCCESS) {
            if (s->parts == 0) {
                m->refs--;
                free(s);
            }
            engine_fail(r); /* that subtree will not get its data from here */
            rc = r;
            break;
        }
        dyn.st.forwarded++;
    }
    if (m->into) {
        msg_release(m); /* completes the receive once the forwards have left */
        return rc;
    }
    dyn_recv *r = take_posted(m, 0);
    if (r) {
        deliver(r, m);
        msg_release(m);
        return rc;
    }
    dyn.st.unexpected++;
    m->next = NULL;
    *dyn.unexpected_tail = m;
    dyn.unexpected_tail = &m->next;
    return rc;
}

/* A message whose data never came whole: its receive, if it had one, fails with rc. */
static void msg_drop(dyn_msg *m, int rc)
{
    if (m->into) {
        greq_done(m->into->g, rc);
        free(m->into);
    }
    free(m->staging);
    free(m->hdr);
    free(m);
}

/* The engine lost track (see dyn.failed): the receives still posted will not
 * be matched, so they complete now with rc. Under dyn.lock. */
static void engine_fail(int rc)
{
    if (!dyn.failed)
        dyn.failed = rc != MPI_SUCCESS ? rc : MPI_ERR_INTERN;
    while (dyn.posted) {
        dyn_recv *r = dyn.posted;
        dyn.posted = r->next;
        greq_done(r->g, dyn.failed);
        free(r);
    }
    dyn.posted_tail = &dyn.posted;
}

/* A header (with its inline payload, or announcing the data message) from
 * source: inline, the message is whole; else the data receive is posted now,
 * into the oldest matching receive if one is posted, else into staging. */
static void header_arrived(char *b, MPI_Count len, int source)
{
    const dyn_hdr *h = (const dyn_hdr *)(void *)b;
    int ok = len >= (MPI_Count)sizeof *h && h->magic == DYN_MAGIC && h->n >= 1 &&
             h->data_bytes >= 0 && h->data_bytes <= INT_MAX;
    int apart = ok && (h->flags & DYN_DATA_FOLLOWS);
    if (ok)
        ok = (MPI_Count)hdr_bytes(h->n) + (apart ? 0 : h->data_bytes) == len;
    dyn_msg *m = ok ? calloc(1, sizeof *m) : NULL;
    if (!m) { /* not ours or no memory: a data message may follow it */
        free(b);
        engine_fail(ok ? MPI_ERR_NO_MEM : MPI_ERR_INTERN);
        return;
    }
    const int32_t *list = (const int32_t *)(const void *)(b + sizeof *h);
    m->hdr = b;
    m->bytes = h->data_bytes;
    m->origin = h->origin;
    m->tag = list[1];
    m->refs = 1;
    if (!apart) {
        m->payload = b + hdr_bytes(h->n);
        arrived(m);
        return;
    }
    MPI_Request r = MPI_REQUEST_NULL;
    int rc;
    if ((m->into = take_posted(m, 1)) != NULL) {
        int size;
        PMPI_Type_size(m->into->type, &size);
        rc = PMPI_Irecv(m->into->buf, (int)(m->bytes / size), m->into->type, source,
                        DYN_DATA_TAG, dyn.comm, &r);
    } else {
        m->staging = malloc(m->bytes ? (size_t)m->bytes : 1);
        m->payload = m->staging;
        rc = m->staging ? PMPI_Irecv(m->staging, (int)m->bytes, MPI_BYTE, source, DYN_DATA_TAG,
                                     dyn.comm, &r)
                        : MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS)
        monitor_received(source, (MPI_Count)m->bytes); /* matched: its header came */
    if (rc == MPI_SUCCESS && (rc = reqvec_push(&dyn.recvs, r, m)) != MPI_SUCCESS) {
        PMPI_Cancel(&r); /* unlikely (no memory): the data is lost either way */
        PMPI_Request_free(&r);
    }
    if (rc != MPI_SUCCESS) {
        msg_drop(m, rc);
        engine_fail(rc);
    }
}

/* ---- The engine --------------------------------------------------------- */

/* One pass under dyn.lock: take new messages, finish receives, finish sends.
 * Returns CT_PROGRESS_MOVED and CT_PROGRESS_BUSY bits. */
static int poll_locked(void)
{
    int moved = 0;
    while (!dyn.failed) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        if (PMPI_Improbe(MPI_ANY_SOURCE, DYN_TAG, dyn.comm, &flag, &msg, &st) != MPI_SUCCESS ||
            !flag)
            break;
        MPI_Count len = 0;
        PMPI_Get_elements_x(&st, MPI_BYTE, &len);
        char *b = malloc(len > 0 ? (size_t)len : 1);
        moved = 1;
        if (!b || len > INT_MAX) { /* nowhere to put it: take it off the wire, drop it */
            char dummy;
            int rc = b ? MPI_ERR_COUNT : MPI_ERR_NO_MEM;
            PMPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE); /* truncated */
            free(b);
            engine_fail(rc);
            break;
        }
        /* Blocking, but the message is matched and small (a header, or inline
         * data): in order, so that the data receives are posted in order. */
        int rc = PMPI_Mrecv(b, (int)len, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && ++dyn.headers_seen == dyn.drop_header_at)
            rc = MPI_ERR_NO_MEM; /* the injected fault: as if b could not be had */
        if (rc != MPI_SUCCESS) {
            free(b);
            engine_fail(rc);
            break;
        }
        monitor_received(st.MPI_SOURCE, len);
        header_arrived(b, len, st.MPI_SOURCE);
    }
    int outcount = 0;
    if (dyn.recvs.n) {
        /* An error in a data receive: the payload cannot be trusted, and with
         * the statuses ignored neither can the others completed with it. */
        int trc = PMPI_Testsome(dyn.recvs.n, dyn.recvs.req, &outcount, dyn.recvs.idx,
                                MPI_STATUSES_IGNORE);
        if (trc != MPI_SUCCESS)
            engine_fail(trc);
        if (outcount > 0 && outcount != MPI_UNDEFINED) {
            /* In index order: posting order, so a source's messages stay in order. */
            for (int i = 0; i < outcount; i++)
                for (int j = i + 1; j < outcount; j++)
                    if (dyn.recvs.idx[j] < dyn.recvs.idx[i]) {
                        int t = dyn.recvs.idx[i];
                        dyn.recvs.idx[i] = dyn.recvs.idx[j];
                        dyn.recvs.idx[j] = t;
                    }
            for (int i = 0; i < outcount; i++) {
                dyn_msg *m = dyn.recvs.what[dyn.recvs.idx[i]];
                if (trc == MPI_SUCCESS)
                    arrived(m);
                else
                    msg_drop(m, trc);
            }
            reqvec_compact(&dyn.recvs);
            moved = 1;
        }
    }
    if (dyn.sends.n) {
        outcount = 0;
        int trc = PMPI_Testsome(dyn.sends.n, dyn.sends.req, &outcount, dyn.sends.idx,
                                MPI_STATUSES_IGNORE);
        if (trc != MPI_SUCCESS)
            engine_fail(trc);
        if (outcount > 0 && outcount != MPI_UNDEFINED) {
            for (int i = 0; i < outcount; i++) {
                dyn_send *s = dyn.sends.what[dyn.sends.idx[i]];
                if (trc != MPI_SUCCESS && s->rc == MPI_SUCCESS)
                    s->rc = trc;
                if (--s->parts > 0)
                    continue;
                for (int k = 0; k < s->ng; k++)
                    greq_done(s->gs[k], s->rc);
                if (s->msg)
                    msg_release(s->msg);
                if (s->data)
                    s->data->inflight--;
                free(s->gs);
                free(s->hdr);
                free(s);
            }
            reqvec_compact(&dyn.sends);
            moved = 1;
        }
    }
    int busy = dyn.recvs.n || dyn.sends.n || dyn.posted;
    return (moved ? CT_PROGRESS_MOVED : 0) | (busy ? CT_PROGRESS_BUSY : 0);
}

static int poll_hook(void)
{
    pthread_mutex_lock(&dyn.lock);
    int r = dyn.on ? poll_locked() : 0;
    pthread_mutex_unlock(&dyn.lock);
    return r;
}

int ct_dyn_progress(void)
{
    return (poll_hook() & CT_PROGRESS_MOVED) != 0;
}

/* The calls move the engine themselves (they hold the lock already): without
 * the thread that is the only progress; with it, an eager send completes and
 * a message already here is taken without waiting for the thread's turn on a
 * busy core. Then the thread is woken from its nap to watch what is left. */
static void kick(void)
{
    int r = poll_locked();
    if (dyn.threaded && (r & CT_PROGRESS_BUSY))
        ct_progress_kick();
}

/* ---- The API ------------------------------------------------------------ */

static int dyn_init(MPI_Comm comm, int want_thread)
{
    MPI_Comm dup;
    int rc = PMPI_Comm_dup(comm, &dup); /* collective */
    if (rc != MPI_SUCCESS)
        return rc;
    /* The engine handles its own errors (engine_fail) and reports them through
     * the calls and the requests, whatever handler comm has. */
    PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    /* ct_progress_start is collective the first time */
    int threaded = want_thread && ct_progress_start(comm) == MPI_SUCCESS;
    pthread_mutex_lock(&dyn.lock);
    if (dyn.on) {
        pthread_mutex_unlock(&dyn.lock);
        PMPI_Comm_free(&dup);
        return MPI_ERR_OTHER;
    }
    dyn.comm = dup;
    PMPI_Comm_rank(dup, &dyn.rank);
    PMPI_Comm_size(dup, &dyn.size);
    dyn.posted = NULL;
    dyn.posted_tail = &dyn.posted;
    dyn.unexpected = NULL;
    dyn.unexpected_tail = &dyn.unexpected;
    memset(&dyn.st, 0, sizeof dyn.st);
    dyn.threaded = threaded;
    const char *e = getenv("COLLTUNE_DYN_INLINE");
    dyn.inline_max = e && *e ? atol(e) : DYN_INLINE_DEFAULT;
    e = getenv("COLLTUNE_DYN_FAULT");
    dyn.drop_header_at = e && !strncmp(e, "drop-header:", 12) ? atol(e + 12) : 0;
    dyn.headers_seen = 0;
    dyn.failed = MPI_SUCCESS;
    dyn.on = 1;
    pthread_mutex_unlock(&dyn.lock);
    ct_progress_set_hook(poll_hook);
    return MPI_SUCCESS;
}

int ct_dyn_init(MPI_Comm comm)
{
    return dyn_init(comm, 1);
}

int ct_dyn_init_polled(MPI_Comm comm)
{
    return dyn_init(comm, 0);
}

int ct_dyn_finalize(void)
{
    /* Our sends complete once their receivers took them: drain, then agree.
     * After a failure they may never complete (their receiver failed too, or
     * waits for data that was lost): they are left to MPI. */
    for (;;) {
        pthread_mutex_lock(&dyn.lock);
        int left = dyn.on ? (poll_locked(), dyn.failed ? 0 : dyn.sends.n + dyn.recvs.n) : -1;
        pthread_mutex_unlock(&dyn.lock);
        if (left < 0)
            return MPI_ERR_OTHER;
        if (left == 0)
            break;
    }
    /* Forwarders stay live in the barrier: a rank's last sends may wait for
     * a peer that is still receiving. */
    MPI_Request b;
    int rc = PMPI_Ibarrier(dyn.comm, &b), flag = 0;
    while (rc == MPI_SUCCESS && !flag) {
        ct_dyn_progress();
        rc = PMPI_Test(&b, &flag, MPI_STATUS_IGNORE);
    }
    ct_progress_set_hook(NULL);
    pthread_mutex_lock(&dyn.lock);
    int pending = dyn.posted || dyn.unexpected || dyn.sends.n || dyn.recvs.n;
    while (dyn.posted) { /* never matched: their requests say cancelled */
        dyn_recv *r = dyn.posted;
        dyn.posted = r->next;
        r->g->cancelled = 1;
        r->g->bytes = 0;
        greq_done(r->g, MPI_SUCCESS);
        free(r);
    }
    while (dyn.unexpected) {
        dyn_msg *m = dyn.unexpected;
        dyn.unexpected = m->next;
        msg_release(m);
    }
    reqvec_free(&dyn.recvs);
    reqvec_free(&dyn.sends);
    PMPI_Comm_free(&dyn.comm);
    int failed = dyn.failed;
    dyn.on = 0;
    pthread_mutex_unlock(&dyn.lock);
    if (rc == MPI_SUCCESS && failed)
        rc = failed;
    if (rc == MPI_SUCCESS && pending)
        rc = MPI_ERR_PENDING;
    return rc;
}

int ct_dyn_set_grouping(int on)
{
    pthread_mutex_lock(&dyn.lock);
    dyn.grouping = on != 0;
    pthread_mutex_unlock(&dyn.lock);
    return MPI_SUCCESS;
}

int ct_dyn_data_create(void *buf, int count, MPI_Datatype type, ct_dyn_data **data)
{
    if (!data || count < 0)
        return MPI_ERR_ARG;
    int size, rc = PMPI_Type_size(type, &size);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((MPI_Count)size * count > INT_MAX)
        return MPI_ERR_COUNT; /* forwarders count the payload in bytes, in an int */
    ct_dyn_data *d = calloc(1, sizeof *d);
    if (!d)
        return MPI_ERR_NO_MEM;
    d->buf = buf;
    d->count = count;
    d->type = type;
    d->bytes = (MPI_Count)size * count;
    *data = d;
    return MPI_SUCCESS;
}

int ct_dyn_isend(ct_dyn_data *d, int dest, int tag, MPI_Request *req)
{
    if (!d || !req)
        return MPI_ERR_ARG;
    if (tag < 0)
        return MPI_ERR_TAG;
    pthread_mutex_lock(&dyn.lock);
    int rc = MPI_SUCCESS;
    if (!dyn.on)
        rc = MPI_ERR_OTHER;
    else if (dest < 0 || dest >= dyn.size)
        rc = MPI_ERR_RANK;
    else if (dyn.failed)
        rc = dyn.failed;
    dyn_greq *g = NULL;
    if (rc == MPI_SUCCESS)
        rc = greq_new(dest, tag, &g, req);
    if (rc == MPI_SUCCESS && d->ready) {
        rc = plain_send(d, dest, tag, g); /* late: nothing to group with */
        g = NULL;                         /* completed there on failure */
    } else if (rc == MPI_SUCCESS) {
        if (d->npend == d->cap) {
            int nc = d->cap ? 2 * d->cap : 8;
            dyn_pend *np = realloc(d->pend, sizeof *np * (size_t)nc);
            if (!np)
                rc = MPI_ERR_NO_MEM;
            else
                d->pend = np, d->cap = nc;
        }
        if (rc == MPI_SUCCESS)
            d->pend[d->npend++] = (dyn_pend){dest, tag, g};
    }
    if (rc != MPI_SUCCESS && g) {
        greq_done(g, rc);
    }
    if (rc == MPI_SUCCESS)
        kick();
    pthread_mutex_unlock(&dyn.lock);
    return rc;
}

int ct_dyn_ready(ct_dyn_data *d)
{
    if (!d)
        return MPI_ERR_ARG;
    pthread_mutex_lock(&dyn.lock);
    int rc = MPI_SUCCESS;
    if (!dyn.on || d->ready) {
        pthread_mutex_unlock(&dyn.lock);
        return MPI_ERR_OTHER;
    }
    d->ready = 1;
    int k = d->npend;
    if (k == 1 || (k > 1 && !dyn.grouping)) {
        for (int i = 0; i < k; i++) {
            int r = plain_send(d, d->pend[i].dest, d->pend[i].tag, d->pend[i].g);
            if (r != MPI_SUCCESS)
                rc = r;
        }
    } else if (k > 1) {
        /* The list [me, d1..dk]: position 0 is the origin (its tag unused). */
        int n = k + 1;
        int32_t *list = malloc(sizeof *list * 2 * (size_t)n);
        if (!list) {
            rc = MPI_ERR_NO_MEM;
            for (int i = 0; i < k; i++)
                greq_done(d->pend[i].g, rc);
        }
        for (int i = 0; list && i < k; i++) {
            list[2 * (i + 1)] = d->pend[i].dest;
            list[2 * (i + 1) + 1] = d->pend[i].tag;
        }
        if (list) {
            list[0] = dyn.rank;
            list[1] = -1;
            dyn.st.broadcasts++;
        }
        for (int first = list ? top_pow2(n) : 0; first >= 1; first >>= 1) {
            int len = subtree_len(first, n);
            dyn_send *s = calloc(1, sizeof *s);
            dyn_greq **gs = malloc(sizeof *gs * (size_t)len);
            int r = s && gs ? MPI_SUCCESS : MPI_ERR_NO_MEM;
            if (r == MPI_SUCCESS) {
                for (int i = 0; i < len; i++)
                    gs[i] = d->pend[first - 1 + i].g;
                s->gs = gs;
                s->ng = len;
                s->data = d;
                r = post_message(dyn.rank, list + 2 * first, len, d->buf, d->count, d->type,
                                 d->bytes, s);
            }
            if (r == MPI_SUCCESS || (s && s->parts > 0)) {
                d->inflight++;
                if (r != MPI_SUCCESS)
                    rc = r;
                continue;
            }
            free(s);
            free(gs);
            for (int i = 0; i < len; i++)
                greq_done(d->pend[first - 1 + i].g, r);
            rc = r;
        }
        free(list);
    }
    d->npend = 0;
    free(d->pend);
    d->pend = NULL;
    d->cap = 0;
    kick();
    pthread_mutex_unlock(&dyn.lock);
    return rc;
}

int ct_dyn_data_free(ct_dyn_data *d)
{
    if (!d)
        return MPI_SUCCESS;
    pthread_mutex_lock(&dyn.lock);
    int busy = d->inflight > 0 || d->npend > 0;
    pthread_mutex_unlock(&dyn.lock);
    if (busy)
        return MPI_ERR_PENDING;
    free(d->pend);
    free(d);
    return MPI_SUCCESS;
}

int ct_dyn_irecv(void *buf, int count, MPI_Datatype type, int origin, int tag,
                 MPI_Request *req)
{
    if (!req || count < 0)
        return MPI_ERR_ARG;
    dyn_recv *r = calloc(1, sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    pthread_mutex_lock(&dyn.lock);
    dyn_msg **p = &dyn.unexpected;
    while (dyn.on && *p && !matches(origin, tag, (*p)->origin, (*p)->tag))
        p = &(*p)->next;
    /* After a failure only data already here can still be received. */
    int rc = !dyn.on ? MPI_ERR_OTHER : !*p && dyn.failed ? dyn.failed
                                                         : greq_new(origin, tag, &r->g, req);
    if (rc != MPI_SUCCESS) {
        pthread_mutex_unlock(&dyn.lock);
        free(r);
        return rc;
    }
    r->buf = buf;
    r->count = count;
    r->type = type;
    r->origin = origin;
    r->tag = tag;
    if (*p) {
        dyn_msg *m = *p;
        *p = m->next;
        if (!*p)
            dyn.unexpected_tail = p;
        deliver(r, m);
        msg_release(m);
        pthread_mutex_unlock(&dyn.lock);
        return MPI_SUCCESS;
    }
    r->next = NULL;
    *dyn.posted_tail = r;
    dyn.posted_tail = &r->next;
    kick();
    pthread_mutex_unlock(&dyn.lock);
    return MPI_SUCCESS;
}

void ct_dyn_stats_get(ct_dyn_stats *s)
{
    pthread_mutex_lock(&dyn.lock);
    *s = dyn.st;
    pthread_mutex_unlock(&dyn.lock);
}
