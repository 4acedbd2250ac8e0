"""Warm small numpy calls, µs a call (best of 5 runs of 20,000, or `--calls`), dmlops and
numpy's same work in the same run (`--numpy`): new outputs (16 KiB) and given ones
(`out=`); the argument tags the lines. Run it on two trees, alternated, idle, beside busy
processes and under taskset (the CPU guide's small calls).

    python benchmarks/warm_small_ops.py TAG [--numpy] [--calls N]
"""

import sys
import time

import numpy as np

import dmlops

x = np.random.rand(64, 64).astype(np.float32)
x4 = np.random.rand(1, 16, 16, 16).astype(np.float32)
parts = [x[:16], x[16:]]
rows = np.array([5, 0, 63, 17], np.int64)
padded = np.empty((66, 66), np.float32)
tiled = np.empty((128, 64), np.float32)
reversed_out = np.empty_like(x)
joined = np.empty_like(x)


def shuffle(a):  # DEPTH_TO_SPACE's DCR order, as numpy's views
    n, c, h, w = a.shape
    return a.reshape(n, 2, 2, c // 4, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, -1, h * 2, w * 2)


def unshuffle(a):
    n, c, h, w = a.shape
    blocks = a.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4)
    return blocks.reshape(n, -1, h // 2, w // 2)


cases = {
    "padding": (lambda: dmlops.padding(x, [1, 1], [1, 1]), lambda: np.pad(x, 1)),
    "tile": (lambda: dmlops.tile(x, [2, 1]), lambda: np.tile(x, (2, 1))),
    "depth_to_space": (lambda: dmlops.depth_to_space(x4, 2), lambda: shuffle(x4)),
    "space_to_depth": (lambda: dmlops.space_to_depth(x4, 2), lambda: unshuffle(x4)),
    "slice1": (
        lambda: dmlops.slice1(x, [0, 0], [64, 64], [1, -1]),
        lambda: np.ascontiguousarray(x[:, ::-1]),
    ),
    "cast": (lambda: dmlops.cast(x, np.float16), lambda: x.astype(np.float16)),
    "join": (lambda: dmlops.join(parts, 0), lambda: np.concatenate(parts, 0)),
    "gather": (lambda: dmlops.gather(x, rows, 0), lambda: np.take(x, rows, 0)),
    "padding out=": (
        lambda: dmlops.padding(x, [1, 1], [1, 1], out=padded),
        lambda: np.copyto(padded[1:-1, 1:-1], x),  # (numpy's interior only)
    ),
    "tile out=": (
        lambda: dmlops.tile(x, [2, 1], out=tiled),
        lambda: np.copyto(tiled.reshape(2, 64, 64), x),
    ),
    "slice1 out=": (
        lambda: dmlops.slice1(x, [0, 0], [64, 64], [1, -1], out=reversed_out),
        lambda: np.copyto(reversed_out, x[:, ::-1]),
    ),
    "join out=": (
        lambda: dmlops.join(parts, 0, out=joined),
        lambda: np.concatenate(parts, 0, out=joined),
    ),
}


args = sys.argv[2:]
CALLS = int(args[args.index("--calls") + 1]) if "--calls" in args else 20000


def per(fn, n=CALLS):
    for _ in range(100):
        fn()
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


with_numpy = "--numpy" in args
fields = []
for name, (ours, theirs) in cases.items():
    fields.append(f"{name} {per(ours):.2f}" + (f" (numpy {per(theirs):.2f})" if with_numpy else ""))
print(sys.argv[1], "  ".join(fields), flush=True)
