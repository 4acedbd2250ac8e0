"""The strided operators on arrays (SLICE, SLICE1, SLICE_GRAD, SPLIT, JOIN, TILE, PADDING1,
DEPTH_TO_SPACE1, SPACE_TO_DEPTH1, UPSAMPLE_2D, ELEMENT_WISE_IDENTITY; the rest of the
family is in `family.py`): each call's fields made into DirectML's descriptor and
run through the call machinery (`dmlops.calls`), with numpy's conventions for empty arrays.

This is the layer every adapter builds on (the functional API, the torch wing, WebNN, Dask,
the ONNX steps); it never routes torch tensors through torch's dispatcher (the functional
API does, for autograd and torch.compile): a torch tensor here runs as any other array.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..calls import (
    _MISS,
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
    _shape,
    _Tensor,
    _warm,
    backend_of,
    cache_size,
    check_empty_gradient,
    clear_cache,
)
from ..elements import in_native_order, values_into
from ..errors import DmlError, InvalidDescriptorError
from ..ops import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    ElementWiseIdentityDesc,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    PaddingMode,
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
    if device is None:
        done = _warm(op, fields, feature_level, [x], out=out)
        if done is not _MISS:
            return done

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
    # the key: the arguments as given (the level and order, in it, tell the first versions
    # from these), so a warm call is answered before any of them is read
    fields = (_fields_key(block_size), order if isinstance(order, (int, str)) else repr(order))
    if device is None:
        done = _warm(cls.OPERATOR, fields, feature_level, [x], out=out)
        if done is not _MISS:
            return done
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

    return _unary(cls.OPERATOR, fields, x, out, feature_level, device, shape_of, make)


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
    fields = _fields_key(repeats)
    if device is None:  # (a warm call answered before the repeats are read)
        done = _warm("TILE", fields, feature_level, [x], out=out)
        if done is not _MISS:
            return done
    counts = int_tuple(repeats, "TILE.Repeats")
    if not counts and _shape(x) == ():
        flat_out = None if out is None else out.reshape(1)
        once = tile(x.reshape(1), [1], feature_level=feature_level, out=flat_out, device=device)
        return out if out is not None else once.reshape(())
    return _unary(
        "TILE",
        fields,
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
    # the key: the arguments as given (the level, in it, tells PADDING from PADDING1), so a
    # warm call is answered before any of them is read
    mode_key = mode if isinstance(mode, (int, str)) else repr(mode)
    fields = (_fields_key(start_padding, end_padding), mode_key, repr(value), type(value))
    if device is None:
        done = _warm("PADDING1", fields, feature_level, [x], out=out)
        if done is not _MISS:
            return done
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

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if first:
            return PaddingDesc(i, o, mode, value, start, end)
        return Padding1Desc(i, o, mode, None, value, start, end)

    return _unary(
        "PADDING1",
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
    fields = _fields_key(window_offsets, window_sizes, window_strides, output_sizes)
    if device is None:
        done = _warm("SLICE1", fields, feature_level, [x], out=out)
        if done is not _MISS:
            return done

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
    fields = _fields_key(output_sizes, window_offsets, window_sizes, window_strides)
    if device is None:  # (a warm call answered before the sizes are read)
        done = _warm("SLICE_GRAD", fields, feature_level, [input_gradient], out=out)
        if done is not _MISS:
            return done
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
    fields = _fields_key(axis, sizes)
    if outs is None and device is None and isinstance(sizes, Sequence):
        done = _warm("SPLIT", fields, feature_level, [x], len(sizes), listed=True)
        if done is not _MISS:
            return done  # type: ignore[no-any-return]
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
    fields = _fields_key(axis)
    if device is None:
        done = _warm("JOIN", fields, feature_level, list(xs), out=out)
        if done is not _MISS:
            return done

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

    return _dispatch("JOIN", fields, feature_level, list(xs), [out], build, device)[0]


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

    def run(source: Any, target: Any) -> Any:
        return _unary(
            "ELEMENT_WISE_IDENTITY",
            (given,),
            source,
            target,
            feature_level,
            device,
            lambda view: tuple(_dims(view)),
            lambda i, o: ElementWiseIdentityDesc(i, o, given),
        )

    if given is None:  # (a copy of bytes: any byte order moves as it is)
        return run(x, out)
    # x * Scale + Bias reads values: in this machine's byte order; a new result in the
    # input's order, as a copy's
    order = x.dtype if type(x) is np.ndarray and out is None and device is None else None
    x = in_native_order(x)
    if order is not None and not order.isnative:
        return run(x, None).astype(order)
    return values_into(out, lambda target: run(x, target))
