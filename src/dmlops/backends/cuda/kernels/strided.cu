// dmlops strided copy: every piece of a plan is a row of a piece table; a persistent grid
// walks fixed-size tiles of all pieces. One thread moves PER_THREAD vectors of a tile.
//
// Specialised at compile time (-D):
//   RANK     coalesced rank of the pieces (1..8)
//   ES       element size in bytes (1, 2, 4, 8)
//   VW       bytes per vector (ES: one element; 2..16: V = VW/ES elements)
//   GATHER   |inner source stride| in vector mode (1: contiguous; 2..4: read every GATHER-th)
//   REVERSE  vector mode reads the inner axis backwards
//   PHASES   a gather that keeps every phase of each block it loads: phase g is written
//            g times the row's phase field (a destination stride) on (the pixel unshuffle)
//   INTERLEAVE  G: the destination's inner axis is G phases read from G source rows (the
//            row's phase field is their source stride): a vector of each row loaded, the
//            G vectors stored interleaved (a depth-to-space)
//   IDX64    64-bit index arithmetic (else 32-bit with precomputed fast division)
//   MIN_BLOCKS  resident blocks a multiprocessor the registers must allow (1 by default)
//
// Row layout (long long): src, dst, vectors, first tile, phase, then per dimension:
// shape, source stride, destination stride (elements), division magic, division shift.
// In vector mode the innermost shape counts vectors, src is the lowest (aligned) address a
// thread's first vector reads, and the inner source stride is implied by GATHER and REVERSE;
// a gather keeps elements phase, phase + GATHER, ... of each block it loads.

#include "common.cuh"

#ifndef PHASES
#define PHASES 0
#endif
#ifndef INTERLEAVE
#define INTERLEAVE 0
#endif
#if INTERLEAVE
#define LOADS INTERLEAVE
#else
#define LOADS GATHER
#endif

#define TILE (THREADS * PER_THREAD)
#define ROW (5 + 5 * RANK)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
dmlops_strided(TABLE_ARG, int pieces, long long tiles)
{
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long* row = piece_of(TABLE, pieces, ROW, t);
        const u8* src = (const u8*)row[0];
        u8* dst = (u8*)row[1];
        const IDX count = (IDX)row[2];
        const IDX first = (IDX)((t - row[3]) * TILE);
        // gathers: where the first kept element sits in a block (PHASES: the phases' stride)
        const long long phase = row[4];
        IDX shape[RANK], sstr[RANK], dstr[RANK];
        unsigned magic[RANK], shift[RANK];
        #pragma unroll
        for (int d = 0; d < RANK; ++d) {
            shape[d] = (IDX)row[5 + d];
            sstr[d] = (IDX)row[5 + RANK + d];
            dstr[d] = (IDX)row[5 + 2 * RANK + d];
            magic[d] = (unsigned)row[5 + 3 * RANK + d];
            shift[d] = (unsigned)row[5 + 4 * RANK + d];
        }
        const IDX end = first + TILE < count ? first + TILE : count;
        VT buf[PER_THREAD][LOADS];
        IDX dofs[PER_THREAD];
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {
            const IDX i = first + (IDX)threadIdx.x + (IDX)k * THREADS;
            if (i < end) {
                IDX q = divide(i, shape[RANK - 1], magic[RANK - 1], shift[RANK - 1]);
                const IDX inner = i - q * shape[RANK - 1];
                IDX so = 0, dof = 0;
                #pragma unroll
                for (int d = RANK - 2; d >= 0; --d) {
                    const IDX q2 = divide(q, shape[d], magic[d], shift[d]);
                    const IDX c = q - q2 * shape[d];
                    q = q2;
                    so += c * sstr[d];
                    dof += c * dstr[d];
                }
#if V == 1
                so += inner * sstr[RANK - 1];
#elif INTERLEAVE
                so += inner * V;
#elif REVERSE
                so -= inner * (V * GATHER);
#else
                so += inner * (V * GATHER);
#endif
                dof += inner * V * dstr[RANK - 1];
#if INTERLEAVE
                #pragma unroll
                for (int g = 0; g < INTERLEAVE; ++g)
                    buf[k][g] = *(const VT*)(src + ((long long)so + g * phase) * ES);
#else
                const VT* from = (const VT*)(src + (long long)so * ES);
                #pragma unroll
                for (int g = 0; g < GATHER; ++g) buf[k][g] = from[g];
#endif
                dofs[k] = dof;
            }
        }
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {
            const IDX i = first + (IDX)threadIdx.x + (IDX)k * THREADS;
            if (i < end) {
                VT* to = (VT*)(dst + (long long)dofs[k] * ES);
#if V == 1
                *to = buf[k][0];
#else
                union { VT v[GATHER]; T e[V * GATHER]; } in;
                #pragma unroll
                for (int g = 0; g < GATHER; ++g) in.v[g] = buf[k][g];
#if INTERLEAVE
                union { VT v[INTERLEAVE]; T e[V * INTERLEAVE]; } rows;
                #pragma unroll
                for (int g = 0; g < INTERLEAVE; ++g) rows.v[g] = buf[k][g];
                #pragma unroll
                for (int q = 0; q < INTERLEAVE; ++q) {
                    Vec out;
                    #pragma unroll
                    for (int t = 0; t < V; ++t) {
                        const int e = q * V + t;  // element j * G + g of the block: row g's j
                        out.e[t] = rows.e[(e % INTERLEAVE) * V + e / INTERLEAVE];
                    }
                    to[q] = out.v;
                }
#elif PHASES
                #pragma unroll
                for (int g = 0; g < GATHER; ++g) {
                    Vec out;
                    #pragma unroll
                    for (int j = 0; j < V; ++j) out.e[j] = in.e[j * GATHER + g];
                    *(VT*)(dst + ((long long)dofs[k] + g * phase) * ES) = out.v;
                }
#else
                Vec out;
#if GATHER == 1
                #pragma unroll
                for (int j = 0; j < V; ++j) out.e[j] = in.e[REVERSE ? V - 1 - j : j];
#else
                // the phase is uniform in a piece: one branch, constant register indices
                switch ((int)phase) {
#define DMLOPS_PICK(PH)                                                              \
                case PH:                                                             \
                    _Pragma("unroll")                                                \
                    for (int j = 0; j < V; ++j)                                      \
                        out.e[j] = in.e[(REVERSE ? V - 1 - j : j) * GATHER + (PH)];  \
                    break;
                    DMLOPS_PICK(0)
                    DMLOPS_PICK(1)
#if GATHER > 2
                    DMLOPS_PICK(2)
#endif
#if GATHER > 3
                    DMLOPS_PICK(3)
#endif
#undef DMLOPS_PICK
                }
#endif
                *to = out.v;
#endif
#endif
            }
        }
    }
}
