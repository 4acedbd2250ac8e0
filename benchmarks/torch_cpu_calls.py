"""Warm calls on small CPU torch tensors: dmlops on the tensors, dmlops on their numpy views,
and torch's own op for the same result; median and p99 of 2,000 single calls, µs. The
argument tags the rows. Run it idle, beside busy processes and under taskset (the CPU
guide's *torch CPU tensors*).

    python benchmarks/torch_cpu_calls.py TAG
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import dmlops
from dmlops.bench.contention import percentiles

x = torch.randn(64, 64)
rows = torch.tensor([3, 1, 5])
picks = torch.randint(0, 64, (64, 8))
xn, rows_n, picks_n = x.numpy(), rows.numpy(), picks.numpy()

# (dmlops' call on (x, rows, picks), torch's own)
CASES: dict[str, tuple[Callable[[Any, Any, Any], Any], Callable[[], Any]]] = {
    "slice1 reversed rows": (
        lambda a, r, p: dmlops.slice1(a, [0, 0], [64, 64], [1, -1]),
        lambda: torch.flip(x, [1]),
    ),
    "join of two": (lambda a, r, p: dmlops.join([a, a], 0), lambda: torch.cat([x, x], 0)),
    "tile 2 x 1": (lambda a, r, p: dmlops.tile(a, [2, 1]), lambda: x.repeat(2, 1)),
    "padding 1 each side": (
        lambda a, r, p: dmlops.padding(a, [1, 1], [1, 1]),
        lambda: torch.nn.functional.pad(x, (1, 1, 1, 1)),
    ),
    "gather 3 rows": (lambda a, r, p: dmlops.gather(a, r, 0), lambda: x.index_select(0, rows)),
    "gather_elements": (
        lambda a, r, p: dmlops.gather_elements(a, p, 1),
        lambda: torch.gather(x, 1, picks),
    ),
    "cast to float16": (lambda a, r, p: dmlops.cast(a, np.float16), lambda: x.half()),
}


def timed(f: Callable[[], Any], n: int = 2000) -> tuple[float, float]:
    """(median, 99th percentile) of n single calls after warm-up calls, µs."""
    median, p99 = percentiles(f, n)
    return median * 1e6, p99 * 1e6


def main() -> None:
    tag = sys.argv[1] if len(sys.argv) > 1 else "idle"
    print(f"{'':6s} {'call (µs: median / p99)':22s} {'tensors':>15s} {'numpy':>15s} {'torch':>15s}")
    for name, (ours, theirs) in CASES.items():
        found = [
            timed(lambda f=ours: f(x, rows, picks)),
            timed(lambda f=ours: f(xn, rows_n, picks_n)),
            timed(theirs),
        ]
        cells = " ".join(f"{m:7.2f} / {p:5.1f}" for m, p in found)
        print(f"{tag:6s} {name:22s} {cells}")


if __name__ == "__main__":
    main()
