/* Rows read backwards (reverse.h). */
#include "reverse.h"

#include "loose.h"

static int wide_allowed = 1;

void reverse_set_wide(int on) { wide_allowed = on != 0; }

/* k from 0 on, up the source from its lowest element `low`: to[n - 1 - k] = low[k] */
#define ASCENDING(type)                                                       \
    {                                                                         \
        type *restrict to = (type *)(void *)d;                                \
        const type *restrict low = (const type *)(const void *)s - (n - 1); \
        for (int64_t k = 0; k < n; k++) to[n - 1 - k] = low[k];                \
        return;                                                               \
    }

/* the row one element at a time (a loop compilers vectorise) */
static void reverse_loop(char *d, const char *s, int64_t n, int64_t size) {
    switch (size) {
    case 1:
        ASCENDING(loose8)
    case 2:
        ASCENDING(loose16)
    case 4:
        ASCENDING(loose32)
    default:
        ASCENDING(loose64)
    }
}

#if X86
static int avx2_found = -1;

int wide_vectors(void) {
    if (avx2_found < 0) {
        __builtin_cpu_init();
        avx2_found = __builtin_cpu_supports("avx2");
    }
    return wide_allowed && avx2_found;
}

/* whole 32-byte vectors of the source from element `k` while they end by element `until`,
 * lowest first, each reversed and stored at the mirrored place; returns the element after
 * the last one moved */
__attribute__((target("avx2"))) static int64_t reversed_vectors(char *d, const char *s, int64_t n,
                                                                int64_t size, int64_t k,
                                                                int64_t until) {
    const int64_t per = 32 / size;
    const char *low = s - (n - 1) * size;
    if (size == 8) {
        for (; k + per <= until; k += per) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(low + k * size));
            v = _mm256_permute4x64_epi64(v, 0x1B);
            _mm256_storeu_si256((__m256i *)(void *)(d + (n - per - k) * size), v);
        }
    } else if (size == 4) {
        const __m256i back = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
        for (; k + per <= until; k += per) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(low + k * size));
            v = _mm256_permutevar8x32_epi32(v, back);
            _mm256_storeu_si256((__m256i *)(void *)(d + (n - per - k) * size), v);
        }
    } else { /* 1 or 2 bytes: reversed within each 16-byte lane, then the lanes swapped */
        const __m256i within = size == 2
                                   ? _mm256_setr_epi8(14, 15, 12, 13, 10, 11, 8, 9, 6, 7, 4, 5,
                                                      2, 3, 0, 1, 14, 15, 12, 13, 10, 11, 8, 9,
                                                      6, 7, 4, 5, 2, 3, 0, 1)
                                   : _mm256_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
                                                      3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                                      7, 6, 5, 4, 3, 2, 1, 0);
        for (; k + per <= until; k += per) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(low + k * size));
            v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, within), 0x4E);
            _mm256_storeu_si256((__m256i *)(void *)(d + (n - per - k) * size), v);
        }
    }
    return k;
}
#endif

void reverse_elements(char *d, const char *s, int64_t n, int64_t size) {
#if X86
    if (n * size >= 64 && wide_vectors()) {
        /* 4- and 8-byte elements: the row's first and last vectors stored where they
         * fall, the others on 32-byte boundaries (a store split over two cache lines costs
         * a Xeon core 1.15-1.2x, and a numpy array's rows often sit 16 bytes past one); the
         * first and last overlap the others, writing the same bytes twice. (1- and 2-byte
         * rows lose more to the extra vector than they gain.) Otherwise the last vector
         * alone overlaps. */
        const int64_t per = 32 / size;
        int64_t head = 0;
        uintptr_t last_store = (uintptr_t)d + (uintptr_t)((n - per) * size);
        if (size >= 4 && (uintptr_t)d % (uintptr_t)size == 0) {
            head = (int64_t)(last_store % 32) / size;
        }
        if (head > 0) {
            reversed_vectors(d, s, n, size, 0, per);
        }
        if (reversed_vectors(d, s, n, size, head, n) < n) {
            reversed_vectors(d, s, n, size, n - per, n);
        }
        return;
    }
#endif
    reverse_loop(d, s, n, size);
}
