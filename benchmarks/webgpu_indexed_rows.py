"""Indexed copies of short whole-word rows on WebGPU: gathers and in-place scatters of
4,096 rows of 4 to 2,048 words (float32, and one float16 row of 64 words: an embedding
lookup and a KV-cache write at small widths), host time per call to completion (bound
dispatches, median of batches).

    python benchmarks/webgpu_indexed_rows.py [ROWS [REPS]]   (4096 and 10)
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np

import dmlops
import dmlops.webgpu as wg
from dmlops.bench.webgpu import _batched

CASES = [(np.float32, w) for w in (4, 16, 64, 200, 1024, 2048)] + [(np.float16, 128)]


def main() -> None:
    args = sys.argv[1:]
    rows = int(args[0]) if args else 4096
    reps = int(args[1]) if len(args) > 1 else 10
    rng = np.random.default_rng(0)
    print(f"adapter: {wg.adapter()}")
    print("| row | gather µs | scatter_nd(out=) µs |\n| --- | ---: | ---: |")
    for dtype, width in CASES:
        table = wg.asarray(rng.standard_normal((2 * rows, width)).astype(dtype))
        ids = wg.asarray(rng.integers(0, 2 * rows, rows).astype(np.int64))
        slots = wg.asarray(rng.permutation(2 * rows)[:rows, None].astype(np.int64))
        new = wg.asarray(rng.standard_normal((rows, width)).astype(dtype))

        gather = partial(dmlops.gather, table, ids, 0)
        scatter = partial(dmlops.scatter_nd, table, slots, new, out=table)
        t_g = _batched(gather, reps, wg.synchronize, 5)
        t_s = _batched(scatter, reps, wg.synchronize, 5)
        name = f"{width} {np.dtype(dtype).name}"
        print(f"| {name} | {t_g * 1e6:.1f} | {t_s * 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
