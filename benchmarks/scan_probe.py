"""Kernel time of a scatter with repeated targets, by rows and row width, and the launches
it took (a winner table and pass, or a one-launch scan): `scatter_nd(out=)` onto 65,536
targets, torch's profiler over five calls.

    python benchmarks/scan_probe.py           # the launches dmlops chooses
    python benchmarks/scan_probe.py forced    # the shared-memory scan at every size
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import torch

import dmlops
from dmlops.backends.cuda import indexed


def kernel_us(fn: Callable[[], object]) -> tuple[float, list[str]]:
    """Device time of one call (the mean of five) and the kernels it ran."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    return sum(e.device_time_total for e in events) / 5, sorted({e.key[:26] for e in events})


def main() -> None:
    if sys.argv[1:] == ["forced"]:
        indexed.SHARED_SCAN_LOCATES = 1 << 40
        indexed.SHARED_SCAN_LOOK = 1 << 40
    for width, dtype in ((4, torch.float32), (1024, torch.float16)):
        for rows in (256, 1024, 1500, 2048, 4096):
            cache = torch.zeros(65536, width, device="cuda", dtype=dtype)
            slots = torch.randint(0, 65536, (rows, 1), device="cuda")
            updates = torch.randn(rows, width, device="cuda").to(dtype)
            call = functools.partial(dmlops.scatter_nd, cache, slots, updates, out=cache)
            us, names = kernel_us(call)
            print(
                f"row bytes {width * cache.element_size():5d} rows {rows:5d}: {us:7.1f} µs {names}"
            )


if __name__ == "__main__":
    main()
