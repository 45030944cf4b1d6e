/*
 * Dynamic broadcasts (src/dyn) under MPI, one job per process count.
 *
 * 1. Shapes: origins {0, N-1, N/2} x k = 1..16 destinations x four list orders
 *    (neighbours first, far ranks first, shuffled, descending), distinct ranks
 *    while the communicator has them and then repeated ranks under distinct
 *    tags. Each destination's data, origin, tag and count are checked; receives
 *    are posted before the data is sent or after it arrived (the rank waits for
 *    its dyn messages to be counted first, so the unexpected path runs); every
 *    rank's message counts equal the binomial tree's over the list, computed
 *    here from the tree's definition (the origin: ceil(log2(k+1))); counts
 *    rotate over {0, 1, 1000, 70000} ints; the waits rotate over ct_wait, a
 *    ct_test loop, ct_waitall and MPI_Waitall (threaded).
 * 2. Grouping off: k plain sends from the origin, nothing forwarded.
 * 3. Late sends: half the destinations before ready (a tree), the rest after
 *    (plain sends), data checked and counts exact.
 * 4. In flight at once: every rank owns three data objects (different data,
 *    lists and tags) readied in reverse order while it receives everyone's,
 *    and a colltune ct_ibcast runs beside on the same progress thread.
 * 5. Non-contiguous types at both ends (vector at the origin, contiguous at the
 *    receiver and the reverse).
 * 6. Threads: four threads per rank post sends, readies and receives at once.
 * 7. Background forwarding: a rank with children in the tree spins on a word of
 *    node-shared memory, making no MPI or ct_ call, until every other
 *    destination has received and said so in that memory.
 * At the end, every rank received exactly as many messages as the cases sent it
 * (nothing twice) and ct_dyn_finalize finds nothing left over; then the layer
 * starts again on a split communicator (its ranks, counters from zero, a second
 * init refused) for one broadcast, and once more for the failure case (8,
 * failures_case: a lost header, an unmatched receive at finalize).
 *
 * Usage: test_dyn_mpi [--no-thread]  (--no-thread: no progress thread,
 * COLLTUNE_PROGRESS=off; the engine moves inside the test's calls and the
 * cases that need a background engine (6, 7) are skipped).
 *        test_dyn_mpi --bench BYTES REPS [BYTES REPS ...]  (timings, no checks)
 * Under ThreadSanitizer the test leaves with _exit after the verdict (see
 * tests/c/test_nbc_mpi.c: the uninstrumented MPI dies in MPI_Finalize).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colltune.h"
#include "dyn/dyn.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

enum { MAXK = 16, NCOUNTS = 4 };
static const int counts[NCOUNTS] = {1, 1000, 0, 70000};

static int rank, nprocs, failures, ncases, threaded;
static long expect_received; /* messages this rank must have received in all */

static void fail(const char *fmt, int a, int b, int c)
{
    failures++;
    if (failures <= 20) {
        fprintf(stderr, "FAIL rank %d/%d: ", rank, nprocs);
        fprintf(stderr, fmt, a, b, c);
        fputc('\n', stderr);
    }
}

static int value(int origin, int tagbase, int i) { return origin * 1000003 + tagbase * 7 + i; }

/* The binomial tree over positions 0..n-1 from its definition: p sends to
 * p + 2^j for every 2^j below p's lowest set bit (any 2^j for p = 0) that
 * stays in the list. */
static int tree_children(int p, int n)
{
    int c = 0, limit = p == 0 ? n : (p & -p);
    for (int m = 1; m < limit && p + m < n; m *= 2)
        c++;
    return c;
}

static int ceil_log2(int x)
{
    int c = 0;
    while ((1 << c) < x)
        c++;
    return c;
}

/* A deterministic shuffle every rank computes the same. */
static unsigned lcg(unsigned *s) { return *s = *s * 1103515245u + 12345u, (*s >> 16) & 0x7fff; }

/* The destination list for origin o, k destinations, order kind; distinct
 * ranks (not o) while there are enough, then repeats. */
static void make_list(int o, int k, int kind, unsigned seed, int *dest)
{
    int others = nprocs - 1, pool[64], np = 0;
    for (int d = 1; d <= others; d++) /* neighbours first: o+1, o-1, o+2, ... */
        pool[np++] = (o + ((d % 2) ? (d + 1) / 2 : nprocs - d / 2)) % nprocs;
    for (int i = 0; i < k; i++)
        dest[i] = others ? pool[i % others] : o;
    if (kind == 1) { /* far ranks first */
        for (int i = 0; i < k / 2; i++) {
            int t = dest[i];
            dest[i] = dest[k - 1 - i];
            dest[k - 1 - i] = t;
        }
    } else if (kind == 2) {
        for (int i = k - 1; i > 0; i--) {
            int j = (int)(lcg(&seed) % (unsigned)(i + 1)), t = dest[i];
            dest[i] = dest[j];
            dest[j] = t;
        }
    } else if (kind == 3) { /* descending rank order */
        for (int i = 0; i < k; i++)
            for (int j = i + 1; j < k; j++)
                if (dest[j] > dest[i]) {
                    int t = dest[i];
                    dest[i] = dest[j];
                    dest[j] = t;
                }
    }
}

static void complete_all(int n, MPI_Request *reqs, MPI_Status *sts, int how)
{
    if (how == 0 || (how == 3 && !threaded)) {
        for (int i = 0; i < n; i++)
            ct_wait(&reqs[i], &sts[i]);
    } else if (how == 1) {
        for (int i = 0; i < n; i++) {
            int flag = 0;
            while (!flag)
                ct_test(&reqs[i], &flag, &sts[i]);
        }
    } else if (how == 2) {
        ct_waitall(n, reqs, sts);
    } else {
        MPI_Waitall(n, reqs, sts);
    }
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            fail("request %d not freed (how %d)%.0d", i, how, 0);
}

static long received_now(void)
{
    ct_dyn_stats s;
    if (!threaded)
        ct_dyn_progress();
    ct_dyn_stats_get(&s);
    return s.received;
}

/* One broadcast case: origin o sends count ints to dest[0..k) under tags
 * tagbase + i; `before` of them are posted before ready, the rest after.
 * post_after: the receivers post once their messages have arrived. */
static void bcast_case(int o, const int *dest, int k, int before, int count, int tagbase,
                       int post_after, int grouping, int how)
{
    ncases++;
    MPI_Barrier(MPI_COMM_WORLD);
    ct_dyn_stats s0, s1;
    ct_dyn_stats_get(&s0);
    ct_dyn_set_grouping(grouping);
    int mine = 0, *rbuf[MAXK];
    MPI_Request rq[MAXK];
    MPI_Status st[MAXK];
    int slot[MAXK];
    for (int i = 0; i < k; i++)
        if (dest[i] == rank) {
            slot[mine] = i;
            rbuf[mine] = malloc(sizeof(int) * (size_t)(count + 1));
            for (int j = 0; j <= count; j++)
                rbuf[mine][j] = -7;
            mine++;
        }
    expect_received += mine;
    if (!post_after)
        for (int m = 0; m < mine; m++)
            ct_dyn_irecv(rbuf[m], count, MPI_INT, o, tagbase + slot[m], &rq[m]);
    MPI_Barrier(MPI_COMM_WORLD); /* receives posted before anything is sent */
    int *sbuf = NULL;
    MPI_Request sq[MAXK];
    MPI_Status sst[MAXK];
    if (rank == o) {
        sbuf = malloc(sizeof(int) * (size_t)(count + 1));
        ct_dyn_data *d;
        ct_dyn_data_create(sbuf, count, MPI_INT, &d);
        for (int i = 0; i < before; i++)
            ct_dyn_isend(d, dest[i], tagbase + i, &sq[i]);
        for (int j = 0; j < count; j++) /* the data comes after the sends */
            sbuf[j] = value(o, tagbase, j);
        ct_dyn_ready(d);
        for (int i = before; i < k; i++)
            ct_dyn_isend(d, dest[i], tagbase + i, &sq[i]);
        complete_all(k, sq, sst, how);
        if (ct_dyn_data_free(d) != MPI_SUCCESS)
            fail("data_free refused after completion (k=%d)%.0d%.0d", k, 0, 0);
    }
    if (post_after) {
        time_t t0 = time(NULL);
        while (received_now() - s0.received < mine && time(NULL) - t0 < 60)
            sched_yield();
        for (int m = 0; m < mine; m++)
            ct_dyn_irecv(rbuf[m], count, MPI_INT, o, tagbase + slot[m], &rq[m]);
    }
    complete_all(mine, rq, st, how);
    for (int m = 0; m < mine; m++) {
        int got = -1, bad = 0;
        MPI_Get_count(&st[m], MPI_INT, &got);
        if (st[m].MPI_SOURCE != o || st[m].MPI_TAG != tagbase + slot[m] || got != count)
            fail("status: source/tag/count wrong (origin %d, tag %d, count %d)", o,
                 tagbase + slot[m], count);
        for (int j = 0; j < count && !bad; j++)
            bad = rbuf[m][j] != value(o, tagbase, j);
        if (bad || rbuf[m][count] != -7)
            fail("data wrong: origin %d k %d count %d", o, k, count);
        free(rbuf[m]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ct_dyn_stats_get(&s1);
    /* What this rank should have sent: the tree over [o, sent-before ...]. */
    int n = before + 1, tree = grouping && before > 1;
    long exp_sent = 0, exp_fwd = 0, exp_plain = 0, exp_bcast = 0;
    if (tree) {
        for (int p = 0; p < n; p++) {
            int who = p == 0 ? o : dest[p - 1];
            if (who != rank)
                continue;
            exp_sent += tree_children(p, n);
            if (p > 0)
                exp_fwd += tree_children(p, n);
        }
        if (rank == o) {
            exp_bcast = 1;
            if (tree_children(0, n) != ceil_log2(before + 1))
                fail("tree helper disagrees with ceil(log2(k+1)) at k=%d%.0d%.0d", before, 0,
                     0);
        }
    } else if (rank == o) {
        exp_sent = exp_plain = before;
    }
    if (rank == o) {
        exp_sent += k - before;
        exp_plain += k - before;
    }
    if (s1.messages_sent - s0.messages_sent != exp_sent ||
        s1.forwarded - s0.forwarded != exp_fwd || s1.plain_sends - s0.plain_sends != exp_plain ||
        s1.broadcasts - s0.broadcasts != exp_bcast)
        fail("message counts: sent %d, expected %d (k=%d)", (int)(s1.messages_sent -
                                                                   s0.messages_sent),
             (int)exp_sent, k);
    if (s1.received - s0.received != mine)
        fail("received %d messages, expected %d (origin %d)", (int)(s1.received - s0.received),
             mine, o);
    if (post_after && s1.unexpected - s0.unexpected != mine)
        fail("unexpected path: %d of %d (origin %d)", (int)(s1.unexpected - s0.unexpected), mine,
             o);
    if (rank == o && s1.bytes_sent - s0.bytes_sent != exp_sent * (long)count * 4)
        fail("bytes: %d for %d messages of %d ints", (int)(s1.bytes_sent - s0.bytes_sent),
             (int)exp_sent, count);
    free(sbuf);
}

static void shapes(void)
{
    int origins[3] = {0, nprocs - 1, nprocs / 2}, tagbase = 100, c = 0;
    for (int oi = 0; oi < 3; oi++) {
        if ((oi == 1 && nprocs - 1 == 0) || (oi == 2 && (nprocs / 2 == 0 || nprocs / 2 ==
                                                                                nprocs - 1)))
            continue;
        for (int k = 1; k <= MAXK; k++)
            for (int kind = 0; kind < 4; kind++) {
                int dest[MAXK];
                make_list(origins[oi], k, kind, (unsigned)(k * 31 + kind), dest);
                bcast_case(origins[oi], dest, k, k, counts[c % NCOUNTS], tagbase,
                           (c / 2) % 2, 1, c % 4);
                tagbase += MAXK;
                c++;
            }
    }
}

static void grouping_off_and_late(void)
{
    int tagbase = 50000;
    for (int k = 1; k <= MAXK; k += 3) {
        int dest[MAXK], o = (k * 5) % nprocs;
        make_list(o, k, 2, (unsigned)k, dest);
        bcast_case(o, dest, k, k, counts[k % NCOUNTS], tagbase, k % 2, 0, k % 4);
        tagbase += MAXK;
        for (int before = 0; before <= k; before += (k > 4 ? k / 3 : 1)) {
            bcast_case(o, dest, k, before, 1000, tagbase, 0, 1, before % 4);
            tagbase += MAXK;
        }
    }
}

/* Every rank owns three data objects, readied in reverse order, while it
 * receives everybody's. */
static void in_flight(void)
{
    enum { D = 3, CNT = 5000 };
    ncases++;
    MPI_Barrier(MPI_COMM_WORLD);
    int *sb[D], dl[D][MAXK], kd[D];
    ct_dyn_data *data[D];
    MPI_Request *sreq = malloc(sizeof *sreq * D * MAXK), *rreq = malloc(sizeof *rreq *
                                                                          (size_t)nprocs * D * MAXK);
    int ns = 0, nr = 0;
    int **rb = malloc(sizeof *rb * (size_t)nprocs * D * MAXK), *rorig = malloc(sizeof(int) *
                                                                                (size_t)nprocs * D * MAXK);
    int *rtag = malloc(sizeof(int) * (size_t)nprocs * D * MAXK);
    /* Everyone computes everyone's lists to post its receives first. */
    for (int o = 0; o < nprocs; o++)
        for (int j = 0; j < D; j++) {
            int k = 1 + (o + 5 * j) % MAXK, dest[MAXK];
            make_list(o, k, (o + j) % 4, (unsigned)(o * 3 + j), dest);
            for (int i = 0; i < k; i++)
                if (dest[i] == rank) {
                    int tag = 90000 + (o * D + j) * MAXK + i;
                    rb[nr] = malloc(sizeof(int) * CNT);
                    rorig[nr] = o;
                    rtag[nr] = tag;
                    ct_dyn_irecv(rb[nr], CNT, MPI_INT, o, tag, &rreq[nr]);
                    nr++;
                }
            if (o == rank) {
                kd[j] = k;
                memcpy(dl[j], dest, sizeof dest);
            }
        }
    expect_received += nr;
    /* A colltune non-blocking bcast in flight beside them, on the same
     * progress thread. */
    int nb[CNT];
    MPI_Request nbreq;
    for (int i = 0; i < CNT; i++)
        nb[i] = rank == 0 ? value(0, 1, i) : -1;
    ct_ibcast(nb, CNT, MPI_INT, 0, MPI_COMM_WORLD, NULL, &nbreq);
    for (int j = 0; j < D; j++) {
        sb[j] = malloc(sizeof(int) * CNT);
        ct_dyn_data_create(sb[j], CNT, MPI_INT, &data[j]);
        for (int i = 0; i < kd[j]; i++)
            ct_dyn_isend(data[j], dl[j][i], 90000 + (rank * D + j) * MAXK + i, &sreq[ns++]);
    }
    for (int j = D - 1; j >= 0; j--) {
        for (int i = 0; i < CNT; i++)
            sb[j][i] = value(rank, 90000 + (rank * D + j) * MAXK, i);
        ct_dyn_ready(data[j]);
    }
    ct_waitall(ns, sreq, MPI_STATUSES_IGNORE);
    ct_waitall(nr, rreq, MPI_STATUSES_IGNORE);
    ct_wait(&nbreq, MPI_STATUS_IGNORE);
    for (int i = 0, bad = 0; i < CNT && !bad; i++)
        if ((bad = nb[i] != value(0, 1, i)))
            fail("in flight: the ct_ibcast beside got %d at %d%.0d", nb[i], i, 0);
    for (int i = 0; i < nr; i++) {
        int base = rtag[i] - (rtag[i] - 90000) % MAXK, bad = 0;
        for (int x = 0; x < CNT && !bad; x++)
            bad = rb[i][x] != value(rorig[i], base, x);
        if (bad)
            fail("in flight: data from %d tag %d wrong%.0d", rorig[i], rtag[i], 0);
        free(rb[i]);
    }
    for (int j = 0; j < D; j++) {
        ct_dyn_data_free(data[j]);
        free(sb[j]);
    }
    free(sreq), free(rreq), free(rb), free(rorig), free(rtag);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A vector (every other int) at the origin, dense at the receivers; then dense
 * at the origin and a vector at the receivers (which forward from it); with
 * the payload inline (300 ints) and in its own message (6000). */
static void noncontiguous(int CNT)
{
    MPI_Datatype vec;
    MPI_Type_vector(CNT, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int dir = 0; dir < 2; dir++) {
        ncases++;
        int o = dir ? nprocs - 1 : 0, tag = 70000 + 2 * CNT + dir;
        MPI_Request r;
        MPI_Status st;
        int *b = calloc(2 * CNT, sizeof(int));
        if (rank != o) {
            if (dir)
                ct_dyn_irecv(b, 1, vec, o, tag, &r);
            else
                ct_dyn_irecv(b, CNT, MPI_INT, o, tag, &r);
            expect_received++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == o) {
            ct_dyn_data *d;
            MPI_Request *sq = malloc(sizeof *sq * (size_t)nprocs);
            int ns = 0;
            if (dir)
                ct_dyn_data_create(b, CNT, MPI_INT, &d);
            else
                ct_dyn_data_create(b, 1, vec, &d);
            for (int p = 0; p < nprocs; p++)
                if (p != o)
                    ct_dyn_isend(d, p, tag, &sq[ns++]);
            for (int i = 0; i < CNT; i++)
                b[dir ? i : 2 * i] = value(o, tag, i);
            ct_dyn_ready(d);
            ct_waitall(ns, sq, MPI_STATUSES_IGNORE);
            ct_dyn_data_free(d);
            free(sq);
        } else {
            ct_wait(&r, &st);
            int bad = 0;
            for (int i = 0; i < CNT && !bad; i++)
                bad = b[dir ? 2 * i : i] != value(o, tag, i) || (dir && b[2 * i + 1] != 0);
            if (bad)
                fail("non-contiguous (direction %d) from %d%.0d", dir, o, 0);
        }
        free(b);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Type_free(&vec);
}

/* Four threads per rank: thread t owns one data object sent to every other
 * rank and receives thread t's data from every other rank. */
enum { NT = 4, TCNT = 777 };
#ifdef UNDER_TSAN
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int threads_done, thread_bad;
#endif
static void *thread_main(void *arg)
{
    int t = (int)(long)arg, tag = 80000 + t, ns = 0, nr = 0;
    int *sb = malloc(sizeof(int) * TCNT), *rb = malloc(sizeof(int) * TCNT * (size_t)nprocs);
    MPI_Request *rq = malloc(sizeof *rq * 2 * (size_t)nprocs), *sq = rq + nprocs;
    for (int o = 0; o < nprocs; o++)
        if (o != rank)
            ct_dyn_irecv(rb + (size_t)o * TCNT, TCNT, MPI_INT, o, tag, &rq[nr++]);
    ct_dyn_data *d;
    ct_dyn_data_create(sb, TCNT, MPI_INT, &d);
    for (int i = 1; i < nprocs; i++)
        ct_dyn_isend(d, (rank + i) % nprocs, tag, &sq[ns++]);
    for (int i = 0; i < TCNT; i++)
        sb[i] = value(rank, tag, i);
    ct_dyn_ready(d);
    MPI_Waitall(ns, sq, MPI_STATUSES_IGNORE);
    MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
    ct_dyn_data_free(d);
    int bad = 0;
    for (int o = 0; o < nprocs; o++)
        for (int i = 0; o != rank && i < TCNT && !bad; i++)
            bad = rb[(size_t)o * TCNT + i] != value(o, tag, i);
    free(sb), free(rb), free(rq);
#ifdef UNDER_TSAN
    /* A thread that called MPI must not exit under TSan (MPICH's thread-local
     * destructors crash there): report and park until the process _exits. */
    pthread_mutex_lock(&park_lock);
    thread_bad += bad;
    threads_done++;
    pthread_cond_broadcast(&park_cond);
    for (;;)
        pthread_cond_wait(&park_cond, &park_lock);
#endif
    return (void *)(long)bad;
}

static void threads(void)
{
    ncases++;
    pthread_t th[NT];
    MPI_Barrier(MPI_COMM_WORLD);
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, thread_main, (void *)t);
#ifdef UNDER_TSAN
    pthread_mutex_lock(&park_lock);
    while (threads_done < NT)
        pthread_cond_wait(&park_cond, &park_lock);
    if (thread_bad)
        fail("threads: %d threads received wrong data%.0d%.0d", thread_bad, 0, 0);
    pthread_mutex_unlock(&park_lock);
#else
    for (int t = 0; t < NT; t++) {
        void *bad;
        pthread_join(th[t], &bad);
        if (bad)
            fail("threads: thread %d received wrong data%.0d%.0d", t, 0, 0);
    }
#endif
    expect_received += (long)NT * (nprocs - 1);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank f (position 1 of a list [0, f, ...], which has children) spins on
 * node-shared memory while the other destinations receive and count in it. */
static void background(void)
{
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nn;
    MPI_Comm_size(node, &nn);
    if (nn != nprocs || nprocs < 4) { /* several nodes, or no forwarder with children */
        MPI_Comm_free(&node);
        return;
    }
    ncases++;
    atomic_int *done;
    MPI_Win win;
    MPI_Aint sz = rank == 0 ? (MPI_Aint)sizeof(atomic_int) : 0;
    void *base;
    MPI_Win_allocate_shared(sz, sizeof(atomic_int), MPI_INFO_NULL, node, &base, &win);
    MPI_Aint qs;
    int du;
    MPI_Win_shared_query(win, 0, &qs, &du, &base);
    done = base;
    if (rank == 0)
        atomic_store(done, 0);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* The list [0, 1, ..., N-1] (rank p at position p); f a power of two with
     * f + 1 in the list, so that position f has children f + 1, f + 2, ... */
    int k = nprocs - 1, dest[64], f = 1;
    while (2 * f < nprocs)
        f *= 2;
    if (f + 1 >= nprocs)
        f /= 2;
    for (int i = 0; i < k; i++)
        dest[i] = i + 1;
    int tag = 60000, cnt = 4096, others = k - 1;
    int *b = malloc(sizeof(int) * cnt);
    MPI_Request r;
    ct_dyn_stats s0, s1;
    ct_dyn_stats_get(&s0);
    if (rank != 0 && rank != f)
        ct_dyn_irecv(b, cnt, MPI_INT, 0, tag + rank - 1, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        ct_dyn_data *d;
        MPI_Request sq[64];
        ct_dyn_data_create(b, cnt, MPI_INT, &d);
        for (int i = 0; i < k; i++)
            ct_dyn_isend(d, dest[i], tag + i, &sq[i]);
        for (int i = 0; i < cnt; i++)
            b[i] = value(0, tag, i);
        ct_dyn_ready(d);
        ct_waitall(k, sq, MPI_STATUSES_IGNORE);
        ct_dyn_data_free(d);
    } else if (rank == f) {
        /* No MPI, no ct_: only the progress thread can forward. */
        time_t t0 = time(NULL);
        while (atomic_load(done) < others && time(NULL) - t0 < 60)
            sched_yield();
        if (atomic_load(done) < others)
            fail("background: %d of %d children received while the forwarder spun", atomic_load(done),
                 others, 0);
        ct_dyn_irecv(b, cnt, MPI_INT, 0, tag + rank - 1, &r);
    }
    if (rank != 0) {
        MPI_Status st;
        ct_wait(&r, &st);
        if (rank != f)
            atomic_fetch_add(done, 1);
        int bad = 0;
        for (int i = 0; i < cnt && !bad; i++)
            bad = b[i] != value(0, tag, i);
        if (bad)
            fail("background: data wrong at %d%.0d%.0d", rank, 0, 0);
        expect_received++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ct_dyn_stats_get(&s1);
    if (rank == f && s1.forwarded - s0.forwarded != tree_children(f, nprocs))
        fail("background: forwarder sent %d, tree says %d%.0d", (int)(s1.forwarded - s0.forwarded),
             tree_children(f, nprocs), 0);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    free(b);
}

/* --bench BYTES REPS: rank 0 sends BYTES to every other rank, REPS times, with
 * dynamic broadcasts (grouping on), plain dyn sends (grouping off) and
 * MPI_Bcast; prints the mean time from the first send to the last receipt
 * (the slowest rank, barrier-delimited). Figures, not a test. */
/* 8. Failures (last, on a fresh init): rank 1 loses the second of four headers
 * rank 0 sends it (COLLTUNE_DYN_FAULT=drop-header:2, and every payload in a data
 * message of its own: COLLTUNE_DYN_INLINE=0). The first arrives; the second and
 * the third must fail (their receives complete with an error, or are refused
 * once the engine failed) and leave their buffers untouched: the third's data
 * must not be taken for the second's (header and data pairing lost); later
 * receives are refused; ct_dyn_finalize reports the failure. Rank 0 also
 * finalizes with a receive that can never match, which must complete as
 * cancelled. */
static void failures_case(void)
{
    if (nprocs < 2)
        return;
    ncases++;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    setenv("COLLTUNE_DYN_INLINE", "0", 1);
    if (rank == 1)
        setenv("COLLTUNE_DYN_FAULT", "drop-header:2", 1);
    if (ct_dyn_init(MPI_COMM_WORLD) != MPI_SUCCESS)
        fail("ct_dyn_init for the failure case%.0d%.0d%.0d", 0, 0, 0);
    enum { N = 10, K = 4 };
    int buf[K][N];
    MPI_Request never = MPI_REQUEST_NULL;
    if (rank == 0) {
        MPI_Request q[K];
        ct_dyn_data *d[K];
        for (int m = 0; m < K; m++) {
            for (int i = 0; i < N; i++)
                buf[m][i] = value(0, 100 + m, i);
            ct_dyn_data_create(buf[m], N, MPI_INT, &d[m]);
            ct_dyn_isend(d[m], 1, 100 + m, &q[m]);
            ct_dyn_ready(d[m]);
        }
        /* eager messages: they leave whatever rank 1 does with them */
        for (int m = 0; m < K; m++) {
            if (ct_wait(&q[m], MPI_STATUS_IGNORE) != MPI_SUCCESS)
                fail("failure case: rank 0's send %d failed%.0d%.0d", m, 0, 0);
            ct_dyn_data_free(d[m]);
        }
        ct_dyn_irecv(buf[0], N, MPI_INT, 1, 999, &never);
    } else if (rank == 1) {
        for (int m = 0; m < K; m++)
            for (int i = 0; i < N; i++)
                buf[m][i] = -1;
        MPI_Request r[K];
        MPI_Status st;
        if (ct_dyn_irecv(buf[0], N, MPI_INT, 0, 100, &r[0]) != MPI_SUCCESS ||
            ct_wait(&r[0], &st) != MPI_SUCCESS || buf[0][N - 1] != value(0, 100, N - 1))
            fail("failure case: the message before the lost header did not arrive%.0d%.0d%.0d",
                 0, 0, 0);
        for (int m = 1; m < 3; m++) {
            int prc = ct_dyn_irecv(buf[m], N, MPI_INT, 0, 100 + m, &r[m]);
            int wrc = prc == MPI_SUCCESS ? ct_wait(&r[m], &st) : prc;
            if (wrc == MPI_SUCCESS)
                fail("failure case: message %d after the lost header received (tag %d)%.0d", m,
                     st.MPI_TAG, 0);
            for (int i = 0; i < N; i++)
                if (buf[m][i] != -1) {
                    fail("failure case: buffer %d written (%d) after the lost header%.0d", m,
                         buf[m][i], 0);
                    break;
                }
        }
        if (ct_dyn_irecv(buf[3], N, MPI_INT, 0, 103, &r[3]) == MPI_SUCCESS)
            fail("failure case: a receive accepted after the failure%.0d%.0d%.0d", 0, 0, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = ct_dyn_finalize();
    if (rank == 1 && rc == MPI_SUCCESS)
        fail("failure case: ct_dyn_finalize hid the failure%.0d%.0d%.0d", 0, 0, 0);
    if (rank == 0) {
        MPI_Status st;
        int cancelled = 0;
        if (rc != MPI_ERR_PENDING)
            fail("failure case: finalize with a receive posted returned %d%.0d%.0d", rc, 0, 0);
        if (MPI_Wait(&never, &st) != MPI_SUCCESS)
            fail("failure case: the unmatched receive completed with an error%.0d%.0d%.0d", 0, 0,
                 0);
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled)
            fail("failure case: the unmatched receive is not cancelled%.0d%.0d%.0d", 0, 0, 0);
    } else if (rank > 1 && rc != MPI_SUCCESS) {
        fail("failure case: ct_dyn_finalize on an uninvolved rank: %d%.0d%.0d", rc, 0, 0);
    }
    unsetenv("COLLTUNE_DYN_INLINE");
    unsetenv("COLLTUNE_DYN_FAULT");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void bench(long bytes, int reps)
{
    char *b = malloc((size_t)bytes + 1);
    MPI_Request *q = malloc(sizeof *q * (size_t)nprocs);
    memset(b, 1, (size_t)bytes + 1);
    for (int mode = 0; mode < 3; mode++) {
        double total = 0;
        ct_dyn_set_grouping(mode == 0);
        for (int r = -2; r < reps; r++) { /* two warm-up rounds */
            MPI_Request rr = MPI_REQUEST_NULL;
            if (mode < 2 && rank != 0)
                ct_dyn_irecv(b, (int)bytes, MPI_BYTE, 0, r + 2, &rr);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (mode == 2) {
                MPI_Bcast(b, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
            } else if (rank == 0) {
                ct_dyn_data *d;
                ct_dyn_data_create(b, (int)bytes, MPI_BYTE, &d);
                for (int p = 1; p < nprocs; p++)
                    ct_dyn_isend(d, p, r + 2, &q[p - 1]);
                ct_dyn_ready(d);
                ct_waitall(nprocs - 1, q, MPI_STATUSES_IGNORE);
                ct_dyn_data_free(d);
            } else {
                ct_wait(&rr, MPI_STATUS_IGNORE);
            }
            double dt = MPI_Wtime() - t0, mx;
            MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (r >= 0)
                total += mx;
        }
        if (rank == 0)
            printf("bench %d ranks %ld bytes %-22s %9.1f us\n", nprocs, bytes,
                   mode == 0 ? "dyn broadcast" : mode == 1 ? "dyn plain (grouping off)"
                                                           : "MPI_Bcast", 1e6 * total / reps);
    }
    free(b);
    free(q);
}

int main(int argc, char **argv)
{
    int provided, no_thread = argc > 1 && !strcmp(argv[1], "--no-thread");
    if (no_thread)
        setenv("COLLTUNE_PROGRESS", "off", 1);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (ct_dyn_init(MPI_COMM_WORLD) != MPI_SUCCESS)
        fail("ct_dyn_init%.0d%.0d%.0d", 0, 0, 0);
    ct_progress_info info;
    ct_progress_query(&info);
    threaded = info.running;
    if (threaded == no_thread)
        fail("progress thread running=%d with --no-thread=%d%.0d", threaded, no_thread, 0);
    if (argc > 3 && !strcmp(argv[1], "--bench")) {
        for (int i = 2; i + 1 < argc; i += 2)
            bench(atol(argv[i]), atoi(argv[i + 1]));
        ct_dyn_finalize();
        MPI_Finalize();
        return 0;
    }
    shapes();
    grouping_off_and_late();
    in_flight();
    noncontiguous(300);
    noncontiguous(6000);
    if (threaded) {
        threads();
        background();
    }
    ct_dyn_stats s;
    ct_dyn_stats_get(&s);
    if (s.received != expect_received)
        fail("received %d messages in all, expected %d%.0d", (int)s.received, (int)expect_received,
             0);
    if (ct_dyn_finalize() != MPI_SUCCESS)
        fail("ct_dyn_finalize: something left over%.0d%.0d%.0d", 0, 0, 0);
    /* Again, on a split communicator: init after finalize, ranks of the new
     * communicator, counters from zero. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nprocs - rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    if (ct_dyn_init(half) != MPI_SUCCESS)
        fail("ct_dyn_init after finalize%.0d%.0d%.0d", 0, 0, 0);
    if (ct_dyn_init(half) == MPI_SUCCESS)
        fail("ct_dyn_init twice accepted%.0d%.0d%.0d", 0, 0, 0);
    {
        int v = hr == 0 ? 4242 : -1;
        MPI_Request q[64], r;
        ct_dyn_stats_get(&s);
        if (s.messages_sent || s.received)
            fail("counters not reset: %d sent %d received%.0d", (int)s.messages_sent,
                 (int)s.received, 0);
        MPI_Barrier(half); /* everyone read its counters before anything is sent */
        if (hr == 0) {
            ct_dyn_data *d;
            ct_dyn_data_create(&v, 1, MPI_INT, &d);
            for (int p = 1; p < hn; p++)
                ct_dyn_isend(d, p, 5, &q[p - 1]);
            ct_dyn_ready(d);
            ct_waitall(hn - 1, q, MPI_STATUSES_IGNORE);
            ct_dyn_data_free(d);
        } else {
            ct_dyn_irecv(&v, 1, MPI_INT, 0, 5, &r);
            ct_wait(&r, MPI_STATUS_IGNORE);
            if (v != 4242)
                fail("split communicator: got %d%.0d%.0d", v, 0, 0);
        }
        ct_dyn_stats_get(&s);
        if (hr == 0 && s.messages_sent != ceil_log2(hn))
            fail("split communicator: origin sent %d for %d destinations%.0d",
                 (int)s.messages_sent, hn - 1, 0);
    }
    if (ct_dyn_finalize() != MPI_SUCCESS)
        fail("second ct_dyn_finalize%.0d%.0d%.0d", 0, 0, 0);
    MPI_Comm_free(&half);
    failures_case();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_dyn_mpi: %d ranks%s, %d cases, %d failures\n", nprocs,
               threaded ? "" : " (no thread)", ncases, all);
#ifdef UNDER_TSAN
    fflush(stdout);
    fflush(stderr);
    MPI_Barrier(MPI_COMM_WORLD);
    _exit(all ? 1 : 0);
#endif
    MPI_Finalize();
    return all ? 1 : 0;
}
