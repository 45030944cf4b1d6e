#include "sched.h"

#include <stdlib.h>
#include <string.h>

void ct_sched_init(ct_sched *s)
{
    memset(s, 0, sizeof *s);
    s->nbufs = CT_BUF_TMP0;
}

void ct_sched_free(ct_sched *s)
{
    free(s->ops);
    free(s->round_start);
    ct_sched_init(s);
}

void ct_sched_reset(ct_sched *s)
{
    /* Keeps the arrays so a reused schedule does not allocate again. */
    s->nops = 0;
    s->nrounds = 0;
    s->nbufs = CT_BUF_TMP0;
    s->error = 0;
    s->shm_parts = 0;
    s->nmsgs = 0;
    s->max_round_len = 0;
    s->max_count = 0;
    memset(s->buf_count, 0, sizeof s->buf_count);
}

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 32;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

void ct_sched_round(ct_sched *s)
{
    if (s->nrounds > 0 && s->round_start[s->nrounds - 1] == s->nops)
        return; /* the current round is still empty: reuse it */
    if (grow((void **)&s->round_start, &s->cap_rounds, s->nrounds + 1, sizeof(int))) {
        s->error = 1;
        return;
    }
    s->round_start[s->nrounds++] = s->nops;
}

int ct_sched_tmp(ct_sched *s, size_t count)
{
    if (s->nbufs >= CT_BUF_SHM) {
        s->error = 1;
        return -1;
    }
    s->buf_count[s->nbufs] = count;
    return s->nbufs++;
}

static void add(ct_sched *s, ct_op op)
{
    if (s->nrounds == 0)
        ct_sched_round(s);
    if (s->error || grow((void **)&s->ops, &s->cap_ops, s->nops + 1, sizeof(ct_op))) {
        s->error = 1;
        return;
    }
    s->ops[s->nops++] = op;
    int len = s->nops - s->round_start[s->nrounds - 1];
    if (len > s->max_round_len)
        s->max_round_len = len;
    if (op.a.count > s->max_count)
        s->max_count = op.a.count;
    s->nmsgs += op.kind == CT_OP_SEND || op.kind == CT_OP_RECV;
}

void ct_sched_add_op(ct_sched *s, const ct_op *op)
{
    add(s, *op);
}

void ct_sched_send(ct_sched *s, int peer, int buf, size_t off, size_t count)
{
    if (count == 0)
        return;
    add(s, (ct_op){.kind = CT_OP_SEND, .peer = peer, .a = {buf, off, count}});
}

void ct_sched_recv(ct_sched *s, int peer, int buf, size_t off, size_t count)
{
    if (count == 0)
        return;
    add(s, (ct_op){.kind = CT_OP_RECV, .peer = peer, .a = {buf, off, count}});
}

void ct_sched_sync_send(ct_sched *s, int peer)
{
    add(s, (ct_op){.kind = CT_OP_SEND, .peer = peer, .a = {CT_BUF_SRC, 0, 0}});
}

void ct_sched_sync_recv(ct_sched *s, int peer)
{
    add(s, (ct_op){.kind = CT_OP_RECV, .peer = peer, .a = {CT_BUF_DST, 0, 0}});
}

void ct_sched_reduce(ct_sched *s, int sbuf, size_t soff, int dbuf, size_t doff,
                     size_t count)
{
    if (count == 0)
        return;
    add(s, (ct_op){.kind = CT_OP_REDUCE, .peer = -1, .a = {sbuf, soff, count},
                   .b = {dbuf, doff, count}});
}

void ct_sched_copy(ct_sched *s, int sbuf, size_t soff, int dbuf, size_t doff,
                   size_t count)
{
    if (count == 0 || (sbuf == dbuf && soff == doff))
        return;
    add(s, (ct_op){.kind = CT_OP_COPY, .peer = -1, .a = {sbuf, soff, count},
                   .b = {dbuf, doff, count}});
}

void ct_sched_pull(ct_sched *s, int peer, int pbuf, size_t poff, int dbuf, size_t doff,
                   size_t count)
{
    if (count == 0)
        return;
    add(s, (ct_op){.kind = CT_OP_PULL, .peer = peer, .a = {pbuf, poff, count},
                   .b = {dbuf, doff, count}});
}

size_t ct_segcount_for(long long segsize_bytes, size_t type_size)
{
    if (segsize_bytes <= 0 || type_size == 0)
        return 0;
    size_t n = (size_t)segsize_bytes / type_size;
    return n ? n : 1;
}

static void sync_op(ct_sched *s, ct_opkind kind, int peer, unsigned step)
{
    ct_op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.peer = peer;
    o.a.buf = -1;
    o.b.buf = -1;
    o.a.off = step;
    ct_sched_add_op(s, &o);
}

void ct_sched_signal(ct_sched *s, unsigned step)
{
    sync_op(s, CT_OP_SIGNAL, -1, step);
}

void ct_sched_wait(ct_sched *s, int peer, unsigned step)
{
    sync_op(s, CT_OP_WAIT, peer, step);
}

void ct_sched_shm(ct_sched *s, size_t count)
{
    if (count > s->buf_count[CT_BUF_SHM])
        s->buf_count[CT_BUF_SHM] = count;
}
