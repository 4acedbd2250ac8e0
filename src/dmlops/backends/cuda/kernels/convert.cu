// CAST's converting copy (dmlops.conversion's rules) of one strided box: every element of
// type X read, converted, written as type Y. Specialised at compile time:
//   XT, YT  type codes: 0 float16, 1 float32, 2 float64, 3 int8, 4 uint8, 5 int16,
//           6 uint16, 7 int32, 8 uint32, 9 int64, 10 uint64
//   MODE    0 CAST's conversion; 1 ELEMENT_WISE_IDENTITY's ScaleBias (float types, X = Y;
//           SCALE and BIAS are float32 bit patterns as ints); 2 the bits moved (X = Y)
// float16 is carried as its bits and converted with PTX's cvt (no CUDA headers needed).
// The box travels by value: n elements, shape, each side's strides in elements, rank.

#define IS_FLOAT(t) ((t) <= 2)

#include "types.cuh"

typedef PICK(XT) X;
typedef PICK(YT) Y;

struct Box {
    long long n;
    long long shape[8];
    long long src[8];
    long long dst[8];
    int rank;
    int narrow;  // (1: every index and offset below 2^31)
};

__device__ __forceinline__ float half_to_float(unsigned short h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short half_from_double(double d)
{
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}

__device__ __forceinline__ unsigned short half_from_float(float f)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

#if XT == 0
__device__ __forceinline__ double widened(X x) { return (double)half_to_float(x); }
#else
__device__ __forceinline__ double widened(X x) { return (double)x; }
#endif

// a value (already NaN-free where Y is an integer type) rounded once into Y
#if YT == 0
#define NAN_Y ((Y)0x7FFF)
__device__ __forceinline__ Y narrowed(double v) { return half_from_double(v); }
__device__ __forceinline__ Y narrowed(float v) { return half_from_float(v); }
#elif YT == 1
#define NAN_Y __int_as_float(0x7FFFFFFF)
__device__ __forceinline__ Y narrowed(double v) { return (float)v; }
__device__ __forceinline__ Y narrowed(float v) { return v; }
#elif YT == 2
#define NAN_Y __longlong_as_double(0x7FFFFFFFFFFFFFFFLL)
__device__ __forceinline__ Y narrowed(double v) { return v; }
#endif

// float to integer: truncation toward zero, saturating at the type's limits, NaN to 0
#if YT == 3
#define LOW -128.0
#define HIGH 128.0
#define MIN_Y ((Y)-128)
#define MAX_Y ((Y)127)
#elif YT == 4
#define LOW 0.0
#define HIGH 256.0
#define MIN_Y ((Y)0)
#define MAX_Y ((Y)255)
#elif YT == 5
#define LOW -32768.0
#define HIGH 32768.0
#define MIN_Y ((Y)-32768)
#define MAX_Y ((Y)32767)
#elif YT == 6
#define LOW 0.0
#define HIGH 65536.0
#define MIN_Y ((Y)0)
#define MAX_Y ((Y)65535)
#elif YT == 7
#define LOW -2147483648.0
#define HIGH 2147483648.0
#define MIN_Y ((Y)(-2147483647 - 1))
#define MAX_Y ((Y)2147483647)
#elif YT == 8
#define LOW 0.0
#define HIGH 4294967296.0
#define MIN_Y ((Y)0u)
#define MAX_Y ((Y)4294967295u)
#elif YT == 9
#define LOW -9223372036854775808.0
#define HIGH 9223372036854775808.0
#define MIN_Y ((Y)(-9223372036854775807LL - 1))
#define MAX_Y ((Y)9223372036854775807LL)
#elif YT == 10
#define LOW 0.0
#define HIGH 18446744073709551616.0
#define MIN_Y ((Y)0ull)
#define MAX_Y ((Y)18446744073709551615ull)
#endif

__device__ __forceinline__ Y converted(X x)
{
#if MODE == 2
    return x;
#elif MODE == 1
#if YT == 2
    const double v = __dadd_rn(__dmul_rn(x, (double)__int_as_float(SCALE)),
                               (double)__int_as_float(BIAS));
#else
    const float v = __fadd_rn(__fmul_rn((float)widened(x), __int_as_float(SCALE)),
                              __int_as_float(BIAS));
#endif
    return isnan(v) ? NAN_Y : narrowed(v);
#elif IS_FLOAT(YT) && IS_FLOAT(XT)
    const double v = widened(x);  // (exact)
    return isnan(v) ? NAN_Y : narrowed(v);
#elif IS_FLOAT(YT)  // from an integer: one rounding (int64 to float32 directly, not via double)
#if YT == 0
    return half_from_double((double)x);  // (exact in double below 2^53; past it, infinity)
#else
    return (Y)x;
#endif
#elif IS_FLOAT(XT)
    const double v = widened(x);
    return isnan(v) ? (Y)0 : v < LOW ? MIN_Y : v >= HIGH ? MAX_Y : (Y)trunc(v);
#else
    return (Y)x;  // integers: the low bits, two's complement
#endif
}

// A warp moves a tile of one row: up to 128 elements of the last dimension, four a lane,
// their loads issued together; the row's offsets found once a tile (in 32-bit arithmetic
// where every offset fits, `narrow`).
template <typename I>
__device__ __forceinline__ void walk(const Box& box, const X* __restrict__ src,
                                     Y* __restrict__ dst)
{
    const int last = box.rank - 1;
    const I inner = (I)box.shape[last];
    const I chunks = (inner + 127) / 128;
    const I tiles = (I)(box.n / box.shape[last]) * chunks;
    const I lane = threadIdx.x & 31;
    const I warps = ((I)gridDim.x * blockDim.x) >> 5;
    const I si = (I)box.src[last], di = (I)box.dst[last];
    for (I t = ((I)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < tiles; t += warps) {
        const I row = t / chunks;
        const I first = (t - row * chunks) * 128 + lane;
        I rest = row, from = 0, to = 0;
        for (int k = last - 1; k > 0; --k) {
            const I n = (I)box.shape[k];
            const I c = rest % n;
            rest /= n;
            from += c * (I)box.src[k];
            to += c * (I)box.dst[k];
        }
        if (last > 0) {
            from += rest * (I)box.src[0];
            to += rest * (I)box.dst[0];
        }
        X x[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const I c = first + 32 * k;
            if (c < inner) x[k] = src[from + c * si];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const I c = first + 32 * k;
            if (c < inner) dst[to + c * di] = converted(x[k]);
        }
    }
}

extern "C" __global__ void dmlops_convert(const Box box, const X* __restrict__ src,
                                          Y* __restrict__ dst)
{
    if (box.narrow) walk<int>(box, src, dst);
    else walk<long long>(box, src, dst);
}
