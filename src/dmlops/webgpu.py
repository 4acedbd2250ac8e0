"""Arrays in WebGPU memory for the webgpu backend (extra `dmlops[webgpu]`).

    import dmlops, dmlops.webgpu as wg
    x = wg.asarray(np.arange(16, dtype=np.float32).reshape(4, 4))
    y = dmlops.slice1(x, [0, 1], [4, 3], [-2, 2])    # runs on the GPU, returns a WebGpuArray
    y.numpy()
    dmlops.slice1(host, [0, 1], [4, 3], [-2, 2], device="webgpu")  # numpy in, numpy out

The adapter is the high-performance Vulkan, Metal or Direct3D 12 one; `select_adapter`
(or the environment variable DMLOPS_WEBGPU_ADAPTER) picks another by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends.webgpu import WebGpuArray, WebGpuBackend, adapter_description, choose_adapter

__all__ = [
    "WebGpuArray",
    "asarray",
    "empty",
    "adapters",
    "adapter",
    "select_adapter",
    "synchronize",
]


def _backend() -> WebGpuBackend:
    return WebGpuBackend.instance()


def asarray(host: Any) -> WebGpuArray:
    """A WebGPU copy of a host array (returned as is if it already is one)."""
    if isinstance(host, WebGpuArray):
        return host
    return _backend().upload(np.asarray(host))


def empty(shape: tuple[int, ...] | list[int], dtype: Any) -> WebGpuArray:
    """A new uninitialised WebGPU array."""
    return _backend().empty(tuple(int(n) for n in shape), dtype)


def adapters() -> list[str]:
    """Descriptions of the Vulkan, Metal and Direct3D 12 adapters wgpu finds."""
    from .backends.webgpu import NATIVE_BACKENDS, _wgpu

    found = _wgpu().gpu.enumerate_adapters_sync()
    return [adapter_description(a) for a in found if a.info["backend_type"] in NATIVE_BACKENDS]


def adapter() -> str:
    """Description of the adapter the backend runs on."""
    return _backend().description


def select_adapter(name: str | None) -> str:
    """Use the adapter whose description contains `name` (None: the high-performance one).

    Arrays made before on another adapter cannot be used afterwards.
    """
    chosen = choose_adapter(name)
    WebGpuBackend.adapter_name = name
    held = WebGpuBackend._instance
    if held is not None and held.adapter is not chosen:
        held.flush()  # (its held dispatches still run)
        WebGpuBackend._instance = None
    return adapter_description(chosen)


def synchronize() -> None:
    """Wait for all the adapter's work: calls return once their dispatches are encoded, and
    several calls' dispatches go to the GPU in one submission (every 16, or at a read, a
    write or this wait; a large dispatch on an idle queue at once)."""
    _backend().synchronize()
