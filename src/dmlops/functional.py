"""The numpy-shaped API: DirectML operators applied to arrays.

Arrays of any layout go in through tensor strides (no hidden copy); fields
follow DirectML exactly (UINT fields reject negatives).

Every call has a signature: the operator, its fields, the feature level and,
for each array, its type, dtype, shape and strides. The first call with a
signature validates in full and compiles a `_Call`; later calls with the same
signature only read the arrays' addresses and run it. Where an output shares
bytes with an input, the input is first copied to a temporary on its device,
so the result is the one numpy gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .arrays import family as _family
from .arrays import strided as _arrays
from .calls import (
    _SLICE,
    _WINDOW,
    _moved,
    _through_torch,
    _torch_ops,
    _torch_wanted,
    backend_of,
    cache_size,
    clear_cache,
)
from .errors import DmlError
from .ops import DepthToSpace1Desc, SpaceToDepth1Desc, triangle_span
from .tensor import FeatureLevel, int_tuple

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
    "upsample_2d",
    "fill_value_constant",
    "fill_value_sequence",
    "arange",
    "cast",
    "nonzero",
    "nonzero_coordinates",
    "element_wise_identity",
    "diagonal_matrix",
    "diagonal_matrix1",
    "resample",
    "tril",
    "triu",
    "backend_of",
    "clear_cache",
    "cache_size",
]


def _depth_space(
    cls: type[DepthToSpace1Desc] | type[SpaceToDepth1Desc],
    x: Any,
    block_size: int,
    order: Any,
    feature_level: Any,
    out: Any = None,
    device: str | None = None,
) -> Any:
    if out is None and device is None and type(x) is not np.ndarray and _torch_wanted([x]):
        t = _torch_ops()
        op = t.depth_to_space_call if cls is DepthToSpace1Desc else t.space_to_depth_call
        return op(x, int(block_size), t.order_name(order), t.level_name(feature_level))
    return _arrays._depth_space(cls, x, block_size, order, feature_level, out, device)


def tile(
    x: Any,
    repeats: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML TILE: x repeated `repeats[i]` times along each dimension i.

    >>> import numpy as np, dmlops
    >>> dmlops.tile(np.array([[1, 2]], np.int8), [2, 2]).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        kwargs = {"feature_level": feature_level, "out": out, "device": device}
        return _moved("TILE", (x, repeats), kwargs)
    return _arrays.tile(x, repeats, feature_level=feature_level, out=out, device=device)


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
    filled by `mode`: CONSTANT (`value`), EDGE, REFLECTION, SYMMETRIC or WRAP.

    >>> import numpy as np, dmlops
    >>> dmlops.padding(np.array([1, 2, 3], np.float32), [2], [1], "REFLECTION").tolist()
    [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]
    >>> dmlops.padding(np.array([1, 2, 3], np.float32), [1], [1], value=-1.0).tolist()
    [-1.0, 1.0, 2.0, 3.0, -1.0]
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        kwargs = {"value": value, "feature_level": feature_level, "out": out, "device": device}
        args = (x, start_padding, end_padding, mode)
        return _moved("PADDING1", args, kwargs)
    return _arrays.padding(
        x,
        start_padding,
        end_padding,
        mode,
        value,
        feature_level=feature_level,
        out=out,
        device=device,
    )


def _int_list(values: Sequence[int] | None, field: str) -> list[int] | None:
    return None if values is None else list(int_tuple(values, field))


def _named_lists(
    op: str, names: Sequence[str], values: Sequence[Sequence[int]]
) -> list[list[int] | None]:
    """Integer fields as lists, each error naming `op.name`."""
    return [_int_list(v, f"{op}.{n}") for n, v in zip(names, values, strict=True)]


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
    """DML SLICE: out[c] = x[offsets + strides * c], out shaped `sizes`.

    >>> import numpy as np, dmlops
    >>> x = np.arange(16, dtype=np.float32).reshape(4, 4)
    >>> dmlops.slice(x, [1, 0], [2, 2], [2, 3]).tolist()
    [[4.0, 7.0], [12.0, 15.0]]
    """
    if out is None and device is None and type(x) is not np.ndarray and _torch_wanted([x]):
        t = _torch_ops()
        lists = _named_lists("SLICE", _SLICE, (offsets, sizes, strides))
        return t.slice_call(x, *lists, t.level_name(feature_level))
    return _arrays.slice(
        x, offsets, sizes, strides, feature_level=feature_level, out=out, device=device
    )


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
    """DML SLICE1: out[c] = x[CopyStart + window_strides * c]; default sizes MaxCopiedElements.

    >>> import numpy as np, dmlops
    >>> x = np.arange(12, dtype=np.int32).reshape(3, 4)
    >>> dmlops.slice1(x, [0, 0], [3, 4], [-1, 2]).tolist()
    [[8, 10], [4, 6], [0, 2]]
    """
    window = (window_offsets, window_sizes, window_strides)
    if out is None and device is None and type(x) is not np.ndarray and _torch_wanted([x]):
        t = _torch_ops()
        lists = _named_lists("SLICE1", _WINDOW, window)
        sizes = _int_list(output_sizes, "SLICE1.OutputTensor.Sizes")
        return t.slice1_call(x, *lists, sizes, t.level_name(feature_level))
    return _arrays.slice1(
        x,
        window_offsets,
        window_sizes,
        window_strides,
        output_sizes,
        feature_level=feature_level,
        out=out,
        device=device,
    )


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

    >>> import numpy as np, dmlops
    >>> dy = np.array([[1, 2]], np.float32)
    >>> dmlops.slice_grad(dy, [1, 4], [0, 0], [1, 4], [1, 2]).tolist()
    [[1.0, 0.0, 2.0, 0.0]]
    """
    window = (window_offsets, window_sizes, window_strides)
    if (
        out is None
        and device is None
        and type(input_gradient) is not np.ndarray
        and _torch_wanted([input_gradient])
    ):
        t = _torch_ops()
        lists = _named_lists("SLICE_GRAD", _WINDOW, window)
        sizes = _int_list(output_sizes, "SLICE_GRAD.OutputGradientTensor.Sizes")
        return t.slice_grad_call(input_gradient, sizes, *lists, t.level_name(feature_level))
    return _arrays.slice_grad(
        input_gradient,
        output_sizes,
        window_offsets,
        window_sizes,
        window_strides,
        feature_level=feature_level,
        out=out,
        device=device,
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
    """DML SPLIT: cut `x` along `axis` into pieces of `sizes`; returns the pieces.

    >>> import numpy as np, dmlops
    >>> a, b = dmlops.split(np.arange(5, dtype=np.uint8), 0, [2, 3])
    >>> a.tolist(), b.tolist()
    ([0, 1], [2, 3, 4])
    """
    if outs is None and device is None and type(x) is not np.ndarray and _torch_wanted([x]):
        t = _torch_ops()
        pieces = _int_list(sizes, "SPLIT sizes")
        return t.split_call(x, int(axis), pieces, t.level_name(feature_level))  # type: ignore[no-any-return]
    return _arrays.split(x, axis, sizes, feature_level=feature_level, outs=outs, device=device)


def join(
    xs: Sequence[Any],
    axis: int,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML JOIN: concatenate `xs` along `axis`.

    >>> import numpy as np, dmlops
    >>> dmlops.join([np.ones((1, 2), np.int16), np.zeros((1, 1), np.int16)], 1).tolist()
    [[1, 1, 0]]
    """
    if out is None and device is None and _torch_wanted(list(xs)):
        t = _torch_ops()
        return t.join_call(list(xs), int(axis), t.level_name(feature_level))
    return _arrays.join(xs, axis, feature_level=feature_level, out=out, device=device)


def depth_to_space(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DEPTH_TO_SPACE1: [N, C, H, W] -> [N, C/B^2, H*B, W*B]; order DCR (0) or CRD (1).

    >>> import numpy as np, dmlops
    >>> dmlops.depth_to_space(np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
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
    """DML SPACE_TO_DEPTH1: [N, C, H, W] -> [N, C*B^2, H/B, W/B]; order DCR (0) or CRD (1).

    >>> import numpy as np, dmlops
    >>> x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    >>> dmlops.space_to_depth(x, 2).reshape(4).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
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
    """DML UPSAMPLE_2D: an [N, C, H, W] or [N, C, D, H, W] array with its height and width
    scaled up by `scale_size` = (Height, Width) whole factors, nearest neighbour (torch's
    `interpolate(x, scale_factor=s, mode="nearest")`, numpy's `repeat` along both axes).
    DirectML's table takes FLOAT32 and FLOAT16 (other elements move as their bits above the
    Device API). LINEAR is arithmetic and refused by name.

    >>> import numpy as np, dmlops
    >>> dmlops.upsample_2d(np.array([[[[1, 2]]]], np.float32), [2, 2]).tolist()
    [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        kwargs = {"feature_level": feature_level, "out": out, "device": device}
        return _moved("UPSAMPLE_2D", (x, scale_size, interpolation_mode), kwargs)
    return _arrays.upsample_2d(
        x, scale_size, interpolation_mode, feature_level=feature_level, out=out, device=device
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
    """DML FILL_VALUE_CONSTANT (numpy.full, torch.full): an array of `sizes` holding
    `value` everywhere, of `dtype` (out's type where `out` is given: any array library;
    `device="cuda"` makes a CuPy array). The value must be one of the type (an integer type
    takes whole numbers in its range).

    >>> import numpy as np, dmlops
    >>> dmlops.fill_value_constant([2, 3], 7, np.int16).tolist()
    [[7, 7, 7], [7, 7, 7]]
    """
    return _family.fill_value_constant(
        sizes, value, dtype, feature_level=feature_level, out=out, device=device
    )


def element_wise_identity(
    x: Any,
    *,
    scale_bias: Sequence[float] | None = None,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML ELEMENT_WISE_IDENTITY: x copied element for element, into a new packed array or
    through `out`'s own strides — DirectML's layout change (numpy.ascontiguousarray,
    `np.copyto`, torch's `contiguous`). With `scale_bias` = (Scale, Bias) each element is
    x * Scale + Bias (float types; computed in float32, float64 for FLOAT64, the product
    rounded before the sum: `dmlops.conversion.scaled`); a torch tensor that needs a
    gradient then is refused (the gradient of an affine map is arithmetic).

    >>> import numpy as np, dmlops
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> dmlops.element_wise_identity(x.T).tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    kwargs = {"feature_level": feature_level, "out": out, "device": device}
    if type(x) is not np.ndarray and _through_torch([x]):
        if scale_bias is None:
            return _moved("ELEMENT_WISE_IDENTITY", (x,), kwargs)
        if getattr(x, "requires_grad", False):
            import torch

            if torch.is_grad_enabled():
                raise DmlError(
                    "ELEMENT_WISE_IDENTITY: with a ScaleBias the input's gradient is "
                    "arithmetic (detach it, or call under torch.no_grad())"
                )
        x = x.detach()
    return _arrays.element_wise_identity(x, scale_bias=scale_bias, **kwargs)


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
    """DML DIAGONAL_MATRIX (numpy.eye, torch.eye, ONNX EyeLike): matrices of `sizes` (the
    leading dimensions a batch) holding `value` where row + offset == column, zeros
    elsewhere; `value` is DirectML's FLOAT (truncated toward zero for integer types).

    >>> import numpy as np, dmlops
    >>> dmlops.diagonal_matrix([2, 3], offset=1).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    return _family.diagonal_matrix(
        sizes, offset, value, dtype, feature_level=feature_level, out=out, device=device
    )


def diagonal_matrix1(
    x: Any = None,
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
    """DML DIAGONAL_MATRIX1: `value` where column - row lies in [diagonal_fill_begin,
    diagonal_fill_end) (outside [end, begin) where begin > end), x's elements elsewhere; with
    no x, zeros elsewhere in a new array of `sizes` and `dtype` (float32 by default). The
    leading dimensions are a batch; 2 to 4 dimensions (DirectML's table). `value` is one of
    the data's type (an integer type takes whole numbers in its range).

    >>> import numpy as np, dmlops
    >>> dmlops.diagonal_matrix1(None, 0, 2, 7, sizes=[3, 4]).tolist()
    [[7.0, 7.0, 0.0, 0.0], [0.0, 7.0, 7.0, 0.0], [0.0, 0.0, 7.0, 7.0]]
    """
    kwargs = {"feature_level": feature_level, "out": out, "device": device}
    if x is not None and type(x) is not np.ndarray and _through_torch([x]):
        if sizes is not None or dtype is not None:
            raise DmlError("DIAGONAL_MATRIX1: sizes and dtype are the input's where one is given")
        moved = (x, diagonal_fill_begin, diagonal_fill_end)
        return _moved("DIAGONAL_MATRIX1", moved, {"value": value, **kwargs})
    return _family.diagonal_matrix1(
        x, diagonal_fill_begin, diagonal_fill_end, value, sizes=sizes, dtype=dtype, **kwargs
    )


def tril(
    x: Any,
    k: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """The lower triangle of each matrix of x (numpy.tril, torch.tril, ONNX Trilu with
    upper=0): elements whose column - row is at most `k`, zeros above, as one
    DIAGONAL_MATRIX1 (its table: 2 to 4 dimensions, the leading ones a batch).

    >>> import numpy as np, dmlops
    >>> dmlops.tril(np.ones((3, 3), np.int32)).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    begin, end = triangle_span(False, k, *_matrix(x, "tril"))
    return _triangle(x, begin, end, feature_level, out, device)


def triu(
    x: Any,
    k: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """The upper triangle of each matrix of x (numpy.triu, torch.triu, ONNX Trilu with
    upper=1): elements whose column - row is at least `k`, zeros below, as one
    DIAGONAL_MATRIX1.

    >>> import numpy as np, dmlops
    >>> dmlops.triu(np.ones((2, 3), np.float32), 1).tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    begin, end = triangle_span(True, k, *_matrix(x, "triu"))
    return _triangle(x, begin, end, feature_level, out, device)


def _triangle(
    x: Any, begin: int, end: int, feature_level: Any, out: Any, device: str | None
) -> Any:
    """x's elements with zeros where column - row lies in [begin, end): one
    DIAGONAL_MATRIX1, the leading dimensions of x beyond its table's four merged."""
    kwargs = {"feature_level": feature_level, "out": out, "device": device}
    shape = tuple(int(n) for n in x.shape)
    if len(shape) <= 4:
        return diagonal_matrix1(x, begin, end, 0, **kwargs)
    if out is not None:
        raise DmlError(
            f"DIAGONAL_MATRIX1: out= with {len(shape)} dimensions (its table takes 2 to 4; "
            "without out=, the leading dimensions are merged into one batch)"
        )
    merged = x.reshape((-1, *shape[-2:]))
    return diagonal_matrix1(merged, begin, end, 0, **kwargs).reshape(shape)


def _matrix(x: Any, name: str) -> tuple[int, int]:
    """The (height, width) of x's matrices; DmlError where x has fewer than 2 dimensions."""
    shape = tuple(int(n) for n in x.shape)
    if len(shape) < 2:
        raise DmlError(
            f"{name}: x has {len(shape)} dimensions; a matrix needs 2 (DIAGONAL_MATRIX1)"
        )
    return shape[-2], shape[-1]


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
    """DML RESAMPLE / RESAMPLE1 / RESAMPLE2, nearest neighbour, on 1 to 4 dimensions: output
    element o of each axis reads input index round((o - output offset) / scale - input
    offset), clamped into the input. No offsets and no `rounding_direction`: RESAMPLE
    (pixel centres, the nearest element, halves up); offsets: RESAMPLE1 (0.5 and -0.5 are
    the centres); a `rounding_direction` ("INCREASING": up, "DECREASING": down): RESAMPLE2.
    The output has `sizes` (out's, else each size times its scale, rounded down). LINEAR
    interpolates and is refused by name; other element types move as their bits.

    >>> import numpy as np, dmlops
    >>> dmlops.resample(np.array([1, 2, 3], np.float32), [5 / 3], sizes=[5]).tolist()
    [1.0, 1.0, 2.0, 3.0, 3.0]
    """
    kwargs = {
        "sizes": sizes,
        "input_pixel_offsets": input_pixel_offsets,
        "output_pixel_offsets": output_pixel_offsets,
        "rounding_direction": rounding_direction,
        "interpolation_mode": interpolation_mode,
        "feature_level": feature_level,
        "out": out,
        "device": device,
    }
    if type(x) is not np.ndarray and _through_torch([x]):
        return _moved("RESAMPLE", (x, scales), kwargs)
    return _family.resample(x, scales, **kwargs)


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
    start + delta, start + 2 delta, ... in `dtype` (out's type where `out` is given: any
    array library; `device="cuda"` makes a CuPy array): modulo 2^bits for integer types,
    rounded once for float types. Start and delta are values of the type (an unsigned
    type's delta may be negative: its two's complement bits).

    >>> import numpy as np, dmlops
    >>> dmlops.fill_value_sequence([2, 2], 10, -2, np.uint8).tolist()
    [[10, 8], [6, 4]]
    """
    return _family.fill_value_sequence(
        sizes, start, delta, dtype, feature_level=feature_level, out=out, device=device
    )


def arange(
    start: float | int,
    stop: float | int | None = None,
    step: float | int = 1,
    dtype: Any = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    device: str | None = None,
) -> Any:
    """numpy.arange / torch.arange as one FILL_VALUE_SEQUENCE: ceil((stop - start) / step)
    elements start, start + step, ... (`arange(n)` counts from 0); dtype int64 where every
    argument is an integer, float32 otherwise (torch's defaults; DirectML's table has no
    FLOAT64).

    >>> import dmlops
    >>> dmlops.arange(2, 11, 3).tolist()
    [2, 5, 8]
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise DmlError("arange: step is 0")
    count = max(0, math.ceil((float(stop) - float(start)) / float(step)))
    whole = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    kind = np.dtype(np.int64 if whole else np.float32) if dtype is None else np.dtype(dtype)
    return fill_value_sequence(
        [count], start, step, kind, feature_level=feature_level, device=device
    )


def cast(
    x: Any,
    dtype: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML CAST (numpy's `astype`, torch's `to(dtype)`): x's elements converted to `dtype`
    (a numpy or torch type of DirectML's 11; out's where `out` is given), into a new array of
    x's library and device, or out of any layout. The page states no rules; dmlops follows
    Direct3D's and IEEE 754's (`dmlops.conversion`): floats round to nearest even, floats to
    integers truncate toward zero and saturate (NaN is 0), integers wrap. A torch tensor
    that needs a gradient is refused (the gradient of a conversion is arithmetic).

    >>> import numpy as np, dmlops
    >>> dmlops.cast(np.array([1.9, -1.9, 300.0, np.nan], np.float32), np.uint8).tolist()
    [1, 0, 255, 0]
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        if getattr(x, "requires_grad", False):
            import torch

            if torch.is_grad_enabled():
                raise DmlError(
                    "CAST: the input needs a gradient; a conversion's gradient is arithmetic "
                    "(detach it, or call under torch.no_grad())"
                )
        x = x.detach()
    return _family.cast(x, dtype, feature_level=feature_level, out=out, device=device)


def nonzero_coordinates(
    x: Any,
    columns: int | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: tuple[Any, Any] | None = None,
    device: str | None = None,
) -> tuple[Any, Any]:
    """DML NONZERO_COORDINATES of a 4- or 5-D array, as DirectML writes it: (count, a
    [1, .., M, N] UINT32 array whose first `count` rows are the nonzero elements'
    coordinates' last N = `columns` entries, in ascending element order; -0.0 is zero).
    New arrays of x's library (rows past the count zeros), or `out` = (count, coordinates).
    One pass on the caller's stream, no host synchronisation (on GPUs: a scan).

    >>> import numpy as np, dmlops
    >>> x = np.array([[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]], np.float32)
    >>> count, coords = dmlops.nonzero_coordinates(x.reshape(1, 1, 2, 4))
    >>> int(count.reshape(-1)[0]), coords[0, 0, :4].tolist()
    (4, [[0, 0], [0, 3], [1, 1], [1, 3]])
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        x = x.detach()
    return _family.nonzero_coordinates(
        x, columns, feature_level=feature_level, out=out, device=device
    )


def nonzero(
    x: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    device: str | None = None,
) -> Any:
    """torch.nonzero / numpy.argwhere: the [count, rank] int64 coordinates of x's nonzero
    elements in ascending element order (-0.0 is zero), of x's library: one
    NONZERO_COORDINATES (x viewed with leading dimensions of size 1 to its 4 or 5), the count
    read back (the output's size depends on it: a synchronisation), then one CAST to int64.
    1 to 5 dimensions.

    >>> import numpy as np, dmlops
    >>> dmlops.nonzero(np.array([[0, 3], [4, 0]], np.int32)).tolist()
    [[0, 1], [1, 0]]
    """
    if type(x) is not np.ndarray and _through_torch([x]):
        x = x.detach()
    return _family.nonzero(x, feature_level=feature_level, device=device)
