"""Warm GPU calls whose results are kept (each call's output a new array at a new address,
as a program that keeps its results makes them) against calls whose results are dropped
(torch's allocator hands the same block back each call), torch's own calls beside: µs a
call, 2,000 calls then one synchronize, the median of ROUNDS rounds that take every
column in turn (the GPU page's "Calls whose outputs are kept"); `--gc-off`: Python's
cyclic garbage collector disabled while timing (what it costs a program that keeps many
tensors).

    python benchmarks/kept_outputs.py [ROUNDS] [--gc-off]   (5)
"""

from __future__ import annotations

import gc
import statistics
import sys
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


def main(rounds: int, gc_off: bool) -> None:
    print(f"garbage collector {'off' if gc_off else 'on'} while timing; median of {rounds} rounds")
    print("| call | dmlops, dropped | dmlops, kept | torch, dropped | torch, kept |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (ours, theirs) in cases().items():
        columns = [(f, keep) for f in (ours, theirs) for keep in (False, True)]
        times: list[list[float]] = [[] for _ in columns]
        for _ in range(rounds):
            for k, (f, keep) in enumerate(columns):
                gc.collect()
                if gc_off:
                    gc.disable()
                try:
                    times[k].append(per_call(f, keep))
                finally:
                    gc.enable()
        row = [statistics.median(t) for t in times]
        print(f"| {name} | " + " | ".join(f"{t:.1f}" for t in row) + " |", flush=True)


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(numbers[0]) if numbers else 5, "--gc-off" in sys.argv)
