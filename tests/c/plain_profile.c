/*
 * A plain MPI program (no colltune API) with a known mix of collectives, for the drop-in's
 * profile, timeline and MPI_T performance variables (tests/python/test_profile.py):
 *   30 MPI_Allreduce of 8 B, 5 MPI_Bcast of 1 MiB, 7 MPI_Iallreduce of 8 B (completed by
 *   MPI_Wait, MPI_Waitall and MPI_Test), 2 persistent MPI_Allgather_init of 16 B a rank
 *   started 3 times each (MPI_Startall / MPI_Waitall), 4 MPI_Scan of 4 B, and 3
 *   MPI_Barrier on a duplicate of MPI_COMM_WORLD.
 * MPI_T is started before MPI_Init (the drop-in's pvar functions work without MPI), and
 * after the collectives every pvar named colltune_* is read through MPI_T_pvar_* and
 * printed, one line each: "pvar RANK NAME VALUE".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "FAILED: %s returned %d\n", what, rc);
        exit(1);
    }
    return rc;
}

int main(int argc, char **argv)
{
    int provided, before = 0;
    check(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    check(MPI_T_pvar_get_num(&before), "MPI_T_pvar_get_num before MPI_Init");
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    double x = rank, y = 0;
    for (int i = 0; i < 30; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (y != size * (size - 1) / 2.0) {
            fprintf(stderr, "FAILED: allreduce %g\n", y);
            return 1;
        }
    }
    char *big = malloc(1 << 20);
    for (int i = 0; i < 5; i++) {
        memset(big, rank == 0 ? i + 1 : 0, 1 << 20);
        MPI_Bcast(big, 1 << 20, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (big[(1 << 20) - 1] != i + 1) {
            fprintf(stderr, "FAILED: bcast\n");
            return 1;
        }
    }
    MPI_Request r[4];
    double xs[4], ys[4];
    for (int i = 0; i < 4; i++)
        xs[i] = rank + i;
    MPI_Iallreduce(&xs[0], &ys[0], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int k = 0; k < 2; k++) { /* 3 at once, then 3 more: six through MPI_Waitall */
        for (int i = 0; i < 3; i++)
            MPI_Iallreduce(&xs[i], &ys[i], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[i]);
        if (k == 0) {
            MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        } else { /* by MPI_Test, one after another */
            for (int i = 0; i < 3; i++) {
                int flag = 0;
                while (!flag)
                    MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
            }
        }
        for (int i = 0; i < 3; i++)
            if (ys[i] != size * (size - 1) / 2.0 + size * i) {
                fprintf(stderr, "FAILED: iallreduce %d: %g\n", i, ys[i]);
                return 1;
            }
    }
    int mine[2][4], all[2][64 * 4];
    MPI_Request p[2];
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 4; i++)
            mine[j][i] = rank * 10 + i + j;
        MPI_Allgather_init(mine[j], 4, MPI_INT, all[j], 4, MPI_INT, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &p[j]);
    }
    for (int s = 0; s < 3; s++) {
        MPI_Startall(2, p);
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
        for (int j = 0; j < 2; j++)
            for (int q = 0; q < size; q++)
                if (all[j][q * 4 + 3] != q * 10 + 3 + j) {
                    fprintf(stderr, "FAILED: allgather\n");
                    return 1;
                }
    }
    for (int j = 0; j < 2; j++)
        MPI_Request_free(&p[j]);
    int one = 1, upto = 0;
    for (int i = 0; i < 4; i++)
        MPI_Scan(&one, &upto, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (upto != rank + 1) {
        fprintf(stderr, "FAILED: scan\n");
        return 1;
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 3; i++)
        MPI_Barrier(dup);

    /* colltune's pvars, after the library's */
    int num = 0, found = 0;
    check(MPI_T_pvar_get_num(&num), "MPI_T_pvar_get_num");
    MPI_T_pvar_session session;
    check(MPI_T_pvar_session_create(&session), "MPI_T_pvar_session_create");
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind,
            readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype,
                                desc, &desc_len, &bind, &readonly, &continuous,
                                &atomic) != MPI_SUCCESS || strncmp(name, "colltune_", 9))
            continue;
        int index = -1;
        check(MPI_T_pvar_get_index(name, var_class, &index), "MPI_T_pvar_get_index");
        if (index != i || bind != MPI_T_BIND_NO_OBJECT || !readonly || !continuous) {
            fprintf(stderr, "FAILED: pvar %s: index %d of %d, bind %d\n", name, index, i, bind);
            return 1;
        }
        MPI_T_pvar_handle h;
        int count = 0;
        check(MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count), "handle_alloc");
        char line[512];
        if (type == MPI_DOUBLE && var_class == MPI_T_PVAR_CLASS_TIMER) {
            double v = -1;
            check(MPI_T_pvar_read(session, h, &v), "MPI_T_pvar_read");
            snprintf(line, sizeof line, "pvar %d %s %.17g\n", rank, name, v);
        } else {
            unsigned long long v = 0;
            check(MPI_T_pvar_read(session, h, &v), "MPI_T_pvar_read");
            snprintf(line, sizeof line, "pvar %d %s %llu\n", rank, name, v);
        }
        if (MPI_T_pvar_reset(session, h) != MPI_T_ERR_PVAR_NO_WRITE) {
            fprintf(stderr, "FAILED: pvar %s could be reset\n", name);
            return 1;
        }
        fputs(line, stdout);
        check(MPI_T_pvar_handle_free(session, &h), "MPI_T_pvar_handle_free");
        found++;
    }
    check(MPI_T_pvar_session_free(&session), "MPI_T_pvar_session_free");
    printf("rank %d pvars %d of %d, %d before MPI_Init\n", rank, found, num, before);
    fflush(stdout);
    MPI_Comm_free(&dup);
    free(big);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}
