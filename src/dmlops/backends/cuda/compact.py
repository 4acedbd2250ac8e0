"""NONZERO_COORDINATES's stream compaction (`dmlops.compaction`) on CUDA, on the call's
stream and without a host synchronisation: the nonzero test of the box (a CuPy view of the
bound memory; -0.0 is zero, a NaN is not), an inclusive scan of it (`cupy.cumsum`: each
nonzero element's row is the count before it), the count copied from the scan's last
element, and one kernel that writes each nonzero element's coordinates into its row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...plan import Plan
from .convert import device_view

__all__ = ["CudaCompaction"]

_SCATTER = r"""
extern "C" __global__ void dmlops_coordinates(
    const bool* mask, const unsigned int* rows, long long n, const long long* sizes,
    int rank, int columns, unsigned int* out, long long row_stride, long long column_stride)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !mask[i]) return;
    long long at = (long long)(rows[i] - 1) * row_stride;
    long long rest = i;
    int k = columns - 1;
    for (int d = rank - 1; d >= 0; --d) {  // the coordinate's last `columns` entries
        long long c = rest % sizes[d];
        rest /= sizes[d];
        if (k >= 0) {
            out[at + k * column_stride] = (unsigned int)c;
            --k;
        }
    }
    for (; k >= 0; --k) out[at + k * column_stride] = 0u;  // (more columns than the rank)
}
"""


class CudaCompaction:
    """A plan of compactions on device addresses."""

    def __init__(self, backend: Any, plan: Plan) -> None:
        assert plan.compactions and not plan.copies and not plan.indexed
        self.backend = backend
        self.plan = plan
        self.kernel: Any = None

    def __call__(self, ins: Sequence[int], outs: Sequence[int], queue: Any = None) -> None:
        backend = self.backend
        cp = backend.cupy
        device, stream = backend.default_queue() if queue is None else queue
        if self.kernel is None:
            self.kernel = cp.RawKernel(_SCATTER, "dmlops_coordinates")
        with backend._on(device), cp.cuda.ExternalStream(stream, device):
            found = []
            for c in self.plan.compactions:  # every read first: an output may share the input
                values = device_view(
                    cp,
                    ins[c.src],
                    c.src_offset,
                    c.src_strides,
                    c.shape,
                    np.dtype(c.element),
                    device,
                )
                mask = values != 0
                if values.dtype.kind == "f":
                    mask |= cp.isnan(values)
                flat = cp.ascontiguousarray(mask).reshape(-1)
                found.append((flat, cp.cumsum(flat, dtype=cp.uint32)))
            for c, (flat, rows) in zip(self.plan.compactions, found, strict=True):
                count = device_view(
                    cp, outs[c.count_dst], c.count_offset, (1,), (1,), np.uint32, device
                )
                count[...] = rows[-1:]
                sizes = cp.asarray(np.array(c.shape, np.int64))
                out = outs[c.coords_dst] + c.coords_offset
                n = int(flat.size)
                threads = 256
                self.kernel(
                    ((n + threads - 1) // threads,),
                    (threads,),
                    (
                        flat,
                        rows,
                        np.int64(n),
                        sizes,
                        np.int32(len(c.shape)),
                        np.int32(c.columns),
                        np.uint64(out),
                        np.int64(c.row_stride),
                        np.int64(c.column_stride),
                    ),
                )

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs, queue)
