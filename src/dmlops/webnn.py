"""WebNN adapter: MLGraphBuilder's slice, split and concat, lowered onto SLICE1, SPLIT and JOIN.

Arguments are checked as the WebNN specification's steps check them (errors
name the WebNN argument); the DirectML operator then validates its own fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import functional
from .errors import InvalidDescriptorError

__all__ = ["slice", "split", "concat"]


def _fail(message: str) -> InvalidDescriptorError:
    return InvalidDescriptorError(f"webnn.{message}")


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in x.shape)


def slice(  # noqa: A001 - WebNN's operation name
    input: Any,  # noqa: A002 - WebNN's argument name
    starts: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int] | None = None,
) -> Any:
    """MLGraphBuilder.slice: input[starts[i] : starts[i] + sizes[i] : strides[i]] per axis.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.slice(np.arange(6, dtype=np.float32), [1], [4], strides=[2]).tolist()
    [1.0, 3.0]
    """
    shape = _shape(input)
    rank = len(shape)
    strides = [1] * rank if strides is None else list(strides)
    for name, arr in (("starts", starts), ("sizes", sizes), ("strides", strides)):
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
        if strides[i] < 1:
            raise _fail(f"slice: strides[{i}] is {strides[i]}: must be at least 1")
    return functional.slice1(input, list(starts), list(sizes), strides)


def split(input: Any, splits: int | Sequence[int], axis: int = 0) -> list[Any]:  # noqa: A002
    """MLGraphBuilder.split: `splits` equal parts (an int) or parts of these sizes, along `axis`.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> [p.tolist() for p in webnn.split(np.arange(4, dtype=np.int32), 2)]
    [[0, 1], [2, 3]]
    """
    shape = _shape(input)
    if not 0 <= axis < len(shape):
        raise _fail(f"split: axis {axis} is outside [0, {len(shape) - 1}]")
    dim = shape[axis]
    if isinstance(splits, int):
        if splits < 1 or dim % splits:
            raise _fail(f"split: {dim} does not divide into {splits} equal parts")
        sizes = [dim // splits] * splits
    else:
        sizes = [int(s) for s in splits]
        if not sizes or min(sizes) < 1:
            raise _fail(f"split: splits {sizes} must be non-empty and each at least 1")
        if sum(sizes) != dim:
            raise _fail(f"split: splits {sizes} sum to {sum(sizes)}, dimension {axis} is {dim}")
    return functional.split(input, axis, sizes)


def concat(inputs: Sequence[Any], axis: int) -> Any:
    """MLGraphBuilder.concat: join `inputs` along `axis`.

    >>> import numpy as np, dmlops.webnn as webnn
    >>> webnn.concat([np.zeros(1, np.float32), np.ones(2, np.float32)], 0).tolist()
    [0.0, 1.0, 1.0]
    """
    if not inputs:
        raise _fail("concat: inputs is empty")
    first = _shape(inputs[0])
    if not 0 <= axis < len(first):
        raise _fail(f"concat: axis {axis} is outside [0, {len(first) - 1}]")
    for k, x in enumerate(inputs):
        s = _shape(x)
        if x.dtype != inputs[0].dtype:
            raise _fail(f"concat: inputs[{k}] has data type {x.dtype}, inputs[0] {inputs[0].dtype}")
        if len(s) != len(first) or any(
            a != b for d, (a, b) in enumerate(zip(s, first, strict=True)) if d != axis
        ):
            raise _fail(f"concat: inputs[{k}] has shape {list(s)}, incompatible with {list(first)}")
    return functional.join(list(inputs), axis)
