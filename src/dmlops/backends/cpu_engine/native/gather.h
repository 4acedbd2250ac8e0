/* Gathers (the indexed copy whose index moves the source) on the pool: every index checked
 * first, then the rows moved in pieces the threads take. */
#ifndef DMLOPS_GATHER_H
#define DMLOPS_GATHER_H

#include <stdint.h>

#define MOST_GATHER_RANK 16 /* outer dimensions a gather may have */
#define MOST_GATHER_AXES 8  /* indexed axes (an index tuple's length) */

/* The meta table's head (compiled_indexed.indexed_meta builds it; numba_indexed reads the
 * same): then per outer dimension its size, source and destination strides (elements) and
 * index stride (bytes), per indexed axis its size and source stride (elements), and last the
 * reversed dimension (-1: none). */
enum {
    G_RANK, G_AXES, G_ROW, G_SCATTER, G_INDEX_BYTES, G_SIGNED, G_NEGATIVE, G_MODE, G_TUPLE,
    G_SRC, G_DST, G_INDEX, G_ROW_SRC, G_ROW_DST, G_HEAD
};

/* Result of gather_run. */
enum { GATHER_DONE = 1, GATHER_OUT_OF_RANGE = 0, GATHER_BAD_TABLE = -1 };

/* Runs the gather `meta` (`meta_words` int64s) from src into dst, indices read from idx, on
 * up to `threads` threads, elements of `element` bytes. Every access is checked against the
 * buffers' lengths first (GATHER_BAD_TABLE: a table that reaches outside them, or one this
 * kernel does not run: a scatter); then, where `check_first`, every index
 * (GATHER_OUT_OF_RANGE: one is out of range where that is an error; nothing written); then
 * the rows move (GATHER_DONE), each index checked as it is read: without `check_first`
 * (a new output nobody sees yet), GATHER_OUT_OF_RANGE says that rows moved before a bad
 * index was found. No place outside the buffers is ever read or written. */
int gather_run(const int64_t *meta, int64_t meta_words, const char *src, int64_t src_len,
               char *dst, int64_t dst_len, const uint8_t *idx, int64_t idx_len, int element,
               int threads, int check_first);

#endif
