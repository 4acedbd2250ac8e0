/* Rows read backwards (reverse.h). */
#include "reverse.h"

#include "loose.h"

static int wide_allowed = 1;

void reverse_set_wide(int on) { wide_allowed = on != 0; }

/* k from 0 on, up the source from its lowest element `low`: to[n - 1 - k] = low[k] */
#define ASCENDING(type, first)                                                \
    {                                                                         \
        type *restrict to = (type *)(void *)d;                                \
        const type *restrict low = (const type *)(const void *)s - (n - 1); \
        for (int64_t k = (first); k < n; k++) to[n - 1 - k] = low[k];          \
        return;                                                               \
    }

#if X86
static int avx2_found = -1;

static int wide(void) {
    if (avx2_found < 0) {
        __builtin_cpu_init();
        avx2_found = __builtin_cpu_supports("avx2");
    }
    return wide_allowed && avx2_found;
}

/* whole 32-byte vectors of the source, lowest first, each reversed and stored at the
 * mirrored place; returns the elements moved (the rest: the portable loop's) */
__attribute__((target("avx2"))) static int64_t reversed_vectors(char *d, const char *s, int64_t n,
                                                                int64_t size) {
    const int64_t per = 32 / size;
    const char *low = s - (n - 1) * size;
    int64_t k = 0;
    if (size == 8) {
        for (; k + per <= n; k += per) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(low + k * size));
            v = _mm256_permute4x64_epi64(v, 0x1B);
            _mm256_storeu_si256((__m256i *)(void *)(d + (n - per - k) * size), v);
        }
    } else if (size == 4) {
        const __m256i back = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
        for (; k + per <= n; k += per) {
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
        for (; k + per <= n; k += per) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(low + k * size));
            v = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, within), 0x4E);
            _mm256_storeu_si256((__m256i *)(void *)(d + (n - per - k) * size), v);
        }
    }
    return k;
}
#endif

void reverse_elements(char *d, const char *s, int64_t n, int64_t size) {
    int64_t first = 0;
#if X86
    if (n * size >= 64 && wide()) {
        first = reversed_vectors(d, s, n, size);
    }
#endif
    switch (size) {
    case 1:
        ASCENDING(loose8, first)
    case 2:
        ASCENDING(loose16, first)
    case 4:
        ASCENDING(loose32, first)
    default:
        ASCENDING(loose64, first)
    }
}
