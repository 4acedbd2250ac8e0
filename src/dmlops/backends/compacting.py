"""A plan's stream compactions (`dmlops.compaction`: NONZERO_COORDINATES's) on host byte
buffers: each box read as its type, its nonzero elements' coordinates and their count
written as UINT32s. The numpy backend runs it on its buffers; the WebGPU backend on the
bytes it reads back (and writes again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compaction import compacted
from ..plan import Plan
from .converting import strided_view

__all__ = ["HostCompaction"]

_UINT32 = np.dtype(np.uint32)


class HostCompaction:
    """A plan of compactions only, over host byte buffers (one per binding)."""

    def __init__(self, plan: Plan) -> None:
        assert plan.compactions and not plan.copies and not plan.indexed
        self.plan = plan

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any], queue: Any = None) -> None:
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

    def bound(self, ins: Sequence[Any], outs: Sequence[Any]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)
