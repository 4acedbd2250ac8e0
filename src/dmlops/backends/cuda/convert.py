"""CAST's converting copies on CUDA: each copy's source and destination as CuPy views of
the bound device addresses (their own strides), one elementwise kernel per type pair that
applies CAST's rules (`dmlops.conversion`: saturating float-to-integer truncation, NaN to
0, wrapping integer narrowing, nearest-even rounding to float types, one NaN), launched on the
call's stream."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...plan import Plan

__all__ = ["CudaConversion", "device_view"]


def _scaled_body(target: np.dtype[Any], scale: float, bias: float) -> str:
    """ELEMENT_WISE_IDENTITY's ScaleBias as `dmlops.conversion.scaled` rounds it: in float32
    (float64 for FLOAT64), the product rounded, then the sum (no fused multiply-add)."""
    bits = [int(np.array(v, np.float32).view(np.uint32)) for v in (scale, bias)]
    s, b = (f"__int_as_float({v:#x})" for v in bits)
    if target == np.float64:
        value = f"double v = __dadd_rn(__dmul_rn((double)x, (double){s}), (double){b});"
        nan = "__longlong_as_double(0x7FFFFFFFFFFFFFFFLL)"
    else:
        value = f"float v = __fadd_rn(__fmul_rn((float)x, {s}), {b});"
        nan = "__int_as_float(0x7FFFFFFF)"
    return f"{value} y = isnan(v) ? (Y){nan} : (Y)v;"


def _body(source: np.dtype[Any], target: np.dtype[Any]) -> str:
    """The elementwise kernel's statement turning `x` (source) into `y` (target)."""
    if target.kind == "f" and source.kind == "f":  # a NaN: the one NaN, every payload bit set
        nan = (
            "__longlong_as_double(0x7FFFFFFFFFFFFFFFLL)"
            if target == np.float64
            else "__int_as_float(0x7FFFFFFF)"  # (to float16: 0x7FFF)
        )
        return f"double v = (double)x; y = isnan(v) ? (Y){nan} : (Y)x;"
    if target.kind == "f" or source.kind in "iu":
        if target == np.float16 and source.kind in "iu" and source.itemsize == 8:
            return "y = (Y)(double)x;"  # (|x| past 2^24 is past float16's range anyway)
        return "y = (Y)x;"
    info = np.iinfo(target)
    low, high = f"{float(info.min)!r}", f"{float(info.max) + 1.0!r}"
    minimum = f"{info.min}LL" if target.kind == "i" else "0ULL"
    maximum = f"{info.max}ULL" if target.kind == "u" else f"{info.max}LL"
    if target == np.int64:
        minimum = "(-9223372036854775807LL - 1)"
    return (
        "double v = (double)x; "
        f"y = isnan(v) ? (Y)0 : v < {low} ? (Y)({minimum}) : v >= {high} ? (Y)({maximum}) "
        ": (Y)trunc(v);"
    )


def device_view(
    cp: Any,
    address: int,
    offset: int,
    strides: Sequence[int],
    shape: Sequence[int],
    dtype: Any,
    device: int,
) -> Any:
    """A CuPy array over bound device memory: elements of `dtype` at byte `offset` from
    `address`, `strides` in elements (negative ones too)."""
    size = int(np.dtype(dtype).itemsize)
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True)) * size
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True)) * size
    memory = cp.cuda.UnownedMemory(address + offset + low, high - low + size, None, device)
    pointer = cp.cuda.MemoryPointer(memory, -low)
    byte_strides = tuple(int(s) * size for s in strides)
    return cp.ndarray(tuple(shape), dtype, pointer, strides=byte_strides)


_C_TYPES = {
    "float32": "float", "float64": "double", "int8": "signed char", "uint8": "unsigned char",
    "int16": "short", "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
    "int64": "long long", "uint64": "unsigned long long",
}  # fmt: skip


def _flat_kernel(cp: Any, source: np.dtype[Any], target: np.dtype[Any], body: str) -> Any:
    """A grid-stride kernel applying `body` to packed arrays of two types without float16
    (CuPy's elementwise kernels index every element through its shape: ~1.6 x slower on the
    H100 for packed operands, measured), or None where a type has no C name here."""
    if source.name not in _C_TYPES or target.name not in _C_TYPES:
        return None
    code = f"""
typedef {_C_TYPES[source.name]} X;
typedef {_C_TYPES[target.name]} Y;
extern "C" __global__ void dmlops_cast_flat(const X* __restrict__ xs, Y* __restrict__ ys,
                                            long long n) {{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        X x = xs[i];
        Y y;
        {body}
        ys[i] = y;
    }}
}}
"""
    return cp.RawKernel(code, "dmlops_cast_flat")


class CudaConversion:
    """A converting plan on device addresses (CuPy views, one kernel per type pair)."""

    def __init__(self, backend: Any, plan: Plan) -> None:
        assert plan.conversion is not None
        self.backend = backend
        self.plan = plan
        self.source = np.dtype(plan.conversion[0])
        self.target = np.dtype(plan.conversion[1])
        self.kernel: Any = None
        self.flat: Any = None  # the packed operands' kernel (no float16 side)
        self.bound_views: dict[tuple[int, ...], tuple[bool, list[tuple[Any, Any]]]] = {}

    def __call__(self, ins: Sequence[int], outs: Sequence[int], queue: Any = None) -> None:
        backend = self.backend
        cp = backend.cupy
        device, stream = backend.default_queue() if queue is None else queue
        if self.kernel is None:
            scale_bias = self.plan.scale_bias
            body = (
                _body(self.source, self.target)
                if scale_bias is None
                else _scaled_body(self.target, *scale_bias)
            )
            self.kernel = cp.ElementwiseKernel("X x", "Y y", body, "dmlops_cast")
            self.flat = _flat_kernel(cp, self.source, self.target, body)
        key = (device, *ins, *outs)
        ready = self.bound_views.get(key)
        if ready is None:
            ready = self._views(cp, ins, outs, device)
            if len(self.bound_views) >= 64:  # (a few bindings kept: each holds two views)
                self.bound_views.clear()
            self.bound_views[key] = ready
        apart, pairs = ready
        with backend._on(device), cp.cuda.ExternalStream(stream, device):
            if apart:
                for src, dst in pairs:
                    packed = src.flags.c_contiguous and dst.flags.c_contiguous and src.size
                    if packed and self.flat is not None and self._flat(cp, src, dst):
                        continue
                    self.kernel(src, dst)
                return
            made = [self.kernel(src, cp.empty(src.shape, self.target)) for src, _ in pairs]
            for (_, dst), values in zip(pairs, made, strict=True):  # every read came first
                dst[...] = values

    def _flat(self, cp: Any, src: Any, dst: Any) -> bool:
        """The packed kernel over src into dst; False (and not again) where it does not
        compile here (the elementwise kernel then runs)."""
        blocks = min(4096, -(-src.size // 256))
        try:
            self.flat((blocks,), (256,), (src, dst, np.int64(src.size)))
        except cp.cuda.compiler.CompileException:
            self.flat = None
            return False
        return True

    def _views(
        self, cp: Any, ins: Sequence[int], outs: Sequence[int], device: int
    ) -> tuple[bool, list[tuple[Any, Any]]]:
        """Whether no output byte lies among the input bytes (then the kernel writes the
        outputs directly), and each copy's (source, destination) views."""
        plan = self.plan
        apart = not any(
            ins[i] + lo < outs[o] + hi2 and outs[o] + lo2 < ins[i] + hi
            for i, (lo, hi) in enumerate(plan.input_spans)
            for o, (lo2, hi2) in enumerate(plan.output_spans)
        )
        pairs = [
            (
                device_view(
                    cp, ins[c.src], c.src_offset, c.src_strides, c.shape, self.source, device
                ),
                device_view(
                    cp, outs[c.dst], c.dst_offset, c.dst_strides, c.shape, self.target, device
                ),
            )
            for c in plan.copies
        ]
        return apart, pairs

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs, queue)
