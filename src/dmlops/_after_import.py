"""A callback run once a named top-level module has been imported (a post-import hook):
dmlops registers its torch operators when torch comes after it, before any code can trace
a call (torch.compile substitutes the functional calls only where they are registered
before it starts tracing)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["after_import"]


def after_import(name: str, callback: Callable[[], object]) -> None:
    """Run `callback` now if module `name` is imported, else right after its import
    completes (once; an error of the callback is a warning: the import itself stands)."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _Finder(name, callback))


class _Finder(importlib.abc.MetaPathFinder):
    """Finds `name` through the finders after it, the loader wrapped to run the callback.
    It stays in place until the module has been executed: a look that imports nothing
    (`importlib.util.find_spec`, as libraries ask whether torch is installed) leaves it."""

    def __init__(self, name: str, callback: Callable[[], object]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self)
        return spec

    def done(self) -> None:
        """The module is imported: off the finders, the callback run."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        try:
            self.callback()
        except Exception as e:  # noqa: BLE001 - the module's import stands either way
            warnings.warn(f"dmlops could not prepare for {self.name}: {e!r}", stacklevel=3)


class _Loader(importlib.abc.Loader):
    """The module's own loader, which it keeps (as `__loader__` and its spec's loader);
    the finder's callback runs after it has executed the module."""

    def __init__(self, loader: Any, finder: _Finder) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        made: ModuleType | None = self.loader.create_module(spec)
        return made

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.done()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.loader, attribute)
