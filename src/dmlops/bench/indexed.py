"""Indexed data movement: embedding lookups, MoE permutations, take_along_axis, batched
GatherND, paged KV-cache reads and in-place KV-cache writes, against torch eager,
torch.compile and a device copy of the same output bytes (GPU), and numpy (CPU)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops

from .common import HOLD, Result, median_cpu, median_gpu


def _gpu_cases(torch: Any) -> list[tuple[str, Callable[[], tuple[Any, ...]], Any, Any]]:
    """(case, make inputs, dmlops call, torch call)."""
    dev = "cuda"
    f16 = torch.float16

    def embedding() -> tuple[Any, ...]:
        table = torch.randn(32000, 4096, device=dev, dtype=f16)
        return table, torch.randint(0, 32000, (16384,), device=dev)

    def moe() -> tuple[Any, ...]:
        x = torch.randn(16384, 4096, device=dev, dtype=f16)
        return x, torch.randperm(16384, device=dev)

    def along() -> tuple[Any, ...]:
        x = torch.randn(8192, 4096, device=dev)
        return x, torch.randint(0, 4096, (8192, 512), device=dev)

    def batched_nd() -> tuple[Any, ...]:
        x = torch.randn(64, 2048, 1024, device=dev, dtype=f16)
        return x, torch.randint(0, 2048, (64, 256, 1), device=dev)

    def paged() -> tuple[Any, ...]:
        pool = torch.randn(64 * 32 * 2, 16, 8, 128, device=dev, dtype=f16)
        table = torch.randperm(64 * 32 * 2, device=dev)[: 64 * 32].reshape(64, 32)
        return pool, table

    def kv_write() -> tuple[Any, ...]:
        cache = torch.zeros(524288, 8, 128, device=dev, dtype=f16)  # 1 GiB
        slots = torch.randperm(524288, device=dev)[:4096]
        return cache, slots, torch.randn(4096, 8, 128, device=dev, dtype=f16)

    def nd_theirs(x: Any, i: Any) -> Any:
        return torch.gather(x, 1, i.expand(-1, -1, x.shape[2]))

    return [
        (
            "embedding 32000x4096 fp16, 16384 ids",
            embedding,
            lambda t, i: dmlops.gather(t, i),
            lambda t, i: torch.nn.functional.embedding(i, t),
        ),
        (
            "MoE permutation 16384x4096 fp16",
            moe,
            lambda x, p: dmlops.gather(x, p),
            lambda x, p: x[p],
        ),
        (
            "take_along_axis 8192x4096 fp32, 512 per row",
            along,
            lambda x, i: dmlops.gather_elements(x, i, 1),
            lambda x, i: torch.gather(x, 1, i),
        ),
        (
            "GatherND batch 1 [64,2048,1024] fp16 by [64,256,1]",
            batched_nd,
            lambda x, i: dmlops.gather_nd(x, i, 1),
            nd_theirs,
        ),
        (
            "paged KV read 64x32 blocks of [16,8,128] fp16",
            paged,
            lambda p, t: dmlops.gather(p, t),
            lambda p, t: p[t],
        ),
        (
            "in-place KV write 4096 slots of [8,128] fp16, 1 GiB cache",
            kv_write,
            lambda c, s, u: dmlops.scatter_nd(c, s[:, None], u, out=c),
            lambda c, s, u: c.index_copy_(0, s, u),
        ),
    ]


_BATCH = 8


def _time_gpu(
    torch: Any, case: str, make: Callable[[], tuple[Any, ...]], ours: Any, theirs: Any, reps: int
) -> Result:
    inputs = make()
    out = theirs(*inputs)
    in_place = out is inputs[0]
    nbytes = (inputs[2] if in_place else out).numel() * out.element_size()
    moved = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda")
    source = torch.empty_like(moved)
    # 8 calls back to back per sample, queued behind a held stream: the device's time per
    # call (as in a program that keeps its stream full); host cost per call is the
    # call-cost table's
    times = {
        "dmlops": median_gpu(lambda: ours(*inputs), reps, batch=_BATCH, hold=HOLD),
        "torch eager": median_gpu(lambda: theirs(*inputs), reps, batch=_BATCH, hold=HOLD),
        "copy ceiling": median_gpu(lambda: moved.copy_(source), reps, batch=_BATCH, hold=HOLD),
    }
    if not in_place:
        compiled = torch.compile(theirs)
        times["torch.compile"] = median_gpu(
            lambda: compiled(*inputs), reps, batch=_BATCH, hold=HOLD
        )
    return Result("indexed", case, "gpu", nbytes, "torch eager", times)


def run(devices: list[str], reps: int) -> list[Result]:
    """The indexed workloads on each device named."""
    results: list[Result] = []
    if "gpu" in devices:
        import torch

        for case, make, ours, theirs in _gpu_cases(torch):
            results.append(_time_gpu(torch, case, make, ours, theirs, reps))
            torch.cuda.empty_cache()
    if "cpu" in devices:
        rng = np.random.default_rng(0)
        table = rng.standard_normal((32000, 512), dtype=np.float32)
        ids = rng.integers(0, 32000, 16384)
        x = rng.standard_normal((2048, 4096), dtype=np.float32)
        along = rng.integers(0, 4096, (2048, 512))
        cpu_cases = [
            (
                "embedding 32000x512 fp32, 16384 ids",
                16384 * 512 * 4,
                lambda: dmlops.gather(table, ids),
                lambda: np.take(table, ids, axis=0),
            ),
            (
                "take_along_axis 2048x4096 fp32, 512 per row",
                2048 * 512 * 4,
                lambda: dmlops.gather_elements(x, along, 1),
                lambda: np.take_along_axis(x, along, 1),
            ),
        ]
        for case, nbytes, ours_cpu, theirs_cpu in cpu_cases:
            times = {
                "dmlops": median_cpu(ours_cpu, reps),
                "numpy": median_cpu(theirs_cpu, reps),
            }
            results.append(Result("indexed", case, "cpu", nbytes, "numpy", times))
    return results
