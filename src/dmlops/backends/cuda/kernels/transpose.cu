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

#define PASSES (TILE / ROWS_PER_PASS)       // rows of the tile each warp visits
#define WORDS (TILE / (32 * VEC))            // words of a tile row each lane visits

struct Tile {
    const T* src;
    T* dst;
    IDX np, nl, sp, sl, dp, p0, l0;
};

__device__ __forceinline__ Tile locate(const long long* __restrict__ table, int pieces, long long t)
{
    int lo = 0, hi = pieces - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (table[(long long)mid * ROW + 3] <= t) lo = mid; else hi = mid - 1;
    }
    const long long* row = table + (long long)lo * ROW;
    long long local = t - row[3];
    const long long along_p = row[4], along_last = row[5];
    const long long tl = local % along_last;
    local /= along_last;
    const long long tp = local % along_p;
    long long outer = local / along_p;
    IDX so = 0, dof = 0;
    #pragma unroll
    for (int d = RANK - 2; d >= 0; --d) {
        if (d == P) continue;
        const long long n = row[6 + d];
        const long long c = outer % n;
        outer /= n;
        so += (IDX)c * (IDX)row[6 + RANK + d];
        dof += (IDX)c * (IDX)row[6 + 2 * RANK + d];
    }
    Tile g;
    g.src = (const T*)(const u8*)row[0] + so;
    g.dst = (T*)(u8*)row[1] + dof;
    g.np = (IDX)row[6 + P];
    g.nl = (IDX)row[6 + RANK - 1];
    g.sp = (IDX)row[6 + RANK + P];
    g.sl = (IDX)row[6 + 2 * RANK - 1];
    g.dp = (IDX)row[6 + 2 * RANK + P];  // the destination's last stride is 1
    g.p0 = (IDX)tp * TILE;
    g.l0 = (IDX)tl * TILE;
    return g;
}

#if VEC > 1
typedef Word R;
#else
typedef T R;
#endif

// read a tile into registers: lanes along P (unit stride in the source), warps along the last axis
__device__ __forceinline__ void load(const Tile& g, int lane, int warp, R (&regs)[PASSES][WORDS])
{
    #pragma unroll
    for (int a = 0; a < PASSES; ++a) {
        const IDX l = g.l0 + warp + a * ROWS_PER_PASS;
        #pragma unroll
        for (int b = 0; b < WORDS; ++b) {
            const IDX p = g.p0 + (lane + b * 32) * VEC;
            if (l < g.nl) {
#if VEC > 1
                if (p + VEC <= g.np) {
                    regs[a][b].w = *(const unsigned*)(g.src + p + l * g.sl);
                } else {
                    for (int k = 0; k < VEC; ++k)
                        if (p + k < g.np) regs[a][b].e[k] = g.src[p + k + l * g.sl];
                }
#else
                if (p < g.np) regs[a][b] = g.src[p * g.sp + l * g.sl];
#endif
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
dmlops_transpose(const long long* __restrict__ table, int pieces, long long tiles)
{
    __shared__ T tile[TILE][TILE + VEC];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    long long t = blockIdx.x;
    if (t >= tiles) return;
    Tile g = locate(table, pieces, t);
    R regs[PASSES][WORDS];
    load(g, lane, warp, regs);
    for (; t < tiles; t += gridDim.x) {
        __syncthreads();  // the previous tile's reads of shared memory are done
        #pragma unroll
        for (int a = 0; a < PASSES; ++a) {
            const int j = warp + a * ROWS_PER_PASS;
            #pragma unroll
            for (int b = 0; b < WORDS; ++b) {
                const int i = (lane + b * 32) * VEC;
#if VEC > 1
                #pragma unroll
                for (int k = 0; k < VEC; ++k) tile[j][i + k] = regs[a][b].e[k];
#else
                tile[j][i] = regs[a][b];
#endif
            }
        }
        __syncthreads();
        const Tile now = g;
        if (t + gridDim.x < tiles) {  // the next tile's reads fly while this one is written
            g = locate(table, pieces, t + gridDim.x);
            load(g, lane, warp, regs);
        }
        // write: lanes along the last axis (unit stride in the destination), warps along P
        #pragma unroll
        for (int a = 0; a < PASSES; ++a) {
            const int j = warp + a * ROWS_PER_PASS;
            const IDX p = now.p0 + j;
            #pragma unroll
            for (int b = 0; b < WORDS; ++b) {
                const int i = (lane + b * 32) * VEC;
                const IDX l = now.l0 + i;
                if (p < now.np) {
#if VEC > 1
                    if (l + VEC <= now.nl) {
                        Word word;
                        #pragma unroll
                        for (int k = 0; k < VEC; ++k) word.e[k] = tile[i + k][j];
                        *(unsigned*)(now.dst + p * now.dp + l) = word.w;
                    } else {
                        for (int k = 0; k < VEC && l + k < now.nl; ++k)
                            now.dst[p * now.dp + l + k] = tile[i + k][j];
                    }
#else
                    if (l < now.nl) now.dst[p * now.dp + l] = tile[i][j];
#endif
                }
            }
        }
    }
}
