/* Internal view of the registry: the public info plus the generator. */
#ifndef CT_REGISTRY_H
#define CT_REGISTRY_H

#include "colltune.h"
#include "algorithms.h"

typedef struct ct_registry_entry {
    ct_algorithm_info info;
    ct_generator generate; /* NULL for native */
} ct_registry_entry;

const ct_registry_entry *ct_registry_find(ct_coll coll, const char *name);

#endif
