"""Small warm numpy calls whose output the producer makes (a reversed 8x8 slice, every
second row of 4 and 64 KiB): median and p99 of 2,000 single calls, µs, numpy beside;
the argument tags the rows. Run it idle, beside busy processes and under taskset (the
CPU guide's small calls).

    python benchmarks/small_producer_load.py TAG
"""

import statistics
import sys
import time

import numpy as np

import dmlops

x = np.arange(64, dtype=np.float32).reshape(8, 8)
r4 = np.random.rand(16, 64).astype(np.float32)
r64 = np.random.rand(256, 64).astype(np.float32)
cases = {
    "slice1 8x8 reversed": (
        lambda: dmlops.slice1(x, [0, 0], [8, 8], [1, -1]),
        lambda: x[:, ::-1].copy(),
    ),
    "every 2nd row 4 KiB": (
        lambda: dmlops.slice1(r4, [0, 0], [16, 64], [2, 1]),
        lambda: r4[::2].copy(),
    ),
    "every 2nd row 64 KiB": (
        lambda: dmlops.slice1(r64, [0, 0], [256, 64], [2, 1]),
        lambda: r64[::2].copy(),
    ),
}
for name, (ours, theirs) in cases.items():
    row = []
    for f in (ours, theirs):
        for _ in range(200):
            f()
        ts = []
        for _ in range(2000):
            s = time.perf_counter()
            f()
            ts.append(time.perf_counter() - s)
        ts.sort()
        row.append(f"{statistics.median(ts) * 1e6:6.2f} / {ts[int(0.99 * len(ts))] * 1e6:6.2f}")
    print(f"{sys.argv[1]:6s} {name:22s} dmlops {row[0]}   numpy {row[1]}")
