"""A CPU quota for the contention section's "quota" conditions: a control group of its own
with a CFS quota (cgroup v2 `cpu.max`, else v1 `cpu.cfs_quota_us`), as a container runtime
sets one (`docker run --cpus 1.5`, a Kubernetes CPU limit of 1500m), that a measuring process
starts in; and how many periods the kernel stopped that group in (`nr_throttled`). Making
one needs root and a writable cgroup file system."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from ..backends.cpu_engine.cgroups import cpu_groups

__all__ = ["QuotaGroup", "make_quota_group", "own_throttled"]

_ROOT = Path("/sys/fs/cgroup")
_PERIOD_US = 100_000  # (the kernel's default period)


def _stat(stat: Path) -> dict[str, int]:
    """A `cpu.stat` file's counters ({} where it cannot be read)."""
    try:
        text = stat.read_text()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            found[name] = int(value)
    return found


def _nr_throttled(stat: Path) -> int | None:
    return _stat(stat).get("nr_throttled")


def own_throttled(root: Path = _ROOT, membership: Path = Path("/proc/self/cgroup")) -> int | None:
    """Periods in which the kernel stopped this process's own group (cgroup v2, else v1's
    cpu hierarchy), or None where no group with a quota's statistics is found."""
    for group in cpu_groups(root, membership):
        found = _nr_throttled(group / "cpu.stat")
        if found is not None:
            return found
    return None


class QuotaGroup:
    """A group whose processes share `cpus` CPUs of quota a period (with, on cgroup v1
    where cpuacct is a hierarchy of its own, its twin there that counts their CPU time, as
    container runtimes make one)."""

    def __init__(self, path: Path, cpus: float, version: int, twins: tuple[Path, ...] = ()) -> None:
        self.path, self.cpus, self.version, self.twins = path, cpus, version, twins

    def enter(self) -> None:
        """Move the calling process into the group (a child's `preexec_fn`)."""
        for group in (self.path, *self.twins):
            (group / "cgroup.procs").write_text(str(os.getpid()))

    def throttled(self) -> int:
        """Periods in which the kernel stopped the group for having spent its quota."""
        return _nr_throttled(self.path / "cpu.stat") or 0

    def throttled_ms(self) -> float:
        """Milliseconds the kernel held the group stopped (v2 `throttled_usec`, v1
        `throttled_time`; summed over its CPUs)."""
        fields = _stat(self.path / "cpu.stat")
        if "throttled_usec" in fields:
            return fields["throttled_usec"] / 1e3
        return fields.get("throttled_time", 0) / 1e6

    def remove(self) -> None:
        """Remove the group (empty by then: its processes have ended)."""
        for group in (self.path, *self.twins):
            with contextlib.suppress(OSError):
                group.rmdir()


def _v2(cpus: float, root: Path) -> QuotaGroup | None:
    controllers = root / "cgroup.controllers"
    if not controllers.exists() or "cpu" not in controllers.read_text().split():
        return None
    (root / "cgroup.subtree_control").write_text("+cpu")
    path = root / f"dmlops-bench-{os.getpid()}"
    path.mkdir(exist_ok=True)
    (path / "cpu.max").write_text(f"{round(cpus * _PERIOD_US)} {_PERIOD_US}")
    return QuotaGroup(path, cpus, 2)


def _v1(cpus: float, root: Path) -> QuotaGroup | None:
    hierarchy = root / "cpu"
    if not (hierarchy / "cpu.cfs_quota_us").exists():
        return None
    path = hierarchy / f"dmlops-bench-{os.getpid()}"
    path.mkdir(exist_ok=True)
    (path / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
    (path / "cpu.cfs_quota_us").write_text(str(round(cpus * _PERIOD_US)))
    accounting = root / "cpuacct"
    twins: tuple[Path, ...] = ()
    if (accounting / "cpuacct.usage").exists() and not (path / "cpuacct.usage").exists():
        twin = accounting / path.name
        twin.mkdir(exist_ok=True)
        twins = (twin,)
    return QuotaGroup(path, cpus, 1, twins)


def make_quota_group(cpus: float, root: Path = _ROOT) -> QuotaGroup:
    """A new group with a quota of `cpus` CPUs; OSError (saying why) where this process may
    not make one."""
    makers: list[Callable[[float, Path], QuotaGroup | None]] = [_v2, _v1]
    for make in makers:
        try:
            group = make(cpus, root)
        except OSError as error:
            raise OSError(f"no cgroup with a CPU quota can be made here: {error}") from error
        if group is not None:
            return group
    raise OSError(f"no cgroup with a CPU quota can be made here: no cpu controller under {root}")
