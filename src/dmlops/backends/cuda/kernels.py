"""The CUDA kernel sources (package data, one .cu file per strategy) compiled through CuPy."""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

from .strategies import THREADS

__all__ = [
    "source",
    "compiled",
    "compiled_named",
    "function_handle",
    "ENTRY",
    "blocks_per_multiprocessor",
]

ENTRY = {
    "strided": "dmlops_strided",
    "rows": "dmlops_rows",
    "transpose": "dmlops_transpose",
    "pack": "dmlops_pack",
    "elements": "dmlops_indexed_elements",
}
_cache: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}
_lock = threading.Lock()


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"kernels/{name}").read_text()


def source(kernel: str) -> str:
    """The CUDA C++ source of one strategy's kernel, with the shared header inlined."""
    return _read(f"{kernel}.cu").replace('#include "common.cuh"', _read("common.cuh"))


def compiled(cupy: Any, kernel: str, defines: tuple[tuple[str, int], ...]) -> Any:
    """The kernel function of one specialisation, compiled once per process."""
    key = (kernel, defines)
    fn = _cache.get(key)
    if fn is None:
        options = (
            "--std=c++14",
            f"-DTHREADS={THREADS}",
            *(f"-D{k}={v}" for k, v in defines),
        )
        module = cupy.RawModule(code=source(kernel), options=options)
        fn = module.get_function(ENTRY[kernel])
        with _lock:
            _cache[key] = fn
    return fn


def compiled_named(cupy: Any, kernel: str, entry: str) -> Any:
    """A kernel function `entry` of a .cu file without specialisations, compiled once."""
    key = (f"{kernel}:{entry}", ())
    fn = _cache.get(key)
    if fn is None:
        module = cupy.RawModule(code=source(kernel), options=("--std=c++14",))
        fn = module.get_function(entry)
        with _lock:
            _cache[key] = fn
    return fn


def function_handle(kernel: Any) -> int:
    """The CUfunction handle of a compiled kernel on the current device (loaded there if new)."""
    return int(kernel.kernel.ptr)


def blocks_per_multiprocessor(cupy: Any, function: int) -> int:
    """How many THREADS-thread blocks of a kernel one multiprocessor holds at once."""
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function, THREADS, 0))
