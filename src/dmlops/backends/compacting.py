"""A plan's stream compactions (`dmlops.compaction`: NONZERO_COORDINATES's) on host byte
buffers: each box read as its type, its nonzero elements' coordinates and their count
written as UINT32s. The numpy backend runs it on its buffers; the WebGPU backend on the
bytes it reads back (and writes again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compaction import Compaction, compacted
from ..plan import Plan
from . import cpu_engine
from .converting import strided_view

__all__ = ["HostCompaction"]

_UINT32 = np.dtype(np.uint32)
_SIGNED_FLOATS = {"float16", "float32", "float64", "bfloat16"}  # -0.0 is zero: sign ignored


def _engine_reads(c: Compaction) -> bool:
    """Whether the engine's compaction has this input's zero test: integers and booleans by
    their bits, IEEE floats (native byte order) by every bit but the sign; at most 8
    dimensions."""
    element = np.dtype(c.element)
    if len(c.shape) > 8 or element.itemsize not in (1, 2, 4, 8):
        return False
    if element.kind in "iub":
        return True
    return element.name in _SIGNED_FLOATS and element.isnative


class HostCompaction:
    """A plan of compactions only, over host byte buffers (one per binding)."""

    def __init__(self, plan: Plan, threads: Callable[[], int] | None = None) -> None:
        """`threads`: how many threads a call may use now (the backend's count), else one."""
        assert plan.compactions and not plan.copies and not plan.indexed
        self.plan = plan
        self.threads = threads

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any], queue: Any = None) -> None:
        if self._on_the_engine(ins, outs):
            return
        found = []
        for c in self.plan.compactions:  # every read first: an output may share the input
            values = strided_view(
                ins[c.src], c.src_offset, c.src_strides, c.shape, np.dtype(c.element)
            )
            found.append(compacted(values, c.columns))
        for c, rows in zip(self.plan.compactions, found, strict=True):
            strided_view(outs[c.count_dst], c.count_offset, (1,), (1,), _UINT32)[0] = len(rows)
            where = (c.row_stride, c.column_stride)
            strided_view(outs[c.coords_dst], c.coords_offset, where, rows.shape, _UINT32)[...] = (
                rows
            )

    def _on_the_engine(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """Each compaction as one pass of the CPU engine (its rows written as it finds them:
        numpy's nonzero, its columns and their copy into the rows were four passes and
        1.05-1.3 x numpy.argwhere's time), where the engine runs, every input's type has a
        zero test there and no output shares memory with an input; False (nothing written)
        else."""
        engine = cpu_engine.native() if cpu_engine.available() else None
        compactions = self.plan.compactions
        if engine is None or not all(map(_engine_reads, compactions)):
            return False
        read = {c.src for c in compactions}
        written = {k for c in compactions for k in (c.count_dst, c.coords_dst)}
        if any(np.may_share_memory(ins[i], outs[o]) for i in read for o in written):
            return False
        threads = 1 if self.threads is None else self.threads()
        for c in compactions:
            element = np.dtype(c.element)
            size = element.itemsize
            count = engine.compact(
                ins[c.src], c.src_offset, c.shape, [s * size for s in c.src_strides], size,
                element.kind == "f" or element.name == "bfloat16", outs[c.coords_dst],
                c.coords_offset, c.row_stride * 4, c.column_stride * 4, c.columns, threads,
            )  # fmt: skip
            strided_view(outs[c.count_dst], c.count_offset, (1,), (1,), _UINT32)[0] = count
        return True

    def bound(self, ins: Sequence[Any], outs: Sequence[Any]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)
