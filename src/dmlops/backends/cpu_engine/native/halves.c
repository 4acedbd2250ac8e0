/* float32 to float16 (halves.h). */
#include "halves.h"

#include "loose.h"

#define CANONICAL_NAN 0x7FFFu
#define OVERFLOWS 0x477FF000u /* 65520.0f: from here on, round to nearest gives infinity */
#define SMALLEST_NORMAL 0x38800000u /* 2^-14 */

/* One value, in integer arithmetic. */
static inline uint16_t half_of(uint32_t x) {
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t magnitude = x & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
        return CANONICAL_NAN;
    }
    if (magnitude >= OVERFLOWS) {
        return (uint16_t)(sign | 0x7C00u);
    }
    if (magnitude >= SMALLEST_NORMAL) {
        /* the exponent rebiased (127 -> 15), the 13 dropped bits rounded to even */
        magnitude += 0xC8000FFFu + ((magnitude >> 13) & 1u);
        return (uint16_t)(sign | (magnitude >> 13));
    }
    uint32_t exponent = magnitude >> 23;
    if (exponent < 102) { /* under half the smallest subnormal: zero */
        return (uint16_t)sign;
    }
    /* a subnormal (or the smallest normal, where rounding carries into it): the value in
     * units of 2^-24, rounded to nearest even */
    uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exponent; /* 14 .. 24 */
    uint32_t kept = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (kept & 1u))) {
        kept++;
    }
    return (uint16_t)(sign | kept);
}

/* One float16 value as float32, exactly. */
static inline uint32_t float_of(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) {
        return mantissa ? 0x7FFFFFFFu : (sign | 0x7F800000u);
    }
    if (exponent == 0) {
        if (mantissa == 0) {
            return sign;
        }
        uint32_t shift = 0; /* a subnormal: its leading bit made the implicit one */
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            shift++;
        }
        return sign | ((113u - shift) << 23) | ((mantissa & 0x3FFu) << 13);
    }
    return sign | ((exponent + 112u) << 23) | (mantissa << 13);
}

#if X86
__attribute__((target("avx,f16c"))) static void widened_in_hardware(const uint16_t *from,
                                                                    uint32_t *to, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(from + i));
        __m256 v = _mm256_cvtph_ps(h);
        _mm256_storeu_ps((float *)(void *)(to + i), v);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
            for (int k = 0; k < 8; k++) { /* NaNs: the canonical one */
                to[i + k] = float_of(from[i + k]);
            }
        }
    }
    for (; i < n; i++) {
        to[i] = float_of(from[i]);
    }
}

__attribute__((target("avx,f16c"))) static void in_hardware(const uint32_t *from, uint16_t *to,
                                                            int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps((const float *)(const void *)(from + i));
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(to + i), h);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
            for (int k = 0; k < 8; k++) { /* NaNs: the canonical one */
                to[i + k] = half_of(from[i + k]);
            }
        }
    }
    for (; i < n; i++) {
        to[i] = half_of(from[i]);
    }
}

static int f16c_found = -1;

int halves_in_hardware(void) {
    if (f16c_found < 0) {
        __builtin_cpu_init();
        f16c_found = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    }
    return f16c_found;
}
#else
int halves_in_hardware(void) { return 0; }
#endif

void halves_from_floats(const uint32_t *from, uint16_t *to, int64_t n, int hardware) {
#if X86
    if (hardware && halves_in_hardware()) {
        in_hardware(from, to, n);
        return;
    }
#else
    (void)hardware;
#endif
    for (int64_t i = 0; i < n; i++) {
        to[i] = half_of(from[i]);
    }
}

void floats_from_halves(const uint16_t *from, uint32_t *to, int64_t n, int hardware) {
#if X86
    if (hardware && halves_in_hardware()) {
        widened_in_hardware(from, to, n);
        return;
    }
#else
    (void)hardware;
#endif
    for (int64_t i = 0; i < n; i++) {
        to[i] = float_of(from[i]);
    }
}

/* One float64 value as float16 bits, rounded once (a double rounded to float first could
 * round a second time the wrong way). */
static inline uint16_t half_of_double(uint64_t x) {
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t magnitude = x & UINT64_C(0x7FFFFFFFFFFFFFFF);
    if (magnitude > UINT64_C(0x7FF0000000000000)) {
        return CANONICAL_NAN;
    }
    if (magnitude >= UINT64_C(0x40EFFE0000000000)) { /* 65520.0 on: infinity */
        return (uint16_t)(sign | 0x7C00u);
    }
    if (magnitude >= UINT64_C(0x3F10000000000000)) { /* 2^-14 on: a normal half */
        /* the exponent rebiased (1023 -> 15), the 42 dropped bits rounded to even */
        magnitude += UINT64_C(0xC100000000000000) + UINT64_C(0x1FFFFFFFFFF) +
                     ((magnitude >> 42) & 1u);
        return (uint16_t)(sign | (uint16_t)(magnitude >> 42));
    }
    uint64_t exponent = magnitude >> 52;
    if (exponent < 997) { /* under half the smallest subnormal: zero */
        return sign;
    }
    uint64_t mantissa = (magnitude & UINT64_C(0xFFFFFFFFFFFFF)) | (UINT64_C(1) << 52);
    uint64_t shift = 1051 - exponent; /* 43 .. 54: the value in units of 2^-24 */
    uint64_t kept = mantissa >> shift;
    uint64_t rest = mantissa & ((UINT64_C(1) << shift) - 1u);
    uint64_t halfway = UINT64_C(1) << (shift - 1);
    if (rest > halfway || (rest == halfway && (kept & 1u))) {
        kept++;
    }
    return (uint16_t)(sign | (uint16_t)kept);
}

void halves_from_doubles(const uint64_t *from, uint16_t *to, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        to[i] = half_of_double(from[i]);
    }
}
