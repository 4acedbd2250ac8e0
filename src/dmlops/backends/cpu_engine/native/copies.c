/* Strided copies (copies.h): rows walked with incremental offsets, contiguous rows as
 * memcpy, strided elements of 1, 2, 4, 8 and 16 bytes as typed loads and stores (through
 * memcpy of a fixed size, which compilers make one move: no alignment is assumed). A job
 * larger than the caches keep (job_t.streaming) writes its contiguous runs' whole lines
 * with streaming stores: none is read before it is overwritten, none evicts the sources. */
#include "copies.h"

#include <stdint.h>
#include <string.h>

#include "loose.h"
#include "evens.h"
#include "reverse.h"
#include "runs.h"
#include "shuffles.h"
#include "tiles.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define STREAMS 1
#else
#define STREAMS 0 /* (streaming is memcpy there) */
#endif

#define LINE 64 /* a cache line's bytes */

#if STREAMS
/* one line of s to the line at d (aligned) with streaming stores */
static inline void stream_line(char *restrict d, const char *restrict s) {
    const __m128i *from = (const __m128i *)(const void *)s;
    __m128i *to = (__m128i *)(void *)d;
    __m128i a = _mm_loadu_si128(from), b = _mm_loadu_si128(from + 1);
    __m128i c = _mm_loadu_si128(from + 2), e = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, e);
}
#endif

/* n bytes of s to d: the whole cache lines of d with streaming stores (no line read for
 * ownership, none left in the caches), the partial lines at either end as plain stores */
static void stream_bytes(char *restrict d, const char *restrict s, int64_t n) {
#if STREAMS
    int64_t head = (int64_t)(-(uintptr_t)d & (LINE - 1));
    if (n - head < LINE) {
        memcpy(d, s, (size_t)n);
        return;
    }
    memcpy(d, s, (size_t)head);
    d += head;
    s += head;
    n -= head;
    int64_t body = n & ~(int64_t)(LINE - 1);
    for (int64_t i = 0; i < body; i += LINE) {
        stream_line(d + i, s + i);
    }
    memcpy(d + body, s + body, (size_t)(n - body));
#else
    memcpy(d, s, (size_t)n);
#endif
}

/* the streaming stores of this thread made visible before its piece counts as done */
static inline void stream_fence(void) {
#if STREAMS
    _mm_sfence();
#endif
}

int64_t copy_bytes(const copy_t *copy) {
    int64_t n = copy->count * copy->element;
    for (int64_t k = 0; k < copy->outer; k++) {
        n *= copy->shape[k];
    }
    return n;
}

int64_t cut_copies(job_t *job, int64_t grain) {
    int64_t pieces = 0;
    for (int64_t c = 0; c < job->count; c++) {
        const copy_t *copy = &job->copies[c];
        cut_t *cut = &job->cuts[c];
        int64_t rows = 1;
        for (int64_t k = 0; k < copy->outer; k++) {
            rows *= copy->shape[k];
        }
        int64_t row_bytes = copy->count * copy->element;
        cut->segments = 1;
        cut->segment = copy->count;
        cut->first_piece = pieces;
        if (copy->members == 0) {
            continue; /* walked by its group's first copy */
        }
        if (copy->members > 1) { /* whole rows of every member, a piece of rows at a time */
            int64_t group_bytes = 0;
            for (int64_t m = 0; m < copy->members; m++) {
                group_bytes += copy[m].count * copy[m].element;
            }
            cut->units_a_piece =
                group_bytes >= grain ? 1 : grain / (group_bytes > 0 ? group_bytes : 1);
            pieces += (rows + cut->units_a_piece - 1) / cut->units_a_piece;
            continue;
        }
        if (row_bytes > grain && copy->count > 1) {
            int64_t segments = (row_bytes + grain - 1) / grain;
            if (segments > copy->count) {
                segments = copy->count;
            }
            cut->segment = (copy->count + segments - 1) / segments;
            cut->segments = (copy->count + cut->segment - 1) / cut->segment;
        }
        int64_t unit_bytes = cut->segment * copy->element;
        cut->units_a_piece = unit_bytes >= grain ? 1 : grain / (unit_bytes > 0 ? unit_bytes : 1);
        if (copy->tiled && cut->segments == 1) { /* whole tiles a piece */
            int64_t side = copy->count;
            cut->units_a_piece = (cut->units_a_piece + side - 1) / side * side;
        }
        int64_t units = rows * cut->segments;
        if (rows > 0 && copy->count > 0) {
            pieces += (units + cut->units_a_piece - 1) / cut->units_a_piece;
        }
    }
    return pieces;
}

#define STRIDED(type)                                                   \
    for (int64_t j = 0; j < n; j++) {                                   \
        type value;                                                     \
        memcpy(&value, s + j * ss, sizeof(type));                       \
        memcpy(d + j * ds, &value, sizeof(type));                       \
    }

/* a contiguous destination read every `step`-th source element (step -1: reversed rows,
 * 2: a stride-2 slice, a Focus stem, a pixel unshuffle's columns) */
#define GATHER_STEPS(type)                                              \
    {                                                                   \
        type *restrict to = (type *)(void *)d;                          \
        const type *restrict from = (const type *)(const void *)s;      \
        switch (ss / (int64_t)sizeof(type)) {                           \
        case -1: /* (read up from the lowest element: reverse.h) */     \
            reverse_elements(d, s, n, (int64_t)sizeof(type));           \
            return;                                                     \
        case 2: /* (in vectors where they fit: evens.h) */              \
            for (int64_t j = every_second(d, s, n, (int64_t)sizeof(type)); \
                 j < n; j++)                                            \
                to[j] = from[2 * j];                                    \
            return;                                                     \
        case 3:                                                         \
            for (int64_t j = 0; j < n; j++) to[j] = from[3 * j];        \
            return;                                                     \
        case 4:                                                         \
            for (int64_t j = 0; j < n; j++) to[j] = from[4 * j];        \
            return;                                                     \
        case -2: /* (backwards: from the lowest address up) */          \
            for (int64_t j = n - 1; j >= 0; j--) to[j] = from[-2 * j];  \
            return;                                                     \
        case -3:                                                        \
            for (int64_t j = n - 1; j >= 0; j--) to[j] = from[-3 * j];  \
            return;                                                     \
        case -4:                                                        \
            for (int64_t j = n - 1; j >= 0; j--) to[j] = from[-4 * j];  \
            return;                                                     \
        default:                                                        \
            break;                                                      \
        }                                                               \
    }

/* rows of a contiguous destination each read every `step`-th source element, the step's
 * loop chosen once for all rows (a row of a few dozen elements costs less than the choice;
 * rows read backwards or filled from one element, only short ones: longer ones take the
 * vector loops of move_elements) */
#define SHORT_ROW 16
#define UP for (int64_t j = 0; j < n; j++)
#define DOWN for (int64_t j = n - 1; j >= 0; j--)
#define EACH_ROW_STEPPED(type, step, ORDER)                             \
    for (int64_t r = 0; r < rows; r++) {                                \
        type *restrict to = (type *)(void *)(d + r * dstep);            \
        const type *restrict from = (const type *)(const void *)(s + r * sstep); \
        ORDER to[j] = from[(step) * j];                                 \
    }                                                                   \
    return;
#define STEPPED_ROWS_OF(type, step) EACH_ROW_STEPPED(type, step, UP)

/* the same backwards, read from the row's lowest address up (as numpy's iterator reads a
 * negative-strided view; a walk down a row's lines loses the prefetchers: reverse.h) */
#define BACK_STEPPED_ROWS_OF(type, step) EACH_ROW_STEPPED(type, step, DOWN)

/* the same, the step hidden from the compiler: for 1-byte elements, and 4-byte ones read
 * backwards, its stride-3 vector gathers cost more than a scalar loop (one Xeon thread,
 * 256-element rows, read down then: uint8 0.72 -> 0.49 ms, float32 backwards 2.57 -> 0.80;
 * read up now, float32 -3 1.23 ms against numpy's 1.45; byte shuffles take 1-byte rows
 * where the CPU has AVX2: shuffles.h); float32 forwards the vector loop is the faster (a
 * VM thread: 0.77-0.82 ms against the scalar loop's 1.13-1.15, numpy 0.80-0.91) */
#define OPAQUE_STEPPED_ROWS_OF(type, step, ORDER)                       \
    {                                                                   \
        int64_t hidden = (step);                                        \
        __asm__("" : "+r"(hidden));                                     \
        EACH_ROW_STEPPED(type, hidden, ORDER)                           \
    }

#define SCALAR_THREES(type) (sizeof(type) == 1)
#define SCALAR_BACK_THREES(type) (sizeof(type) == 1 || sizeof(type) == 4)

#define STEPPED_ROWS(type)                                              \
    switch (copy->src_step / (int64_t)sizeof(type)) {                   \
    case 0: /* (short runs of one element: an edge pad's) */            \
        if (n <= SHORT_ROW) {                                           \
            STEPPED_ROWS_OF(type, 0)                                    \
        }                                                               \
        break;                                                          \
    case -1: /* (short rows read backwards: a reflection pad's edges) */ \
        if (n <= SHORT_ROW) {                                           \
            STEPPED_ROWS_OF(type, -1)                                   \
        }                                                               \
        break;                                                          \
    case 2: /* (rows a few vectors long; longer: evens.h) */            \
        if (sizeof(type) <= 2 || n * (int64_t)sizeof(type) < EVENS_LEAST_BYTES) { \
            STEPPED_ROWS_OF(type, 2)                                    \
        }                                                               \
        break;                                                          \
    case 3:                                                             \
        if (SCALAR_THREES(type)) {                                      \
            OPAQUE_STEPPED_ROWS_OF(type, 3, UP)                         \
        }                                                               \
        STEPPED_ROWS_OF(type, 3)                                        \
    case 4:                                                             \
        STEPPED_ROWS_OF(type, 4)                                        \
    case -2:                                                            \
        BACK_STEPPED_ROWS_OF(type, -2)                                  \
    case -3:                                                            \
        if (SCALAR_BACK_THREES(type)) {                                 \
            OPAQUE_STEPPED_ROWS_OF(type, -3, DOWN)                      \
        }                                                               \
        BACK_STEPPED_ROWS_OF(type, -3)                                  \
    case -4:                                                            \
        BACK_STEPPED_ROWS_OF(type, -4)                                  \
    default:                                                            \
        break;                                                          \
    }

/* n copies of the element at s into d's contiguous run (a constant's fill): memset where
 * the element's bytes are all one byte (zeros), else one store of it a position, in a loop
 * compilers vectorise */
#define FILL_WITH(type)                                     \
    {                                                       \
        type value;                                         \
        memcpy(&value, s, sizeof(type));                    \
        type *restrict to = (type *)(void *)d;              \
        for (int64_t j = 0; j < n; j++) to[j] = value;      \
        return;                                             \
    }

static void fill_elements(char *restrict d, const char *restrict s, int64_t n, int64_t size) {
    int one_byte = 1;
    for (int64_t k = 1; k < size; k++) {
        one_byte &= s[k] == s[0];
    }
    if (one_byte) {
        memset(d, s[0], (size_t)(n * size));
        return;
    }
    switch (size) {
    case 2:
        FILL_WITH(loose16)
    case 4:
        FILL_WITH(loose32)
    case 8:
        FILL_WITH(loose64)
    default:
        for (int64_t j = 0; j < n; j++) {
            memcpy(d + j * size, s, (size_t)size);
        }
    }
}

/* fill_elements, the run's whole lines written past the caches where the job streams (a
 * SLICE_GRAD's or a pad's zero rows: no line read before it is overwritten); elements of 1,
 * 2, 4, 8 or 16 bytes at an address of their size, else (and short runs) as cached stores */
static void fill_run(char *restrict d, const char *restrict s, int64_t n, int64_t size,
                     int streaming) {
#if STREAMS
    int64_t head = (int64_t)(-(uintptr_t)d & (LINE - 1));
    if (streaming && 16 % size == 0 && (uintptr_t)d % (uintptr_t)size == 0 &&
        n * size - head >= LINE) {
        fill_elements(d, s, head / size, size); /* (a line's start is an element's too) */
        char *at = d + head;
        int64_t body = (n * size - head) & ~(int64_t)(LINE - 1);
        char pattern[16];
        for (int64_t k = 0; k < 16; k += size) {
            memcpy(pattern + k, s, (size_t)size);
        }
        __m128i value = _mm_loadu_si128((const __m128i *)(const void *)pattern);
        for (int64_t i = 0; i < body; i += LINE) {
            __m128i *to = (__m128i *)(void *)(at + i);
            _mm_stream_si128(to, value);
            _mm_stream_si128(to + 1, value);
            _mm_stream_si128(to + 2, value);
            _mm_stream_si128(to + 3, value);
        }
        fill_elements(at + body, s, (n * size - head - body) / size, size);
        return;
    }
#else
    (void)streaming;
#endif
    fill_elements(d, s, n, size);
}

#if STREAMS
/* rows read backwards (each n elements of `size` bytes, the first read at s + r * sstep,
 * the others down from it) into one contiguous run at d, written past the caches: reversed
 * a few KiB at a time into a buffer the cache keeps, each part streamed forwards from there
 * whole lines at a time (reversed stores walk down each line, and a row's ends share lines
 * with its neighbours': neither streams where it falls) */
static void reverse_rows_streamed(char *restrict d, const char *restrict s, int64_t rows,
                                  int64_t n, int64_t size, int64_t sstep) {
    _Alignas(LINE) char staged[4096];
    const int64_t row_bytes = n * size, total = rows * row_bytes;
    int64_t done = 0, r = 0, j = 0; /* bytes streamed; the row and element staged next */
    while (done < total) {
        /* up to the buffer's size, ending on a line of d (or the run's end) */
        int64_t end = done + (int64_t)sizeof(staged);
        end = end >= total ? total : end - (int64_t)((uintptr_t)(d + end) & (LINE - 1));
        for (int64_t at = done; at < end;) {
            int64_t m = (end - at) / size;
            if (m > n - j) {
                m = n - j;
            }
            reverse_elements(staged + (at - done), s + r * sstep - j * size, m, size);
            at += m * size;
            j += m;
            if (j == n) {
                j = 0;
                r++;
            }
        }
        stream_bytes(d + done, staged, end - done);
        done = end;
    }
}
#endif

/* `bytes` (a multiple of 16, known at compile time) from s to d in 16-byte moves: a fixed
 * size's memcpy compiles to `rep movsq` from 512 bytes on, whose start-up and misaligned
 * stores cost more than the row (float16 rows of 512 bytes into a padded output: 1.4x
 * numpy's time on one Xeon thread) */
static inline void copy_in_sixteens(char *restrict d, const char *restrict s, int64_t bytes) {
#if X86
    for (int64_t i = 0; i < bytes; i += 16) {
        _mm_storeu_si128((__m128i *)(void *)(d + i),
                         _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
    }
#else
    memcpy(d, s, (size_t)bytes);
#endif
}

/* n elements of `size` bytes, every ss-th byte of s to every ds-th byte of d; streaming: a
 * contiguous run of a line or more is written past the caches */
static void move_elements(char *restrict d, const char *restrict s, int64_t n, int64_t size,
                          int64_t ds, int64_t ss, int streaming) {
    if (streaming && ds == size && ss == size && n * size >= LINE) {
        stream_bytes(d, s, n * size);
        return;
    }
#if STREAMS
    if (streaming && ds == size && ss == -size && n * size >= 2 * LINE &&
        (uintptr_t)d % (uintptr_t)size == 0) {
        reverse_rows_streamed(d, s, 1, n, size, 0);
        return;
    }
#endif
    if (ds == size && ss == size) {
        switch (n * size) { /* (sizes known here: the moves unrolled, no call; a split's or
                                a join's parts of 64-byte rows, a row of each in turn: a
                                64 KiB 4-way split on one VM thread 6.2 -> 5.4 us) */
        case 16:
            copy_in_sixteens(d, s, 16);
            return;
        case 32:
            copy_in_sixteens(d, s, 32);
            return;
        case 64:
            copy_in_sixteens(d, s, 64);
            return;
        case 128:
            copy_in_sixteens(d, s, 128);
            return;
        default:
            memcpy(d, s, (size_t)(n * size));
            return;
        }
    }
    if (ds == size && ss == 0) {
        fill_run(d, s, n, size, streaming);
        return;
    }
    if (ds == size && ss % size == 0) {
        const int64_t done = shuffled_steps(d, s, n, size, ss / size);
        d += done * size;
        s += done * ss;
        n -= done;
        switch (size) {
        case 1:
            GATHER_STEPS(loose8)
            break;
        case 2:
            GATHER_STEPS(loose16)
            break;
        case 4:
            GATHER_STEPS(loose32)
            break;
        case 8:
            GATHER_STEPS(loose64)
            break;
        default:
            break;
        }
    }
    switch (size) {
    case 1:
        STRIDED(uint8_t)
        return;
    case 2:
        STRIDED(uint16_t)
        return;
    case 4:
        STRIDED(uint32_t)
        return;
    case 8:
        STRIDED(uint64_t)
        return;
    case 16: {
        typedef struct {
            uint64_t a, b;
        } pair_t;
        STRIDED(pair_t)
        return;
    }
    default:
        for (int64_t j = 0; j < n; j++) {
            memcpy(d + j * ds, s + j * ss, (size_t)size);
        }
    }
}

/* k rows interleaved into one contiguous row of n * k elements: element j of member m's row
 * (at s[m] + j * ss[m]) to d[j * k + m]; two contiguous members (an upsampling's pair of
 * phases, a depth-to-space's columns) in one loop that compilers vectorise */
#define INTERLEAVE(type)                                                        \
    {                                                                           \
        type *restrict to = (type *)(void *)d;                                  \
        if (k == 2 && ss[0] == (int64_t)sizeof(type) && ss[1] == ss[0]) {       \
            const type *a = (const type *)(const void *)s[0];                   \
            const type *b = (const type *)(const void *)s[1];                   \
            for (int64_t j = 0; j < n; j++) {                                   \
                to[2 * j] = a[j];                                               \
                to[2 * j + 1] = b[j];                                           \
            }                                                                   \
            return;                                                             \
        }                                                                       \
        if (k == 2 && ss[0] == (int64_t)sizeof(type) && ss[1] == 0) {           \
            /* (a row and a constant between its elements: SLICE_GRAD's zeros) */ \
            const type *a = (const type *)(const void *)s[0];                   \
            const type b = *(const type *)(const void *)s[1];                   \
            for (int64_t j = 0; j < n; j++) {                                   \
                to[2 * j] = a[j];                                               \
                to[2 * j + 1] = b;                                              \
            }                                                                   \
            return;                                                             \
        }                                                                       \
        for (int64_t j = 0; j < n; j++) {                                       \
            for (int64_t m = 0; m < k; m++) {                                   \
                to[j * k + m] = *(const type *)(const void *)(s[m] + j * ss[m]); \
            }                                                                   \
        }                                                                       \
        return;                                                                 \
    }

static void interleave_rows(char *restrict d, const char *const *s, const int64_t *ss, int64_t k,
                            int64_t n, int64_t size) {
    switch (size) {
    case 1:
        INTERLEAVE(loose8)
    case 2:
        INTERLEAVE(loose16)
    case 4:
        INTERLEAVE(loose32)
    case 8:
        INTERLEAVE(loose64)
    default:
        for (int64_t j = 0; j < n; j++) {
            for (int64_t m = 0; m < k; m++) {
                memcpy(d + (j * k + m) * size, s[m] + j * ss[m], (size_t)size);
            }
        }
    }
}

#define WOVEN_BUFFER 4096 /* bytes of a woven row streamed from the cache at a time */

/* interleave_rows into one row; where the job streams and the row holds whole lines, woven
 * a few KiB at a time into a buffer the cache keeps, each part streamed from there (an
 * upsampling's or a SLICE_GRAD's long rows: no line read before it is overwritten) */
static void woven_row(char *restrict d, const char *const *s, const int64_t *ss, int64_t k,
                      int64_t n, int64_t size, int streaming) {
    int64_t chunk = WOVEN_BUFFER / (k * size); /* source positions a part weaves */
    if (!STREAMS || !streaming || chunk == 0 || n * k * size < 2 * LINE || k > MOST_MEMBERS) {
        interleave_rows(d, s, ss, k, n, size);
        return;
    }
    _Alignas(64) char buffer[WOVEN_BUFFER];
    const char *from[MOST_MEMBERS];
    for (int64_t j = 0; j < n; j += chunk) {
        int64_t count = n - j < chunk ? n - j : chunk;
        for (int64_t m = 0; m < k; m++) {
            from[m] = s[m] + j * ss[m];
        }
        interleave_rows(buffer, from, ss, k, count, size);
        stream_bytes(d + j * k * size, buffer, count * k * size);
    }
}

/* `rows` whole rows of a copy, dstep and sstep bytes apart: rows of a few common lengths
 * copied in moves of a size known at compile time (a head transpose's 256-byte rows, 16,000
 * a megabyte: a call per row was a third of the time), others row by row */

#define ROWS_OF(bytes)                                                  \
    for (int64_t r = 0; r < rows; r++) {                                \
        copy_in_sixteens(d + r * dstep, s + r * sstep, bytes);          \
    }                                                                   \
    return;

#if STREAMS
/* rows of whole lines, each at a line boundary, streamed */
#define STREAMED_ROWS_OF(bytes)                                         \
    for (int64_t r = 0; r < rows; r++) {                                \
        for (int64_t i = 0; i < (bytes); i += LINE) {                   \
            stream_line(d + r * dstep + i, s + r * sstep + i);          \
        }                                                               \
    }                                                                   \
    return;
#endif

#if X86
/* `rows` whole rows of `bytes` (32 to WIDE_RUN_MOST), dstep and sstep bytes apart, in
 * 32-byte moves */
__attribute__((target("avx2"))) static void wide_rows(char *restrict d, const char *restrict s,
                                                      int64_t rows, int64_t dstep,
                                                      int64_t sstep, int64_t bytes) {
    for (int64_t r = 0; r < rows; r++) {
        wide_run(d + r * dstep, s + r * sstep, bytes);
    }
}
#endif

static void move_rows(char *d, const char *s, int64_t rows, int64_t dstep, int64_t sstep,
                      const copy_t *copy, int streaming) {
    int64_t element = copy->element, n = copy->count;
    if (copy->tiled && rows == n && sstep == element && copy->dst_step == element &&
        move_tile(d, s, n, dstep, copy->src_step, element)) {
        return;
    }
#if STREAMS
    if (streaming && copy->dst_step == element && copy->src_step == element &&
        ((uintptr_t)d & (LINE - 1)) == 0 && (dstep & (LINE - 1)) == 0) {
        switch (n * element) {
        case 64:
            STREAMED_ROWS_OF(64)
        case 128:
            STREAMED_ROWS_OF(128)
        case 256:
            STREAMED_ROWS_OF(256)
        case 512:
            STREAMED_ROWS_OF(512)
        default:
            break;
        }
    }
    if (streaming && copy->dst_step == element && copy->src_step == -element &&
        dstep == n * element && rows * n * element >= 2 * LINE &&
        (uintptr_t)d % (uintptr_t)element == 0) { /* reversed rows into one run */
        reverse_rows_streamed(d, s, rows, n, element, sstep);
        return;
    }
#endif
    /* (cached stores: no streaming asked, or rows off line boundaries) */
    if (copy->dst_step == element && copy->src_step == element) {
        switch (n * element) {
        case 16:
            ROWS_OF(16)
        case 32:
            ROWS_OF(32)
        case 64:
            ROWS_OF(64)
        case 128:
            ROWS_OF(128)
        case 256:
            ROWS_OF(256)
        case 512:
            ROWS_OF(512)
        default:
            break;
        }
#if X86
        /* (a job that streams writes its rows' whole lines past the caches, below) */
        if (!streaming && n * element >= 32 && n * element <= WIDE_RUN_MOST &&
            wide_vectors()) {
            wide_rows(d, s, rows, dstep, sstep, n * element);
            return;
        }
#endif
    }
    if (!streaming && rows == 2 && sstep == element && copy->src_step == 2 * element &&
        copy->dst_step == element && (dstep >= n * element || -dstep >= n * element)) {
        /* two rows reading one source run's even and odd elements (a pixel unshuffle's, a
         * space-to-depth's column phases): the run read once, dealt to both (evens.h) */
        int64_t j = deal_two(d, d + dstep, s, n, element);
        if (j > 0) {
            for (; j < n; j++) {
                memcpy(d + j * element, s + 2 * j * element, (size_t)element);
                memcpy(d + dstep + j * element, s + (2 * j + 1) * element, (size_t)element);
            }
            return;
        }
    }
    if (copy->dst_step == element && copy->src_step % element == 0 &&
        shuffles_apply(element, copy->src_step / element, n)) {
        for (int64_t r = 0; r < rows; r++) { /* (each row's few last elements: its loop) */
            move_elements(d + r * dstep, s + r * sstep, n, element, element, copy->src_step,
                          streaming);
        }
        return;
    }
    if (copy->dst_step == element && copy->src_step % element == 0) {
        switch (element) {
        case 1:
            STEPPED_ROWS(loose8)
            break;
        case 2:
            STEPPED_ROWS(loose16)
            break;
        case 4:
            STEPPED_ROWS(loose32)
            break;
        case 8:
            STEPPED_ROWS(loose64)
            break;
        default:
            break;
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        move_elements(d + r * dstep, s + r * sstep, n, element, copy->dst_step, copy->src_step,
                      streaming);
    }
}

/* The copy holding piece `piece` (cuts are in piece order). */
static int64_t copy_of_piece(const job_t *job, int64_t piece) {
    int64_t low = 0, high = job->count - 1;
    while (low < high) {
        int64_t middle = (low + high + 1) / 2;
        if (job->cuts[middle].first_piece <= piece) {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    /* empty copies share their successor's first piece: take the last copy that starts here */
    return low;
}

/* Rows [first, last) of a group's members, a row of each in turn (they share the outer
 * shape; each has its own strides). */
static void move_group_rows(const job_t *job, const copy_t *lead, int64_t first, int64_t last) {
    int64_t index[MOST_OUTER];
    const char *s[MOST_MEMBERS];
    char *d[MOST_MEMBERS];
    int64_t members = lead->members;
    for (int64_t m = 0; m < members; m++) {
        s[m] = job->src_base[lead[m].src] + lead[m].src_offset;
        d[m] = job->dst_base[lead[m].dst] + lead[m].dst_offset;
    }
    int64_t rest = first;
    for (int64_t k = lead->outer - 1; k >= 0; k--) {
        index[k] = rest % lead->shape[k];
        rest /= lead->shape[k];
        for (int64_t m = 0; m < members; m++) {
            s[m] += index[k] * lead[m].src_strides[k];
            d[m] += index[k] * lead[m].dst_strides[k];
        }
    }
    int64_t steps[MOST_MEMBERS];
    for (int64_t m = 0; m < members; m++) {
        steps[m] = lead[m].src_step;
    }
    for (int64_t row = first; row < last; row++) {
        if (lead->interleaved) {
            woven_row(d[0], s, steps, members, lead->count, lead->element, job->streaming);
        } else {
            for (int64_t m = 0; m < members; m++) {
                move_elements(d[m], s[m], lead[m].count, lead[m].element, lead[m].dst_step,
                              lead[m].src_step, job->streaming);
            }
        }
        for (int64_t k = lead->outer - 1; k >= 0; k--) { /* the next row */
            int64_t wrapped = ++index[k] == lead->shape[k];
            for (int64_t m = 0; m < members; m++) {
                s[m] += wrapped ? -(lead->shape[k] - 1) * lead[m].src_strides[k]
                                : lead[m].src_strides[k];
                d[m] += wrapped ? -(lead->shape[k] - 1) * lead[m].dst_strides[k]
                                : lead[m].dst_strides[k];
            }
            if (!wrapped) {
                break;
            }
            index[k] = 0;
        }
    }
}

/* The next row of a copy's outer index, counting at dimension k and carrying outwards, its
 * source and destination offsets moved along. */
static inline void next_row(const copy_t *copy, int64_t *index, int64_t k, const char **s,
                            char **d) {
    for (; k >= 0; k--) {
        *s += copy->src_strides[k];
        *d += copy->dst_strides[k];
        if (++index[k] < copy->shape[k]) {
            return;
        }
        *s -= index[k] * copy->src_strides[k];
        *d -= index[k] * copy->dst_strides[k];
        index[k] = 0;
    }
}

/* One piece: its rows, or its row segments, of one copy or group. */
static void move_piece_of(const job_t *job, int64_t piece) {
    int64_t c = copy_of_piece(job, piece);
    const copy_t *copy = &job->copies[c];
    const cut_t *cut = &job->cuts[c];
    if (copy->members > 1) {
        int64_t rows = 1;
        for (int64_t k = 0; k < copy->outer; k++) {
            rows *= copy->shape[k];
        }
        int64_t first = (piece - cut->first_piece) * cut->units_a_piece;
        int64_t last = first + cut->units_a_piece;
        move_group_rows(job, copy, first, last < rows ? last : rows);
        return;
    }
    int64_t rows = 1;
    for (int64_t k = 0; k < copy->outer; k++) {
        rows *= copy->shape[k];
    }
    int64_t units = rows * cut->segments;
    int64_t first = (piece - cut->first_piece) * cut->units_a_piece;
    int64_t last = first + cut->units_a_piece;
    if (last > units) {
        last = units;
    }
    int64_t row = first / cut->segments, segment = first % cut->segments;
    /* the first row's index, and its offsets */
    int64_t index[MOST_OUTER];
    const char *s = job->src_base[copy->src] + copy->src_offset;
    char *d = job->dst_base[copy->dst] + copy->dst_offset;
    int64_t rest = row;
    for (int64_t k = copy->outer - 1; k >= 0; k--) {
        index[k] = rest % copy->shape[k];
        rest /= copy->shape[k];
        s += index[k] * copy->src_strides[k];
        d += index[k] * copy->dst_strides[k];
    }
    if (cut->segments == 1 && copy->outer >= 1) { /* whole rows: runs along the last outer */
        int64_t k = copy->outer - 1;
        const int64_t sstep = copy->src_strides[k], dstep = copy->dst_strides[k];
        for (int64_t u = first; u < last;) {
            int64_t run = copy->shape[k] - index[k];
            if (run > last - u) {
                run = last - u;
            }
            move_rows(d, s, run, dstep, sstep, copy, job->streaming);
            u += run;
            s += run * sstep;
            d += run * dstep;
            index[k] += run;
            if (index[k] < copy->shape[k]) {
                continue;
            }
            s -= index[k] * sstep;
            d -= index[k] * dstep;
            index[k] = 0;
            next_row(copy, index, k - 1, &s, &d); /* the next run */
        }
        return;
    }
    for (int64_t u = first; u < last; u++) {
        int64_t begin = segment * cut->segment;
        int64_t end = begin + cut->segment;
        if (end > copy->count) {
            end = copy->count;
        }
        move_elements(d + begin * copy->dst_step, s + begin * copy->src_step, end - begin,
                      copy->element, copy->dst_step, copy->src_step, job->streaming);
        if (++segment < cut->segments) {
            continue;
        }
        segment = 0;
        next_row(copy, index, copy->outer - 1, &s, &d);
    }
}

void move_piece(void *context, int64_t piece) {
    const job_t *job = (const job_t *)context;
    move_piece_of(job, piece);
    if (job->streaming) {
        stream_fence();
    }
}
