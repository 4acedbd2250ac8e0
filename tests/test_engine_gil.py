"""The engine keeps the GIL through a job moving fewer bytes than `gil_held_bytes_a_thread`
for each thread it may run on (one where another thread's job holds the pool) and lets it
go for a longer one; for a while after a released job waited long for it back (a busy
Python thread), jobs of `gil_busy_hold` times that keep it too; either way the bytes written
are the same."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import dmlops
from dmlops.backends import cpu_engine

pytestmark = pytest.mark.skipif(
    not cpu_engine.available(), reason="the engine is not built, or DMLOPS_CPU_ENGINE=numpy"
)


@pytest.fixture
def held_below() -> Iterator[Callable[[int], None]]:
    """Sets the engine's GIL limit a thread for the test; the default and the thread count
    back after it."""
    threads = dmlops.get_num_threads()
    cpu_engine.configure(gil_busy_hold=1)  # (the longer hold has tests of its own)
    yield lambda limit: cpu_engine.configure(gil_held_bytes_a_thread=limit)
    dmlops.set_num_threads(threads)
    defaults = cpu_engine.DEFAULTS
    cpu_engine.configure(
        **{k: defaults[k] for k in ("gil_held_bytes_a_thread", "gil_busy_hold")},
        gil_busy_wait_us=defaults["gil_busy_wait_us"],
        gil_busy_window_us=defaults["gil_busy_window_us"],
    )


@contextmanager
def _beside(step: Callable[[], Any], switch_interval: float) -> Iterator[None]:
    """Another Python thread running `step` over and over (started and running before the
    block; stopped after it), with CPython's switch interval at `switch_interval` meanwhile."""
    stop = threading.Event()
    ready = threading.Event()

    def loop() -> None:
        ready.set()
        while not stop.is_set():
            step()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(switch_interval)
    other = threading.Thread(target=loop, daemon=True)
    try:
        other.start()
        ready.wait()
        yield
    finally:
        stop.set()
        other.join()
        sys.setswitchinterval(interval)


def _stamps_during(call: Callable[[], Any]) -> int:
    """How many times another Python thread ran a line while `call` ran. The other thread
    gives the GIL back at every line (a sleep) and, with the switch interval at a minute,
    gets it back only where it is let go: never within the call's Python, so only while
    the job runs with it released."""
    stamps: list[float] = []

    def tick() -> None:
        stamps.append(time.perf_counter())
        time.sleep(0)

    with _beside(tick, 60.0):
        time.sleep(0.01)  # (the ticker now waits for the GIL at each line)
        start = time.perf_counter()
        call()
        end = time.perf_counter()
    return sum(start < s < end for s in stamps)


def _reverse_rows(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return dmlops.slice1(x, [0, 0], list(x.shape), [-1, 1])  # type: ignore[no-any-return]


_MIB = 1 << 20


def test_a_short_job_keeps_the_gil_and_a_long_one_lets_it_go(
    held_below: Callable[[int], None],
) -> None:
    x = np.arange(16 * _MIB, dtype=np.float32).reshape(4096, -1)  # 64 MiB
    _reverse_rows(x)  # (compiled and its output cached before the timing)
    held_below(1 << 40)
    assert _stamps_during(lambda: _reverse_rows(x)) == 0
    held_below(0)
    assert _stamps_during(lambda: _reverse_rows(x)) > 0
    assert np.array_equal(_reverse_rows(x), x[::-1])


def test_the_limit_counts_the_threads_a_job_may_run_on(
    held_below: Callable[[int], None],
) -> None:
    x = np.arange(16 * _MIB, dtype=np.float32).reshape(4096, -1)  # 64 MiB
    _reverse_rows(x)
    held_below(48 * _MIB)
    dmlops.set_num_threads(2)  # (two threads' share: 96 MiB, held)
    assert _stamps_during(lambda: _reverse_rows(x)) == 0
    dmlops.set_num_threads(1)  # (one thread's: 48 MiB, released)
    assert _stamps_during(lambda: _reverse_rows(x)) > 0
    assert np.array_equal(_reverse_rows(x), x[::-1])


def test_a_job_that_finds_the_pool_taken_has_one_threads_share(
    held_below: Callable[[int], None],
) -> None:
    module = cpu_engine.native()
    x = np.arange(16 * _MIB, dtype=np.float32).reshape(4096, -1)  # 64 MiB
    dmlops.set_num_threads(2)
    _reverse_rows(x)
    held_below(48 * _MIB)  # (on two threads: held; alone: released)
    assert not module.pool_taken()
    assert _stamps_during(lambda: _reverse_rows(x)) == 0
    # another thread's job (64 pieces of 3 ms on two threads) holds the pool meanwhile
    holder = threading.Thread(target=module.pool_probe, args=(64, 2, 3000), daemon=True)
    holder.start()
    while not module.pool_taken():
        time.sleep(0.001)
    stamps = _stamps_during(lambda: _reverse_rows(x))
    still_taken = module.pool_taken()
    holder.join()
    assert still_taken and stamps > 0
    assert not module.pool_taken()
    assert np.array_equal(_reverse_rows(x), x[::-1])


_NEVER = 10_000_000  # (µs: a wait for the GIL no check here makes)
_MINUTE = 60_000_000


def _released(call: Callable[[], Any], tries: int = 5) -> bool:
    """Whether another Python thread ran while `call` ran, in any of `tries` calls (on a
    loaded machine it may not be scheduled within one job)."""
    return any(_stamps_during(call) > 0 for _ in range(tries))


def _wait_beside_a_busy_thread(call: Callable[[], Any], calling: bool = False) -> None:
    """`call` once while another Python thread runs pure Python (it lets the GIL go only
    when the switch interval forces it to), calling the engine's short jobs too where
    `calling`."""
    small = np.zeros((8, 8), np.float32)

    def spin() -> None:
        if calling:
            dmlops.join([small, small[::-1]], 0)  # (an engine job that keeps the GIL)

    spin()  # (compiled before: a cold call is Python alone, no job begun, for a while)
    with _beside(spin, 0.005):
        call()


def _one_thread_64_mib(held_below: Callable[[int], None]) -> np.ndarray[Any, Any]:
    """A 64 MiB array whose reversed rows are compiled, jobs on one thread, the GIL limit
    at 16 MiB (its job released, but under 8 x that)."""
    x = np.arange(16 * _MIB, dtype=np.float32).reshape(4096, -1)
    dmlops.set_num_threads(1)
    _reverse_rows(x)
    held_below(16 * _MIB)
    return x


@pytest.mark.parametrize("hold", [8, 1])
def test_a_long_wait_for_the_gil_makes_longer_jobs_keep_it_for_a_while(
    held_below: Callable[[int], None], hold: int
) -> None:
    module = cpu_engine.native()
    x = _one_thread_64_mib(held_below)
    y = np.arange(48 * _MIB, dtype=np.float32).reshape(12288, -1)  # 192 MiB
    _reverse_rows(y)
    # (no wait marks the GIL busy but the one beside the busy thread: a loaded machine's
    # slow hand-back in the other checks must not)
    cpu_engine.configure(gil_busy_hold=hold, gil_busy_wait_us=_NEVER, gil_busy_window_us=_MINUTE)
    assert not module.gil_busy()
    assert _released(lambda: _reverse_rows(x))
    cpu_engine.configure(gil_busy_wait_us=1000)
    _wait_beside_a_busy_thread(lambda: _reverse_rows(x))  # (waits a switch interval)
    assert module.gil_busy()
    cpu_engine.configure(gil_busy_wait_us=_NEVER)
    if hold > 1:
        assert _stamps_during(lambda: _reverse_rows(x)) == 0
    else:
        assert _released(lambda: _reverse_rows(x))
    assert _released(lambda: _reverse_rows(y))  # (past 8 x: released still)
    assert np.array_equal(_reverse_rows(x), x[::-1])
    cpu_engine.configure(gil_busy_window_us=0)  # (the window over: released again)
    assert not module.gil_busy()
    assert _released(lambda: _reverse_rows(x))


def test_a_wait_shorter_than_the_mark_changes_nothing(
    held_below: Callable[[int], None],
) -> None:
    module = cpu_engine.native()
    x = _one_thread_64_mib(held_below)
    cpu_engine.configure(gil_busy_hold=8, gil_busy_wait_us=_NEVER, gil_busy_window_us=_MINUTE)
    _wait_beside_a_busy_thread(lambda: _reverse_rows(x))  # (a 5 ms wait, under 10 s)
    assert not module.gil_busy()
    assert _released(lambda: _reverse_rows(x))


def test_a_wait_while_other_jobs_began_is_the_engines_own_turns(
    held_below: Callable[[int], None],
) -> None:
    """Where the thread holding the GIL meanwhile began jobs of the engine, the wait was
    callers taking turns (whose released jobs run side by side): nothing is held longer."""
    module = cpu_engine.native()
    x = _one_thread_64_mib(held_below)

    def marked(calling: bool) -> bool:
        # (each wait from a fresh window; the wait's length is the scheduler's: a wait it
        # stretched, the other thread off its CPU, or one it cut short can miss either way)
        cpu_engine.configure(gil_busy_hold=8, gil_busy_wait_us=1000, gil_busy_window_us=0)
        cpu_engine.configure(gil_busy_window_us=_MINUTE)
        begun = module.jobs_begun()
        _wait_beside_a_busy_thread(lambda: _reverse_rows(x), calling=calling)
        if calling:
            assert module.jobs_begun() > begun + 1  # (the other thread's jobs, and this one's)
        return bool(module.gil_busy())

    assert not all(marked(calling=True) for _ in range(3))
    assert any(marked(calling=False) for _ in range(3))  # (the same wait, no job begun)
    cpu_engine.configure(gil_busy_window_us=0)


def _cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """(name, a call that runs one of the engine's native jobs, numpy's answer) each."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 96), dtype=np.float32)
    x[3, 5] = np.float32(np.nan)
    x[7, 1] = np.float32(-0.0)
    zeros = np.where(rng.random((2, 3, 16, 24)) < 0.7, 0.0, 1.5).astype(np.float32)
    rows = rng.integers(0, 64, 40)
    targets = np.array([[5], [0], [63], [5]])
    updates = rng.standard_normal((4, 96), dtype=np.float32)
    expected_scatter = x.copy()
    expected_scatter[[5, 0, 63]] = updates[[3, 1, 2]]
    found = np.argwhere(zeros)
    finite = np.nan_to_num(x)  # (CAST's NaNs are its own: tests/test_cast.py)
    return [
        ("strided copies", lambda: dmlops.join([x[::-1], x[::2, ::-1]], 0),
         lambda: np.concatenate([x[::-1], x[::2, ::-1]], 0)),
        ("float16 narrowing", lambda: dmlops.cast(finite, np.float16),
         lambda: finite.astype(np.float16)),
        ("float32 widening", lambda: dmlops.cast(finite.astype(np.float16), np.float32),
         lambda: finite.astype(np.float16).astype(np.float32)),
        ("gather", lambda: dmlops.gather(x, rows, 0), lambda: x[rows]),
        ("scatter of rows", lambda: dmlops.scatter_nd(x, targets, updates), lambda: expected_scatter),
        ("nonzero", lambda: dmlops.nonzero(zeros), lambda: found),
    ]  # fmt: skip


@pytest.mark.parametrize("limit", [0, 1 << 40], ids=["released", "held"])
@pytest.mark.parametrize("case", [c[0] for c in _cases()])
def test_every_native_job_writes_the_same_bits_held_or_released(
    held_below: Callable[[int], None], limit: int, case: str
) -> None:
    held_below(limit)
    _, call, expected = next(c for c in _cases() if c[0] == case)
    got, want = np.asarray(call()), np.asarray(expected())
    assert got.shape == want.shape
    assert got.tobytes() == want.astype(got.dtype).tobytes()


@pytest.mark.parametrize("limit", [0, 1 << 40], ids=["released", "held"])
def test_sixteen_threads_calling_at_once_held_or_released(
    held_below: Callable[[int], None], limit: int
) -> None:
    """Every job holding the GIL, or none: 16 Python threads' strided copies, joins,
    conversions and gathers all right, the pool taken by one job at a time."""
    from concurrent.futures import ThreadPoolExecutor

    held_below(limit)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((32, 3, 40, 41), dtype=np.float32) for _ in range(16)]

    def call(k: int) -> bool:
        x = arrays[k % 16]
        flipped = dmlops.slice1(x, [0, 0, 1, 0], [32, 3, 39, 41], [1, 1, 2, -3])
        joined = dmlops.join(dmlops.split(x, 1, [1, 2]), 1)
        halves = dmlops.cast(x, np.float16)
        at = np.array([40, k % 41, 0, 3, 20])
        return bool(
            np.array_equal(flipped, x[:, :, 1:40:2, ::-3])
            and np.array_equal(joined, x)
            and halves.tobytes() == x.astype(np.float16).tobytes()
            and np.array_equal(dmlops.gather(x, at, 3), x[..., at])
        )

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(call, range(160)))
