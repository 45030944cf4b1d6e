/*
 * testbed_check: what MPI sees of the hosts it runs on (tests/python/test_testbed.py).
 * Rank 0 prints one JSON line:
 *   {"ranks":N,"nodes":K,"per_rank":[{"rank":r,"host":"...","shared_size":s,
 *    "shared_leader":l},...],"consistent":true|false}
 * where `host` is MPI_Get_processor_name, `shared_size` the size of the rank's
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) communicator, `shared_leader` the world rank
 * of that communicator's rank 0, `nodes` the number of such communicators (leaders), and
 * `consistent` whether every shared communicator holds exactly the ranks of one host name.
 * A last data check sends each rank's host name around a ring, so a broken link between
 * hosts fails here rather than in a later test. Exit status 0, or 1 when the ring fails.
 */

#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);

    MPI_Comm shared;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    int srank, ssize;
    MPI_Comm_rank(shared, &srank);
    MPI_Comm_size(shared, &ssize);
    int leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, shared);

    /* every rank of a shared communicator must report the leader's host name */
    char leader_name[MPI_MAX_PROCESSOR_NAME];
    memcpy(leader_name, name, sizeof name);
    MPI_Bcast(leader_name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, shared);
    int same = strcmp(leader_name, name) == 0, all_same;
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    /* and no two shared communicators may carry the same host name */
    int is_leader = srank == 0, nodes;
    MPI_Allreduce(&is_leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    /* a ring of host names across every link */
    char from[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Sendrecv(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, (rank + 1) % size, 3, from,
                 MPI_MAX_PROCESSOR_NAME, MPI_CHAR, (rank + size - 1) % size, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int info[3] = {ssize, leader, 0};
    char *names = rank == 0 ? malloc((size_t)size * MPI_MAX_PROCESSOR_NAME) : NULL;
    char *froms = rank == 0 ? malloc((size_t)size * MPI_MAX_PROCESSOR_NAME) : NULL;
    int *infos = rank == 0 ? malloc((size_t)size * sizeof info) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, MPI_COMM_WORLD);
    MPI_Gather(from, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, froms, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, MPI_COMM_WORLD);
    MPI_Gather(info, 3, MPI_INT, infos, 3, MPI_INT, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (rank == 0) {
        int consistent = all_same;
        for (int a = 0; a < size; a++)
            for (int b = 0; b < size; b++)
                if (infos[3 * a + 1] != infos[3 * b + 1] &&
                    !strcmp(names + (size_t)a * MPI_MAX_PROCESSOR_NAME,
                            names + (size_t)b * MPI_MAX_PROCESSOR_NAME))
                    consistent = 0;
        printf("{\"ranks\":%d,\"nodes\":%d,\"consistent\":%s,\"per_rank\":[", size, nodes,
               consistent ? "true" : "false");
        for (int r = 0; r < size; r++) {
            const char *prev = names + (size_t)((r + size - 1) % size) * MPI_MAX_PROCESSOR_NAME;
            const char *got = froms + (size_t)r * MPI_MAX_PROCESSOR_NAME;
            if (strcmp(prev, got))
                rc = 1;
            printf("%s{\"rank\":%d,\"host\":\"%s\",\"shared_size\":%d,\"shared_leader\":%d}",
                   r ? "," : "", r, names + (size_t)r * MPI_MAX_PROCESSOR_NAME, infos[3 * r],
                   infos[3 * r + 1]);
        }
        printf("],\"ring_ok\":%s}\n", rc ? "false" : "true");
        fflush(stdout);
        free(names);
        free(froms);
        free(infos);
    }
    MPI_Comm_free(&shared);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
