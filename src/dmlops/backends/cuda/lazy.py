"""CuPy, imported when first needed.

A call on torch tensors needs only CUDA's runtime and driver bindings, which CuPy ships as
`cupy_backends` (a few milliseconds to import, where `import cupy` takes a tenth of a second
or more): the backend holds a `LazyCupy` that answers `cuda.runtime` and `cuda.driver` from
them and imports CuPy itself at the first use of anything else (a CuPy array, its memory
pool, an elementwise kernel). Before that, `ndarray` is a class of which nothing is an
instance: no CuPy array can exist while CuPy is not imported.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LazyCupy"]


class _NoCupyArray:
    """Stands for `cupy.ndarray` while CuPy is not imported."""


class _LazyCuda:
    """`cupy.cuda`: its runtime and driver at once, anything else from CuPy."""

    def __init__(self, runtime: Any, driver: Any, parent: LazyCupy) -> None:
        self.runtime = runtime
        self.driver = driver
        self._parent = parent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parent.module().cuda, name)


class LazyCupy:
    """The `cupy` module, imported at the first use of anything but `cuda.runtime`,
    `cuda.driver` and `ndarray`."""

    def __init__(self, runtime: Any, driver: Any) -> None:
        self.cuda = _LazyCuda(runtime, driver, self)

    @staticmethod
    def module() -> Any:
        """CuPy itself (imported now if it is not yet)."""
        import cupy

        return cupy

    @staticmethod
    def imported() -> bool:
        """Whether CuPy is imported (by anyone)."""
        return sys.modules.get("cupy") is not None

    def __getattr__(self, name: str) -> Any:
        if name == "ndarray" and not self.imported():
            return _NoCupyArray
        return getattr(self.module(), name)
