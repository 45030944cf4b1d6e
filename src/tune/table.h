/*
 * The tuning table's lookup, as the drop-in and the API use it: for one
 * {collective, communicator size, message size}, the best {algorithm, segment
 * size}, or "no entry" (then the caller runs the native collective).
 * The tuner that writes tables, and the loader behind this lookup, come with
 * the autotuning work; until a table is loaded every lookup answers "no entry".
 */
#ifndef CT_TABLE_H
#define CT_TABLE_H

#include "colltune.h"

typedef struct ct_table_choice {
    const char *algorithm; /* a registry name, valid as long as the table is loaded */
    long long segsize;     /* bytes; 0 = the algorithm's default */
} ct_table_choice;

/* 0 and *choice filled when the loaded table has an entry for this call;
 * -1 when it has none or no table is loaded. */
int ct_table_lookup(ct_coll coll, int comm_size, long long bytes, ct_table_choice *choice);

#endif
