"""A graph tensor's pieces: boxes of its coordinates that read a graph source at an element
offset with element strides, and how operators cut, step, shift and re-express them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..indexed import IndexedCopy
from ..tensor import packed_strides

_MID = 1 << 40  # pieces read intermediate buffer j as source _MID + j


@dataclass(frozen=True)
class _IndexRead:
    """Where a gathered piece reads its indices: source `src` (a graph input, or _MID + j)
    at element offset + c . strides; `copy` carries the rest of the indexed copy (index type,
    tuple stride, indexed axes, label)."""

    src: int
    offset: int
    strides: tuple[int, ...]
    copy: IndexedCopy


@dataclass(frozen=True)
class _Piece:
    """Elements [start, start + shape) of a tensor: graph input `src` at offset + c . strides,
    moved along the indexed axes by the indices `index` reads (a gathered piece), if any."""

    start: tuple[int, ...]
    shape: tuple[int, ...]
    src: int
    offset: int
    strides: tuple[int, ...]
    index: _IndexRead | None = None

    def reads(self) -> list[tuple[int, tuple[int, ...]]]:
        """The piece's affine reads (offset, strides): its source's, then its indices'."""
        first = [(self.offset, self.strides)]
        return first if self.index is None else [*first, (self.index.offset, self.index.strides)]

    def rebuilt(
        self,
        start: Sequence[int],
        shape: Sequence[int],
        reads: Sequence[tuple[int, Sequence[int]]],
    ) -> _Piece:
        """This piece's source (and indices) over a new box, with its reads mapped."""
        (offset, strides), *rest = reads
        index = self.index
        if index is not None:
            index = dataclasses.replace(index, offset=rest[0][0], strides=tuple(rest[0][1]))
        return _Piece(tuple(start), tuple(shape), self.src, offset, tuple(strides), index)

    @property
    def whole_sources(self) -> list[int]:
        """Every source the piece reads (its data, and its indices where it has them)."""
        return [self.src] if self.index is None else [self.src, self.index.src]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _through(
    p: _Piece,
    at: Sequence[int],
    steps: Sequence[int],
    dst: Sequence[int],
    shape: Sequence[int],
) -> _Piece | None:
    """The part of piece p that a box reads: box element c (c < shape) lands at dst + c and
    reads the tensor at at + steps * c (any integer steps); None where it reads none of p."""
    lo_c, hi_c = [], []
    for a, st, count, b, n in zip(at, steps, shape, p.start, p.shape, strict=True):
        # the c in [0, count) with b <= a + st * c <= b + n - 1
        if st == 0:
            lo, hi = (0, count - 1) if b <= a < b + n else (0, -1)
        elif st > 0:
            lo, hi = _ceil_div(b - a, st), (b + n - 1 - a) // st
        else:
            lo, hi = _ceil_div(b + n - 1 - a, st), (b - a) // st
        lo, hi = max(lo, 0), min(hi, count - 1)
        if hi < lo:
            return None
        lo_c.append(lo)
        hi_c.append(hi)
    delta = [a + st * lo - b for a, st, lo, b in zip(at, steps, lo_c, p.start, strict=True)]
    reads = [
        (
            offset + sum(d * t for d, t in zip(delta, strides, strict=True)),
            tuple(t * st for t, st in zip(strides, steps, strict=True)),
        )
        for offset, strides in p.reads()
    ]
    return p.rebuilt(
        [d + lo for d, lo in zip(dst, lo_c, strict=True)],
        [hi - lo + 1 for lo, hi in zip(lo_c, hi_c, strict=True)],
        reads,
    )


_Dim = tuple[int, int, int, int, tuple[int, ...]]


def _x_dims(p: _Piece, x_sizes: tuple[int, ...], merge: bool) -> list[_Dim]:
    """(size, packed stride, box start, box size, address stride of each read) of x's
    dimensions for one piece; with `merge`, neighbours merged where the piece spans the inner
    one whole and every read continues the outer one in memory."""
    packed = packed_strides(x_sizes)
    addresses = list(zip(*(strides for _, strides in p.reads()), strict=True))
    dims: list[_Dim] = list(zip(x_sizes, packed, p.start, p.shape, addresses, strict=True))
    if not merge:
        return dims
    merged: list[_Dim] = []
    for dim in reversed(dims):
        if merged:
            size, ps, b, n, a = merged[-1]
            if b == 0 and n == size and all(o == i * size for o, i in zip(dim[4], a, strict=True)):
                merged[-1] = (dim[0] * size, ps, dim[2] * size, dim[3] * size, a)
                continue
        merged.append(dim)
    return merged[::-1]


def _reinterpreted(
    pieces: list[_Piece], x_sizes: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...]
) -> list[_Piece] | None:
    """Pieces of as_strided(packed(x), sizes, strides), or None where they are no boxes.

    Each new dimension must walk one dimension of x (after merging contiguous
    neighbours) without a carry; a piece then maps to a box of the result.
    """
    out = []
    for p in pieces:
        piece = _reinterpret_piece(p, _x_dims(p, x_sizes, False), sizes, strides)
        if piece is None:  # a new dimension may span neighbours that are one run in memory
            piece = _reinterpret_piece(p, _x_dims(p, x_sizes, True), sizes, strides)
        if piece is None:
            return None
        if isinstance(piece, _Piece):
            out.append(piece)
    return out


_OUTSIDE = object()


def _reinterpret_piece(
    p: _Piece, dims: list[_Dim], sizes: tuple[int, ...], strides: tuple[int, ...]
) -> _Piece | object | None:
    """One piece of the reinterpreted tensor; _OUTSIDE if none of it shows; None: no box."""
    walk: list[tuple[int, int] | None] = []  # per new dimension: (x dimension, multiplier)
    load = [0] * len(dims)
    for m, t in zip(sizes, strides, strict=True):
        if m == 1 or t == 0:
            walk.append(None)
            continue
        for j, (size, ps, _, _, _) in enumerate(dims):
            if size > 1 and t % ps == 0 and (t // ps) * (m - 1) <= size - 1:
                walk.append((j, t // ps))
                load[j] += (t // ps) * (m - 1)
                break
        else:
            return None
    if any(used > dims[j][0] - 1 for j, used in enumerate(load)):
        return None
    walkers: dict[int, list[int]] = {}
    for d, w in enumerate(walk):
        if w is not None:
            walkers.setdefault(w[0], []).append(d)
    lo = [0] * len(sizes)
    hi = [m - 1 for m in sizes]
    inside = True
    for j, (size, _, b, n, _) in enumerate(dims):
        ds = walkers.get(j, [])
        if not ds:
            inside = inside and b == 0  # the result stays at coordinate 0 along j
        elif len(ds) == 1:
            q = walk[ds[0]][1]  # type: ignore[index]
            lo[ds[0]] = max(lo[ds[0]], _ceil_div(b, q))
            hi[ds[0]] = min(hi[ds[0]], (b + n - 1) // q)
        elif (b, n) != (0, size):
            return None  # several new dimensions share a part of x: no box
    if not inside or any(h < low for low, h in zip(lo, hi, strict=True)):
        return _OUTSIDE
    reads = []
    for r, (offset, _) in enumerate(p.reads()):
        new_strides = [0 if w is None else w[1] * dims[w[0]][4][r] for w in walk]
        base = offset - sum(b * a[r] for _, _, b, _, a in dims)
        reads.append((base + sum(c * u for c, u in zip(lo, new_strides, strict=True)), new_strides))
    return p.rebuilt(lo, [h - low + 1 for low, h in zip(lo, hi, strict=True)], reads)
