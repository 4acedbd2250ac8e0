"""What a container's control groups grant this process: its CPU quota (cgroup v2
`cpu.max`, v1 `cpu.cfs_quota_us`) and its memory limit (v2 `memory.max`, v1
`memory.limit_in_bytes`), each the smallest of the process's own group and every group
above it. None where no limit is set or none can be read."""

from __future__ import annotations

from pathlib import Path

__all__ = ["cpu_quota", "memory_limit"]

_ROOT = Path("/sys/fs/cgroup")
_MEMBERSHIP = Path("/proc/self/cgroup")


def _own_groups(root: Path, membership: Path) -> list[Path]:
    """The process's cgroup v2 group and every group above it, innermost first."""
    own = ""
    try:
        for line in membership.read_text().splitlines():
            hierarchy, _, path = line.partition("::")
            if hierarchy == "0" and path.startswith("/"):
                own = path.strip("/")
    except OSError:
        pass
    parts = [p for p in own.split("/") if p]
    return [root.joinpath(*parts[:k]) for k in range(len(parts), -1, -1)]


def _fields(path: Path) -> list[str] | None:
    try:
        return path.read_text().split()
    except OSError:
        return None


def cpu_quota(root: Path = _ROOT, membership: Path = _MEMBERSHIP) -> float | None:
    """The CPUs a cgroup quota grants this process (2.5 for "250000 100000"), or None where
    no quota is set or none can be read: cgroup v2's `cpu.max` of the process's own group
    and each group above it (the smallest counts), else v1's `cpu.cfs_quota_us`."""
    found: list[float] = []
    for group in _own_groups(root, membership):
        fields = _fields(group / "cpu.max")
        if fields is None or len(fields) < 2 or fields[0] == "max":
            continue
        try:
            quota, period = int(fields[0]), int(fields[1])
        except ValueError:
            continue
        if quota > 0 and period > 0:
            found.append(quota / period)
    if found:
        return min(found)
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


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
    fields = _fields(root / "memory" / "memory.limit_in_bytes")
    try:
        limit = int(fields[0]) if fields else -1
    except ValueError:
        return None
    return limit if 0 <= limit < _V1_UNLIMITED else None
