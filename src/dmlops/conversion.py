"""DirectML CAST's element conversion, as dmlops defines it where the page is silent.

CAST's page gives no rounding or range rules; dmlops follows Direct3D's (which DirectML's
shaders obey) and IEEE 754:

- to a float type: round to nearest, ties to even; past the type's range, an infinity of
  the value's sign; a NaN becomes the type's positive quiet NaN with every payload bit set
  (0x7FFF, 0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF: CUDA's own; GPUs and CPUs keep different payload
  bits through a conversion, so CAST's answer is one every backend gives).
- float to integer: truncate toward zero; past the type's range, its minimum or maximum
  (saturation, Direct3D's ftoi / ftou); NaN is 0.
- integer to integer: the value's low bits in two's complement (wrapping), as C, numpy and
  torch convert.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["convert", "convert_into", "scaled", "CANONICAL_NAN"]

CANONICAL_NAN = np.array(0x7FFFFFFFFFFFFFFF, np.uint64).view(np.float64)
"""float64's positive NaN with every payload bit set: as float32 0x7FFFFFFF, as float16
0x7FFF (a narrowing keeps the payload's top bits)."""


def convert(values: np.ndarray[Any, Any], dtype: Any) -> np.ndarray[Any, Any]:
    """`values` as `dtype` by CAST's rules (a new array)."""
    out: np.ndarray[Any, Any] = np.empty(values.shape, np.dtype(dtype))
    convert_into(values, out)
    return out


def convert_into(values: np.ndarray[Any, Any], out: np.ndarray[Any, Any]) -> None:
    """`values` converted by CAST's rules into `out` (of their shape; memory of its own)."""
    target, source = out.dtype, values.dtype
    with np.errstate(over="ignore", invalid="ignore"):
        np.copyto(out, values, casting="unsafe")  # (C's conversion: right where in range)
    if not values.size or source.kind not in "f":  # (integer sources: numpy wraps)
        return
    if target.kind == "f":
        if _has_nan(values):
            out[np.isnan(values)] = CANONICAL_NAN.astype(target)
        return
    info = np.iinfo(target)
    # the limits are powers of two, exact in the source's type (float16's range lies inside
    # every 32- and 64-bit integer type's: compared in float64 there)
    seen = values.astype(np.float64) if source.itemsize < 4 else values
    kind = seen.dtype.type
    low, high = kind(float(info.min)), kind(float(info.max) + 1.0)
    lowest = seen.min()  # (NaN where any element is NaN)
    if not np.isnan(lowest) and lowest >= low and seen.max() < high:
        return
    with np.errstate(invalid="ignore"):
        out[seen >= high] = info.max
        out[seen < low] = info.min
        out[np.isnan(seen)] = 0


def _has_nan(values: np.ndarray[Any, Any]) -> bool:
    """Whether any element is a NaN: float16's from its bits (numpy reduces float16 in
    software: its min took 3x the conversion itself), others from their minimum."""
    if values.dtype.itemsize == 2 and values.dtype.kind == "f" and values.dtype.isnative:
        bits = values.view(np.uint16)
        return bool(((bits & 0x7FFF) > 0x7C00).any())
    return bool(np.isnan(values.min()))


def scaled(values: np.ndarray[Any, Any], scale: float, bias: float) -> np.ndarray[Any, Any]:
    """ELEMENT_WISE_IDENTITY's ScaleBias, x * Scale + Bias, as dmlops computes it: Scale and
    Bias are FLOATs; a FLOAT32 or FLOAT16 element is computed in float32, a FLOAT64 one in
    float64, the product rounded, then the sum (no fused multiply-add), and a FLOAT16 result
    rounded once more to its type."""
    wide = np.float64 if values.dtype == np.float64 else np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        product = np.multiply(values.astype(wide), wide(np.float32(scale)))
        made: np.ndarray[Any, Any] = np.add(product, wide(np.float32(bias)))
    return made
