// dmlops rows: contiguous rows whose start or pitch is not 16-byte aligned.
// Every 16-byte store is aligned: its source is assembled from the two aligned 16-byte
// loads that cover it (a funnel shift by the row's source/destination misalignment),
// and the head and tail of each row (under 16 bytes each) move byte by byte.
//
// Specialised at compile time (-D): OUTER (outer rank, >= 1), IDX64.
// Row layout (long long): src, dst, tiles (of this piece), first tile, row bytes,
// tiles per row, then per outer dimension: shape, source pitch, destination pitch (bytes).

#include "common.cuh"

#define TILE_VECTORS (THREADS * PER_THREAD)
#define ROW (6 + 3 * OUTER)


__device__ __forceinline__ uint4 shifted(uint4 a, uint4 b, unsigned delta)
{
    // bytes [delta, delta + 16) of the 32 bytes a:b (little-endian words)
    unsigned w0 = a.x, w1 = a.y, w2 = a.z, w3 = a.w, w4 = b.x;
    switch (delta >> 2) {
        case 1: w0 = a.y; w1 = a.z; w2 = a.w; w3 = b.x; w4 = b.y; break;
        case 2: w0 = a.z; w1 = a.w; w2 = b.x; w3 = b.y; w4 = b.z; break;
        case 3: w0 = a.w; w1 = b.x; w2 = b.y; w3 = b.z; w4 = b.w; break;
        default: break;
    }
    const unsigned bits = (delta & 3) * 8;
    uint4 r;
    r.x = __funnelshift_r(w0, w1, bits);
    r.y = __funnelshift_r(w1, w2, bits);
    r.z = __funnelshift_r(w2, w3, bits);
    r.w = __funnelshift_r(w3, w4, bits);
    return r;
}

extern "C" __global__ void __launch_bounds__(THREADS)
dmlops_rows(TABLE_ARG, int pieces, long long tiles)
{
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long* row = piece_of(TABLE, pieces, ROW, t);
        // tile arithmetic in 32 bits: a piece has fewer than 2^31 tiles (checked on the host)
        const unsigned local = (unsigned)(t - row[3]);
        const long long row_bytes = row[4];
        const unsigned per_row = (unsigned)row[5];
        unsigned r = local / per_row;
        const unsigned chunk = local - r * per_row;
        long long so = 0, dof = 0;
        #pragma unroll
        for (int d = OUTER - 1; d >= 0; --d) {
            const unsigned n = (unsigned)row[6 + d];
            const unsigned c = r % n;
            r /= n;
            so += (long long)c * row[6 + OUTER + d];
            dof += (long long)c * row[6 + 2 * OUTER + d];
        }
        const u8* src = (const u8*)row[0] + so;
        u8* dst = (u8*)row[1] + dof;
        // the destination's aligned body [body, body_end), head before it, tail after it
        const unsigned long long d0 = (unsigned long long)dst;
        unsigned long long body = (d0 + 15) & ~15ull;
        unsigned long long body_end = (d0 + row_bytes) & ~15ull;
        if (body > body_end) body = body_end = d0 + row_bytes;  // a row inside one 16-byte block
        const long long head = (long long)(body - d0);
        const long long vectors = (long long)(body_end - body) >> 4;
        if (chunk == 0 && threadIdx.x < 32) {
            const long long tail = (long long)(d0 + row_bytes - body_end);
            for (long long b = threadIdx.x; b < head + tail; b += 32) {
                const long long at = b < head ? b : (long long)(body_end - d0) + (b - head);
                dst[at] = src[at];
            }
        }
        const long long shift = (long long)((const u8*)src - (const u8*)d0);
        const unsigned delta = (unsigned)(((unsigned long long)(body + shift)) & 15);
        const long long v0 = (long long)chunk * TILE_VECTORS;
        uint4 values[PER_THREAD];
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {
            const long long v = v0 + threadIdx.x + (long long)k * THREADS;
            if (v < vectors) {
                const uint4* from = (const uint4*)((body + (unsigned long long)v * 16 + shift) & ~15ull);
                const uint4 a = __ldg(from);
                values[k] = delta ? shifted(a, __ldg(from + 1), delta) : a;
            }
        }
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {
            const long long v = v0 + threadIdx.x + (long long)k * THREADS;
            if (v < vectors) *(uint4*)(body + (unsigned long long)v * 16) = values[k];
        }
    }
}
