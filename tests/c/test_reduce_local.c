/*
 * colltune's local reduction kernels (src/sched/reduce_local.c) against the MPI
 * library's MPI_Reduce_local: for every predefined type and operation colltune has a
 * kernel for, every length from 0 to 67 and an unaligned start, the result must be
 * bitwise the library's, asked one element at a time. Integer data includes values
 * whose sums and products overflow (both must wrap alike); float data has no NaN (MPI
 * leaves min/max of NaN to the implementation). Also: no kernel where
 * MPI_Reduce_local must do it.
 * One element a call because Open MPI 5.0.11's vector path saturates 8- and 16-bit
 * integer sums from 8 or 16 elements on (int16 30000 + 10000 gives 32767 at count 8,
 * -25536 at count 7; open-mpi/ompi issue 8045, "wontfix"): its scalar path, MPICH's and
 * colltune's wrap.
 * One process; run under mpiexec -n 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/reduce_local.h"

enum { MAXN = 67, PAD = 8 };

static int failures;

static void fill(unsigned char *buf, size_t bytes, unsigned seed, int is_float, size_t esize)
{
    srand(seed);
    if (!is_float) {
        for (size_t i = 0; i < bytes; i++)
            buf[i] = (unsigned char)(rand() & 0xff); /* any bit pattern: overflow included */
        for (size_t i = 0; i + esize <= bytes; i += 5 * esize)
            memset(buf + i, 0, esize); /* some zeros for the logical operations */
        return;
    }
    for (size_t i = 0; i + esize <= bytes; i += esize) {
        double v = (rand() % 20001 - 10000) / 37.0;
        if (esize == sizeof(float)) {
            float f = (float)v;
            memcpy(buf + i, &f, sizeof f);
        } else {
            memcpy(buf + i, &v, sizeof v);
        }
    }
}

static void check(MPI_Datatype type, const char *tname, int is_float, MPI_Op op,
                  const char *oname)
{
    int esize;
    MPI_Type_size(type, &esize);
    ct_reduce_fn f = ct_reduce_kernel(op, type);
    if (!f) {
        printf("FAIL %s %s: no kernel\n", tname, oname);
        failures++;
        return;
    }
    size_t bytes = (size_t)(MAXN + PAD) * (size_t)esize;
    unsigned char *in = malloc(bytes), *a = malloc(bytes), *b = malloc(bytes);
    for (size_t n = 0; n <= MAXN; n++) {
        for (size_t start = 0; start < 2; start++) { /* element 1: not 32-byte aligned */
            fill(in, bytes, (unsigned)(n * 7 + start), is_float, (size_t)esize);
            fill(a, bytes, (unsigned)(n * 13 + start + 1), is_float, (size_t)esize);
            memcpy(b, a, bytes);
            size_t o = start * (size_t)esize;
            for (size_t i = 0; i < n; i++) /* one element a call: see the top */
                MPI_Reduce_local(in + o + i * (size_t)esize, a + o + i * (size_t)esize, 1,
                                 type, op);
            f(in + o, b + o, n);
            if (memcmp(a, b, bytes) != 0) {
                printf("FAIL %s %s: n %zu start %zu differs from MPI_Reduce_local\n", tname,
                       oname, n, start);
                failures++;
                goto out;
            }
        }
    }
out:
    free(in);
    free(a);
    free(b);
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)in, (void)inout, (void)len, (void)t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const struct { MPI_Datatype t; const char *name; int is_float; } types[] = {
        {MPI_FLOAT, "float", 1},         {MPI_DOUBLE, "double", 1},
        {MPI_INT, "int", 0},             {MPI_UNSIGNED, "unsigned", 0},
        {MPI_LONG, "long", 0},           {MPI_UNSIGNED_LONG, "unsigned long", 0},
        {MPI_LONG_LONG, "long long", 0}, {MPI_UNSIGNED_LONG_LONG, "unsigned long long", 0},
        {MPI_SHORT, "short", 0},         {MPI_UNSIGNED_SHORT, "unsigned short", 0},
        {MPI_SIGNED_CHAR, "signed char", 0}, {MPI_UNSIGNED_CHAR, "unsigned char", 0},
        {MPI_INT8_T, "int8_t", 0},       {MPI_UINT8_T, "uint8_t", 0},
        {MPI_INT16_T, "int16_t", 0},     {MPI_UINT16_T, "uint16_t", 0},
        {MPI_INT32_T, "int32_t", 0},     {MPI_UINT32_T, "uint32_t", 0},
        {MPI_INT64_T, "int64_t", 0},     {MPI_UINT64_T, "uint64_t", 0},
    };
    const struct { MPI_Op op; const char *name; int ints_only; } ops[] = {
        {MPI_SUM, "SUM", 0},   {MPI_PROD, "PROD", 0}, {MPI_MAX, "MAX", 0},
        {MPI_MIN, "MIN", 0},   {MPI_BAND, "BAND", 1}, {MPI_BOR, "BOR", 1},
        {MPI_BXOR, "BXOR", 1}, {MPI_LAND, "LAND", 1}, {MPI_LOR, "LOR", 1},
        {MPI_LXOR, "LXOR", 1},
    };
    int checked = 0;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            if (ops[o].ints_only && types[t].is_float) {
                if (ct_reduce_kernel(ops[o].op, types[t].t)) {
                    printf("FAIL %s %s: a kernel MPI does not allow\n", types[t].name,
                           ops[o].name);
                    failures++;
                }
                continue;
            }
            check(types[t].t, types[t].name, types[t].is_float, ops[o].op, ops[o].name);
            checked++;
        }
    /* Where colltune has no kernel, MPI_Reduce_local does the work. */
    MPI_Op mine;
    MPI_Op_create(user_op, 1, &mine);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    if (ct_reduce_kernel(mine, MPI_INT) || ct_reduce_kernel(MPI_MAXLOC, MPI_2INT) ||
        ct_reduce_kernel(MPI_SUM, pair) || ct_reduce_kernel(MPI_SUM, MPI_BYTE) ||
        ct_reduce_kernel(MPI_OP_NULL, MPI_INT)) {
        printf("FAIL: a kernel for a user operation, a pair type or a derived type\n");
        failures++;
    }
    int x[2] = {5, 1}, y[2] = {3, 0}; /* (value, index) pairs: the larger value wins */
    if (ct_reduce_local(x, y, 1, MPI_2INT, MPI_MAXLOC) != MPI_SUCCESS || y[0] != 5 ||
        y[1] != 1) {
        printf("FAIL: ct_reduce_local's fallback\n");
        failures++;
    }
    double d1[2] = {1.5, -2}, d2[2] = {2, 4};
    if (ct_reduce_local(d1, d2, 2, MPI_DOUBLE, MPI_SUM) != MPI_SUCCESS || d2[0] != 3.5 ||
        d2[1] != 2) {
        printf("FAIL: ct_reduce_local with a kernel\n");
        failures++;
    }
    MPI_Type_free(&pair);
    MPI_Op_free(&mine);
    printf("%s: %d type/operation pairs against MPI_Reduce_local\n",
           failures ? "failed" : "passed", checked);
    MPI_Finalize();
    return failures != 0;
}
