"""The contention section's CPU-quota conditions: the control group it makes (cgroup v2,
else v1; written into a stand-in file system here) and how it names them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dmlops.bench import contention
from dmlops.bench.cpu_quota import make_quota_group


def test_a_v2_group_gets_cpu_max_and_reads_its_throttled_periods(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    group = make_quota_group(1.5, tmp_path)
    assert group.version == 2
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    assert (group.path / "cpu.max").read_text() == "150000 100000"
    (group.path / "cpu.stat").write_text("usage_usec 10\nnr_periods 9\nnr_throttled 4\n")
    assert group.throttled() == 4
    group.enter()
    assert (group.path / "cgroup.procs").read_text() == str(os.getpid())


def test_a_v1_group_where_no_v2_cpu_controller_is(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("memory\n")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    group = make_quota_group(0.5, tmp_path)
    assert group.version == 1
    assert (group.path / "cpu.cfs_quota_us").read_text() == "50000"
    assert (group.path / "cpu.cfs_period_us").read_text() == "100000"
    (group.path / "cpu.stat").write_text("nr_periods 3\nnr_throttled 0\nthrottled_time 0\n")
    assert group.throttled() == 0
    for name in ("cpu.stat", "cpu.cfs_quota_us", "cpu.cfs_period_us"):
        (group.path / name).unlink()
    group.remove()
    assert not group.path.exists()


def test_a_v1_group_gets_a_twin_where_cpuacct_is_a_hierarchy_of_its_own(tmp_path: Path) -> None:
    """As container runtimes on such hosts do: the twin counts the group's CPU time."""
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpuacct").mkdir()
    (tmp_path / "cpuacct" / "cpuacct.usage").write_text("5\n")
    group = make_quota_group(2.5, tmp_path)
    assert group.twins == (tmp_path / "cpuacct" / group.path.name,)
    group.enter()
    for made in (group.path, *group.twins):
        assert (made / "cgroup.procs").read_text() == str(os.getpid())
        for name in made.iterdir():
            name.unlink()
    group.remove()
    assert not group.path.exists() and not group.twins[0].exists()


def test_no_cpu_controller_is_said(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="no cgroup with a CPU quota can be made here"):
        make_quota_group(1.5, tmp_path)


def test_quota_conditions_are_named_by_their_cpus() -> None:
    assert contention.quota_conditions([1.5, 2.0]) == ("quota 1.5", "quota 2")


def test_the_own_groups_throttled_periods_v2_then_v1(tmp_path: Path) -> None:
    from dmlops.bench.cpu_quota import own_throttled

    membership = tmp_path / "cgroup"
    membership.write_text("4:cpu,cpuacct:/job\n0::/pod/app\n")
    (tmp_path / "pod" / "app").mkdir(parents=True)
    (tmp_path / "cpu" / "job").mkdir(parents=True)
    (tmp_path / "cpu" / "job" / "cpu.stat").write_text("nr_periods 5\nnr_throttled 2\n")
    assert own_throttled(tmp_path, membership) == 2  # (v2's group has no cpu.stat)
    (tmp_path / "pod" / "app" / "cpu.stat").write_text("usage_usec 1\nnr_throttled 7\n")
    assert own_throttled(tmp_path, membership) == 7
    assert own_throttled(tmp_path, tmp_path / "missing") is None


def test_a_quota_condition_the_machine_refuses_is_left_out_and_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where no group can be made (not root, a read-only cgroup file system), the quota's
    condition is left out, saying why, and the others still run."""
    ran = []

    def measured(condition: str, calls: int) -> list[dict[str, object]]:
        if condition.startswith("quota "):
            raise OSError("no cgroup with a CPU quota can be made here: read-only")
        ran.append(condition)
        row = {"case": "a case", "bytes": 4, "times": {"dmlops": [1e-3, 2e-3]}}
        return [row, {"threads": 2}]

    monkeypatch.setattr(contention, "_in_condition", measured)
    results = contention.run(5, ("idle", "quota 1.5", "1 busy"))
    assert ran == ["idle", "1 busy"] and len(results) == 2
    assert "left out cpu: quota 1.5 (no cgroup with a CPU quota can be made here" in (
        capsys.readouterr().err
    )
    monkeypatch.setattr(contention, "_in_condition", lambda c, n: (_ for _ in ()).throw(OSError()))
    with pytest.raises(OSError):  # (another condition's failure is not hidden)
        contention.run(5, ("idle",))


def test_a_groups_stopped_time_from_v2_and_v1_statistics(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    group = make_quota_group(1.5, tmp_path)
    (group.path / "cpu.stat").write_text("usage_usec 10\nnr_throttled 4\nthrottled_usec 2500\n")
    assert (group.throttled(), group.throttled_ms()) == (4, 2.5)
    (group.path / "cpu.stat").write_text("nr_periods 3\nnr_throttled 1\nthrottled_time 3000000\n")
    assert (group.throttled(), group.throttled_ms()) == (1, 3.0)
