/* Vectorisable local reductions (see reduce_local.h). This file is compiled with -O3
 * (CMakeLists.txt): at the default -O2, GCC 12 vectorises only loops that need no
 * alias check, and these need one. */
#include "reduce_local.h"

#include <limits.h>
#include <stdint.h>

/* x86-64: clones for AVX-512 and AVX2 machines beside the baseline (SSE2), picked once
 * by the loader; 2-8x fewer instructions a vector on a cache-resident slice (AVX-512 made
 * 128 KiB of doubles 8.5 -> 6.6 us here, Open MPI's own kernel's time). Not in the
 * sanitizer builds: the clones' resolver runs while the library is relocated, before the
 * sanitizer's runtime is up, and its instrumented entry crashed every ThreadSanitizer
 * program before main. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define CT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef CT_CLONES
#define CT_CLONES
#endif

/* One kernel: inout[i] = EXPR of a[i] (in) and b[i] (inout), element by element. */
#define KERNEL(opname, name, T, EXPR)                                               \
    CT_CLONES static void opname##_##name(const void *in, void *inout, size_t n)   \
    {                                                                               \
        const T *a = in;                                                            \
        T *b = inout;                                                               \
        for (size_t i = 0; i < n; i++)                                              \
            b[i] = (T)(EXPR);                                                       \
    }

#define MINMAX(name, T)                                                             \
    KERNEL(max, name, T, a[i] > b[i] ? a[i] : b[i])                                 \
    KERNEL(min, name, T, a[i] < b[i] ? a[i] : b[i])

/* Integer sums and products wrap: computed in an unsigned type W at least as wide as
 * int (8- and 16-bit operands would otherwise be promoted to int, whose overflow is
 * undefined), then cut to T: the two's-complement result every MPI gives. */
#define INTEGER(name, T, W)                                                         \
    KERNEL(sum, name, T, (W)a[i] + (W)b[i])                                         \
    KERNEL(prod, name, T, (W)a[i] * (W)b[i])                                        \
    MINMAX(name, T)                                                                 \
    KERNEL(band, name, T, a[i] & b[i])                                              \
    KERNEL(bor, name, T, a[i] | b[i])                                               \
    KERNEL(bxor, name, T, a[i] ^ b[i])                                              \
    KERNEL(land, name, T, (a[i] != 0) & (b[i] != 0))                                \
    KERNEL(lor, name, T, (a[i] != 0) | (b[i] != 0))                                 \
    KERNEL(lxor, name, T, (a[i] != 0) ^ (b[i] != 0))

/* Floating point: the sum and product in the type itself, in the same order. */
#define FLOAT(name, T)                                                              \
    KERNEL(sum, name, T, a[i] + b[i])                                               \
    KERNEL(prod, name, T, a[i] * b[i])                                              \
    MINMAX(name, T)

INTEGER(i8, int8_t, unsigned)
INTEGER(u8, uint8_t, unsigned)
INTEGER(i16, int16_t, unsigned)
INTEGER(u16, uint16_t, unsigned)
INTEGER(i32, int32_t, uint32_t)
INTEGER(u32, uint32_t, uint32_t)
INTEGER(i64, int64_t, uint64_t)
INTEGER(u64, uint64_t, uint64_t)
FLOAT(f32, float)
FLOAT(f64, double)

enum kind { K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_F32, K_F64, NKINDS };
enum opk { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_LXOR, NOPS };

#define ROW_INT(name)                                                               \
    {sum_##name, prod_##name, max_##name, min_##name, band_##name, bor_##name,      \
     bxor_##name, land_##name, lor_##name, lxor_##name}
#define ROW_FLOAT(name) {sum_##name, prod_##name, max_##name, min_##name}

/* MPI allows the bitwise and logical operations on C integers only: the float
 * rows leave them NULL (the library then gives its own error). */
static const ct_reduce_fn kernels[NKINDS][NOPS] = {
    ROW_INT(i8),  ROW_INT(u8),  ROW_INT(i16), ROW_INT(u16), ROW_INT(i32),
    ROW_INT(u32), ROW_INT(i64), ROW_INT(u64), ROW_FLOAT(f32), ROW_FLOAT(f64),
};

/* The C integer kind of a type of `bytes` bytes and this signedness. */
static int int_kind(size_t bytes, int is_signed)
{
    switch (bytes) {
    case 1: return is_signed ? K_I8 : K_U8;
    case 2: return is_signed ? K_I16 : K_U16;
    case 4: return is_signed ? K_I32 : K_U32;
    case 8: return is_signed ? K_I64 : K_U64;
    default: return -1;
    }
}

static int kind_of(MPI_Datatype t)
{
    if (t == MPI_FLOAT)
        return sizeof(float) == 4 ? K_F32 : -1;
    if (t == MPI_DOUBLE)
        return sizeof(double) == 8 ? K_F64 : -1;
    if (t == MPI_INT)
        return int_kind(sizeof(int), 1);
    if (t == MPI_UNSIGNED)
        return int_kind(sizeof(unsigned), 0);
    if (t == MPI_LONG)
        return int_kind(sizeof(long), 1);
    if (t == MPI_UNSIGNED_LONG)
        return int_kind(sizeof(unsigned long), 0);
    if (t == MPI_LONG_LONG_INT || t == MPI_LONG_LONG)
        return int_kind(sizeof(long long), 1);
    if (t == MPI_UNSIGNED_LONG_LONG)
        return int_kind(sizeof(unsigned long long), 0);
    if (t == MPI_SHORT)
        return int_kind(sizeof(short), 1);
    if (t == MPI_UNSIGNED_SHORT)
        return int_kind(sizeof(unsigned short), 0);
    if (t == MPI_SIGNED_CHAR || t == MPI_INT8_T)
        return K_I8;
    if (t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T)
        return K_U8;
    if (t == MPI_INT16_T)
        return K_I16;
    if (t == MPI_UINT16_T)
        return K_U16;
    if (t == MPI_INT32_T)
        return K_I32;
    if (t == MPI_UINT32_T)
        return K_U32;
    if (t == MPI_INT64_T)
        return K_I64;
    if (t == MPI_UINT64_T)
        return K_U64;
    return -1;
}

static int op_of(MPI_Op op)
{
    if (op == MPI_SUM)
        return O_SUM;
    if (op == MPI_PROD)
        return O_PROD;
    if (op == MPI_MAX)
        return O_MAX;
    if (op == MPI_MIN)
        return O_MIN;
    if (op == MPI_BAND)
        return O_BAND;
    if (op == MPI_BOR)
        return O_BOR;
    if (op == MPI_BXOR)
        return O_BXOR;
    if (op == MPI_LAND)
        return O_LAND;
    if (op == MPI_LOR)
        return O_LOR;
    if (op == MPI_LXOR)
        return O_LXOR;
    return -1;
}

ct_reduce_fn ct_reduce_kernel(MPI_Op op, MPI_Datatype type)
{
    if (op == MPI_OP_NULL || type == MPI_DATATYPE_NULL)
        return NULL;
    int k = kind_of(type), o = op_of(op);
    return k < 0 || o < 0 ? NULL : kernels[k][o];
}

int ct_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype type, MPI_Op op)
{
    ct_reduce_fn f = ct_reduce_kernel(op, type);
    if (f) {
        f(in, inout, count);
        return MPI_SUCCESS;
    }
    if (count > INT_MAX)
        return MPI_ERR_COUNT;
    return MPI_Reduce_local(in, inout, (int)count, type, op);
}
