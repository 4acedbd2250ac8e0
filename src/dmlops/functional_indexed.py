"""The indexed operators on arrays, with ONNX's argument conventions (numpy.take,
numpy.take_along_axis, GatherND's batch_dims, ScatterElements, ScatterND, OneHot): ranks are
padded with leading ones into one DirectML DimensionCount, negative axes count from the end,
and results come back in the conventional shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .arrays import indexed as _arrays
from .arrays.indexed import Level
from .calls import _moved, _through_torch
from .errors import DmlError

__all__ = [
    "gather",
    "gather_elements",
    "gather_nd",
    "scatter_elements",
    "scatter_nd",
    "one_hot",
    "reverse_subsequences",
    "max_unpooling",
]


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

    >>> import numpy as np, dmlops
    >>> dmlops.gather(np.array([[1, 2], [3, 4], [5, 6]], np.float32), [2, 0]).tolist()
    [[5.0, 6.0], [1.0, 2.0]]
    """
    if type(input) is not np.ndarray and _through_torch([input, indices]):
        kwargs = _options(feature_level, out, device, clamp_indices, validate_indices)
        return _moved("GATHER", (input, indices, axis), kwargs)
    return _arrays.gather(
        input,
        indices,
        axis,
        feature_level=feature_level,
        out=out,
        device=device,
        clamp_indices=clamp_indices,
        validate_indices=validate_indices,
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
    """DML GATHER_ELEMENTS as numpy.take_along_axis / ONNX GatherElements.

    >>> import numpy as np, dmlops
    >>> x = np.array([[10, 11, 12], [20, 21, 22]], np.int32)
    >>> dmlops.gather_elements(x, np.array([[2, 0], [1, 1]]), 1).tolist()
    [[12, 10], [21, 21]]
    """
    if type(input) is not np.ndarray and _through_torch([input, indices]):
        kwargs = _options(feature_level, out, device, clamp_indices, validate_indices)
        return _moved("GATHER_ELEMENTS", (input, indices, axis), kwargs)
    return _arrays.gather_elements(
        input,
        indices,
        axis,
        feature_level=feature_level,
        out=out,
        device=device,
        clamp_indices=clamp_indices,
        validate_indices=validate_indices,
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

    >>> import numpy as np, dmlops
    >>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> dmlops.gather_nd(x, [[2], [0]]).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    if type(input) is not np.ndarray and _through_torch([input, indices]):
        kwargs = _options(feature_level, out, device, clamp_indices, validate_indices)
        return _moved("GATHER_ND", (input, indices, batch_dims), kwargs)
    return _arrays.gather_nd(
        input,
        indices,
        batch_dims,
        feature_level=feature_level,
        out=out,
        device=device,
        clamp_indices=clamp_indices,
        validate_indices=validate_indices,
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

    >>> import numpy as np, dmlops
    >>> x = np.zeros(5, np.float32)
    >>> dmlops.scatter_elements(x, [1, 3, 1], np.array([7, 8, 9], np.float32)).tolist()
    [0.0, 9.0, 0.0, 8.0, 0.0]
    """
    if (type(input) is not np.ndarray or type(updates) is not np.ndarray) and _through_torch(
        [input, indices, updates]
    ):
        kwargs = _options(feature_level, out, device, clamp_indices, validate_indices)
        return _moved("SCATTER_ELEMENTS", (input, indices, updates, axis), kwargs)
    return _arrays.scatter_elements(
        input,
        indices,
        updates,
        axis,
        feature_level=feature_level,
        out=out,
        device=device,
        clamp_indices=clamp_indices,
        validate_indices=validate_indices,
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

    >>> import numpy as np, dmlops
    >>> cache = np.zeros((4, 2), np.float16)
    >>> _ = dmlops.scatter_nd(cache, [[3], [1]], np.ones((2, 2), np.float16), out=cache)
    >>> cache[:, 0].tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    if (type(input) is not np.ndarray or type(updates) is not np.ndarray) and _through_torch(
        [input, indices, updates]
    ):
        kwargs = _options(feature_level, out, device, clamp_indices, validate_indices)
        return _moved("SCATTER_ND", (input, indices, updates), kwargs)
    return _arrays.scatter_nd(
        input,
        indices,
        updates,
        feature_level=feature_level,
        out=out,
        device=device,
        clamp_indices=clamp_indices,
        validate_indices=validate_indices,
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

    >>> import numpy as np, dmlops
    >>> dmlops.one_hot(np.array([2, -1, 7]), 3, np.array([0, 5], np.int8)).tolist()
    [[0, 0, 5], [0, 0, 5], [0, 0, 0]]
    """
    if (type(indices) is not np.ndarray or type(values) is not np.ndarray) and _through_torch(
        [indices, values]
    ):
        kwargs = {"feature_level": feature_level, "out": out, "device": device}
        return _moved("ONE_HOT", (indices, depth, values, axis), kwargs)
    return _arrays.one_hot(
        indices, depth, values, axis, feature_level=feature_level, out=out, device=device
    )


# the clip ufunc itself (np.clip wraps it in 5 µs of Python); numpy 1.x names its module core
_clip: Any = (getattr(np, "_core", None) or np.core).umath.clip


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

    >>> import numpy as np, dmlops
    >>> x = np.arange(8, dtype=np.float32).reshape(2, 4)
    >>> dmlops.reverse_subsequences(x, np.array([3, 1]), axis=1, batch_axis=0).tolist()
    [[2.0, 1.0, 0.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    """
    if type(input) is not np.ndarray and _through_torch([input, lengths]):
        kwargs = {"feature_level": feature_level, "out": out, "device": device}
        args = (input, lengths, axis, batch_axis)
        return _moved("REVERSE_SUBSEQUENCES", args, kwargs)
    return _arrays.reverse_subsequences(
        input, lengths, axis, batch_axis, feature_level=feature_level, out=out, device=device
    )


def max_unpooling(
    input: Any,  # noqa: A002 - DirectML's field name
    indices: Any,
    output_sizes: Sequence[int],
    *,
    feature_level: Level = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML MAX_UNPOOLING (ONNX MaxUnpool): a zeroed [N, C, H, W] array of `output_sizes`
    with input[c] written at indices[c], each index a position of the whole output read as
    one contiguous array (ONNX MaxPool's Indices; torch's max_pool2d counts within each
    (n, c) plane: add (n * C + c) * H * W to use them). Signed indices are read as unsigned;
    of two values for one element the later in index order wins. A torch input that needs a
    gradient gets it: each element's is the output gradient where it landed (zero where a
    later element took its place, as the forward's winner rule says).

    >>> import numpy as np, dmlops
    >>> x = np.array([[[[5, 6], [7, 8]]]], np.float32)
    >>> i = np.array([[[[0, 3], [9, 15]]]], np.uint32)
    >>> dmlops.max_unpooling(x, i, [1, 1, 4, 4])[0, 0].tolist()
    [[5.0, 0.0, 0.0, 6.0], [0.0, 0.0, 0.0, 0.0], [0.0, 7.0, 0.0, 0.0], [0.0, 0.0, 0.0, 8.0]]
    """
    if getattr(input, "requires_grad", False) and _through_torch([input]):
        import torch

        if torch.is_grad_enabled():
            if out is not None or device is not None:
                raise DmlError(
                    "MAX_UNPOOLING: a call with out= or device= takes no gradient, and the "
                    "input needs one (detach it, or call under torch.no_grad())"
                )
            from .torch.unpooling import unpooled_with_gradient

            return unpooled_with_gradient(input, indices, output_sizes, feature_level)
    return _arrays.max_unpooling(
        input, indices, output_sizes, feature_level=feature_level, out=out, device=device
    )
