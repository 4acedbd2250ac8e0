/* The stream compaction (compact.h). */
#include "compact.h"

#include <string.h>

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

int64_t compact_nonzero(const char *src, const int64_t *shape, const int64_t *src_strides,
                        int rank, int element, int sign_free, char *dst, int64_t row_stride,
                        int64_t column_stride, int columns) {
    int64_t at[MOST_COMPACT_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        if (shape[d] <= 0) {
            return 0;
        }
    }
    int64_t found = 0;
    if (rank == 0) { /* one element */
        if (nonzero_at(src, element, sign_free)) {
            write_row(dst, 0, row_stride, column_stride, columns, at, 0);
            found = 1;
        }
        return found;
    }
    const int last = rank - 1;
    const int64_t inner = shape[last], step = src_strides[last];
/* the innermost run, typed: an element nonzero where its bits under `mask` are */
#define SCAN(TYPE, SIGN)                                                                   \
    do {                                                                                   \
        const TYPE mask = sign_free ? (TYPE)~(TYPE)(SIGN) : (TYPE)~(TYPE)0;                \
        for (int64_t i = 0; i < inner; i++) {                                              \
            TYPE v;                                                                        \
            memcpy(&v, row + i * step, sizeof v);                                          \
            if (v & mask) {                                                                \
                at[last] = i;                                                              \
                write_row(dst, found, row_stride, column_stride, columns, at, rank);       \
                found++;                                                                   \
            }                                                                              \
        }                                                                                  \
    } while (0)
    for (;;) {
        const char *row = src;
        for (int d = 0; d < last; d++) {
            row += at[d] * src_strides[d];
        }
        switch (element) {
        case 1: SCAN(uint8_t, 0x80u); break;
        case 2: SCAN(uint16_t, 0x8000u); break;
        case 4: SCAN(uint32_t, 0x80000000u); break;
        default: SCAN(uint64_t, UINT64_C(0x8000000000000000)); break;
        }
        int d = last - 1; /* the next outer coordinate (an odometer) */
        while (d >= 0 && ++at[d] == shape[d]) {
            at[d] = 0;
            d--;
        }
        if (d < 0) {
            return found;
        }
    }
}
