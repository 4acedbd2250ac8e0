/* Indexed copies (a strided copy whose source, a gather, or destination, a scatter, moves
 * by an index tensor's values) in C: every index checked first, then the rows moved; a
 * gather's in pieces the pool's threads take, a scatter's in index order on one thread. */
#ifndef DMLOPS_INDEXED_H
#define DMLOPS_INDEXED_H

#include <stdint.h>

#define MOST_INDEXED_RANK 16 /* outer dimensions an indexed copy may have */
#define MOST_INDEXED_AXES 8  /* indexed axes (an index tuple's length) */

/* The meta table's head (compiled_indexed.indexed_meta builds it; numba_indexed reads the
 * same): then per outer dimension its size, source and destination strides (elements) and
 * index stride (bytes), per indexed axis its size and source stride (elements), and last the
 * reversed dimension (-1: none). */
enum {
    G_RANK, G_AXES, G_ROW, G_SCATTER, G_INDEX_BYTES, G_SIGNED, G_NEGATIVE, G_MODE, G_TUPLE,
    G_SRC, G_DST, G_INDEX, G_ROW_SRC, G_ROW_DST, G_HEAD
};

/* Result of indexed_run. */
enum { INDEXED_DONE = 1, INDEXED_OUT_OF_RANGE = 0, INDEXED_BAD_TABLE = -1 };

/* What indexed_run does: check every index, then move the rows; move them, each index
 * checked as it is read (into a new output nobody sees yet, or after INDEXED_CHECK);
 * only check every index. */
enum { INDEXED_CHECK_THEN_MOVE = 0, INDEXED_MOVE = 1, INDEXED_CHECK = 2 };

/* Runs the indexed copy `meta` (`meta_words` int64s) from src into dst, indices read from
 * idx, elements of `element` bytes, as `how` says; a gather on up to `threads` threads.
 * Every access is checked against the buffers' lengths first (INDEXED_BAD_TABLE: a table
 * that reaches outside them). INDEXED_OUT_OF_RANGE: an index out of range where that is
 * an error (after INDEXED_CHECK_THEN_MOVE or INDEXED_CHECK nothing was written; after
 * INDEXED_MOVE, rows before it were). No place outside the buffers is read or written. */
int indexed_run(const int64_t *meta, int64_t meta_words, const char *src, int64_t src_len,
                char *dst, int64_t dst_len, const uint8_t *idx, int64_t idx_len, int element,
                int threads, int how);

#endif
