// dmlops transpose: the source's unit-stride axis (P) is not the destination's (the last, L).
// A tile of TILE x TILE elements (TILE = 32 V) goes through shared memory: each lane reads a
// V x V block with V-element vector loads along P, transposes it in registers, and parks it as
// V cells of V elements along L; each lane then writes whole cells along L. Both sides are
// coalesced and move V elements per access; a one-cell pad keeps the cell reads conflict-free.
//
// Specialised at compile time (-D): RANK (>= 2), ES, V (1, 2 or 4), P (the source's
// unit-stride axis, < RANK - 1), IDX64.
// Row layout (long long): src, dst, tiles (of this piece), first tile, tiles along P,
// tiles along L, then per dimension: shape, source stride, destination stride (elements).

#include "common.cuh"

#define ROW (6 + 3 * RANK)
#define WARPS (THREADS / 32)
#define TILE (32 * V)

#if V * ES == 1
typedef unsigned char Cell;
#elif V * ES == 2
typedef unsigned short Cell;
#elif V * ES == 4
typedef unsigned int Cell;
#elif V * ES == 8
typedef uint2 Cell;
#else
typedef uint4 Cell;
#endif

union Block { Cell row[V]; T e[V][V]; };  // row r: V elements along P (a source vector)

extern "C" __global__ void __launch_bounds__(THREADS)
dmlops_transpose(TABLE_ARG, int pieces, long long tiles)
{
    __shared__ Cell cells[32][TILE + 1];  // [block of V rows along L][P]: V elements along L
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long* row = piece_of(TABLE, pieces, ROW, t);
        // tile arithmetic in 32 bits: a piece has fewer than 2^31 tiles (checked on the host)
        unsigned local = (unsigned)(t - row[3]);
        const unsigned along_p = (unsigned)row[4], along_l = (unsigned)row[5];
        const unsigned tl = local % along_l;
        local /= along_l;
        const unsigned tp = local % along_p;
        unsigned outer = local / along_p;
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
        const IDX np = (IDX)row[6 + P], nl = (IDX)row[6 + RANK - 1];
        const IDX sp = (IDX)row[6 + RANK + P], sl = (IDX)row[6 + 2 * RANK - 1];
        const IDX dp = (IDX)row[6 + 2 * RANK + P];  // the destination's L stride is 1
        const IDX p0 = (IDX)tp * TILE, l0 = (IDX)tl * TILE;
        const T* src = (const T*)(const u8*)row[0] + so;
        T* dst = (T*)(u8*)row[1] + dof;
        __syncthreads();  // the previous tile's reads of shared memory are done
        // read: lanes along P, warps along blocks of V rows of L
        #pragma unroll
        for (int b = warp; b < 32; b += WARPS) {
            const IDX p = p0 + lane * V, l = l0 + b * V;
            Block blk;
            if (p + V <= np && l + V <= nl) {
                #pragma unroll
                for (int r = 0; r < V; ++r) blk.row[r] = *(const Cell*)(src + p * sp + (l + r) * sl);
            } else {
                #pragma unroll
                for (int r = 0; r < V; ++r)
                    #pragma unroll
                    for (int c = 0; c < V; ++c)
                        blk.e[r][c] = (p + c < np && l + r < nl) ? src[(p + c) * sp + (l + r) * sl] : (T)0;
            }
            #pragma unroll
            for (int c = 0; c < V; ++c) {
                union { Cell cell; T e[V]; } out;
                #pragma unroll
                for (int r = 0; r < V; ++r) out.e[r] = blk.e[r][c];
                cells[b][lane * V + c] = out.cell;
            }
        }
        __syncthreads();
        // write: lanes along L (one cell each), warps along P
        #pragma unroll
        for (int j = warp; j < TILE; j += WARPS) {
            const IDX p = p0 + j, l = l0 + lane * V;
            if (p < np) {
                if (l + V <= nl) {
                    *(Cell*)(dst + p * dp + l) = cells[lane][j];
                } else {
                    union { Cell cell; T e[V]; } in;
                    in.cell = cells[lane][j];
                    #pragma unroll
                    for (int r = 0; r < V; ++r)
                        if (l + r < nl) dst[p * dp + l + r] = in.e[r];
                }
            }
        }
    }
}
