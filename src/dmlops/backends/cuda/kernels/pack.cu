// dmlops pack: copies whose destination is one contiguous run, read from any strided source
// (short or misaligned source rows, inner steps the strided kernel's vectors do not fit).
// One thread fills PER_THREAD vectors of VW bytes of the destination: it finds the source
// position of a vector's first element with one division chain, walks the next V - 1 by
// carrying through the dimensions, and stores the vector whole. Every vector's loads are
// issued before the first store, so a thread keeps PER_THREAD * V loads in flight.
//
// Specialised at compile time (-D): RANK (1..8), ES (element bytes), VW (vector bytes, a
// multiple of ES above it), IDX64 (64-bit index arithmetic), MIN_BLOCKS (resident blocks a
// multiprocessor the registers must allow; 1 by default).
//
// Row layout (long long): src (the element at coordinates 0), dst (VW-aligned), elements,
// first tile, then per dimension: shape, source stride (elements), division magic, shift.

#include "common.cuh"

#define TILE (THREADS * PER_THREAD)
#define ROW (4 + 4 * RANK)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
dmlops_pack(TABLE_ARG, int pieces, long long tiles)
{
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long* row = piece_of(TABLE, pieces, ROW, t);
        const T* __restrict__ src = (const T*)row[0];
        u8* __restrict__ dst = (u8*)row[1];
        const IDX count = (IDX)row[2];
        const IDX first = (IDX)((t - row[3]) * TILE);  // in vectors
        IDX shape[RANK], sstr[RANK];
        unsigned magic[RANK], shift[RANK];
        #pragma unroll
        for (int d = 0; d < RANK; ++d) {
            shape[d] = (IDX)row[4 + d];
            sstr[d] = (IDX)row[4 + RANK + d];
            magic[d] = (unsigned)row[4 + 2 * RANK + d];
            shift[d] = (unsigned)row[4 + 3 * RANK + d];
        }
        Vec out[PER_THREAD];
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {
            const IDX i0 = (first + (IDX)threadIdx.x + (IDX)k * THREADS) * V;
            if (i0 >= count) continue;
            const IDX left = count - i0;
            IDX c[RANK];
            IDX so = 0, q = i0;
            #pragma unroll
            for (int d = RANK - 1; d > 0; --d) {
                const IDX q2 = divide(q, shape[d], magic[d], shift[d]);
                c[d] = q - q2 * shape[d];
                so += c[d] * sstr[d];
                q = q2;
            }
            c[0] = q;
            so += q * sstr[0];
            #pragma unroll
            for (int e = 0; e < V; ++e) {
                if (e < left) out[k].e[e] = src[so];
                if (e + 1 < V) {  // the next element: the inner coordinate, carried outwards
                    so += sstr[RANK - 1];
                    if (++c[RANK - 1] == shape[RANK - 1]) {
                        c[RANK - 1] = 0;
                        so -= shape[RANK - 1] * sstr[RANK - 1];
                        #pragma unroll
                        for (int d = RANK - 2; d >= 0; --d) {
                            so += sstr[d];
                            if (++c[d] < shape[d]) break;
                            c[d] = 0;
                            so -= shape[d] * sstr[d];
                        }
                    }
                }
            }
        }
        #pragma unroll
        for (int k = 0; k < PER_THREAD; ++k) {  // the stores, once every load is issued
            const IDX j = first + (IDX)threadIdx.x + (IDX)k * THREADS;
            const IDX i0 = j * V;
            if (i0 >= count) continue;
            const IDX left = count - i0;
            if (left >= V) {
                *(VT*)(dst + (long long)j * VW) = out[k].v;
            } else {
                T* tail = (T*)(dst + (long long)j * VW);
                #pragma unroll
                for (int e = 0; e < V; ++e)
                    if (e < left) tail[e] = out[k].e[e];
            }
        }
    }
}
