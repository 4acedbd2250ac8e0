"""A container's CPU quota: read from cgroup v2 and v1 (the process's own group and those
above it), and its budget in the engine's pool (native/quota.h), which keeps the threads a
job asks beyond the quota's whole CPUs from spending the quota before a period ends (the
kernel would then stop every thread of the group for the rest of it)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlops.backends import cpu_engine
from dmlops.backends.cpu_engine import cgroups

MS = 1_000_000  # ns


def _membership(tmp_path: Path, lines: list[str], files: dict[str, str]) -> tuple[Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    membership = tmp_path / "cgroup"
    membership.write_text("".join(f"{line}\n" for line in lines))
    root = tmp_path / "fs"
    root.mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root, membership


def test_v1_quota_of_the_own_group_on_a_host(tmp_path: Path) -> None:
    """A process in a group of its own (a systemd unit's CPUQuota, a batch job) on a cgroup
    v1 host: its group's quota, and the smallest above it, under either mount name."""
    lines = ["11:memory:/job", "4:cpu,cpuacct:/job/step", "1:name=systemd:/job"]
    files = {
        "cpu,cpuacct/job/step/cpu.cfs_quota_us": "150000\n",
        "cpu,cpuacct/job/step/cpu.cfs_period_us": "100000\n",
        "cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    root, membership = _membership(tmp_path / "a", lines, files)
    assert cgroups.cpu_quota_period(root, membership) == (1.5, 100000)
    files["cpu,cpuacct/job/cpu.cfs_quota_us"] = "50000\n"
    files["cpu,cpuacct/job/cpu.cfs_period_us"] = "50000\n"
    root, membership = _membership(tmp_path / "b", lines, files)
    assert cgroups.cpu_quota_period(root, membership) == (1.0, 50000)
    # the same hierarchy mounted as "cpu" alone (a symbolic link on most hosts)
    moved = {k.replace("cpu,cpuacct/", "cpu/"): v for k, v in files.items()}
    root, membership = _membership(tmp_path / "c", lines, moved)
    assert cgroups.cpu_quota(root, membership) == 1.0


def test_v1_quota_in_a_container_that_mounts_its_group_as_the_root(tmp_path: Path) -> None:
    """Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names the host's
    path, which does not exist below the container's mount; the mount's root holds the
    quota."""
    lines = ["4:cpu,cpuacct:/docker/4f2a", "0::/"]
    files = {"cpu/cpu.cfs_quota_us": "250000\n", "cpu/cpu.cfs_period_us": "100000\n"}
    root, membership = _membership(tmp_path, lines, files)
    assert cgroups.cpu_quota_period(root, membership) == (2.5, 100000)


def test_v2_quota_comes_first_and_carries_its_period(tmp_path: Path) -> None:
    lines = ["0::/pod/app"]
    files = {"pod/app/cpu.max": "75000 50000\n", "cpu/cpu.cfs_quota_us": "100000\n"}
    root, membership = _membership(tmp_path, lines, files)
    assert cgroups.cpu_quota_period(root, membership) == (1.5, 50000)
    assert cgroups.cpu_quota_period(root / "none", membership) is None


def test_v1_memory_limit_of_the_own_group(tmp_path: Path) -> None:
    lines = ["7:memory:/job", "4:cpu,cpuacct:/"]
    files = {
        "memory/job/memory.limit_in_bytes": f"{1 << 30}\n",
        "memory/memory.limit_in_bytes": "9223372036854771712\n",
    }
    root, membership = _membership(tmp_path, lines, files)
    assert cgroups.memory_limit(root, membership) == 1 << 30


def test_the_usage_file_of_the_group_whose_quota_binds(tmp_path: Path) -> None:
    """cgroup v2: the binding group's `cpu.stat` (usage_usec first); v1: `cpuacct.usage`
    beside the quota where cpu and cpuacct share a hierarchy, else the cpuacct group of the
    same place, where the process is in it; none without a quota or a readable count."""
    lines = ["0::/pod/app"]
    files = {
        "pod/cpu.max": "150000 100000\n",
        "pod/cpu.stat": "usage_usec 5\nuser_usec 4\n",
        "pod/app/cpu.max": "max 100000\n",
        "pod/app/cpu.stat": "usage_usec 3\n",
    }
    root, membership = _membership(tmp_path / "v2", lines, files)
    assert cgroups.cpu_quota_usage(root, membership) == root / "pod/cpu.stat"
    files["pod/cpu.stat"] = "nr_periods 0\n"  # (an old kernel's: no usage line)
    root, membership = _membership(tmp_path / "v2old", lines, files)
    assert cgroups.cpu_quota_usage(root, membership) is None
    lines = ["4:cpu,cpuacct:/job", "3:memory:/"]
    files = {
        "cpu,cpuacct/job/cpu.cfs_quota_us": "250000\n",
        "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
        "cpu,cpuacct/job/cpuacct.usage": "123456\n",
    }
    root, membership = _membership(tmp_path / "v1", lines, files)
    assert cgroups.cpu_quota_usage(root, membership) == root / "cpu,cpuacct/job/cpuacct.usage"
    lines = ["5:cpu:/job", "4:cpuacct:/job/step"]
    files = {
        "cpu/job/cpu.cfs_quota_us": "250000\n",
        "cpu/job/cpu.cfs_period_us": "100000\n",
        "cpuacct/job/cpuacct.usage": "77\n",
        "cpuacct/job/step/cpuacct.usage": "7\n",
    }
    root, membership = _membership(tmp_path / "v1apart", lines, files)
    assert cgroups.cpu_quota_usage(root, membership) == root / "cpuacct/job/cpuacct.usage"
    lines = ["5:cpu:/job", "4:cpuacct:/other"]  # (not in the quota's twin: its count is not ours)
    root, membership = _membership(tmp_path / "v1elsewhere", lines, files)
    assert cgroups.cpu_quota_usage(root, membership) is None
    assert cgroups.cpu_quota_usage(root / "none", membership) is None


def test_the_engine_is_told_the_quota_in_thousandths_of_a_cpu() -> None:
    """(DEFAULTS holds the process's own, so that `configure(**DEFAULTS)` restores it.)"""
    own = cpu_engine.quota_settings(cgroups.cpu_quota_period())
    assert {k: cpu_engine.DEFAULTS[k] for k in own} == own
    assert cpu_engine.quota_settings(None) == {"quota_millicpus": 0, "quota_period_us": 100000}
    assert cpu_engine.quota_settings((1.5, 100000)) == {
        "quota_millicpus": 1500,
        "quota_period_us": 100000,
    }
    assert cpu_engine.quota_settings((0.0001, 100000))["quota_millicpus"] == 1


def _native() -> Any:
    module = cpu_engine.native()
    if module is None:
        pytest.skip("the CPU engine is not built")
    return module


def test_no_quota_or_a_fresh_budget_gives_every_thread() -> None:
    module = _native()
    assert module.quota_trace(0, 100000, 8, [(1, 1), (2, 10**9)]) == [8, 8]
    assert module.quota_trace(1500, 100000, 2, [(1 * MS, 0)]) == [2]


def test_a_job_longer_than_the_budget_gets_the_quotas_whole_cpus() -> None:
    """A full budget (3.75 ms above the rate) lasts a 2-thread job of 6 ms, not one of 7."""
    module = _native()
    assert module.quota_trace(1500, 100000, 2, [(MS, 0, 6.0 * MS)]) == [2]
    assert module.quota_trace(1500, 100000, 2, [(MS, 0, 7.0 * MS)]) == [1]


def test_a_spent_budget_gives_the_quotas_whole_cpus_until_it_fills() -> None:
    """1.5 CPUs, 100 ms periods: the budget holds 3.75 ms of CPU above the quota's rate.
    Two threads busy drain it at 2 - 1.425 CPUs: spent after about 6.5 ms; then one thread
    until 0.425 CPUs' refill makes it positive again."""
    module = _native()
    readings = [((t + 1) * MS, 2 * t * MS) for t in range(10)]  # 2 CPUs busy, read every ms
    got = module.quota_trace(1500, 100000, 2, readings)
    assert got[:7] == [2] * 7 and got[7:] == [1] * 3
    # then one thread busy: 0.425 ms a ms back, from -1.425 ms: positive after 4 ms
    then = [((t + 1) * MS, 18 * MS + (t - 9) * MS) for t in range(10, 15)]
    assert module.quota_trace(1500, 100000, 2, readings + then)[10:] == [1, 1, 1, 2, 2]
    # fewer CPUs than the quota's whole: never below one thread
    assert module.quota_trace(500, 100000, 4, readings)[-1] == 1
    assert (
        module.quota_trace(2500, 100000, 4, [((t + 1) * MS, 4 * t * MS) for t in range(9)])[-1] == 2
    )


def test_a_clock_that_goes_back_starts_the_budget_anew() -> None:
    """A child after fork() counts its CPU time from zero: its budget starts full."""
    module = _native()
    spent = [((t + 1) * MS, 2 * t * MS) for t in range(12)]
    assert module.quota_trace(1500, 100000, 2, [*spent, (14 * MS, 1 * MS)])[-2:] == [1, 2]


def test_a_process_in_a_real_quota_group_counts_the_groups_cpu_time() -> None:
    """Where this machine lets the tests make a group (root, a writable cgroup file system):
    a process started in it reads the quota and the group's usage file when the engine
    loads, its calls run, and a quota changed while it runs replaces its budget's and its
    default thread count."""

    from dmlops.bench.cpu_quota import make_quota_group

    _native()
    try:
        group = make_quota_group(1.5)
    except OSError as error:
        pytest.skip(str(error))
    code = (
        "import json, sys, time, dmlops, numpy as np; from dmlops.backends import cpu_engine; "
        "dmlops.join([np.ones((64, 9000))] * 4, 0); "
        "usage, engine = cpu_engine.QUOTA_USAGE, cpu_engine.native(); "
        "spent = engine.parse_usage(open(usage).readline()); "
        "print(json.dumps([cpu_engine.cpu_quota_period(), usage, spent]), flush=True); "
        "before = dmlops.get_num_threads(); "
        "sys.stdin.readline(); time.sleep(1.05); engine.quota_ask(2); "
        "print(json.dumps([engine.quota_now(), before, dmlops.get_num_threads()]))"
    )

    env = {
        k: v for k, v in os.environ.items() if k not in ("DMLOPS_NUM_THREADS", "OMP_NUM_THREADS")
    }
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=group.enter,
        )
        assert child.stdout is not None and child.stdin is not None
        first = child.stdout.readline()
        if group.version == 2:
            (group.path / "cpu.max").write_text("100000 100000")
        else:
            (group.path / "cpu.cfs_quota_us").write_text("100000")
        time.sleep(0.01)
        child.stdin.write("resized\n")
        child.stdin.flush()
        rest, errors = child.communicate(timeout=60)
    finally:
        group.remove()
    assert child.returncode == 0, errors
    quota, usage, spent = json.loads(first)
    assert quota == [1.5, 100000]
    counted = {2: group.path / "cpu.stat", 1: group.path / "cpuacct.usage"}[group.version]
    assert usage in (str(counted), *(str(twin / "cpuacct.usage") for twin in group.twins))
    assert spent > 0  # (the child's own CPU time at least, read as the budget reads it)
    resized, before, after = json.loads(rest.strip().splitlines()[-1])
    assert resized == [1000, 100000]
    cpus = len(os.sched_getaffinity(0))
    assert (before, after) == (min(cpus, 2), 1)  # (the default count follows it)


def test_a_fork_pool_in_a_real_quota_group_answers_and_finishes() -> None:
    """Children forked from a process whose budget reads the group's counter (the file
    inherited, each child's budget started anew) answer right and end, as a pool's children
    in a container do."""

    from dmlops.bench.cpu_quota import make_quota_group

    _native()
    try:
        group = make_quota_group(1.5)
    except OSError as error:
        pytest.skip(str(error))
    code = """
import multiprocessing, numpy as np, dmlops
x = np.arange(1 << 21, dtype=np.float32).reshape(512, 4096)
want = x[::-1, ::2].copy()
def call(_):
    return bool(np.array_equal(dmlops.slice1(x, [0, 0], [512, 4096], [-1, 2]), want))
if __name__ == "__main__":
    assert call(0)
    with multiprocessing.get_context("fork").Pool(3) as pool:
        print(sum(pool.map_async(call, range(24)).get(timeout=60)))
"""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=group.enter,
        )
    finally:
        group.remove()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["24"]


def _child_says(code: str) -> str:
    """The last line a child process prints running `code` with the engine loaded as
    `engine` (its budget's state is the process's: a test's changes stay there)."""
    preamble = (
        "import time\nfrom pathlib import Path\nfrom dmlops.backends import cpu_engine\n"
        "engine = cpu_engine.native()\n"
    )
    done = subprocess.run([sys.executable, "-c", preamble + code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_pool_reads_the_groups_counter_and_keeps_the_room_it_leaves(tmp_path: Path) -> None:
    """Through the pool's own entry (its clocks, a stand-in counter file): the group's other
    processes start spending far beyond the quota; from the next reading on, one thread,
    within the whole CPUs between readings too (the room kept), and beyond them."""
    _native()
    usage = tmp_path / "cpu.stat"
    usage.write_text("usage_usec 0\nuser_usec 0\n")
    code = f"""
cpu_engine.configure(quota_millicpus=2500, quota_period_us=100000)
engine.quota_usage({str(usage)!r})
got = [engine.quota_ask(2)]
time.sleep(0.003)
Path({str(usage)!r}).write_text("usage_usec 5000000\\n")  # (others: 5 s in a few ms)
# the next reading: due 1 ms after the last, or 200 times the last read's length after it
# (a loaded machine's slow read puts it off), so asked until it comes, for up to 2 s
first, until = engine.quota_ask(2), time.monotonic() + 2.0
while first != 1 and time.monotonic() < until:
    time.sleep(0.002)
    first = engine.quota_ask(2)
got += [first, engine.quota_ask(2), engine.quota_ask(3)]
engine.quota_usage("")
print(got)
"""
    assert _child_says(code) == "[2, 1, 1, 1]"
    # a counter that stops being one: the process's own time from then on, as without one
    code = f"""
cpu_engine.configure(quota_millicpus=2500, quota_period_us=100000)
engine.quota_usage({str(usage)!r})
got = [engine.quota_ask(2)]
time.sleep(0.003)
Path({str(usage)!r}).write_text("nr_periods 0\\n")
got += [engine.quota_ask(2), engine.quota_ask(2)]
print(got)
"""
    assert _child_says(code) == "[2, 2, 2]"


def test_the_files_that_set_the_binding_quota(tmp_path: Path) -> None:
    lines = ["0::/pod/app"]
    files = {"pod/cpu.max": "150000 100000\n", "pod/app/cpu.max": "max 100000\n"}
    root, membership = _membership(tmp_path / "v2", lines, files)
    assert cgroups.cpu_quota_files(root, membership) == (str(root / "pod/cpu.max"), "")
    lines = ["4:cpu,cpuacct:/job"]
    files = {
        "cpu,cpuacct/job/cpu.cfs_quota_us": "250000\n",
        "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
    }
    root, membership = _membership(tmp_path / "v1", lines, files)
    job = root / "cpu,cpuacct/job"
    assert cgroups.cpu_quota_files(root, membership) == (
        str(job / "cpu.cfs_quota_us"),
        str(job / "cpu.cfs_period_us"),
    )
    assert cgroups.cpu_quota_files(root / "none", membership) == ("", "")


def test_a_quotas_files_texts() -> None:
    module = _native()
    assert module.parse_limit("150000 100000\n", "") == (1500, 100000)
    assert module.parse_limit("max 50000\n", "") == (0, 50000)
    assert module.parse_limit("250000\n", "100000\n") == (2500, 100000)
    assert module.parse_limit("-1\n", "100000\n") == (0, 100000)
    assert module.parse_limit("1\n", "100000\n") == (1, 100000)  # (at least a thousandth)
    for limit, period in [("x\n", ""), ("150000\n", ""), ("5 0\n", ""), ("-7\n", "100\n")]:
        assert module.parse_limit(limit, period) is None


def test_a_quota_changed_while_the_process_runs_replaces_the_budgets(tmp_path: Path) -> None:
    """A pod resized in place: the budget reads the quota's files again at most once a
    second and takes a changed quota; a quota set at run time (configure) stays until the
    files change; a file that stops being a quota's changes nothing. In a child process
    (the engine's state is the process's)."""

    _native()
    limit = tmp_path / "cpu.max"
    limit.write_text("150000 100000\n")
    code = f"""
cpu_engine.configure(quota_millicpus=1500, quota_period_us=100000)
engine.quota_watch({str(limit)!r}, "")
limit = Path({str(limit)!r})
seen = [engine.quota_now()]
assert engine.quota_files_now() == 1500
def after(text):
    limit.write_text(text)
    engine.quota_ask(4)
    seen.append(engine.quota_now())  # (within the second: not read yet)
    time.sleep(1.05)
    engine.quota_ask(4)
    seen.append(engine.quota_now())
after("100000 50000\\n")
after("max 50000\\n")
cpu_engine.configure(quota_millicpus=700, quota_period_us=100000)
time.sleep(1.05)
engine.quota_ask(4)
seen.append(engine.quota_now())  # (the files unchanged: configure's stays)
after("nonsense\\n")
after("300000 100000\\n")
assert engine.quota_files_now() == 3000
engine.quota_watch("", "")
assert engine.quota_files_now() == -1
print(seen)
"""
    assert _child_says(code) == str(
        [
            (1500, 100000),
            (1500, 100000),
            (2000, 50000),
            (2000, 50000),
            (0, 50000),
            (700, 100000),
            (700, 100000),
            (700, 100000),
            (700, 100000),
            (3000, 100000),
        ]
    )


def test_a_usage_files_first_line_as_nanoseconds() -> None:
    module = _native()
    assert module.parse_usage("usage_usec 1234\nuser_usec 1000\n") == 1_234_000
    assert module.parse_usage("987654321\n") == 987_654_321
    assert module.parse_usage("nr_periods 3\n") == -1
    assert module.parse_usage("12x\n") == -1
    assert module.parse_usage("") == -1


def _closed_loop(
    millicpus: int,
    wanted: int,
    sibling: float,
    jobs_us: list[int],
    lag: int = 0,
    group: bool = True,
    onset_us: int = 0,
) -> tuple[list[int], list[tuple[int, float, float]]]:
    """Jobs back to back, each on every thread the budget gives, in a group whose other
    processes spend `sibling` CPUs from `onset_us` on; the group's counter read before each
    job (charging the process's time `lag` jobs late, as a tick-charged counter does).
    (threads a job, [(wall, process CPU, group CPU) after each job])."""
    module = _native()
    wall, cpu, readings, threads, marks = 0, 0, [], [], [(0, 0.0, 0.0)]
    for job_us in jobs_us:
        late = marks[max(0, len(marks) - 1 - lag)][1]
        theirs = sibling * max(0, wall - onset_us * 1000)
        seen = int(late + theirs) if group else -1
        readings.append((wall + 1, cpu, job_us * 1000.0, seen))
        got = module.quota_trace(millicpus, 100000, wanted, readings)[-1]
        threads.append(got)
        wall += job_us * 1000
        cpu += got * job_us * 1000
        marks.append((wall, cpu, cpu + sibling * max(0, wall - onset_us * 1000)))
    return threads, marks


def test_the_groups_other_processes_leave_the_threads_they_do_not_spend() -> None:
    """2.5 CPUs: beside a sibling spending 2, one thread a job once the budget is spent;
    beside one spending 0.4, the quota's two whole CPUs (a third while the budget lasts);
    counting the process's own CPU time alone, its whole CPUs whatever the sibling spends."""
    threads, _ = _closed_loop(2500, 3, 2.0, [500] * 200)
    assert threads[0] == 3 and set(threads[40:]) == {1}
    threads, _ = _closed_loop(2500, 3, 0.4, [500] * 200)
    assert set(threads[40:]) <= {2, 3} and threads[40:].count(2) > 100
    threads, _ = _closed_loop(2500, 3, 2.0, [500] * 200, group=False)
    assert set(threads[40:]) == {2, 3}


def test_others_that_start_spending_count_at_once() -> None:
    """A sibling that starts spending 2 of 2.5 CPUs 5 ms in, while the budget lasts: from
    the fourth job after (2 ms), one thread a job (its average alone would take several ms
    more to leave room for one)."""
    threads, _ = _closed_loop(2500, 3, 2.0, [500] * 40, onset_us=5_000)
    assert threads[:10] == [3] * 10 and set(threads[13:]) == {1}


def test_a_counter_that_charges_the_process_late_is_not_another_process() -> None:
    """Alone in its group, a process whose group counter charges its threads a few jobs
    late gets the threads it gets from its own CPU clock."""
    jobs = [300, 700, 1000, 200] * 40
    own, _ = _closed_loop(2500, 3, 0.0, jobs, group=False)
    for lag in (1, 4, 9):
        assert _closed_loop(2500, 3, 0.0, jobs, lag=lag)[0] == own
    own, _ = _closed_loop(2000, 4, 0.0, jobs, group=False)
    assert _closed_loop(2000, 4, 0.0, jobs, lag=4)[0] == own


@given(
    millicpus=st.integers(1500, 6000),
    sibling_share=st.floats(0.0, 1.0),
    extra=st.integers(0, 3),
    jobs=st.lists(st.integers(50, 3000), min_size=100, max_size=300),  # µs of wall time each
)
def test_beside_other_processes_the_group_never_spends_a_periods_quota(
    millicpus: int, sibling_share: float, extra: int, jobs: list[int]
) -> None:
    """A sibling that spends any steady share of what one thread leaves of the budget's
    rate (95 % of the quota), and a process whose jobs use every thread they are given, back
    to back: in no window of a period does the group spend more than the quota grants (and
    2 % of a CPU, what the budget takes for the two counters' rounding);
    in those that hold the process's start, no more than the budget's first fill and the
    first job above it (the budget starts full, as if the group's last period had been idle,
    and learns what the others spend from the group's counter's second reading on)."""
    sibling = sibling_share * (0.95 * millicpus / 1000 - 1)
    wanted = -(-millicpus // 1000) + extra
    _, marks = _closed_loop(millicpus, wanted, sibling, jobs)
    period, grant = 100 * MS, millicpus * 100 * MS / 1000

    def group_at(t: float) -> float:
        for (w0, _, g0), (w1, _, g1) in itertools.pairwise(marks):
            if w0 <= t <= w1:
                return g0 + (g1 - g0) * (t - w0) / max(1, w1 - w0)
        return marks[-1][2] + sibling * (t - marks[-1][0])

    first_fill = 0.025 * grant + wanted * jobs[0] * 1000
    grant += 0.02 * period  # (others' spending under 2 % of a CPU is taken for rounding)

    for start, _, _ in marks:
        assert group_at(start + period) - group_at(start) <= grant + first_fill * (start < period)
        if start >= period:
            assert group_at(start) - group_at(start - period) <= grant + first_fill * (
                start < 2 * period
            )


@given(
    millicpus=st.integers(1001, 8000).filter(lambda m: m % 1000 != 0),
    period_ms=st.sampled_from([20, 50, 100, 250]),
    extra=st.integers(1, 4),
    jobs=st.lists(st.integers(20, 8000), min_size=50, max_size=400),  # µs of wall time each
    gaps=st.lists(st.integers(0, 3000), min_size=1, max_size=20),
)
def test_back_to_back_jobs_never_spend_a_periods_quota(
    millicpus: int, period_ms: int, extra: int, jobs: list[int], gaps: list[int]
) -> None:
    """Jobs that use every thread they are given, back to back (a gap now and then): in no
    window of a period's length does the process spend more CPU than the quota grants a
    period, wherever the kernel's periods begin."""
    module = _native()
    wanted = millicpus // 1000 + extra  # more threads than the quota's CPUs
    wall, cpu, readings = 0, 0, []
    marks = [(0, 0)]  # (wall, cpu) at each change of rate
    for job_us, gap_us in zip(jobs, itertools.cycle(gaps)):
        readings.append((wall + 1, cpu, job_us * 1000.0))  # (the job's time foreseen)
        threads = module.quota_trace(millicpus, period_ms * 1000, wanted, readings)[-1]
        wall += job_us * 1000
        cpu += threads * job_us * 1000
        marks.append((wall, cpu))
        wall += gap_us * 1000 * (job_us % 7 == 0)  # a pause after some jobs
        marks.append((wall, cpu))
    period = period_ms * MS
    grant = millicpus * period / 1000

    def cpu_at(t: int) -> float:  # the process's CPU time at wall time t (piecewise linear)
        for (w0, c0), (w1, c1) in itertools.pairwise(marks):
            if w0 <= t <= w1:
                return c0 + (c1 - c0) * (t - w0) / max(1, w1 - w0)
        return float(marks[-1][1])

    for start, _ in marks:  # the most any window spends begins or ends at a change of rate
        assert cpu_at(start + period) - cpu_at(start) <= grant
        if start >= period:
            assert cpu_at(start) - cpu_at(start - period) <= grant


@pytest.mark.parametrize(
    ("value", "aware"), [("", True), ("1", True), (" on ", True), ("0", False), ("NO", False)]
)
def test_quota_awareness_from_the_environment(value: str, aware: bool) -> None:
    assert cpu_engine.quota_aware({"DMLOPS_QUOTA_AWARE": value}) is aware


def test_a_bad_quota_awareness_is_refused_by_name_when_the_engine_loads() -> None:
    """DMLOPS_QUOTA_AWARE=0 leaves the budget out of the defaults; a bad value stops the
    engine's first call, naming the variable."""

    from dmlops import DmlError

    with pytest.raises(DmlError, match="DMLOPS_QUOTA_AWARE='maybe'"):
        cpu_engine.quota_aware({"DMLOPS_QUOTA_AWARE": "maybe"})
    _native()
    code = (
        "import dmlops, numpy as np; from dmlops.backends import cpu_engine; "
        "print(cpu_engine.DEFAULTS['quota_millicpus']); dmlops.join([np.ones((2, 9000))] * 2, 0)"
    )
    env = dict(os.environ, DMLOPS_QUOTA_AWARE="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split() == ["0"], done.stderr
    env["DMLOPS_QUOTA_AWARE"] = "maybe"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "DMLOPS_QUOTA_AWARE='maybe'" in done.stderr
