/* Rows read every few elements in byte shuffles (shuffles.h). Sixteen bytes of a row's
 * destination come from a window of at most four 16-byte loads of its source: each load
 * shuffled by its own mask (0x80 where its bytes are not wanted) and the four or-ed. A
 * scalar loop moves a byte a cycle; this moves 16 in three to five. */
#include "shuffles.h"

#include "loose.h"
#include "reverse.h"

static int shuffles_allowed = 1;

void shuffles_set(int level) { shuffles_allowed = level; }

#if X86
#define MOST_LOADS 4

/* One element size and step: how many loads a block reads, where its window begins (bytes
 * from the block's first element: 0 for a positive step; below it for a negative one, so
 * that the window's spare bytes fall on the side of the row still to come), and each
 * load's mask; then the same for the row's last block, whose window's spare bytes fall on
 * the side already moved. */
typedef struct {
    int loads;
    int64_t low, end_low;
    uint8_t masks[MOST_LOADS][16], end_masks[MOST_LOADS][16];
} shuffle_t;

static shuffle_t shuffles[3][9]; /* element size 1, 2, 4; step -4 .. 4 */

static int size_slot(int64_t size) { return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : -1; }

static const shuffle_t *shuffle_for(int64_t size, int64_t step) {
    const int slot = size_slot(size);
    if (slot < 0 || step < -4 || step > 4 || (step >= -1 && step <= 1)) {
        return NULL;
    }
    /* where they won on Xeon threads (rows of 256 elements against the loops they replace:
     * uint8 step 3 0.52 -> 0.34 ms and 1.84 -> 0.80 on a second host, -2 0.77 -> 0.38 and
     * 1.59 -> 0.90, -3 0.53 -> 0.36 and 1.10 -> 0.88, -4 0.52 -> 0.33 and 1.38 -> 0.87);
     * elsewhere the compiler's vector loops are as fast or faster (1-byte steps 2 and 4;
     * 2- and 4-byte rows read backwards from their lowest address up: float32 -2 1.16 ms
     * against the shuffles' 1.73, -4 0.91 against 1.58) */
    static const int chosen[3][9] = {
        /* -4 -3 -2 -1  0  1  2  3  4 */
        {1, 1, 1, 0, 0, 0, 0, 1, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, 0},
        {0, 0, 0, 0, 0, 0, 0, 0, 0},
    };
    return chosen[slot][step + 4] || shuffles_allowed == 2 ? &shuffles[slot][step + 4] : NULL;
}

__attribute__((constructor)) static void prepare_shuffles(void) {
    static const int64_t sizes[3] = {1, 2, 4};
    for (int slot = 0; slot < 3; slot++) {
        const int64_t size = sizes[slot], per = 16 / size;
        for (int64_t step = -4; step <= 4; step++) {
            shuffle_t *t = &shuffles[slot][step + 4];
            const int64_t a = step < 0 ? -step : step;
            const int64_t span = a * (per - 1) * size + size;
            t->loads = (int)((span + 15) / 16);
            t->low = step < 0 ? size - 16 * t->loads : 0;
            t->end_low = step < 0 ? step * (per - 1) * size : span - 16 * t->loads;
            for (int k = 0; k < MOST_LOADS; k++) {
                for (int i = 0; i < 16; i++) {
                    t->masks[k][i] = 0x80;
                    t->end_masks[k][i] = 0x80;
                }
            }
            if (step >= -1 && step <= 1) {
                continue;
            }
            for (int64_t i = 0; i < 16; i++) {
                const int64_t at = step * (i / size) * size + i % size;
                t->masks[(at - t->low) / 16][i] = (uint8_t)((at - t->low) % 16);
                t->end_masks[(at - t->end_low) / 16][i] = (uint8_t)((at - t->end_low) % 16);
            }
        }
    }
}

#define LOAD(k) _mm_loadu_si128((const __m128i *)(const void *)(w + 16 * (k)))
#define PICK(k) _mm_shuffle_epi8(LOAD(k), m##k)
#define BLOCKS(BODY)                                                    \
    if (step > 0) {                                                     \
        for (; j <= last; j += per, w += advance) {                     \
            _mm_storeu_si128((__m128i *)(void *)(d + j * size), BODY); \
        }                                                               \
    } else { /* (from the row's lowest address up: see reverse.h) */    \
        const int64_t top = last / per * per;                           \
        w += top / per * advance;                                       \
        for (int64_t k = top; k >= 0; k -= per, w -= advance) {         \
            _mm_storeu_si128((__m128i *)(void *)(d + k * size), BODY); \
        }                                                               \
        j = top + per;                                                  \
    }
#define MASKS(from)                                                                            \
    const __m128i m0 = _mm_loadu_si128((const __m128i *)(const void *)(from)[0]);            \
    const __m128i m1 = _mm_loadu_si128((const __m128i *)(const void *)(from)[1]);            \
    const __m128i m2 = _mm_loadu_si128((const __m128i *)(const void *)(from)[2]);            \
    const __m128i m3 = _mm_loadu_si128((const __m128i *)(const void *)(from)[3]);
#define ONE_BLOCK(loads)                                                                       \
    ((loads) == 2   ? _mm_or_si128(PICK(0), PICK(1))                                           \
     : (loads) == 3 ? _mm_or_si128(_mm_or_si128(PICK(0), PICK(1)), PICK(2))                    \
                    : _mm_or_si128(_mm_or_si128(PICK(0), PICK(1)), _mm_or_si128(PICK(2), PICK(3))))

/* the row's last `per` elements, its window's spare bytes among the elements before them */
__attribute__((target("avx2"))) static void shuffled_end(char *d, const char *s, int64_t n,
                                                         int64_t size, int64_t step,
                                                         const shuffle_t *t) {
    const int64_t j = n - 16 / size;
    const char *w = s + step * j * size + t->end_low;
    MASKS(t->end_masks)
    _mm_storeu_si128((__m128i *)(void *)(d + j * size), ONE_BLOCK(t->loads));
}

__attribute__((target("avx2"))) static int64_t shuffled(char *d, const char *s, int64_t n,
                                                        int64_t size, int64_t step,
                                                        const shuffle_t *t) {
    const int64_t per = 16 / size, a = step < 0 ? -step : step;
    /* the last block whose window stays within the row's bytes, and whose store within n */
    const int64_t reach = a * (n - 1) * size + size - 16 * t->loads;
    if (reach < 0 || n < per) {
        return 0;
    }
    int64_t last = reach / (a * size);
    if (last > n - per) {
        last = n - per;
    }
    MASKS(t->masks)
    const int64_t advance = step * per * size;
    const char *w = s + t->low;
    int64_t j = 0;
    switch (t->loads) {
    case 2:
        BLOCKS(ONE_BLOCK(2))
        break;
    case 3:
        BLOCKS(ONE_BLOCK(3))
        break;
    default:
        BLOCKS(ONE_BLOCK(4))
        break;
    }
    /* the last block again where elements are left: its window's spare bytes now fall on
     * the side already moved (the row's elements reach them) */
    if (j < n && (step < 0 || (n - per) * step * size + t->end_low >= 0)) {
        shuffled_end(d, s, n, size, step, t);
        return n;
    }
    return j;
}
#endif

int shuffles_apply(int64_t size, int64_t step, int64_t n) {
#if X86
    return shuffles_allowed > 0 && n * size >= 32 && shuffle_for(size, step) != NULL &&
           wide_vectors();
#else
    (void)size;
    (void)step;
    (void)n;
    return 0;
#endif
}

int64_t shuffled_steps(char *d, const char *s, int64_t n, int64_t size, int64_t step) {
#if X86
    if (shuffles_apply(size, step, n)) {
        return shuffled(d, s, n, size, step, shuffle_for(size, step));
    }
#else
    (void)d;
    (void)s;
#endif
    return 0;
}
