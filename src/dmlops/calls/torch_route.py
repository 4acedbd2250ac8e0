"""Calls on torch tensors that need autograd, tracing or the CPU go through the torch
operators (`dmlops.torch`), wired in by the package so this one never imports them."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import DmlError
from .signatures import _MANY

_TORCH_OPS: Any = None  # dmlops.torch.operators, once torch is imported
# how to load it: the package wires this in (dmlops/__init__.py), so that this module never
# imports the torch operators built on it
_TORCH_LOADER: list[Callable[[], Any]] = []


def route_torch_through(loader: Callable[[], Any]) -> None:
    """Name the loader of the torch operators that calls on torch tensors needing autograd,
    tracing or the CPU go through (called once, by the package)."""
    _TORCH_LOADER[:] = [loader]


def _torch_ops() -> Any:
    global _TORCH_OPS
    if _TORCH_OPS is None:
        if not _TORCH_LOADER:
            raise DmlError("the torch operators are not wired in: import dmlops, the package")
        _TORCH_OPS = _TORCH_LOADER[0]()
    return _TORCH_OPS


def _torch_wanted(arrays: Sequence[Any]) -> bool:
    if len(arrays) >= _MANY:  # (their types read in one pass of C calls)
        if set(map(type, arrays)) == {np.ndarray}:
            return False  # numpy arrays only
    else:
        for a in arrays:
            if type(a) is not np.ndarray:
                break
        else:
            return False  # numpy arrays only
    if _TORCH_OPS is None and "torch" not in sys.modules:
        return False
    return bool(_torch_ops().wanted(arrays))


def _through_torch(arrays: Sequence[Any]) -> bool:
    """Whether a call of an operator that has no torch custom operator (the indexed ones,
    TILE, PADDING1) on these arrays goes through `dmlops.torch.moves.moved`: a torch tensor that
    needs a gradient or is traced, or dynamo tracing the call."""
    if _TORCH_OPS is None and "torch" not in sys.modules:
        return False
    return bool(_torch_ops().moves_wanted(arrays))


def _moved(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Operator `op`'s call (its positional arguments, its keywords) through torch
    (`dmlops.torch.moves.moved`): autograd eagerly, its custom operator where it is traced."""
    return _torch_ops().moved(op, args, kwargs)
