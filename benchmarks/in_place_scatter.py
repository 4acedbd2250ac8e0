"""In-place SCATTER_ND of whole rows on numpy arrays (a KV-cache write), dmlops against
numpy's fancy assignment of the same rows in the same run: best of 5 runs of `--calls`
calls, µs. The argument tags the lines; run it on two trees, alternated.

    python benchmarks/in_place_scatter.py TAG [--calls N]
"""

import sys
import timeit

import numpy as np

import dmlops

args = sys.argv[2:]
CALLS = int(args[args.index("--calls") + 1]) if "--calls" in args else 200
rng = np.random.default_rng(0)

cache = np.zeros((4096, 64), np.float32)
rows = rng.permutation(4096)[:32]
column = rows[:, None].copy()
updates = np.ones((32, 64), np.float32)

slots = (1 << 27) // (8 * 128 * 2)  # a 128 MiB float16 cache of [8, 128] slots
kv = np.zeros((slots, 8, 128), np.float16)
where = rng.permutation(slots)[:4096]
kv_column = where[:, None].copy()
kv_new = np.ones((4096, 8, 128), np.float16)

table = np.zeros((1 << 16, 256), np.float32)
picks = rng.permutation(1 << 16)[:8192]
pick_column = picks[:, None].copy()
picked = np.ones((8192, 256), np.float32)

cases = {
    "32 rows of 256 B": (
        lambda: dmlops.scatter_nd(cache, column, updates, out=cache),
        lambda: cache.__setitem__(rows, updates),
    ),
    "4,096 KV slots, 8 MiB": (
        lambda: dmlops.scatter_nd(kv, kv_column, kv_new, out=kv),
        lambda: kv.__setitem__(where, kv_new),
    ),
    "8,192 rows of 1 KiB, 8 MiB": (
        lambda: dmlops.scatter_nd(table, pick_column, picked, out=table),
        lambda: table.__setitem__(picks, picked),
    ),
}


def per(fn):
    fn()
    return min(timeit.repeat(fn, number=CALLS, repeat=5)) / CALLS * 1e6


for name, (ours, theirs) in cases.items():
    print(f"{sys.argv[1]:8s} {name:28s} dmlops {per(ours):9.1f}  numpy {per(theirs):9.1f}")
