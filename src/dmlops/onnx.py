"""ONNX adapter: Slice, Split, Concat (and Identity) lowered onto SLICE1, SPLIT and JOIN.

ONNX allows empty results where DirectML forbids size 0; such outputs are
produced empty without a DirectML dispatch, as a DirectML backend must.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import functional
from .device import Device
from .errors import ModelError

__all__ = ["run", "slice_window", "split_sizes", "SUPPORTED_OPS"]

SUPPORTED_OPS = ("Slice", "Split", "Concat", "Identity")
_INT64_MAX = 2**63 - 1


def _axis(axis: int, rank: int, op: str) -> int:
    if not -rank <= axis < rank:
        raise ModelError(f"{op}: axis {axis} is outside [-{rank}, {rank - 1}]")
    return axis + rank if axis < 0 else axis


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
        a = _axis(int(a), rank, "Slice")
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


def _empty_like(x: Any, shape: Sequence[int]) -> Any:
    if isinstance(x, np.ndarray):
        return np.empty(tuple(shape), dtype=x.dtype)
    import cupy

    return cupy.empty(tuple(shape), dtype=x.dtype)


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _ints(x: Any) -> list[int]:
    if x is None:
        return []
    arr = x if isinstance(x, np.ndarray) else x.get()
    return [int(v) for v in np.asarray(arr).ravel()]


def _slice(node: Any, args: list[Any], opset: int, level: Any) -> list[Any]:
    a = _attrs(node)
    x = args[0]
    if opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = _ints(args[1]), _ints(args[2])
        axes = _ints(args[3]) if len(args) > 3 and args[3] is not None else None
        steps = _ints(args[4]) if len(args) > 4 and args[4] is not None else None
    offsets, sizes, strides, out = slice_window(x.shape, starts, ends, axes, steps)
    if 0 in out:
        return [_empty_like(x, out)]
    return [functional.slice1(x, offsets, sizes, strides, out, feature_level=level)]


def _split(node: Any, args: list[Any], opset: int, level: Any) -> list[Any]:
    a = _attrs(node)
    x = args[0]
    axis = _axis(int(a.get("axis", 0)), x.ndim, "Split")
    split = (
        a.get("split")
        if opset < 13
        else (_ints(args[1]) if len(args) > 1 and args[1] is not None else None)
    )
    sizes = split_sizes(x.shape[axis], len(node.output), split, a.get("num_outputs"))
    shapes = [tuple(s if d == axis else n for d, n in enumerate(x.shape)) for s in sizes]
    nonempty = [s for s in sizes if s > 0]
    if not nonempty:
        return [_empty_like(x, sh) for sh in shapes]
    pieces = (
        iter(functional.split(x, axis, nonempty, feature_level=level))
        if 0 not in x.shape
        else iter([])
    )
    return [
        next(pieces) if s > 0 and 0 not in x.shape else _empty_like(x, sh)
        for s, sh in zip(sizes, shapes, strict=True)
    ]


def _concat(node: Any, args: list[Any], opset: int, level: Any) -> list[Any]:
    axis = int(_attrs(node)["axis"])
    first = args[0]
    axis = _axis(axis, first.ndim, "Concat")
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in args)
    parts = [x for x in args if x.size > 0]
    if not parts or 0 in shape:
        return [_empty_like(first, shape)]
    return [functional.join(parts, axis, feature_level=level)]


_HANDLERS = {"Slice": _slice, "Split": _split, "Concat": _concat}


def run(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None = None,
) -> list[Any]:
    """Run an ONNX model made of Slice, Split, Concat and Identity nodes; returns its outputs."""
    import onnx
    from onnx import numpy_helper

    if isinstance(model, (str, Path)):
        model = onnx.load(str(model))
    elif isinstance(model, bytes):
        model = onnx.load_from_string(model)
    device = device or Device()
    cuda = device.backend.name == "cuda"

    def place(a: Any) -> Any:
        a = np.asarray(a) if not cuda else a
        if cuda:
            import cupy

            return cupy.asarray(a)
        return a

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    graph = model.graph
    values: dict[str, Any] = {i.name: place(numpy_helper.to_array(i)) for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in values]
    if isinstance(inputs, Mapping):
        for n in names:
            if n not in inputs:
                raise ModelError(f"ONNX model input '{n}' was not given")
        values.update({n: place(inputs[n]) for n in names})
    else:
        if len(inputs) != len(names):
            raise ModelError(f"ONNX model takes {len(names)} inputs, {len(inputs)} given")
        values.update({n: place(v) for n, v in zip(names, inputs, strict=True)})
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS:
            raise ModelError(
                f"ONNX node '{node.name or node.op_type}': {node.op_type} is not one of "
                + ", ".join(SUPPORTED_OPS)
            )
        args = [values[n] if n else None for n in node.input]
        outs = (
            [args[0]]
            if node.op_type == "Identity"
            else _HANDLERS[node.op_type](node, args, opset, device.feature_level)
        )
        values.update(zip(node.output, outs, strict=True))
    return [values[o.name] for o in graph.output]
