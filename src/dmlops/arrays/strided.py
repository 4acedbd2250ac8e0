"""The strided operators on arrays (SLICE, SLICE1, SLICE_GRAD, SPLIT, JOIN, TILE, PADDING1,
DEPTH_TO_SPACE1, SPACE_TO_DEPTH1): each call's fields made into DirectML's descriptor and
run through the call machinery (`dmlops.calls`), with numpy's conventions for empty arrays.

This is the layer every adapter builds on (the functional API, the torch wing, WebNN, Dask,
the ONNX steps); it never routes torch tensors through torch's dispatcher (the functional
API does, for autograd and torch.compile): a torch tensor here runs as any other array.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..backends import get_backend
from ..calls import (
    _WINDOW,
    _Call,
    _compile,
    _dims,
    _dispatch,
    _dtype_of,
    _empty_like,
    _fields_key,
    _filled,
    _level,
    _on_device,
    _shape,
    _Tensor,
    backend_of,
    cache_size,
    check_empty_gradient,
    clear_cache,
)
from ..errors import DmlError, InvalidDescriptorError
from ..ops import (
    CastDesc,
    DepthSpaceOrder,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    DiagonalMatrix1Desc,
    DiagonalMatrixDesc,
    ElementWiseIdentityDesc,
    FillValueConstantDesc,
    FillValueSequenceDesc,
    JoinDesc,
    NonzeroCoordinatesDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    PaddingMode,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SpaceToDepthDesc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from ..tensor import BufferTensorDesc, FeatureLevel, int_tuple

__all__ = [
    "slice",
    "slice1",
    "slice_grad",
    "split",
    "join",
    "tile",
    "padding",
    "depth_to_space",
    "space_to_depth",
    "backend_of",
    "clear_cache",
    "cache_size",
]


def _unary(
    op: str,
    fields: Hashable,
    x: Any,
    out: Any,
    feature_level: Any,
    device: str | None,
    shape_of: Callable[[Any], tuple[int, ...]],
    make: Callable[[BufferTensorDesc, BufferTensorDesc], OperatorDesc],
    fill: Any = None,
) -> Any:
    """Run a one-input, one-output operator: `shape_of(x's description)` gives the output's
    sizes where no `out` is given, `make(input desc, output desc)` its descriptor, `fill`
    the constant it writes."""

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0]] if outs[0] is None else [ins[0], outs[0]])
        shape = shape_of(backend.describe(ins[0])) if outs[0] is None else None
        return _compile(
            backend,
            feature_level,
            lambda i, o: make(i[0], o[0]),
            ins,
            outs,
            [shape],
            _dtype_of(backend, ins[0]),
            fill=fill,
        )

    return _dispatch(op, fields, feature_level, [x], [out], build, device)[0]


def _depth_space(
    cls: type[DepthToSpace1Desc] | type[SpaceToDepth1Desc],
    x: Any,
    block_size: int,
    order: Any,
    feature_level: Any,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DEPTH_TO_SPACE1 or SPACE_TO_DEPTH1 (at a feature level older than theirs, 2_1, and
    the DCR order: the first versions, DEPTH_TO_SPACE or SPACE_TO_DEPTH)."""
    first: type[DepthToSpaceDesc] | type[SpaceToDepthDesc] | None = None
    if (
        _level(feature_level) < cls.SUPPORT[0].level
        and DepthSpaceOrder.parse(order, f"{cls.OPERATOR}.Order")
        is DepthSpaceOrder.DEPTH_COLUMN_ROW
    ):
        first = DepthToSpaceDesc if cls is DepthToSpace1Desc else SpaceToDepthDesc

    def shape_of(view: Any) -> tuple[int, ...]:
        return cls.output_sizes_for(_Tensor.of_array(view).desc, block_size, order)

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if first is not None:  # (no Order field)
            return first(i, o, block_size)
        return cls(i, o, block_size, order)

    fields = (_fields_key(block_size), order if isinstance(order, (int, str)) else repr(order))
    op = cls.OPERATOR if first is None else first.OPERATOR
    return _unary(op, fields, x, out, feature_level, device, shape_of, make)


def tile(
    x: Any,
    repeats: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML TILE: x repeated `repeats[i]` times along each dimension i (a 0-D array with no
    repeats: itself, copied, as numpy.tile and torch.tile answer)."""
    counts = int_tuple(repeats, "TILE.Repeats")
    if not counts and _shape(x) == ():
        flat_out = None if out is None else out.reshape(1)
        once = tile(x.reshape(1), [1], feature_level=feature_level, out=flat_out, device=device)
        return out if out is not None else once.reshape(())
    return _unary(
        "TILE",
        _fields_key(repeats),
        x,
        out,
        feature_level,
        device,
        lambda view: TileDesc.output_sizes_for(_dims(view), counts),
        lambda i, o: TileDesc(i, o, counts),
    )


def padding(
    x: Any,
    start_padding: Sequence[int],
    end_padding: Sequence[int],
    mode: Any = "CONSTANT",
    value: float | int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML PADDING1: x with start_padding / end_padding elements added along each dimension,
    filled by `mode`: CONSTANT (`value`), EDGE, REFLECTION, SYMMETRIC or WRAP. At a feature
    level older than PADDING1's (5_0), DML PADDING (its FLOAT value converted to the type)."""
    first = _level(feature_level) < Padding1Desc.SUPPORT[0].level
    op = PaddingDesc.OPERATOR if first else Padding1Desc.OPERATOR
    start = int_tuple(start_padding, f"{op}.StartPadding")
    end = int_tuple(end_padding, f"{op}.EndPadding")
    shape = _shape(x)
    grown = Padding1Desc.output_sizes_for(shape, start, end)
    if 0 in shape and 0 not in grown and PaddingMode.parse(mode) is PaddingMode.CONSTANT:
        # nothing of x is read: the value tiled (as numpy.pad and torch's constant pad do)
        if len(start) != len(shape) or len(end) != len(shape):
            raise InvalidDescriptorError(
                f"{op}.StartPadding and EndPadding have {len(start)} and {len(end)} "
                f"entries: the input has {len(shape)} dimensions"
            )
        seed = _filled(x, value, len(shape))
        return tile(seed, grown, feature_level=feature_level, out=out, device=device)
    mode_key = mode if isinstance(mode, (int, str)) else repr(mode)
    fields = (_fields_key(start, end), mode_key, repr(value), type(value))

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if first:
            return PaddingDesc(i, o, mode, value, start, end)
        return Padding1Desc(i, o, mode, None, value, start, end)

    return _unary(
        op,
        fields,
        x,
        out,
        feature_level,
        device,
        lambda view: Padding1Desc.output_sizes_for(_dims(view), start, end),
        make,
        value,
    )


def slice(  # noqa: A001 - DirectML's operator name
    x: Any,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML SLICE: out[c] = x[offsets + strides * c], out shaped `sizes`."""

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        return SliceDesc(i, o, offsets, int_tuple(sizes, "SLICE.Sizes"), strides)

    fields = _fields_key(offsets, sizes, strides)
    return _unary(
        "SLICE",
        fields,
        x,
        out,
        feature_level,
        device,
        lambda _: int_tuple(sizes, "SLICE.Sizes"),
        make,
    )


def slice1_sizes(desc: Slice1Desc) -> tuple[int, ...]:
    """SLICE1's default output sizes (MaxCopiedElements), an empty window's (of an empty
    input) included: DirectML's check refuses it, its definition gives sizes with a 0."""
    sizes, strides = desc.input_window_sizes, desc.input_window_strides
    if 0 in sizes and 0 not in strides:
        return tuple(-(-w // builtins.abs(t)) for w, t in zip(sizes, strides, strict=False))
    return desc.default_output_sizes()


def slice1(
    x: Any,
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    output_sizes: Sequence[int] | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML SLICE1: out[c] = x[CopyStart + window_strides * c]; default sizes
    MaxCopiedElements."""

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0]] if outs[0] is None else [ins[0], outs[0]])
        probe_desc = _Tensor.of_array(backend.describe(ins[0])).desc
        probe = Slice1Desc(probe_desc, probe_desc, window_offsets, window_sizes, window_strides)
        if output_sizes is not None:
            shape: tuple[int, ...] | None = int_tuple(output_sizes, "SLICE1.OutputTensor.Sizes")
        elif outs[0] is not None:
            shape = None
        else:
            shape = slice1_sizes(probe)
        if outs[0] is not None and shape is not None:
            given = tuple(backend.describe(outs[0]).shape)
            if given != shape:
                raise DmlError(
                    f"SLICE1.OutputTensor.Sizes: output_sizes {list(shape)} differ from "
                    f"out's shape {list(given)}"
                )
        return _compile(
            backend,
            feature_level,
            lambda i, o: Slice1Desc(
                i[0],
                o[0],
                probe.input_window_offsets,
                probe.input_window_sizes,
                probe.input_window_strides,
            ),
            ins,
            outs,
            [shape if outs[0] is None else None],
            _dtype_of(backend, ins[0]),
        )

    fields = _fields_key(window_offsets, window_sizes, window_strides, output_sizes)
    return _dispatch("SLICE1", fields, feature_level, [x], [out], build, device)[0]


def slice_grad(
    input_gradient: Any,
    output_sizes: Sequence[int],
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML SLICE_GRAD: SLICE1's backward pass. Returns a tensor of `output_sizes` (the forward
    input's shape) holding input_gradient[c] at window_offsets' CopyStart + window_strides * c
    and zeros elsewhere.
    """
    window = (window_offsets, window_sizes, window_strides)

    shape = int_tuple(output_sizes, "SLICE_GRAD.OutputGradientTensor.Sizes")
    if 0 in _shape(input_gradient) and 0 not in shape:
        # an empty window: nothing is scattered, the output is zeros (a zero tiled)
        window_fields = [
            int_tuple(v, f"SLICE_GRAD.{n}") for n, v in zip(_WINDOW, window, strict=True)
        ]
        check_empty_gradient(_shape(input_gradient), shape, window_fields)
        seed = _filled(input_gradient, 0, len(shape))
        return tile(seed, shape, feature_level=feature_level, out=out, device=device)

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if tuple(o.sizes) != shape:
            raise DmlError(
                f"SLICE_GRAD.OutputGradientTensor.Sizes: output_sizes {list(shape)} differ "
                f"from out's shape {list(o.sizes)}"
            )
        return SliceGradDesc(i, o, window_offsets, window_sizes, window_strides)

    fields = _fields_key(output_sizes, window_offsets, window_sizes, window_strides)
    return _unary(
        "SLICE_GRAD", fields, input_gradient, out, feature_level, device, lambda _: shape, make
    )


def split(
    x: Any,
    axis: int,
    sizes: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    outs: Sequence[Any] | None = None,
    device: str | None = None,
) -> list[Any]:
    """DML SPLIT: cut `x` along `axis` into pieces of `sizes`; returns the pieces."""
    given = (
        [None] * (len(sizes) if isinstance(sizes, Sequence) else 0) if outs is None else list(outs)
    )
    counts = int_tuple(sizes, "SPLIT sizes")
    if 0 in counts and builtins.any(counts):  # empty pieces: the others split, these made
        kept = [k for k, n in enumerate(counts) if n]
        got = split(
            x,
            axis,
            [counts[k] for k in kept],
            feature_level=feature_level,
            outs=None if outs is None else [given[k] for k in kept],
            device=device,
        )
        if outs is not None:
            return given
        made: list[Any] = [None] * len(counts)
        for k, g in zip(kept, got, strict=True):
            made[k] = g
        shape = list(_shape(got[0]))
        if 0 <= int(axis) < len(shape):
            shape[int(axis)] = 0
        return [g if g is not None else _empty_like(got[0], tuple(shape)) for g in made]

    def build(ins: list[Any], outs_: list[Any]) -> _Call:
        backend = backend_of([ins[0], *(o for o in outs_ if o is not None)])
        pieces = int_tuple(sizes, "SPLIT sizes")
        ax = int(axis)
        if outs is None or (outs_ and all(o is None for o in outs_)):  # pieces to allocate
            whole = _dims(backend.describe(ins[0]))
            shapes: list[tuple[int, ...] | None] = [
                tuple(p if d == ax else n for d, n in enumerate(whole)) for p in pieces
            ]
            outs_ = [None] * len(shapes)
        else:
            shapes = [None] * len(outs_)
        return _compile(
            backend,
            feature_level,
            lambda i, o: SplitDesc(i[0], o, ax),
            ins,
            outs_,
            shapes,
            _dtype_of(backend, ins[0]),
        )

    fields = _fields_key(axis, sizes)
    return _dispatch("SPLIT", fields, feature_level, [x], given, build, device)


def joined_desc(pieces: Sequence[BufferTensorDesc], axis: int) -> BufferTensorDesc:
    """The packed desc of `pieces` joined along `axis` (the first one's sizes elsewhere)."""
    sizes = list(pieces[0].sizes)
    if 0 <= axis < len(sizes):
        sizes[axis] = builtins.sum(p.sizes[axis] if len(p.sizes) > axis else 0 for p in pieces)
    return BufferTensorDesc(pieces[0].data_type, tuple(sizes))


def join(
    xs: Sequence[Any],
    axis: int,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML JOIN: concatenate `xs` along `axis`."""

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        # empty pieces add nothing (numpy.concatenate, torch.cat): the call reads the others
        full = [k for k, x in enumerate(ins) if 0 not in _shape(x)]
        if full and len(full) < len(ins):
            # (the empty ones still fit: their other sizes and type are the others')
            descs = [_Tensor.of_array(backend_of([x]).describe(x)).desc for x in ins]
            JoinDesc(descs, joined_desc(descs, int(axis)), int(axis)).check_empty_rules()
            return build_full([ins[k] for k in full], outs).reading(full)
        return build_full(ins, outs)

    def build_full(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of(ins if outs[0] is None else [*ins, outs[0]])
        arrays = [backend.describe(x) for x in ins]
        ax = int(axis)
        shape: tuple[int, ...] | None = None
        if outs[0] is None:
            if not arrays:
                raise DmlError("JOIN.InputCount is 0: must be greater than 0")
            dims = list(_dims(arrays[0]))
            if 0 <= ax < len(dims):
                dims[ax] = builtins.sum(_dims(a)[ax] if len(_dims(a)) > ax else 0 for a in arrays)
            shape = tuple(dims)
        return _compile(
            backend,
            feature_level,
            lambda i, o: JoinDesc(i, o[0], ax),
            ins,
            outs,
            [shape],
            arrays[0].dtype if arrays else np.float32,
        )

    return _dispatch("JOIN", _fields_key(axis), feature_level, list(xs), [out], build, device)[0]


def depth_to_space(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DEPTH_TO_SPACE1: [N, C, H, W] -> [N, C/B^2, H*B, W*B]; order DCR (0) or CRD (1)."""
    return _depth_space(DepthToSpace1Desc, x, block_size, order, feature_level, out, device)


def space_to_depth(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML SPACE_TO_DEPTH1: [N, C, H, W] -> [N, C*B^2, H/B, W/B]; order DCR (0) or CRD (1)."""
    return _depth_space(SpaceToDepth1Desc, x, block_size, order, feature_level, out, device)


def upsample_2d(
    x: Any,
    scale_size: Sequence[int],
    interpolation_mode: Any = "NEAREST_NEIGHBOR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML UPSAMPLE_2D: the last two dimensions scaled up by (Height, Width) whole factors,
    each element copied into its block (nearest neighbour)."""
    scale = int_tuple(scale_size, "UPSAMPLE_2D.ScaleSize")
    mode_key = (
        interpolation_mode
        if isinstance(interpolation_mode, (int, str))
        else repr(interpolation_mode)
    )
    return _unary(
        "UPSAMPLE_2D",
        (_fields_key(scale), mode_key),
        x,
        out,
        feature_level,
        device,
        lambda view: Upsample2dDesc.output_sizes_for(_dims(view), scale),
        lambda i, o: Upsample2dDesc(i, o, scale, interpolation_mode),
    )


def fill_value_constant(
    sizes: Sequence[int],
    value: float | int,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML FILL_VALUE_CONSTANT: an array of `sizes` and `dtype` (out's where given) holding
    `value` everywhere (numpy.full)."""
    shape = int_tuple(sizes, "FILL_VALUE_CONSTANT.OutputTensor.Sizes")
    fields = (_fields_key(shape), str(np.dtype(dtype)), repr(value), type(value))
    return _generated(
        "FILL_VALUE_CONSTANT",
        fields,
        shape,
        dtype,
        value,
        lambda o: FillValueConstantDesc(o, None, value),
        feature_level,
        out,
        device,
    )


def _device_empty(device: str, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """A new array on `device` (a CuPy array on CuPy's current device, or a WebGPU one),
    or None on the CPU."""
    backend = get_backend(device)
    if backend.name == "cuda":
        import cupy

        return cupy.empty(shape, dtype)
    if backend.name == "webgpu":
        return backend.empty(shape, dtype)  # type: ignore[attr-defined]
    return None


def _generated(
    op: str,
    fields: Hashable,
    shape: tuple[int, ...],
    dtype: Any,
    value: float | int | None,
    make: Callable[[BufferTensorDesc], OperatorDesc],
    feature_level: Any,
    out: Any,
    device: str | None,
) -> Any:
    """Run an operator that reads nothing and writes `value` (FILL_VALUE_CONSTANT,
    DIAGONAL_MATRIX): `make(output desc)` its descriptor; a new array of `shape` and `dtype`
    (numpy's, or `device`'s), or `out` of any library."""

    if device is not None and out is None:  # made there: a generator reads no host array
        out = _device_empty(device, shape, np.dtype(dtype))

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([] if outs[0] is None else [outs[0]])
        kind = np.dtype(dtype) if outs[0] is None else _dtype_of(backend, outs[0])
        new = [shape if outs[0] is None else None]
        return _compile(
            backend, feature_level, lambda i, o: make(o[0]), [], outs, new, kind, fill=value
        )

    return _dispatch(op, fields, feature_level, [], [out], build, device)[0]


def element_wise_identity(
    x: Any,
    *,
    scale_bias: Sequence[float] | None = None,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML ELEMENT_WISE_IDENTITY: x copied, into a new packed array or through out's own
    strides (numpy.ascontiguousarray, torch's contiguous copy; a layout change); with
    `scale_bias` = (Scale, Bias), each element x * Scale + Bias (float types)."""
    given = None if scale_bias is None else tuple(float(v) for v in scale_bias)
    return _unary(
        "ELEMENT_WISE_IDENTITY",
        (given,),
        x,
        out,
        feature_level,
        device,
        lambda view: tuple(_dims(view)),
        lambda i, o: ElementWiseIdentityDesc(i, o, given),
    )


def diagonal_matrix(
    sizes: Sequence[int],
    offset: int = 0,
    value: float = 1.0,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DIAGONAL_MATRIX: matrices of `sizes` (leading dimensions a batch) holding `value`
    where row + offset == column and zeros elsewhere (numpy.eye's k is offset)."""
    shape = int_tuple(sizes, "DIAGONAL_MATRIX.OutputTensor.Sizes")
    fields = (_fields_key(shape), offset, str(np.dtype(dtype)), repr(value), type(value))
    return _generated(
        "DIAGONAL_MATRIX",
        fields,
        shape,
        dtype,
        value,
        lambda o: DiagonalMatrixDesc(o, offset, value),
        feature_level,
        out,
        device,
    )


def diagonal_matrix1(
    x: Any,
    diagonal_fill_begin: int = 0,
    diagonal_fill_end: int = 1,
    value: float | int = 1,
    *,
    sizes: Sequence[int] | None = None,
    dtype: Any = None,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DIAGONAL_MATRIX1: `value` on the diagonals column - row in [begin, end) (outside
    [end, begin) where begin > end), x's elements elsewhere; without x, zeros elsewhere and a
    new array of `sizes` and `dtype` (float32 by default)."""
    begin, end = diagonal_fill_begin, diagonal_fill_end

    def make(i: BufferTensorDesc | None, o: BufferTensorDesc) -> OperatorDesc:
        return DiagonalMatrix1Desc(i, o, None, value, begin, end)

    fields = (begin, end, repr(value), type(value))
    if x is not None:
        return _unary(
            "DIAGONAL_MATRIX1",
            fields,
            x,
            out,
            feature_level,
            device,
            lambda view: tuple(_dims(view)),
            make,
            fill=value,
        )
    if sizes is None and out is None:
        raise DmlError("DIAGONAL_MATRIX1: give an input, sizes or out (the output's sizes)")
    kind = np.float32 if dtype is None else dtype
    shape = (
        tuple(int(n) for n in out.shape)
        if sizes is None
        else int_tuple(sizes, "DIAGONAL_MATRIX1.OutputTensor.Sizes")
    )
    return _generated(
        "DIAGONAL_MATRIX1",
        (_fields_key(shape), *fields, str(np.dtype(kind))),
        shape,
        kind,
        value,
        lambda o: make(None, o),
        feature_level,
        out,
        device,
    )


def resample(
    x: Any,
    scales: Sequence[float],
    *,
    sizes: Sequence[int] | None = None,
    input_pixel_offsets: Sequence[float] | None = None,
    output_pixel_offsets: Sequence[float] | None = None,
    rounding_direction: Any = None,
    interpolation_mode: Any = "NEAREST_NEIGHBOR",
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML RESAMPLE (no offsets, no rounding direction), RESAMPLE1 (offsets) or RESAMPLE2
    (a rounding direction), nearest neighbour: each output element the input element its
    coordinate maps back to; the output of `sizes` (out's, or each size times its scale,
    rounded down)."""
    factors = tuple(float(v) for v in scales)
    rank = len(factors)
    given = (input_pixel_offsets, output_pixel_offsets)
    ins = tuple(0.5 for _ in range(rank)) if given[0] is None else tuple(given[0])
    outs = tuple(-0.5 for _ in range(rank)) if given[1] is None else tuple(given[1])

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if rounding_direction is not None:
            return Resample2Desc(i, o, factors, ins, outs, rounding_direction, interpolation_mode)
        if given != (None, None):
            return Resample1Desc(i, o, factors, ins, outs, interpolation_mode)
        return ResampleDesc(i, o, factors, interpolation_mode)

    def shape_of(view: Any) -> tuple[int, ...]:
        if sizes is not None:
            return int_tuple(sizes, "RESAMPLE.OutputTensor.Sizes")
        return ResampleDesc.output_sizes_for(_dims(view), factors)

    direction = (
        rounding_direction
        if isinstance(rounding_direction, (int, str, type(None)))
        else repr(rounding_direction)
    )
    mode_key = (
        interpolation_mode
        if isinstance(interpolation_mode, (int, str))
        else repr(interpolation_mode)
    )
    fields = (
        factors,
        ins if given[0] is not None else None,
        outs if given[1] is not None else None,
        direction,
        mode_key,
        None if sizes is None else _fields_key(int_tuple(sizes, "RESAMPLE.OutputTensor.Sizes")),
    )
    return _unary("RESAMPLE", fields, x, out, feature_level, device, shape_of, make)


def fill_value_sequence(
    sizes: Sequence[int],
    start: float | int,
    delta: float | int,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML FILL_VALUE_SEQUENCE: an array of `sizes` whose elements, in order, are start,
    start + delta, ... in `dtype` (out's type where `out` is given)."""
    shape = int_tuple(sizes, "FILL_VALUE_SEQUENCE.OutputTensor.Sizes")
    fields = (_fields_key(shape), repr(start), type(start), repr(delta), type(delta))
    return _generated(
        "FILL_VALUE_SEQUENCE",
        (*fields, str(np.dtype(dtype))),
        shape,
        dtype,
        None,
        lambda o: FillValueSequenceDesc(o, None, start, delta),
        feature_level,
        out,
        device,
    )


def _numpy_type(dtype: Any) -> np.dtype[Any]:
    """A numpy type from a numpy or torch one (CAST's: one of DirectML's 11 types)."""
    try:
        named: np.dtype[Any] = np.dtype(dtype)
        return named
    except TypeError:
        from ..elements import element_of

        element = element_of(dtype)
        if element.data_type is None:
            raise DmlError(f"CAST: {element.name} is not one of DirectML's data types") from None
        return np.dtype(element.data_type.numpy_dtype)


def cast(
    x: Any,
    dtype: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML CAST: x's elements converted to `dtype` (out's type where `out` is given) by
    CAST's rules (`dmlops.conversion`), into a new array of x's library and device or out."""
    from ..elements import element_of

    target = _numpy_type(dtype)
    for field, kind in (("InputTensor", getattr(x, "dtype", None)), ("OutputTensor", target)):
        element = None if kind is None else element_of(kind)
        if element is not None and element.data_type is None:
            raise DmlError(
                f"CAST.{field}.DataType is {element.name}: not one of DirectML's 11 types "
                "(a conversion reads values of its types; no other type carries them)"
            )
    if device is not None:
        return _on_device(
            device,
            [x],
            [out],
            lambda i, o: [cast(i[0], target, feature_level=feature_level, out=o[0])],
        )[0]
    if out is None:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):  # a torch tensor of the type
            out = torch.empty(tuple(x.shape), dtype=getattr(torch, target.name), device=x.device)
        else:
            backend = backend_of([x])
            out = backend.new_like(x, _shape(x), target)

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0], outs[0]])
        make = lambda i, o: CastDesc(i[0], o[0])  # noqa: E731
        return _compile(backend, feature_level, make, ins, outs, [None], target)

    return _dispatch("CAST", (target.str,), feature_level, [x], [out], build)[0]


def _new_array(x: Any, shape: tuple[int, ...], dtype: np.dtype[Any], zeroed: bool = True) -> Any:
    """A new array of `shape` and `dtype` in x's library and on its device: zeros, or
    uncleared where not `zeroed`."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        make = torch.zeros if zeroed else torch.empty
        return make(shape, dtype=getattr(torch, dtype.name), device=x.device)
    backend = backend_of([x])
    made = backend.new_like(x, shape, dtype)
    if not zeroed:
        return made
    if backend.name == "webgpu":  # (its arrays take no assignment: an upload of zeros)
        return backend.upload(np.zeros(shape, dtype))
    made.fill(0)  # numpy and CuPy
    return made


def _is_webgpu(x: Any) -> bool:
    return type(x).__module__.startswith("dmlops.")


def _bools_as_bytes(x: Any) -> Any:
    """A bool array (numpy, CuPy, torch) viewed as UINT8, the type NONZERO_COORDINATES'
    table has for it; any other array as it is."""
    if str(x.dtype) not in ("bool", "torch.bool"):
        return x
    if type(x).__module__.split(".")[0] == "torch":
        import torch

        return x.view(torch.uint8)
    return x.view(np.uint8)


def nonzero_coordinates(
    x: Any,
    columns: int | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: tuple[Any, Any] | None = None,
    device: str | None = None,
) -> tuple[Any, Any]:
    """DML NONZERO_COORDINATES of a 4- or 5-D array: (the count of its nonzero elements, a
    [1, .., M, N] UINT32 array whose first `count` rows are their coordinates' last N =
    `columns` entries, the effective rank by default), new arrays of x's library (rows past
    the count zeros) or `out`."""
    if device is not None:
        again = lambda i, o: list(  # noqa: E731
            nonzero_coordinates(
                i[0],
                columns,
                feature_level=feature_level,
                out=None if o[0] is None else (o[0], o[1]),
            )
        )
        given = [None, None] if out is None else list(out)
        return tuple(_on_device(device, [x], given, again))
    x = _bools_as_bytes(x)  # (a mask: True is 1, False 0, as UINT8 reads them)
    shape = tuple(int(n) for n in _shape(x))
    count_shape, coords_shape = NonzeroCoordinatesDesc.output_sizes_for(shape, columns)
    if out is None:
        uint32 = np.dtype(np.uint32)
        out = (_new_array(x, count_shape, uint32), _new_array(x, coords_shape, uint32))

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0], *outs])
        make = lambda i, o: NonzeroCoordinatesDesc(i[0], o[0], o[1])  # noqa: E731
        return _compile(backend, feature_level, make, ins, outs, [None, None], np.uint32)

    made = _dispatch("NONZERO_COORDINATES", (columns,), feature_level, [x], list(out), build)
    return made[0], made[1]


def nonzero(
    x: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    device: str | None = None,
) -> Any:
    """The [count, rank] int64 coordinates of x's nonzero elements in ascending element order
    (numpy.argwhere), of x's library: one NONZERO_COORDINATES (x viewed with leading
    dimensions of size 1 to its 4 or 5), the count read back (a synchronisation), one CAST
    to int64. 1 to 5 dimensions. 64-bit elements, which NONZERO_COORDINATES' table lacks,
    are compared with zero in x's library first (numpy, CuPy, torch: -0.0 is zero, NaN is
    not), and that mask's nonzero elements found."""
    from ..elements import element_of

    if element_of(x.dtype).size == 8 and not _is_webgpu(x):
        x = x != 0
    shape = tuple(int(n) for n in x.shape)
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise DmlError(
            f"nonzero: x has {rank} dimensions; NONZERO_COORDINATES takes 1 to 5 (as 4 or 5)"
        )
    wide = x if rank >= 4 else x.reshape((1,) * (4 - rank) + shape)
    out = None
    if device is None:  # (the rows past the count are never read: left uncleared)
        count_shape, coords_shape = NonzeroCoordinatesDesc.output_sizes_for(wide.shape, rank)
        uint32 = np.dtype(np.uint32)
        coords = _new_array(wide, coords_shape, uint32, zeroed=False)
        out = (_new_array(wide, count_shape, uint32), coords)
    count, coords = nonzero_coordinates(
        wide, rank, feature_level=feature_level, out=out, device=device
    )
    found = host_int(count)
    rows = coords.reshape(coords.shape[-2], rank)[:found]
    return cast(rows, np.int64, feature_level=feature_level)


def host_int(a: Any) -> int:
    """The one element of a (any library's: numpy, CuPy, torch, WebGPU) as a Python int."""
    one = a.reshape(-1)[0]
    if hasattr(one, "item"):
        return int(one.item())
    return int(one.numpy())  # (a WebGPU array)
