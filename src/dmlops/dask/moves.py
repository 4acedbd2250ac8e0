"""The strided operators on dask arrays: each result composed through earlier ones into one
layer of chunk tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import calls
from ..arrays import strided
from ..elements import encode, word_element
from ..ops import (
    DepthToSpace1Desc,
    ElementWiseIdentityDesc,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from ..tensor import BufferTensorDesc, FeatureLevel
from ._chunks import (
    _build,
    _dask,
    _empty,
    _host_empty,
    _tensor,
    _validated,
)


def slice(  # noqa: A001 - DirectML's operator name
    x: Any,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE on a dask array (see dmlops.slice), lazily."""
    if 0 in x.shape:
        shape = strided.slice(_host_empty(x), offsets, sizes, strides).shape
        return _empty(x, shape)
    desc = SliceDesc(_tensor(x), _tensor(x, sizes), offsets, sizes, strides)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "slice")[0]


def slice1(
    x: Any,
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    output_sizes: Sequence[int] | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE1 on a dask array (see dmlops.slice1), lazily.

    >>> import numpy as np, dask.array as da, dmlops.dask as dd
    >>> x = da.from_array(np.arange(8, dtype=np.float32), chunks=3)
    >>> dd.slice1(x, [0], [8], [-3]).compute().tolist()
    [7.0, 4.0, 1.0]
    """
    if 0 in x.shape:
        args = (window_offsets, window_sizes, window_strides, output_sizes)
        return _empty(x, strided.slice1(_host_empty(x), *args, feature_level=feature_level).shape)
    t = _tensor(x)
    probe = Slice1Desc(t, t, window_offsets, window_sizes, window_strides)
    shape = probe.default_output_sizes() if output_sizes is None else tuple(output_sizes)
    desc = Slice1Desc(t, _tensor(x, shape), window_offsets, window_sizes, window_strides)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "slice1")[0]


def split(
    x: Any,
    axis: int,
    sizes: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> list[Any]:
    """DML SPLIT on a dask array (see dmlops.split), lazily; one dask array per piece (an
    empty piece, as numpy's, where a size is 0)."""
    if 0 in x.shape or 0 in sizes:
        empties = strided.split(_host_empty(x), axis, sizes, feature_level=feature_level)
        kept = [s for s in sizes if s]
        found = iter(split(x, axis, kept, feature_level=feature_level, chunks=chunks) if kept
                     and 0 not in x.shape else [])  # fmt: skip
        return [_empty(x, e.shape) if 0 in e.shape else next(found) for e in empties]
    shapes = [[p if d == axis else n for d, n in enumerate(x.shape)] for p in sizes]
    desc = SplitDesc(_tensor(x), [_tensor(x, s) for s in shapes], axis)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "split")


def join(
    xs: Sequence[Any],
    axis: int,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML JOIN on dask arrays (see dmlops.join), lazily."""
    xs = list(xs)
    if not xs:
        return strided.join([], axis)  # raises the array layer's error
    if any(0 in x.shape for x in xs):  # empty pieces add nothing (numpy's concatenate)
        joined = strided.join([_host_empty(x) for x in xs], axis, feature_level=feature_level)
        kept = [x for x in xs if 0 not in x.shape]
        if 0 in joined.shape or not kept:
            return _empty(xs[0], joined.shape)
        return join(kept, axis, feature_level=feature_level, chunks=chunks)
    shape = list(xs[0].shape)
    if 0 <= axis < len(shape):
        shape[axis] = sum(x.shape[axis] if x.ndim > axis else 0 for x in xs)
    desc = JoinDesc([_tensor(x) for x in xs], _tensor(xs[0], shape), axis)
    level = _validated(desc, feature_level)
    return _build(desc, xs, level, chunks, "join")[0]


def _unary(
    desc_of: Any,
    x: Any,
    feature_level: FeatureLevel | int | str | None,
    chunks: Any,
    token: str,
    on_host: Any,
) -> Any:
    """A one-input operator on a dask array, lazily: `desc_of(input desc)` its descriptor,
    `on_host(empty numpy array)` the array layer's call (an empty input's answer)."""
    if 0 in x.shape:
        answer = on_host(_host_empty(x))
        if 0 in answer.shape:
            return _empty(x, answer.shape)
        return _dask().from_array(answer, chunks=-1)  # (a constant: no element of x read)
    desc = desc_of(_tensor(x))
    (_, out), *_ = desc.output_fields()
    if 0 in out.sizes:  # an empty result (DirectML's tensors have none): its rules, then it
        calls.check_empty(desc)
        return _empty(x, out.sizes)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, token)[0]


def tile(
    x: Any,
    repeats: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML TILE on a dask array (see dmlops.tile), lazily: each output chunk reads the
    input chunks its repeats cover."""
    counts = tuple(int(r) for r in repeats)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return TileDesc(t, _tensor(x, TileDesc.output_sizes_for(x.shape, counts)), counts)

    def on_host(e: Any) -> Any:
        return strided.tile(e, counts, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "tile", on_host)


def padding(
    x: Any,
    start_padding: Sequence[int],
    end_padding: Sequence[int],
    mode: Any = "CONSTANT",
    value: float | int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML PADDING1 on a dask array (see dmlops.padding), every mode, lazily: the constant
    is written where no input chunk reaches, the mirrored and repeated edges read the chunks
    they mirror."""
    start, end = tuple(start_padding), tuple(end_padding)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        grown = Padding1Desc.output_sizes_for(x.shape, start, end)
        d = Padding1Desc(t, _tensor(x, grown), mode, None, value, start, end)
        element = word_element(x.dtype, "dmlops.dask")
        if element.data_type is None or element.data_type != t.data_type:  # carried bits
            return d.carrying(element.size, encode(value, element, "PADDING1.PaddingValue"))
        return d

    def on_host(e: Any) -> Any:
        return strided.padding(e, start, end, mode, value, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "padding", on_host)


def _depth_space(
    op: str,
    x: Any,
    block_size: int,
    order: Any,
    feature_level: FeatureLevel | int | str | None,
    chunks: Any,
) -> Any:
    cls = DepthToSpace1Desc if op == "depth_to_space" else SpaceToDepth1Desc

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return cls(t, _tensor(x, cls.output_sizes_for(t, block_size, order)), block_size, order)

    def on_host(e: Any) -> Any:
        call = strided.depth_to_space if op == "depth_to_space" else strided.space_to_depth
        return call(e, block_size, order, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, op, on_host)


def depth_to_space(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML DEPTH_TO_SPACE1 on a dask array (see dmlops.depth_to_space), lazily."""
    return _depth_space("depth_to_space", x, block_size, order, feature_level, chunks)


def space_to_depth(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SPACE_TO_DEPTH1 on a dask array (see dmlops.space_to_depth), lazily."""
    return _depth_space("space_to_depth", x, block_size, order, feature_level, chunks)


def slice_grad(
    input_gradient: Any,
    output_sizes: Sequence[int],
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE_GRAD on a dask array (see dmlops.slice_grad), lazily: zeros where the
    window does not reach."""
    window = (window_offsets, window_sizes, window_strides)
    x = input_gradient

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return SliceGradDesc(t, _tensor(x, output_sizes), *window)

    def on_host(e: Any) -> Any:
        return strided.slice_grad(e, output_sizes, *window, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "slice_grad", on_host)


def upsample_2d(
    x: Any,
    scale_size: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML UPSAMPLE_2D (nearest) on a dask array (see dmlops.upsample_2d), lazily."""
    scale = tuple(int(s) for s in scale_size)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return Upsample2dDesc(t, _tensor(x, Upsample2dDesc.output_sizes_for(x.shape, scale)), scale)

    def on_host(e: Any) -> Any:
        return strided.upsample_2d(e, scale, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "upsample_2d", on_host)


def element_wise_identity(
    x: Any, *, feature_level: FeatureLevel | int | str | None = None, chunks: Any = None
) -> Any:
    """DML ELEMENT_WISE_IDENTITY on a dask array: x as it is, rechunked where `chunks`
    says (a chunk that is a source chunk is an alias)."""

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return ElementWiseIdentityDesc(t, _tensor(x))

    def on_host(e: Any) -> Any:
        return strided.element_wise_identity(e, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "identity", on_host)
