"""The callers section: every operator at each size and thread count, rounds of calls
made by many Python threads at once against numpy's, and its plot."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from dmlops.bench import callers


def test_the_thread_counts_are_one_four_the_cpus_and_twice_them() -> None:
    assert callers.callers(2) == (1, 2, 4)
    assert callers.callers(16) == (1, 4, 16, 32)


def test_a_round_is_every_thread_calling_once() -> None:
    made: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        with lock:
            made.append(threading.get_ident())

    took = callers.round_time(call, threads=3, calls=5)
    assert took > 0
    assert len(made) == 3 * (5 + 1)  # (one call each before the timing)
    assert len(set(made)) == 3


def test_a_failing_call_is_raised_in_the_measuring_thread() -> None:
    def call() -> None:
        raise RuntimeError("bad call")

    with pytest.raises(RuntimeError, match="bad call"):
        callers.round_time(call, threads=2, calls=3)


def test_a_small_run_times_each_operator_against_numpy(tmp_path: Path) -> None:
    results = callers.run(calls=2, sizes=(64 << 10,), counts=(1, 2))
    assert len(results) == 6 * 2
    for r in results:
        assert r.section == "callers" and r.reference == "numpy"
        assert set(r.times) == {"dmlops", "numpy"} and min(r.times.values()) > 0
        assert r.case.endswith(("1 thread", "2 threads"))
    one = next(r for r in results if r.case.endswith("1 thread"))
    two = next(r for r in results if r.case == one.case.replace("1 thread", "2 threads"))
    assert two.output_bytes == 2 * one.output_bytes  # (a round's bytes: every thread's)
    pytest.importorskip("matplotlib")
    from dmlops.bench.plot import plot

    plot(results, str(tmp_path / "run.png"))
    drawn = tmp_path / "run_callers.png"
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
