// Indexed copies of single elements over at most two outer dimensions, every offset an
// int (take_along_axis, GatherElements, a gather of scalars). A thread moves ELEMENTS_PER
// elements of one walk row, a block's width apart (each load and store instruction of a
// warp is contiguous): their index reads are issued together, then their source reads, so
// 2 x ELEMENTS_PER loads are in flight per thread, with no division and no meta walk.
// Specialised at compile time: INDEX (0 int32, 1 int64, 2 uint32, 3 uint64), ELEMENT
// (bytes: 1, 2, 4, 8), ELEMENTS_PER. The walk travels by value:
//   [0] rows  [1] cols  [2] src row stride  [3] src col stride  [4] dst row stride
//   [5] dst col stride  [6] index row stride  [7] index col stride  [8] axis size
//   [9] axis stride  [10] src offset  [11] dst offset  [12] index offset
//   [13] flags (1: negative indices count from the end; 2: clamped first into
//        [-size, size - 1], WebNN)
// An index still outside the axis reads its nearest end (reads stay inside the input), as
// the general indexed kernel does.

#if INDEX == 0
typedef int index_t;
#elif INDEX == 1
typedef long long index_t;
#elif INDEX == 2
typedef unsigned int index_t;
#else
typedef unsigned long long index_t;
#endif

#if ELEMENT == 1
typedef unsigned char element_t;
#elif ELEMENT == 2
typedef unsigned short element_t;
#elif ELEMENT == 4
typedef unsigned int element_t;
#else
typedef unsigned long long element_t;
#endif

struct Walk { int v[16]; };

__device__ __forceinline__ int along(index_t raw, int size, int flags)
{
#if INDEX == 3
    bool huge = raw > 0x7fffffffffffffffULL;
#else
    bool huge = false;
#endif
    long long k = (long long)raw;
    if (flags & 2) {
        if (huge || k >= size) { huge = false; k = size - 1; }
        else if (k < -size) k = -size;
    }
    if ((flags & 1) && k < 0) k += size;
    if (huge || k >= size) return size - 1;
    return k < 0 ? 0 : (int)k;
}

extern "C" __global__ void dmlops_indexed_elements(const Walk walk,
    const element_t* __restrict__ src, element_t* __restrict__ dst,
    const index_t* __restrict__ idx)
{
    const int* v = walk.v;
    const int rows = v[0], cols = v[1];
    const int first = blockIdx.x * blockDim.x * ELEMENTS_PER + threadIdx.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        index_t raw[ELEMENTS_PER];
#pragma unroll
        for (int j = 0; j < ELEMENTS_PER; ++j) {
            const int c = first + j * blockDim.x;
            if (c < cols) raw[j] = __ldcs(idx + v[12] + r * v[6] + c * v[7]);
        }
        element_t e[ELEMENTS_PER];
#pragma unroll
        for (int j = 0; j < ELEMENTS_PER; ++j) {
            const int c = first + j * blockDim.x;
            if (c < cols) e[j] = __ldg(src + v[10] + r * v[2] + c * v[3] + along(raw[j], v[8], v[13]) * v[9]);
        }
#pragma unroll
        for (int j = 0; j < ELEMENTS_PER; ++j) {
            const int c = first + j * blockDim.x;
            if (c < cols) dst[v[11] + r * v[4] + c * v[5]] = e[j];
        }
    }
}
