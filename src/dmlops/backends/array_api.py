"""Host arrays of other array libraries that numpy does not read directly: those that give
their memory only through DLPack (`__dlpack__`, no `__array__`), and results handed back in
the caller's array-API namespace (`__array_namespace__`: array_api_strict, ndonnx, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["dlpack_only", "host_view", "in_namespace_of", "keyed_here", "on_the_host"]

_KDLCPU = 1  # DLPack's host device type


def _numpy_reads(kind: type) -> bool:
    """Whether numpy reads arrays of this type itself (`__array__`, the array interface)."""
    return hasattr(kind, "__array__") or hasattr(kind, "__array_interface__")


def dlpack_only(obj: Any) -> bool:
    """Whether an object gives its memory through DLPack alone (numpy would make an array of
    one Python object of it)."""
    kind = type(obj)
    return hasattr(kind, "__dlpack__") and not _numpy_reads(kind)


def keyed_here(kind: type) -> bool:
    """Whether arrays of this type are keyed by their host view (`host_view`): an array-API
    array that gives DLPack (array_api_strict's, ...), or a DLPack producer numpy cannot
    read otherwise. Not other objects with `__array__` (a dask array would compute)."""
    return hasattr(kind, "__dlpack__") and (
        hasattr(kind, "__array_namespace__") or not _numpy_reads(kind)
    )


def host_view(obj: Any) -> np.ndarray[Any, Any]:
    """An array's elements as numpy reads them: through DLPack for a DLPack-only producer,
    else `numpy.asarray`."""
    return np.from_dlpack(obj) if dlpack_only(obj) else np.asarray(obj)


def on_the_host(obj: Any) -> bool:
    """Whether a DLPack producer's memory is host memory (True where it does not say)."""
    device = getattr(obj, "__dlpack_device__", None)
    if device is None:
        return True
    try:
        return int(device()[0]) == _KDLCPU
    except Exception:  # noqa: BLE001 - a foreign object's protocol may fail in any way
        return False


def in_namespace_of(result: Any, template: Any) -> Any:
    """A numpy result as an array of `template`'s array-API namespace, sharing its memory
    through DLPack where the namespace takes it (else the namespace's copy); the numpy
    array itself where the template names no namespace or the namespace takes neither."""
    namespace = getattr(template, "__array_namespace__", None)
    if namespace is None:
        return result
    try:
        xp = namespace()
    except Exception:  # noqa: BLE001 - a foreign object's protocol may fail in any way
        return result
    for make in ("from_dlpack", "asarray"):
        try:
            return getattr(xp, make)(result)
        except Exception:  # noqa: BLE001 - a namespace that refuses the type or the memory
            continue
    return result
