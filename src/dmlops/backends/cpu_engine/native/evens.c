/* Every second element (evens.h). */
#include "evens.h"

#include "loose.h"
#include "reverse.h"

#if X86
/* two 32-byte loads of the source, their even elements into one 32-byte store */
__attribute__((target("avx2"))) static int64_t evens_in_vectors(char *d, const char *s,
                                                                int64_t n, int64_t size) {
    const int64_t per = 32 / size;
    int64_t j = 0;
    /* (a block's last load ends at element 2 j + 2 per - 1: below 2 (n - 1) while j + per < n) */
    if (size == 4) {
        for (; j + per < n; j += per) {
            __m256 a = _mm256_loadu_ps((const float *)(const void *)(s + 2 * j * size));
            __m256 b = _mm256_loadu_ps((const float *)(const void *)(s + (2 * j + per) * size));
            __m256i even = _mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88));
            _mm256_storeu_si256((__m256i *)(void *)(d + j * size),
                                _mm256_permute4x64_epi64(even, 0xD8));
        }
    } else {
        for (; j + per < n; j += per) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * j * size));
            __m256i b =
                _mm256_loadu_si256((const __m256i *)(const void *)(s + (2 * j + per) * size));
            _mm256_storeu_si256((__m256i *)(void *)(d + j * size),
                                _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xD8));
        }
    }
    return j;
}
#endif

#if X86
/* two 32-byte loads of the source, their even elements into one 32-byte store at d0, their
 * odd ones into one at d1 */
__attribute__((target("avx2"))) static int64_t deal_in_vectors(char *d0, char *d1,
                                                               const char *s, int64_t n,
                                                               int64_t size) {
    const int64_t per = 32 / size;
    int64_t j = 0;
    /* (a block's last load ends at element 2 j + 2 per - 1: within the 2 n read) */
    if (size == 4) {
        for (; j + per <= n; j += per) {
            __m256 a = _mm256_loadu_ps((const float *)(const void *)(s + 2 * j * size));
            __m256 b = _mm256_loadu_ps((const float *)(const void *)(s + (2 * j + per) * size));
            __m256i even = _mm256_castps_si256(_mm256_shuffle_ps(a, b, 0x88));
            __m256i odd = _mm256_castps_si256(_mm256_shuffle_ps(a, b, 0xDD));
            _mm256_storeu_si256((__m256i *)(void *)(d0 + j * size),
                                _mm256_permute4x64_epi64(even, 0xD8));
            _mm256_storeu_si256((__m256i *)(void *)(d1 + j * size),
                                _mm256_permute4x64_epi64(odd, 0xD8));
        }
    } else {
        for (; j + per <= n; j += per) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * j * size));
            __m256i b =
                _mm256_loadu_si256((const __m256i *)(const void *)(s + (2 * j + per) * size));
            _mm256_storeu_si256((__m256i *)(void *)(d0 + j * size),
                                _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xD8));
            _mm256_storeu_si256((__m256i *)(void *)(d1 + j * size),
                                _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), 0xD8));
        }
    }
    return j;
}
#endif

/* the longest rows (bytes) dealt: longer ones read their run twice, the second time from
 * L1 (16-core Xeon host, 16 threads, a Focus stem of 1,280-byte rows 52.6 us as two passes,
 * 72.2 dealt; rows of 64 to 512 bytes: pixel unshuffles 1.1-4.9x and a small Focus stem
 * 1.5x faster dealt; the VM gained on the long rows too) */
static int64_t deal_most = 512;

void evens_set_deal_most(int64_t bytes) { deal_most = bytes < 0 ? 0 : bytes; }

int64_t deal_two(char *d0, char *d1, const char *s, int64_t n, int64_t size) {
#if X86
    if ((size == 4 || size == 8) && n * size >= DEAL_LEAST_BYTES && n * size <= deal_most &&
        wide_vectors()) {
        return deal_in_vectors(d0, d1, s, n, size);
    }
#else
    (void)d0;
    (void)d1;
    (void)s;
    (void)n;
    (void)size;
#endif
    return 0;
}

int64_t every_second(char *d, const char *s, int64_t n, int64_t size) {
#if X86
    if ((size == 4 || size == 8) && n * size >= EVENS_LEAST_BYTES && wide_vectors()) {
        return evens_in_vectors(d, s, n, size);
    }
#else
    (void)d;
    (void)s;
    (void)n;
    (void)size;
#endif
    return 0;
}
