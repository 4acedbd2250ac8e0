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

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .elements import word_element
from .errors import DmlError, InvalidDescriptorError, UnsupportedFeatureLevelError
from .indexed import IndexedCopy
from .ops import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    ScatterElementsDesc,
    ScatterNdDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SplitDesc,
    TileDesc,
)
from .ops._indexed import IndexedDesc, right_aligned
from .ops.depth_space import block_axes
from .plan import ElementCopy, Layout, LogicalCopy, Plan, build_plan, with_indexed
from .tensor import BufferTensorDesc, FeatureLevel, int_tuple, packed_strides

__all__ = ["Graph", "GraphTensor", "GraphDesc"]


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


@dataclass(frozen=True)
class _Recipe:
    """An indexed operator's writes into (a placement of) its output `j`: the copies its
    descriptor gives for that output at element `start` of a packed tensor of the same rank,
    each (copy number, source, index) with the graph sources they read."""

    desc: IndexedDesc
    layouts: tuple[Layout, ...]
    j: int
    made_of: tuple[tuple[int, int, int], ...]
    start: tuple[int, ...]

    def moved(self, by: Sequence[int]) -> _Recipe:
        """The same writes with their tensor placed at element `by` of another."""
        start = tuple(a + b for a, b in zip(self.start, by, strict=True))
        return dataclasses.replace(self, start=start)

    def copies(self, sizes: Sequence[int]) -> list[IndexedCopy]:
        """The copies, their destination a packed tensor of `sizes`."""
        strides = packed_strides(tuple(sizes))
        outs = [Layout(0, packed_strides(t.sizes)) for _, t in self.desc.output_fields()]
        at = sum(a * t for a, t in zip(self.start, strides, strict=True))
        outs[self.j] = Layout(at, strides)
        made = self.desc.indexed_copies(list(self.layouts), outs)
        return [replace(made[n], src=src, index=index) for n, src, index in self.made_of]


class Graph:
    """A DirectMLX-style graph builder of SLICE, SLICE1, SPLIT, JOIN, Reinterpret and Identity."""

    def __init__(
        self, feature_level: FeatureLevel | int | str | None = None, *, carry_types: bool = False
    ) -> None:
        """`carry_types`: a node whose operator's table lacks its data type at this level is
        validated with an unsigned carrier of a size dividing the element's, as the
        functional API describes any array (the plan moves whole elements either way).
        Off by default: a graph refuses what DirectML would; the ONNX lowering turns it
        on."""
        self.feature_level = (
            FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)
        )
        self.carry_types = carry_types
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
        # indexed copies that write a tensor after its pieces (scatters, ONE_HOT, reversals,
        # gathers whose order does not map onto pieces), per tensor index; their sources and
        # indices name graph sources as pieces do, their destination the packed tensor
        self._overlays: dict[int, list[IndexedCopy]] = {}
        # how each tensor's overlays are made again for another placement of its elements
        # (a node that copies the whole tensor into its output: a JOIN's piece, a TILE's
        # repeat), so the indexed writes land there directly instead of the tensor being
        # materialised first
        self._recipes: dict[int, list[_Recipe]] = {}

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
        if x.index in self._overlays:
            return self._materialise(x, "its indexed writes (known only at run time)")
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
                self._as_validated(desc).validate(self.feature_level)
            except DmlError as e:
                text = str(e)
                prefix = f"{kind}."
                where = f"node {k} ({kind}{f' {name!r}' if name else ''})"
                raise type(e)(
                    where + ("." + text[len(prefix) :] if text.startswith(prefix) else ": " + text)
                ) from None
        self._nodes.append(_Node(kind, name, desc))
        return k

    def _as_validated(self, desc: OperatorDesc) -> OperatorDesc:
        """The descriptor validation sees: its data described by a carrier where the graph
        carries types and the operator's table lacks theirs."""
        data = desc.data_fields()
        if not self.carry_types or not data:
            return desc
        own = data[0][1].data_type
        try:
            carrier = desc.carrier(self.feature_level, own.element_size, own)
        except UnsupportedFeatureLevelError:  # an operator newer than the level: named there
            return desc
        return desc if carrier is None else desc.carried_as(carrier)

    @staticmethod
    def _packed(x: GraphTensor, sizes: Sequence[int]) -> BufferTensorDesc:
        return BufferTensorDesc(x.desc.data_type, tuple(sizes))

    # -- operators: each descriptor's own lowering composed with its inputs' pieces ------

    def operator(
        self,
        desc: OperatorDesc,
        inputs: Sequence[GraphTensor],
        name: str | None = None,
    ) -> list[GraphTensor]:
        """Any operator's descriptor as a node over these tensors (in the order of its input
        fields, whose sizes and data types must be the tensors'; every tensor desc packed).
        The node composes the descriptor's own lowering (its logical copies and, for the
        indexed operators, its indexed copies) with its inputs' pieces. Returns its outputs."""
        xs = list(inputs)
        for x in xs:
            self._check(x)
        k = len(self._nodes)
        where = f"node {k} ({desc.OPERATOR}{f' {name!r}' if name else ''})"
        fields = desc.input_fields()
        if len(fields) != len(xs):
            names = ", ".join(f for f, _ in fields)
            raise InvalidDescriptorError(
                f"{where}: {len(xs)} inputs given for the {len(fields)} of the operator ({names})"
            )
        for (field, t), x in zip(fields, xs, strict=True):
            if t.sizes != x.sizes or t.data_type != x.desc.data_type:
                raise InvalidDescriptorError(
                    f"{where}.{field} is {t.data_type.name} {list(t.sizes)}: the graph tensor "
                    f"given for it is {x.desc.data_type.name} {list(x.sizes)}"
                )
        for field, t in fields + desc.output_fields():
            if t.strides is not None and tuple(t.strides) != packed_strides(t.sizes):
                raise InvalidDescriptorError(
                    f"{where}.{field}.Strides is {list(t.strides)}: a graph's tensors are packed"
                )
        if isinstance(desc, (DepthToSpace1Desc, SpaceToDepth1Desc)):
            return [self._block_move(desc.OPERATOR, desc, xs[0], name)]
        return self._apply(desc, xs, name)

    def _apply(
        self, desc: OperatorDesc, xs: Sequence[GraphTensor], name: str | None
    ) -> list[GraphTensor]:
        """Validate the node, then compose its copies with its inputs' pieces."""
        k = self._node(desc.OPERATOR, name, desc)
        outs = [t for _, t in desc.output_fields()]
        copies = desc.logical_copies()
        placed = set() if isinstance(desc, IndexedDesc) else self._placed(xs, copies, outs)
        pieces = [self._pieces[x.index] if i in placed else self._own(x) for i, x in enumerate(xs)]
        made: list[list[_Piece]] = [[] for _ in outs]
        forwarded: dict[int, list[_Recipe]] = {}
        fills = desc.fills()
        for lc in copies:
            if lc.src in placed:  # its indexed writes, made again where it is placed
                forwarded.setdefault(lc.dst, []).extend(
                    r.moved(lc.dst_start) for r in self._recipes[xs[lc.src].index]
                )
            if lc.dst_step is not None and any(s != 1 for s in lc.dst_step):
                raise InvalidDescriptorError(
                    f"node {k} ({desc.OPERATOR}): a copy stepping its destination does not "
                    "compose into pieces"
                )
            if lc.src < 0:  # a constant: a fill piece of this graph's fills
                fill = self._fill(fills[-1 - lc.src])
                made[lc.dst].append(_Piece(lc.dst_start, lc.shape, fill, 0, (0,) * len(lc.shape)))
                continue
            for p in pieces[lc.src]:
                piece = _through(p, lc.src_start, lc.src_step, lc.dst_start, lc.shape)
                if piece is not None:
                    made[lc.dst].append(piece)
        if isinstance(desc, IndexedDesc):
            forwarded = self._indexed(desc, xs, pieces, made)
        results = []
        for j, (t, m) in enumerate(zip(outs, made, strict=True)):
            out = self._add(self._packed_desc(t), k, m)
            if j in forwarded:
                self._recipes[out.index] = forwarded[j]
                self._overlays[out.index] = [c for r in forwarded[j] for c in r.copies(t.sizes)]
            results.append(out)
        return results

    def _placed(
        self, xs: Sequence[GraphTensor], copies: Sequence[LogicalCopy], outs: Sequence[Any]
    ) -> set[int]:
        """The inputs with indexed writes that every copy reading them places whole, at a
        box of an output of their rank: their writes can be made there, not materialised."""
        placed = set()
        for i, x in enumerate(xs):
            self._check(x)
            if x.index not in self._recipes or x.index in self._reshapes:
                continue
            reads = [lc for lc in copies if lc.src == i]
            if reads and all(
                not any(lc.src_start)
                and all(step == 1 for step in lc.src_step)
                and lc.shape == x.sizes
                and len(outs[lc.dst].sizes) == len(x.sizes)
                for lc in reads
            ):
                placed.add(i)
        return placed

    def _indexed(
        self,
        desc: IndexedDesc,
        xs: Sequence[GraphTensor],
        pieces: list[list[_Piece]],
        made: list[list[_Piece]],
    ) -> dict[int, list[_Recipe]]:
        """An indexed operator's index-driven copies over its inputs' buffers: a gather that
        fills its output in order becomes gathered pieces (which later nodes cut, step and
        move like any other); the rest (scatters, ONE_HOT, reversals) write after the output's
        pieces. Returns how to make those, per output."""
        ins = [t for _, t in desc.input_fields()]
        outs = [t for _, t in desc.output_fields()]
        packed_out = [Layout(0, packed_strides(t.sizes)) for t in outs]
        probe = desc.indexed_copies([Layout.of_desc(t) for t in ins], packed_out)
        whole: dict[int, _Piece] = {}
        for i in sorted({c.index for c in probe} | {c.src for c in probe if c.src >= 0}):
            ps, x = pieces[i], xs[i]
            one = len(ps) == 1 and ps[0].index is None and ps[0].src >= 0
            if not (one and ps[0].shape == x.sizes and not any(ps[0].start)):
                ps = self._materialise(x, "an indexed read of a tensor that is no one view")
            whole[i] = ps[0]
        layouts = [
            Layout(whole[i].offset, whole[i].strides) if i in whole else Layout.of_desc(t)
            for i, t in enumerate(ins)
        ]
        fills = desc.fills()
        size = desc.element_size
        overlays: dict[int, list[tuple[int, int, int]]] = {}  # (copy number, src, index)
        for number, c in enumerate(desc.indexed_copies(layouts, packed_out)):
            index = whole[c.index]
            src = whole[c.src].src if c.src >= 0 else self._fill(fills[-1 - c.src])
            out = outs[c.dst]
            in_order = (
                not c.scatter
                and c.reverse_dim < 0
                and not c.skip_out_of_range
                and c.src >= 0
                and c.dst_offset == 0
                and all(
                    t == u or n == 1
                    for n, t, u in zip(c.shape, c.dst_strides, packed_strides(c.shape), strict=True)
                )
                and math.prod(c.shape) == math.prod(out.sizes)
                and not made[c.dst]
            )
            if in_order:
                read = _IndexRead(
                    index.src, c.index_offset // c.index_element_size, c.index_strides, c
                )
                whole_read = _Piece(
                    (0,) * len(c.shape), c.shape, src, c.src_offset // size, c.src_strides, read
                )
                gathered = _reinterpreted(
                    [whole_read], c.shape, out.sizes, packed_strides(out.sizes)
                )
                if gathered is not None:
                    made[c.dst].extend(gathered)
                    continue
            overlays.setdefault(c.dst, []).append((number, src, index.src))
        rank = {j: len(t.sizes) for j, t in enumerate(outs)}
        return {
            j: [_Recipe(desc, tuple(layouts), j, tuple(made_of), (0,) * rank[j])]
            for j, made_of in overlays.items()
        }

    @staticmethod
    def _packed_desc(t: BufferTensorDesc) -> BufferTensorDesc:
        return BufferTensorDesc(t.data_type, t.sizes)

    def slice(
        self,
        x: GraphTensor,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int],
        name: str | None = None,
    ) -> GraphTensor:
        """DML SLICE: out[c] = x[offsets + strides * c]."""
        self._check(x)
        desc = SliceDesc(
            self._packed(x, x.sizes),
            self._packed(x, int_tuple(sizes, "SLICE.Sizes")),
            offsets,
            sizes,
            strides,
        )
        return self._apply(desc, [x], name)[0]

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
        self._check(x)
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
        return self._apply(desc, [x], name)[0]

    def slice_grad(
        self,
        dy: GraphTensor,
        output_sizes: Sequence[int],
        window_offsets: Sequence[int],
        window_sizes: Sequence[int],
        window_strides: Sequence[int],
        name: str | None = None,
    ) -> GraphTensor:
        """DML SLICE_GRAD: dy placed where SLICE1 with this window reads an input of
        `output_sizes`, zeros elsewhere."""
        self._check(dy)
        out = int_tuple(output_sizes, "SLICE_GRAD.OutputGradientTensor.Sizes")
        desc = SliceGradDesc(
            self._packed(dy, dy.sizes),
            self._packed(dy, out),
            window_offsets,
            window_sizes,
            window_strides,
        )
        return self._apply(desc, [dy], name)[0]

    def split(
        self, x: GraphTensor, axis: int, sizes: Sequence[int], name: str | None = None
    ) -> list[GraphTensor]:
        """DML SPLIT: cut x along axis into pieces of `sizes`."""
        self._check(x)
        ax = int(axis)
        parts = int_tuple(sizes, "SPLIT sizes")
        outs = [
            self._packed(x, [p if d == ax else n for d, n in enumerate(x.sizes)]) for p in parts
        ]
        return self._apply(SplitDesc(self._packed(x, x.sizes), outs, ax), [x], name)

    def join(self, xs: Sequence[GraphTensor], axis: int, name: str | None = None) -> GraphTensor:
        """DML JOIN: concatenate xs along axis."""
        xs = list(xs)
        if not xs:
            raise InvalidDescriptorError("JOIN.InputCount is 0: must be greater than 0")
        for x in xs:
            self._check(x)
        ax = int(axis)
        first = xs[0]
        sizes = list(first.sizes)
        if 0 <= ax < len(sizes):
            sizes[ax] = sum(x.sizes[ax] if len(x.sizes) > ax else 0 for x in xs)
        desc = JoinDesc([self._packed(x, x.sizes) for x in xs], self._packed(first, sizes), ax)
        return self._apply(desc, xs, name)[0]

    def tile(self, x: GraphTensor, repeats: Sequence[int], name: str | None = None) -> GraphTensor:
        """DML TILE: x repeated along each dimension (its pieces, once per repeat)."""
        self._check(x)
        counts = int_tuple(repeats, "TILE.Repeats")
        out = TileDesc.output_sizes_for(x.sizes, counts)
        return self._apply(TileDesc(x.desc, self._packed(x, out), counts), [x], name)[0]

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
        self._check(x)
        start = int_tuple(start_padding, "PADDING1.StartPadding")
        end = int_tuple(end_padding, "PADDING1.EndPadding")
        out = Padding1Desc.output_sizes_for(x.sizes, start, end)
        desc = Padding1Desc(x.desc, self._packed(x, out), mode, None, value, start, end)
        return self._apply(desc, [x], name)[0]

    # -- indexed operators --------------------------------------------------------------

    def gather(
        self,
        x: GraphTensor,
        indices: GraphTensor,
        axis: int,
        index_dimensions: int | None = None,
        name: str | None = None,
    ) -> GraphTensor:
        """DML GATHER: out[a, j, b] = x[a, indices[j], b] along `axis` (same rank; the
        indices' last `index_dimensions` sizes replace x's at `axis`, default all that are
        not leading ones)."""
        self._check(x)
        self._check(indices)
        rank = len(x.sizes)
        if index_dimensions is None:
            lead = next((d for d, n in enumerate(indices.sizes) if n != 1), rank)
            index_dimensions = rank - lead
        full = GatherDesc.output_sizes_for(x.sizes, indices.sizes, axis, index_dimensions)
        out = right_aligned("GATHER", "OutputTensor", full, rank, "the output")
        desc = GatherDesc(
            x.desc, indices.desc, self._packed(x, out), int(axis), int(index_dimensions)
        )
        return self._apply(desc, [x, indices], name)[0]

    def gather_elements(
        self, x: GraphTensor, indices: GraphTensor, axis: int, name: str | None = None
    ) -> GraphTensor:
        """DML GATHER_ELEMENTS: out[c] = x[c with c[axis] = indices[c]] (out as indices)."""
        self._check(x)
        self._check(indices)
        desc = GatherElementsDesc(x.desc, indices.desc, self._packed(x, indices.sizes), int(axis))
        return self._apply(desc, [x, indices], name)[0]

    def gather_nd(
        self,
        x: GraphTensor,
        indices: GraphTensor,
        batch_dimension_count: int = 0,
        name: str | None = None,
    ) -> GraphTensor:
        """DML GATHER_ND1: out = x at the index tuples along indices' last dimension, after
        `batch_dimension_count` shared leading dimensions (same rank, right-aligned)."""
        self._check(x)
        self._check(indices)
        rank = len(x.sizes)
        full = GatherNd1Desc.output_sizes_for(x.sizes, indices.sizes, batch_dimension_count)
        out = right_aligned("GATHER_ND1", "OutputTensor", full, rank, "the output")
        desc = GatherNd1Desc(
            x.desc, indices.desc, self._packed(x, out), rank, rank, int(batch_dimension_count)
        )
        return self._apply(desc, [x, indices], name)[0]

    def scatter_elements(
        self,
        x: GraphTensor,
        indices: GraphTensor,
        updates: GraphTensor,
        axis: int,
        name: str | None = None,
    ) -> GraphTensor:
        """DML SCATTER_ELEMENTS: x with updates[c] written at c with c[axis] = indices[c]."""
        for t in (x, indices, updates):
            self._check(t)
        desc = ScatterElementsDesc(
            x.desc, indices.desc, updates.desc, self._packed(x, x.sizes), int(axis)
        )
        return self._apply(desc, [x, indices, updates], name)[0]

    def scatter_nd(
        self, x: GraphTensor, indices: GraphTensor, updates: GraphTensor, name: str | None = None
    ) -> GraphTensor:
        """DML SCATTER_ND: x with updates written at the index tuples along indices' last
        dimension (same rank, right-aligned)."""
        for t in (x, indices, updates):
            self._check(t)
        rank = len(x.sizes)
        desc = ScatterNdDesc(
            x.desc, indices.desc, updates.desc, self._packed(x, x.sizes), rank, rank
        )
        return self._apply(desc, [x, indices, updates], name)[0]

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
        stretched = [  # every read (a gathered piece's indices too) gets stride 0 there
            p.rebuilt(
                p.start,
                tuple(sizes[d] if d in wide else c for d, c in enumerate(p.shape)),
                [(o, [0 if d in wide else t for d, t in enumerate(st)]) for o, st in p.reads()],
            )
            for p in pieces
        ]
        return self._add(self._packed(x, sizes), k, stretched)

    def _fill(self, value: bytes) -> int:
        """The source index of the fill writing `value` (one per distinct value)."""
        if value not in self._fills:
            self._fills.append(value)
        return -1 - self._fills.index(value)

    def filled(self, desc: BufferTensorDesc, value: bytes, name: str | None = None) -> GraphTensor:
        """A tensor of desc's type and sizes whose every element is `value` (one element's
        bytes): DML_OPERATOR_FILL_VALUE_CONSTANT, written as one fill piece."""
        if len(value) != desc.data_type.element_size:
            raise InvalidDescriptorError(
                f"FILL_VALUE_CONSTANT: a value of {len(value)} bytes for elements of "
                f"{desc.data_type.element_size}"
            )
        k = self._node("FILL_VALUE_CONSTANT", name, None)
        rank = len(desc.sizes)
        piece = _Piece((0,) * rank, desc.sizes, self._fill(value), 0, (0,) * rank)
        return self._add(BufferTensorDesc(desc.data_type, desc.sizes), k, [piece])

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
        if reshape and x.index in self._overlays:  # indexed writes: their bytes, reshaped
            self._node("REINTERPRET", name, None)
            t = self._add(self._packed(x, new.sizes), k, [])
            self._reshapes[t.index] = x.index
            return t
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
        dcr = desc.order is DepthSpaceOrder.DEPTH_COLUMN_ROW
        six, perm, _ = block_axes(x.sizes, desc.block_size, dcr, kind == "DEPTH_TO_SPACE1")
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

        def visit(t: GraphTensor) -> None:
            for src in self._sources(t):
                if src >= _MID and src - _MID not in needed:
                    needed.add(src - _MID)
                    visit(self._tensors[self._intermediates[src - _MID][0]])

        for out in outputs:
            visit(out)
        return [
            (self._tensors[self._intermediates[j][0]], self._intermediates[j][1])
            for j in sorted(needed)
        ]

    def _sources(self, t: GraphTensor) -> set[int]:
        """The sources (graph inputs, intermediates _MID + j, fills) t's copies read."""
        pieces, order = self._output_pieces(t)
        found = {s for p in pieces for s in p.whole_sources}
        for c in self._overlays.get(order.index, []):
            found.update((c.src, c.index))
        return found

    def _stage(self, targets: Sequence[GraphTensor], mids: Sequence[GraphTensor]) -> Plan:
        """The copies writing `targets` from the graph's inputs and the intermediates `mids`
        (bound after the inputs)."""
        n = len(self._inputs)
        binding = {self._materialised[m.index]: n + k for k, m in enumerate(mids)}
        # a plan moves one word size: the smallest element of the outputs; larger elements
        # move as several words each (a graph may hold any mix of data types)
        unit = min(t.desc.data_type.element_size for t in targets)

        def bound(src: int) -> int:
            return binding[src - _MID] if src >= _MID else src

        copies, indexed = [], []
        for k, out in enumerate(targets):
            size = out.desc.data_type.element_size
            ratio = size // unit
            pieces, order = self._output_pieces(out)
            overlay = self._overlays.get(order.index, [])
            covered = sum(math.prod(p.shape) for p in pieces)
            covered += sum(c.element_count for c in overlay if not c.scatter)
            if covered != math.prod(out.sizes):
                raise DmlError(
                    f"output {k}: {covered} of {math.prod(out.sizes)} elements are written"
                )
            layout = Layout.of_desc(order.desc)
            for p in pieces:
                dst = layout.offset + sum(
                    a * t for a, t in zip(p.start, layout.strides, strict=True)
                )
                if p.index is None:
                    copy = ElementCopy(
                        bound(p.src), p.offset, p.strides, k, dst, layout.strides, p.shape
                    )
                    copies.append(copy.in_words(ratio))
                    continue
                read = p.index
                gather = dataclasses.replace(
                    read.copy,
                    src=bound(p.src),
                    src_offset=p.offset * size,
                    src_strides=p.strides,
                    dst=k,
                    dst_offset=dst * size,
                    dst_strides=layout.strides,
                    shape=p.shape,
                    index=bound(read.src),
                    index_offset=read.offset * read.copy.index_element_size,
                    index_strides=read.strides,
                )
                indexed.append(gather.in_words(ratio) if ratio > 1 else gather)
            for c in overlay:
                placed = dataclasses.replace(
                    c,
                    src=bound(c.src),
                    index=bound(c.index),
                    dst=k,
                    dst_offset=c.dst_offset + layout.offset * size,
                )
                indexed.append(placed.in_words(ratio) if ratio > 1 else placed)
        plan = build_plan(unit, copies, n + len(mids), len(targets), self._fills)
        return with_indexed(plan, indexed) if indexed else plan

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
