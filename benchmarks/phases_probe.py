"""Pixel unshuffle and pixel shuffle through a graph on the GPU, each one copy: the gather
kernel keeping every phase of each block it loads (unshuffle) and the kernel interleaving
vectors of each phase row (shuffle), against the same plans without those modes, torch's
own ops and a device copy of the output bytes (CUDA-event medians, same run).

    python benchmarks/phases_probe.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import dmlops
from dmlops.backends.cuda import strategies
from dmlops.bench.common import median_gpu

TYPES = {torch.float32: dmlops.DataType.FLOAT32, torch.float16: dmlops.DataType.FLOAT16}


def bound(x: Any, out: Any, shuffle: bool, fast: bool) -> Callable[[], None]:
    """The graph's bound dispatch, compiled with or without its phase mode."""
    saved = strategies.phase_axis, strategies.interleaved
    if not fast:
        strategies.phase_axis = lambda copy: None  # type: ignore[assignment]
        strategies.interleaved = lambda copy: 0  # type: ignore[assignment]
    try:
        g = dmlops.Graph()
        xi = g.input(dmlops.BufferTensorDesc(TYPES[x.dtype], list(x.shape)))
        y = g.depth_to_space(xi, 2, "CRD") if shuffle else g.space_to_depth(xi, 2, "CRD")
        table = g.compile([y], dmlops.Device(backend="cuda")).bind([x], [out])
        table.dispatch()
        torch.cuda.synchronize()
        return table.dispatch  # type: ignore[no-any-return]
    finally:
        strategies.phase_axis, strategies.interleaved = saved


def rows_for(dtype: Any, shuffle: bool) -> dict[str, float]:
    if shuffle:
        x = torch.randn(32, 256, 128, 128, device="cuda").to(dtype)
        out = torch.empty(32, 64, 256, 256, device="cuda", dtype=dtype)
        theirs = torch.nn.functional.pixel_shuffle
    else:
        x = torch.randn(32, 64, 256, 256, device="cuda").to(dtype)
        out = torch.empty(32, 256, 128, 128, device="cuda", dtype=dtype)
        theirs = torch.nn.functional.pixel_unshuffle
    scratch = torch.empty_like(out)
    want = theirs(x, 2)  # (torch's channel order is CRD)
    rows = {}
    for name, fast in (("dmlops, phase mode", True), ("dmlops, without it", False)):
        run = bound(x, out, shuffle, fast)
        assert torch.equal(out, want)
        rows[name] = median_gpu(run, 30, batch=8)
    rows["torch"] = median_gpu(lambda: theirs(x, 2), 30, batch=8)
    rows["copy ceiling"] = median_gpu(lambda: scratch.copy_(out), 30, batch=8)
    return rows


def main() -> None:
    for shuffle in (False, True):
        for dtype in TYPES:
            rows = rows_for(dtype, shuffle)
            ceiling = rows["copy ceiling"]
            what = "pixel shuffle" if shuffle else "pixel unshuffle"
            for name, t in rows.items():
                print(
                    f"{what:16s} {dtype!s:14s} {name:20s} {t * 1e6:9.1f} us  "
                    f"copy/time {ceiling / t:5.2f}"
                )


if __name__ == "__main__":
    main()
