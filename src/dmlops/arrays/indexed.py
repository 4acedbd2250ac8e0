"""The indexed operators on arrays (GATHER, GATHER_ELEMENTS, GATHER_ND, SCATTER_ELEMENTS,
SCATTER_ND, ONE_HOT, REVERSE_SUBSEQUENCES) with ONNX's argument conventions (numpy.take,
numpy.take_along_axis, GatherND's batch_dims, ScatterElements, ScatterND, OneHot): ranks are
padded with leading ones into one DirectML DimensionCount, negative axes count from the
end, results come back in the conventional shape; WebNN's clamped indices on request.

Like `dmlops.arrays.strided`, the layer the adapters build on: no torch routing here.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..backends.array_api import dlpack_only
from ..calls import (
    _MISS,
    _Call,
    _compile,
    _dispatch,
    _dtype_of,
    _quick_run,
    _Tensor,
    backend_of,
)
from ..elements import in_native_order
from ..errors import DmlError, IndexOutOfRangeError
from ..ops import (
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    GatherNdDesc,
    MaxUnpoolingDesc,
    OneHotDesc,
    OperatorDesc,
    ReverseSubsequencesDesc,
    ScatterElementsDesc,
    ScatterNdDesc,
)
from ..plan import Layout, Plan
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, int_tuple
from .strided import join

__all__ = [
    "gather",
    "gather_elements",
    "gather_nd",
    "scatter_elements",
    "scatter_nd",
    "one_hot",
    "reverse_subsequences",
]

Level = FeatureLevel | int | str | None
# what an operator's call plans: its input tensors padded to one rank, the padded output
# shape, and the descriptor made from the padded descriptions
Planned = tuple[list[_Tensor], tuple[int, ...], Callable[..., OperatorDesc]]


def _integer(value: Any, op: str, name: str) -> int:
    """An integer argument as an int (numpy's integers too); anything else refused."""
    try:
        return operator.index(value)
    except TypeError:
        raise DmlError(f"{op}: {name} {value!r} is not an integer") from None


def _axis(axis: int, rank: int, op: str) -> int:
    axis = _integer(axis, op, "axis")
    if not -rank <= axis < rank:
        raise DmlError(f"{op}: axis {axis} is outside [{-rank}, {rank})")
    return axis % rank


def _array(x: Any, like: Any) -> Any:
    """`x` (indices or lengths: values read) as an array of `like`'s library in this
    machine's byte order (lists and ints become int64 index arrays)."""
    if dlpack_only(x):  # (another library's host array, read through DLPack)
        x = np.from_dlpack(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return in_native_order(x)
    host = np.asarray(x, dtype=np.int64)
    if isinstance(like, np.ndarray):
        return host
    backend = backend_of([like])
    return host if backend.name == "numpy" else backend.upload(host)


def _native(x: Any, like: Any, key: Hashable | None) -> tuple[Any, Hashable | None]:
    """(`x` as `_array` makes it, the call's `_quick_run` signature: none where `x` was made
    anew, a byte-swapped copy, so that the call compiled for the copy is not found by the
    signature of the array it was made from)."""
    made = _array(x, like)
    return made, (key if made is x else None)


def _tensor(backend: Any, x: Any) -> tuple[_Tensor, int]:
    """`x` as a tensor (0-d arrays as shape [1]) and its own rank."""
    view = backend.describe(x)
    if view.ndim == 0:  # (described through the array's own 1-element view: a backend's
        # description of a GPU tensor need not reshape)
        return _Tensor.of_array(backend.describe(x.reshape(1))), 0
    return _Tensor.of_array(view), view.ndim


def _pad(t: _Tensor, rank: int) -> _Tensor:
    missing = rank - t.desc.dimension_count
    return t.with_ones(range(missing)) if missing > 0 else t


def _run(
    op: str,
    fields: Any,
    ins: list[Any],
    out: Any,
    level: Level,
    device: str | None,
    plan_call: Callable[[list[_Tensor], list[int]], Planned],
    like: int = 0,
    in_place: bool | None = None,
    clamp: bool = False,
    window: tuple[int, ...] | None = None,
    key: Hashable | None = None,
    edit: Callable[[Plan], Plan] | None = None,
) -> Any:
    """Run one indexed operator: `plan_call(tensors, ranks)` pads the arrays' tensors
    and gives (inputs, padded output shape, make); `fields` ends with the result's shape.
    `window`: the operator reads the box of these sizes at the data's origin (and, in place,
    writes the same box of the output); `key`: the call's `_quick_run` signature, if it has one."""
    shape = fields[-1]
    if in_place is not None and 0 in _shape_of(ins[1]) and 0 not in shape:
        return _unchanged(ins[0], out, level, device)  # a scatter of no updates

    def build(arrays: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of(arrays if outs[0] is None else [*arrays, outs[0]])
        described = [_tensor(backend, x) for x in arrays]
        tensors = [t for t, _ in described]
        ranks = [r for _, r in described]
        padded_in, padded_shape, make = plan_call(tensors, ranks)
        if window is not None:
            padded_in = [padded_in[0].window(window), *padded_in[1:]]
        if outs[0] is not None:
            given, _ = _tensor(backend, outs[0])
            if tuple(backend.describe(outs[0]).shape) != shape:
                raise DmlError(
                    f"{op}: out has shape {list(backend.describe(outs[0]).shape)}, the result "
                    f"{list(shape)}"
                )
            out_t = _pad(given, len(padded_shape))
            if window is not None and in_place:
                out_t = out_t.window(window)
            new: list[tuple[int, ...] | None] = [None]
        else:
            out_t = _Tensor.new(padded_shape, _dtype_of(backend, arrays[like]))
            new = [padded_shape]
        edits = edit if edit is not None else _editor(bool(in_place), clamp)
        call = _compile(
            backend,
            level,
            lambda i, o: make(i, o[0]),
            arrays,
            outs,
            new,
            _dtype_of(backend, arrays[like]),
            tensors=(padded_in, [out_t]),
            like=like,
            edit=edits,
        )
        call.result_shape = shape
        return call

    result = _dispatch(op, fields, level, ins, [out], build, device, key)[0]
    if out is not None:
        return out
    return result.reshape(shape) if tuple(result.shape) != shape else result


def _unchanged(x: Any, out: Any, level: Level, device: str | None) -> Any:
    """A scatter of no updates: x itself where it is `out`, else a copy of it."""
    if out is x:
        return out
    shape = _shape_of(x)
    flat = x.reshape(1) if not shape else x  # a 0-D array as its 1-element view
    copied = join([flat], 0, feature_level=level, out=out, device=device)
    return out if out is not None else copied.reshape(shape)


def _editor(in_place: bool, clamp: bool) -> Callable[[Plan], Plan] | None:
    """The changes a call makes to its operator's plan (None: none)."""
    if not (in_place or clamp):
        return None

    def edit(plan: Plan) -> Plan:
        if in_place:
            plan = _without_input_copy(plan)
        if clamp:
            plan = _clamped(plan)
        return plan

    return edit


def _clamped(plan: Plan) -> Plan:
    """WebNN's semantics: out-of-range indices clamped into their axis, never an error."""
    import dataclasses

    clamped = tuple(dataclasses.replace(c, clamp=True) for c in plan.indexed)
    return dataclasses.replace(plan, indexed=clamped)


def _without_input_copy(plan: Plan) -> Plan:
    """A scatter into its own input: the input-to-output copy is the identity, dropped."""
    import dataclasses

    kept = tuple(c for c in plan.copies if not (c.src == 0 and c.dst == 0))
    spans = list(plan.input_spans)
    spans[0] = (0, 0)
    return dataclasses.replace(plan, copies=kept, input_spans=tuple(spans))


def _window(
    op: str, data: tuple[int, ...], indices: tuple[int, ...], axis: int
) -> tuple[int, ...] | None:
    """The box of the data an ELEMENTS operator works on where indices are smaller than the
    data on dimensions other than the axis (ONNX, torch.gather and torch.scatter allow it;
    DirectML needs them equal): None where they are equal (or the ranks differ)."""
    if len(data) != len(indices) or not data:
        return None
    for d, (n, m) in enumerate(zip(data, indices, strict=True)):
        if d != axis and m > n:
            raise DmlError(
                f"{op}: indices have shape {list(indices)}: dimension {d} ({m}) is larger "
                f"than the data's ({n}); every dimension but the axis must be at most the data's"
            )
    box = tuple(n if d == axis else m for d, (n, m) in enumerate(zip(data, indices, strict=True)))
    return None if box == data or 0 in box else box


def _validate(op: str, indices: Any, bounds: tuple[int, ...]) -> None:
    """`validate_indices`: every index checked where it lies (numpy on the CPU; CuPy, or
    torch through CuPy, on the GPU; WebGPU arrays on the host), the first one outside
    [-n, n) raised as IndexOutOfRangeError naming its element and value. Bounds: one per
    position of the indices' last axis (GATHER_ND, SCATTER_ND), else one for every index.
    On a GPU this waits for the device (the caller asked for the check)."""
    if getattr(type(indices), "__dmlops_backend__", None) == "webgpu":
        values = indices.numpy()
    else:
        values = numpy_or_cupy(indices, f"{op}: validate_indices cannot read {type(indices)}")
    if values.size == 0:
        return
    xp = np if isinstance(values, np.ndarray) else _cupy()
    if values.dtype.kind == "u":  # (as int64, 64-bit unsigned indices could wrap negative)
        bad = values >= xp.asarray(bounds, dtype=values.dtype)
    else:
        limit = xp.asarray(bounds, dtype=xp.int64)
        bad = (values < -limit) | (values >= limit)
    flat = bad.reshape(-1)
    at = int(flat.argmax())
    if not bool(flat[at]):
        return
    value = int(values.reshape(-1)[at])
    n = bounds[at % len(bounds)]
    raise IndexOutOfRangeError(
        f"{op}.IndicesTensor: the index at element {at} is {value}, outside [{-n}, {n}) "
        "(validate_indices; nothing was written)"
    )


def _cupy() -> Any:
    import cupy

    return cupy


def _shape_of(x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else tuple(backend_of([x]).describe(x).shape)


def _options(
    level: Level, out: Any, device: str | None, clamp: bool, validate: bool
) -> dict[str, Any]:
    """A gather's or scatter's keyword arguments, as `dmlops.torch.moves.moved` passes them on."""
    return {
        "feature_level": level,
        "out": out,
        "device": device,
        "clamp_indices": clamp,
        "validate_indices": validate,
    }


def gather(
    input: Any,  # noqa: A002 - ONNX's argument name
    indices: Any,
    axis: int = 0,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
    clamp_indices: bool = False,
    validate_indices: bool = False,
) -> Any:
    """DML GATHER as numpy.take / ONNX Gather: input's entries along `axis` at `indices`;
    the result is shaped input[:axis] + indices.shape + input[axis+1:]. An index outside
    [-n, n) raises `IndexOutOfRangeError` on the CPU; with `clamp_indices` (WebNN's
    semantics, taken by every gather and scatter here) it is clamped into the axis instead.
    `validate_indices` (every gather and scatter here) checks the indices where they lie,
    GPUs included, before the call, and raises `IndexOutOfRangeError` naming the first bad
    one (on a GPU the check waits for the device; without it a GPU clamps reads and drops
    out-of-range scatters, as DirectML leaves them undefined).
    """
    key, done = _quick_run(
        ("GATHER", axis, clamp_indices, feature_level),
        [input, indices],
        out,
        device,
        validate_indices,
    )
    if done is not _MISS:
        return done
    indices, key = _native(indices, input, key)
    x_shape, i_shape = _shape_of(input), _shape_of(indices)
    a = _axis(axis, builtins.max(len(x_shape), 1), "GATHER")
    shape = x_shape[:a] + i_shape + x_shape[a + 1 :]
    if validate_indices and not clamp_indices:
        _validate("GATHER", indices, (x_shape[a] if x_shape else 1,))

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        r, q = ranks
        r = builtins.max(r, 1)  # (0-D data: its one element, as numpy.take and torch.take read it)
        rank = builtins.max(r, r + q - 1, 1)
        lead = rank - r
        padded = (1,) * (rank - len(shape)) + shape

        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return GatherDesc(i[0], i[1], o, a + lead, q)

        return [_pad(tensors[0], rank), _pad(tensors[1], rank)], padded, make

    fields = ("gather", a, clamp_indices, shape)
    return _run(
        "GATHER",
        fields,
        [input, indices],
        out,
        feature_level,
        device,
        plan_call,
        clamp=clamp_indices,
        key=key,
    )


def gather_elements(
    input: Any,  # noqa: A002
    indices: Any,
    axis: int = 0,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
    clamp_indices: bool = False,
    validate_indices: bool = False,
) -> Any:
    """DML GATHER_ELEMENTS as numpy.take_along_axis / ONNX GatherElements."""
    key, done = _quick_run(
        ("GATHER_ELEMENTS", axis, clamp_indices, feature_level),
        [input, indices],
        out,
        device,
        validate_indices,
    )
    if done is not _MISS:
        return done
    indices, key = _native(indices, input, key)
    shape = _shape_of(indices)
    a = _axis(axis, builtins.max(len(shape), 1), "GATHER_ELEMENTS")
    window = _window("GATHER_ELEMENTS", _shape_of(input), shape, a)
    if validate_indices and not clamp_indices:
        _validate("GATHER_ELEMENTS", indices, (_shape_of(input)[a] if shape else 1,))

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return GatherElementsDesc(i[0], i[1], o, a)

        return tensors, tuple(tensors[1].desc.sizes), make

    fields = ("gather_elements", a, clamp_indices, window, shape)
    return _run(
        "GATHER_ELEMENTS",
        fields,
        [input, indices],
        out,
        feature_level,
        device,
        plan_call,
        clamp=clamp_indices,
        window=window,
        key=key,
    )


def gather_nd(
    input: Any,  # noqa: A002
    indices: Any,
    batch_dims: int = 0,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
    clamp_indices: bool = False,
    validate_indices: bool = False,
) -> Any:
    """DML GATHER_ND (GATHER_ND1 with `batch_dims`) as ONNX GatherND: each index tuple along
    indices' last axis picks a sub-block of input.
    """
    key, done = _quick_run(
        ("GATHER_ND", batch_dims, clamp_indices, feature_level),
        [input, indices],
        out,
        device,
        validate_indices,
    )
    if done is not _MISS:
        return done
    indices, key = _native(indices, input, key)
    x_shape, i_shape = _shape_of(input), _shape_of(indices)
    if not i_shape:
        raise DmlError("GATHER_ND: indices need at least one dimension (the index tuple)")
    b = _integer(batch_dims, "GATHER_ND", "batch_dims")
    shape = x_shape[:b] + i_shape[b:-1] + x_shape[b + i_shape[-1] :]
    if validate_indices and not clamp_indices:
        _validate("GATHER_ND", indices, x_shape[b : b + i_shape[-1]])

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        r, q = ranks
        rank = builtins.max(r, q, len(shape), 1)
        padded = (1,) * (rank - len(shape)) + shape

        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            if b == 0:
                return GatherNdDesc(i[0], i[1], o, r, q)
            return GatherNd1Desc(i[0], i[1], o, r, q, b)

        return [_pad(tensors[0], rank), _pad(tensors[1], rank)], padded, make

    fields = ("gather_nd", b, clamp_indices, shape)
    return _run(
        "GATHER_ND",
        fields,
        [input, indices],
        out,
        feature_level,
        device,
        plan_call,
        clamp=clamp_indices,
        key=key,
    )


def scatter_elements(
    input: Any,  # noqa: A002
    indices: Any,
    updates: Any,
    axis: int = 0,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
    clamp_indices: bool = False,
    validate_indices: bool = False,
) -> Any:
    """DML SCATTER_ELEMENTS as ONNX ScatterElements (reduction none): a copy of input with
    updates written where indices say along `axis`; of two updates to one element the later
    (in indices' row-major order) wins. `out=input` updates input in place, costing only
    the updates.
    """
    key, done = _quick_run(
        ("SCATTER_ELEMENTS", axis, clamp_indices, feature_level),
        [input, indices, updates],
        out,
        device,
        validate_indices,
    )
    if done is not _MISS:
        return done
    indices, key = _native(indices, input, key)
    shape = _shape_of(input)
    a = _axis(axis, builtins.max(len(shape), 1), "SCATTER_ELEMENTS")
    window = _window("SCATTER_ELEMENTS", shape, _shape_of(indices), a)
    if validate_indices and not clamp_indices:
        _validate("SCATTER_ELEMENTS", indices, (shape[a] if shape else 1,))
    if window is not None and out is not input and 0 not in _shape_of(indices):
        # a copy of the data, then the updates written into its window in place
        result = _unchanged(input, out, feature_level, device)
        scatter_elements(
            result, indices, updates, axis, feature_level=feature_level, out=result,
            device=device, clamp_indices=clamp_indices, validate_indices=validate_indices,
        )  # fmt: skip
        return result

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return ScatterElementsDesc(i[0], i[1], i[2], o, a)

        return tensors, tuple(tensors[0].desc.sizes), make

    fields = ("scatter_elements", a, out is input, clamp_indices, window, shape)
    return _run(
        "SCATTER_ELEMENTS",
        fields,
        [input, indices, updates],
        out,
        feature_level,
        device,
        plan_call,
        in_place=out is input,
        clamp=clamp_indices,
        window=window,
        key=key,
    )


def scatter_nd(
    input: Any,  # noqa: A002
    indices: Any,
    updates: Any,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
    clamp_indices: bool = False,
    validate_indices: bool = False,
) -> Any:
    """DML SCATTER_ND as ONNX ScatterND (reduction none): a copy of input with each index
    tuple's sub-block replaced by updates; the later in index order wins. `out=input`
    updates input in place (a KV-cache write never copies the cache).
    """
    key, done = _quick_run(
        ("SCATTER_ND", clamp_indices, feature_level),
        [input, indices, updates],
        out,
        device,
        validate_indices,
    )
    if done is not _MISS:
        return done
    indices, key = _native(indices, input, key)
    shape = _shape_of(input)
    if validate_indices and not clamp_indices and _shape_of(indices):
        _validate("SCATTER_ND", indices, shape[: _shape_of(indices)[-1]])

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        r, q, u = ranks
        rank = builtins.max(r, q, u, 1)
        padded = [_pad(t, rank) for t in tensors]

        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return ScatterNdDesc(i[0], i[1], i[2], o, builtins.max(r, 1), builtins.max(q, 1))

        return padded, tuple(padded[0].desc.sizes), make

    fields = ("scatter_nd", out is input, clamp_indices, shape)
    return _run(
        "SCATTER_ND",
        fields,
        [input, indices, updates],
        out,
        feature_level,
        device,
        plan_call,
        in_place=out is input,
        clamp=clamp_indices,
        key=key,
    )


def one_hot(
    indices: Any,
    depth: int,
    values: Any,
    axis: int = -1,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML ONE_HOT as ONNX OneHot: `values` = [off, on]; the result has indices' shape with
    a dimension of `depth` inserted at `axis`; an index outside [-depth, depth) sets none.
    """
    key, done = _quick_run(("ONE_HOT", depth, axis, feature_level), [indices, values], out, device)
    if done is not _MISS:
        return done
    indices, key = _native(indices, values, key)
    i_shape = _shape_of(indices)
    a = _axis(axis, len(i_shape) + 1, "ONE_HOT")
    shape = (*i_shape[:a], _integer(depth, "ONE_HOT", "depth"), *i_shape[a:])

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        rank = len(shape)
        index = tensors[0] if ranks[0] else tensors[0].with_ones(())
        index = index.with_ones([a]) if ranks[0] else _pad(index, rank)
        vals = _pad(tensors[1], rank)

        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return OneHotDesc(i[0], i[1], o, a)

        return [index, vals], shape, make

    fields = ("one_hot", a, shape)
    return _run(
        "ONE_HOT", fields, [indices, values], out, feature_level, device, plan_call, like=1, key=key
    )


def numpy_or_cupy(array: Any, refusal: str) -> Any:
    """`array` as a numpy or CuPy array on its own device (torch tensors shared through numpy
    or DLPack); other kinds raise `refusal`."""
    module = type(array).__module__
    if isinstance(array, np.ndarray) or module.startswith("cupy"):
        return array
    if module.startswith("torch"):
        if not array.is_cuda:
            return array.numpy()
        import cupy

        return cupy.from_dlpack(array.contiguous())
    raise DmlError(refusal)


def cast_in_library(array: Any, dtype: str, low: int | None = None, high: int | None = None) -> Any:
    """`array` as `dtype` (clipped to [low, high] first where given) on its own device: numpy
    and CuPy arrays as they are, torch tensors by torch (CuPy where this torch cannot),
    WebGPU arrays (small index tensors) through the host."""
    if str(array.dtype).replace("torch.", "") == dtype:
        return array
    if getattr(type(array), "__dmlops_backend__", None) == "webgpu":
        import dmlops.webgpu

        return dmlops.webgpu.asarray(_clipped(array.numpy(), low, high).astype(dtype))
    if type(array).__module__.startswith("torch"):
        cast = _torch_cast(array, dtype, low, high)
        if cast is not None:
            return cast
    array = numpy_or_cupy(array, f"a {type(array).__name__} of {array.dtype} here must be {dtype}")
    return _clipped(array, low, high).astype(dtype)


def _torch_cast(t: Any, dtype: str, low: int | None, high: int | None) -> Any:
    """A torch tensor as `dtype` by torch itself (no CuPy to import on a CUDA tensor's first
    call): an integer type's bits as the unsigned type of their width as a view (numpy's
    astype keeps them as they are too), else clipped like `_clipped` and converted; None
    where this torch lacks the type or the conversion."""
    import torch

    target = getattr(torch, dtype, None)
    if not isinstance(target, torch.dtype):
        return None
    integer = not (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool)
    if integer:
        info = torch.iinfo(t.dtype)
        low = None if low is None or low <= info.min else low
        high = None if high is None or high >= info.max else high
        if (
            low is None
            and high is None
            and dtype.startswith("uint")
            and target.itemsize == t.dtype.itemsize
        ):
            return t.view(target)
    try:
        return (t if low is None and high is None else t.clamp(low, high)).to(target)
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _clipped(array: Any, low: int | None, high: int | None) -> Any:
    """A numpy or CuPy array clipped to [low, high], bounds its integer type holds anyway
    left out (numpy and CuPy refuse a bound outside the type: 2**32 - 1 for int8)."""
    if array.dtype.kind in "iu":
        info = np.iinfo(array.dtype)
        low = None if low is None or low <= info.min else low
        high = None if high is None or high >= info.max else high
    if low is None and high is None:
        return array
    return array.clip(low, high)


# the clip ufunc itself (np.clip wraps it in 5 µs of Python); numpy 1.x names its module core
_clip: Any = (getattr(np, "_core", None) or np.core).umath.clip


def _uint32_lengths(lengths: Any) -> Any:
    """Sequence lengths as UINT32 (DirectML's only type for them), negatives as 0."""
    if type(lengths) is np.ndarray and lengths.dtype.kind in "iu":  # numpy's ufuncs directly
        if lengths.dtype == np.uint32:
            return lengths
        if lengths.dtype.itemsize == 8:  # (one ufunc: a small call's cost is its ufuncs)
            return _clip(lengths, 0, 2**32 - 1).astype(np.uint32)
        low = np.maximum(lengths, 0) if lengths.dtype.kind == "i" else lengths
        return low.astype(np.uint32)
    return cast_in_library(lengths, "uint32", 0, 2**32 - 1)


def reverse_subsequences(
    input: Any,  # noqa: A002
    lengths: Any,
    axis: int = 0,
    batch_axis: int = 1,
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML REVERSE_SUBSEQUENCES as ONNX ReverseSequence: for each index b along `batch_axis`,
    the first lengths[b] elements along `axis` (the time axis) reversed, the rest copied;
    a length past the axis reverses all of it.
    """
    lengths = _array(lengths, input)
    own = _read_as_is(lengths)
    if own is None:
        lengths = _uint32_lengths(lengths)
    key, done = _quick_run(
        ("REVERSE_SUBSEQUENCES", axis, batch_axis, feature_level), [input, lengths], out, device
    )
    if done is not _MISS:
        return done
    shape = _shape_of(input)
    rank = len(shape)
    t = _axis(axis, builtins.max(rank, 1), "REVERSE_SUBSEQUENCES")
    b = _axis(batch_axis, builtins.max(rank, 1), "REVERSE_SUBSEQUENCES")
    if t == b:
        raise DmlError(f"REVERSE_SUBSEQUENCES: axis and batch_axis are both {t}")
    if _shape_of(lengths) != (shape[b],):
        raise DmlError(
            f"REVERSE_SUBSEQUENCES: lengths has shape {list(_shape_of(lengths))}: must be "
            f"[{shape[b]}] (the input's batch_axis {b})"
        )

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        padded = builtins.max(4, rank)
        lead = padded - rank
        x = _pad(tensors[0], padded)
        given = tensors[1]
        sizes = list(x.desc.sizes)
        sizes[lead + t] = 1
        strides = [0] * padded
        strides[lead + b] = given.layout.strides[0]
        # described as DirectML's UINT32 (the descriptor is validated so); lengths of
        # another type the kernels read as they are (`_lengths_read_as`)
        desc = BufferTensorDesc(DataType.UINT32, sizes, [abs(s) for s in strides])
        layout = Layout(given.layout.offset, tuple(strides))
        spread = _Tensor(desc, layout, given.low, given.nbytes, given.contiguous, given.writable)

        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return ReverseSubsequencesDesc(i[0], i[1], o, lead + t)

        return [x, spread], tuple(x.desc.sizes), make

    fields = ("reverse_subsequences", t, b, shape)
    return _run(
        "REVERSE_SUBSEQUENCES",
        fields,
        [input, lengths],
        out,
        feature_level,
        device,
        plan_call,
        key=key,
        edit=None if own is None or own is DataType.UINT32 else _lengths_read_as(own),
    )


# lengths of these types are read as they are (every backend's kernels read 32- and 64-bit
# indices, and a length is clamped into [0, the axis] either way, so a negative one is 0
# and one past 2**32 - 1 the whole axis, as after DirectML's UINT32 conversion); others
# are converted to UINT32 first
_LENGTHS_AS_IS = {
    "int32": DataType.INT32,
    "int64": DataType.INT64,
    "uint32": DataType.UINT32,
    "uint64": DataType.UINT64,
}


_NUMPY_LENGTHS_AS_IS = {np.dtype(name): kind for name, kind in _LENGTHS_AS_IS.items()}


def _read_as_is(lengths: Any) -> DataType | None:
    """The type REVERSE_SUBSEQUENCES reads these lengths as, without converting them (None:
    they are converted to UINT32). Numpy's, CuPy's and torch's type names alike; an array
    in the other byte order is converted."""
    dtype = getattr(lengths, "dtype", None)
    if isinstance(dtype, np.dtype):  # numpy's and CuPy's (a dtype's name is slow to make)
        return _NUMPY_LENGTHS_AS_IS.get(dtype)
    return _LENGTHS_AS_IS.get(str(dtype).rsplit(".", 1)[-1])  # torch.int64, ...


def _lengths_read_as(kind: DataType) -> Callable[[Plan], Plan]:
    """The plan edit that reads the lengths, described as UINT32, as `kind` instead: the
    indexed copy's index type and byte offset, and the lengths binding's byte span."""
    import dataclasses

    def edit(plan: Plan) -> Plan:
        ratio = kind.element_size // DataType.UINT32.element_size
        spans = list(plan.input_spans)
        for k in {c.index for c in plan.indexed}:  # (each lengths binding once)
            low, high = spans[k]
            spans[k] = (low * ratio, high * ratio)
        copies = tuple(
            dataclasses.replace(c, index_type=kind, index_offset=c.index_offset * ratio)
            for c in plan.indexed
        )
        return dataclasses.replace(plan, indexed=copies, input_spans=tuple(spans))

    return edit


def max_unpooling(
    input: Any,  # noqa: A002 - DirectML's field name
    indices: Any,
    output_sizes: Sequence[int],
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML MAX_UNPOOLING: a zeroed [N, C, H, W] array of `output_sizes` with input[c] written
    at indices[c], each index a position of the whole output read as one contiguous array
    (ONNX MaxUnpool's and MaxPool's Indices; torch's count within each (n, c) plane). Signed
    indices are read as unsigned (a negative one is out of range)."""
    indices = _array(indices, input)
    kind = str(indices.dtype).replace("torch.", "")
    if kind.startswith("int"):
        indices = cast_in_library(indices, "u" + kind)
    shape = int_tuple(output_sizes, "MAX_UNPOOLING.OutputTensor.Sizes")

    def plan_call(tensors: list[_Tensor], ranks: list[int]) -> Planned:
        def make(i: list[BufferTensorDesc], o: BufferTensorDesc) -> OperatorDesc:
            return MaxUnpoolingDesc(i[0], i[1], o)

        return [tensors[0], tensors[1]], shape, make

    return _run(
        "MAX_UNPOOLING",
        ("max_unpooling", shape),
        [input, indices],
        out,
        feature_level,
        device,
        plan_call,
    )
