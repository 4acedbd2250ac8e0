"""A fork() child of a process whose other threads were inside dmlops at the moment of the
fork: dmlops' locks are free in the child, imports under way in other threads finish
first, and the child's calls answer (the engine's own pool: tests/test_cpu_engine.py)."""

from __future__ import annotations

import builtins
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import dmlops
from dmlops import _forking
from dmlops.calls import dispatch

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here"),
    # (Python 3.12 warns of every fork in a process with threads: here they are the point)
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def _in_a_child(work: Callable[[], bool], timeout: float = 30.0) -> str:
    """Fork; the child runs `work` and exits 0 where it returns True. 'ok', 'failed', or
    'hung' where the child has not exited by `timeout` (then it is killed)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - (the child's coverage is not gathered)
        code = 1
        try:
            code = 0 if work() else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "ok" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


def _held_by_another_thread(held: threading.Lock | threading.RLock) -> Callable[[], None]:
    """Another thread takes `held` and keeps it until the returned function is called."""
    taken, let_go = threading.Event(), threading.Event()

    def keep() -> None:
        with held:
            taken.set()
            let_go.wait()

    thread = threading.Thread(target=keep)
    thread.start()
    assert taken.wait(10)

    def release() -> None:
        let_go.set()
        thread.join()

    return release


@pytest.mark.parametrize("make", [_forking.lock, _forking.rlock])
def test_a_lock_another_thread_holds_is_free_in_a_forked_child(
    make: Callable[[], threading.Lock | threading.RLock],
) -> None:
    held = make()
    release = _held_by_another_thread(held)
    try:
        assert _in_a_child(lambda: held.acquire(timeout=5)) == "ok"
        assert not held.acquire(blocking=False)  # (the parent's is still held)
    finally:
        release()


def test_a_child_forked_while_another_thread_holds_the_call_cache_answers() -> None:
    """The cache of compiled calls, taken by another thread (as a call that adds a new
    signature takes it) at the moment of the fork: the child's new call finishes right."""
    x = np.arange(7 * 11, dtype=np.float32).reshape(7, 11)
    release = _held_by_another_thread(dispatch._CACHE._lock)
    try:

        def call() -> bool:
            got = dmlops.slice1(x, [1, 0], [5, 11], [1, -3])  # (a signature not seen before)
            return bool(np.array_equal(got, x[1:6, 10::-3]))

        assert _in_a_child(call) == "ok"
    finally:
        release()


def _blocking_module(folder: Path, name: str) -> threading.Event:
    """A module `name` in `folder` (put on sys.path) whose import waits for the returned
    event."""
    gate = threading.Event()
    (folder / f"{name}.py").write_text(
        f"import builtins\nbuiltins.__dict__['_gate_{name}'].wait(30)\nVALUE = 7\n"
    )
    vars(builtins)[f"_gate_{name}"] = gate
    sys.path.insert(0, str(folder))
    return gate


def _import_in_a_thread(name: str) -> threading.Thread:
    thread = threading.Thread(target=__import__, args=(name,))
    thread.start()
    deadline = time.monotonic() + 10
    while name not in _forking.imports_of_other_threads():
        assert time.monotonic() < deadline, "the import did not start"
        time.sleep(0.001)
    return thread


def test_a_child_forked_while_another_thread_imports_a_module_imports_it_anew(
    tmp_path: Path,
) -> None:
    """Without the repair the child would find the module's import lock taken by a thread it
    does not have, and its import would hang; the parent does not wait for the import."""
    name = "dmlops_fork_probe_anew"
    gate = _blocking_module(tmp_path, name)
    try:
        thread = _import_in_a_thread(name)

        def import_it() -> bool:
            gate.set()  # (the child's own copy of the gate: its import runs through)
            return bool(__import__(name).VALUE == 7)

        assert _in_a_child(import_it) == "ok"
        assert name in _forking.imports_of_other_threads()  # (the parent did not wait for it)
        gate.set()
        thread.join()
        assert __import__(name).VALUE == 7
    finally:
        gate.set()
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
        vars(builtins).pop(f"_gate_{name}")


def test_a_child_keeps_the_import_its_forking_thread_has_under_way(tmp_path: Path) -> None:
    """A module whose import (in the forking thread) forks: in the child its import is still
    under way, and the repair leaves it so."""
    name = "dmlops_fork_probe_own_fork"
    (tmp_path / f"{name}.py").write_text(
        "import os, sys\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        f"    os._exit(0 if sys.modules[{name!r}].__spec__._initializing else 1)\n"
        "STATUS = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        assert __import__(name).STATUS == 0
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_imports_of_other_threads_leaves_out_this_threads_own(tmp_path: Path) -> None:
    """A module whose import (in this thread) asks: its own import is not another's."""
    name = "dmlops_fork_probe_own"
    (tmp_path / f"{name}.py").write_text(
        "from dmlops import _forking\nSEEN = _forking.imports_of_other_threads()\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        assert __import__(name).SEEN == []
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_every_lock_of_dmlops_comes_from_forking() -> None:
    """A lock made with threading directly would stay taken in a forked child."""
    import re

    source = Path(dmlops.__file__).parent
    made = [
        f"{path.relative_to(source)}:{number}"
        for path in sorted(source.rglob("*.py"))
        if path.name != "_forking.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\b(R?Lock|Condition|Semaphore|BoundedSemaphore)\(", line)
        and not line.lstrip().startswith("#")
    ]
    assert made == []
