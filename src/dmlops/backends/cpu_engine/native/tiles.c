/* A transpose's square tiles (tiles.h). The tile's source lines stay in the L1 cache while
 * every element of them is moved (at a power-of-two stride, where they share one cache
 * set, the tile walk alone is what keeps them: 2048 x 2048 float32 on one VM core 23.4 ->
 * 7.7 ms). Where the machine has SSE2, the tile moves as 16-byte blocks: k rows of k
 * elements (k = 16 / element) loaded, transposed in registers by log2(k) rounds of
 * unpacks (row i with row i + k / 2, low and high halves interleaved element by element),
 * and stored: a 1-byte element then costs a fraction of an instruction, where the element
 * loop moves it by one load and one store. */
#include "tiles.h"

#include "loose.h"

#define BLOCKS TILE_BLOCKS
#if BLOCKS
#include <emmintrin.h>
#endif

static int blocks_allowed = 1;

void tiles_set_blocks(int on) { blocks_allowed = on != 0; }

#define TILE_OF(type, side)                                                           \
    for (int64_t r = 0; r < side; r++) {                                              \
        type *restrict to = (type *)(void *)(d + r * drow);                           \
        for (int64_t j = 0; j < side; j++) {                                          \
            to[j] = *(const type *)(const void *)(s + j * scol + r * (int64_t)sizeof(type)); \
        }                                                                             \
    }                                                                                 \
    return 1;

#if BLOCKS
/* one round of the network: rows i and i + k / 2 into rows 2 i and 2 i + 1 */
#define ROUND(UNPACK, k)                                                      \
    {                                                                         \
        __m128i next[16];                                                     \
        for (int i = 0; i < (k) / 2; i++) {                                   \
            next[2 * i] = _mm_unpacklo_##UNPACK(v[i], v[i + (k) / 2]);        \
            next[2 * i + 1] = _mm_unpackhi_##UNPACK(v[i], v[i + (k) / 2]);    \
        }                                                                     \
        for (int i = 0; i < (k); i++) v[i] = next[i];                         \
    }

/* the tile's 4 x 4 blocks of 16 bytes a row: block (a, b) holds source rows a k .. a k +
 * k - 1 at bytes 16 b .. 16 b + 15, and goes to destination rows b k .. at bytes 16 a */
#define BLOCK_TILE(k, ROUNDS)                                                                 \
    for (int64_t a = 0; a < 4; a++) {                                                         \
        for (int64_t b = 0; b < 4; b++) {                                                     \
            __m128i v[16];                                                                    \
            const char *from = s + a * (k) * scol + 16 * b;                                   \
            for (int i = 0; i < (k); i++)                                                     \
                v[i] = _mm_loadu_si128((const __m128i *)(const void *)(from + i * scol));    \
            ROUNDS                                                                            \
            char *to = d + b * (k) * drow + 16 * a;                                           \
            for (int i = 0; i < (k); i++) _mm_storeu_si128((__m128i *)(void *)(to + i * drow), v[i]); \
        }                                                                                     \
    }                                                                                         \
    return 1;
#endif

int move_tile(char *d, const char *s, int64_t side, int64_t drow, int64_t scol, int64_t element) {
    if (side * element != 64) {
        return 0;
    }
#if BLOCKS
    if (blocks_allowed) {
        switch (element) {
        case 1:
            BLOCK_TILE(16, ROUND(epi8, 16) ROUND(epi8, 16) ROUND(epi8, 16) ROUND(epi8, 16))
        case 2:
            BLOCK_TILE(8, ROUND(epi16, 8) ROUND(epi16, 8) ROUND(epi16, 8))
        case 4:
            BLOCK_TILE(4, ROUND(epi32, 4) ROUND(epi32, 4))
        case 8:
            BLOCK_TILE(2, ROUND(epi64, 2))
        default:
            break;
        }
    }
#endif
    switch (element) {
    case 1:
        TILE_OF(loose8, 64)
    case 2:
        TILE_OF(loose16, 32)
    case 4:
        TILE_OF(loose32, 16)
    case 8:
        TILE_OF(loose64, 8)
    default:
        return 0;
    }
}
