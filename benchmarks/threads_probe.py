"""How a host's memory copies scale with Python threads: one np.copyto against the same
copy cut into 2-16 bands on a thread pool (np.copyto and ctypes.memmove both release the
GIL), for 8, 64 and 256 MiB.

    python benchmarks/threads_probe.py
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def per_call(fn: Callable[[], object], reps: int = 20) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps * 1e6


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    print(f"cores {cores}, numpy {np.__version__}")
    pool = ThreadPoolExecutor(cores)
    for mib in (8, 64, 256):
        n = mib * 2**20 // 4
        a, b = np.zeros(n, np.float32), np.ones(n, np.float32)
        moved = 2 * mib * 2**20 / 1e3  # bytes read and written, per µs -> GB/s

        def copy_band(r: tuple[int, int], a: np.ndarray = a, b: np.ndarray = b) -> None:
            np.copyto(a[r[0] : r[1]], b[r[0] : r[1]])

        def move_band(r: tuple[int, int], a: np.ndarray = a, b: np.ndarray = b) -> None:
            ctypes.memmove(a.ctypes.data + 4 * r[0], b.ctypes.data + 4 * r[0], 4 * (r[1] - r[0]))

        one = per_call(lambda a=a, b=b: np.copyto(a, b))
        for k in (2, 4, 8, 16):
            bands = [(i * n // k, (i + 1) * n // k) for i in range(k)]
            cp = per_call(lambda bands=bands: list(pool.map(copy_band, bands)))
            mm = per_call(lambda bands=bands: list(pool.map(move_band, bands)))
            print(
                f"{mib} MiB: 1 thread {one:.0f} µs ({moved / one:.1f} GB/s); {k} threads "
                f"copyto {cp:.0f} µs ({moved / cp:.1f} GB/s), memmove {mm:.0f} µs"
            )


if __name__ == "__main__":
    main()
