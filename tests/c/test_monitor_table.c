/*
 * The monitor's table of pending non-blocking receives (src/monitor/monitor.c)
 * when MPI reuses a request handle before the thread that completed it has
 * counted it: the interleaving two threads can produce, replayed here in one
 * thread with made-up handles so that it happens every run.
 *
 * Rank 0, at level peers, on two communicators that translate a source
 * differently (world, and world rotated by one: its rank 1 is world rank 0):
 *   1. a receive on world is posted with handle H; its waiter finds its slot;
 *   2. H completes and MPI gives H to a receive on the reversed communicator,
 *      posted and then waited for (its slot found) before the first waiter has
 *      counted: it must get its own slot, not the first one's;
 *   3. both complete, newest first, each with source 1: the world receive must
 *      be counted from world rank 1, the other from world rank 0, with their
 *      own byte counts; nothing left pending;
 *   4. the same handle posted twice again, then freed (MPI_Request_free's
 *      path): the newest entry goes, the older one still completes as its own.
 * A table that takes the first entry with the handle's key attributes step 3's
 * first completion to the world communicator (world rank 1, 8 bytes): wrong.
 * Needs 2 ranks or more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/monitor.h"

static int failures;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            failures++;                                                                    \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

static MPI_Request fake_handle(unsigned long bits)
{
    MPI_Request r;
    memset(&r, 0, sizeof r);
    memcpy(&r, &bits, sizeof bits < sizeof r ? sizeof bits : sizeof r);
    return r;
}

static MPI_Status status_from(int source, int bytes)
{
    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.MPI_SOURCE = source;
    st.MPI_TAG = 0;
    st.MPI_ERROR = MPI_SUCCESS;
    MPI_Status_set_elements(&st, MPI_BYTE, bytes);
    MPI_Status_set_cancelled(&st, 0);
    return st;
}

static void expect(int peer, unsigned long long msgs, unsigned long long bytes, const char *what)
{
    unsigned long long m, b;
    ct_monitor_received(0, peer, &m, &b);
    CHECK(m == msgs && b == bytes, "%s: from world rank %d: %llu messages %llu bytes, "
          "expected %llu and %llu", what, peer, m, b, msgs, bytes);
}

int main(int argc, char **argv)
{
    setenv("COLLTUNE_MONITOR", "peers", 1);
    setenv("COLLTUNE_MONITOR_OUT", "/dev/null", 1);
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    ct_monitor_init(); /* this program links libcolltune, not the drop-in */
    MPI_Comm rev; /* world rotated by one */
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % n, &rev);
    if (n < 2) {
        if (rank == 0)
            fprintf(stderr, "test_monitor_table: needs 2 ranks or more\n");
        failures++;
    } else if (rank == 0) {
        CHECK(ct_monitor_level == CT_MON_PEERS, "level %d, expected peers", ct_monitor_level);
        int far = 0; /* the rotated communicator's rank 1 */
        MPI_Request h = fake_handle(0x5a5a40ul);
        ct_monitor_post(MPI_COMM_WORLD, h);
        long first = ct_monitor_find(h);
        ct_monitor_post(rev, h); /* h was completed, and reused at once */
        long second = ct_monitor_find(h);
        CHECK(first >= 0 && second >= 0 && first != second,
              "slots %ld and %ld for two receives with one handle", first, second);
        MPI_Status a = status_from(1, 8), b = status_from(1, 16);
        CHECK(ct_monitor_complete_at(second, h, &a) == 1, "the newer receive not counted");
        CHECK(ct_monitor_complete_at(first, h, &b) == 1, "the older receive not counted");
        expect(far, 1, 8, "reused handle, newer receive");
        expect(1, 1, 16, "reused handle, older receive");
        CHECK(ct_monitor_pending == 0, "%d receives still pending", (int)ct_monitor_pending);
        CHECK(ct_monitor_complete_at(first, h, &b) == 0, "a slot counted twice");

        MPI_Request g = fake_handle(0x77a5c0ul);
        ct_monitor_post(MPI_COMM_WORLD, g);
        long older = ct_monitor_find(g);
        ct_monitor_post(rev, g);
        ct_monitor_forget(g); /* MPI_Request_free of the live (newer) one */
        CHECK(ct_monitor_find(g) == older, "MPI_Request_free took the older receive");
        MPI_Status c = status_from(1, 4);
        CHECK(ct_monitor_complete_at(older, g, &c) == 1, "the older receive not counted");
        expect(1, 2, 20, "freed newer receive, older completes");
        expect(far, 1, 8, "freed newer receive: nothing counted for it");
        CHECK(ct_monitor_pending == 0, "%d receives still pending", (int)ct_monitor_pending);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_monitor_table: %d ranks, %d failures\n", n, all);
    MPI_Comm_free(&rev);
    MPI_Finalize();
    return all ? 1 : 0;
}
