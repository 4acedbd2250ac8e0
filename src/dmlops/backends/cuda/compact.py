"""NONZERO_COORDINATES's stream compaction (`dmlops.compaction`) on CUDA, on the call's
stream and without a host synchronisation: `kernels/compact.cu`'s three launches a
compaction (the box's nonzero test with each block's count; one block's
scan of the counts, which writes the count output; the coordinates of each nonzero element
written at its row; the tests kept as bits, a warp's ballot a round). Every compaction's
input is read before any output is written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...compaction import Compaction
from ...plan import Plan, coalesce
from . import kernels
from .convert import box_walk, dense_strides
from .launch import in_any_thread, launch_kernel, pack_arguments, scratch
from .strategies import THREADS
from .streams import Queue

__all__ = ["CudaCompaction"]

_CHUNK = THREADS * 32  # compact.cu's CHUNK: the elements a block tests
_TYPELESS = (("ES", 1), ("FLOAT", 0))  # (the scan and write kernels read no elements)


def _rows_walk(c: Compaction) -> np.ndarray[Any, Any]:
    """compact.cu's `Rows` by value: element count, shape, row and column strides, rank and
    columns (two int32s in the last word). Leading dimensions of size 1 are left out: their
    coordinates are the zeros written before the others."""
    shape = list(c.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    rank = len(shape)
    words = [c.rows, *shape, *[0] * (8 - rank), c.row_stride, c.column_stride]
    tail = np.array([rank, c.columns], np.int32).view(np.int64)
    return np.concatenate([np.array(words, np.int64), tail])


class CudaCompaction:
    """A plan of compactions on device addresses."""

    def __init__(self, backend: Any, plan: Plan) -> None:
        assert plan.compactions and not plan.copies and not plan.indexed
        self.backend = backend
        self.plan = plan

    @in_any_thread
    def __call__(self, ins: Sequence[int], outs: Sequence[int], queue: Queue | None = None) -> None:
        backend = self.backend
        cp = backend.cupy
        device, stream = backend.default_queue() if queue is None else queue
        runtime = cp.cuda.runtime
        compactions = self.plan.compactions
        blocks = [-(-c.rows // _CHUNK) for c in compactions]
        starts, size = [], 0  # each compaction's counts, then its bits (a ballot a warp, round)
        for b in blocks:
            starts.append(size)
            size += 4 * b + _CHUNK // 8 * b
        with backend._on(device):
            memory = scratch(cp, max(size, 16), stream)
            base = int(memory.data.ptr)
            keep: list[Any] = []
            go = launch_kernel
            for c, b, at in zip(compactions, blocks, starts, strict=True):  # every read first
                if not b:
                    continue
                element = np.dtype(c.element)
                defines = (("ES", element.itemsize), ("FLOAT", int(element.kind == "f")))
                count = kernels.handle(runtime, "compact", defines, "dmlops_compact_count")
                shape, strides, _, src_at, _ = coalesce(
                    c.shape, c.src_strides, dense_strides(c.shape)
                )
                src = np.uint64(ins[c.src] + c.src_offset + src_at * element.itemsize)
                counts, bits = np.uint64(base + at), np.uint64(base + at + 4 * b)
                params = pack_arguments(keep, box_walk(shape, strides), src, bits, counts)
                go(count, b, 1, 1, THREADS, 1, 1, 0, stream, params, 0)
            scan = kernels.handle(runtime, "compact", _TYPELESS, "dmlops_compact_scan")
            write = kernels.handle(runtime, "compact", _TYPELESS, "dmlops_compact_write")
            for c, b, at in zip(compactions, blocks, starts, strict=True):
                counts, bits = np.uint64(base + at), np.uint64(base + at + 4 * b)
                total = np.uint64(outs[c.count_dst] + c.count_offset)
                params = pack_arguments(keep, counts, np.int64(b), total)
                go(scan, 1, 1, 1, THREADS, 1, 1, 0, stream, params, 0)
                if b:
                    coords = np.uint64(outs[c.coords_dst] + c.coords_offset)
                    params = pack_arguments(keep, _rows_walk(c), bits, counts, coords)
                    go(write, b, 1, 1, THREADS, 1, 1, 0, stream, params, 0)
            del memory  # (freed in the stream's order: the launches above come first)

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs, queue)
