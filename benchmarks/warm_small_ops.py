"""Warm small numpy calls of six operators, µs a call (best of 5 runs of 20,000); the
argument tags the line. Run it on two trees, alternated, idle, beside busy processes and
under taskset (the CPU guide's small calls).

    python benchmarks/warm_small_ops.py TAG
"""

import sys
import time

import numpy as np

import dmlops

x = np.random.rand(64, 64).astype(np.float32)
x4 = np.random.rand(1, 16, 16, 16).astype(np.float32)
cases = {
    "padding": lambda: dmlops.padding(x, [1, 1], [1, 1]),
    "tile": lambda: dmlops.tile(x, [2, 1]),
    "depth_to_space": lambda: dmlops.depth_to_space(x4, 2),
    "space_to_depth": lambda: dmlops.space_to_depth(x4, 2),
    "slice1": lambda: dmlops.slice1(x, [0, 0], [64, 64], [1, -1]),
    "cast": lambda: dmlops.cast(x, np.float16),
}


def per(fn, n=20000):
    for _ in range(100):
        fn()
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


print(sys.argv[1], "  ".join(f"{k} {per(f):.2f}" for k, f in cases.items()))
