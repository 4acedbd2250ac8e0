"""One thread calling dmlops back to back beside another running pure Python (a busy
thread of the same program): both threads' rates, with the engine's GIL rules at their
defaults, without the longer hold once the GIL is found busy (`gil_busy_hold` 1), with every
job letting the GIL go (limit 0, no hold), and numpy's view copy in dmlops' place.

CPython gives a thread that lets the GIL go it back only when the other lets it go, or
after the switch interval (5 ms) where the other never does: a call that releases it for a
copy of microseconds then waits milliseconds. Prints a Markdown table. Usage:

    python benchmarks/gil_beside_python.py [KiB ...]   (default: 64 256 1024)
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine


def rates(call: Callable[[], Any], seconds: float, beside: bool) -> tuple[float, float]:
    """(calls a second of `call` on this thread, iterations a second of a pure-Python loop
    on another, 0 where `beside` is false) over `seconds`."""
    stop = threading.Event()
    counted = [0]

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1
        counted[0] = n

    other = threading.Thread(target=spin, daemon=True)
    if beside:
        other.start()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < seconds:
        call()
        calls += 1
    took = time.perf_counter() - start
    stop.set()
    if beside:
        other.join()
    return calls / took, counted[0] / took


def main() -> None:
    sizes = [int(v) for v in sys.argv[1:]] or [64, 256, 1024]
    default = cpu_engine.DEFAULTS["gil_held_bytes_a_thread"]
    hold = cpu_engine.DEFAULTS["gil_busy_hold"]
    print(
        f"engine threads {dmlops.get_num_threads()}; default GIL limit {default} bytes a "
        f"thread, {hold} x that while the GIL is found busy"
    )
    print("| reversed rows | contender | calls/s alone | calls/s beside | Python thread, M it/s |")
    print("| --- | --- | ---: | ---: | ---: |")
    try:
        for kib in sizes:
            x = np.random.default_rng(0).standard_normal((kib * 2, 128), dtype=np.float32)
            ours = lambda x=x: dmlops.slice1(x, [0, 0], list(x.shape), [1, -1])  # noqa: E731
            contenders: list[tuple[str, int, int, Callable[[], Any]]] = [
                ("dmlops", default, hold, ours),
                ("dmlops, no longer hold when busy", default, 1, ours),
                ("dmlops, GIL always released", 0, 1, ours),
                ("numpy", default, hold, lambda x=x: np.ascontiguousarray(x[:, ::-1])),
            ]
            for name, limit, busy_hold, call in contenders:
                cpu_engine.configure(gil_held_bytes_a_thread=limit, gil_busy_hold=busy_hold)
                call()
                alone, _ = rates(call, 0.5, beside=False)
                beside, spins = rates(call, 1.0, beside=True)
                print(
                    f"| {kib} KiB | {name} | {alone:,.0f} | {beside:,.0f} | {spins / 1e6:.2f} |",
                    flush=True,
                )
    finally:
        cpu_engine.configure(gil_held_bytes_a_thread=default, gil_busy_hold=hold)
    _, spins = rates(lambda: time.sleep(0.01), 1.0, beside=True)
    print(f"\nthe Python thread beside a sleeping one: {spins / 1e6:.2f} M iterations/s")


if __name__ == "__main__":
    main()
