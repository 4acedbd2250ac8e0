"""A JOIN of many small numpy arrays on the CPU (the parts of a batch, a list of chunks):
dmlops against numpy's concatenate of the same arrays in the same run, into a new array and
into a given one; median and 99th percentile of `--calls` single calls, µs. The argument
tags the lines; run it on two trees, alternated, idle and beside busy processes.

    python benchmarks/many_arrays.py TAG [--calls N]
"""

import sys
import time

import numpy as np

import dmlops

args = sys.argv[2:]
CALLS = int(args[args.index("--calls") + 1]) if "--calls" in args else 1000
TAG = sys.argv[1] if len(sys.argv) > 1 else ""


def times(fn: object, calls: int) -> tuple[float, float]:
    """(median, 99th percentile) of `calls` single calls after a warm-up, µs."""
    for _ in range(20):
        fn()  # type: ignore[operator]
    taken = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        taken.append(time.perf_counter() - t0)
    taken.sort()
    return taken[len(taken) // 2] * 1e6, taken[int(0.99 * len(taken)) - 1] * 1e6


print(f"{'':8s} {'case (µs: median / p99)':34s} {'dmlops':>16s} {'numpy':>16s}")
for count in (8, 64, 1024):
    parts = [np.full((16, 64), k, np.float32) for k in range(count)]  # 4 KiB each
    out = np.empty((16 * count, 64), np.float32)
    cases = {
        f"{count} x 4 KiB, new array": (
            lambda p=parts: dmlops.join(p, 0),
            lambda p=parts: np.concatenate(p, 0),
        ),
        f"{count} x 4 KiB, into out=": (
            lambda p=parts, o=out: dmlops.join(p, 0, out=o),
            lambda p=parts, o=out: np.concatenate(p, 0, out=o),
        ),
    }
    calls = max(100, CALLS // max(1, count // 64))
    for name, (ours, theirs) in cases.items():
        assert np.array_equal(np.asarray(ours()), theirs())
        (m1, p1), (m2, p2) = times(ours, calls), times(theirs, calls)
        print(f"{TAG:8s} {name:34s} {m1:7.1f} / {p1:6.1f} {m2:7.1f} / {p2:6.1f}", flush=True)
