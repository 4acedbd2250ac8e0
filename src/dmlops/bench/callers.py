"""Benchmark section "callers": many Python threads calling at once (a threaded server's
handlers, a thread pool's tasks), each the same operator on its own arrays' outputs, numpy's
view copies in the same process. The sizes section's operators at about 64 KiB, 1 MiB and
16 MiB of output; 1, 4, the CPU set's count and twice that many threads. A case's time is a
round's: every thread one call (the wall time of `calls` calls a thread, divided by
`calls`), the median of five; its GB/s counts every thread's bytes. Where each call is
short, the threads take turns at the GIL: a call that holds it longer than numpy's (its
validation and dispatch in Python) or lets it go for a shorter copy pays that here.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from .common import Result
from .contention import _cpu_set_size
from .sizes import _label, _operators

__all__ = ["SIZES", "callers", "calls_a_thread", "round_time", "run"]

SECTION = "callers"
SIZES = (64 << 10, 1 << 20, 16 << 20)  # output bytes asked for (float32)
_ROUNDS = 5
_ROUND_BYTES = 64 << 20  # output bytes a thread writes in one timing, about


def callers(cpus: int | None = None) -> tuple[int, ...]:
    """The thread counts measured: 1, 4, the CPU set's count and twice it."""
    n = _cpu_set_size() if cpus is None else cpus
    return tuple(sorted({1, 4, n, 2 * n}))


def calls_a_thread(out_bytes: int, most: int = 200) -> int:
    """Calls a thread makes in one timing: `most`, fewer where its outputs would pass
    64 MiB, at least 3."""
    return max(3, min(most, _ROUND_BYTES // max(1, out_bytes)))


def round_time(fn: Callable[[], Any], threads: int, calls: int) -> float:
    """Seconds a round (each of `threads` threads calling `fn` once), over `calls` rounds
    made at once by all the threads, after each made one call."""
    ready = threading.Barrier(threads + 1)
    failed: list[BaseException] = []

    def work() -> None:
        try:
            fn()
            ready.wait()
            for _ in range(calls):
                fn()
        except Exception as e:  # noqa: BLE001 - raised again in the measuring thread
            failed.append(e)
            ready.abort()

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # (a call failed: raised below)
        ready.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    took = time.perf_counter() - start
    if failed:
        raise failed[0]
    return took / calls


def run(
    calls: int = 200, sizes: tuple[int, ...] = SIZES, counts: tuple[int, ...] | None = None
) -> list[Result]:
    """Each operator at each size and thread count: the median round of each contender.
    `calls` bounds the calls a thread makes in a timing (fewer where its outputs would pass
    64 MiB)."""
    results = []
    for nbytes in sizes:
        for case, out_bytes, contenders in _operators(nbytes):
            per_thread = calls_a_thread(out_bytes, calls)
            for threads in callers() if counts is None else counts:
                res = Result(
                    SECTION,
                    f"{case}, {_label(out_bytes)}, {threads} thread{'s' if threads > 1 else ''}",
                    "cpu",
                    threads * out_bytes,
                    "numpy",
                )
                rounds: dict[str, list[float]] = {name: [] for name in contenders}
                for _ in range(_ROUNDS):  # (the contenders in turn: a drift meets both)
                    for name, fn in contenders.items():
                        rounds[name].append(round_time(fn, threads, per_thread))
                res.times = {name: statistics.median(t) for name, t in rounds.items()}
                results.append(res)
    return results
