/* Cross-memory attach: the probe and the copy (cma.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "cma.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int ct_cma_pid(void)
{
    /* Atomic: threads setting up segments at once all write the same value, but a plain
     * int made that a data race (ThreadSanitizer, shm_forms_np3_threads in CI). */
    static atomic_int pid;
    int p = atomic_load_explicit(&pid, memory_order_relaxed);
    if (!p) {
        p = (int)getpid();
        atomic_store_explicit(&pid, p, memory_order_relaxed);
    }
    return p;
}

int ct_cma_read(int pid, const void *remote, void *local, size_t len)
{
    char *to = local;
    const char *from = remote;
    while (len > 0) {
        struct iovec l = {to, len}, r = {(void *)from, len};
        ssize_t got = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return MPI_ERR_OTHER;
        to += got;
        from += got;
        len -= (size_t)got;
    }
    return MPI_SUCCESS;
}

static int log_says_why(void)
{
    const char *v = getenv("COLLTUNE_LOG");
    return v && (!strcmp(v, "warn") || !strcmp(v, "debug"));
}

int ct_cma_probe(MPI_Comm group)
{
    int size, rank;
    PMPI_Comm_size(group, &size);
    PMPI_Comm_rank(group, &rank);
    const char *v = getenv("COLLTUNE_CMA");
    int off = v && !strcmp(v, "off");
    /* Every rank offers a word whose value only it knows (its pid and rank mixed),
     * and reads its right neighbour's. On this rank's stack: it stays valid until the
     * Allreduce below, which no rank enters before its read, and threads probing their
     * own communicators at once each have their own. */
    volatile unsigned long long word;
    word = 0x636d610000000000ULL ^ ((unsigned long long)ct_cma_pid() << 16) ^ (unsigned)rank;
    unsigned long long mine[3] = {(unsigned long long)ct_cma_pid(),
                                  (unsigned long long)(uintptr_t)&word, word};
    unsigned long long *all = malloc(sizeof mine * (size_t)size);
    int ok = 0, err = 0;
    if (all && PMPI_Allgather(mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3,
                              MPI_UNSIGNED_LONG_LONG, group) == MPI_SUCCESS) {
        int peer = (rank + 1) % size;
        unsigned long long got = 0;
        errno = 0;
        ok = !off && ct_cma_read((int)all[3 * peer], (const void *)(uintptr_t)all[3 * peer + 1],
                                 &got, sizeof got) == MPI_SUCCESS &&
             got == all[3 * peer + 2];
        err = errno;
    }
    free(all);
    int every = ok;
    if (PMPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, group) != MPI_SUCCESS)
        every = 0;
    if (!every && rank == 0 && log_says_why())
        fprintf(stderr, "colltune: one-copy algorithms take the copy-through path on this "
                        "node: %s\n",
                off ? "COLLTUNE_CMA=off"
                : ok ? "another rank could not read its neighbour's memory (process_vm_readv)"
                     : err ? strerror(err) : "process_vm_readv read a wrong value");
    return every;
}
