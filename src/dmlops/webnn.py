"""WebNN adapter: MLGraphBuilder's data-movement operations (slice, split, concat, expand,
gather, gatherElements, gatherND, scatterElements, scatterND, pad, tile, reverse, resample2d,
triangular, cast, transpose, reshape), with WebNN's argument names and option dictionaries,
lowered onto dmlops' operators (SLICE1, SPLIT, JOIN, TILE, PADDING1, UPSAMPLE_2D, RESAMPLE2,
DIAGONAL_MATRIX1, CAST, the GATHER / SCATTER family, identity copies).

Arguments are checked in the order the WebNN specification's steps check them, and errors
name the WebNN argument (`webnn.gather: options.axis 3 is outside [0, 2]`); the DirectML
operator then validates its own fields. WebNN's own semantics hold where they differ from
DirectML's or ONNX's: gather and scatter indices out of range are clamped into their axis
(no error), reverse's `axes` may be empty, pad has WebNN's modes, and 0-D tensors are taken
and returned wherever WebNN allows them (DirectML tensors have at least one dimension: the
adapter reshapes, the caller never sees it). Inputs: numpy, CuPy, torch and dmlops.webgpu
arrays (0-D where the library has them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .arrays import family, indexed, strided
from .errors import InvalidDescriptorError
from .ops import triangle_span

__all__ = [
    "slice",
    "split",
    "concat",
    "expand",
    "gather",
    "gatherElements",
    "gatherND",
    "scatterElements",
    "scatterND",
    "pad",
    "tile",
    "reverse",
    "resample2d",
    "triangular",
    "cast",
    "transpose",
    "reshape",
    "gather_elements",
    "gather_nd",
    "scatter_elements",
    "scatter_nd",
    "DATA_TYPES",
    "INDEX_TYPES",
]

DATA_TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
INDEX_TYPES = ("int32", "uint32", "int64")  # MLGraphBuilder.gather's indices


def _fail(message: str) -> InvalidDescriptorError:
    return InvalidDescriptorError(f"webnn.{message}")


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def _type(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _check_type(op: str, name: str, x: Any, allowed: Sequence[str] = DATA_TYPES) -> None:
    if _type(x) not in allowed:
        raise _fail(f"{op}: {name}'s data type {_type(x)} is not one of {', '.join(allowed)}")


def _options(op: str, options: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise _fail(f"{op}: options must be a dictionary, not {type(options).__name__}")
    return options


def _axis(op: str, value: Any, rank: int, name: str = "options.axis") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < rank:
        raise _fail(
            f"{op}: {name} {value!r} is outside [0, {rank - 1}]"
            if rank
            else f"{op}: {name} {value!r}: the input is a scalar (0-D) and has no axis"
        )
    return value


def _ints(op: str, name: str, values: Any) -> list[int]:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise _fail(f"{op}: {name} must be a sequence of integers") from None
    if any(isinstance(v, bool) for v in values):
        raise _fail(f"{op}: {name} must be a sequence of integers")
    return out


def _reshaped(x: Any, shape: Sequence[int]) -> Any:
    """`x` with another shape: a view where the array allows one, else a packed copy."""
    try:
        return x.reshape(tuple(shape))
    except (ValueError, RuntimeError):
        return _copy(x).reshape(tuple(shape))


def _copy(x: Any) -> Any:
    """A packed copy of `x` (any rank, 0-D included) through SLICE1."""
    shape = _shape(x)
    if not shape:
        return strided.slice1(x.reshape(1), [0], [1], [1]).reshape(())
    return strided.slice1(x, [0] * len(shape), list(shape), [1] * len(shape))


def _one_d(x: Any) -> Any:
    return x.reshape(1) if not _shape(x) else x


# -- slice, split, concat ------------------------------------------------------------------


def slice(  # noqa: A001 - WebNN's operation name
    input: Any,  # noqa: A002 - WebNN's argument name
    starts: Sequence[int],
    sizes: Sequence[int],
    options: Mapping[str, Any] | Sequence[int] | None = None,
    *,
    strides: Sequence[int] | None = None,
) -> Any:
    """MLGraphBuilder.slice: input[starts[i] : starts[i] + sizes[i] : strides[i]] per axis,
    `options.strides` (default 1s). A 0-D input takes empty starts and sizes.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.slice(np.arange(6, dtype=np.float32), [1], [4], {"strides": [2]}).tolist()
    [1.0, 3.0]
    """
    if options is not None and not isinstance(options, Mapping):  # the earlier signature
        strides, options = list(options), None
    opts = _options("slice", options)
    _check_type("slice", "input", input)
    shape = _shape(input)
    rank = len(shape)
    starts = _ints("slice", "starts", starts)
    sizes = _ints("slice", "sizes", sizes)
    given = opts.get("strides", strides)
    steps = [1] * rank if given is None else _ints("slice", "options.strides", given)
    for name, arr in (("starts", starts), ("sizes", sizes), ("options.strides", steps)):
        if len(arr) != rank:
            raise _fail(f"slice: {name} has {len(arr)} entries, input rank is {rank}")
    for i in range(rank):
        if starts[i] < 0 or starts[i] >= shape[i]:
            raise _fail(f"slice: starts[{i}] is {starts[i]}: must be in [0, {shape[i] - 1}]")
        if sizes[i] < 1:
            raise _fail(f"slice: sizes[{i}] is {sizes[i]}: must be at least 1")
        if starts[i] + sizes[i] > shape[i]:
            raise _fail(
                f"slice: starts[{i}] + sizes[{i}] = {starts[i] + sizes[i]} exceeds {shape[i]}"
            )
        if steps[i] < 1:
            raise _fail(f"slice: options.strides[{i}] is {steps[i]}: must be at least 1")
    if rank == 0:
        return _copy(input)
    return strided.slice1(input, starts, sizes, steps)


def split(
    input: Any,  # noqa: A002
    splits: int | Sequence[int],
    options: Mapping[str, Any] | int | None = None,
    *,
    axis: int | None = None,
) -> list[Any]:
    """MLGraphBuilder.split: `splits` equal parts (an int) or parts of these sizes, along
    `options.axis` (default 0).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> print([p.tolist() for p in webnn.split(np.arange(4, dtype=np.int32), 2)])
    [[0, 1], [2, 3]]
    """
    if isinstance(options, int):  # the earlier signature: split(input, splits, axis)
        axis, options = options, None
    opts = _options("split", options)
    _check_type("split", "input", input)
    shape = _shape(input)
    ax = _axis("split", opts.get("axis", 0 if axis is None else axis), len(shape))
    dim = shape[ax]
    if isinstance(splits, int) and not isinstance(splits, bool):
        if splits < 1 or dim % splits:
            raise _fail(f"split: {dim} does not divide into {splits} equal parts")
        sizes = [dim // splits] * splits
    else:
        sizes = _ints("split", "splits", splits)
        if not sizes or min(sizes) < 1:
            raise _fail(f"split: splits {sizes} must be non-empty and each at least 1")
        if sum(sizes) != dim:
            raise _fail(f"split: splits {sizes} sum to {sum(sizes)}, dimension {ax} is {dim}")
    return list(strided.split(input, ax, sizes))


def concat(inputs: Sequence[Any], axis: int, options: Mapping[str, Any] | None = None) -> Any:
    """MLGraphBuilder.concat: join `inputs` along `axis`.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.concat([np.zeros(1, np.float32), np.ones(2, np.float32)], 0).tolist()
    [0.0, 1.0, 1.0]
    """
    _options("concat", options)
    if not inputs:
        raise _fail("concat: inputs is empty")
    first = _shape(inputs[0])
    for k, x in enumerate(inputs):
        _check_type("concat", f"inputs[{k}]", x)
        if _type(x) != _type(inputs[0]):
            raise _fail(
                f"concat: inputs[{k}] has data type {_type(x)}, inputs[0] {_type(inputs[0])}"
            )
    ax = _axis("concat", axis, len(first), "axis")
    for k, x in enumerate(inputs):
        s = _shape(x)
        if len(s) != len(first) or any(
            a != b for d, (a, b) in enumerate(zip(s, first, strict=True)) if d != ax
        ):
            raise _fail(f"concat: inputs[{k}] has shape {list(s)}, incompatible with {list(first)}")
    return strided.join(list(inputs), ax)


# -- expand, tile, pad, reverse, transpose, reshape -----------------------------------------


def expand(
    input: Any,  # noqa: A002
    newShape: Sequence[int],
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.expand: `input` broadcast to `newShape` (each input dimension, aligned
    to the right, equal to the new one or 1), through TILE.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.expand(np.array([1, 2], np.int8), [2, 2]).tolist()
    [[1, 2], [1, 2]]
    """
    _options("expand", options)
    _check_type("expand", "input", input)
    shape = _shape(input)
    target = _ints("expand", "newShape", newShape)
    if len(target) < len(shape):
        raise _fail(
            f"expand: newShape {target} has fewer dimensions than the input's {list(shape)}"
        )
    if any(n < 1 for n in target):
        raise _fail(f"expand: newShape {target}: every dimension must be at least 1")
    padded = [1] * (len(target) - len(shape)) + list(shape)
    for d, (n, m) in enumerate(zip(padded, target, strict=True)):
        if n != m and n != 1:
            raise _fail(
                f"expand: input shape {list(shape)} does not broadcast to newShape {target} "
                f"(dimension {d}: {n} to {m})"
            )
    if not target:
        return _copy(input)
    repeats = [m // n for n, m in zip(padded, target, strict=True)]
    return strided.tile(_reshaped(_one_d(input), padded), repeats)


def tile(
    input: Any,  # noqa: A002
    repetitions: Sequence[int],
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.tile: input repeated `repetitions[i]` times along dimension i (TILE).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.tile(np.array([[1, 2]], np.uint8), [2, 1]).tolist()
    [[1, 2], [1, 2]]
    """
    _options("tile", options)
    _check_type("tile", "input", input)
    shape = _shape(input)
    reps = _ints("tile", "repetitions", repetitions)
    if len(reps) != len(shape):
        raise _fail(f"tile: repetitions has {len(reps)} entries, input rank is {len(shape)}")
    for i, r in enumerate(reps):
        if r < 1:
            raise _fail(f"tile: repetitions[{i}] is {r}: must be at least 1")
    if not shape:
        return _copy(input)
    return strided.tile(input, reps)


_PAD_MODES = {"constant": "CONSTANT", "edge": "EDGE", "reflection": "REFLECTION"}


def pad(
    input: Any,  # noqa: A002
    beginningPadding: Sequence[int],
    endingPadding: Sequence[int],
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.pad: `options.mode` "constant" (`options.value`, default 0), "edge" or
    "reflection" (PADDING1).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.pad(np.array([1, 2, 3], np.float32), [2], [1], {"mode": "reflection"}).tolist()
    [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]
    """
    opts = _options("pad", options)
    _check_type("pad", "input", input)
    shape = _shape(input)
    begin = _ints("pad", "beginningPadding", beginningPadding)
    end = _ints("pad", "endingPadding", endingPadding)
    for name, arr in (("beginningPadding", begin), ("endingPadding", end)):
        if len(arr) != len(shape):
            raise _fail(f"pad: {name} has {len(arr)} entries, input rank is {len(shape)}")
        for i, v in enumerate(arr):
            if v < 0:
                raise _fail(f"pad: {name}[{i}] is {v}: must be at least 0")
    mode = opts.get("mode", "constant")
    if mode not in _PAD_MODES:
        raise _fail(f"pad: options.mode {mode!r} is not 'constant', 'edge' or 'reflection'")
    if mode == "reflection":
        for i, n in enumerate(shape):
            for name, arr in (("beginningPadding", begin), ("endingPadding", end)):
                if arr[i] >= n:
                    raise _fail(
                        f"pad: {name}[{i}] is {arr[i]}: reflection needs it below the input's "
                        f"size {n} there"
                    )
    value = opts.get("value", 0)
    if not shape:
        return _copy(input)
    return strided.padding(input, begin, end, _PAD_MODES[mode], value)


def resample2d(input: Any, options: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
    """MLGraphBuilder.resample2d in its "nearest-neighbor" mode on two axes (default
    [2, 3]; [1, 2] for NHWC) by `options.scales` (the output's sizes rounded down) or to
    `options.sizes`: WebNN's half-pixel coordinates at the scale output size / input size,
    ties to the smaller index (as its conformance tests: ceil(x - 0.5)). Whole-factor
    upsampling of NCHW is UPSAMPLE_2D's copies; any other is RESAMPLE2 (offsets 1 and
    -0.5, rounding up). "linear"
    interpolates (arithmetic) and is refused by name.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.array([[[[1, 2]]]], np.float32)
    >>> webnn.resample2d(x, {"scales": [2.0, 2.0]})[0, 0].tolist()
    [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]
    """
    opts = _options("resample2d", options)
    _check_type("resample2d", "input", input, ("float32", "float16"))
    shape = _shape(input)
    if len(shape) != 4:
        raise _fail(f"resample2d: input has rank {len(shape)}: it must be 4")
    mode = opts.get("mode", "nearest-neighbor")
    if mode not in ("nearest-neighbor", "linear"):
        raise _fail(f"resample2d: options.mode {mode!r} is not 'nearest-neighbor' or 'linear'")
    if mode == "linear":
        raise _fail("resample2d: options.mode 'linear' interpolates (arithmetic); dmlops moves "
                    "elements ('nearest-neighbor')")  # fmt: skip
    axes = _ints("resample2d", "options.axes", opts.get("axes", [2, 3]))
    if axes not in ([2, 3], [1, 2]):
        raise _fail(f"resample2d: options.axes {axes} are not [2, 3] (NCHW) or [1, 2] (NHWC)")
    if "sizes" in opts:
        sizes = _ints("resample2d", "options.sizes", opts["sizes"])
        if len(sizes) != 2 or any(s < 1 for s in sizes):
            raise _fail(f"resample2d: options.sizes {sizes} must be two sizes of at least 1")
        factors = [s / shape[a] for s, a in zip(sizes, axes, strict=True)]
    else:
        scales = opts.get("scales", [1.0, 1.0])
        if len(scales) != 2 or any(not float(s) > 0 for s in scales):
            raise _fail(f"resample2d: options.scales {list(scales)} must be two positive numbers")
        factors = [float(s) for s in scales]
    if axes != [2, 3] or any(not f.is_integer() or f < 1 for f in factors) or "sizes" in opts:
        out = list(shape)
        scales4 = [1.0] * 4
        for k, a in enumerate(axes):  # (the scale applied: the output's size / the input's)
            out[a] = sizes[k] if "sizes" in opts else int(np.float32(factors[k]) * shape[a])
            scales4[a] = out[a] / shape[a]
        if 0 in out:
            raise _fail(f"resample2d: the output's sizes {out} are empty (scales too small)")
        return family.resample(
            input,
            scales4,
            sizes=out,
            input_pixel_offsets=[1.0] * 4,
            output_pixel_offsets=[-0.5] * 4,
            rounding_direction="INCREASING",
        )
    height, width = (int(f) for f in factors)
    if axes == [2, 3]:
        return strided.upsample_2d(input, [height, width])
    nchw = strided.upsample_2d(input.transpose(0, 3, 1, 2), [height, width])
    return _copy(nchw.transpose(0, 2, 3, 1))


def reverse(input: Any, options: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
    """MLGraphBuilder.reverse: the input with the order of `options.axes` reversed (default
    every axis; an empty list copies it unchanged), SLICE1 with negative strides.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.reverse(np.arange(4, dtype=np.int32).reshape(2, 2), {"axes": [1]}).tolist()
    [[1, 0], [3, 2]]
    """
    opts = _options("reverse", options)
    _check_type("reverse", "input", input)
    shape = _shape(input)
    rank = len(shape)
    axes = (
        list(range(rank))
        if opts.get("axes") is None
        else _ints("reverse", "options.axes", opts["axes"])
    )
    for i, a in enumerate(axes):
        _axis("reverse", a, rank, f"options.axes[{i}]")
    if len(set(axes)) != len(axes):
        raise _fail(f"reverse: options.axes {axes} names an axis twice")
    if not shape:
        return _copy(input)
    steps = [-1 if d in axes else 1 for d in range(rank)]
    return strided.slice1(input, [0] * rank, list(shape), steps)


def transpose(input: Any, options: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
    """MLGraphBuilder.transpose: dimensions permuted by `options.permutation` (default
    reversed), an identity copy of the permuted view.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.transpose(np.arange(6, dtype=np.float16).reshape(2, 3)).shape
    (3, 2)
    """
    opts = _options("transpose", options)
    _check_type("transpose", "input", input)
    rank = len(_shape(input))
    given = opts.get("permutation")
    perm = (
        list(range(rank))[::-1]
        if given is None
        else _ints("transpose", "options.permutation", given)
    )
    if len(perm) != rank:
        raise _fail(f"transpose: options.permutation has {len(perm)} entries, input rank is {rank}")
    if sorted(perm) != list(range(rank)):
        raise _fail(f"transpose: options.permutation {perm} is not a permutation of 0..{rank - 1}")
    if rank == 0:
        return _copy(input)
    return _copy(_permuted(input, perm))


def _permuted(x: Any, perm: Sequence[int]) -> Any:
    """A view of `x` with its dimensions permuted (numpy, CuPy, torch, WebGPU arrays)."""
    permute = getattr(x, "permute", None)  # torch's name for it
    return permute(*perm) if permute is not None else x.transpose(tuple(perm))


def cast(input: Any, type: str, options: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
    """MLGraphBuilder.cast: the input's elements converted to `type` (one of WebNN's data
    types), by DirectML's CAST (its rules: `dmlops.conversion`; WebNN leaves out-of-range
    conversions to the implementation).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.cast(np.array([1.5, -2.5, 300.0], np.float32), "int8").tolist()
    [1, -2, 127]
    """
    _options("cast", options)
    _check_type("cast", "input", input)
    if type not in DATA_TYPES:
        raise _fail(f"cast: type {type!r} is not one of {', '.join(DATA_TYPES)}")
    if not _shape(input):  # a 0-D tensor: DirectML's tensors have a dimension
        return family.cast(input.reshape(1), np.dtype(type)).reshape(())
    return family.cast(input, np.dtype(type))


def triangular(input: Any, options: Mapping[str, Any] | None = None) -> Any:  # noqa: A002
    """MLGraphBuilder.triangular: the upper (options.upper, default true) or lower triangle
    of each matrix of the last two dimensions, counted from options.diagonal (default 0),
    zeros elsewhere (one DIAGONAL_MATRIX1; the leading dimensions merged into its batch).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.triangular(np.ones((2, 3), np.int32), {"upper": False}).tolist()
    [[1, 0, 0], [1, 1, 0]]
    """
    opts = _options("triangular", options)
    _check_type("triangular", "input", input)
    shape = _shape(input)
    if len(shape) < 2:
        raise _fail(f"triangular: input has rank {len(shape)}: it must be at least 2")
    upper = opts.get("upper", True)
    if not isinstance(upper, bool):
        raise _fail(f"triangular: options.upper {upper!r} is not a boolean")
    diagonal = opts.get("diagonal", 0)
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise _fail(f"triangular: options.diagonal {diagonal!r} is not an integer")
    *lead, height, width = shape
    begin, end = triangle_span(upper, diagonal, height, width)
    three = input if len(shape) <= 4 else _copy(input).reshape((math.prod(lead), height, width))
    kept = family.diagonal_matrix1(three, begin, end, 0)
    return kept if len(shape) <= 4 else kept.reshape(shape)


def reshape(
    input: Any,  # noqa: A002
    newShape: Sequence[int],
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.reshape: the input's elements, in order, in `newShape` (a packed copy).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.reshape(np.arange(6, dtype=np.int64), [3, 2]).tolist()
    [[0, 1], [2, 3], [4, 5]]
    """
    _options("reshape", options)
    _check_type("reshape", "input", input)
    target = _ints("reshape", "newShape", newShape)
    if any(n < 1 for n in target):
        raise _fail(f"reshape: newShape {target}: every dimension must be at least 1")
    count = math.prod(_shape(input))
    if math.prod(target) != count:
        raise _fail(
            f"reshape: newShape {target} holds {math.prod(target)} elements, the input {count}"
        )
    return _copy(input).reshape(tuple(target))


# -- the gather and scatter family -----------------------------------------------------------


def _check_along_axis(op: str, ishape: tuple[int, ...], shape: tuple[int, ...], axis: int) -> None:
    """indices' shape equal to the input's but along options.axis (gatherElements,
    scatterElements)."""
    for d, (n, m) in enumerate(zip(ishape, shape, strict=True)):
        if d != axis and n != m:
            raise _fail(
                f"{op}: indices' dimension {d} is {n}, input's {m}: only options.axis may differ"
            )


def _check_indices(op: str, indices: Any) -> None:
    _check_type(op, "indices", indices, INDEX_TYPES)


def gather(
    input: Any,  # noqa: A002
    indices: Any,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.gather: input's entries along `options.axis` (default 0) at `indices`
    (0-D allowed); out-of-range indices are clamped into the axis (GATHER).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.array([10, 11, 12], np.float32)
    >>> webnn.gather(x, np.array([2, 7, -1], np.int32)).tolist()
    [12.0, 12.0, 12.0]
    """
    opts = _options("gather", options)
    _check_type("gather", "input", input)
    _check_indices("gather", indices)
    rank = len(_shape(input))
    if rank == 0:
        raise _fail("gather: input is a scalar (0-D): it needs at least one dimension")
    axis = _axis("gather", opts.get("axis", 0), rank)
    return indexed.gather(input, indices, axis, clamp_indices=True)


def gatherElements(
    input: Any,  # noqa: A002
    indices: Any,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.gatherElements: numpy.take_along_axis along `options.axis`, indices
    clamped (GATHER_ELEMENTS).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.array([[1, 2], [3, 4]], np.int32)
    >>> webnn.gatherElements(x, np.array([[1, 0]], np.uint32)).tolist()
    [[3, 2]]
    """
    opts = _options("gatherElements", options)
    op = "gatherElements"
    _check_type(op, "input", input)
    _check_indices(op, indices)
    shape, ishape = _shape(input), _shape(indices)
    if not shape:
        raise _fail(f"{op}: input is a scalar (0-D): it needs at least one dimension")
    if len(ishape) != len(shape):
        raise _fail(f"{op}: indices has rank {len(ishape)}, input {len(shape)}: they must match")
    axis = _axis(op, opts.get("axis", 0), len(shape))
    _check_along_axis(op, ishape, shape, axis)
    return indexed.gather_elements(input, indices, axis, clamp_indices=True)


def gatherND(
    input: Any,  # noqa: A002
    indices: Any,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.gatherND: each index tuple (indices' last dimension) picks a sub-block
    of the input; indices clamped (GATHER_ND).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.array([[1, 2], [3, 4]], np.float32)
    >>> webnn.gatherND(x, np.array([[1, 1], [0, 9]], np.int64)).tolist()
    [4.0, 2.0]
    """
    _options("gatherND", options)
    op = "gatherND"
    _check_type(op, "input", input)
    _check_indices(op, indices)
    shape, ishape = _shape(input), _shape(indices)
    if not shape:
        raise _fail(f"{op}: input is a scalar (0-D): it needs at least one dimension")
    if not ishape:
        raise _fail(f"{op}: indices is a scalar (0-D): its last dimension holds the index tuples")
    if not 1 <= ishape[-1] <= len(shape):
        raise _fail(
            f"{op}: indices' last dimension is {ishape[-1]}: must be in [1, {len(shape)}] "
            "(the input's rank)"
        )
    return indexed.gather_nd(input, indices, 0, clamp_indices=True)


def scatterElements(
    input: Any,  # noqa: A002
    indices: Any,
    updates: Any,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.scatterElements: a copy of the input with `updates` written where
    `indices` say along `options.axis`; indices clamped; of two updates to one element the
    later in index order wins (SCATTER_ELEMENTS).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.zeros(4, np.float32)
    >>> webnn.scatterElements(x, np.array([3, 1], np.int32), np.ones(2, np.float32)).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    opts = _options("scatterElements", options)
    op = "scatterElements"
    _check_type(op, "input", input)
    _check_indices(op, indices)
    if _type(updates) != _type(input):
        raise _fail(f"{op}: updates' data type {_type(updates)} is not input's {_type(input)}")
    shape, ishape, ushape = _shape(input), _shape(indices), _shape(updates)
    if not shape:
        raise _fail(f"{op}: input is a scalar (0-D): it needs at least one dimension")
    if len(ishape) != len(shape):
        raise _fail(f"{op}: indices has rank {len(ishape)}, input {len(shape)}: they must match")
    if len(ushape) != len(shape):
        raise _fail(f"{op}: updates has rank {len(ushape)}, input {len(shape)}: they must match")
    axis = _axis(op, opts.get("axis", 0), len(shape))
    _check_along_axis(op, ishape, shape, axis)
    if ushape != ishape:
        raise _fail(f"{op}: updates' shape {list(ushape)} is not indices' {list(ishape)}")
    return indexed.scatter_elements(input, indices, updates, axis, clamp_indices=True)


def scatterND(
    input: Any,  # noqa: A002
    indices: Any,
    updates: Any,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """MLGraphBuilder.scatterND: a copy of the input with each index tuple's sub-block
    replaced by `updates`; indices clamped; the later in index order wins (SCATTER_ND).

    >>> import numpy as np, dmlops.webnn as webnn
    >>> x = np.zeros((2, 2), np.int32)
    >>> webnn.scatterND(x, np.array([[1]], np.int64), np.array([[5, 6]], np.int32)).tolist()
    [[0, 0], [5, 6]]
    """
    _options("scatterND", options)
    op = "scatterND"
    _check_type(op, "input", input)
    _check_indices(op, indices)
    if _type(updates) != _type(input):
        raise _fail(f"{op}: updates' data type {_type(updates)} is not input's {_type(input)}")
    shape, ishape, ushape = _shape(input), _shape(indices), _shape(updates)
    if not shape:
        raise _fail(f"{op}: input is a scalar (0-D): it needs at least one dimension")
    if not ishape:
        raise _fail(f"{op}: indices is a scalar (0-D): its last dimension holds the index tuples")
    k = ishape[-1]
    if not 1 <= k <= len(shape):
        raise _fail(
            f"{op}: indices' last dimension is {k}: must be in [1, {len(shape)}] (the input's rank)"
        )
    expected = ishape[:-1] + shape[k:]
    if ushape != expected:
        raise _fail(f"{op}: updates' shape {list(ushape)} must be {list(expected)}")
    return indexed.scatter_nd(input, indices, updates, clamp_indices=True)


gather_elements = gatherElements
gather_nd = gatherND
scatter_elements = scatterElements
scatter_nd = scatterND
