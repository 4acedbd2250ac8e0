// What every dmlops kernel shares: byte and element types, index width, and the lookup of
// the piece-table row a tile belongs to (column 3 of each row holds its first tile).
#pragma once

typedef unsigned char u8;

// resident blocks a multiprocessor a kernel's registers must allow (its __launch_bounds__'
// second argument; a strategy sets it for kernels whose registers held occupancy down)
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

#ifdef ES
#if ES == 1
typedef unsigned char T;
#elif ES == 2
typedef unsigned short T;
#elif ES == 4
typedef unsigned int T;
#else
typedef unsigned long long T;
#endif
#endif

#ifdef IDX64
#if IDX64
typedef long long IDX;
#else
typedef int IDX;
#endif

// q = n / d for 0 <= n < 2^31 with a precomputed (magic, shift) pair (Granlund-Montgomery).
__device__ __forceinline__ IDX divide(IDX n, IDX d, unsigned magic, unsigned shift)
{
#if IDX64
    return n / d;
#else
    unsigned t = __umulhi((unsigned)n, magic);
    return (IDX)((t + (unsigned)n) >> shift);
#endif
}
#endif

// A kernel's piece table: in device memory, or (TABLE_WORDS, the launch's words rounded up
// to a few sizes) in the kernel's parameters, read from the constant bank — nothing to
// allocate or upload, so a call at other addresses adds them in as it launches
#ifdef TABLE_WORDS
struct Table { long long v[TABLE_WORDS]; };
#define TABLE_ARG const __grid_constant__ Table table_by_value
#define TABLE table_by_value.v
#else
#define TABLE_ARG const long long* __restrict__ table_in_memory
#define TABLE table_in_memory
#endif

// the row of the last piece whose first tile is at or before tile t (binary search)
__device__ __forceinline__ const long long* piece_of(
    const long long* __restrict__ table, int pieces, int row_length, long long t)
{
    int lo = 0, hi = pieces - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (table[(long long)mid * row_length + 3] <= t) lo = mid; else hi = mid - 1;
    }
    return table + (long long)lo * row_length;
}

#ifdef VW
// vectors of VW bytes (V elements; one element where VW is ES), read and written whole
#define V (VW / ES)
#if VW == ES
typedef T VT;
#elif VW == 16
typedef uint4 VT;
#elif VW == 8
typedef uint2 VT;
#elif VW == 4
typedef unsigned int VT;
#else
typedef unsigned short VT;
#endif

union Vec { VT v; T e[V]; };
#endif
