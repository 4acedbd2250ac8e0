"""SCATTER_ND of 20,000 rows into a 50,000 x 64 table (1- to 8-byte elements): the copy of
its data kept in the cache for the rows (the engine's KEEP_CACHED flag, set where half the
last-level cache holds the output) against streamed past it, numpy beside; medians of five
rounds of 9 calls, interleaved in one process, ms.

    python benchmarks/scatter_cache.py        (DMLOPS_NUM_THREADS=1 for one thread)
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.bench.common import median_cpu


def main() -> None:
    cache = cpu_engine._cache_bytes()
    rng = np.random.default_rng(0)
    print(f"threads {dmlops.get_num_threads()}, last-level cache {cache >> 20} MiB")
    print("| element | kept in cache | streamed | numpy |\n| --- | ---: | ---: | ---: |")
    for dt in ("uint8", "float16", "float32", "int64"):
        table = rng.integers(0, 100, (50000, 64)).astype(dt)
        updates = rng.integers(0, 100, (20000, 64)).astype(dt)
        places = rng.permutation(50000)[:20000].astype(np.int32)[:, None]

        def ours(table: Any = table, places: Any = places, updates: Any = updates) -> Any:
            return dmlops.scatter_nd(table, places, updates)

        def theirs(table: Any = table, places: Any = places, updates: Any = updates) -> Any:
            out = table.copy()
            out[places[:, 0]] = updates
            return out

        found: dict[str, list[float]] = {"keep": [], "stream": [], "numpy": []}
        for _ in range(5):
            for variant, size in (("stream", 0), ("keep", cache)):
                cpu_engine._cache_bytes = lambda size=size: size  # type: ignore[misc]
                dmlops.functional.clear_cache()  # (the plan made again, with or without)
                found[variant].append(median_cpu(ours, 9) * 1e3)  # (its first call warms)
            found["numpy"].append(median_cpu(theirs, 9) * 1e3)
        row = " | ".join(f"{statistics.median(found[k]):.3f}" for k in ("keep", "stream", "numpy"))
        print(f"| {dt} | {row} |")


if __name__ == "__main__":
    main()
