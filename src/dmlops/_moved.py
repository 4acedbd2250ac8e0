"""Modules that moved keep their old names: importing one (`dmlops.torch_block`) gives the
module at its new place (`dmlops.torch.block`), the same module object."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "keep_old_names"]

MOVED = {
    "dmlops.torch_ops": "dmlops.torch.operators",
    "dmlops.torch_moves": "dmlops.torch.moves",
    "dmlops.torch_opaque": "dmlops.torch.opaque",
    "dmlops.torch_chains": "dmlops.torch.chains",
    "dmlops.torch_block": "dmlops.torch.block",
    "dmlops.torch_decompositions": "dmlops.torch.decompositions",
}


class _OldName(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module's old name; its module is the one at the new place."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing: the module ran when it was imported at its new place."""


def keep_old_names() -> None:
    """Install the finder of old names (once)."""
    if not any(isinstance(f, _OldName) for f in sys.meta_path):
        sys.meta_path.append(_OldName())
