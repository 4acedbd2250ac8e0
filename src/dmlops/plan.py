"""The one primitive: a plan of strided copies between bound buffers.

Operators lower to `LogicalCopy` boxes in tensor coordinates; `compose` turns
them, with each tensor's `Layout`, into `StridedCopy` records (byte offsets,
element strides, coalesced shape). Backends execute plans and nothing else.

A copy whose source is negative writes a constant instead of reading an input: source
-1 - k is the plan's fill k (`Plan.fills[k]`, the element's bytes; `ZERO`, -1, is the
first fill, all bits clear for SLICE_GRAD), with source strides 0. A fill longer than
`TENSOR_FILL_BYTES` is a tensor of constants instead (FILL_VALUE_SEQUENCE's values), read
through its copies' strides and bound whole. Copies of one plan
never write the same element twice, so a backend may run them in any order, or at once.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from .compaction import Compaction
from .errors import InvalidDescriptorError
from .indexed import IndexedCopy, coalesce_indexed
from .tensor import BufferTensorDesc

__all__ = [
    "ZERO",
    "fill_source",
    "TENSOR_FILL_BYTES",
    "ValueSequence",
    "Fill",
    "fill_bytes",
    "fill_reads",
    "Layout",
    "LogicalCopy",
    "StridedCopy",
    "Plan",
    "compose",
    "build_plan",
    "with_indexed",
    "in_units",
    "ElementCopy",
    "coalesce",
    "is_injective",
    "array_byte_span",
    "span",
]

_ENUMERATION_LIMIT = 1 << 22

ZERO = -1
"""The source index of a plan's first fill (zeros, where an operator writes zeros). Backends
bind fill k's buffer so that `inputs[-1 - k]` is it: the fills after the inputs, reversed."""


TENSOR_FILL_BYTES = 16
"""The widest element a fill holds (16-byte elements); a longer fill is a tensor of
constants, read in order through its copies' source strides (`Plan.is_tensor_fill`)."""


_SEQUENCE_PIECE = 1 << 16  # elements of a value sequence made at a time (in the caches)


@dataclass(frozen=True, eq=False)
class ValueSequence:
    """A tensor fill given by its rule instead of its bytes (FILL_VALUE_SEQUENCE's values):
    element i is `start` + `delta` x i in `dtype` (a numpy dtype string, its byte order
    included): modulo 2^bits for integer types, the exact value rounded once for float
    types (computed in float64: the product, then the sum, each rounded as numpy does).
    `nbytes` counts the zeros past the values (a tensor fill is longer than
    TENSOR_FILL_BYTES). A backend that can make it where it is read does (CUDA, on the
    device); the others take `tobytes()`."""

    dtype: str
    start: int | float
    delta: int | float
    count: int
    nbytes: int

    def __len__(self) -> int:
        return self.nbytes

    def _key(self) -> tuple[Any, ...]:
        """The fields, floats by their bits (-0.0 is not 0.0: a sequence may start with it)."""
        bits = tuple(
            struct.pack("<d", v) if isinstance(v, float) else v for v in (self.start, self.delta)
        )
        return (self.dtype, *bits, self.count, self.nbytes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValueSequence) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def values(self, lo: int = 0, hi: int | None = None) -> np.ndarray[Any, Any]:
        """Elements [lo, hi) (to the end by default), in pieces that stay in the caches."""
        hi = self.count if hi is None else hi
        dtype = np.dtype(self.dtype)
        made = np.empty(max(0, hi - lo), dtype)
        for at in range(lo, hi, _SEQUENCE_PIECE):
            end = min(hi, at + _SEQUENCE_PIECE)
            if dtype.kind in "iu":  # modulo 2^64, then the type's low bits
                with np.errstate(over="ignore"):
                    step = np.arange(at, end, dtype=np.uint64)
                    step *= np.uint64(int(self.delta) % 2**64)
                    step += np.uint64(int(self.start) % 2**64)
                made[at - lo : end - lo] = step.astype(dtype)
            else:  # (past the type's range: infinity, as DirectML's arithmetic gives)
                exact = np.arange(at, end, dtype=np.float64)
                exact *= np.float64(self.delta)
                exact += np.float64(self.start)
                with np.errstate(over="ignore"):
                    made[at - lo : end - lo] = exact
        return made

    def tobytes(self) -> bytes:
        """The fill's bytes: the values, then zeros to `nbytes`."""
        packed = self.values().tobytes()
        return packed + bytes(self.nbytes - len(packed))


Fill = bytes | ValueSequence
"""A constant a plan writes: one element's (or a tensor fill's) bytes, or a sequence's rule."""


def fill_bytes(fill: Fill) -> bytes:
    """A fill's bytes (a value sequence's made)."""
    return fill if isinstance(fill, bytes) else fill.tobytes()


def fill_source(k: int) -> int:
    """The source index of fill k."""
    return -1 - k


@dataclass(frozen=True)
class Layout:
    """Where a tensor's elements lie in its binding: element offset of index 0, element strides."""

    offset: int
    strides: tuple[int, ...]

    @classmethod
    def of_desc(cls, desc: BufferTensorDesc) -> Layout:
        """The layout a DirectML tensor description gives."""
        return cls(0, desc.effective_strides)


@dataclass(frozen=True)
class LogicalCopy:
    """Copy a box of `shape` elements from input `src` to output `dst`, in tensor coordinates.

    Element c of the box is read at src_start + src_step * c and written at
    dst_start + dst_step * c (dst_step: all ones unless given). `repeat`: the box again
    `count` times, its k-th copy moved k * (source, destination) coordinate steps, for each
    (count, source step, destination step) in turn (an operator's compact form, which only
    `compose` reads; `expanded` gives the plain boxes).
    """

    src: int
    src_start: tuple[int, ...]
    src_step: tuple[int, ...]
    dst: int
    dst_start: tuple[int, ...]
    shape: tuple[int, ...]
    dst_step: tuple[int, ...] | None = None
    repeat: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...] = ()

    def expanded(self) -> list[LogicalCopy]:
        """The plain boxes this copy writes (itself where it has no `repeat`)."""
        if not self.repeat:
            return [self]
        boxes = [(self.src_start, self.dst_start)]
        for count, src_step, dst_step in self.repeat:
            boxes = [
                (
                    tuple(a + k * t for a, t in zip(s, src_step, strict=True)),
                    tuple(a + k * t for a, t in zip(d, dst_step, strict=True)),
                )
                for s, d in boxes
                for k in range(count)
            ]
        return [
            LogicalCopy(self.src, s, self.src_step, self.dst, d, self.shape, self.dst_step)
            for s, d in boxes
        ]


@dataclass(frozen=True)
class StridedCopy:
    """dst[dst_offset + sum(c*dst_strides)] = src[src_offset + sum(c*src_strides)] for c in shape.

    Offsets are in bytes from the start of the bound buffer; strides are in elements.
    """

    src: int
    src_offset: int
    src_strides: tuple[int, ...]
    dst: int
    dst_offset: int
    dst_strides: tuple[int, ...]
    shape: tuple[int, ...]

    @property
    def element_count(self) -> int:
        """Number of elements this copy moves."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class Plan:
    """Strided copies of `element_size`-byte elements, and the bytes [low, high) each binding's
    copies touch (a binding must hold `high` bytes)."""

    element_size: int
    copies: tuple[StridedCopy, ...]
    input_spans: tuple[tuple[int, int], ...]
    output_spans: tuple[tuple[int, int], ...]
    # the constants fill sources write: one element's bytes each, or a tensor fill
    fills: tuple[Fill, ...] = ()
    indexed: tuple[IndexedCopy, ...] = ()  # run after `copies`, in order (indexed.py)
    # CAST's: (source, destination) numpy type strings; each copy reads elements of the
    # first (its source offset in their bytes) and writes the second (`element_size`'s)
    conversion: tuple[str, str] | None = None
    # ELEMENT_WISE_IDENTITY's (Scale, Bias): with `conversion`, each value x * Scale + Bias
    # before it is converted (the rounding: `dmlops.conversion.scaled`)
    scale_bias: tuple[float, float] | None = None
    compactions: tuple[Compaction, ...] = ()  # run last, in order (compaction.py)

    @property
    def source_element_size(self) -> int:
        """Bytes of one element the copies read (the written one's, but for a conversion)."""
        if self.conversion is None:
            return self.element_size
        return int(np.dtype(self.conversion[0]).itemsize)

    @cached_property
    def span_arrays(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """input_spans and output_spans as int64 arrays of [low, high) rows."""
        return (
            np.array(self.input_spans, dtype=np.int64).reshape(-1, 2),
            np.array(self.output_spans, dtype=np.int64).reshape(-1, 2),
        )

    @property
    def input_extents(self) -> tuple[int, ...]:
        """Bytes each input binding must hold."""
        return tuple(hi for _, hi in self.input_spans)

    @property
    def output_extents(self) -> tuple[int, ...]:
        """Bytes each output binding must hold."""
        return tuple(hi for _, hi in self.output_spans)

    @property
    def writes_fills(self) -> bool:
        """Whether some copy writes a constant (the backend binds the fills' buffers)."""
        return bool(self.fills)

    def is_tensor_fill(self, k: int) -> bool:
        """Whether fill k is a tensor of constants (read through its copies' strides), not
        one element repeated."""
        return len(self.fills[k]) > TENSOR_FILL_BYTES

    @property
    def fill_width(self) -> int:
        """Bytes of the widest element fill (at least one element): what a fill buffer must
        hold for every copy to read its constant whole (a plan in smaller words reads
        several)."""
        small = (len(v) for v in self.fills if len(v) <= TENSOR_FILL_BYTES)
        return max([self.element_size, *small])

    def fill_buffers(self, length: int) -> list[bytes]:
        """Host bytes of each fill's buffer, in the order a backend appends them to the inputs
        (so that `inputs[-1 - k]` is fill k): `length` bytes of an element fill's element
        repeated; a tensor fill whole."""
        return [fill_bytes(value) for value in self.fill_patterns(length)]

    def fill_patterns(self, length: int) -> list[Fill]:
        """`fill_buffers`, with value sequences as their rules (for a backend that makes
        them where they are read)."""
        return [
            value
            if len(value) > TENSOR_FILL_BYTES
            else (fill_bytes(value) * -(-length // len(value)))[:length]
            for value in reversed(self.fills)
        ]

    @property
    def bytes_written(self) -> int:
        """Bytes written to the outputs when the plan executes."""
        moved = sum(c.element_count for c in self.copies)
        moved += sum(c.element_count for c in self.indexed)
        return moved * self.element_size

    def _repr_html_(self) -> str:
        """Notebook view: one table row per strided copy."""
        head = "<tr><th>input</th><th>byte</th><th>strides</th><th>output</th><th>byte</th>"
        head += "<th>strides</th><th>shape</th></tr>"
        rows = "".join(
            f"<tr><td>{_source(c.src)}</td><td>{c.src_offset}</td><td>{list(c.src_strides)}</td>"
            f"<td>{c.dst}</td><td>{c.dst_offset}</td><td>{list(c.dst_strides)}</td>"
            f"<td>{list(c.shape)}</td></tr>"
            for c in self.copies
        )
        return (
            f"<div>plan: {self._counted()} of {self._elements_text()}"
            f"<table>{head}{rows}</table></div>"
        )

    def _counted(self) -> str:
        n = len(self.copies)
        return f"{n} strided {'copy' if n == 1 else 'copies'}"

    def _elements_text(self) -> str:
        if self.conversion is None:
            return f"{self.element_size}-byte elements"
        source, target = (np.dtype(t).name for t in self.conversion)
        if self.scale_bias is not None:
            scale, bias = self.scale_bias
            return f"{source} elements, each x * {scale:g} + {bias:g} (ScaleBias)"
        return f"elements converted from {source} to {target} (CAST)"

    def describe(self) -> str:
        """One line per copy, for humans."""
        lines = [f"plan: {self._counted()} of {self._elements_text()}"]
        for c in self.copies:
            lines.append(
                f"  {_source(c.src, 'input ')} @ byte {c.src_offset} "
                f"strides {list(c.src_strides)} -> "
                f"output {c.dst} @ byte {c.dst_offset} strides {list(c.dst_strides)}, "
                f"shape {list(c.shape)}"
            )
        if self.indexed:
            lines.append(f"then {len(self.indexed)} indexed copies")
            lines += [c.describe() for c in self.indexed]
        for k in self.compactions:
            lines.append(
                f"then a compaction: input {k.src} @ byte {k.src_offset} strides "
                f"{list(k.src_strides)} shape {list(k.shape)} ({k.element}) -> its nonzero "
                f"elements' count at output {k.count_dst} @ byte {k.count_offset}, their last "
                f"{k.columns} coordinates as rows of output {k.coords_dst} @ byte "
                f"{k.coords_offset} strides [{k.row_stride}, {k.column_stride}]"
            )
        return "\n".join(lines)


def _source(src: int, prefix: str = "") -> str:
    return f"fill {-1 - src}" if src < 0 else f"{prefix}{src}"


def fill_reads(plan: Plan, limit: int) -> Plan:
    """`plan` with each fill copy reading its fill's buffer of `limit` bytes (the element
    repeated) with a unit source stride along a contiguous destination row, so vector kernels
    apply; rows longer than the buffer are cut into pieces that fit."""
    if not plan.writes_fills:
        return plan
    out: list[StridedCopy] = []
    element_size = plan.element_size
    most = limit // element_size
    for c in plan.copies:
        if c.src >= 0 or c.dst_strides[-1] != 1 or plan.is_tensor_fill(-1 - c.src):
            out.append(c)
            continue
        outer, row = c.shape[:-1], c.shape[-1]
        zeros = (0,) * len(outer)
        if row <= most:
            out.append(
                StridedCopy(c.src, 0, (*zeros, 1), c.dst, c.dst_offset, c.dst_strides, c.shape)
            )
            continue
        whole, rest = divmod(row, most)
        out.append(
            StridedCopy(
                c.src,
                0,
                (*zeros, 0, 1),
                c.dst,
                c.dst_offset,
                (*c.dst_strides[:-1], most, 1),
                (*outer, whole, most),
            )
        )
        if rest:
            offset = c.dst_offset + whole * most * element_size
            out.append(
                StridedCopy(c.src, 0, (*zeros, 1), c.dst, offset, c.dst_strides, (*outer, rest))
            )
    return dataclasses.replace(plan, copies=tuple(out))


def coalesce(
    shape: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
    src_offset: int = 0,
    dst_offset: int = 0,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]:
    """Fewest dimensions that visit the same (src, dst) element pairs.

    Drops size-1 dimensions, turns negative destination strides positive
    (moving both offsets, in elements), orders dimensions by destination
    stride and merges neighbours that are contiguous on both sides.
    """
    dims = []
    for n, s, d in zip(shape, src_strides, dst_strides, strict=True):
        if n == 1:
            continue
        if d < 0:
            src_offset += (n - 1) * s
            dst_offset += (n - 1) * d
            s, d = -s, -d
        dims.append((n, s, d))
    dims.sort(key=lambda t: (t[2], abs(t[1])), reverse=True)
    merged: list[tuple[int, int, int]] = []
    for n, s, d in dims:
        if merged:
            pn, ps, pd = merged[-1]
            if ps == s * n and pd == d * n:
                merged[-1] = (pn * n, s, d)
                continue
        merged.append((n, s, d))
    if not merged:
        merged = [(1, 1, 1)]
    return (
        tuple(m[0] for m in merged),
        tuple(m[1] for m in merged),
        tuple(m[2] for m in merged),
        src_offset,
        dst_offset,
    )


def span(offset: int, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """Lowest and highest index (or address) a strided box reaches from `offset`."""
    low = high = offset
    for n, s in zip(shape, strides, strict=True):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high


def compose(
    element_size: int,
    copies: Sequence[LogicalCopy],
    input_layouts: Sequence[Layout],
    output_layouts: Sequence[Layout],
    fills: Sequence[Fill] = (),
    fill_layouts: Sequence[Layout | None] = (),
) -> Plan:
    """Lower logical copies through tensor layouts to a coalesced plan (negative sources
    write `fills`: one element, strides 0, or a tensor fill through its `fill_layouts`
    entry)."""
    resolved = []
    for lc in copies:
        lo = output_layouts[lc.dst]
        if lc.src >= 0:
            li = input_layouts[lc.src]
        else:
            k = -1 - lc.src
            given = fill_layouts[k] if k < len(fill_layouts) else None
            li = Layout(0, (0,) * len(lc.shape)) if given is None else given
        src_off = li.offset + sum(a * t for a, t in zip(lc.src_start, li.strides, strict=True))
        dst_off = lo.offset + sum(a * t for a, t in zip(lc.dst_start, lo.strides, strict=True))
        src_st = tuple(k * t for k, t in zip(lc.src_step, li.strides, strict=True))
        dst_st = (
            lo.strides
            if lc.dst_step is None
            else tuple(k * t for k, t in zip(lc.dst_step, lo.strides, strict=True))
        )
        shape = lc.shape
        for count, src_step, dst_step in reversed(lc.repeat):  # outer dimensions, first outermost
            shape = (count, *shape)
            src_st = (sum(a * t for a, t in zip(src_step, li.strides, strict=True)), *src_st)
            dst_st = (sum(a * t for a, t in zip(dst_step, lo.strides, strict=True)), *dst_st)
        resolved.append(ElementCopy(lc.src, src_off, src_st, lc.dst, dst_off, dst_st, shape))
    return build_plan(element_size, resolved, len(input_layouts), len(output_layouts), fills)


@dataclass(frozen=True)
class ElementCopy:
    """A strided copy in elements of the bound buffers, before coalescing."""

    src: int
    src_offset: int
    src_strides: tuple[int, ...]
    dst: int
    dst_offset: int
    dst_strides: tuple[int, ...]
    shape: tuple[int, ...]

    def in_words(self, ratio: int) -> ElementCopy:
        """The same copy in words `ratio` to an element: offsets and strides scaled, and an
        innermost dimension walking an element's words (a fill's words are read in turn)."""
        if ratio == 1:
            return self
        return ElementCopy(
            self.src,
            self.src_offset * ratio,
            (*(t * ratio for t in self.src_strides), 1),
            self.dst,
            self.dst_offset * ratio,
            (*(t * ratio for t in self.dst_strides), 1),
            (*self.shape, ratio),
        )


_LATTICE_MAX = 4096  # copies of one group a merge looks at
_LATTICE_RANK = 8  # dimensions a merged copy may keep after coalescing


def _lattice(group: Sequence[ElementCopy]) -> ElementCopy | None:
    """One copy that visits what these copies visit (one source and destination binding,
    one shape and strides; ordered by destination offset), where their offsets are a
    lattice of at most two steps: copy k = i * b + j lies i outer steps and j inner steps
    from the first. None where they are not."""
    first = group[0]
    n = len(group)
    offsets = [(c.src_offset - first.src_offset, c.dst_offset - first.dst_offset) for c in group]
    inner = offsets[1]
    if inner[1] == 0:
        return None
    b = 1
    while b < n and offsets[b] == (b * inner[0], b * inner[1]):
        b += 1
    if n % b:
        return None
    outer = offsets[b] if b < n else (0, 0)
    for k, (s, d) in enumerate(offsets):
        i, j = divmod(k, b)
        if (s, d) != (i * outer[0] + j * inner[0], i * outer[1] + j * inner[1]):
            return None
    steps = ([(n // b, *outer)] if b < n else []) + [(b, *inner)]
    return ElementCopy(
        first.src,
        first.src_offset,
        (*(s for _, s, _ in steps), *first.src_strides),
        first.dst,
        first.dst_offset,
        (*(d for _, _, d in steps), *first.dst_strides),
        (*(m for m, _, _ in steps), *first.shape),
    )


def merge_lattices(copies: Sequence[ElementCopy]) -> list[ElementCopy]:
    """The copies with each set that differs only by offsets lying on a lattice (the four
    phases of a pixel unshuffle or a YOLO Focus stem, a descriptor's blocks) made one copy
    of more dimensions, so kernels see the whole pattern (a gather's every phase)."""
    groups: dict[tuple[Any, ...], list[ElementCopy]] = {}
    for c in copies:
        key = (c.src, c.dst, c.shape, c.src_strides, c.dst_strides)
        groups.setdefault(key, []).append(c)
    if len(groups) == len(copies):
        return list(copies)
    merged: list[ElementCopy] = []
    for group in groups.values():
        if len(group) < 2 or len(group) > _LATTICE_MAX or group[0].src < 0:
            merged.extend(group)
            continue
        ordered = sorted(group, key=lambda c: c.dst_offset)
        one = _lattice(ordered)
        if one is not None:  # backends walk at most DirectML's 8 dimensions
            rank = len(coalesce(one.shape, one.src_strides, one.dst_strides)[0])
            one = one if rank <= _LATTICE_RANK else None
        merged.extend(group if one is None else [one])
    return merged


_ADJACENT_MAX = 64  # copies of one source and destination tried for adjacent boxes


def merge_adjacent(copies: Sequence[ElementCopy]) -> list[ElementCopy]:
    """The copies with boxes that lie side by side along one dimension in both the source
    and the destination, with the same strides, made one (the pieces of a tensor that a
    graph cut and put back together where they were: a window and the rest around it).
    Only copies whose destination no other copy's span meets, so no order between writes
    changes."""
    groups: dict[tuple[int, int], list[int]] = {}
    for k, c in enumerate(copies):
        if c.src >= 0:
            groups.setdefault((c.src, c.dst), []).append(k)
    if all(len(g) < 2 for g in groups.values()):
        return list(copies)
    spans = [span(c.dst_offset, c.shape, c.dst_strides) for c in copies]
    replaced: dict[int, list[ElementCopy]] = {}
    for members in groups.values():
        if not 2 <= len(members) <= _ADJACENT_MAX:
            continue
        dst, mine = copies[members[0]].dst, set(members)
        if any(
            copies[o].dst == dst and spans[o][0] <= spans[k][1] and spans[k][0] <= spans[o][1]
            for k in members
            for o in range(len(copies))
            if o not in mine
        ):
            continue
        boxes = [copies[k] for k in members]
        while _merge_one(boxes):  # as the boxes were cut, then in their fewest dimensions
            pass
        boxes = [_coalesced(b) for b in boxes]
        while _merge_one(boxes):
            pass
        if len(boxes) < len(members):
            replaced.update({k: [] for k in members})
            replaced[members[0]] = boxes
    return [m for k, c in enumerate(copies) for m in replaced.get(k, [c])]


def _coalesced(c: ElementCopy) -> ElementCopy:
    shape, s_st, d_st, s_off, d_off = coalesce(
        c.shape, c.src_strides, c.dst_strides, c.src_offset, c.dst_offset
    )
    return ElementCopy(c.src, s_off, s_st, c.dst, d_off, d_st, shape)


def _merge_one(boxes: list[ElementCopy]) -> bool:
    """Merge one pair of boxes that continue each other along a dimension (in place);
    False where no pair does."""
    for i, a in enumerate(boxes):
        for j, b in enumerate(boxes):
            if i == j or a.src_strides != b.src_strides or a.dst_strides != b.dst_strides:
                continue
            if len(a.shape) != len(b.shape):
                continue
            for d in range(len(a.shape)):
                if a.shape[:d] != b.shape[:d] or a.shape[d + 1 :] != b.shape[d + 1 :]:
                    continue
                if (
                    b.src_offset == a.src_offset + a.shape[d] * a.src_strides[d]
                    and b.dst_offset == a.dst_offset + a.shape[d] * a.dst_strides[d]
                ):
                    shape = (*a.shape[:d], a.shape[d] + b.shape[d], *a.shape[d + 1 :])
                    boxes[i] = ElementCopy(
                        a.src, a.src_offset, a.src_strides, a.dst, a.dst_offset,
                        a.dst_strides, shape,
                    )  # fmt: skip
                    del boxes[j]
                    return True
    return False


def build_plan(
    element_size: int,
    copies: Sequence[ElementCopy],
    inputs: int,
    outputs: int,
    fills: Sequence[Fill] = (),
) -> Plan:
    """Coalesce element-space copies into a plan (sets on a lattice merged first) and record
    each binding's byte span."""
    copies = merge_lattices(merge_adjacent(copies))
    strided: list[StridedCopy] = []
    unused = (1 << 63, 0)
    in_ext = [unused] * inputs
    out_ext = [unused] * outputs
    for ec in copies:
        shape, s_st, d_st, src_off, dst_off = coalesce(
            ec.shape, ec.src_strides, ec.dst_strides, ec.src_offset, ec.dst_offset
        )
        sides = [(dst_off, d_st, out_ext, ec.dst, "output")]
        if ec.src >= 0:
            sides.append((src_off, s_st, in_ext, ec.src, "input"))
        for off, st, ext, idx, side in sides:
            low, high = span(off, shape, st)
            if low < 0:
                raise InvalidDescriptorError(
                    f"{side} {idx}: the plan would address element {low}, before the buffer"
                )
            was = ext[idx]
            ext[idx] = (min(was[0], low * element_size), max(was[1], (high + 1) * element_size))
        strided.append(
            StridedCopy(
                ec.src,
                src_off * element_size,
                s_st,
                ec.dst,
                dst_off * element_size,
                d_st,
                shape,
            )
        )
    spans = [tuple((0, 0) if e == unused else e for e in ext) for ext in (in_ext, out_ext)]
    return Plan(element_size, tuple(strided), spans[0], spans[1], tuple(fills))


def with_indexed(plan: Plan, indexed: Sequence[IndexedCopy]) -> Plan:
    """The plan with these indexed copies (coalesced) after its strided ones, every binding's
    byte span widened to what they read and write."""
    ins = list(plan.input_spans)
    outs = list(plan.output_spans)

    def widen(spans: list[tuple[int, int]], k: int, low: int, high: int) -> None:
        was = spans[k]
        spans[k] = (low, high) if was == (0, 0) else (min(was[0], low), max(was[1], high))

    size = plan.element_size
    done = []
    for copy in indexed:
        c = coalesce_indexed(copy)
        done.append(c)
        if c.scatter:
            if c.src >= 0:
                low, high = span(c.src_offset // size, c.shape, c.src_strides)
                widen(ins, c.src, low * size, (high + 1) * size)
            widen(outs, c.dst, *c.indexed_span)
        else:
            if c.src >= 0:
                widen(ins, c.src, *c.indexed_span)
            low, high = span(c.dst_offset // size, c.shape, c.dst_strides)
            widen(outs, c.dst, low * size, (high + 1) * size)
        isize = c.index_element_size
        low, high = span(c.index_offset // isize, c.shape, c.index_strides)
        reach = (len(c.axes) - 1) * c.tuple_stride  # the tuple's last coordinate
        low, high = min(low, low + reach), max(high, high + reach)
        widen(ins, c.index, low * isize, (high + 1) * isize)
    return dataclasses.replace(
        plan, input_spans=tuple(ins), output_spans=tuple(outs), indexed=tuple(done)
    )


def in_units(plan: Plan, unit: int) -> Plan:
    """The same plan moving `unit`-byte words: each element as element_size / unit words, so
    a backend that moves words of this size moves any element (16-byte ones, or elements of
    several sizes in one plan)."""
    ratio = plan.element_size // unit
    if ratio == 1:
        return plan
    size = plan.element_size
    strided = []
    for c in plan.copies:
        w = ElementCopy(
            c.src, c.src_offset // size, c.src_strides, c.dst, c.dst_offset // size,
            c.dst_strides, c.shape,
        ).in_words(ratio)  # fmt: skip
        shape, s_st, d_st, src_off, dst_off = coalesce(
            w.shape, w.src_strides, w.dst_strides, w.src_offset, w.dst_offset
        )
        strided.append(StridedCopy(w.src, src_off * unit, s_st, w.dst, dst_off * unit, d_st, shape))
    indexed = [coalesce_indexed(ic.in_words(ratio)) for ic in plan.indexed]
    return dataclasses.replace(
        plan, element_size=unit, copies=tuple(strided), indexed=tuple(indexed)
    )


def is_injective(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether no two elements of this layout share an address.

    Proven by nesting (each stride clears the extent of the smaller ones) or,
    for up to 4 Mi elements, by enumeration; larger unprovable layouts count
    as overlapping.
    """
    dims = sorted((abs(t), n) for n, t in zip(sizes, strides, strict=True) if n > 1)
    if any(t == 0 for t, _ in dims):
        return False
    reach = 0
    nested = True
    for t, n in dims:
        if t <= reach:
            nested = False
            break
        reach += (n - 1) * t
    if nested:
        return True
    count = math.prod(n for _, n in dims)
    if count > _ENUMERATION_LIMIT:
        return False
    offsets = np.zeros(1, dtype=np.int64)
    for t, n in dims:
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64)[None, :] * t).ravel()
    return bool(np.unique(offsets).size == offsets.size)


def array_byte_span(
    shape: Sequence[int], byte_strides: Sequence[int], itemsize: int
) -> tuple[int, int]:
    """(lowest byte offset, bytes spanned) of an array's elements relative to its index 0."""
    from .errors import BindingError

    if any(s % itemsize for s in byte_strides):
        raise BindingError(f"array strides {tuple(byte_strides)} are not multiples of {itemsize}")
    low, high = span(0, shape, byte_strides)
    return low, high - low + itemsize
