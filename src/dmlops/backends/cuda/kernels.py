"""The CUDA kernel sources (package data, one .cu file per strategy) compiled through CuPy."""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

from .strategies import PER_THREAD, THREADS

__all__ = ["source", "compiled", "ENTRY"]

ENTRY = {"strided": "dmlops_strided", "rows": "dmlops_rows", "transpose": "dmlops_transpose"}
_cache: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}
_lock = threading.Lock()


def source(kernel: str) -> str:
    """The CUDA C++ source of one strategy's kernel."""
    return resources.files(__package__).joinpath(f"kernels/{kernel}.cu").read_text()


def compiled(cupy: Any, kernel: str, defines: tuple[tuple[str, int], ...]) -> Any:
    """The kernel function of one specialisation, compiled once per process."""
    key = (kernel, defines)
    fn = _cache.get(key)
    if fn is None:
        options = (
            "--std=c++14",
            f"-DTHREADS={THREADS}",
            f"-DPER_THREAD={PER_THREAD[kernel]}",
            *(f"-D{k}={v}" for k, v in defines),
        )
        module = cupy.RawModule(code=source(kernel), options=options)
        fn = module.get_function(ENTRY[kernel])
        with _lock:
            _cache[key] = fn
    return fn
