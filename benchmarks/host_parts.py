"""What the pieces of a warm GPU call cost on this host: torch's and dmlops' whole calls,
then each C call a warm dmlops call makes (attribute reads, an allocation, the stream, a
kernel launch through CuPy and through ctypes), best per call of 20,000.

    python benchmarks/host_parts.py
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import cupy as cp
import numpy as np
import torch

import dmlops
from dmlops.functional import _quick_run


def per_call(fn: Callable[[], Any], n: int = 20000) -> float:
    """Best host µs per call of 5 runs of n calls (a synchronize ends each run)."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def main() -> None:
    x = torch.randn(1000, 64, device="cuda")
    idx = torch.randint(0, 1000, (32,), device="cuda")
    module = cp.RawModule(code=r'extern "C" __global__ void nothing(long long a) {}')
    handle = int(module.get_function("nothing").kernel.ptr)
    value = np.array([0], np.int64)
    params = np.array([value.ctypes.data], np.uint64)
    pointer = int(params.ctypes.data)
    stream = torch.cuda.current_stream().cuda_stream
    launch = cp.cuda.driver.launchKernel
    libcuda = ctypes.CDLL("libcuda.so.1")
    cu_launch = libcuda.cuLaunchKernel
    cu_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint] * 1
    cu_launch.argtypes += [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    raw_stream = torch._C._cuda_getCurrentRawStream
    tag = ("GATHER", 0, None)
    parts: dict[str, Callable[[], Any]] = {
        "torch.index_select": lambda: torch.index_select(x, 0, idx),
        "dmlops.gather": lambda: dmlops.gather(x, idx, 0),
        "x.new_empty((32, 64))": lambda: x.new_empty((32, 64)),
        "torch.empty(.., device=)": lambda: torch.empty((32, 64), device=x.device),
        "x.data_ptr()": x.data_ptr,
        "x.stride()": x.stride,
        "x.shape": lambda: x.shape,
        "x.dtype": lambda: x.dtype,
        "x.get_device()": x.get_device,
        "current raw stream": lambda: raw_stream(0),
        "cupy getDevice": cp.cuda.runtime.getDevice,
        "cupy launchKernel": lambda: launch(handle, 1, 1, 1, 32, 1, 1, 0, stream, pointer, 0),
        "ctypes cuLaunchKernel": lambda: cu_launch(
            handle, 1, 1, 1, 32, 1, 1, 0, stream, pointer, None
        ),
        "dmlops _quick_run": lambda: _quick_run(tag, [x, idx], None, None),
        "python call, 5 args": lambda: (lambda a, b, c, d, e: a)(1, 2, 3, 4, 5),
    }
    print(f"{'piece':28s} {'µs per call':>12s}")
    for name, fn in parts.items():
        print(f"{name:28s} {per_call(fn):12.2f}", flush=True)


if __name__ == "__main__":
    main()
