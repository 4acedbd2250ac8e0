"""The second primitive: an indexed copy, a strided copy whose source (gather) or destination
(scatter) offset along some axes comes from an index tensor read at run time.

For every coordinate c of `shape` (row-major order, "index order"):

    k_t   = index[index_offset + sum(c * index_strides) + t * tuple_stride]   (t < len(axes))
    k_t   = k_t + axes[t].size  if k_t < 0 (signed index types: counted from the end)
    other = the strided side's element at offset + sum(c * strides)
    side  = the indexed side's element at offset + sum(c * strides) + sum(k_t * axes[t].stride)

A gather writes dst[side] = src[...]; a scatter writes dst[side] = src[...] with the index
on the destination side. An index outside [0, axes[t].size) is an error on the CPU (raised,
naming `label`, before any byte is written) and, where `skip_out_of_range` is set (ONE_HOT),
drops that element's write instead; where `clamp` is set (WebNN's semantics) it is clamped
into [-size, size - 1] first, on every backend. GPU backends never read or write outside the
tensors whatever the indices hold. Two scatter writes to one element: the later in index
order wins, on every backend: `slot` numbers the destination blocks a write can reach (an
element, or a whole sub-block named by one index tuple), and among rows that reach one slot
the one latest in the order of the index dimensions (those the index tensor varies along) is
written.

Operators lower to these records (`ops/gather.py`, `ops/scatter.py`, `ops/one_hot.py`); a
plan runs its strided copies first, then its indexed copies in order.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .tensor import DataType

__all__ = ["IndexAxis", "IndexedCopy", "INDEX_TYPES", "Rows", "rows_of"]

INDEX_TYPES = frozenset({DataType.INT64, DataType.INT32, DataType.UINT64, DataType.UINT32})


@dataclass(frozen=True)
class IndexAxis:
    """One indexed axis of the indexed side: its size (the index range) and element stride;
    `slot_stride` numbers this axis in the destination slots of a scatter."""

    size: int
    stride: int
    slot_stride: int = 0


@dataclass(frozen=True)
class IndexedCopy:
    """A strided copy of `shape` elements with the indexed side's offset moved by index values.

    Offsets are in bytes from the start of the bound buffers; strides in elements (the
    index tensor's strides in its own elements). `scatter`: the index moves the destination
    (else the source). `src` may be a fill source (negative: the plan's fill), read with
    strides 0. `indexed_span` is the [low, high) byte range of the indexed side's tensor:
    every access there lies inside it.
    """

    label: str  # e.g. "GATHER.IndicesTensor", for error messages
    src: int
    src_offset: int
    src_strides: tuple[int, ...]
    dst: int
    dst_offset: int
    dst_strides: tuple[int, ...]
    shape: tuple[int, ...]
    index: int  # the input binding holding the indices
    index_type: DataType
    index_offset: int
    index_strides: tuple[int, ...]
    tuple_stride: int
    axes: tuple[IndexAxis, ...]
    scatter: bool
    indexed_span: tuple[int, int]
    negative_indices: bool = True
    skip_out_of_range: bool = False
    slot_strides: tuple[int, ...] = ()  # per dimension of shape (scatter only)
    slot_count: int = 0
    clamp: bool = False  # out-of-range indices clamped into the axis (WebNN), never an error
    # REVERSE_SUBSEQUENCES: the index is a length L (clamped into [0, size]) and the position
    # p along this dimension of shape reads p < L ? L - 1 - p : p (-1: an ordinary index)
    reverse_dim: int = -1

    @property
    def element_count(self) -> int:
        """Number of elements this copy moves (at most)."""
        return math.prod(self.shape)

    @property
    def index_element_size(self) -> int:
        """Bytes of one index."""
        return self.index_type.element_size

    def in_words(self, ratio: int) -> IndexedCopy:
        """The same copy in words `ratio` to an element: strides scaled and an innermost
        dimension walking an element's words (byte offsets and spans stay as they are)."""
        return dataclasses.replace(
            self,
            shape=(*self.shape, ratio),
            src_strides=(*(t * ratio for t in self.src_strides), 1),
            dst_strides=(*(t * ratio for t in self.dst_strides), 1),
            index_strides=(*self.index_strides, 0),
            slot_strides=(*self.slot_strides, 0) if self.scatter else (),
            axes=tuple(dataclasses.replace(a, stride=a.stride * ratio) for a in self.axes),
        )

    def describe(self) -> str:
        """One line: what moves where, and by which index."""
        what = "scatter" if self.scatter else "gather"
        sides = (
            f"input {self.src} @ byte {self.src_offset} strides {list(self.src_strides)}"
            if self.src >= 0
            else f"fill {-1 - self.src}"
        )
        axes = ", ".join(f"{a.size}x{a.stride}" for a in self.axes)
        return (
            f"  {what} {sides} -> output {self.dst} @ byte {self.dst_offset} strides "
            f"{list(self.dst_strides)}, shape {list(self.shape)}, by input {self.index} "
            f"({self.index_type.name} @ byte {self.index_offset} strides "
            f"{list(self.index_strides)}) along [{axes}]"
        )


def coalesce_indexed(copy: IndexedCopy) -> IndexedCopy:
    """The same copy over the fewest dimensions: size-1 dimensions dropped, neighbours merged
    where every side (source, destination, index, slot) is contiguous across them (a
    reversing copy's reversed dimension stays one of its own: positions along it matter)."""
    sides = [copy.src_strides, copy.dst_strides, copy.index_strides]
    if copy.scatter:
        sides.append(copy.slot_strides)
    reverse = copy.reverse_dim
    dims = [
        (n, tuple(s[i] for s in sides), i == reverse)
        for i, n in enumerate(copy.shape)
        if n != 1 or i == reverse
    ]
    merged: list[tuple[int, tuple[int, ...]]] = []
    reverse_at = -1
    for n, strides, reversed_dim in dims:
        if reversed_dim:
            reverse_at = len(merged)
        elif merged and len(merged) - 1 != reverse_at:
            pn, ps = merged[-1]
            if all(p == s * n for p, s in zip(ps, strides, strict=True)):
                merged[-1] = (pn * n, strides)
                continue
        merged.append((n, strides))
    if not merged:
        merged = [(1, tuple(0 for _ in sides))]
    shape = tuple(m[0] for m in merged)
    columns = list(zip(*(m[1] for m in merged), strict=True))
    return dataclasses.replace(
        copy,
        shape=shape,
        src_strides=tuple(columns[0]),
        dst_strides=tuple(columns[1]),
        index_strides=tuple(columns[2]),
        slot_strides=tuple(columns[3]) if copy.scatter else (),
        reverse_dim=reverse_at,
    )


@dataclass(frozen=True)
class Rows:
    """How a backend walks an indexed copy: rows of `length` elements (the last dimension,
    when the index does not change along it; else single elements), over the `outer` shape."""

    length: int
    outer: tuple[int, ...]
    strides: tuple[int, int]  # the row's source and destination element strides
    order: tuple[int, ...]  # per outer dimension: its weight in the index order (0: none)

    @property
    def count(self) -> int:
        """Number of rows."""
        return math.prod(self.outer)

    @property
    def one_row_an_index(self) -> bool:
        """Whether no two rows come from one index position (every outer dimension of more
        than one entry weighs in the index order): a scatter's rows then each write a slot
        of their own or lose it whole, so whoever moves a row may free the slot it won."""
        return all(n == 1 or w != 0 for n, w in zip(self.outer, self.order, strict=True))


def rows_of(copy: IndexedCopy) -> Rows:
    """The rows of an indexed copy, and each outer dimension's weight in the index order
    (row-major over the dimensions the index tensor varies along: a later update wins)."""
    shape = copy.shape
    whole = len(shape) > 1 and copy.index_strides[-1] == 0 and copy.reverse_dim < len(shape) - 1
    length = shape[-1] if whole else 1
    outer = tuple(shape[:-1]) if whole else tuple(shape)
    strides = (copy.src_strides[-1], copy.dst_strides[-1]) if whole else (1, 1)
    order = [0] * len(outer)
    weight = 1
    for d in reversed(range(len(outer))):
        if copy.index_strides[d] != 0:
            order[d] = weight
            weight *= outer[d]
    return Rows(length, outer, strides, tuple(order))
