"""Backends execute plans; they know nothing of operators."""

from __future__ import annotations

from ..errors import DmlError
from .base import Backend, Executor, no_queue

__all__ = ["Backend", "Executor", "get_backend", "no_queue", "BACKEND_NAMES"]

BACKEND_NAMES = ("numpy", "cuda", "webgpu")


def get_backend(name: str) -> Backend:
    """The backend called `name` ('numpy', 'cuda' or 'webgpu')."""
    if name == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend.instance()
    if name == "cuda":
        from .cuda import CudaBackend

        return CudaBackend.instance()
    if name == "webgpu":
        from .webgpu import WebGpuBackend

        return WebGpuBackend.instance()
    raise DmlError(f"backend {name!r} is not one of {', '.join(BACKEND_NAMES)}")
