"""The values a lowering passes between nodes: a graph tensor, an empty tensor (a shape
and a dtype, no data: ONNX allows size 0, DirectML does not) or a 0-D scalar."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..elements import word_element
from ..errors import DmlError, ModelError
from ..graph import Graph, GraphTensor
from ..tensor import BufferTensorDesc


@dataclass(frozen=True)
class _Empty:
    """An ONNX tensor with a zero-sized dimension: a shape and a dtype, no data."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class _Scalar:
    """A 0-D ONNX tensor: its one element, as a graph tensor of sizes [1]."""

    tensor: GraphTensor


Value = GraphTensor | _Empty | _Scalar


def _shape(v: Value) -> tuple[int, ...]:
    if isinstance(v, _Empty):
        return v.shape
    return () if isinstance(v, _Scalar) else v.sizes


def _tensor(v: Value) -> GraphTensor:
    """The graph tensor holding a value's elements."""
    assert not isinstance(v, _Empty)
    return v.tensor if isinstance(v, _Scalar) else v


def graph_value(g: Graph, shape: tuple[int, ...], dtype: np.dtype[Any], name: str) -> Value:
    """A value of this shape and type entering graph g: empty (no input), a scalar (an input
    of sizes [1]) or an input of its shape."""
    if 0 in shape:
        return _Empty(shape, dtype)
    try:
        element = word_element(dtype, "an ONNX graph")
    except DmlError as e:
        raise ModelError(f"'{name}': {e}") from None
    desc = BufferTensorDesc(element.described_as, shape or (1,))
    t = g.input(desc, name=name)
    return _Scalar(t) if not shape else t
