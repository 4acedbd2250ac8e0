"""Where each output element of an operator comes from: an input element, or a constant.

For the strided operators this is their logical copies, element by element. For the indexed
ones (GATHER, SCATTER, ONE_HOT, REVERSE_SUBSEQUENCES) it depends on the index values: the
operator's own plan runs on the CPU with every data element replaced by a tag naming its
input and position, so the answer is what the operator does, not a second model of it.
The pictures (`picture.py`) and `dmlops explain` read it.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .backends import get_backend
from .errors import DmlError
from .ops import OperatorDesc
from .tensor import BufferTensorDesc

__all__ = ["Source", "element_sources"]

Source = tuple[int, tuple[int, ...]]  # (input, coordinate); (fill source < 0, ()) a constant

_UNWRITTEN = -1
_FILL = -2
_SHIFT = 32  # a tag: input << _SHIFT | packed position


def element_sources(
    desc: OperatorDesc, indices: Mapping[int, Any] | None = None
) -> dict[tuple[int, tuple[int, ...]], Source]:
    """(output, coordinate) -> (input, coordinate) for every element the operator writes
    (a constant: (fill source, ())). An indexed operator needs its index values:
    `indices[k]`, shaped as input k (its index field)."""
    if desc.INDEX_FIELD is None:
        return _from_copies(desc)
    names = [name for name, _ in desc.input_fields()]
    k = names.index(desc.INDEX_FIELD)
    if indices is None or k not in indices:
        raise DmlError(f"{desc.OPERATOR}: where its elements come from depends on the values of "
                       f"its {desc.INDEX_FIELD}: give them")  # fmt: skip
    return _tagged_run(desc, k, np.asarray(indices[k]))


def _from_copies(desc: OperatorDesc) -> dict[tuple[int, tuple[int, ...]], Source]:
    found: dict[tuple[int, tuple[int, ...]], Source] = {}
    layouts = desc.fill_layouts()
    tensors = {-1 - k for k, layout in enumerate(layouts) if layout is not None}
    for c in desc.logical_copies():
        dst_step = c.dst_step or (1,) * len(c.shape)
        for idx in np.ndindex(*c.shape):
            src = tuple(s + k * t for s, k, t in zip(c.src_start, idx, c.src_step, strict=True))
            dst = tuple(s + k * t for s, k, t in zip(c.dst_start, idx, dst_step, strict=True))
            constant = c.src < 0 and c.src not in tensors  # (a tensor fill: its coordinate)
            found[(c.dst, dst)] = (c.src, ()) if constant else (c.src, src)
    return found


def _positions(t: BufferTensorDesc) -> tuple[list[tuple[int, ...]], np.ndarray[Any, Any]]:
    """Every coordinate of t in row-major order, and the element each lies at."""
    coords = list(itertools.product(*(range(n) for n in t.sizes)))
    strides = np.array(t.effective_strides, np.int64)
    at = np.array(coords, np.int64).reshape(len(coords), len(t.sizes)) @ strides
    return coords, at


def _tagged_run(
    desc: OperatorDesc, index_input: int, values: np.ndarray[Any, Any]
) -> dict[tuple[int, tuple[int, ...]], Source]:
    tagged = copy.copy(desc).carrying(8, np.int64(_FILL).tobytes())
    plan = tagged.lower()
    ins: list[np.ndarray[Any, Any]] = []
    for k, (name, t) in enumerate(desc.input_fields()):
        coords, at = _positions(t)
        length = int(at.max()) + 1 if len(at) else 1
        if k == index_input:
            if values.size != len(coords):
                raise DmlError(f"{desc.OPERATOR}.{name}: {values.size} index values for "
                               f"{len(coords)} elements")  # fmt: skip
            buffer = np.zeros(length, t.data_type.numpy_dtype)
            buffer[at] = values.reshape(-1)
        else:
            buffer = np.zeros(length, np.int64)
            buffer[at] = (k << _SHIFT) + np.arange(len(coords), dtype=np.int64)
        ins.append(buffer)
    outs = []
    for _, t in desc.output_fields():
        _, at = _positions(t)
        outs.append(np.full(int(at.max()) + 1 if len(at) else 1, _UNWRITTEN, np.int64))
    get_backend("numpy").executor(plan)(ins, outs)
    sizes = [t.sizes for _, t in desc.input_fields()]
    found: dict[tuple[int, tuple[int, ...]], Source] = {}
    for o, (_, t) in enumerate(desc.output_fields()):
        coords, at = _positions(t)
        for c, tag in zip(coords, outs[o][at].tolist(), strict=True):
            if tag == _FILL:
                found[(o, c)] = (-1, ())
            elif tag != _UNWRITTEN:
                k, flat = tag >> _SHIFT, tag & ((1 << _SHIFT) - 1)
                where = np.unravel_index(flat, sizes[k]) if math.prod(sizes[k]) else ()
                found[(o, c)] = (k, tuple(int(i) for i in where))
    return found
