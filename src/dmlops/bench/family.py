"""The rest of DirectML's family: CAST, RESAMPLE (nearest, a fractional scale), DIAGONAL_MATRIX1
(tril), FILL_VALUE_SEQUENCE (arange) and NONZERO_COORDINATES (nonzero), against torch eager,
torch.compile and a device copy of the same output bytes (GPU), and numpy (CPU)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import dmlops

from .common import HOLD, Result, median_cpu, median_gpu

_BATCH = 8


def _gpu(torch: Any, reps: int) -> list[Result]:
    dev = "cuda"
    f32 = torch.randn(8192, 4096, device=dev)
    image = torch.randn(8, 64, 256, 256, device=dev, dtype=torch.float16)
    square = torch.randn(64, 1024, 1024, device=dev, dtype=torch.float16)
    mask = (torch.rand(1, 1, 4096, 4096, device=dev) < 0.5).to(torch.int8)
    interp = torch.nn.functional.interpolate
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any], bool]] = [
        ("CAST fp32 -> fp16 [8192,4096]", lambda: dmlops.cast(f32, torch.float16),
         lambda: f32.to(torch.float16), True),
        ("CAST fp32 -> int32 [8192,4096]", lambda: dmlops.cast(f32, torch.int32),
         lambda: f32.to(torch.int32), True),
        ("RESAMPLE nearest x1.5 [8,64,256,256] fp16",
         lambda: dmlops.resample(image, [1, 1, 1.5, 1.5], input_pixel_offsets=[0] * 4,
                                 output_pixel_offsets=[0] * 4, rounding_direction="DECREASING"),
         lambda: interp(image, scale_factor=1.5, mode="nearest"), True),
        ("DIAGONAL_MATRIX1 tril [64,1024,1024] fp16", lambda: dmlops.tril(square),
         lambda: torch.tril(square), True),
        ("FILL_VALUE_SEQUENCE arange 16M int64", lambda: dmlops.arange(1 << 24, device="cuda"),
         lambda: torch.arange(1 << 24, device=dev), False),
        ("NONZERO_COORDINATES [4096,4096] int8, half nonzero (+ count read)",
         lambda: dmlops.nonzero(mask), lambda: torch.nonzero(mask), False),
    ]  # fmt: skip
    results = []
    for case, ours, theirs, compile_it in cases:
        out = theirs()
        nbytes = out.numel() * out.element_size()
        moved = torch.empty(max(1, nbytes // 2), dtype=torch.float16, device=dev)
        source = torch.empty_like(moved)
        times = {
            "dmlops": median_gpu(ours, reps, batch=_BATCH, hold=HOLD),
            "torch eager": median_gpu(theirs, reps, batch=_BATCH, hold=HOLD),
            "copy ceiling": median_gpu(partial(moved.copy_, source), reps, batch=_BATCH, hold=HOLD),
        }
        if compile_it:
            compiled = torch.compile(theirs)
            times["torch.compile"] = median_gpu(compiled, reps, batch=_BATCH, hold=HOLD)
        results.append(Result("family", case, "gpu", nbytes, "torch eager", times))
        torch.cuda.empty_cache()
    return results


def _cpu(reps: int) -> list[Result]:
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((2048, 4096), dtype=np.float32)
    image = rng.standard_normal((4, 16, 256, 256), dtype=np.float32)
    rows = (np.arange(384) // 1.5).astype(np.int64)
    square = rng.standard_normal((16, 1024, 1024), dtype=np.float32)
    mask = (rng.random((1, 1, 2048, 2048)) < 0.5).astype(np.int8)
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("CAST fp32 -> fp16 [2048,4096]", lambda: dmlops.cast(f32, np.float16),
         lambda: f32.astype(np.float16)),
        ("CAST fp32 -> int32 [2048,4096]", lambda: dmlops.cast(f32, np.int32),
         lambda: f32.astype(np.int32)),
        ("RESAMPLE nearest x1.5 [4,16,256,256] fp32",
         lambda: dmlops.resample(image, [1, 1, 1.5, 1.5], input_pixel_offsets=[0] * 4,
                                 output_pixel_offsets=[0] * 4, rounding_direction="DECREASING"),
         lambda: image[:, :, rows][:, :, :, rows]),
        ("DIAGONAL_MATRIX1 tril [16,1024,1024] fp32", lambda: dmlops.tril(square),
         lambda: np.tril(square)),
        ("FILL_VALUE_SEQUENCE arange 16M int64", lambda: dmlops.arange(1 << 24),
         lambda: np.arange(1 << 24)),
        ("NONZERO_COORDINATES [2048,2048] int8, half nonzero", lambda: dmlops.nonzero(mask),
         lambda: np.argwhere(mask)),
    ]  # fmt: skip
    results = []
    for case, ours, theirs in cases:
        out = np.asarray(theirs())
        times = {"dmlops": median_cpu(ours, reps), "numpy": median_cpu(theirs, reps)}
        results.append(Result("family", case, "cpu", out.nbytes, "numpy", times))
    return results


def run(devices: list[str], reps: int) -> list[Result]:
    """The family's cases on each device named."""
    results: list[Result] = []
    if "gpu" in devices:
        import torch

        results += _gpu(torch, reps)
    if "cpu" in devices:
        results += _cpu(reps)
    return results
