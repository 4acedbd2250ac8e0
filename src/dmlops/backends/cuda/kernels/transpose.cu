// dmlops transpose: the source's unit-stride axis (P) is not the destination's (the last).
// Tiles of TILE x TILE elements go through shared memory, so that reads run along P and
// writes along the last axis, both coalesced; the tile is padded against bank conflicts.
//
// Specialised at compile time (-D): RANK (>= 2), ES, TILE (32, 64 or 128), P (the source's
// unit-stride axis, < RANK - 1), VEC (elements per 4-byte word: reads along P and writes
// along the last axis move whole words where addresses and strides allow; else 1), IDX64.
// Row layout (long long): src, dst, tiles (of this piece), first tile, tiles along P,
// tiles along the last axis, then per dimension: shape, source stride, destination
// stride (elements).

#define ROW (6 + 3 * RANK)
#define ROWS_PER_PASS (THREADS / 32)

typedef unsigned char u8;
#if ES == 1
typedef unsigned char T;
#elif ES == 2
typedef unsigned short T;
#elif ES == 4
typedef unsigned int T;
#else
typedef unsigned long long T;
#endif
#if VEC > 1
union Word { unsigned w; T e[VEC]; };
#endif
#if IDX64
typedef long long IDX;
#else
typedef int IDX;
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
dmlops_transpose(const long long* __restrict__ table, int pieces, long long tiles)
{
    __shared__ T tile[TILE][TILE + VEC];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        int lo = 0, hi = pieces - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (table[(long long)mid * ROW + 3] <= t) lo = mid; else hi = mid - 1;
        }
        const long long* row = table + (long long)lo * ROW;
        // tile arithmetic in 32 bits: a piece has fewer than 2^31 tiles (checked on the host)
        unsigned local = (unsigned)(t - row[3]);
        const unsigned along_p = (unsigned)row[4], along_last = (unsigned)row[5];
        const unsigned tl = local % along_last;
        local /= along_last;
        const unsigned tp = local % along_p;
        unsigned outer = local / along_p;
        const IDX np = (IDX)row[6 + P], nl = (IDX)row[6 + RANK - 1];
        IDX so = 0, dof = 0;
        #pragma unroll
        for (int d = RANK - 2; d >= 0; --d) {
            if (d == P) continue;
            const unsigned n = (unsigned)row[6 + d];
            const unsigned c = outer % n;
            outer /= n;
            so += (IDX)c * (IDX)row[6 + RANK + d];
            dof += (IDX)c * (IDX)row[6 + 2 * RANK + d];
        }
        const IDX sp = (IDX)row[6 + RANK + P], sl = (IDX)row[6 + 2 * RANK - 1];
        const IDX dp = (IDX)row[6 + 2 * RANK + P];  // the destination's last stride is 1
        const IDX p0 = (IDX)tp * TILE, l0 = (IDX)tl * TILE;
        const T* src = (const T*)(const u8*)row[0] + so;
        T* dst = (T*)(u8*)row[1] + dof;
        __syncthreads();  // the previous tile's reads of shared memory are done
        // read: lanes along P (unit stride in the source), warps along the last axis
        #pragma unroll
        for (int j = warp; j < TILE; j += ROWS_PER_PASS) {
            const IDX l = l0 + j;
            #pragma unroll
            for (int i = lane * VEC; i < TILE; i += 32 * VEC) {
                const IDX p = p0 + i;
                if (l < nl) {
#if VEC > 1
                    if (p + VEC <= np) {
                        Word word;
                        word.w = *(const unsigned*)(src + p + l * sl);
                        #pragma unroll
                        for (int k = 0; k < VEC; ++k) tile[j][i + k] = word.e[k];
                    } else {
                        for (int k = 0; k < VEC && p + k < np; ++k) tile[j][i + k] = src[p + k + l * sl];
                    }
#else
                    if (p < np) tile[j][i] = src[p * sp + l * sl];
#endif
                }
            }
        }
        __syncthreads();
        // write: lanes along the last axis (unit stride in the destination), warps along P
        #pragma unroll
        for (int j = warp; j < TILE; j += ROWS_PER_PASS) {
            const IDX p = p0 + j;
            #pragma unroll
            for (int i = lane * VEC; i < TILE; i += 32 * VEC) {
                const IDX l = l0 + i;
                if (p < np) {
#if VEC > 1
                    if (l + VEC <= nl) {
                        Word word;
                        #pragma unroll
                        for (int k = 0; k < VEC; ++k) word.e[k] = tile[i + k][j];
                        *(unsigned*)(dst + p * dp + l) = word.w;
                    } else {
                        for (int k = 0; k < VEC && l + k < nl; ++k) dst[p * dp + l + k] = tile[i + k][j];
                    }
#else
                    if (l < nl) dst[p * dp + l] = tile[i][j];
#endif
                }
            }
        }
    }
}
