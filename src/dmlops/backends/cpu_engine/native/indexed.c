/* Indexed copies on the pool (indexed.h). */
#include "indexed.h"

#include "loose.h"
#include "pool.h"
#include "reverse.h"
#include "runs.h"

#include <stdatomic.h>
#include <string.h>

#define INDEXED_GRAIN (64 << 10)      /* bytes a piece writes, about */
#define INDEXED_THREADED (128 << 10)  /* bytes written from which a gather asks helpers */
#define CHECK_PIECE (16 << 10)       /* index tuples a piece of the check reads */
#define FAILED INT64_MIN             /* a shift: the index is out of range */
#define SKIPPED (INT64_MIN + 1)      /* a shift: the row is not written (a skipped index) */

typedef struct indexed indexed_t;

/* Moves coordinates [first, end) of a gather's walk (one form a kind of gather). */
typedef void (*walk_fn)(const indexed_t *g, int64_t first, int64_t end);

struct indexed {
    int rank, axes, nbytes, is_signed, negative, mode, reverse, element;
    int scatter; /* 1: the index moves the destination (else the source) */
    int wide;    /* wide_vectors(), read once a call: rows in 32-byte moves (form_of, move_row) */
    int64_t row, row_src, row_dst; /* row: elements; its steps in bytes */
    int64_t tuple_step;            /* bytes between an index tuple's entries */
    int64_t src_at, dst_at, idx_at;
    int64_t shape[MOST_INDEXED_RANK], s[MOST_INDEXED_RANK], d[MOST_INDEXED_RANK],
        x[MOST_INDEXED_RANK];       /* byte strides */
    int64_t size[MOST_INDEXED_AXES], stride[MOST_INDEXED_AXES];
    int64_t count, piece;          /* coordinates in all, and a piece's */
    int64_t check_shape[MOST_INDEXED_RANK]; /* the outer shape, 1 where the index stays */
    int64_t check_count;
    const char *src;
    char *dst;
    const uint8_t *idx;
    walk_fn form; /* (form_of's) */
    _Atomic int *bad; /* set where an index is out of range (and that is an error) */
};

/* Marks the gather's indices bad. */
static void found_bad(const indexed_t *g) {
    atomic_store_explicit(g->bad, 1, memory_order_relaxed);
}

/* The index of `nbytes` bytes (4 or 8, little-endian) at p; a 64-bit unsigned one past
 * int64's top reads negative (out of range for any axis). */
static inline int64_t read_index(const uint8_t *p, int nbytes, int is_signed) {
    if (nbytes == 8) {
        uint64_t u;
        memcpy(&u, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        u = __builtin_bswap64(u);
#endif
        return (int64_t)u;
    }
    uint32_t u;
    memcpy(&u, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    u = __builtin_bswap32(u);
#endif
    return is_signed ? (int64_t)(int32_t)u : (int64_t)u;
}

/* The source shift (bytes) along axis t of the index at p (position `p_along` along the
 * reversed dimension); FAILED where it is out of range and that is an error, SKIPPED where
 * a scatter skips its row. The rules of numba_indexed.place. */
static inline int64_t place(const indexed_t *g, const uint8_t *p, int64_t p_along, int t) {
    const int64_t size = g->size[t];
    int64_t v = read_index(p, g->nbytes, g->is_signed);
    int huge = !g->is_signed && v < 0;
    if (g->reverse >= 0) { /* a length L, clamped into [0, size] */
        int64_t length = huge || v > size ? size : (v > 0 ? v : 0);
        return (p_along < length ? length - 1 - p_along : p_along) * g->stride[t];
    }
    if (g->mode == 2) { /* clamped first (WebNN) */
        int64_t low = g->negative ? -size : 0;
        if (huge || v >= size) {
            v = size - 1;
            huge = 0;
        } else if (v < low) {
            v = low;
        }
    }
    if (g->negative && g->is_signed && v < 0) {
        v += size;
    }
    if (huge || v < 0 || v >= size) {
        if (g->mode != 1) {
            return FAILED;
        }
        if (g->scatter) {
            return SKIPPED;
        }
        v = 0; /* (a gather's skipped row reads the first) */
    }
    return v * g->stride[t];
}

/* Coordinate `k` of `shape` (row-major) into c, and its byte offsets along s, d, x. */
static void locate_coordinate(const indexed_t *g, const int64_t *shape, int64_t k, int64_t *c,
                              int64_t *s, int64_t *d, int64_t *x) {
    *s = g->src_at;
    *d = g->dst_at;
    *x = g->idx_at;
    for (int dim = g->rank - 1; dim >= 0; dim--) {
        c[dim] = k % shape[dim];
        k /= shape[dim];
        *s += c[dim] * g->s[dim];
        *d += c[dim] * g->d[dim];
        *x += c[dim] * g->x[dim];
    }
}

/* After a run that ended the last dimension: c carried outwards (offsets with it). */
static inline void carry(const indexed_t *g, const int64_t *shape, int64_t *c, int64_t *s,
                         int64_t *d, int64_t *x) {
    for (int dim = g->rank - 1; dim >= 0 && c[dim] == shape[dim]; dim--) {
        *s -= shape[dim] * g->s[dim];
        *d -= shape[dim] * g->d[dim];
        *x -= shape[dim] * g->x[dim];
        c[dim] = 0;
        if (dim > 0) {
            c[dim - 1]++;
            *s += g->s[dim - 1];
            *d += g->d[dim - 1];
            *x += g->x[dim - 1];
        }
    }
}

/* Whether every index tuple of coordinates [first, end) of the check's shape is in range. */
static int check_range(const indexed_t *g, int64_t first, int64_t end) {
    int64_t c[MOST_INDEXED_RANK], s, d, x;
    const int last = g->rank - 1;
    locate_coordinate(g, g->check_shape, first, c, &s, &d, &x);
    const int64_t inner = g->check_shape[last], step = g->x[last];
    for (int64_t m = first; m < end;) {
        int64_t n = inner - c[last] < end - m ? inner - c[last] : end - m;
        for (int t = 0; t < g->axes; t++) {
            const uint8_t *p = g->idx + x + t * g->tuple_step;
            const int64_t size = g->size[t];
            const int wrap = g->negative && g->is_signed;
            if (g->nbytes == 4 && g->is_signed) { /* (the commonest: a loop of its own) */
                for (int64_t i = 0; i < n; i++) {
                    int64_t v = read_index(p + i * step, 4, 1);
                    v += wrap && v < 0 ? size : 0;
                    if (v < 0 || v >= size) {
                        return 0;
                    }
                }
                continue;
            }
            for (int64_t i = 0; i < n; i++) {
                int64_t v = read_index(p + i * step, g->nbytes, g->is_signed);
                int huge = !g->is_signed && v < 0;
                v += wrap && v < 0 ? size : 0;
                if (huge || v < 0 || v >= size) {
                    return 0;
                }
            }
        }
        m += n;
        c[last] += n;
        x += n * step;
        carry(g, g->check_shape, c, &s, &d, &x);
    }
    return 1;
}

static void check_piece(void *context, int64_t k) {
    indexed_t *g = (indexed_t *)context;
    if (atomic_load_explicit(g->bad, memory_order_relaxed)) {
        return;
    }
    int64_t first = k * CHECK_PIECE;
    int64_t end = first + CHECK_PIECE < g->check_count ? first + CHECK_PIECE : g->check_count;
    if (!check_range(g, first, end)) {
        found_bad(g);
    }
}

#if X86
/* n bytes (32 or more) forwards in 32-byte moves. glibc's memcpy copies a long run
 * backwards where source and destination sit at about the same place in their 4 KiB pages
 * (its guard against 4K aliasing; a profile of REVERSE_SUBSEQUENCES' rows showed its loop
 * walking down), and a walk down the lines loses the prefetchers: REVERSE_SUBSEQUENCES'
 * 1- and 2-KiB rows on a VM thread 1.19-1.34x numpy's time by memcpy, 0.86-1.00x so
 * (whether a new output falls so depends on where the allocator put it and the input).
 * A function of its own: its callers are not compiled for AVX2. */
__attribute__((target("avx2"))) static void forward_row(char *to, const char *from, int64_t n) {
    wide_run(to, from, n);
}
#endif

/* n bytes from `from` to `to`; the short row sizes of embeddings and heads as fixed-size
 * copies the compiler inlines (a call of memcpy costs more than their move). */
static inline void copy_bytes(const indexed_t *g, char *to, const char *from, int64_t n) {
    switch (n) {
    case 8: memcpy(to, from, 8); break;
    case 16: memcpy(to, from, 16); break;
    case 32: memcpy(to, from, 32); break;
    case 64: memcpy(to, from, 64); break;
    case 128: memcpy(to, from, 128); break;
    case 256: memcpy(to, from, 256); break;
    default:
#if X86
        if (g->wide && n > 32) {
            forward_row(to, from, n);
            break;
        }
#endif
        memcpy(to, from, (size_t)n);
        break;
    }
}

/* One row of g->row elements, typed. */
#define ROW_LOOP(TYPE)                                                                    \
    for (int64_t j = 0; j < g->row; j++) {                                                \
        TYPE v;                                                                           \
        memcpy(&v, from + j * g->row_src, sizeof(TYPE));                                  \
        memcpy(to + j * g->row_dst, &v, sizeof(TYPE));                                    \
    }

static inline void move_row(const indexed_t *g, const char *from, char *to) {
    const int64_t e = g->element;
    if (g->row_src == e && g->row_dst == e) {
        copy_bytes(g, to, from, g->row * e);
        return;
    }
    switch (e) {
    case 1: ROW_LOOP(uint8_t) break;
    case 2: ROW_LOOP(uint16_t) break;
    case 4: ROW_LOOP(uint32_t) break;
    default: ROW_LOOP(uint64_t) break;
    }
}

/* Coordinates [first, end): the walk every form shares. BODY moves the run of n coordinates
 * along the last dimension from c, its first at byte offsets s, d, x (from, to, p). */
#define WALK(BODY)                                                                        \
    do {                                                                                  \
        int64_t c[MOST_INDEXED_RANK], s, d, x;                                             \
        const int last = g->rank - 1;                                                     \
        const int64_t inner = g->shape[last], ss = g->s[last], ds = g->d[last],           \
                      xs = g->x[last];                                                    \
        locate_coordinate(g, g->shape, first, c, &s, &d, &x);                             \
        for (int64_t m = first; m < end;) {                                               \
            const int64_t n = inner - c[last] < end - m ? inner - c[last] : end - m;      \
            const char *from = g->src + s;                                                \
            char *to = g->dst + d;                                                        \
            const uint8_t *p = g->idx + x;                                                \
            BODY                                                                          \
            m += n;                                                                       \
            c[last] += n;                                                                 \
            s += n * ss;                                                                  \
            d += n * ds;                                                                  \
            x += n * xs;                                                                  \
            if (c[last] == inner) { /* (the next row of the dimension before: inline) */  \
                if (last > 0 && c[last - 1] + 1 < g->shape[last - 1]) {                   \
                    c[last] = 0;                                                          \
                    c[last - 1]++;                                                        \
                    s += g->s[last - 1] - inner * ss;                                     \
                    d += g->d[last - 1] - inner * ds;                                     \
                    x += g->x[last - 1] - inner * xs;                                     \
                } else {                                                                  \
                    carry(g, g->shape, c, &s, &d, &x);                                    \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    } while (0)

/* What the forms of one index a row (one axis, no clamping or reversal) read once. */
#define ONE_AXIS                                                                          \
    const int64_t size0 = g->size[0], stride0 = g->stride[0];                             \
    const int sg = g->is_signed, wrap = g->negative && g->is_signed

/* Row i's index (NBYTES bytes) into `v`, negative ones wrapped; out of range, the copy is
 * marked bad and the form returns. */
#define ONE_INDEX(v, NBYTES)                                                              \
    int64_t v = read_index(p + i * xs, (NBYTES), sg);                                     \
    v += wrap && v < 0 ? size0 : 0;                                                       \
    if ((uint64_t)v >= (uint64_t)size0) {                                                 \
        found_bad(g);                                                                     \
        return;                                                                           \
    }

/* Single elements by one index each (an inner axis, GATHER_ELEMENTS), every index checked
 * in range before (only negative ones to wrap): a function per element and index size. */
#define ELEMENTS_FN(NAME, TYPE, NBYTES)                                                   \
    static void NAME(const indexed_t *g, int64_t first, int64_t end) {                     \
        ONE_AXIS;                                                                         \
        WALK(for (int64_t i = 0; i < n; i++) {                                            \
            ONE_INDEX(v, NBYTES) /* (a 64-bit unsigned one past int64's top: negative) */ \
            TYPE value;                                                                   \
            memcpy(&value, from + i * ss + v * stride0, sizeof(TYPE));                    \
            memcpy(to + i * ds, &value, sizeof(TYPE));                                    \
        });                                                                               \
    }

ELEMENTS_FN(elements_1_4, uint8_t, 4)
ELEMENTS_FN(elements_2_4, uint16_t, 4)
ELEMENTS_FN(elements_4_4, uint32_t, 4)
ELEMENTS_FN(elements_8_4, uint64_t, 4)
ELEMENTS_FN(elements_1_8, uint8_t, 8)
ELEMENTS_FN(elements_2_8, uint16_t, 8)
ELEMENTS_FN(elements_4_8, uint32_t, 8)
ELEMENTS_FN(elements_8_8, uint64_t, 8)

/* Single elements where every row of the last dimension reads the same indices (GATHER
 * along an inner axis: its indices broadcast over the dimensions before): their shifts
 * found once a piece, then a row is a gather by a table of at most SHARED_MOST. */
#define SHARED_MOST 4096
#define SHARED_FN(NAME, TYPE, LOOSE)                                                      \
    static void NAME(const indexed_t *g, int64_t first, int64_t end) {                     \
        int64_t shifts[SHARED_MOST];                                                      \
        const int last_dim = g->rank - 1;                                                 \
        const int sg = g->is_signed, wrap = g->negative && g->is_signed;                  \
        for (int64_t j = 0; j < g->shape[last_dim]; j++) {                                \
            int64_t v = read_index(g->idx + g->idx_at + j * g->x[last_dim], g->nbytes, sg); \
            v += wrap && v < 0 ? g->size[0] : 0;                                          \
            if ((uint64_t)v >= (uint64_t)g->size[0]) {                                    \
                found_bad(g);                                                             \
                return;                                                                   \
            }                                                                             \
            shifts[j] = v * g->stride[0];                                                 \
        }                                                                                 \
        WALK(const int64_t *shift = shifts + c[last]; (void)p;                            \
             if (n == inner && last > 0 && ss == 0 && ds == (int64_t)sizeof(TYPE)) {      \
                 /* whole rows into contiguous ones: as many as this piece and the       \
                  * dimension before hold in one loop, the walk then past the last */     \
                 int64_t rows = g->shape[last - 1] - c[last - 1];                         \
                 rows = rows < (end - m) / inner ? rows : (end - m) / inner;              \
                 const int64_t sr = g->s[last - 1];                                       \
                 const int64_t dr = g->d[last - 1];                                       \
                 for (int64_t r = 0; r < rows; r++) {                                     \
                     LOOSE *restrict row = (LOOSE *)(void *)(to + r * dr);                \
                     const char *base = from + r * sr;                                    \
                     for (int64_t i = 0; i < inner; i++)                                  \
                         row[i] = *(const LOOSE *)(const void *)(base + shift[i]);        \
                 }                                                                        \
                 m += (rows - 1) * inner;                                                 \
                 c[last - 1] += rows - 1;                                                 \
                 s += (rows - 1) * sr;                                                    \
                 d += (rows - 1) * dr;                                                    \
                 x += (rows - 1) * g->x[last - 1];                                        \
             } else {                                                                     \
                 for (int64_t i = 0; i < n; i++) {                                        \
                     TYPE value;                                                          \
                     memcpy(&value, from + i * ss + shift[i], sizeof(TYPE));              \
                     memcpy(to + i * ds, &value, sizeof(TYPE));                           \
                 }                                                                        \
             });                                                                          \
    }

SHARED_FN(shared_1, uint8_t, loose8)
SHARED_FN(shared_2, uint16_t, loose16)
SHARED_FN(shared_4, uint32_t, loose32)
SHARED_FN(shared_8, uint64_t, loose64)

/* Whole rows by one index each (GATHER along an outer axis, GATHER_ND of rows), indices
 * checked before. */
static void rows_by_index(const indexed_t *g, int64_t first, int64_t end) {
    ONE_AXIS;
    WALK(for (int64_t i = 0; i < n; i++) {
        ONE_INDEX(v, g->nbytes)
        move_row(g, from + i * ss + v * stride0, to + i * ds);
    });
}

/* Whole contiguous rows of BYTES each, by MOVE(to, from, bytes): for the commonest
 * embedding and head rows a constant, so that each row is a few vector moves, no call. */
#define ROWS_FN(ATTRIBUTES, NAME, MOVE, BYTES)                                            \
    ATTRIBUTES static void NAME(const indexed_t *g, int64_t first, int64_t end) {          \
        ONE_AXIS;                                                                         \
        const int64_t row_bytes = (BYTES); /* (read once: the rows' stores may alias g) */ \
        WALK(for (int64_t i = 0; i < n; i++) {                                            \
            ONE_INDEX(v, g->nbytes)                                                       \
            MOVE(to + i * ds, from + i * ss + v * stride0, row_bytes);                    \
        });                                                                               \
    }
static inline void fixed_move(char *to_row, const char *from_row, int64_t bytes) {
    memcpy(to_row, from_row, (size_t)bytes);
}
ROWS_FN(, rows_16, fixed_move, 16)
ROWS_FN(, rows_32, fixed_move, 32)
ROWS_FN(, rows_64, fixed_move, 64)
ROWS_FN(, rows_128, fixed_move, 128)
ROWS_FN(, rows_256, fixed_move, 256)

#if X86
/* the same in 32-byte moves where the CPU has AVX2 (rows of 64 to 512 bytes: half the
 * loads and stores of 16-byte ones, and no call of memcpy for 512; 20,000 float32 rows of
 * 256 bytes on a VM thread 0.60 -> 0.29 ms, numpy.take's 0.27-0.34), and rows of any other
 * length from 32 bytes to WIDE_RUN_MOST */
#define WIDE_ROWS_FN(NAME, BYTES) ROWS_FN(__attribute__((target("avx2"))), NAME, wide_run, BYTES)
WIDE_ROWS_FN(wide_rows_64, 64)
WIDE_ROWS_FN(wide_rows_128, 128)
WIDE_ROWS_FN(wide_rows_256, 256)
WIDE_ROWS_FN(wide_rows_512, 512)
WIDE_ROWS_FN(wide_rows_any, g->row * g->element)
#endif

/* Rows written where one index each points (SCATTER_ND of rows, SCATTER_ELEMENTS), in
 * index order: of two rows to one place the later stays. */
static void scattered_rows(const indexed_t *g, int64_t first, int64_t end) {
    ONE_AXIS;
    WALK(for (int64_t i = 0; i < n; i++) {
        ONE_INDEX(v, g->nbytes)
        move_row(g, from + i * ss, to + i * ds + v * stride0);
    });
}

/* Single elements written where one index each points (SCATTER_ELEMENTS), in index order,
 * typed by element size. */
#define SCATTERED_FN(NAME, TYPE)                                                          \
    static void NAME(const indexed_t *g, int64_t first, int64_t end) {                     \
        ONE_AXIS;                                                                         \
        WALK(for (int64_t i = 0; i < n; i++) {                                            \
            ONE_INDEX(v, g->nbytes)                                                       \
            TYPE value;                                                                   \
            memcpy(&value, from + i * ss, sizeof(TYPE));                                  \
            memcpy(to + i * ds + v * stride0, &value, sizeof(TYPE));                      \
        });                                                                               \
    }

SCATTERED_FN(scattered_1, uint8_t)
SCATTERED_FN(scattered_2, uint16_t)
SCATTERED_FN(scattered_4, uint32_t)
SCATTERED_FN(scattered_8, uint64_t)

/* Any gather or scatter: index tuples, clamped or skipped indices, reversed subsequences. */
static void any_rows(const indexed_t *g, int64_t first, int64_t end) {
    WALK(for (int64_t i = 0; i < n; i++) {
        const int64_t along = g->reverse == last ? c[last] + i
                              : g->reverse >= 0  ? c[g->reverse]
                                                 : 0;
        int64_t shift = 0;
        for (int t = 0; t < g->axes && shift != FAILED && shift != SKIPPED; t++) {
            int64_t more = place(g, p + i * xs + t * g->tuple_step, along, t);
            shift = more == FAILED || more == SKIPPED ? more : shift + more;
        }
        if (shift == FAILED) {
            found_bad(g);
            return;
        }
        if (shift == SKIPPED) {
            continue;
        }
        if (g->scatter) {
            move_row(g, from + i * ss, to + i * ds + shift);
        } else {
            move_row(g, from + i * ss + shift, to + i * ds);
        }
    });
}

/* The form that moves this gather's rows. */
static walk_fn form_of(const indexed_t *g) {
    if (g->axes != 1 || g->reverse >= 0 || g->mode != 0) {
        return any_rows;
    }
    const int size = g->element == 1 ? 0 : g->element == 2 ? 1 : g->element == 4 ? 2 : 3;
    if (g->scatter && g->row == 1) {
        static const walk_fn scattered[4] = {scattered_1, scattered_2, scattered_4, scattered_8};
        return scattered[size];
    }
    if (g->scatter) {
        return scattered_rows;
    }
    if (g->row > 1) {
        const int64_t bytes = g->row * g->element;
        const int whole = g->row_src == g->element && g->row_dst == g->element;
#if X86
        if (whole && g->wide && bytes >= 32 && bytes <= WIDE_RUN_MOST) {
            const int power = (bytes & (bytes - 1)) == 0;
            if (power && bytes >= 64 && bytes <= 512) {
                static const walk_fn wide[4] = {wide_rows_64, wide_rows_128, wide_rows_256,
                                                wide_rows_512};
                return wide[__builtin_ctzll((unsigned long long)bytes) - 6];
            }
            if (!power) {
                return wide_rows_any;
            }
        }
#endif
        if (whole && (bytes & (bytes - 1)) == 0 && bytes >= 16 && bytes <= 256) {
            static const walk_fn fixed[5] = {rows_16, rows_32, rows_64, rows_128, rows_256};
            return fixed[__builtin_ctzll((unsigned long long)bytes) - 4];
        }
        return rows_by_index;
    }
    int shared = g->shape[g->rank - 1] <= SHARED_MOST;
    for (int dim = 0; dim < g->rank - 1; dim++) {
        shared = shared && g->x[dim] == 0;
    }
    if (shared) {
        static const walk_fn shared_rows[4] = {shared_1, shared_2, shared_4, shared_8};
        return shared_rows[size];
    }
    static const walk_fn elements[2][4] = {
        {elements_1_4, elements_2_4, elements_4_4, elements_8_4},
        {elements_1_8, elements_2_8, elements_4_8, elements_8_8},
    };
    return elements[g->nbytes == 8][size];
}

static void move_piece(void *context, int64_t k) {
    const indexed_t *g = (const indexed_t *)context;
    if (atomic_load_explicit(g->bad, memory_order_relaxed)) {
        return; /* (an index out of range found: the rest need not move) */
    }
    int64_t first = k * g->piece;
    int64_t end = first + g->piece < g->count ? first + g->piece : g->count;
    g->form(g, first, end);
}

/* The lowest and highest byte offsets of n positions `step` apart, added to *low, *high. */
static void extend(int64_t n, int64_t step, int64_t *low, int64_t *high) {
    int64_t extent = (n - 1) * step;
    if (extent < 0) {
        *low += extent;
    } else {
        *high += extent;
    }
}

/* Reads the meta table into g; 0 where it is not one this kernel runs. */
static int read_meta(indexed_t *g, const int64_t *meta, int64_t words, int element) {
    if (words < G_HEAD) {
        return 0;
    }
    const int64_t rank = meta[G_RANK], axes = meta[G_AXES];
    if (rank < 1 || rank > MOST_INDEXED_RANK || axes < 1 || axes > MOST_INDEXED_AXES ||
        words != G_HEAD + 4 * rank + 2 * axes + 1 || meta[G_ROW] < 1 ||
        (meta[G_INDEX_BYTES] != 4 && meta[G_INDEX_BYTES] != 8) || meta[G_MODE] < 0 ||
        meta[G_MODE] > 2 || (element != 1 && element != 2 && element != 4 && element != 8)) {
        return 0;
    }
    g->rank = (int)rank;
    g->axes = (int)axes;
    g->element = element;
    g->scatter = meta[G_SCATTER] != 0;
    g->row = meta[G_ROW];
    g->nbytes = (int)meta[G_INDEX_BYTES];
    g->is_signed = meta[G_SIGNED] != 0;
    g->negative = meta[G_NEGATIVE] != 0;
    g->mode = (int)meta[G_MODE];
    g->tuple_step = meta[G_TUPLE];
    g->src_at = meta[G_SRC] * element;
    g->dst_at = meta[G_DST] * element;
    g->idx_at = meta[G_INDEX];
    g->row_src = meta[G_ROW_SRC] * element;
    g->row_dst = meta[G_ROW_DST] * element;
    g->count = 1;
    g->check_count = 1;
    for (int dim = 0; dim < g->rank; dim++) {
        const int64_t *at = meta + G_HEAD + 4 * dim;
        if (at[0] < 0) {
            return 0;
        }
        g->shape[dim] = at[0];
        g->s[dim] = at[1] * element;
        g->d[dim] = at[2] * element;
        g->x[dim] = at[3];
        g->check_shape[dim] = at[3] != 0 ? at[0] : (at[0] > 0 ? 1 : 0);
        g->count *= at[0];
        g->check_count *= g->check_shape[dim];
    }
    const int64_t *along = meta + G_HEAD + 4 * rank;
    for (int t = 0; t < g->axes; t++) {
        if (along[2 * t] < 1) {
            return 0;
        }
        g->size[t] = along[2 * t];
        g->stride[t] = along[2 * t + 1] * element;
    }
    g->reverse = (int)meta[words - 1];
    return g->reverse >= -1 && g->reverse < g->rank;
}

/* Whether every place the copy may read, write or take an index from lies inside the
 * buffers (each index anywhere in its axis). */
static int inside(const indexed_t *g, int64_t src_len, int64_t dst_len, int64_t idx_len) {
    int64_t s_low = 0, s_high = 0, d_low = 0, d_high = 0, x_low = 0, x_high = 0;
    for (int dim = 0; dim < g->rank; dim++) {
        extend(g->shape[dim], g->s[dim], &s_low, &s_high);
        extend(g->shape[dim], g->d[dim], &d_low, &d_high);
        extend(g->shape[dim], g->x[dim], &x_low, &x_high);
    }
    for (int t = 0; t < g->axes; t++) { /* (on the side the index moves) */
        extend(g->size[t], g->stride[t], g->scatter ? &d_low : &s_low,
               g->scatter ? &d_high : &s_high);
    }
    extend(g->axes, g->tuple_step, &x_low, &x_high);
    extend(g->row, g->row_src, &s_low, &s_high);
    extend(g->row, g->row_dst, &d_low, &d_high);
    return g->src_at + s_low >= 0 && g->src_at + s_high + g->element <= src_len &&
           g->dst_at + d_low >= 0 && g->dst_at + d_high + g->element <= dst_len &&
           g->idx_at + x_low >= 0 && g->idx_at + x_high + g->nbytes <= idx_len;
}

/* For a scatter: the coordinates in one slice of its outermost dimension where the places
 * slices can write never meet (SCATTER_ELEMENTS along an inner axis: each row of the
 * output written from its own row of updates), so that threads may take whole slices;
 * 0 where they may meet. */
static int64_t disjoint_slices(const indexed_t *g) {
    if (!g->scatter || g->rank < 2 || g->shape[0] < 2) {
        return 0;
    }
    int64_t low = 0, high = 0;
    for (int dim = 1; dim < g->rank; dim++) {
        extend(g->shape[dim], g->d[dim], &low, &high);
    }
    for (int t = 0; t < g->axes; t++) {
        extend(g->size[t], g->stride[t], &low, &high);
    }
    extend(g->row, g->row_dst, &low, &high);
    const int64_t span = high - low + g->element, apart = g->d[0] < 0 ? -g->d[0] : g->d[0];
    return apart >= span ? g->count / g->shape[0] : 0;
}

int indexed_run(const int64_t *meta, int64_t meta_words, const char *src, int64_t src_len,
                char *dst, int64_t dst_len, const uint8_t *idx, int64_t idx_len, int element,
                int threads, int how) {
    indexed_t g;
    _Atomic int bad;
    memset(&g, 0, sizeof g);
    if (!read_meta(&g, meta, meta_words, element) || how < INDEXED_CHECK_THEN_MOVE ||
        how > INDEXED_CHECK) {
        return INDEXED_BAD_TABLE;
    }
    if (g.count == 0) {
        return INDEXED_DONE;
    }
    if (!inside(&g, src_len, dst_len, idx_len)) {
        return INDEXED_BAD_TABLE;
    }
    g.src = src;
    g.dst = dst;
    g.idx = idx;
    atomic_init(&bad, 0);
    g.bad = &bad;
    if (how != INDEXED_MOVE && g.mode == 0 && g.reverse < 0) { /* before anything is written */
        int64_t pieces = (g.check_count + CHECK_PIECE - 1) / CHECK_PIECE;
        if (threads > 1 && pieces > 1) {
            pool_run(check_piece, &g, pieces, threads < pieces ? threads : (int)pieces,
                     g.check_count * g.axes * g.nbytes);
        } else if (!check_range(&g, 0, g.check_count)) {
            return INDEXED_OUT_OF_RANGE;
        }
        if (atomic_load(&bad)) {
            return INDEXED_OUT_OF_RANGE;
        }
    }
    if (how == INDEXED_CHECK) {
        return INDEXED_DONE;
    }
    const int64_t bytes_each = g.row * g.element;
    const int64_t total = g.count * bytes_each;
#if X86
    g.wide = wide_vectors();
#endif
    g.form = form_of(&g);
    g.piece = INDEXED_GRAIN / bytes_each > 0 ? INDEXED_GRAIN / bytes_each : 1;
    const int64_t slice = disjoint_slices(&g);
    if (g.scatter && slice > 0) { /* whole slices a piece: each in index order */
        g.piece = (g.piece + slice - 1) / slice * slice;
    }
    int64_t pieces = (g.count + g.piece - 1) / g.piece;
    /* (a scatter's rows in index order, on this thread, unless its slices cannot meet) */
    if ((!g.scatter || slice > 0) && threads > 1 && pieces > 1 && total >= INDEXED_THREADED) {
        /* (to the pool's estimate of a job's time, a row read where its index points costs
         * a random access: counted as a line's quarter more than its bytes) */
        int64_t weight = g.count * (bytes_each + 16);
        pool_run(move_piece, &g, pieces, threads < pieces ? threads : (int)pieces, weight);
    } else {
        g.piece = g.count;
        move_piece(&g, 0);
    }
    return atomic_load(&bad) ? INDEXED_OUT_OF_RANGE : INDEXED_DONE;
}
