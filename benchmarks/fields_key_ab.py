"""The call cache's fields key made by the CPU engine's C walk against pickle, in
alternating rounds on small functional calls (µs a call, the median of five rounds' best of
three timings of 20,000 calls).

    python benchmarks/fields_key_ab.py
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.calls import signatures


def main() -> None:
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    y = np.arange(16384 * 4, dtype=np.float32).reshape(4, 16384)
    cases: dict[str, Callable[[], Any]] = {
        "slice1, 256 B": lambda: dmlops.slice1(x, [0, 0], [4, 8], [1, 2]),
        "join of two, 512 B": lambda: dmlops.join([x, x], 0),
        "slice1 reversed, 256 KiB": lambda: dmlops.slice1(y, [0, 0], [4, 16384], [-1, 1]),
        "padding, 256 B": lambda: dmlops.padding(x, [1, 1], [1, 1]),
    }
    native = signatures._keyer()
    found: dict[str, dict[str, list[float]]] = {k: {"C": [], "pickle": []} for k in cases}
    try:
        for _ in range(5):
            for mode in ("C", "pickle"):
                signatures._KEYER[0] = native if mode == "C" else signatures._no_key
                for name, call in cases.items():
                    call()
                    best = min(timeit.repeat(call, number=20000, repeat=3)) / 20000 * 1e6
                    found[name][mode].append(best)
    finally:
        signatures._KEYER[0] = None
    print("| call | C key | pickle | saved |")
    print("| --- | ---: | ---: | ---: |")
    for name, times in found.items():
        c, p = sorted(times["C"])[2], sorted(times["pickle"])[2]
        print(f"| {name} | {c:.2f} | {p:.2f} | {p - c:.2f} |")


if __name__ == "__main__":
    main()
