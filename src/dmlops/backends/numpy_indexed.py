"""Indexed copies (indexed.py) on numpy: the index values read, checked and turned into
element offsets before anything is written, then rows moved by fancy indexing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import IndexOutOfRangeError
from ..indexed import IndexedCopy

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _grid(shape: Sequence[int], strides: Sequence[int], base: int) -> np.ndarray[Any, Any]:
    """base + sum(c * strides) for every coordinate c of shape, in row-major order."""
    out = np.full((1,) * len(shape), base, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides, strict=True)):
        if s:
            axis = [1] * len(shape)
            axis[d] = n
            out = out + (np.arange(n, dtype=np.int64) * s).reshape(axis)
    return np.broadcast_to(out, tuple(shape)).reshape(-1)


def _elements(buffer: Any, dtype: Any) -> np.ndarray[Any, Any]:
    """A bound buffer (an array of any dtype, or bytes) as a flat array of `dtype`."""
    nbytes = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
    flat: np.ndarray[Any, Any] = np.ndarray((nbytes // np.dtype(dtype).itemsize,), dtype, buffer)
    return flat


class IndexedStep:
    """One indexed copy, ready to run on bound buffers: `prepare` reads the indices and
    checks them (raising before any write), `run` moves the elements."""

    def __init__(self, copy: IndexedCopy, element_size: int) -> None:
        self.copy = copy
        self.size = element_size
        shape = copy.shape
        # the last dimension moves as a row when the index does not change along it
        self.row = 1
        if len(shape) > 1 and copy.index_strides[-1] == 0:
            self.row = shape[-1]
        outer = shape[:-1] if self.row > 1 else shape
        cut = len(outer)
        self.outer = outer
        self.src = _grid(outer, copy.src_strides[:cut], copy.src_offset // element_size)
        self.dst = _grid(outer, copy.dst_strides[:cut], copy.dst_offset // element_size)
        isize = copy.index_element_size
        self.index = _grid(outer, copy.index_strides[:cut], copy.index_offset // isize)
        self.slots = (
            _grid(outer, copy.slot_strides[:cut], 0) if copy.scatter and copy.slot_count else None
        )
        self.row_strides = (copy.src_strides[-1], copy.dst_strides[-1]) if self.row > 1 else (1, 1)

    def prepare(self, ins: Sequence[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(source, destination) element offsets of every row that is written."""
        c = self.copy
        dtype = c.index_type.numpy_dtype
        values = _elements(ins[c.index], dtype)
        moved = np.zeros(len(self.src), dtype=np.int64)
        slots = None if self.slots is None else self.slots.copy()
        keep = None
        for t, axis in enumerate(c.axes):
            raw = values[self.index + t * c.tuple_stride]
            if dtype.kind == "u":
                bad = raw >= axis.size
                k = np.minimum(raw, axis.size).astype(np.int64)
            else:
                k = raw.astype(np.int64)
                if c.negative_indices:
                    k = np.where(k < 0, k + axis.size, k)
                bad = (k < 0) | (k >= axis.size)
            if bad.any():
                if not c.skip_out_of_range:
                    first = int(np.argmax(bad))
                    at = int(self.index[first]) - c.index_offset // dtype.itemsize
                    low = -axis.size if c.negative_indices else 0
                    raise IndexOutOfRangeError(
                        f"{c.label}: the index at element {at + t * c.tuple_stride} is "
                        f"{int(raw[first])}, outside [{low}, {axis.size}) (nothing was written)"
                    )
                keep = ~bad if keep is None else keep & ~bad
            moved += k * axis.stride
            if slots is not None:
                slots += k * axis.slot_stride
        src, dst = self.src, self.dst
        if c.scatter:
            dst = dst + moved
        else:
            src = src + moved
        if keep is not None:
            src, dst = src[keep], dst[keep]
            slots = None if slots is None else slots[keep]
        if slots is not None and len(slots) > 1:
            # the later write in index order wins: keep each slot's last row
            _, last = np.unique(slots[::-1], return_index=True)
            chosen = np.sort(len(slots) - 1 - last)
            if len(chosen) != len(slots):
                src, dst = src[chosen], dst[chosen]
        return src, dst

    def run(self, ins: Sequence[Any], outs: Sequence[Any], rows: tuple[Any, Any]) -> None:
        """Move the prepared rows."""
        c = self.copy
        kind = _UINT[self.size]
        s = _elements(ins[c.src], kind)
        d = _elements(outs[c.dst], kind)
        src, dst = rows
        if self.row == 1:
            d[dst] = s[src]
            return
        ss, ds = self.row_strides
        sv = as_strided(s, (len(s), self.row), (self.size, ss * self.size), writeable=False)
        dv = as_strided(d, (len(d), self.row), (self.size, ds * self.size))
        dv[dst] = sv[src]
