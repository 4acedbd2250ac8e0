"""A graph compiled: its outputs' plan (one pass, or passes through intermediate buffers)
and the descriptors a compiled graph binds."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ..errors import DmlError
from ..plan import ElementCopy, Layout, Plan, build_plan, with_indexed
from ..tensor import BufferTensorDesc
from .core import GraphTensor
from .operators import GraphOperators
from .pieces import (
    _MID,
)


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


class Graph(GraphOperators):
    """A DirectMLX-style graph builder of SLICE, SLICE1, SPLIT, JOIN, Reinterpret and Identity."""

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
        from ..device import CompiledGraph, CompiledOperator, Device

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
