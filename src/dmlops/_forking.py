"""What a fork() child needs of its parent's Python state: dmlops' locks free and every
module importable. A thread other than the forking one may hold a lock of dmlops (the cache
of compiled calls, a backend's tables) or be importing a module (a first call's lazy import)
at the moment of the fork; only the forking thread lives on in the child, so that lock, or
that module's import lock, would stay taken there for ever and the child's first call would
hang. dmlops' locks come from `lock()` / `rlock()`, which the child gets back free; a module
whose import another thread had under way is forgotten in the child (its import lock and
its half-made module), so that the child's next import of it runs it anew. The parent is
not held up: nothing waits before the fork.
"""

from __future__ import annotations

import importlib._bootstrap as _bootstrap
import os
import sys
import threading
import weakref
from typing import Any

__all__ = ["imports_of_other_threads", "lock", "rlock"]

_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()


def lock() -> threading.Lock:
    """A `threading.Lock` that a fork() child has free, whoever held it in the parent."""
    made = threading.Lock()
    _LOCKS.add(made)
    return made


def rlock() -> threading.RLock:
    """A `threading.RLock` that a fork() child has free, whoever held it in the parent."""
    made = threading.RLock()
    _LOCKS.add(made)
    return made


def _module_locks() -> dict[str, Any]:
    """Python's import locks by module name (weak references), or {} where it keeps none."""
    locks = getattr(_bootstrap, "_module_locks", None)
    return locks if isinstance(locks, dict) else {}


def imports_of_other_threads() -> list[str]:
    """The modules whose import a thread other than this one has under way (their import
    locks' owners, as Python's import system keeps them; none where it keeps no owner)."""
    me = threading.get_ident()
    names = []
    for name, ref in list(_module_locks().items()):
        held = ref() if callable(ref) else None
        owner = getattr(held, "owner", None)
        if owner is not None and owner != me:
            names.append(str(name))
    return names


def _forget_abandoned_imports() -> None:
    """In a child: the imports the parent's other threads had under way will never finish
    here; drop their import locks (the next import makes a free one) and their half-made
    modules (the next import runs the module again)."""
    locks = _module_locks()
    for name in imports_of_other_threads():
        locks.pop(name, None)
        module = sys.modules.get(name)
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            del sys.modules[name]


def _after_fork_in_child() -> None:
    """Every lock of dmlops free, and the other threads' imports forgotten."""
    for held in list(_LOCKS):
        held._at_fork_reinit()
    _forget_abandoned_imports()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
