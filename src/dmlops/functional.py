"""The numpy-shaped API: DirectML operators applied to arrays.

Arrays of any layout go in through tensor strides (no hidden copy); fields
follow DirectML exactly (UINT fields reject negatives).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .backends import Backend, get_backend
from .errors import BindingError, DmlError
from .ops import JoinDesc, OperatorDesc, Slice1Desc, SliceDesc, SplitDesc
from .plan import Layout, Plan
from .tensor import BufferTensorDesc, DataType, FeatureLevel, int_tuple, packed_strides

__all__ = ["slice", "slice1", "split", "join", "backend_of"]


def _is_gpu_array(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return False
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        kind = int(dev()[0])
    except Exception:  # noqa: BLE001 - a foreign object's protocol may fail in any way
        return False
    return kind in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def backend_of(arrays: Sequence[Any]) -> Backend:
    """The backend that owns these arrays: 'cuda' for GPU arrays, else 'numpy'."""
    gpu = [_is_gpu_array(a) for a in arrays]
    if any(gpu) and not all(gpu):
        raise BindingError("arrays mix host (CPU) and GPU memory; put them on one device")
    return get_backend("cuda" if any(gpu) else "numpy")


class _Bound:
    """An array seen as a DirectML tensor: its desc, its layout in its span, its span."""

    def __init__(self, backend: Backend, array: Any) -> None:
        self.source = array
        self.array = backend.as_array(array)
        a = self.array
        if a.ndim == 0:
            raise DmlError("a 0-dimensional array has no DirectML tensor: use shape (1,)")
        self.flat, offset = backend.array_span(a)
        item = a.itemsize
        strides = tuple(s // item for s in a.strides)
        dt = DataType.from_numpy(a.dtype)
        self.desc = BufferTensorDesc(
            dt,
            a.shape,
            None if a.flags.c_contiguous else tuple(abs(s) for s in strides),
        )
        self.layout = Layout(offset, strides)

    @classmethod
    def placeholder(cls, shape: Sequence[int], dtype: Any) -> _Bound:
        """An output that cannot exist (a size below 1); validation reports it."""
        b = cls.__new__(cls)
        b.source = None
        b.array = None
        b.flat = None
        b.desc = BufferTensorDesc(DataType.from_numpy(dtype), tuple(shape))
        b.layout = Layout(0, packed_strides(shape))
        return b


@lru_cache(maxsize=512)
def _compile(
    desc: OperatorDesc,
    level: FeatureLevel,
    in_layouts: tuple[Layout, ...],
    out_layouts: tuple[Layout, ...],
) -> Plan:
    desc.validate(level)
    return desc.lower(in_layouts, out_layouts)


def _level(feature_level: FeatureLevel | int | str | None) -> FeatureLevel:
    return FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)


def _run(
    backend: Backend,
    desc: OperatorDesc,
    level: FeatureLevel,
    ins: Sequence[_Bound],
    outs: Sequence[_Bound],
) -> None:
    plan = _compile(desc, level, tuple(b.layout for b in ins), tuple(b.layout for b in outs))
    for b in outs:
        if not backend.is_writable(b.array):
            raise BindingError(f"{desc.OPERATOR}: an output array is read-only")
    backend.execute(plan, [b.flat for b in ins], [b.flat for b in outs])


def _out_bound(backend: Backend, out: Any, shape: Sequence[int], dtype: Any) -> _Bound:
    if out is not None:
        return _Bound(backend, out)
    if any(n <= 0 for n in shape):
        return _Bound.placeholder(shape, dtype)
    bound = _Bound(backend, backend.empty(tuple(shape), dtype))
    bound.source = None
    return bound


def _result(backend: Backend, bound: _Bound, template: Any) -> Any:
    """What the caller gets back: its own `out` array, or a new array of its library."""
    return bound.source if bound.source is not None else backend.like(bound.array, template)


def slice(  # noqa: A001 - DirectML's operator name
    x: Any,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
) -> Any:
    """DML SLICE: out[c] = x[offsets + strides * c], out shaped `sizes`."""
    backend = backend_of([x] if out is None else [x, out])
    xb = _Bound(backend, x)
    sz = int_tuple(sizes, "SLICE.Sizes")
    ob = _out_bound(backend, out, sz, xb.array.dtype)
    desc = SliceDesc(xb.desc, ob.desc, offsets, sz, strides)
    _run(backend, desc, _level(feature_level), [xb], [ob])
    return _result(backend, ob, x)


def slice1(
    x: Any,
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    output_sizes: Sequence[int] | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
) -> Any:
    """DML SLICE1: out[c] = x[CopyStart + window_strides * c]; default sizes MaxCopiedElements."""
    backend = backend_of([x] if out is None else [x, out])
    xb = _Bound(backend, x)
    probe = Slice1Desc(xb.desc, xb.desc, window_offsets, window_sizes, window_strides)
    if output_sizes is not None:
        shape = int_tuple(output_sizes, "SLICE1.OutputTensor.Sizes")
    elif out is not None:
        shape = tuple(out.shape)
    else:
        shape = probe.default_output_sizes()
    ob = _out_bound(backend, out, shape, xb.array.dtype)
    desc = Slice1Desc(
        xb.desc,
        ob.desc,
        probe.input_window_offsets,
        probe.input_window_sizes,
        probe.input_window_strides,
    )
    _run(backend, desc, _level(feature_level), [xb], [ob])
    return _result(backend, ob, x)


def split(
    x: Any,
    axis: int,
    sizes: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    outs: Sequence[Any] | None = None,
) -> list[Any]:
    """DML SPLIT: cut `x` along `axis` into pieces of `sizes`; returns the pieces."""
    backend = backend_of([x, *(outs or [])])
    xb = _Bound(backend, x)
    pieces = int_tuple(sizes, "SPLIT sizes")
    ax = int(axis)
    if outs is None:
        shapes = [tuple(p if d == ax else n for d, n in enumerate(xb.array.shape)) for p in pieces]
        obs = [_out_bound(backend, None, s, xb.array.dtype) for s in shapes]
    else:
        obs = [_Bound(backend, o) for o in outs]
    desc = SplitDesc(xb.desc, [b.desc for b in obs], ax)
    _run(backend, desc, _level(feature_level), [xb], obs)
    return [_result(backend, b, x) for b in obs]


def join(
    xs: Sequence[Any],
    axis: int,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
) -> Any:
    """DML JOIN: concatenate `xs` along `axis`."""
    xs = list(xs)
    backend = backend_of(xs if out is None else [*xs, out])
    xbs = [_Bound(backend, x) for x in xs]
    ax = int(axis)
    if out is None:
        if not xbs:
            raise DmlError("JOIN.InputCount is 0: must be greater than 0")
        first = xbs[0].array
        shape = list(first.shape)
        if 0 <= ax < first.ndim:
            shape[ax] = builtins.sum(b.array.shape[ax] if b.array.ndim > ax else 0 for b in xbs)
        ob = _out_bound(backend, None, shape, first.dtype)
    else:
        ob = _Bound(backend, out)
    desc = JoinDesc([b.desc for b in xbs], ob.desc, ax)
    _run(backend, desc, _level(feature_level), xbs, [ob])
    return _result(backend, ob, xs[0])
