"""Warm GPU calls whose results are kept (each call's output a new array at a new address,
as a program that keeps its results makes them) against calls whose results are dropped
(torch's allocator hands the same block back each call), torch's own calls beside: µs a
call, 2,000 calls then one synchronize (the GPU page's "Calls whose outputs are kept").

    python benchmarks/kept_outputs.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

import dmlops


def cases() -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Each call: (dmlops', torch's), on new outputs."""
    x = torch.randn(1000, 64, device="cuda")
    idx = torch.randint(0, 1000, (32,), device="cuda")
    ie = torch.randint(0, 64, (1000, 8), device="cuda")
    seed = torch.arange(16, dtype=torch.float32, device="cuda").reshape(1, 1, 4, 4)
    parts = [torch.randn(16, 64, device="cuda") for _ in range(64)]
    big = torch.randn(64, 64, 64, device="cuda")
    return {
        "gather": (lambda: dmlops.gather(x, idx, 0), lambda: torch.index_select(x, 0, idx)),
        "gather_elements": (
            lambda: dmlops.gather_elements(x, ie, 1),
            lambda: torch.gather(x, 1, ie),
        ),
        "slice1 seed": (
            lambda: dmlops.slice1(seed, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]),
            lambda: seed[:, :, 0:4:2, 1:4:2].flip(2).contiguous(),
        ),
        "slice1 big": (
            lambda: dmlops.slice1(big, [0, 0, 0], [64, 64, 64], [1, -1, 2]),
            lambda: big.flip(1)[:, :, ::2].contiguous(),
        ),
        "join 64": (lambda: dmlops.join(parts, 0), lambda: torch.cat(parts, 0)),
    }


def per_call(call: Callable[[], Any], keep: bool, n: int = 2000) -> float:
    """µs a call of `call`, its results kept (alive to the end) or dropped."""
    kept = []
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        result = call()
        if keep:
            kept.append(result)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    print("| call | dmlops, dropped | dmlops, kept | torch, dropped | torch, kept |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (ours, theirs) in cases().items():
        times = [per_call(f, keep) for f in (ours, theirs) for keep in (False, True)]
        print(f"| {name} | " + " | ".join(f"{t:.1f}" for t in times) + " |", flush=True)


if __name__ == "__main__":
    main()
