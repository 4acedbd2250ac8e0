"""How many threads the CPU engine uses: the CPUs this process may run on (its affinity),
capped by a container's CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`) and by
`OMP_NUM_THREADS`, unless `DMLOPS_NUM_THREADS` or `set_num_threads` says otherwise; one
in a torch DataLoader worker, as torch itself runs there (its workers already share the
cores among themselves). Each
job then asks only the CPUs of the set that other runnable tasks leave free, unless
`DMLOPS_LOAD_AWARE=0` says not to, and the threads beyond a quota's whole CPUs only while
its budget lasts, unless `DMLOPS_QUOTA_AWARE=0` says not to."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping

from ...errors import DmlError
from .cgroups import cpu_quota

__all__ = [
    "choose_threads",
    "cpu_quota",
    "follow_quota",
    "get_num_threads",
    "in_torch_worker",
    "load_aware",
    "quota_aware",
    "set_num_threads",
]

_YES = {"", "1", "on", "yes", "true"}
_NO = {"0", "off", "no", "false"}


def _switch(environ: Mapping[str, str], name: str) -> bool:
    """An on/off variable's setting (1/on/yes/true, 0/off/no/false), on where unset."""
    named = environ.get(name, "").strip().lower()
    if named in _YES:
        return True
    if named in _NO:
        return False
    raise DmlError(f"{name}={named!r}: give 1 (on) or 0 (off)")


def load_aware(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the engine's jobs leave the CPUs that other runnable tasks hold (the running
    count of `/proc/loadavg`): `DMLOPS_LOAD_AWARE` (1/on/yes, 0/off/no), on where unset."""
    return _switch(environ, "DMLOPS_LOAD_AWARE")


def quota_aware(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the engine's jobs keep within a budget of the process's cgroup CPU quota (the
    threads beyond its whole CPUs only while the budget lasts): `DMLOPS_QUOTA_AWARE` (1/on/yes,
    0/off/no), on where unset."""
    return _switch(environ, "DMLOPS_QUOTA_AWARE")


_CHOSEN: list[int] = []  # set_num_threads' count, or the default once computed
_EXPLICIT: list[bool] = [False]  # whether set_num_threads chose it
# the quota's CPUs as its files say now (None: no quota), where the engine reads them again
# while the process runs (native/quota.h), and the quota the default count was chosen for
_QUOTA_NOW: list[Callable[[], float | None]] = []
_CHOSEN_FOR: list[float | None] = []


def _forget_default() -> None:
    """In a child after fork(): the default is chosen again there (a DataLoader worker's is
    one thread); a count set by set_num_threads carries over."""
    if not _EXPLICIT[0]:
        _CHOSEN.clear()
        _CHOSEN_FOR.clear()


def follow_quota(now: Callable[[], float | None] | None) -> None:
    """Choose the default count again whenever `now()`, the quota's CPUs as the quota's
    files say now (None: none), changes (a Kubernetes pod resized in place); None: stop."""
    _QUOTA_NOW[:] = [] if now is None else [now]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_default)


def _openmp_cap(environ: Mapping[str, str]) -> int | None:
    """`OMP_NUM_THREADS`' count (its first level where it lists several, "4,2"), or None
    where it is unset or not a whole number >= 1 (OpenMP's own setting: not dmlops' to
    refuse)."""
    first = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) >= 1 else None


def choose_threads(environ: Mapping[str, str], cpus: int, quota: float | None) -> int:
    """The engine's thread count: `DMLOPS_NUM_THREADS` where set, else the `cpus` this
    process may use, capped by the quota rounded up (a quota of 2.5 CPUs: 3 threads) and by
    `OMP_NUM_THREADS` (what Dask's workers, joblib's and batch schedulers set to keep each
    process's libraries to their share)."""
    named = environ.get("DMLOPS_NUM_THREADS", "").strip()
    if named:
        try:
            count = int(named)
        except ValueError:
            count = 0
        if count < 1:
            raise DmlError(f"DMLOPS_NUM_THREADS={named!r}: give a whole number of threads >= 1")
        return count
    threads = max(1, cpus)
    if quota is not None and quota > 0:
        threads = min(threads, max(1, math.ceil(quota)))
    cap = _openmp_cap(environ)
    return threads if cap is None else min(threads, cap)


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except OSError:
            pass
    return os.cpu_count() or 1


def in_torch_worker() -> bool:
    """Whether this process is a worker of a torch DataLoader (torch already imported)."""
    torch = sys.modules.get("torch")
    data = getattr(getattr(torch, "utils", None), "data", None)
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


def get_num_threads() -> int:
    """The CPU engine's thread count for calls on the default backend (the default follows
    a quota changed while the process runs, where the engine reads it again)."""
    if _CHOSEN_FOR and _QUOTA_NOW and _QUOTA_NOW[0]() != _CHOSEN_FOR[0]:
        _CHOSEN.clear()
    if not _CHOSEN:
        named = os.environ.get("DMLOPS_NUM_THREADS", "").strip()
        if not named and in_torch_worker():
            _CHOSEN.append(1)
        else:
            quota = _QUOTA_NOW[0]() if _QUOTA_NOW else cpu_quota()
            _CHOSEN.append(choose_threads(os.environ, _usable_cpus(), quota))
            _CHOSEN_FOR[:] = [] if named else [quota]
    return _CHOSEN[0]


def set_num_threads(count: int) -> None:
    """Use `count` threads (the calling one included) for the CPU engine's later calls, as
    `torch.set_num_threads` does for torch's."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise DmlError(f"set_num_threads({count!r}): give a whole number of threads >= 1")
    _CHOSEN[:] = [count]
    _CHOSEN_FOR.clear()
    _EXPLICIT[0] = True
