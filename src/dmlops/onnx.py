"""ONNX adapter: Slice, Split, Concat (and Identity) lowered onto SLICE1, SPLIT and JOIN.

ONNX allows empty results where DirectML forbids size 0; such outputs are
produced empty without a DirectML dispatch, as a DirectML backend must.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._files import DEFAULT_MAX_FILE_BYTES, read_bounded
from .device import Device
from .errors import ModelError
from .onnx_graph import GRAPH_OPS as SUPPORTED_OPS
from .onnx_graph import _axis

__all__ = ["run", "compile", "load", "slice_window", "split_sizes", "SUPPORTED_OPS"]

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


def run(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> list[Any]:
    """Run an ONNX model of Slice, Split, Concat, Identity, Transpose, Reshape, Squeeze,
    Unsqueeze and Flatten nodes as one compiled graph; returns its outputs.

    `model` is a ModelProto, its bytes, or the path of a regular file of at most
    max_file_bytes."""
    compiled, values = _prepare(model, inputs, device, max_file_bytes)
    result: list[Any] = compiled.run(values)
    return result


def compile(  # noqa: A001 - the ONNX verb
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Any:
    """The model lowered into one dmlops Graph for these inputs' shapes (see onnx_graph)."""
    return _prepare(model, inputs, device, max_file_bytes)[0]


def load(model: Any, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Any:
    """A ModelProto from a ModelProto, bytes or a path; any unreadable input is a ModelError."""
    import onnx

    if isinstance(model, (str, Path)):
        data = read_bounded(model, max_file_bytes)
        where = f"{model}: "
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data, where = bytes(model), ""
    elif isinstance(model, onnx.ModelProto):
        return model
    else:
        raise ModelError(f"ONNX model: expected a ModelProto, bytes or a path, not {type(model)}")
    try:
        return onnx.load_from_string(data)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeError, ...
        raise ModelError(f"{where}not an ONNX model ({type(e).__name__}: {e})") from None


def _prepare(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> tuple[Any, dict[str, Any]]:
    from .onnx_graph import compile_model

    model = load(model, max_file_bytes)
    device = device or Device()
    backend = device.backend

    def place(a: Any) -> Any:
        """The array on the device, contiguous (a graph binds whole buffers)."""
        if backend.name == "numpy":
            return np.ascontiguousarray(a)
        if isinstance(a, np.ndarray):
            return backend.upload(a)
        contiguous = getattr(a, "is_contiguous", None)  # torch
        if contiguous is not None:
            return a if contiguous() else a.contiguous()
        arr = backend.as_array(a)
        return arr if arr.flags.c_contiguous else backend.copy_of(arr)

    graph = model.graph
    initialized = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in initialized]
    if isinstance(inputs, Mapping):
        for n in names:
            if n not in inputs:
                raise ModelError(f"ONNX model input '{n}' was not given")
        values = {n: place(inputs[n]) for n in names}
    else:
        if len(inputs) != len(names):
            raise ModelError(f"ONNX model takes {len(names)} inputs, {len(inputs)} given")
        values = {n: place(v) for n, v in zip(names, inputs, strict=True)}
    key = _signature(model, values, device)
    cached = _COMPILED.get(key)
    if cached is None or cached[0] is not model:
        cached = (model, compile_model(model, values, device))
        _COMPILED[key] = cached
        while len(_COMPILED) > _COMPILED_MODELS:
            _COMPILED.popitem(last=False)
    return cached[1], values


_COMPILED_MODELS = 64
_COMPILED: OrderedDict[tuple[Any, ...], tuple[Any, Any]] = OrderedDict()


def _signature(model: Any, values: Mapping[str, Any], device: Device) -> tuple[Any, ...]:
    """A compiled model is reused for the same model object, device, input shapes and dtypes,
    and the same values of small integer inputs (which may be Slice or Reshape parameters)."""
    parts: list[Any] = [id(model), id(device)]
    for name, v in values.items():
        parts.append((name, tuple(v.shape), str(v.dtype)))
        kind = np.dtype(str(v.dtype).replace("torch.", "")).kind
        if math.prod(tuple(v.shape)) <= 64 and kind in "iu":
            if hasattr(v, "get"):
                host = v.get()  # CuPy
            elif hasattr(v, "cpu"):
                host = v.cpu().numpy()  # torch
            else:
                host = np.asarray(v)
            parts.append(tuple(np.asarray(host).ravel().tolist()))
    return tuple(parts)
