"""What every backend is: an Executor per plan, the Backend protocol, the queue of a
backend that has only one, and each backend's one shared object."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar

from .. import _forking
from ..plan import Plan

__all__ = ["Backend", "Executor", "no_queue", "made_once"]

_T = TypeVar("_T")
_MAKING = _forking.rlock()


def made_once(cls: type[_T]) -> _T:
    """`cls`'s shared object (its `_instance`), made by one thread however many first ask at
    once (two CUDA or WebGPU backends would keep two sets of caches, or two devices)."""
    found: _T | None = getattr(cls, "_instance", None)
    if found is None:
        with _MAKING:
            found = getattr(cls, "_instance", None)
            if found is None:
                found = cls()
                setattr(cls, "_instance", found)  # noqa: B010 - (a type variable has no slot)
    return found


class Executor(Protocol):
    """Runs one plan: on flat buffers given per call, or bound once and dispatched.

    `queue` is what `Backend.queue` gave for the call (the device and stream it runs on);
    None means the backend's default (for CUDA, the current device and CuPy's stream)."""

    def __call__(self, inputs: Sequence[Any], outputs: Sequence[Any], queue: Any = None, /) -> None:
        """Run the plan on these flat input and output buffers."""

    def bound(self, inputs: Sequence[Any], outputs: Sequence[Any], /) -> Callable[..., None]:
        """Everything per binding done once; the returned call (given a queue, or none for
        the default) runs the plan."""


class Backend(Protocol):
    """Executes strided-copy plans over flat byte buffers of its own kind.

    A flat buffer is what `byte_view` or `flat` returns: a numpy array for the
    numpy backend, a device address for the cuda backend.

    Optional, for cheaper warm calls (the callers fall back where a backend lacks them):
    `many_array_keys()` (keys of many arrays at once), `own(array)` (whether compiled calls
    take an array as it is; others are bound through `as_array` each call),
    `flats_are_addresses` (flat buffers are ints), `fresh_bindings(inputs, outputs)`
    (pointers and queue of buffers made for a call) and
    `lean_bindings(arrays, in_lows, out_lows)` (an array's address, a new-output function
    and a maker of one output shape's new outputs, for a call's arrays: CUDA's, for torch
    tensors), `owners(arrays)` and `addresses(flats)` (`owner` and `address` of many at
    once: numpy's, in C).
    """

    name: str
    one_queue: bool  # every call runs on one queue: `placement` always gives None

    def as_array(self, obj: Any) -> Any:
        """`obj` as this backend's array type, without a copy where possible."""

    def describe(self, obj: Any) -> Any:
        """An array's dtype, shape, byte strides and flags, read without moving or waiting."""

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        """For each array type this backend takes, a function giving its call-signature key."""

    def placement(self, named: Sequence[tuple[str, Any]]) -> Callable[[Any], Any]:
        """For a call's (binding name, array or buffer) pairs: stream -> where the call runs
        (None: the current stream of the arrays' library). Raises BindingError, naming two
        bindings, where the arrays are on different devices."""

    def byte_view(self, obj: Any, writable: bool) -> tuple[Any, int]:
        """(flat buffer, length in bytes) of a bound buffer-like object, without a copy."""

    def window(self, flat: Any, offset: int, size: int) -> Any:
        """The flat buffer of `size` bytes starting `offset` bytes into `flat`."""

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Any] | None:
        """For arrays of one layout: array -> flat buffer of its `nbytes` bytes starting `low`
        bytes from its index 0; None where the array itself is that buffer."""

    def owner(self, obj: Any) -> object | None:
        """The object that owns the memory of a buffer or array, where that is known."""

    def address(self, flat: Any) -> int:
        """The address of a flat buffer's first byte."""

    def new_like(self, template: Any, shape: tuple[int, ...], dtype: Any = None) -> Any:
        """A new C-contiguous array of `shape`, of `template`'s library and device, and of its
        dtype (or of `dtype`, a numpy dtype, where given)."""

    def in_library_of(self, result: Any, template: Any) -> Any:
        """A result array of this backend in the array library of `template` (an input of
        a call), without a copy where the libraries share memory."""

    def copy_of(self, arr: Any) -> Any:
        """A C-contiguous copy of an array, on its device, in its library."""

    def upload(self, host: Any) -> Any:
        """A copy of a host (numpy) array in this backend's memory."""

    def download(self, arr: Any, out: Any = None) -> Any:
        """A host (numpy) copy of one of this backend's arrays, written into `out` if given."""

    def executor(self, plan: Plan) -> Executor:
        """What runs `plan` on flat buffers, with per-call work only."""


def no_queue(stream: Any = None) -> None:
    """The queue of a backend with one (host copies, WebGPU's device queue): nothing to
    choose, and a stream is ignored."""
    return None
