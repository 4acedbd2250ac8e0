"""What a container's control groups grant this process: its CPU quota (cgroup v2
`cpu.max`, v1 `cpu.cfs_quota_us`) and its memory limit (v2 `memory.max`, v1
`memory.limit_in_bytes`), each the smallest of the process's own group and every group
above it. None where no limit is set or none can be read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

__all__ = [
    "cpu_groups",
    "cpu_quota",
    "cpu_quota_all",
    "cpu_quota_files",
    "cpu_quota_period",
    "cpu_quota_usage",
    "memory_limit",
]

_ROOT = Path("/sys/fs/cgroup")
# (CPUs, period in µs, group, cgroup version) of a quota
_Binding = tuple[float, int, Path, int]
_MEMBERSHIP = Path("/proc/self/cgroup")


def _own_groups(root: Path, membership: Path) -> list[Path]:
    """The process's cgroup v2 group and every group above it, innermost first."""
    return _groups_of(root, membership, lambda controllers: controllers == "", [""])


def _v1_groups(root: Path, membership: Path, controller: str) -> list[Path]:
    """The process's group in cgroup v1's `controller` hierarchy and every group above it,
    innermost first, under each place that hierarchy may be mounted (`cpu`, `cpu,cpuacct`):
    a host's process in a group of its own (a systemd unit, a batch job) reads its group's
    files; a container that mounts its own group as the hierarchy's root finds no such path
    below it and reads the root's."""
    return _groups_of(
        root, membership, lambda controllers: controller in controllers.split(","), [controller]
    )


def _groups_of(
    root: Path, membership: Path, wanted: Callable[[str], bool], mounts: list[str]
) -> list[Path]:
    """The groups of the membership line `wanted` picks (by its controllers), innermost
    first, under each of the hierarchy's mount places (`mounts` where no line names it)."""
    own = ""
    try:
        for line in membership.read_text().splitlines():
            _, _, rest = line.partition(":")
            controllers, _, path = rest.partition(":")
            if wanted(controllers) and path.startswith("/"):
                own = path.strip("/")
                if controllers:
                    names = controllers.split(",")
                    mounts = list(dict.fromkeys([*names, controllers, ",".join(names[::-1])]))
    except OSError:
        pass
    parts = [p for p in own.split("/") if p]
    found = []
    for mount in mounts:
        base = root / mount if mount else root
        found += [base.joinpath(*parts[:k]) for k in range(len(parts), -1, -1)]
    return found


def cpu_groups(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> list[Path]:
    """The process's groups that a CPU quota may be set on, innermost first: cgroup v2's,
    then those of v1's `cpu` hierarchy."""
    return _own_groups(root, membership) + _v1_groups(root, membership, "cpu")


def _fields(path: Path) -> list[str] | None:
    try:
        return path.read_text().split()
    except OSError:
        return None


def cpu_quota(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> float | None:
    """The CPUs a cgroup quota grants this process (2.5 for "250000 100000"), or None where
    no quota is set or none can be read: cgroup v2's `cpu.max` of the process's own group
    and each group above it (the smallest counts), else v1's `cpu.cfs_quota_us` likewise."""
    found = cpu_quota_period(root, membership)
    return None if found is None else found[0]


def cpu_quota_period(
    root: Path = _ROOT, membership: Path = _MEMBERSHIP
) -> tuple[float, int] | None:
    """(the CPUs of the smallest quota over this process, that quota's period in µs), or
    None (see cpu_quota)."""
    found = _binding_quota(root, membership)
    return None if found is None else (found[0], found[1])


def cpu_quota_usage(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> Path | None:
    """The file that counts the CPU time of every process in the group whose quota binds
    this process (v2 `cpu.stat`, whose first line is `usage_usec`; v1 `cpuacct.usage` of the
    same group, where the cpuacct hierarchy holds it and this process is in it), or None
    where there is no quota or no such file can be read."""
    return _usage_of(_binding_quota(root, membership), root, membership)


def cpu_quota_files(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> tuple[str, str]:
    """The files that set the quota binding this process: (v2 `cpu.max`, ""), or (v1
    `cpu.cfs_quota_us`, `cpu.cfs_period_us`) of its group; ("", "") where no quota binds."""
    return _files_of(_binding_quota(root, membership))


def cpu_quota_all(
    root: Path = _ROOT, membership: Path = _MEMBERSHIP
) -> tuple[tuple[float, int] | None, Path | None, tuple[str, str]]:
    """cpu_quota_period's, cpu_quota_usage's and cpu_quota_files' answers from one reading
    of the groups (what the engine is told when it loads)."""
    found = _binding_quota(root, membership)
    period = None if found is None else (found[0], found[1])
    return period, _usage_of(found, root, membership), _files_of(found)


def _usage_of(found: _Binding | None, root: Path, membership: Path) -> Path | None:
    if found is None:
        return None
    group = found[2]
    if found[3] == 2:
        usage = group / "cpu.stat"
        fields = _fields(usage)
        return usage if fields and fields[0] == "usage_usec" else None
    for usage in _v1_usage_files(root, membership, group):
        fields = _fields(usage)
        if fields and fields[0].isdigit():
            return usage
    return None


def _files_of(found: _Binding | None) -> tuple[str, str]:
    if found is None:
        return "", ""
    if found[3] == 2:
        return str(found[2] / "cpu.max"), ""
    return str(found[2] / "cpu.cfs_quota_us"), str(found[2] / "cpu.cfs_period_us")


def _v1_usage_files(root: Path, membership: Path, group: Path) -> list[Path]:
    """Where v1 may count the CPU time of the processes of `group` (a group of the cpu
    hierarchy this process is in or below): beside its quota where cpu and cpuacct share a
    hierarchy, else the cpuacct hierarchy's group of the same place, where this process is
    in that one too (as container runtimes and systemd mirror the two)."""
    place = _place(root, group)
    mirrored = [
        g / "cpuacct.usage"
        for g in _v1_groups(root, membership, "cpuacct")
        if _place(root, g) == place
    ]
    return [group / "cpuacct.usage", *mirrored]


def _place(root: Path, group: Path) -> tuple[str, ...]:
    """A v1 group's path below its hierarchy's mount place."""
    return group.relative_to(root).parts[1:]


def _binding_quota(root: Path, membership: Path) -> _Binding | None:
    """(CPUs, period in µs, group, cgroup version) of the smallest quota over this process:
    cgroup v2's `cpu.max` of the process's own group and each group above it, else v1's
    `cpu.cfs_quota_us` likewise."""
    found: list[_Binding] = []
    for group in _own_groups(root, membership):
        fields = _fields(group / "cpu.max")
        if fields is None or len(fields) < 2 or fields[0] == "max":
            continue
        _add_quota(found, fields[0], fields[1], group, 2)
    if not found:
        for group in _v1_groups(root, membership, "cpu"):
            quota, period = (
                _fields(group / "cpu.cfs_quota_us"),
                _fields(group / "cpu.cfs_period_us"),
            )
            if quota and period:
                _add_quota(found, quota[0], period[0], group, 1)
    return min(found, key=lambda q: (q[0], q[1])) if found else None


def _add_quota(
    found: list[_Binding],
    quota_text: str,
    period_text: str,
    group: Path,
    version: int,
) -> None:
    try:
        quota, period = int(quota_text), int(period_text)
    except ValueError:
        return
    if quota > 0 and period > 0:
        found.append((quota / period, period, group, version))


# cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit number, or near it
_V1_UNLIMITED = 1 << 62


def memory_limit(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> int | None:
    """The bytes of memory a cgroup limit grants this process, or None where no limit is
    set or none can be read: cgroup v2's `memory.max` of the process's own group and each
    group above it (the smallest counts), else v1's `memory.limit_in_bytes`."""
    found: list[int] = []
    for group in _own_groups(root, membership):
        fields = _fields(group / "memory.max")
        if not fields or fields[0] == "max":
            continue
        try:
            found.append(int(fields[0]))
        except ValueError:
            continue
    if found:
        return max(0, min(found))
    limits = []
    for group in _v1_groups(root, membership, "memory"):
        fields = _fields(group / "memory.limit_in_bytes")
        try:
            limit = int(fields[0]) if fields else -1
        except ValueError:
            continue
        if 0 <= limit < _V1_UNLIMITED:
            limits.append(limit)
    return min(limits) if limits else None
