"""The CPU engine's thread count: affinity, a cgroup CPU quota, OMP_NUM_THREADS,
DMLOPS_NUM_THREADS and set_num_threads, each decided deterministically; and the CPUs a job leaves to other
runnable tasks (DMLOPS_LOAD_AWARE, the estimate from /proc/loadavg's runnable count)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlops
from dmlops import DmlError
from dmlops.backends import cpu_engine
from dmlops.backends.cpu_engine import caches, threads
from dmlops.backends.numpy_backend import NumpyBackend


def test_the_cpus_this_process_may_use() -> None:
    assert threads.choose_threads({}, 32, None) == 32
    assert threads.choose_threads({}, 0, None) == 1


def test_a_quota_caps_the_count_rounded_up() -> None:
    assert threads.choose_threads({}, 32, 2.5) == 3
    assert threads.choose_threads({}, 32, 0.5) == 1
    assert threads.choose_threads({}, 4, 8.0) == 4


def test_the_environment_overrides_both() -> None:
    assert threads.choose_threads({"DMLOPS_NUM_THREADS": "7"}, 2, 1.0) == 7
    assert threads.choose_threads({"DMLOPS_NUM_THREADS": " "}, 2, None) == 2
    for bad in ("0", "-1", "four"):
        with pytest.raises(dmlops.DmlError, match="DMLOPS_NUM_THREADS"):
            threads.choose_threads({"DMLOPS_NUM_THREADS": bad}, 2, None)


def test_openmps_count_caps_the_default() -> None:
    """OMP_NUM_THREADS (Dask's nanny, joblib's workers and batch schedulers set it) caps the
    count; DMLOPS_NUM_THREADS still decides; a value OpenMP would refuse is ignored."""
    assert threads.choose_threads({"OMP_NUM_THREADS": "1"}, 32, None) == 1
    assert threads.choose_threads({"OMP_NUM_THREADS": "4,2"}, 32, None) == 4
    assert threads.choose_threads({"OMP_NUM_THREADS": "64"}, 8, None) == 8
    assert threads.choose_threads({"OMP_NUM_THREADS": "6"}, 32, 2.5) == 3
    env = {"OMP_NUM_THREADS": "1", "DMLOPS_NUM_THREADS": "5"}
    assert threads.choose_threads(env, 32, None) == 5
    for ignored in ("", "0", "-2", "many", " "):
        assert threads.choose_threads({"OMP_NUM_THREADS": ignored}, 12, None) == 12


def test_a_child_with_openmps_count_set_uses_it() -> None:
    """A process started with OMP_NUM_THREADS=2 (as a Dask worker with OMP_NUM_THREADS=1)
    counts from it."""
    code = "import dmlops; print(dmlops.get_num_threads())"
    env = {k: v for k, v in os.environ.items() if k != "DMLOPS_NUM_THREADS"}
    for value in ("1", "2"):
        cpus, quota = threads._usable_cpus(), threads.cpu_quota()
        want = threads.choose_threads({"OMP_NUM_THREADS": value}, cpus, quota)
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**env, "OMP_NUM_THREADS": value},
            capture_output=True,
            text=True,
            check=True,
        )
        assert int(out.stdout) == want


def _cgroup(tmp_path: Path, own: str, files: dict[str, str]) -> tuple[Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    membership = tmp_path / "cgroup"
    membership.write_text(f"0::{own}\n")
    root = tmp_path / "fs"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root, membership


def test_cgroup_v2_quota_of_the_own_group(tmp_path: Path) -> None:
    root, membership = _cgroup(
        tmp_path, "/box/job", {"box/job/cpu.max": "250000 100000\n", "cpu.max": "max 100000\n"}
    )
    assert threads.cpu_quota(root, membership) == 2.5


def test_cgroup_v2_the_smallest_quota_above(tmp_path: Path) -> None:
    root, membership = _cgroup(
        tmp_path,
        "/box/job",
        {"box/job/cpu.max": "max 100000\n", "box/cpu.max": "150000 100000\n"},
    )
    assert threads.cpu_quota(root, membership) == 1.5


def test_no_quota(tmp_path: Path) -> None:
    root, membership = _cgroup(tmp_path, "/", {"cpu.max": "max 100000\n"})
    assert threads.cpu_quota(root, membership) is None
    assert threads.cpu_quota(tmp_path / "missing", tmp_path / "missing") is None


def test_memory_limits_of_cgroup_v2_and_v1(tmp_path: Path) -> None:
    """A container's memory limit: v2's memory.max, the smallest of the own group and the
    groups above it ("max" is none), else v1's limit_in_bytes (its near-2^63 "no limit"
    is none); nothing readable is none."""
    from dmlops.backends.cpu_engine import cgroups

    root, membership = _cgroup(
        tmp_path / "a",
        "/box/job",
        {"box/job/memory.max": "max\n", "box/memory.max": "536870912\n", "memory.max": "max\n"},
    )
    assert cgroups.memory_limit(root, membership) == 512 << 20
    root, membership = _cgroup(tmp_path / "b", "/job", {"job/memory.max": "max\n"})
    assert cgroups.memory_limit(root, membership) is None
    root, membership = _cgroup(
        tmp_path / "c", "/", {"memory/memory.limit_in_bytes": "1073741824\n"}
    )
    assert cgroups.memory_limit(root, membership) == 1 << 30
    root, membership = _cgroup(
        tmp_path / "d", "/", {"memory/memory.limit_in_bytes": "9223372036854771712\n"}
    )
    assert cgroups.memory_limit(root, membership) is None
    assert cgroups.memory_limit(tmp_path / "missing", tmp_path / "missing") is None


def test_the_output_cache_keeps_an_eighth_of_a_containers_memory_at_most() -> None:
    assert cpu_engine.default_cache_limit(None) == 256 << 20
    assert cpu_engine.default_cache_limit(512 << 20) == 64 << 20
    assert cpu_engine.default_cache_limit(64 << 30) == 256 << 20


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    root, membership = _cgroup(
        tmp_path, "/", {"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}
    )
    assert threads.cpu_quota(root, membership) == 4.0
    (root / "cpu/cpu.cfs_quota_us").write_text("-1\n")
    assert threads.cpu_quota(root, membership) is None


def test_set_num_threads_at_run_time() -> None:
    before = dmlops.get_num_threads()
    try:
        dmlops.set_num_threads(3)
        assert dmlops.get_num_threads() == 3
        assert NumpyBackend.instance().threads == 3
        assert NumpyBackend(threads=5).threads == 5
    finally:
        dmlops.set_num_threads(before)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(dmlops.DmlError, match="set_num_threads"):
            dmlops.set_num_threads(bad)  # type: ignore[arg-type]


def test_the_default_count_follows_a_quota_changed_while_the_process_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the engine reads the quota's files again (a pod resized in place), the default
    count is chosen again when they change; one set by set_num_threads or
    DMLOPS_NUM_THREADS stays."""
    from dmlops.backends.cpu_engine import threads as chosen

    saved = [list(chosen._CHOSEN), list(chosen._EXPLICIT), list(chosen._CHOSEN_FOR)]
    monkeypatch.delenv("DMLOPS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(chosen, "_usable_cpus", lambda: 16)
    quota: list[float | None] = [2.5]
    try:
        chosen._CHOSEN.clear()
        chosen._EXPLICIT[0] = False
        chosen.follow_quota(lambda: quota[0])
        assert chosen.get_num_threads() == 3
        quota[0] = 6.0
        assert chosen.get_num_threads() == 6
        quota[0] = None  # (the quota taken away: the CPU set's)
        assert chosen.get_num_threads() == 16
        chosen.set_num_threads(4)
        quota[0] = 1.0
        assert chosen.get_num_threads() == 4
        chosen._CHOSEN.clear()
        chosen._EXPLICIT[0] = False
        monkeypatch.setenv("DMLOPS_NUM_THREADS", "5")
        assert chosen.get_num_threads() == 5
        quota[0] = 2.0
        assert chosen.get_num_threads() == 5
    finally:
        chosen.follow_quota(None)
        chosen._CHOSEN[:], chosen._EXPLICIT[:], chosen._CHOSEN_FOR[:] = saved


def _caches(tmp_path: Path, levels: dict[int, tuple[str, str]]) -> Path:
    root = tmp_path / "cache"
    for k, (level, (kind, size)) in enumerate(sorted(levels.items())):
        entry = root / f"index{k}"
        entry.mkdir(parents=True)
        (entry / "level").write_text(f"{level}\n")
        (entry / "type").write_text(f"{kind}\n")
        (entry / "size").write_text(f"{size}\n")
    return root


def test_streaming_starts_at_three_eighths_of_the_last_level_cache(tmp_path: Path) -> None:
    """The engine streams a job's stores from 3/8 of the outermost data cache sysfs lists
    (an instruction cache does not count; 32 MiB assumed where none can be read), 1-16 MiB."""
    root = _caches(tmp_path, {1: ("Data", "48K"), 2: ("Unified", "2048K"), 3: ("Unified", "32M")})
    assert caches.last_level_cache_bytes(root) == 32 << 20
    assert caches.streaming_bytes(caches.last_level_cache_bytes(root)) == 12 << 20
    only = _caches(tmp_path / "b", {1: ("Instruction", "32K"), 2: ("Data", "1024K")})
    assert caches.last_level_cache_bytes(only) == 1 << 20
    assert caches.last_level_cache_bytes(tmp_path / "none") == 32 << 20
    assert caches.streaming_bytes(256 << 10) == 1 << 20  # (never below a megabyte)
    assert caches.streaming_bytes(8 << 20) == 3 << 20
    assert caches.streaming_bytes(300 << 20) == 16 << 20  # (nor above 16 MiB)


def test_the_environment_sets_the_streaming_threshold() -> None:
    """DMLOPS_STREAMING_BYTES overrides the machine's threshold (0 or 'off': never stream);
    anything else is refused by name."""
    assert caches.chosen_streaming_bytes({"DMLOPS_STREAMING_BYTES": "8388608"}) == 8 << 20
    assert caches.chosen_streaming_bytes({"DMLOPS_STREAMING_BYTES": "0"}) == caches.NEVER
    assert caches.chosen_streaming_bytes({"DMLOPS_STREAMING_BYTES": " OFF "}) == caches.NEVER
    assert caches.chosen_streaming_bytes({}) == caches.streaming_bytes()
    for bad in ("-1", "8M", "lots"):
        with pytest.raises(dmlops.DmlError, match="DMLOPS_STREAMING_BYTES"):
            caches.chosen_streaming_bytes({"DMLOPS_STREAMING_BYTES": bad})


def test_a_bad_streaming_threshold_is_refused_when_the_engine_loads() -> None:
    """The variable is read when the engine loads, at its first call (as DMLOPS_NUM_THREADS
    is): a bad value stops that call, naming the variable; 'off' runs."""
    import os
    import subprocess
    import sys

    from dmlops.backends import cpu_engine

    if cpu_engine.native() is None:
        pytest.skip("the CPU engine is not built")
    code = "import dmlops, numpy as np; dmlops.join([np.ones((2, 9000))] * 2, 0)"
    env = dict(os.environ, DMLOPS_STREAMING_BYTES="lots")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "DMLOPS_STREAMING_BYTES='lots'" in done.stderr
    env["DMLOPS_STREAMING_BYTES"] = "off"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("value", "aware"),
    [("", True), ("1", True), ("on", True), (" YES ", True), ("0", False), ("off", False)],
)
def test_load_awareness_from_the_environment(value: str, aware: bool) -> None:
    assert cpu_engine.load_aware({"DMLOPS_LOAD_AWARE": value}) is aware
    assert cpu_engine.load_aware({}) is True


def test_a_bad_load_awareness_is_refused_by_name() -> None:
    with pytest.raises(DmlError, match="DMLOPS_LOAD_AWARE='maybe'"):
        cpu_engine.load_aware({"DMLOPS_LOAD_AWARE": "maybe"})


@pytest.mark.parametrize(
    ("loadavg", "ours", "in_set", "online", "spare"),
    [
        ("0.50 0.40 0.30 1/120 99", 1, 16, 16, 16),  # only the caller runs
        ("0.50 0.40 0.30 16/120 99", 16, 16, 16, 16),  # the caller and 15 spinning workers
        ("0.50 0.40 0.30 3/120 99", 1, 16, 16, 14),  # two busy processes
        ("0.50 0.40 0.30 18/120 99", 16, 16, 16, 14),  # ... beside our spinning workers
        ("0.50 0.40 0.30 2/120 99", 1, 2, 2, 1),  # a 2-core machine beside a busy process
        ("0.50 0.40 0.30 9/120 99", 1, 2, 2, 1),  # never below the caller
        ("0.50 0.40 0.30 3/120 99", 1, 4, 16, 4),  # busy work fits outside a 4-CPU set
        ("0.50 0.40 0.30 15/120 99", 1, 4, 16, 2),  # 14 others: 12 outside, 2 in the set
        ("0.50 0.40 0.30 0/120 99", 3, 4, 4, 4),  # (fewer running than ours: a stale count)
        ("garbage", 1, 4, 4, -1),
        ("1.0 2.0 3.0 x/12 1", 1, 4, 4, -1),
        ("1.0 2.0 3.0", 1, 4, 4, -1),
    ],
)
def test_spare_cpus_from_the_runnable_count(
    loadavg: str, ours: int, in_set: int, online: int, spare: int
) -> None:
    module = cpu_engine.native()
    if module is None:
        pytest.skip("the CPU engine is not built")
    assert module.estimate_spare(loadavg, ours, in_set, online) == spare


def test_a_job_leaves_cpus_that_other_processes_keep_busy() -> None:
    """With every CPU kept busy by another process, a short 2-thread job asks no helper (the
    caller alone); told to ignore the load, the same job's helper takes part. A job long
    for one thread (four times the bytes, with `long_job_us` set between the two jobs'
    times as the pool measured them) asks its helper regardless: a scheduler slice's wait is
    then a small part of it. The long jobs teach the pool nothing: short ones stay alone."""
    import subprocess
    import sys
    import time

    module = cpu_engine.native()
    online = os.cpu_count() or 1
    if module is None or not sys.platform.startswith("linux") or online > 32:
        pytest.skip("needs the engine, /proc/loadavg and at most 32 CPUs to fill")
    rng = np.random.default_rng(3)
    short = rng.standard_normal((256, 16384), dtype=np.float32)  # 16 MiB
    long = rng.standard_normal((1024, 16384), dtype=np.float32)  # 64 MiB
    short_out, long_out = np.empty_like(short), np.empty_like(long)

    spins: list[int] = []  # the idle spin each job gave its workers

    def joined_in(x: np.ndarray, out: np.ndarray, calls: int) -> list[int]:
        found = []
        for _ in range(calls):
            time.sleep(0.002)  # (a fresh reading of the load)
            dmlops.slice1(x, [0, 0], list(x.shape), [1, -1], out=out)
            found.append(module.joined())
            spins.append(module.job_spin())
        return found

    held = dmlops.get_num_threads()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(online)]
    dmlops.set_num_threads(2)
    try:
        time.sleep(0.5)
        never_long = 10**9  # (µs: no job here is long)
        cpu_engine.configure(long_job_us=never_long, quota_millicpus=0)  # (a CI quota aside)
        t0 = time.perf_counter()
        joined_aware = joined_in(short, short_out, 3)
        short_us = (time.perf_counter() - t0) / 3 * 1e6
        # (a job of four times the bytes takes about four times as long: long from twice)
        cpu_engine.configure(long_job_us=int(2 * short_us))
        spins.clear()
        joined_long = joined_in(long, long_out, 5)
        spins_long = list(spins)
        cpu_engine.configure(long_job_us=never_long)
        joined_after = joined_in(short, short_out, 3)  # (the long jobs taught the pool nothing)
        cpu_engine.configure(load_aware=0)
        spins.clear()
        # (its helper, woken beside the spinners, waits for a CPU: a few jobs may end first)
        joined_blind = joined_in(short, short_out, 15)
        spins_blind = list(spins)
    finally:
        cpu_engine.configure(**cpu_engine.DEFAULTS)
        dmlops.set_num_threads(held)
        for s in spinners:
            s.kill()
            s.wait()
    assert np.array_equal(short_out, short[:, ::-1]) and np.array_equal(long_out, long[:, ::-1])
    assert joined_aware == [0, 0, 0] and joined_after == [0, 0, 0]
    assert max(joined_long) == 1, joined_long
    assert max(joined_blind) == 1, joined_blind
    # a job the load cut short (then long: every thread asked) leaves its workers the short
    # spin; one that asked every thread it wanted (the load set aside), the idle machine's
    short_spin, idle_spin = cpu_engine.DEFAULTS["spin_us"], cpu_engine.DEFAULTS["idle_spin_us"]
    assert short_spin != idle_spin
    assert [s for s, j in zip(spins_long, joined_long) if j] == [short_spin] * sum(joined_long)
    assert [s for s, j in zip(spins_blind, joined_blind) if j] == [idle_spin] * sum(joined_blind)


def _probe(pieces: int, threads: int, piece_us: int) -> tuple[np.ndarray, np.ndarray]:
    """A pool job of `pieces` sleeping pieces on `threads` threads: each piece's runner (the
    range of the thread that ran it, 0 the caller's) and how many times it ran."""
    runners, runs = cpu_engine.native().pool_probe(pieces, threads, piece_us)
    return np.frombuffer(runners, np.int32), np.frombuffer(runs, np.int32)


# the pool on its own: the machine's load, learnt straggles and a CPU quota's budget asking fewer
# threads set aside
_EVERY_THREAD = {"load_aware": 0, "straggle_us": 10**9, "quota_millicpus": 0}


@pytest.mark.parametrize("home_ranges", [1, 0])
def test_every_piece_runs_once_whichever_thread_takes_it(home_ranges: int) -> None:
    """Pieces in one range each thread, taken by their owners and stolen by the others (or
    one range all take from): each runs exactly once, on one of the job's threads, and a
    copy on four threads is the copy numpy makes."""
    if cpu_engine.native() is None:
        pytest.skip("needs the engine")
    held = dmlops.get_num_threads()
    x = np.random.default_rng(5).standard_normal((512, 4096), dtype=np.float32)  # 8 MiB
    try:
        cpu_engine.configure(home_ranges=home_ranges, **_EVERY_THREAD)
        for pieces, threads, piece_us in [(1000, 4, 0), (37, 3, 50), (8, 8, 300), (2, 2, 0)]:
            runners, runs = _probe(pieces, threads, piece_us)
            assert (runs == 1).all()
            assert ((runners >= 0) & (runners < threads)).all()
        dmlops.set_num_threads(4)
        np.testing.assert_array_equal(
            dmlops.slice1(x, [0, 0], list(x.shape), [-1, 1]).view(np.uint32),
            x[::-1].view(np.uint32),
        )
    finally:
        cpu_engine.configure(**cpu_engine.DEFAULTS)
        dmlops.set_num_threads(held)


def test_workers_spin_after_an_unhindered_job_for_the_idle_spin() -> None:
    """A job that had a CPU for every thread it wanted leaves its workers spinning for
    `idle_spin_us` (a call soon after finds them awake) before they sleep; with it 0 they
    sleep at once (awake for 0.1 s on end only where they spin)."""
    import time

    module = cpu_engine.native()
    if module is None:
        pytest.skip("needs the engine")

    def all_asleep_within(seconds: float) -> bool:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if module.asleep() == module.workers():
                return True
            time.sleep(0.005)
        return False

    every = 3
    try:
        cpu_engine.configure(spin_us=0, idle_spin_us=0, **_EVERY_THREAD)
        _probe(8, every, 0)  # (two workers at least)
        every = module.workers() + 1
        _probe(4 * every, every, 0)
        assert module.job_spin() == 0
        assert all_asleep_within(5.0)
        cpu_engine.configure(idle_spin_us=4_000_000)  # 4 s
        _probe(4 * every, every, 0)
        assert module.job_spin() == 4_000_000
        end = time.perf_counter() + 2.0  # (a loaded machine may run a woken worker late)
        while module.asleep() and time.perf_counter() < end:
            time.sleep(0.005)
        time.sleep(0.1)
        assert module.asleep() == 0, module.asleep()  # every worker asked, spinning still
    finally:  # (a job that asks them all, so that their spin is the default's again)
        cpu_engine.configure(**{**cpu_engine.DEFAULTS, **_EVERY_THREAD})
        _probe(4 * every, every, 0)
        cpu_engine.configure(**cpu_engine.DEFAULTS)
    assert all_asleep_within(1.0)


def test_a_caller_that_sleeps_for_the_last_pieces_is_woken_by_them() -> None:
    """With no spin, a caller whose own range is done sleeps until the last piece, run by a
    worker, wakes it: jobs of slow pieces finish, each piece run once."""
    if cpu_engine.native() is None:
        pytest.skip("needs the engine")
    try:
        cpu_engine.configure(caller_spin_us=0, **_EVERY_THREAD)
        for pieces, threads in [(3, 3), (12, 4), (5, 2)]:
            _, runs = _probe(pieces, threads, 2000)
            assert (runs == 1).all()
    finally:
        cpu_engine.configure(**cpu_engine.DEFAULTS)


def test_each_thread_takes_its_own_range_from_the_front_and_others_from_the_back() -> None:
    """A job on three threads is cut into three ranges of eight pieces, the caller's first:
    in each range the pieces its owner ran come before those other threads took (from the
    back, once theirs were done), so the owner's share is the same part of the job each
    time; and pieces long enough that no thread can finish its own range first leave the
    caller's first piece to the caller."""
    if cpu_engine.native() is None:
        pytest.skip("needs the engine")
    try:
        cpu_engine.configure(home_ranges=1, **_EVERY_THREAD)
        for _ in range(3):
            runners, _ = _probe(24, 3, 1000)
            for owner in range(3):
                own = runners[8 * owner : 8 * owner + 8] == owner
                assert not (own[1:] & ~own[:-1]).any(), runners  # no own piece after a stolen one
            assert runners[0] == 0
    finally:
        cpu_engine.configure(**cpu_engine.DEFAULTS)
