/*
 * What the hierarchical (node-aware) algorithms share: the node layout of a
 * call, the choice of their parts, and the composition of parts generated for
 * groups of ranks into one schedule. The composed schedule is an ordinary
 * schedule, so the executor, the simulator, the model, the split tree and the
 * accounting see nothing special.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

void ct_layout_free(ct_layout *L)
{
    free(L->node_of);
    free(L->local);
    free(L->start);
    free(L->members);
    free(L->leader);
    memset(L, 0, sizeof *L);
}

int ct_layout_build(ct_layout *L, const ct_params *p, int one_node)
{
    int n = p->size;
    memset(L, 0, sizeof *L);
    L->size = n;
    L->node_of = malloc(sizeof(int) * (size_t)n);
    L->local = malloc(sizeof(int) * (size_t)n);
    L->members = malloc(sizeof(int) * (size_t)n);
    L->start = calloc((size_t)n + 2, sizeof(int));
    if (!L->node_of || !L->local || !L->members || !L->start) {
        ct_layout_free(L);
        return -1;
    }
    int k = 0;
    for (int r = 0; r < n; r++) {
        int v = (p->node_of && !one_node) ? p->node_of[r] : 0;
        /* Numbered by first appearance: a rank opens node k only if it is k. */
        if (v < 0 || v > k) {
            ct_layout_free(L);
            return -1;
        }
        if (v == k)
            k++;
        L->node_of[r] = v;
    }
    L->nnodes = k;
    for (int r = 0; r < n; r++)
        L->start[L->node_of[r] + 1]++;
    for (int j = 0; j < k; j++) {
        L->start[j + 1] += L->start[j];
        int sz = L->start[j + 1] - L->start[j];
        if (sz > L->max_node)
            L->max_node = sz;
    }
    int *fill = calloc((size_t)k, sizeof(int));
    L->leader = malloc(sizeof(int) * (size_t)k);
    if (!fill || !L->leader) {
        free(fill);
        ct_layout_free(L);
        return -1;
    }
    L->contiguous = 1;
    for (int r = 0; r < n; r++) {
        int j = L->node_of[r];
        L->local[r] = fill[j];
        L->members[L->start[j] + fill[j]++] = r;
        if (r > 0 && j < L->node_of[r - 1])
            L->contiguous = 0;
    }
    free(fill);
    for (int j = 0; j < k; j++)
        L->leader[j] = L->members[L->start[j]];
    return 0;
}

ct_params ct_part_params(const ct_params *p, int coll, const char *alg, int size, int rank,
                         int root)
{
    ct_params q = *p;
    q.coll = coll;
    q.size = size;
    q.rank = rank;
    q.root = root;
    q.in_place = 0;
    q.node_of = NULL;
    q.layout_id = 0;
    q.intra = q.inter = NULL;
    const ct_registry_entry *e = ct_registry_find((ct_coll)coll, alg);
    if (!e || !(e->info.flags & CT_ALG_SEGMENTABLE))
        q.segcount = 0;
    return q;
}

/* Elements of buffer b the schedule touches. */
static size_t extent_of(const ct_sched *sub, int b)
{
    size_t need = 0;
    for (int i = 0; i < sub->nops; i++) {
        const ct_op *o = &sub->ops[i];
        const ct_region *rs[2] = {&o->a, &o->b};
        int nr = (o->kind == CT_OP_REDUCE || o->kind == CT_OP_COPY) ? 2 : 1;
        for (int j = 0; j < nr; j++)
            if (rs[j]->buf == b && rs[j]->count > 0 && rs[j]->off + rs[j]->count > need)
                need = rs[j]->off + rs[j]->count;
    }
    return need;
}

/* Step t of shared-memory part j of a composed schedule (CT_STEP_PART in
 * sched.h); 0 for a step the part range cannot hold. */
static unsigned part_step(unsigned j, unsigned t)
{
    if (t == CT_STEP_PREV) /* the previous part done, or the previous call */
        return j == 0 ? CT_STEP_PREV : j * CT_STEP_PART - 1;
    if (t == CT_STEP_DONE)
        return (j + 1) * CT_STEP_PART - 1;
    return t < CT_STEP_PART - 1 ? j * CT_STEP_PART + t : 0;
}

int ct_compose(ct_sched *s, const char *alg, const ct_params *q, const int *group,
               int src_buf, size_t src_off, int dst_buf, size_t dst_off, int sync)
{
    const ct_registry_entry *e = ct_registry_find((ct_coll)q->coll, alg);
    int shm = e && (e->info.flags & CT_ALG_SHARED_MEMORY);
    ct_params qq = *q;
    if (shm && sync && qq.shm_count < qq.count * (size_t)qq.size)
        qq.shm_count = qq.count * (size_t)qq.size; /* flags only: no data goes in */
    if (shm && s->shm_parts >= CT_STEP_MAX_PARTS)
        return -1;
    unsigned part = shm ? (unsigned)s->shm_parts++ : 0;
    ct_sched sub;
    ct_sched_init(&sub);
    if (ct_sched_generate(alg, &qq, &sub)) {
        ct_sched_free(&sub);
        return -1;
    }
    int map[CT_MAX_BUFS];
    size_t base[CT_MAX_BUFS] = {0};
    map[CT_BUF_SRC] = src_buf;
    base[CT_BUF_SRC] = src_off;
    map[CT_BUF_DST] = dst_buf;
    base[CT_BUF_DST] = dst_off;
    for (int b = CT_BUF_TMP0; b < sub.nbufs; b++)
        map[b] = -1;
    /* The segment is the node's, shared by all parts: it stays itself. */
    map[CT_BUF_SHM] = CT_BUF_SHM;
    if (!sync)
        ct_sched_shm(s, sub.buf_count[CT_BUF_SHM]);
    for (int b = 0; b < sub.nbufs && !sync; b++) {
        if (map[b] >= 0)
            continue;
        /* Unmapped SRC or DST, and every temporary: new temporaries, made only
         * when the part really uses them. */
        size_t need = b >= CT_BUF_TMP0 ? sub.buf_count[b] : extent_of(&sub, b);
        if (need > 0 && extent_of(&sub, b) > 0)
            map[b] = ct_sched_tmp(s, need);
    }
    for (int r = 0; r < sub.nrounds; r++) {
        ct_sched_round(s);
        int first = sub.round_start[r], len = ct_sched_round_len(&sub, r);
        for (int i = first; i < first + len; i++) {
            ct_op o = sub.ops[i];
            if (o.kind == CT_OP_SEND || o.kind == CT_OP_RECV || o.kind == CT_OP_WAIT)
                o.peer = group[o.peer]; /* flags are indexed by real rank too */
            if (o.kind == CT_OP_SIGNAL || o.kind == CT_OP_WAIT) {
                unsigned step = part_step(part, (unsigned)o.a.off);
                if (!step && o.a.off != CT_STEP_PREV) {
                    ct_sched_free(&sub);
                    return -1;
                }
                o.a.off = step;
                ct_sched_add_op(s, &o);
                continue;
            }
            if (sync) {
                if (o.kind == CT_OP_SEND)
                    ct_sched_sync_send(s, o.peer);
                else if (o.kind == CT_OP_RECV)
                    ct_sched_sync_recv(s, o.peer);
                continue;
            }
            ct_region *rs[2] = {&o.a, &o.b};
            int nr = (o.kind == CT_OP_REDUCE || o.kind == CT_OP_COPY) ? 2 : 1;
            for (int j = 0; j < nr; j++) {
                int b = rs[j]->buf;
                if (rs[j]->count == 0) {
                    /* A zero-byte message: any buffer will do. */
                    *rs[j] = (ct_region){o.kind == CT_OP_SEND ? CT_BUF_SRC : CT_BUF_DST, 0, 0};
                    continue;
                }
                if (b < 0 || (b >= sub.nbufs && b != CT_BUF_SHM) || map[b] < 0) {
                    ct_sched_free(&sub);
                    return -1;
                }
                rs[j]->buf = map[b];
                rs[j]->off += base[b];
            }
            if (o.kind == CT_OP_COPY && o.a.buf == o.b.buf && o.a.off == o.b.off)
                continue;
            ct_sched_add_op(s, &o);
        }
    }
    ct_sched_round(s);
    ct_sched_free(&sub);
    return s->error ? -1 : 0;
}

/* ---- The parts ---------------------------------------------------------- */

typedef struct hier_spec {
    ct_coll coll;
    ct_coll intra_coll, intra_back; /* the intra part, and its way back (-1: none) */
    ct_coll inter_coll;
    const char *intra_default, *inter_default;
} hier_spec;

static const hier_spec specs[] = {
    {CT_BCAST, CT_BCAST, -1, CT_BCAST, "binomial", "binomial"},
    {CT_REDUCE, CT_REDUCE, -1, CT_REDUCE, "binomial", "binomial"},
    {CT_ALLREDUCE, CT_REDUCE, CT_BCAST, CT_ALLREDUCE, "binomial", "recursive_doubling"},
    {CT_ALLGATHER, CT_GATHER, CT_BCAST, CT_ALLGATHER, "binomial", "bruck"},
    {CT_BARRIER, CT_GATHER, CT_BCAST, CT_BARRIER, "binomial", "dissemination"},
};

/* A registry entry usable as a part: it exists, generates, is not itself
 * hierarchical. */
static const ct_registry_entry *part(ct_coll coll, const char *name)
{
    const ct_registry_entry *e = ct_registry_find(coll, name);
    /* The one-copy algorithms pull from the peers' own buffers, which a part of a
     * composed schedule does not have (its buffers are renumbered): not parts. */
    if (!e || !e->generate || (e->info.flags & (CT_ALG_HIERARCHICAL | CT_ALG_ONE_COPY)))
        return NULL;
    return e;
}

int ct_hier_parts(ct_coll coll, const char *intra, const char *inter, const char **intra_out,
                  const char **inter_out, unsigned *flags, char *why, size_t whylen)
{
    const hier_spec *sp = NULL;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (specs[i].coll == coll)
            sp = &specs[i];
    if (!sp) {
        snprintf(why, whylen, "%s has no hierarchical algorithm", ct_coll_name(coll));
        return -1;
    }
    if (!intra || !intra[0])
        intra = sp->intra_default;
    if (!inter || !inter[0])
        inter = sp->inter_default;
    const ct_registry_entry *a = part(sp->intra_coll, intra);
    const ct_registry_entry *back = (int)sp->intra_back >= 0 ? part(sp->intra_back, intra) : a;
    const ct_registry_entry *b = part(sp->inter_coll, inter);
    if (!a || !back) {
        if ((int)sp->intra_back >= 0)
            snprintf(why, whylen,
                     "%s/hier: intra part '%s' must name a %s and a %s algorithm (e.g. "
                     "linear, chain, binary, binomial)",
                     ct_coll_name(coll), intra, ct_coll_name(sp->intra_coll),
                     ct_coll_name(sp->intra_back));
        else
            snprintf(why, whylen, "%s/hier: unknown intra part '%s' (a %s algorithm, not "
                     "native or hier)", ct_coll_name(coll), intra, ct_coll_name(sp->intra_coll));
        return -1;
    }
    if (!b) {
        snprintf(why, whylen, "%s/hier: unknown inter part '%s' (a %s algorithm, not native or "
                 "hier)", ct_coll_name(coll), inter, ct_coll_name(sp->inter_coll));
        return -1;
    }
    if (b->info.flags & CT_ALG_SHARED_MEMORY) {
        snprintf(why, whylen, "%s/hier: the inter part '%s' joins nodes, which share no "
                 "memory", ct_coll_name(coll), inter);
        return -1;
    }
    *intra_out = a->info.name;
    *inter_out = b->info.name;
    *flags = ((a->info.flags | back->info.flags | b->info.flags) & CT_ALG_NEEDS_COMMUTE) |
             (a->info.flags & CT_ALG_SHARED_MEMORY);
    return 0;
}

int ct_hier_begin(const ct_params *p, ct_layout *L, int one_node, int keep_order,
                  const char **intra, const char **inter)
{
    char why[160];
    unsigned flags;
    if (ct_hier_parts((ct_coll)p->coll, p->intra, p->inter, intra, inter, &flags, why,
                      sizeof why))
        return -1;
    /* A part that needs a commutative operation cannot serve a
     * non-commutative one (the API refuses such calls before this). */
    if ((flags & CT_ALG_NEEDS_COMMUTE) && !p->commutative)
        return -1;
    if (ct_layout_build(L, p, one_node))
        return -1;
    if (keep_order && !p->commutative && !L->contiguous && !one_node) {
        /* Rank order survives only when nodes are intervals of ranks: on any other
         * layout the intra part runs over all ranks as one node, which a node's
         * segment cannot serve. */
        ct_layout_free(L);
        if (flags & CT_ALG_SHARED_MEMORY)
            return -1;
        return ct_layout_build(L, p, 1);
    }
    return 0;
}

int ct_hier_end(ct_sched *s, ct_layout *L, int rc)
{
    ct_layout_free(L);
    if (!rc && s->shm_parts) {
        /* The parts ended at their own steps: the call is done with the segment. */
        ct_sched_signal(s, CT_STEP_DONE);
        rc = s->error ? -1 : 0;
    }
    return rc;
}
