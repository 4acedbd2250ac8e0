/* The stream compaction (compact.h). */
#include "compact.h"

#include "pool.h"

#include <stdlib.h>
#include <string.h>

/* elements from which a compaction is cut for the pool (two passes: count, then write) */
#define COMPACT_THREADED (1 << 20)

/* Whether the element at p is nonzero (sign_free: its sign bit ignored). */
static inline int nonzero_at(const char *p, int element, int sign_free) {
    switch (element) {
    case 1: {
        uint8_t v;
        memcpy(&v, p, 1);
        return (sign_free ? (v & 0x7Fu) : v) != 0;
    }
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return (sign_free ? (v & 0x7FFFu) : v) != 0;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return (sign_free ? (v & 0x7FFFFFFFu) : v) != 0;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return (sign_free ? (v & UINT64_C(0x7FFFFFFFFFFFFFFF)) : v) != 0;
    }
    }
}

/* Row `row`: the last `columns` of the coordinate `at` (rank entries), zeros before. */
static inline void write_row(char *dst, int64_t row, int64_t row_stride, int64_t column_stride,
                             int columns, const int64_t *at, int rank) {
    char *to = dst + row * row_stride;
    for (int k = 0; k < columns; k++) {
        int d = rank - columns + k; /* the coordinate this column holds, < 0: a zero */
        uint32_t v = d >= 0 ? (uint32_t)at[d] : 0u;
        memcpy(to + k * column_stride, &v, 4);
    }
}

/* A compaction's box, rows written from the start of dst. */
typedef struct {
    const char *src;
    const int64_t *shape, *src_strides;
    int rank, element, sign_free, columns;
    char *dst;
    int64_t row_stride, column_stride;
    int64_t outer;                          /* rows of the box: its outer dimensions' product */
    int64_t pieces;                         /* ranges of rows cut for the pool */
    int64_t *counts;                        /* each piece's nonzero elements, then its first row */
} compact_job_t;

/* Rows [first, end) of the box (its outer dimensions in row-major order): their nonzero
 * elements counted, and where `write`, written from output row `found` on. Returns the
 * output row after the last. */
static int64_t scan_rows(const compact_job_t *job, int64_t first, int64_t end, int64_t found,
                         int write) {
    const int rank = job->rank, last = rank - 1, sign_free = job->sign_free;
    const int64_t *shape = job->shape, *strides = job->src_strides;
    const int64_t inner = shape[last], step = strides[last];
    int64_t at[MOST_COMPACT_RANK] = {0};
    int64_t rest = first;
    for (int d = last - 1; d >= 0; d--) { /* `first` as outer coordinates */
        at[d] = rest % shape[d];
        rest /= shape[d];
    }
/* the innermost run, typed: an element nonzero where its bits under `mask` are */
#define SCAN(TYPE, SIGN)                                                                   \
    do {                                                                                   \
        const TYPE mask = sign_free ? (TYPE)~(TYPE)(SIGN) : (TYPE)~(TYPE)0;                \
        for (int64_t i = 0; i < inner; i++) {                                              \
            TYPE v;                                                                        \
            memcpy(&v, row + i * step, sizeof v);                                          \
            if (v & mask) {                                                                \
                if (write) {                                                               \
                    at[last] = i;                                                          \
                    write_row(job->dst, found, job->row_stride, job->column_stride,        \
                              job->columns, at, rank);                                     \
                }                                                                          \
                found++;                                                                   \
            }                                                                              \
        }                                                                                  \
    } while (0)
    for (int64_t r = first; r < end; r++) {
        const char *row = job->src;
        for (int d = 0; d < last; d++) {
            row += at[d] * strides[d];
        }
        switch (job->element) {
        case 1: SCAN(uint8_t, 0x80u); break;
        case 2: SCAN(uint16_t, 0x8000u); break;
        case 4: SCAN(uint32_t, 0x80000000u); break;
        default: SCAN(uint64_t, UINT64_C(0x8000000000000000)); break;
        }
        for (int d = last - 1; d >= 0 && ++at[d] == shape[d]; d--) { /* the next row */
            at[d] = 0;
        }
    }
#undef SCAN
    return found;
}

static int64_t piece_start(const compact_job_t *job, int64_t k) {
    return job->outer * k / job->pieces;
}

static void count_piece(void *context, int64_t k) {
    compact_job_t *job = (compact_job_t *)context;
    job->counts[k] = scan_rows(job, piece_start(job, k), piece_start(job, k + 1), 0, 0);
}

static void write_piece(void *context, int64_t k) {
    const compact_job_t *job = (const compact_job_t *)context;
    scan_rows(job, piece_start(job, k), piece_start(job, k + 1), job->counts[k], 1);
}

int64_t compact_nonzero(const char *src, const int64_t *shape, const int64_t *src_strides,
                        int rank, int element, int sign_free, char *dst, int64_t row_stride,
                        int64_t column_stride, int columns, int threads) {
    for (int d = 0; d < rank; d++) {
        if (shape[d] <= 0) {
            return 0;
        }
    }
    if (rank == 0) { /* one element */
        int64_t none[MOST_COMPACT_RANK] = {0};
        if (nonzero_at(src, element, sign_free)) {
            write_row(dst, 0, row_stride, column_stride, columns, none, 0);
            return 1;
        }
        return 0;
    }
    compact_job_t job = {src, shape, src_strides, rank, element, sign_free, columns,
                         dst, row_stride, column_stride, 1, 1, NULL};
    for (int d = 0; d < rank - 1; d++) {
        job.outer *= shape[d];
    }
    int64_t elements = job.outer * shape[rank - 1];
    int64_t pieces = threads > 1 && elements >= COMPACT_THREADED ? (int64_t)threads * 8 : 1;
    pieces = pieces < job.outer ? pieces : job.outer;
    if (pieces > 1) {
        job.counts = (int64_t *)malloc((size_t)pieces * sizeof(int64_t));
    }
    if (job.counts == NULL) { /* one pass on this thread */
        return scan_rows(&job, 0, job.outer, 0, 1);
    }
    job.pieces = pieces;
    /* each piece counts its rows, then writes them from the rows the pieces before it fill */
    pool_run(count_piece, &job, pieces, threads < pieces ? threads : (int)pieces,
             elements * element);
    int64_t total = 0;
    for (int64_t k = 0; k < pieces; k++) {
        int64_t n = job.counts[k];
        job.counts[k] = total;
        total += n;
    }
    pool_run(write_piece, &job, pieces, threads < pieces ? threads : (int)pieces,
             elements * element);
    free(job.counts);
    return total;
}
