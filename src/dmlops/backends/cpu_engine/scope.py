"""Calls made as tasks of a scheduler that spreads its tasks over the cores and accounts for
their memory itself (dask's workers, and any like them).

Inside `scheduler_task()`, on this thread: calls run on the calling thread alone (the
scheduler keeps the other cores busy with other tasks), new outputs take numpy's memory
(freed to the system when dropped, as the scheduler's accounting expects; the engine's cache
of dropped outputs would show as memory the scheduler cannot see), and small indexed copies
stay on numpy's path (numba, which compiles them, adds about 100 MiB to a process: a worker
with a memory limit of a few hundred MiB pauses on it).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["in_scheduler_task", "scheduler_task"]

_IN_TASK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "dmlops_scheduler_task", default=False
)


@contextlib.contextmanager
def scheduler_task() -> Iterator[None]:
    """Run the calls inside as one task of a scheduler (see the module's note)."""
    token = _IN_TASK.set(True)
    try:
        yield
    finally:
        _IN_TASK.reset(token)


def in_scheduler_task() -> bool:
    """Whether this thread's calls run inside `scheduler_task()`."""
    return _IN_TASK.get()
