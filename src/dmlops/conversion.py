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

__all__ = ["convert", "CANONICAL_NAN"]

CANONICAL_NAN = np.array(0x7FFFFFFFFFFFFFFF, np.uint64).view(np.float64)
"""float64's positive NaN with every payload bit set: as float32 0x7FFFFFFF, as float16
0x7FFF (a narrowing keeps the payload's top bits)."""


def convert(values: np.ndarray[Any, Any], dtype: Any) -> np.ndarray[Any, Any]:
    """`values` as `dtype` by CAST's rules (a new array)."""
    target = np.dtype(dtype)
    source = values.dtype
    if target.kind == "f" or source.kind in "iu":  # (integer to integer: numpy wraps)
        with np.errstate(over="ignore", invalid="ignore"):
            made: np.ndarray[Any, Any] = values.astype(target)
        if source.kind == "f" and target.kind == "f":
            made[np.isnan(values)] = CANONICAL_NAN.astype(target)
        return made
    info = np.iinfo(target)
    wide = values.astype(np.float64)  # exact for float16, float32 and float64
    whole = np.trunc(np.nan_to_num(wide, nan=0.0, posinf=np.inf, neginf=-np.inf))
    low, high = float(info.min), float(info.max) + 1.0  # (2^bits-1 and 2^63 are exact)
    out = np.empty(values.shape, target)
    inside = (whole >= low) & (whole < high)
    with np.errstate(invalid="ignore"):
        out[inside] = whole[inside].astype(target)
    out[whole < low] = info.min
    out[whole >= high] = info.max
    return out
