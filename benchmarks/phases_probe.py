"""Pixel unshuffle through a graph on the GPU (one copy: the gather kernel keeping every
phase of each block it loads) against the same plan with one phase per load, torch's
pixel_unshuffle and a device copy of the output bytes (CUDA-event medians, same run).

    python benchmarks/phases_probe.py
"""

from __future__ import annotations

from typing import Any

import torch

import dmlops
from dmlops.backends.cuda import strategies
from dmlops.bench.common import median_gpu

TYPES = {torch.float32: dmlops.DataType.FLOAT32, torch.float16: dmlops.DataType.FLOAT16}


def bound(x: Any, out: Any, phases: bool) -> Any:
    """The graph's bound dispatch, compiled with or without the every-phase kernel."""
    saved = strategies.phase_axis
    if not phases:
        strategies.phase_axis = lambda copy: None  # type: ignore[assignment]
    try:
        g = dmlops.Graph()
        xi = g.input(dmlops.BufferTensorDesc(TYPES[x.dtype], list(x.shape)))
        y = g.space_to_depth(xi, 2, "CRD")
        table = g.compile([y], dmlops.Device(backend="cuda")).bind([x], [out])
        table.dispatch()
        torch.cuda.synchronize()
        return table.dispatch
    finally:
        strategies.phase_axis = saved


def rows_for(dtype: Any) -> dict[str, float]:
    x = torch.randn(32, 64, 256, 256, device="cuda").to(dtype)
    out = torch.empty(32, 256, 128, 128, device="cuda", dtype=dtype)
    scratch = torch.empty_like(out)
    want = torch.nn.functional.pixel_unshuffle(x, 2)  # (torch's channel order is CRD)
    rows = {}
    for name, phases in (("dmlops, every phase", True), ("dmlops, one phase", False)):
        run = bound(x, out, phases)
        assert torch.equal(out, want)
        rows[name] = median_gpu(run, 30, batch=8)
    rows["torch pixel_unshuffle"] = median_gpu(
        lambda: torch.nn.functional.pixel_unshuffle(x, 2), 30, batch=8
    )
    rows["copy ceiling"] = median_gpu(lambda: scratch.copy_(out), 30, batch=8)
    return rows


def main() -> None:
    for dtype in TYPES:
        rows = rows_for(dtype)
        ceiling = rows["copy ceiling"]
        for name, t in rows.items():
            print(f"{dtype!s:14s} {name:24s} {t * 1e6:9.1f} us  copy/time {ceiling / t:5.2f}")


if __name__ == "__main__":
    main()
