// NONZERO_COORDINATES's stream compaction in three launches on one stream, no host wait:
//   dmlops_compact_count  each block's CHUNK elements of the box tested (-0.0 is zero, a NaN
//                         is not: the bits but the sign of a float), one mask byte each
//                         written and the block's count;
//   dmlops_compact_scan   one block: the counts turned into each block's first row, the
//                         total written to the count output;
//   dmlops_compact_write  each block's nonzero elements, in order, their coordinates written
//                         from the block's first row (a warp's ballot orders its lanes).
// Specialised at compile time: ES (element bytes), FLOAT (1: the sign bit ignored).
// Blocks have THREADS threads; a block covers ITEMS rounds of THREADS elements.

#include "common.cuh"

#define ITEMS 16
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
        const I c = rest % n;
        rest /= n;
        if (k >= 0) {
            dst[k * rows.column_stride] = (unsigned int)c;
            --k;
        }
    }
    for (; k >= 0; --k) dst[k * rows.column_stride] = 0u;
}

extern "C" __global__ void dmlops_compact_count(const Box box, const T* __restrict__ src,
                                                u8* __restrict__ mask,
                                                unsigned int* __restrict__ counts)
{
    const long long base = (long long)blockIdx.x * CHUNK;
    int count = 0;
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = base + (long long)j * THREADS + threadIdx.x;
        bool on = false;
        if (i < box.n) {
            const T v = src[box.narrow ? offset<int>(box, (int)i) : offset<long long>(box, i)];
            on = NONZERO(v);
            mask[i] = on;
        }
        count += __syncthreads_count(on);
    }
    if (threadIdx.x == 0) counts[blockIdx.x] = (unsigned int)count;
}

extern "C" __global__ void dmlops_compact_scan(unsigned int* __restrict__ counts,
                                               long long blocks,
                                               unsigned int* __restrict__ total)
{
    __shared__ unsigned int sums[WARPS];
    __shared__ unsigned int carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (long long start = 0; start < blocks; start += THREADS) {
        const long long i = start + threadIdx.x;
        const unsigned int v = i < blocks ? counts[i] : 0u;
        unsigned int x = v;  // inclusive scan within the warp
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned int y = __shfl_up_sync(0xffffffffu, x, o);
            if (lane >= o) x += y;
        }
        if (lane == 31) sums[warp] = x;
        __syncthreads();
        unsigned int before = carry + x - v;
        for (int w = 0; w < warp; ++w) before += sums[w];
        if (i < blocks) counts[i] = before;
        __syncthreads();  // (every read of sums and carry done)
        if (threadIdx.x == THREADS - 1) carry = before + v;
        __syncthreads();
    }
    if (threadIdx.x == 0) *total = carry;
}

extern "C" __global__ void dmlops_compact_write(const Rows rows, const u8* __restrict__ mask,
                                                const unsigned int* __restrict__ firsts,
                                                unsigned int* __restrict__ out)
{
    __shared__ unsigned int sums[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long base = (long long)blockIdx.x * CHUNK;
    long long row = firsts[blockIdx.x];
    for (int j = 0; j < ITEMS; ++j) {
        const long long i = base + (long long)j * THREADS + threadIdx.x;
        const bool on = i < rows.n && mask[i];
        const unsigned int ballot = __ballot_sync(0xffffffffu, on);
        if (lane == 0) sums[warp] = __popc(ballot);
        __syncthreads();
        long long at = row + __popc(ballot & ((1u << lane) - 1u));
        unsigned int round = 0;
        for (int w = 0; w < WARPS; ++w) {
            if (w < warp) at += sums[w];
            round += sums[w];
        }
        if (on) {
            unsigned int* dst = out + at * rows.row_stride;
            if (rows.n < 2147483648LL) coordinates<int>(rows, (int)i, dst);
            else coordinates<long long>(rows, i, dst);
        }
        row += round;
        __syncthreads();  // (sums read by every warp before the next round writes them)
    }
}
