"""The graph's operators as methods: each validates its descriptor and composes its own
lowering with its inputs' pieces (the indexed ones as overlays)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DmlError, InvalidDescriptorError
from ..ops import (
    DepthToSpace1Desc,
    DiagonalMatrix1Desc,
    ElementWiseIdentityDesc,
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    JoinDesc,
    Padding1Desc,
    Resample1Desc,
    Resample2Desc,
    ScatterElementsDesc,
    ScatterNdDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from ..ops._indexed import right_aligned
from ..ops.resample import Segment, segments
from ..tensor import BufferTensorDesc, int_tuple, packed_strides
from .core import GraphCore, GraphTensor
from .pieces import (
    _Piece,
    _reinterpreted,
)


class GraphOperators(GraphCore):
    """SLICE, SLICE1, SLICE_GRAD, SPLIT, JOIN, TILE, PADDING1, the indexed operators,
    DEPTH/SPACE, Identity and Reinterpret as graph nodes."""

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

    def diagonal_matrix1(
        self,
        x: GraphTensor,
        diagonal_fill_begin: int,
        diagonal_fill_end: int,
        value: float | int = 0,
        name: str | None = None,
    ) -> GraphTensor:
        """DML DIAGONAL_MATRIX1 of x: `value` where column - row lies in [begin, end)
        (outside [end, begin) where begin > end), x's elements elsewhere (tril, triu): x's
        runs and the value's fill pieces."""
        self._check(x)
        desc = DiagonalMatrix1Desc(
            x.desc, self._packed(x, x.sizes), None, value, diagonal_fill_begin, diagonal_fill_end
        )
        return self._apply(desc, [x], name)[0]

    def resample2(
        self,
        x: GraphTensor,
        sizes: Sequence[int],
        scales: Sequence[float],
        input_pixel_offsets: Sequence[float],
        output_pixel_offsets: Sequence[float],
        rounding_direction: Any = "DECREASING",
        maps: Sequence[Any] | None = None,
        name: str | None = None,
    ) -> GraphTensor:
        """DML RESAMPLE2, nearest neighbour, to an output of `sizes` (each axis's map: `maps`
        where given, instead of the FLOAT arithmetic: the ONNX importer's onnxruntime maps,
        validated as RESAMPLE1 for one-byte elements in a graph carrying types). Composed
        axis by axis from views: each periodic segment of a map (`ops.resample.segments`)
        is its phases' strided windows of x, joined along a new axis and merged — fused
        with what reads the result."""
        self._check(x)
        out = int_tuple(sizes, "RESAMPLE2.OutputTensor.Sizes")
        args = (x.desc, self._packed(x, out), scales, input_pixel_offsets, output_pixel_offsets)
        desc: Any = Resample2Desc(*args, rounding_direction)
        if maps is not None:
            if x.desc.data_type.element_size == 1 and self.carry_types:
                # one-byte elements: RESAMPLE1's table has INT8 and UINT8 (from 6_2),
                # RESAMPLE2's none; the maps decide the elements either way
                desc = Resample1Desc(*args)
            desc = desc.following(maps)
        self._node(desc.OPERATOR, name, desc)
        for d, index_map in enumerate(desc.axis_maps()):
            if np.array_equal(index_map, np.arange(x.sizes[d])):
                continue
            parts = [self._segment(x, d, seg) for seg in segments(index_map)]
            x = parts[0] if len(parts) == 1 else self.join(parts, d)
        return self.reinterpret(x, out, name=name)

    def _segment(self, x: GraphTensor, d: int, seg: Segment) -> GraphTensor:
        """Segment `seg` of axis d's map over x: each phase a strided window of x (a
        broadcast element where the step is 0), the phases interleaved."""
        sizes = list(x.sizes)
        phases = []
        for src in seg.sources:
            offsets = [0] * len(sizes)
            offsets[d] = src
            count = seg.repeats if seg.step else 1
            window = [*sizes[:d], (count - 1) * seg.step + 1, *sizes[d + 1 :]]
            strides = [1] * len(sizes)
            strides[d] = max(seg.step, 1)
            view = self.slice1(x, offsets, window, strides, [*sizes[:d], count, *sizes[d + 1 :]])
            if not seg.step and seg.repeats > 1:
                view = self.broadcast(view, [*sizes[:d], seg.repeats, *sizes[d + 1 :]])
            if seg.period > 1:
                view = self.reinterpret(view, [*sizes[:d], seg.repeats, 1, *sizes[d + 1 :]])
            phases.append(view)
        if seg.period == 1:
            return phases[0]
        woven = self.join(phases, d + 1)
        return self.reinterpret(woven, [*sizes[:d], seg.repeats * seg.period, *sizes[d + 1 :]])

    def upsample_2d(
        self, x: GraphTensor, scale_size: Sequence[int], name: str | None = None
    ) -> GraphTensor:
        """DML UPSAMPLE_2D, nearest neighbour: the last two dimensions scaled up by
        (Height, Width) whole factors. Validated as the descriptor, composed as x viewed
        [..., H, 1, W, 1], broadcast to [..., H, sh, W, sw] and merged: one copy of x's
        elements, each written sh x sw times, fused with what reads the result."""
        self._check(x)
        scale = int_tuple(scale_size, "UPSAMPLE_2D.ScaleSize")
        out = Upsample2dDesc.output_sizes_for(x.sizes, scale)
        self._node("UPSAMPLE_2D", name, Upsample2dDesc(x.desc, self._packed(x, out), scale))
        *lead, h, w = x.sizes
        sh, sw = scale
        split = self.reinterpret(x, (*lead, h, 1, w, 1))
        wide = self.broadcast(split, (*lead, h, sh, w, sw))
        return self.reinterpret(wide, out, name=name)

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
        desc = ElementWiseIdentityDesc(x.desc, self._packed(x, x.sizes))
        k = self._node("ELEMENT_WISE_IDENTITY", name, desc)
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
