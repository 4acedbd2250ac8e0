"""A graph's tensors and nodes, and the builder's core: inputs, pieces, validation and
the lowering of one operator onto its inputs' pieces."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..elements import word_element
from ..errors import DmlError, InvalidDescriptorError
from ..indexed import IndexedCopy
from ..ops import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    OperatorDesc,
    SpaceToDepth1Desc,
)
from ..ops._indexed import IndexedDesc
from ..ops.depth_space import block_axes
from ..plan import Fill, Layout, LogicalCopy
from ..tensor import BufferTensorDesc, FeatureLevel, packed_strides
from .pieces import (
    _MID,
    _IndexRead,
    _Piece,
    _reinterpreted,
    _through,
)


@dataclass(frozen=True)
class GraphTensor:
    """A tensor of a graph: a graph input or a node's output (packed, as DirectML makes it)."""

    graph: GraphCore
    index: int
    desc: BufferTensorDesc
    node: int | None  # the node that made it; None for a graph input

    @property
    def sizes(self) -> tuple[int, ...]:
        """The tensor's sizes."""
        return self.desc.sizes


@dataclass
class _Node:
    kind: str  # DirectML operator name
    name: str | None
    desc: OperatorDesc | None  # None for Reinterpret


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


class GraphCore:
    """A graph builder's state (tensors, their pieces, nodes, intermediates, fills and
    overlays) and the lowering of one operator onto its inputs' pieces; `Graph` adds the
    operators and the compiling."""

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
        # constants pieces write: source -1 - k is fill k
        self._fills: list[Fill] = []
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
        return desc.as_carried(self.feature_level) if self.carry_types else desc

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

    def _fill(self, value: Fill) -> int:
        """The source index of the fill writing `value` (one per distinct value)."""
        if value not in self._fills:
            self._fills.append(value)
        return -1 - self._fills.index(value)

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
