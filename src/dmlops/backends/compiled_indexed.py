"""Small indexed copies (indexed.py) as one compiled pass on the calling thread: a numba
kernel reads every index, checks it and finds each row's place before it writes anything,
then moves the rows in index order, so of two rows aimed at one place the later is what
stays (DirectML's rule for scatters) with no winner search.

Why: a small gather or scatter through numpy is ten or more ufunc calls of about a
microsecond each (index view, range check, offset arithmetic, repeat search, fancy
assignment), several times the cost of the strided path's call; the kernel's call costs
about half a microsecond. Copies of more than `SMALL_BYTES` or `SMALL_ROWS` rows (where
the kernel's index walk, a few nanoseconds a row, costs more) keep numpy's vectorised path
(numpy_indexed.py), which is also where an index out of range is named: the kernel only
says that one is.

Index tensors are read as bytes, so one `locate` serves every index type and indexed
operator (its `meta` table says which); `move` is compiled once per element size.
"""

from __future__ import annotations

import math
from copy import copy as shallow_copy
from typing import Any

import numpy as np

from ..indexed import IndexedCopy, rows_of
from ..plan import StridedCopy
from . import cpu_engine
from .words import UNSIGNED

__all__ = [
    "CompiledIndexed",
    "SMALL_BYTES",
    "SMALL_ROWS",
    "available",
    "indexed_meta",
    "loaded_kernels",
]

SMALL_BYTES = 256 << 10  # copies moving at most this many bytes run compiled
SMALL_ROWS = 2048  # ... in at most this many rows
_MODES = {"strict": 0, "skip": 1, "clamp": 2}  # (numba_indexed.py: its meta layout)
_KERNELS: dict[str, Any] = {}


def _kernels() -> Any:
    """The numba kernels' module, imported on first use (None without numba)."""
    if "module" not in _KERNELS:
        try:
            from . import numba_indexed
        except ImportError:
            numba_indexed = None  # type: ignore[assignment]
        _KERNELS["module"] = numba_indexed
    return _KERNELS["module"]


def available() -> bool:
    """Whether small indexed copies may be compiled: numba installed, compiled CPU code on."""
    return cpu_engine.enabled() and _kernels() is not None


def loaded_kernels() -> Any:
    """The numba kernels' module where a plan has already loaded it, else None (never
    imports it)."""
    return _KERNELS.get("module")


def _flat(buffer: Any, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """A bound buffer (an array of any type, or bytes) as a flat array of `dtype`
    (numpy_indexed._elements for a dtype object: no np.dtype call on this hot path)."""
    try:  # (frombuffer: 0.27 µs against the constructor's 0.46, a third of a small call's)
        flat: np.ndarray[Any, Any] = np.frombuffer(buffer, dtype)
    except ValueError:  # a length that is no multiple of the element: its whole elements
        nbytes = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
        flat = np.ndarray((nbytes // dtype.itemsize,), dtype, buffer)
    return flat


def indexed_meta(copy: IndexedCopy, element_size: int) -> np.ndarray[Any, Any]:
    """The copy as the compiled kernels' table (numba_indexed.py's layout, which the CPU
    engine's native gather reads too): a head (outer rank, axes, row length, scatter, index
    bytes, signed, negative indices, mode, tuple stride, offsets, the row's strides), then
    per outer dimension its size, strides and index stride, per axis its size and stride,
    and the reversed dimension."""
    walk = rows_of(copy)
    cut = len(walk.outer)
    size = element_size
    isize = copy.index_element_size
    signed = copy.index_type.numpy_dtype.kind == "i"
    mode = "clamp" if copy.clamp else ("skip" if copy.skip_out_of_range else "strict")
    meta = [
        cut,
        len(copy.axes),
        walk.length,
        int(copy.scatter),
        isize,
        int(signed),
        int(copy.negative_indices),
        _MODES[mode],
        copy.tuple_stride * isize,
        copy.src_offset // size,
        copy.dst_offset // size,
        copy.index_offset,
        *walk.strides,
    ]
    for d in range(cut):
        meta += [walk.outer[d], copy.src_strides[d], copy.dst_strides[d]]
        meta.append(copy.index_strides[d] * isize)
    for axis in copy.axes:
        meta += [axis.size, axis.stride]
    meta.append(copy.reverse_dim)  # last: the reversed dimension, -1 for none
    return np.array(meta, np.int64)


_BYTE = np.dtype(np.uint8)


class CompiledIndexed:
    """One indexed copy as the compiled kernel runs it: `run` checks and moves in one call;
    `locate` and `move` split it where the plan's strided copies go between."""

    def __init__(self, copy: IndexedCopy, element_size: int) -> None:
        self.meta = indexed_meta(copy, element_size)
        self.count = rows_of(copy).count
        self.kind = np.dtype(UNSIGNED[element_size])
        self.src, self.dst, self.index = copy.src, copy.dst, copy.index

    @classmethod
    def of(cls, copy: IndexedCopy, element_size: int) -> CompiledIndexed | None:
        """The compiled form of a copy small enough to gain from it, whose offsets are whole
        elements, where numba is there and the compiled CPU engine is on; None otherwise."""
        if math.prod(copy.shape) * element_size > SMALL_BYTES or not copy.axes:
            return None
        if rows_of(copy).count > SMALL_ROWS:  # (numpy's vectorised index arithmetic wins)
            return None
        if copy.src_offset % element_size or copy.dst_offset % element_size:
            return None
        if not cpu_engine.enabled() or _kernels() is None:
            return None
        return cls(copy, element_size)

    # the strided copy run first (`after`): its table and the meta table, as one
    copy: np.ndarray[Any, Any] | None = None
    copy_src = 0

    def run(self, ins: Any, outs: Any) -> bool:
        """Check every index, then (`after`) the strided copy, then move every row; False
        (nothing written) where an index is out of range."""
        kind, table = self.kind, self.copy
        frombuffer = np.frombuffer  # (inline: a call of its own is few steps)
        try:
            src, dst = frombuffer(ins[self.src], kind), frombuffer(outs[self.dst], kind)
            index = frombuffer(ins[self.index], _BYTE)
            if table is not None:
                copied = frombuffer(ins[self.copy_src], kind)
        except ValueError:  # a buffer whose length is no multiple of the element
            src, dst = _flat(ins[self.src], kind), _flat(outs[self.dst], kind)
            index = _flat(ins[self.index], _BYTE)
            if table is not None:
                copied = _flat(ins[self.copy_src], kind)
        if table is None:
            ok: bool = _KERNELS["module"].run(self.meta, src, dst, index, self.count)
            return ok
        done: bool = _KERNELS["module"].copy_run(table, copied, src, dst, index, self.count)
        return done

    def after(self, copy: StridedCopy, element_size: int) -> CompiledIndexed | None:
        """This copy run after the plan's one strided `copy`, both in one kernel call (its
        offsets whole elements, its output this copy's), as `run` calls it; None where they
        are not."""
        if copy.dst != self.dst or copy.src_offset % element_size or copy.dst_offset % element_size:
            return None
        if math.prod(copy.shape) * element_size > SMALL_BYTES:
            return None
        table = [len(copy.shape), copy.src_offset // element_size, copy.dst_offset // element_size]
        for n, a, b in zip(copy.shape, copy.src_strides, copy.dst_strides, strict=True):
            table += [n, a, b]
        fused = shallow_copy(self)
        fused.copy = np.array([len(table), *table, *self.meta], np.int64)  # (copy_run's)
        fused.copy_src = copy.src
        return fused

    def locate(self, ins: Any) -> np.ndarray[Any, Any] | None:
        """Every row's place (None where an index is out of range); nothing written."""
        places = np.empty(self.count, np.int64)
        found: bool = _KERNELS["module"].locate(self.meta, _flat(ins[self.index], _BYTE), places)
        return places if found else None

    def move(self, ins: Any, outs: Any, places: np.ndarray[Any, Any]) -> None:
        """Move every row to (or from) its place."""
        kind = self.kind
        _KERNELS["module"].move(self.meta, _flat(ins[self.src], kind), _flat(outs[self.dst], kind),
                        places)  # fmt: skip
