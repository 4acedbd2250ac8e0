"""Backends execute plans; they know nothing of operators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..errors import DmlError
from ..plan import Plan

__all__ = ["Backend", "get_backend", "BACKEND_NAMES"]

BACKEND_NAMES = ("numpy", "cuda")


class Backend(Protocol):
    """Executes strided-copy plans over flat byte buffers of its own array type."""

    name: str

    def as_array(self, obj: Any) -> Any:
        """`obj` as this backend's array type, without a copy where possible."""

    def is_writable(self, arr: Any) -> bool:
        """Whether an array of this backend may be written."""

    def byte_view(self, obj: Any, writable: bool) -> Any:
        """A flat uint8 array over the bytes of a buffer-like object, without a copy."""

    def array_span(self, arr: Any) -> tuple[Any, int]:
        """(flat uint8 view of the memory an array spans, element offset of its index 0)."""

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A new C-contiguous array of this backend's kind."""

    def like(self, result: Any, template: Any) -> Any:
        """A new result array in the array library of `template` (no copy)."""

    def bind(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> Callable[[], None]:
        """Everything per-binding done once; the returned call runs the plan."""

    def execute(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> None:
        """Run every copy of `plan`; inputs/outputs are flat uint8 arrays."""


def get_backend(name: str) -> Backend:
    """The backend called `name` ('numpy' or 'cuda')."""
    if name == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend.instance()
    if name == "cuda":
        from .cuda_backend import CudaBackend

        return CudaBackend.instance()
    raise DmlError(f"backend {name!r} is not one of {', '.join(BACKEND_NAMES)}")
