// Indexed copies (gather / scatter): each item is one chunk of one row; a row is the last
// dimension when the index does not change along it, else one element. The meta table (int64):
//   [0] rank  [1] axes  [2] row length (elements)  [3] chunk bytes  [4] chunks per row
//   [5] scatter  [6] index type (0 int32, 1 int64, 2 uint32, 3 uint64)  [7] negative indices
//   [8] skip out-of-range  [9] element size  [10] tuple stride  [11] src offset (elements)
//   [12] dst offset  [13] index offset (index elements)  [14] row src stride  [15] row dst stride
//   [16 + 5d ..]: shape, src, dst, index, slot stride of outer dimension d (rank of them)
//   then per axis t: size, stride, slot stride
// Gathers clamp each index into its axis (reads stay inside the input); scatters drop a row
// whose index is out of range, and a row whose slot a later row also writes (winner table).
typedef unsigned char u8;

__device__ __forceinline__ long long read_index(const u8* base, long long at, int type, bool* huge)
{
    *huge = false;
    switch (type) {
    case 0: return (long long)((const int*)base)[at];
    case 1: return ((const long long*)base)[at];
    case 2: return (long long)((const unsigned int*)base)[at];
    default: {
        const unsigned long long v = ((const unsigned long long*)base)[at];
        *huge = v > 0x7fffffffffffffffULL;
        return (long long)v;
    }
    }
}

// the row's source and destination element offsets and its slot; false: the row is dropped
__device__ __forceinline__ bool locate(const long long* __restrict__ meta, const u8* idx,
    long long m, long long* src, long long* dst, long long* slot)
{
    const int rank = (int)meta[0];
    const int axes = (int)meta[1];
    long long s = meta[11], d = meta[12], x = meta[13], l = 0;
    const long long* dims = meta + 16;
    for (int k = rank - 1; k >= 0; --k) {
        const long long n = dims[5 * k];
        const long long c = m % n;
        m /= n;
        s += c * dims[5 * k + 1];
        d += c * dims[5 * k + 2];
        x += c * dims[5 * k + 3];
        l += c * dims[5 * k + 4];
    }
    const long long* ax = dims + 5 * rank;
    const bool scatter = meta[5] != 0;
    long long moved = 0;
    for (int t = 0; t < axes; ++t) {
        const long long size = ax[3 * t];
        bool huge;
        long long k = read_index(idx, x + t * meta[10], (int)meta[6], &huge);
        if (meta[7] && k < 0) k += size;
        const bool bad = huge || k < 0 || k >= size;
        if (bad) {
            if (scatter) return false;
            k = huge || k >= size ? size - 1 : 0;  // gathers read inside the input
        }
        moved += k * ax[3 * t + 1];
        l += k * ax[3 * t + 2];
    }
    if (scatter) d += moved; else s += moved;
    *src = s;
    *dst = d;
    *slot = l;
    return true;
}

extern "C" __global__ void dmlops_indexed_winner(const long long* __restrict__ meta,
    unsigned long long index, int* winner, long long rows)
{
    const u8* idx = (const u8*)index;
    for (long long m = blockIdx.x * (long long)blockDim.x + threadIdx.x; m < rows;
         m += (long long)gridDim.x * blockDim.x) {
        long long s, d, slot;
        if (locate(meta, idx, m, &s, &d, &slot)) atomicMax(winner + slot, (int)m);
    }
}

template <typename V>
__device__ __forceinline__ void move(const u8* from, u8* to) { *(V*)to = *(const V*)from; }

extern "C" __global__ void dmlops_indexed(const long long* __restrict__ meta,
    unsigned long long source, unsigned long long target, unsigned long long index,
    const int* winner, long long items)
{
    const u8* src_base = (const u8*)source;
    u8* dst_base = (u8*)target;
    const u8* idx = (const u8*)index;
    const long long chunks = meta[4];
    const long long chunk = meta[3];
    const long long es = meta[9];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < items;
         i += (long long)gridDim.x * blockDim.x) {
        const long long m = i / chunks;
        const long long c = i - m * chunks;
        long long s, d, slot;
        if (!locate(meta, idx, m, &s, &d, &slot)) continue;
        if (winner != nullptr && winner[slot] != (int)m) continue;
        const u8* from;
        u8* to;
        if (chunk == es) {  // element by element along the row, any strides
            from = src_base + (s + c * meta[14]) * es;
            to = dst_base + (d + c * meta[15]) * es;
        } else {  // a contiguous row moved in wide chunks
            from = src_base + s * es + c * chunk;
            to = dst_base + d * es + c * chunk;
        }
        switch (chunk) {
        case 1: move<unsigned char>(from, to); break;
        case 2: move<unsigned short>(from, to); break;
        case 4: move<unsigned int>(from, to); break;
        case 8: move<unsigned long long>(from, to); break;
        default: move<uint4>(from, to); break;
        }
    }
}
