"""Which GPU and which stream a call runs on: its arrays' device, their library's current
stream there (torch's for torch tensors, CuPy's otherwise), or a stream the caller names.

A queue is `(device ordinal, stream handle)`: DirectML's command queue in CUDA terms.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import BindingError, DmlError

__all__ = [
    "Queue",
    "current_stream_function",
    "device_of",
    "is_torch",
    "queue_function",
    "stream_handle",
    "torch_module",
]

Queue = tuple[int, int]


def torch_module() -> Any:
    """The torch module if it is already imported (never imported here)."""
    return sys.modules.get("torch")


def is_torch(obj: Any) -> bool:
    """Whether `obj` is a torch tensor (torch is never imported here)."""
    torch = torch_module()
    return torch is not None and isinstance(obj, torch.Tensor)


def device_of(cupy: Any, obj: Any) -> int:
    """The ordinal of the GPU that holds an array or buffer."""
    if isinstance(obj, cupy.ndarray):
        return int(obj.data.device_id)
    if is_torch(obj):
        index = obj.get_device()
        if index < 0:
            raise BindingError("a torch tensor on the CPU is not a GPU array")
        return int(index)
    if isinstance(obj, (cupy.cuda.MemoryPointer, cupy.cuda.memory.BaseMemory)):
        return int(obj.device_id)
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is not None:
        try:
            return int(dlpack_device()[1])
        except Exception:  # noqa: BLE001 - a foreign protocol may fail any way; ask the driver
            pass
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        attributes = cupy.cuda.runtime.pointerGetAttributes(int(cai["data"][0]))
        return int(attributes.device)
    return int(cupy.cuda.runtime.getDevice())


def stream_handle(stream: Any) -> int:
    """The raw `cudaStream_t` of a torch or CuPy stream, a `__cuda_stream__` object or an int."""
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise DmlError(
        f"stream: {type(stream).__name__} is not a CUDA stream (give a torch or CuPy stream, "
        "an object with __cuda_stream__, or a cudaStream_t as an int)"
    )


def current_stream_function(cupy: Any, torch_arrays: bool) -> Callable[[int], int]:
    """device -> the raw handle of the current stream of the arrays' library on it."""
    torch = torch_module() if torch_arrays else None
    if torch is not None:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw  # type: ignore[no-any-return]
        return lambda device: int(torch.cuda.current_stream(device).cuda_stream)
    get = cupy.cuda.get_current_stream
    return lambda device: int(get(device).ptr)


def queue_function(cupy: Any, named: Sequence[tuple[str, Any]]) -> Callable[[Any], Queue]:
    """For a call's arrays (named for errors): stream -> the queue to run on, where a stream
    of None means the current one. Arrays on two GPUs raise BindingError, naming both."""
    device: int | None = None
    first = ""
    for name, obj in named:
        here = device_of(cupy, obj)
        if device is None:
            device, first = here, name
        elif here != device:
            raise BindingError(
                f"{first} is on cuda:{device} and {name} on cuda:{here}: "
                "the arrays of one call must be on one GPU"
            )
    if device is None:
        device = int(cupy.cuda.runtime.getDevice())
    current = current_stream_function(cupy, any(is_torch(obj) for _, obj in named))
    ordinal = device

    def queue(stream: Any = None) -> Queue:
        return ordinal, current(ordinal) if stream is None else stream_handle(stream)

    return queue
