// NONZERO_COORDINATES's stream compaction in three launches on one stream, no host wait:
//   dmlops_compact_count  each block's CHUNK elements of the box tested (-0.0 is zero, a NaN
//                         is not: the bits but the sign of a float), a warp's ballot a round
//                         written (one bit an element) and the block's count;
//   dmlops_compact_scan   one block: the counts turned into each block's first row, the
//                         total written to the count output;
//   dmlops_compact_write  each block's nonzero elements, in order, their coordinates written
//                         from the block's first row (the ballots order them).
// Specialised at compile time: ES (element bytes), FLOAT (1: the sign bit ignored).
// Blocks have THREADS threads; a block covers ITEMS rounds of THREADS elements, and each
// launch synchronises its block at most twice (no barrier a round).

#include "common.cuh"

#define ITEMS 32
#define CHUNK (THREADS * ITEMS)
#define WARPS (THREADS / 32)

#if FLOAT
#define NONZERO(v) ((T)((v) << 1) != 0)
#else
#define NONZERO(v) ((v) != 0)
#endif

// a box of up to eight dimensions: n elements, shape, strides in elements, rank, and
// whether every index and offset is below 2^31 (then found in 32-bit arithmetic)
struct Box { long long n; long long shape[8]; long long strides[8]; int rank; int narrow; };

// where coordinates go: the box's shape, row and column strides in UINT32s, columns
struct Rows { long long n; long long shape[8]; long long row_stride; long long column_stride; int rank; int columns; };

template <typename I>
__device__ __forceinline__ I offset(const Box& box, I i)
{
    I rest = i, at = 0;
    for (int k = box.rank - 1; k > 0; --k) {
        const I n = (I)box.shape[k];
        at += (rest % n) * (I)box.strides[k];
        rest /= n;
    }
    return at + rest * (I)box.strides[0];
}

// the last `columns` entries of element i's coordinates (zeros before them where there
// are more columns than dimensions) into dst, a column stride apart
template <typename I>
__device__ __forceinline__ void coordinates(const Rows& rows, I i, unsigned int* dst)
{
    I rest = i;
    int k = rows.columns - 1;
    for (int d = rows.rank - 1; d >= 0; --d) {
        const I n = (I)rows.shape[d];
        const I c = d ? rest % n : rest;  // (the first dimension's: what is left)
        rest = d ? rest / n : 0;
        if (k >= 0) {
            dst[k * rows.column_stride] = (unsigned int)c;
            --k;
        }
    }
    for (; k >= 0; --k) dst[k * rows.column_stride] = 0u;
}

extern "C" __global__ void dmlops_compact_count(const Box box, const T* __restrict__ src,
                                                unsigned int* __restrict__ bits,
                                                unsigned int* __restrict__ counts)
{
    __shared__ unsigned int sums[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long base = (long long)blockIdx.x * CHUNK + threadIdx.x;
    unsigned int* own = bits + (long long)blockIdx.x * (ITEMS * WARPS) + warp;
    unsigned int count = 0;
#pragma unroll
    for (int j0 = 0; j0 < ITEMS; j0 += 8) {  // eight loads in flight a thread
        T v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const long long i = base + (long long)(j0 + j) * THREADS;
            v[j] = 0;
            if (i < box.n) v[j] = src[box.narrow ? offset<int>(box, (int)i) : offset<long long>(box, i)];
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const unsigned int ballot = __ballot_sync(0xffffffffu, NONZERO(v[j]));
            if (lane == 0) own[(j0 + j) * WARPS] = ballot;
            count += __popc(ballot);
        }
    }
    if (lane == 0) sums[warp] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int total = 0;
        for (int w = 0; w < WARPS; ++w) total += sums[w];
        counts[blockIdx.x] = total;
    }
}

// one block: each thread sums four neighbouring counts, the block scans the sums, and each
// count becomes its block's first row (the counts before it); the total goes to `total`
extern "C" __global__ void dmlops_compact_scan(unsigned int* __restrict__ counts,
                                               long long blocks,
                                               unsigned int* __restrict__ total)
{
    __shared__ unsigned int sums[WARPS];
    __shared__ unsigned int carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (long long start = 0; start < blocks; start += 4 * THREADS) {
        const long long at = start + 4 * threadIdx.x;
        unsigned int v[4], own = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[k] = at + k < blocks ? counts[at + k] : 0u;
            own += v[k];
        }
        unsigned int x = own;  // inclusive scan within the warp
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned int y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o) x += y;
        }
        if (lane == 31) sums[warp] = x;
        __syncthreads();
        unsigned int before = carry + x - own;
        for (int w = 0; w < warp; ++w) before += sums[w];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (at + k < blocks) counts[at + k] = before;
            before += v[k];
        }
        __syncthreads();  // (every read of sums and carry done)
        if (threadIdx.x == THREADS - 1) carry = before;
        __syncthreads();
    }
    if (threadIdx.x == 0) *total = carry;
}

// each block's nonzero elements in element order: its (round, warp) ballots scanned by one
// warp, then each element's row from its ballot's slot and the lanes below it
extern "C" __global__ void dmlops_compact_write(const Rows rows,
                                                const unsigned int* __restrict__ bits,
                                                const unsigned int* __restrict__ firsts,
                                                unsigned int* __restrict__ out)
{
    __shared__ unsigned int ballots[ITEMS * WARPS];
    __shared__ unsigned int slots[ITEMS * WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int t = threadIdx.x; t < ITEMS * WARPS; t += THREADS)
        ballots[t] = bits[(long long)blockIdx.x * (ITEMS * WARPS) + t];
    __syncthreads();
    if (warp == 0) {  // exclusive scan of the ballots' counts in (round, warp) order
        const int per = ITEMS * WARPS / 32;
        unsigned int own = 0;
        for (int k = 0; k < per; ++k) own += __popc(ballots[lane * per + k]);
        unsigned int x = own;
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned int y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o) x += y;
        }
        unsigned int run = x - own;
        for (int k = 0; k < per; ++k) {
            slots[lane * per + k] = run;
            run += __popc(ballots[lane * per + k]);
        }
    }
    __syncthreads();
    const long long first = firsts[blockIdx.x];
    const long long base = (long long)blockIdx.x * CHUNK + threadIdx.x;
    const unsigned int below = (1u << lane) - 1u;
    const bool narrow = rows.n < 2147483648LL;
#pragma unroll 1
    for (int j = 0; j < ITEMS; ++j) {
        const unsigned int ballot = ballots[j * WARPS + warp];
        if ((ballot >> lane) & 1u) {
            const long long i = base + (long long)j * THREADS;
            const long long at = first + slots[j * WARPS + warp] + __popc(ballot & below);
            unsigned int* dst = out + at * rows.row_stride;
            if (narrow) coordinates<int>(rows, (int)i, dst);
            else coordinates<long long>(rows, i, dst);
        }
    }
}
