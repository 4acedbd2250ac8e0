"""Plans whose copies lay contiguous runs side by side in one output: one numpy.concatenate.

A join of many small arrays lowers to one copy per array; a strided view per copy costs more
than the bytes it moves. When every copy reads one contiguous run (or R rows of one) and the
copies' destinations abut in order, the runs are concatenated straight into the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..plan import StridedCopy
from .words import UNSIGNED

__all__ = ["SideBySide"]


_BUILTIN = "biufc"  # numpy's own numeric kinds: a same-type concatenate copies their bits


def _rows(copy: StridedCopy) -> tuple[int, int, int] | None:
    """(rows, row width, destination row stride) in elements, for a copy of contiguous rows
    from a contiguous source; None for any other copy."""
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    if len(shape) == 1 and ss == (1,) and ds == (1,):
        return 1, shape[0], 0
    if len(shape) == 2 and ss == (shape[1], 1) and ds[1] == 1 and ds[0] >= shape[1]:
        return shape[0], shape[1], ds[0]
    return None


class SideBySide:
    """The runs of a plan's copies, in destination order, and the output region they fill."""

    def __init__(
        self,
        dtype: np.dtype[Any],
        runs: list[tuple[int, int, int]],
        dst: int,
        dst_offset: int,
        rows: int,
        row_stride: int,
    ) -> None:
        self.dtype = dtype
        self.runs = runs  # (input, first element, elements per row)
        self.dst = dst
        self.rows = rows
        width = sum(w for _, _, w in runs)
        size = dtype.itemsize
        # the output region: (shape, byte offset, byte strides)
        self.dst_args = (
            (width,) if rows == 1 else (rows, width),
            dst_offset,
            (size,) if rows == 1 else (row_stride * size, size),
        )
        # each run a whole input of one row: the inputs' flat views are the sources as they
        # are where they hold exactly these counts of elements
        self.sources = [src for src, _, _ in runs]
        self.whole_counts = (
            [w for _, _, w in runs] if rows == 1 and all(f == 0 for _, f, _ in runs) else None
        )

    @classmethod
    def of(cls, copies: Sequence[StridedCopy], element_size: int) -> SideBySide | None:
        """The plan's copies as runs side by side, or None where they are not."""
        if len(copies) < 2 or element_size not in UNSIGNED:
            return None
        forms = [_rows(c) for c in copies]
        if any(f is None for f in forms):
            return None
        order = sorted(range(len(copies)), key=lambda k: copies[k].dst_offset)
        first = copies[order[0]]
        rows, _, stride = forms[order[0]]  # type: ignore[misc]
        at = first.dst_offset
        runs = []
        for k in order:
            c, (r, w, s) = copies[k], forms[k]  # type: ignore[misc]
            if c.dst != first.dst or r != rows or (rows > 1 and s != stride):
                return None
            if c.dst_offset != at or c.src_offset % element_size:
                return None
            runs.append((c.src, c.src_offset // element_size, w))
            at += w * element_size
        if rows > 1 and (at - first.dst_offset) // element_size > stride:
            return None  # wider than a row: not one output region
        return cls(
            np.dtype(UNSIGNED[element_size]), runs, first.dst, first.dst_offset, rows, stride
        )

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """Copy; False, with nothing written, where a bound buffer cannot be viewed whole."""
        rows = self.rows
        flats = [ins[src].ravel("K") for src in self.sources]  # bound arrays are contiguous
        # the arrays' own type where they share one of the element size (no view to make),
        # else the unsigned type of that size: one type on both sides, so the bits move as
        # they are
        types = {f.dtype for f in flats}
        same = len(types) == 1
        dtype = types.pop() if same else self.dtype
        if dtype.itemsize != self.dtype.itemsize or dtype.kind not in _BUILTIN:
            dtype, same = self.dtype, False  # (a plugin type, bfloat16 say: its own rules)
        shape, offset, strides = self.dst_args
        whole = self.whole_counts
        try:
            dst = np.ndarray(shape, dtype, outs[self.dst], offset, strides)
            if whole is not None and [f.size for f in flats] == whole:
                sources = flats if same else [f.view(dtype) for f in flats]  # (as they are)
            else:
                sources = []
                for flat, (_, first, width) in zip(flats, self.runs, strict=True):
                    if flat.dtype != dtype:
                        flat = flat.view(dtype)
                    count = rows * width
                    if first or flat.size != count:
                        flat = flat[first : first + count]
                    sources.append(flat if rows == 1 else flat.reshape(rows, width))
        except (TypeError, ValueError):
            return False
        np.concatenate(sources, axis=int(rows > 1), out=dst)
        return True
