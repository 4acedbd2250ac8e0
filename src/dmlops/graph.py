"""Graphs of data-movement operators compiled to one pass over memory.

A builder in the spirit of DirectMLX (`dml::Graph`): inputs, then SLICE,
SLICE1, SPLIT, JOIN, Reinterpret and Identity nodes. Every node is validated
as DirectML validates its operator at the graph's feature level, with errors
naming the node. Every tensor of the graph is held as *pieces*: boxes of its
coordinates that read a graph input at an element offset with element
strides. SLICE/SLICE1/SPLIT cut and step pieces, JOIN shifts them, Identity
passes them on and Reinterpret re-expresses them where the new strides line
up with the tensor's packed order. A graph output is then copied straight
from the graph inputs: one plan, no intermediate tensor, bytes moved = bytes
of the outputs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .elements import word_element
from .errors import DmlError, InvalidDescriptorError
from .ops import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    Slice1Desc,
    SliceDesc,
    SpaceToDepth1Desc,
    SplitDesc,
    TileDesc,
)
from .ops._axis import piece_starts
from .plan import ElementCopy, Layout, Plan, build_plan
from .tensor import BufferTensorDesc, FeatureLevel, int_tuple, packed_strides

__all__ = ["Graph", "GraphTensor", "GraphDesc"]


_MID = 1 << 40  # pieces read intermediate buffer j as source _MID + j


@dataclass(frozen=True)
class _Piece:
    """Elements [start, start + shape) of a tensor: graph input `src` at offset + c . strides."""

    start: tuple[int, ...]
    shape: tuple[int, ...]
    src: int
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True)
class GraphTensor:
    """A tensor of a graph: a graph input or a node's output (packed, as DirectML makes it)."""

    graph: Graph
    index: int
    desc: BufferTensorDesc
    node: int | None  # the node that made it; None for a graph input

    @property
    def sizes(self) -> tuple[int, ...]:
        """The tensor's sizes."""
        return self.desc.sizes


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _stepped(
    pieces: list[_Piece], start: Sequence[int], step: Sequence[int], sizes: Sequence[int]
) -> list[_Piece]:
    """Pieces of out[c] = x[start + step * c] (per dimension; steps may be negative)."""
    out = []
    for p in pieces:
        lo_c, hi_c = [], []
        for b, n, s0, st, size in zip(p.start, p.shape, start, step, sizes, strict=True):
            # the c in [0, size) with b <= s0 + st * c <= b + n - 1
            if st > 0:
                lo, hi = _ceil_div(b - s0, st), (b + n - 1 - s0) // st
            else:
                lo, hi = _ceil_div(b + n - 1 - s0, st), (b - s0) // st
            lo, hi = max(lo, 0), min(hi, size - 1)
            lo_c.append(lo)
            hi_c.append(hi)
        if any(h < lo for lo, h in zip(lo_c, hi_c, strict=True)):
            continue
        offset = p.offset + sum(
            (s0 + st * c - b) * t
            for s0, st, c, b, t in zip(start, step, lo_c, p.start, p.strides, strict=True)
        )
        out.append(
            _Piece(
                tuple(lo_c),
                tuple(h - lo + 1 for lo, h in zip(lo_c, hi_c, strict=True)),
                p.src,
                offset,
                tuple(t * st for t, st in zip(p.strides, step, strict=True)),
            )
        )
    return out


def _x_dims(p: _Piece, x_sizes: tuple[int, ...], merge: bool) -> list[list[int]]:
    """[size, packed stride, box start, box size, address stride] of x's dimensions for one
    piece; with `merge`, neighbours merged where the piece spans the inner one whole and it
    continues the outer one in memory."""
    packed = packed_strides(x_sizes)
    dims = [
        [s, ps, b, n, a]
        for s, ps, b, n, a in zip(x_sizes, packed, p.start, p.shape, p.strides, strict=True)
    ]
    if not merge:
        return dims
    merged: list[list[int]] = []
    for dim in reversed(dims):
        if merged:
            inner = merged[-1]
            if inner[2] == 0 and inner[3] == inner[0] and dim[4] == inner[4] * inner[0]:
                merged[-1] = [
                    dim[0] * inner[0],
                    inner[1],
                    dim[2] * inner[0],
                    dim[3] * inner[0],
                    inner[4],
                ]
                continue
        merged.append(dim)
    return merged[::-1]


def _through_run(
    p: _Piece,
    at: tuple[int, ...],
    steps: tuple[int, ...],
    dst: tuple[int, ...],
    shape: tuple[int, ...],
) -> _Piece | None:
    """The part of piece p that a box reads: box element c (c < shape) lands at dst + c and
    reads the tensor at at + steps * c, steps in -1, 0, 1; None where it reads none of p."""
    lo_c, hi_c, offset, strides = [], [], p.offset, []
    for a, step, count, ps, pn, stride in zip(
        at, steps, shape, p.start, p.shape, p.strides, strict=True
    ):
        if step == 0:
            lo, hi = (0, count) if ps <= a < ps + pn else (0, 0)
        elif step > 0:
            lo, hi = max(0, ps - a), min(count, ps + pn - a)
        else:
            lo, hi = max(0, a - ps - pn + 1), min(count, a - ps + 1)
        if lo >= hi:
            return None
        lo_c.append(lo)
        hi_c.append(hi)
        offset += (a + step * lo - ps) * stride
        strides.append(step * stride)
    return _Piece(
        tuple(d + lo for d, lo in zip(dst, lo_c, strict=True)),
        tuple(hi - lo for lo, hi in zip(lo_c, hi_c, strict=True)),
        p.src,
        offset,
        tuple(strides),
    )


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
    p: _Piece, dims: list[list[int]], sizes: tuple[int, ...], strides: tuple[int, ...]
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
    new_strides = [0 if w is None else w[1] * dims[w[0]][4] for w in walk]
    base = p.offset - sum(b * a for _, _, b, _, a in dims)
    offset = base + sum(c * u for c, u in zip(lo, new_strides, strict=True))
    return _Piece(
        tuple(lo),
        tuple(h - low + 1 for low, h in zip(lo, hi, strict=True)),
        p.src,
        offset,
        tuple(new_strides),
    )


@dataclass
class _Node:
    kind: str  # DirectML operator name
    name: str | None
    desc: OperatorDesc | None  # None for Reinterpret


class GraphDesc:
    """What a compiled graph binds: its inputs and outputs, named as DirectML names them."""

    OPERATOR = "GRAPH"

    def __init__(self, inputs: Sequence[GraphTensor], outputs: Sequence[GraphTensor]) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    @property
    def operator_type(self) -> str:
        return "DML_GRAPH"

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"InputTensors[{k}]", t.desc) for k, t in enumerate(self.inputs)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"OutputTensors[{k}]", t.desc) for k, t in enumerate(self.outputs)]


class _StageDesc(GraphDesc):
    """One pass of a graph with intermediates: the graph's inputs and the intermediate
    buffers in, intermediate buffers or the graph's outputs out."""

    def __init__(
        self,
        inputs: Sequence[GraphTensor],
        mids: Sequence[GraphTensor],
        outputs: Sequence[GraphTensor],
        what: str,
    ) -> None:
        super().__init__([*inputs, *mids], outputs)
        self.graph_inputs = len(inputs)
        self.what = what

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        n = self.graph_inputs
        return [
            (f"InputTensors[{k}]" if k < n else f"Intermediates[{k - n}]", t.desc)
            for k, t in enumerate(self.inputs)
        ]


class Graph:
    """A DirectMLX-style graph builder of SLICE, SLICE1, SPLIT, JOIN, Reinterpret and Identity."""

    def __init__(self, feature_level: FeatureLevel | int | str | None = None) -> None:
        self.feature_level = (
            FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)
        )
        self._inputs: list[GraphTensor] = []
        self._tensors: list[GraphTensor] = []
        self._pieces: list[list[_Piece]] = []
        self._nodes: list[_Node] = []
        # a reshape that does not compose: its tensor's packed bytes are its base's packed
        # bytes, so as a graph output it is the base written in the base's packed order
        self._reshapes: dict[int, int] = {}
        # tensors copied into a buffer the compiled graph owns, because a node needs a view of
        # them that does not line up with the pieces: (tensor index, why); the j-th is read
        # by pieces as source _MID + j
        self._intermediates: list[tuple[int, str]] = []
        self._materialised: dict[int, int] = {}
        self._fills: list[bytes] = []  # constants pieces write: source -1 - k is fill k

    # -- building ------------------------------------------------------------------------

    def input(self, desc: BufferTensorDesc | Any, name: str | None = None) -> GraphTensor:
        """A graph input, described by a BufferTensorDesc or by an array's dtype and shape."""
        if not isinstance(desc, BufferTensorDesc):
            dtype = getattr(desc, "dtype", None)
            shape = getattr(desc, "shape", None)
            if dtype is None or shape is None:
                raise DmlError(
                    "Graph.input: expected a BufferTensorDesc or an array, "
                    f"got {type(desc).__name__}"
                )
            element = word_element(dtype, "Graph.input")
            desc = BufferTensorDesc(element.described_as, tuple(shape))
        desc.validate(f"GRAPH.InputTensors[{len(self._inputs)}]")
        index = len(self._inputs)
        layout = Layout.of_desc(desc)
        t = self._add(
            desc,
            None,
            [_Piece((0,) * len(desc.sizes), desc.sizes, index, layout.offset, layout.strides)],
        )
        self._inputs.append(t)
        return t

    def _add(self, desc: BufferTensorDesc, node: int | None, pieces: list[_Piece]) -> GraphTensor:
        t = GraphTensor(self, len(self._tensors), desc, node)
        self._tensors.append(t)
        self._pieces.append(pieces)
        return t

    def _check(self, x: GraphTensor) -> None:
        if not isinstance(x, GraphTensor) or x.graph is not self:
            raise DmlError(f"a node's input must be a tensor of this graph, got {type(x).__name__}")

    def _own(self, x: GraphTensor) -> list[_Piece]:
        self._check(x)
        if x.index in self._reshapes:
            return self._materialise(
                x, f"a reshape to {list(x.sizes)} that does not line up with its input's pieces"
            )
        return self._pieces[x.index]

    def _materialise(self, x: GraphTensor, why: str) -> list[_Piece]:
        """x as one packed piece of an intermediate buffer that the compiled graph fills
        first (once per tensor)."""
        j = self._materialised.get(x.index)
        if j is None:
            j = self._materialised[x.index] = len(self._intermediates)
            made = "graph input" if x.node is None else f"output of node {x.node}"
            note = f"node {len(self._nodes)} reads the {made} through {why}"
            self._intermediates.append((x.index, note))
        sizes = x.sizes
        return [_Piece((0,) * len(sizes), sizes, _MID + j, 0, packed_strides(sizes))]

    def composes(self, x: GraphTensor) -> bool:
        """Whether x feeds another node without being copied to an intermediate buffer first
        (False: a reshape that does not line up with its input's pieces)."""
        self._check(x)
        return x.index not in self._reshapes

    def _output_pieces(self, x: GraphTensor) -> tuple[list[_Piece], GraphTensor]:
        """An output's pieces and the tensor whose packed order they are in."""
        self._check(x)
        base = self._reshapes.get(x.index)
        if base is None:
            return self._pieces[x.index], x
        return self._pieces[base], self._tensors[base]

    def _node(self, kind: str, name: str | None, desc: OperatorDesc | None) -> int:
        k = len(self._nodes)
        if desc is not None:
            try:
                desc.validate(self.feature_level)
            except DmlError as e:
                text = str(e)
                prefix = f"{kind}."
                where = f"node {k} ({kind}{f' {name!r}' if name else ''})"
                raise type(e)(
                    where + ("." + text[len(prefix) :] if text.startswith(prefix) else ": " + text)
                ) from None
        self._nodes.append(_Node(kind, name, desc))
        return k

    @staticmethod
    def _packed(x: GraphTensor, sizes: Sequence[int]) -> BufferTensorDesc:
        return BufferTensorDesc(x.desc.data_type, tuple(sizes))

    def slice(
        self,
        x: GraphTensor,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int],
        name: str | None = None,
    ) -> GraphTensor:
        """DML SLICE: out[c] = x[offsets + strides * c]."""
        pieces = self._own(x)
        desc = SliceDesc(
            self._packed(x, x.sizes),
            self._packed(x, int_tuple(sizes, "SLICE.Sizes")),
            offsets,
            sizes,
            strides,
        )
        k = self._node("SLICE", name, desc)
        return self._add(
            desc.output_tensor, k, _stepped(pieces, desc.offsets, desc.strides, desc.sizes)
        )

    def slice1(
        self,
        x: GraphTensor,
        window_offsets: Sequence[int],
        window_sizes: Sequence[int],
        window_strides: Sequence[int],
        output_sizes: Sequence[int] | None = None,
        name: str | None = None,
    ) -> GraphTensor:
        """DML SLICE1: out[c] = x[CopyStart + window_strides * c] (sizes: MaxCopiedElements)."""
        pieces = self._own(x)
        probe = Slice1Desc(x.desc, x.desc, window_offsets, window_sizes, window_strides)
        if output_sizes is None:
            try:
                out_sizes = probe.default_output_sizes()
            except DmlError:
                out_sizes = x.sizes  # validation below reports the field
        else:
            out_sizes = int_tuple(output_sizes, "SLICE1.OutputTensor.Sizes")
        desc = Slice1Desc(
            self._packed(x, x.sizes),
            self._packed(x, out_sizes),
            window_offsets,
            window_sizes,
            window_strides,
        )
        k = self._node("SLICE1", name, desc)
        start = [
            o + (s - 1 if t < 0 else 0)
            for o, s, t in zip(
                desc.input_window_offsets,
                desc.input_window_sizes,
                desc.input_window_strides,
                strict=True,
            )
        ]
        return self._add(
            desc.output_tensor, k, _stepped(pieces, start, desc.input_window_strides, out_sizes)
        )

    def split(
        self, x: GraphTensor, axis: int, sizes: Sequence[int], name: str | None = None
    ) -> list[GraphTensor]:
        """DML SPLIT: cut x along axis into pieces of `sizes`."""
        pieces = self._own(x)
        ax = int(axis)
        parts = int_tuple(sizes, "SPLIT sizes")
        outs = [
            self._packed(x, [p if d == ax else n for d, n in enumerate(x.sizes)]) for p in parts
        ]
        desc = SplitDesc(self._packed(x, x.sizes), outs, ax)
        k = self._node("SPLIT", name, desc)
        result = []
        for out, at in zip(outs, piece_starts(outs, ax), strict=True):
            start = [at if d == ax else 0 for d in range(len(x.sizes))]
            result.append(self._add(out, k, _stepped(pieces, start, [1] * len(start), out.sizes)))
        return result

    def join(self, xs: Sequence[GraphTensor], axis: int, name: str | None = None) -> GraphTensor:
        """DML JOIN: concatenate xs along axis."""
        xs = list(xs)
        if not xs:
            raise InvalidDescriptorError("JOIN.InputCount is 0: must be greater than 0")
        all_pieces = [self._own(x) for x in xs]
        ax = int(axis)
        first = xs[0]
        sizes = list(first.sizes)
        if 0 <= ax < len(sizes):
            sizes[ax] = sum(x.sizes[ax] if len(x.sizes) > ax else 0 for x in xs)
        desc = JoinDesc([self._packed(x, x.sizes) for x in xs], self._packed(first, sizes), ax)
        k = self._node("JOIN", name, desc)
        joined = []
        for pieces, at in zip(all_pieces, piece_starts(desc.input_tensors, ax), strict=True):
            for p in pieces:
                start = tuple(s + (at if d == ax else 0) for d, s in enumerate(p.start))
                joined.append(_Piece(start, p.shape, p.src, p.offset, p.strides))
        return self._add(desc.output_tensor, k, joined)

    def tile(self, x: GraphTensor, repeats: Sequence[int], name: str | None = None) -> GraphTensor:
        """DML TILE: x repeated along each dimension (its pieces, once per repeat)."""
        pieces = self._own(x)
        counts = int_tuple(repeats, "TILE.Repeats")
        out = TileDesc.output_sizes_for(x.sizes, counts)
        desc = TileDesc(x.desc, self._packed(x, out), counts)
        k = self._node("TILE", name, desc)
        tiled = [
            _Piece(
                tuple(a + r * n for a, r, n in zip(p.start, rep, x.sizes, strict=True)),
                p.shape,
                p.src,
                p.offset,
                p.strides,
            )
            for rep in itertools.product(*(range(r) for r in counts))
            for p in pieces
        ]
        return self._add(desc.output_tensor, k, tiled)

    def padding(
        self,
        x: GraphTensor,
        start_padding: Sequence[int],
        end_padding: Sequence[int],
        mode: Any = "CONSTANT",
        value: float | int = 0,
        name: str | None = None,
    ) -> GraphTensor:
        """DML PADDING1: x inflated by `mode` (CONSTANT with `value`, EDGE, REFLECTION,
        SYMMETRIC, WRAP): x's pieces read through each dimension's runs, the constant as
        fill pieces."""
        pieces = self._own(x)
        start = int_tuple(start_padding, "PADDING1.StartPadding")
        end = int_tuple(end_padding, "PADDING1.EndPadding")
        out = Padding1Desc.output_sizes_for(x.sizes, start, end)
        desc = Padding1Desc(x.desc, self._packed(x, out), mode, None, value, start, end)
        k = self._node("PADDING1", name, desc)
        made: list[_Piece] = []
        n = len(x.sizes)
        fill = self._fill(desc.value_bytes()) if desc.fills() else 0
        for copy in desc.logical_copies():
            if copy.src < 0:  # the constant: a fill piece of this graph's fills
                made.append(_Piece(copy.dst_start, copy.shape, fill, 0, (0,) * n))
                continue
            for p in pieces:
                piece = _through_run(p, copy.src_start, copy.src_step, copy.dst_start, copy.shape)
                if piece is not None:
                    made.append(piece)
        return self._add(desc.output_tensor, k, made)

    def broadcast(
        self, x: GraphTensor, sizes: Sequence[int], name: str | None = None
    ) -> GraphTensor:
        """x's dimensions of size 1 stretched to `sizes` with stride 0 (DirectML broadcasts
        through tensor strides; ONNX Expand). Same rank; other sizes must match."""
        pieces = self._own(x)
        sizes = int_tuple(sizes, "broadcast sizes")
        k = len(self._nodes)
        where = f"node {k} (BROADCAST{f' {name!r}' if name else ''})"
        if len(sizes) != len(x.sizes) or any(
            m not in (1, s) for m, s in zip(x.sizes, sizes, strict=True)
        ):
            raise InvalidDescriptorError(
                f"{where}: sizes {list(x.sizes)} do not broadcast to {list(sizes)}"
            )
        self._node("BROADCAST", name, None)
        wide = [d for d, (m, s) in enumerate(zip(x.sizes, sizes, strict=True)) if m != s]
        stretched = [
            _Piece(
                p.start,
                tuple(sizes[d] if d in wide else c for d, c in enumerate(p.shape)),
                p.src,
                p.offset,
                tuple(0 if d in wide else t for d, t in enumerate(p.strides)),
            )
            for p in pieces
        ]
        return self._add(self._packed(x, sizes), k, stretched)

    def _fill(self, value: bytes) -> int:
        """The source index of the fill writing `value` (one per distinct value)."""
        if value not in self._fills:
            self._fills.append(value)
        return -1 - self._fills.index(value)

    def identity(self, x: GraphTensor, name: str | None = None) -> GraphTensor:
        """DML_OPERATOR_ELEMENT_WISE_IDENTITY (no scale or bias): x, materialised packed."""
        pieces = self._own(x)
        k = self._node("ELEMENT_WISE_IDENTITY", name, None)
        return self._add(self._packed(x, x.sizes), k, list(pieces))

    def reinterpret(
        self,
        x: GraphTensor,
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        name: str | None = None,
    ) -> GraphTensor:
        """DirectMLX Reinterpret: new sizes and element strides over x's (packed) elements."""
        self._check(x)
        k = len(self._nodes)
        where = f"node {k} (REINTERPRET{f' {name!r}' if name else ''})"
        new = BufferTensorDesc(x.desc.data_type, sizes, strides)
        try:
            new.validate(where)
        except DmlError as e:
            raise type(e)(str(e)) from None
        if new.implied_size_in_bytes > x.desc.total_tensor_size_in_bytes:
            raise InvalidDescriptorError(
                f"{where}.Sizes {list(new.sizes)} with Strides {list(new.effective_strides)} reach "
                f"{new.implied_size_in_bytes} bytes: the tensor holds "
                f"{x.desc.total_tensor_size_in_bytes}"
            )
        reshape = new.strides is None or new.strides == packed_strides(new.sizes)
        reshape = reshape and math.prod(new.sizes) == math.prod(x.sizes)
        base = self._reshapes.get(x.index)
        if base is not None and reshape:  # a reshape of a deferred reshape: deferred too
            self._node("REINTERPRET", name, None)
            t = self._add(self._packed(x, new.sizes), k, [])
            self._reshapes[t.index] = base
            return t
        composed = _reinterpreted(self._own(x), x.sizes, new.sizes, new.effective_strides)
        if composed is None and reshape:
            self._node("REINTERPRET", name, None)
            t = self._add(self._packed(x, new.sizes), k, [])
            self._reshapes[t.index] = x.index
            return t
        if composed is None:  # read the view straight out of x copied whole
            why = (
                f"a view of sizes {list(new.sizes)} and strides "
                f"{list(new.effective_strides)} that does not line up with its pieces"
            )
            (whole,) = self._materialise(x, why)
            composed = [
                _Piece((0,) * len(new.sizes), new.sizes, whole.src, 0, new.effective_strides)
            ]
        self._node("REINTERPRET", name, None)
        return self._add(self._packed(x, new.sizes), k, composed)

    def _permuted(
        self, pieces: list[_Piece], sizes: tuple[int, ...], perm: Sequence[int]
    ) -> list[_Piece] | None:
        packed = packed_strides(sizes)
        return _reinterpreted(
            pieces, sizes, tuple(sizes[p] for p in perm), tuple(packed[p] for p in perm)
        )

    def _block_move(
        self,
        kind: str,
        desc: DepthToSpace1Desc | SpaceToDepth1Desc,
        x: GraphTensor,
        name: str | None,
    ) -> GraphTensor:
        """DEPTH_TO_SPACE1 / SPACE_TO_DEPTH1 as a split, a transpose and a merge of x's view."""
        pieces = self._own(x)
        k = self._node(kind, name, desc)
        n, c, h, w = x.sizes
        b = desc.block_size
        dcr = desc.order is DepthSpaceOrder.DEPTH_COLUMN_ROW
        if kind == "DEPTH_TO_SPACE1":
            co = c // (b * b)
            six = (n, b, b, co, h, w) if dcr else (n, co, b, b, h, w)
            perm = (0, 3, 4, 1, 5, 2) if dcr else (0, 1, 4, 2, 5, 3)
        else:
            six = (n, c, h // b, b, w // b, b)
            perm = (0, 3, 5, 1, 2, 4) if dcr else (0, 1, 3, 5, 2, 4)
        split = _reinterpreted(pieces, x.sizes, six, packed_strides(six))
        moved = None if split is None else self._permuted(split, six, perm)
        if moved is None:  # split x copied whole into blocks instead
            whole = self._materialise(x, f"{kind} blocks that do not line up with its pieces")
            split = _reinterpreted(whole, x.sizes, six, packed_strides(six))
            moved = None if split is None else self._permuted(split, six, perm)
        if moved is None:
            raise InvalidDescriptorError(
                f"node {k} ({kind}{f' {name!r}' if name else ''}): its input's layout does not "
                "split into blocks"
            )
        moved_sizes = tuple(six[p] for p in perm)
        out = desc.output_tensor.sizes
        merged = _reinterpreted(moved, moved_sizes, out, packed_strides(out))
        if merged is not None:
            return self._add(self._packed(x, out), k, merged)
        hidden = self._add(self._packed(x, moved_sizes), k, moved)
        t = self._add(self._packed(x, out), k, [])
        self._reshapes[t.index] = hidden.index  # an output only: written in blocks
        return t

    def depth_to_space(
        self, x: GraphTensor, block_size: int, order: Any = 0, name: str | None = None
    ) -> GraphTensor:
        """DML DEPTH_TO_SPACE1 (order DCR / 0 or CRD / 1)."""
        self._check(x)
        out = DepthToSpace1Desc.output_sizes_for(x.desc, block_size, order)
        desc = DepthToSpace1Desc(x.desc, self._packed(x, out), block_size, order)
        return self._block_move("DEPTH_TO_SPACE1", desc, x, name)

    def space_to_depth(
        self, x: GraphTensor, block_size: int, order: Any = 0, name: str | None = None
    ) -> GraphTensor:
        """DML SPACE_TO_DEPTH1 (order DCR / 0 or CRD / 1)."""
        self._check(x)
        out = SpaceToDepth1Desc.output_sizes_for(x.desc, block_size, order)
        desc = SpaceToDepth1Desc(x.desc, self._packed(x, out), block_size, order)
        return self._block_move("SPACE_TO_DEPTH1", desc, x, name)

    # -- compiling -----------------------------------------------------------------------

    def intermediates(self, outputs: Sequence[GraphTensor]) -> list[tuple[GraphTensor, str]]:
        """The tensors these outputs need copied into a buffer of their own first (each with
        the reason), in the order they are filled; empty where the graph is one pass."""
        needed: set[int] = set()

        def visit(pieces: list[_Piece]) -> None:
            for p in pieces:
                if p.src >= _MID and p.src - _MID not in needed:
                    needed.add(p.src - _MID)
                    visit(
                        self._output_pieces(self._tensors[self._intermediates[p.src - _MID][0]])[0]
                    )

        for out in outputs:
            visit(self._output_pieces(out)[0])
        return [
            (self._tensors[self._intermediates[j][0]], self._intermediates[j][1])
            for j in sorted(needed)
        ]

    def _stage(self, targets: Sequence[GraphTensor], mids: Sequence[GraphTensor]) -> Plan:
        """The copies writing `targets` from the graph's inputs and the intermediates `mids`
        (bound after the inputs)."""
        n = len(self._inputs)
        binding = {self._materialised[m.index]: n + k for k, m in enumerate(mids)}
        # a plan moves one word size: the smallest element of the outputs; larger elements
        # move as several words each (a graph may hold any mix of data types)
        unit = min(t.desc.data_type.element_size for t in targets)
        copies = []
        for k, out in enumerate(targets):
            ratio = out.desc.data_type.element_size // unit
            pieces, order = self._output_pieces(out)
            covered = sum(math.prod(p.shape) for p in pieces)
            if covered != math.prod(out.sizes):
                raise DmlError(
                    f"output {k}: {covered} of {math.prod(out.sizes)} elements are written"
                )
            layout = Layout.of_desc(order.desc)
            for p in pieces:
                dst = layout.offset + sum(
                    a * t for a, t in zip(p.start, layout.strides, strict=True)
                )
                src = binding[p.src - _MID] if p.src >= _MID else p.src
                copies.append(
                    ElementCopy(src, p.offset, p.strides, k, dst, layout.strides, p.shape).in_words(
                        ratio
                    )
                )
        return build_plan(unit, copies, n + len(mids), len(targets), self._fills)

    def _checked_outputs(self, outputs: Sequence[GraphTensor]) -> list[GraphTensor]:
        outputs = list(outputs)
        if not outputs:
            raise DmlError("a graph needs at least one output")
        return outputs

    def plan(self, outputs: Sequence[GraphTensor]) -> Plan:
        """The strided copies from the graph's inputs to these outputs, where the graph is one
        pass (no intermediates: see `intermediates`); else the last pass, whose input
        bindings after the graph's inputs are the intermediates."""
        outputs = self._checked_outputs(outputs)
        mids = [t for t, _ in self.intermediates(outputs)]
        return self._stage(outputs, mids)

    def compile(self, outputs: Sequence[GraphTensor], device: Any = None) -> Any:
        """A compiled operator (execute / bind / dispatch) running the graph: one plan, or,
        where some view does not line up with the pieces, one pass per intermediate buffer
        and a last pass to the outputs (a CompiledGraph)."""
        from .device import CompiledGraph, CompiledOperator, Device

        outputs = self._checked_outputs(outputs)
        dev = device if device is not None else Device(self.feature_level)
        desc = GraphDesc(self._inputs, outputs)
        found = self.intermediates(outputs)
        if not found:
            return CompiledOperator(dev, desc, self._stage(outputs, []))  # type: ignore[arg-type]
        mids = [t for t, _ in found]
        passes = []
        for k, (t, why) in enumerate(found):
            stage_desc = _StageDesc(self._inputs, mids, [t], f"intermediate {k} ({why})")
            passes.append((stage_desc, self._stage([t], mids)))
        passes.append(
            (_StageDesc(self._inputs, mids, outputs, "outputs"), self._stage(outputs, mids))
        )
        return CompiledGraph(dev, desc, passes)

    def describe(self) -> str:
        """One line per node, for humans."""
        lines = [f"graph at {self.feature_level.dml_name}: {len(self._inputs)} inputs"]
        for k, n in enumerate(self._nodes):
            lines.append(f"  node {k}: {n.kind}{f' {n.name!r}' if n.name else ''}")
        return "\n".join(lines)
