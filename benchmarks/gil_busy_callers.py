"""Many Python threads calling dmlops at once, with the engine's longer GIL hold once the GIL
is found busy (`gil_busy_hold` 8, the default) and without it (1), in alternating rounds,
numpy's view copy beside: total calls a second (median of three rounds) and how often a
round ended with the GIL marked busy. Threads that call the engine take turns at the GIL;
that wait must not read as a busy Python thread's (their released jobs run side by side).

    python benchmarks/gil_busy_callers.py [KiB ...]   (default: 1024 4096 16384)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine


def rate(call: Callable[[], Any], threads: int, seconds: float = 0.6) -> float:
    """Calls a second of `call` made by `threads` Python threads at once, all together."""
    stop = threading.Event()
    counts = [0] * threads

    def work(k: int) -> None:
        n = 0
        while not stop.is_set():
            call()
            n += 1
        counts[k] = n

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - start)


def main() -> None:
    module = cpu_engine.native()
    if module is None:
        raise SystemExit("the CPU engine is not built")
    hold = cpu_engine.DEFAULTS["gil_busy_hold"]
    print(f"engine threads {dmlops.get_num_threads()}")
    print("| reversed rows | Python threads | hold | no hold | numpy | hold / no hold | busy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for kib in [int(v) for v in sys.argv[1:]] or [1024, 4096, 16384]:
            x = np.random.default_rng(0).standard_normal((kib * 2, 128), dtype=np.float32)
            ours = lambda x=x: dmlops.slice1(x, [0, 0], list(x.shape), [1, -1])  # noqa: E731
            theirs = lambda x=x: np.ascontiguousarray(x[:, ::-1])  # noqa: E731
            for threads in (2, 4, 4 * (os.cpu_count() or 1)):
                found: dict[Any, list[float]] = {hold: [], 1: [], "numpy": []}
                busy = 0
                for _ in range(3):
                    for h in (hold, 1):
                        cpu_engine.configure(gil_busy_hold=h)
                        ours()
                        found[h].append(rate(ours, threads))
                        busy += bool(module.gil_busy())
                    found["numpy"].append(rate(theirs, threads))
                med = {k: sorted(v)[1] for k, v in found.items()}
                print(
                    f"| {kib} KiB | {threads} | {med[hold]:,.0f} | {med[1]:,.0f} | "
                    f"{med['numpy']:,.0f} | {med[hold] / med[1]:.2f} | {busy} of 6 |",
                    flush=True,
                )
    finally:
        cpu_engine.configure(gil_busy_hold=hold)


if __name__ == "__main__":
    main()
