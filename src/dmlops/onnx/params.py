"""ONNX operator parameters as DirectML fields: Slice windows, Split sizes, axes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = ["slice_window", "split_sizes", "axis_of", "is_integer_type"]


def is_integer_type(dtype: Any) -> bool:
    """Whether an array's dtype (numpy, CuPy or torch) is an integer type."""
    kind = getattr(dtype, "kind", None)  # numpy and CuPy dtypes
    if kind is not None:
        return bool(kind in "iu")
    try:
        return np.dtype(str(dtype).removeprefix("torch.")).kind in "iu"
    except TypeError:
        return False


def axis_of(axis: int, rank: int, op: str) -> int:
    """An ONNX axis (negative counts from the end) as a dimension index."""
    if not -rank <= axis < rank:
        raise ModelError(f"{op}: axis {axis} is outside [-{rank}, {rank - 1}]")
    return axis + rank if axis < 0 else axis


_INT64_MAX = 2**63 - 1


def slice_window(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None = None,
    steps: Sequence[int] | None = None,
) -> tuple[list[int], list[int], list[int], list[int]]:
    """ONNX Slice as SLICE1 fields: window offsets, window sizes, window strides, output shape.

    Follows the ONNX operator's clamping (negative indices count from the end,
    INT64 sentinels mean 'to the end'); an output size of 0 is returned as 0.
    """
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ModelError("Slice: starts, ends, axes and steps must have the same length")
    offsets, sizes, strides, out = [0] * rank, list(shape), [1] * rank, list(shape)
    seen: set[int] = set()
    for s, e, a, k in zip(starts, ends, axes, steps, strict=True):
        a = axis_of(int(a), rank, "Slice")
        if a in seen:
            raise ModelError(f"Slice: axis {a} repeated")
        seen.add(a)
        if k == 0:
            raise ModelError("Slice: steps may not be 0")
        n = shape[a]
        s, e = int(s), int(e)
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if k > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
            count = max(0, -(-(e - s) // k))
            first = s
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            count = max(0, -(-(s - e) // -k))
            first = s - (count - 1) * -k  # the window's lowest index
        out[a] = count
        strides[a] = k
        if count:
            offsets[a] = first
            sizes[a] = (count - 1) * abs(k) + 1
    return offsets, sizes, strides, out


def split_sizes(
    dim: int, outputs: int, split: Sequence[int] | None, num_outputs: int | None
) -> list[int]:
    """Each output's size along the axis, from ONNX's split input/attribute or num_outputs."""
    if split is not None:
        sizes = [int(v) for v in split]
        if len(sizes) != outputs or sum(sizes) != dim or min(sizes, default=0) < 0:
            raise ModelError(
                f"Split: split {sizes} does not cut a dimension of {dim} into {outputs}"
            )
        return sizes
    n = num_outputs if num_outputs is not None else outputs
    if n != outputs or n <= 0:
        raise ModelError(f"Split: num_outputs {n} but the node has {outputs} outputs")
    if num_outputs is None:
        if dim % n:
            raise ModelError(f"Split: {dim} does not split into {n} equal parts")
        return [dim // n] * n
    chunk = -(-dim // n)
    sizes = [min(chunk, max(0, dim - i * chunk)) for i in range(n)]
    return sizes


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes by name, as Python values."""
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def unsqueeze_axes(axes: Sequence[int] | None, rank: int) -> list[int]:
    """Unsqueeze's axes, normalized and sorted: each once, inside the output's rank."""
    if not axes:
        raise ModelError("Unsqueeze: axes are required and may not be empty")
    out_rank = rank + len(axes)
    at = sorted(axis_of(int(d), out_rank, "Unsqueeze") for d in axes)
    if len(set(at)) != len(at):
        raise ModelError(f"Unsqueeze: axes {list(axes)} name an axis twice")
    return at
