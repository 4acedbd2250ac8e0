"""Where the in-place KV-cache write of `bench --section indexed` spends its time: host cost
per call (back-to-back calls, no synchronisation), device time of one call alone (CUDA
events), and each kernel's duration (torch.profiler), against torch's index_copy_.

    python benchmarks/kv_write_probe.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

import dmlops


def host_us(fn: Callable[[], object], n: int = 200) -> float:
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return host


def device_us(fn: Callable[[], object], n: int = 50) -> float:
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def main() -> None:
    dev = "cuda"
    slots = (1 << 30) // (8 * 128 * 2)
    cache = torch.zeros(slots, 8, 128, device=dev, dtype=torch.float16)
    where = torch.randperm(slots, device=dev)[:4096]
    column = where[:, None].contiguous()
    updates = torch.randn(4096, 8, 128, device=dev, dtype=torch.float16)
    cases: dict[str, Callable[[], object]] = {
        "dmlops scatter_nd(out=cache)": lambda: dmlops.scatter_nd(
            cache, column, updates, out=cache
        ),
        "torch index_copy_": lambda: cache.index_copy_(0, where, updates),
    }
    print("| call | host µs/call | device µs, one call |")
    print("| --- | ---: | ---: |")
    for name, fn in cases.items():
        print(f"| {name} | {host_us(fn):.1f} | {device_us(fn):.1f} |", flush=True)
    for name, fn in cases.items():
        fn()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        print(f"\n== {name}")
        for e in prof.key_averages():
            if e.device_time_total > 0:
                print(f"  {e.key[:70]:70s} {e.device_time_total:8.1f} µs x{e.count}")


if __name__ == "__main__":
    main()
