"""Where a `device="webgpu"` call with numpy in and out spends its time: the seeds' 4x4
SLICE1 whole, then its upload, its dispatch on WebGPU arrays (to completion) and its
read-back alone (medians of single calls; every row in turn, ROUNDS times, the median of
the rounds reported).

    python benchmarks/webgpu_call.py [ROUNDS]   (3)
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable

import numpy as np

import dmlops
import dmlops.webgpu as wg
from dmlops.backends import get_backend
from dmlops.bench.common import median_cpu

WINDOW = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])


def median_us(fn: Callable[[], object], n: int = 300) -> float:
    """Median µs of `fn` after 30 warm-up calls (the bench's own median)."""
    for _ in range(30):
        fn()
    return median_cpu(fn, n) * 1e6


def main() -> None:
    backend = get_backend("webgpu")
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    on_device = wg.asarray(x)

    def dispatch() -> None:
        dmlops.slice1(on_device, *WINDOW)
        backend.synchronize()

    rows = {
        "functional, numpy in and out": lambda: dmlops.slice1(x, *WINDOW, device="webgpu"),
        "  upload": lambda: backend.upload(x),
        "  dispatch (WebGPU arrays, to completion)": dispatch,
        "  read-back": lambda: backend.download(on_device),
    }
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(rounds):  # every row in turn, each round (the host's speed drifts)
        for name, fn in rows.items():
            times[name].append(median_us(fn))
    print(f"adapter: {backend.description}")
    print(f"| step | median µs (median of {rounds} rounds) | rounds |\n|---|---:|---|")
    for name, found in times.items():
        spread = " / ".join(f"{t:.1f}" for t in found)
        print(f"| {name} | {statistics.median(found):.1f} | {spread} |", flush=True)


if __name__ == "__main__":
    main()
