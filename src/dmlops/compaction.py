"""The third primitive: a stream compaction. The coordinates of the nonzero elements of a
strided box of one input, in ascending element (row-major) order, written as rows of
UINT32s, and their count:

    for each coordinate c of `shape`, in row-major order:
        if the element at src_offset + sum(c * src_strides) is nonzero:
            coordinates row k (k counts the nonzero ones before it) = c's last `columns`
            entries (zeros before them where `columns` exceeds the rank)
    count = the number of such rows

A float element is zero where every bit but its sign is clear (-0.0 is zero; a NaN is not).
Rows past the count are left as they are. On GPUs it is a scan: each nonzero element's row
is the number of nonzero elements before it (`backends/cuda/compact.py`).

NONZERO_COORDINATES lowers to one (`ops/nonzero.py`); a plan runs its compactions after its
copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Compaction", "nonzero_mask", "compacted"]


@dataclass(frozen=True)
class Compaction:
    """One stream compaction between bound buffers (offsets in bytes, strides in elements:
    the input's of `element`, the outputs' of UINT32)."""

    src: int
    src_offset: int
    src_strides: tuple[int, ...]
    shape: tuple[int, ...]
    element: str  # the input's numpy type string (its zero test)
    count_dst: int
    count_offset: int
    coords_dst: int
    coords_offset: int
    row_stride: int
    column_stride: int
    columns: int

    @property
    def rows(self) -> int:
        """The most rows it writes: every element of the box."""
        return int(np.prod(self.shape, dtype=np.int64))


def nonzero_mask(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Which elements are nonzero (-0.0 is zero, a NaN is not)."""
    mask: np.ndarray[Any, Any] = values != 0
    if values.dtype.kind == "f":
        mask |= np.isnan(values)
    return mask


def compacted(values: np.ndarray[Any, Any], columns: int) -> np.ndarray[Any, Any]:
    """The rows a compaction writes for `values` (a box of the input): [count, columns]
    UINT32 coordinates in ascending element order."""
    found = np.nonzero(nonzero_mask(values))
    rank = values.ndim
    rows = np.zeros((len(found[0]) if rank else int(nonzero_mask(values)), columns), np.uint32)
    for k in range(min(columns, rank)):
        rows[:, columns - 1 - k] = found[rank - 1 - k]
    return rows
