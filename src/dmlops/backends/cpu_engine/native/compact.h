/* A stream compaction on the CPU (dmlops.compaction: NONZERO_COORDINATES'): one pass over a
 * strided box, each nonzero element's coordinates written as a row of UINT32s. */
#ifndef DMLOPS_COMPACT_H
#define DMLOPS_COMPACT_H

#include <stdint.h>

#define MOST_COMPACT_RANK 8

/* The nonzero elements of the box `shape` (rank dimensions) at `src` (byte strides), in
 * row-major order: row k of `dst` (row_stride, column_stride in bytes) gets the k-th one's
 * last `columns` coordinates (zeros before them where columns > rank). `element` bytes an
 * element (1, 2, 4 or 8); `sign_free`: a float, zero where every bit but the sign is clear
 * (-0.0 is zero, a NaN is not). Returns the count. Rows past it are not written. A box of
 * a million elements or more, with `threads` > 1, is cut into ranges of rows on the pool:
 * each counted, then written from the rows the ranges before it fill. */
int64_t compact_nonzero(const char *src, const int64_t *shape, const int64_t *src_strides,
                        int rank, int element, int sign_free, char *dst, int64_t row_stride,
                        int64_t column_stride, int columns, int threads);

#endif
