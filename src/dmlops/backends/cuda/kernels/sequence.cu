// FILL_VALUE_SEQUENCE's values made on the device (a plan's tensor fill given by its rule,
// plan.ValueSequence): element i = start + delta * i in the output's type. Float types:
// the product, then the sum, each rounded in double (__dmul_rn / __dadd_rn: no fused
// multiply-add, as numpy's two steps), then rounded once to the type (cvt.rn). Integer
// types: modulo 2^64, then the type's low bits. Specialised at compile time:
//   YT  type code (convert.cu's): 0 float16, 1 float32, 3 int8, 4 uint8, 5 int16,
//       6 uint16, 7 int32, 8 uint32, 9 int64, 10 uint64
// float16 is written as its bits through PTX's cvt (no CUDA headers needed).

#include "types.cuh"

typedef PICK(YT) Y;

__device__ __forceinline__ Y element(long long i, double start, double delta,
                                     unsigned long long first, unsigned long long step)
{
#if YT == 0
    const double v = __dadd_rn(__dmul_rn((double)i, delta), start);
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(v));
    return h;
#elif YT == 1
    return __double2float_rn(__dadd_rn(__dmul_rn((double)i, delta), start));
#else
    return (Y)(first + (unsigned long long)i * step);
#endif
}

extern "C" __global__ void dmlops_sequence(Y* __restrict__ out, long long count, double start,
                                           double delta, unsigned long long first,
                                           unsigned long long step)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        out[i] = element(i, start, delta, first, step);
}
