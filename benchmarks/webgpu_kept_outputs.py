"""WebGPU calls whose results are kept (each output carved from an arena at a new place)
against calls whose results are dropped (the arena hands the same place back), with
layouts on (a plan's piece tables and indexed copies' meta tables shifted to the new
offsets, `backends/webgpu/layouts.py`) and off (each new binding planned anew): µs a call,
host time to completion of ROUNDS alternating rounds of 500 calls (after warm calls
that make the plan, its layout and its rings), the median round (the
GPU page's "Calls whose outputs are kept").

    python benchmarks/webgpu_kept_outputs.py [ROUNDS]   (5)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
import dmlops.webgpu as wg
from dmlops.backends import webgpu as backend
from dmlops.backends.webgpu.layouts import RING


def cases() -> dict[str, Callable[[], Any]]:
    seed = wg.asarray(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    big = wg.asarray(np.random.default_rng(0).standard_normal((64, 64, 64)).astype(np.float32))
    parts = [wg.asarray(np.full((16, 64), k, np.float32)) for k in range(8)]
    rng = np.random.default_rng(1)
    table = wg.asarray(rng.standard_normal((1000, 64)).astype(np.float32))
    rows = wg.asarray(rng.integers(0, 1000, 32).astype(np.int64))
    cols = wg.asarray(rng.integers(0, 64, (1000, 8)).astype(np.int64))
    return {
        "slice1, the seeds' 4x4": lambda: dmlops.slice1(
            seed, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]
        ),
        "slice1 of [64, 64, 64], steps 1, -1, 2": lambda: dmlops.slice1(
            big, [0, 0, 0], [64, 64, 64], [1, -1, 2]
        ),
        "join of 8 x [16, 64]": lambda: dmlops.join(parts, 0),
        "padding of [64, 64, 64] by 1": lambda: dmlops.padding(big, [1, 1, 1], [1, 1, 1]),
        "gather 32 rows of [1000, 64]": lambda: dmlops.gather(table, rows, 0),
        "gather_elements [1000, 64] by [1000, 8]": lambda: dmlops.gather_elements(table, cols, 1),
    }


def per_call(call: Callable[[], Any], keep: bool, n: int = 500) -> float:
    kept: list[Any] = []
    wg.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        result = call()
        if keep:
            kept.append(result)
    wg.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def main(rounds: int) -> None:
    print(f"adapter: {wg.adapter()}")
    print("| call | dropped | kept, layouts | kept, no layouts |")
    print("| --- | ---: | ---: | ---: |")
    for name, call in cases().items():
        times: dict[str, list[float]] = {"dropped": [], "layouts": [], "none": []}
        for _ in range(rounds):
            for label, keep, layouts in (
                ("dropped", False, True),
                ("layouts", True, True),
                ("none", True, False),
            ):
                backend.LAYOUTS = layouts
                dmlops.functional.clear_cache()
                # (warm: the plan compiled, its layout and every slot of its rings made)
                per_call(call, keep, 2 * RING + 20)
                times[label].append(per_call(call, keep))
        backend.LAYOUTS = True
        row = [statistics.median(times[k]) for k in ("dropped", "layouts", "none")]
        print(f"| {name} | " + " | ".join(f"{t:.1f}" for t in row) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
