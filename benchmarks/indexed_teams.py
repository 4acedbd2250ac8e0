"""GPU time of CUDA indexed copies whose rows are shorter than a warp's 32 chunks: a team of
lanes a row (`TEAM_THREADS` at its default) against a thread a row (0), torch's index_select
and index_put_ beside. µs a call: each kernel's median over 100 calls (torch.profiler), summed.

    python benchmarks/indexed_teams.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

import dmlops
from dmlops.backends.cuda import indexed as cuda_indexed
from dmlops.calls import dispatch


def gpu_us(fn: Callable[[], Any]) -> float:
    """The GPU time of one call of `fn`: its kernels' medians over 100 calls."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
    kernels: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(e.name, []).append(e.device_time)
    return sum(sorted(v)[len(v) // 2] * len(v) / 100 for v in kernels.values())


def _calls(
    rows: int, width: int, dtype: Any, g: Any
) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """(name, dmlops' call, torch's) on `rows` rows of `width` elements of 8,192."""
    x = torch.randn(8192, width, generator=g).to("cuda", dtype)
    idx = torch.randint(0, 8192, (rows,), generator=g).cuda()
    upd = torch.randn(rows, width, generator=g).to("cuda", dtype)
    cache, column = x.clone(), idx.reshape(rows, 1)
    return [
        ("gather", lambda: dmlops.gather(x, idx, 0), lambda: torch.index_select(x, 0, idx)),
        ("scatter_nd out=", lambda: dmlops.scatter_nd(cache, column, upd, out=cache),
         lambda: cache.index_put_((idx,), upd)),
        ("gather, strided rows", lambda: dmlops.gather(x[:, ::2], idx, 0),
         lambda: torch.index_select(x[:, ::2], 0, idx)),
    ]  # fmt: skip


def main() -> None:
    default = cuda_indexed.TEAM_THREADS
    g = torch.Generator(device="cpu").manual_seed(0)
    print("| call | rows x width | teams | a thread a row | torch |")
    print("| --- | --- | ---: | ---: | ---: |")
    shapes = [(32, 64, torch.float32), (256, 64, torch.float32), (4096, 16, torch.float32),
              (4096, 4, torch.float32), (65536, 8, torch.float32), (1000, 24, torch.float16),
              (32, 512, torch.float32)]  # fmt: skip
    try:
        for rows, width, dtype in shapes:
            calls = _calls(rows, width, dtype, g)
            for name, ours, theirs in calls:
                times = {}
                for teams in (default, 0):
                    cuda_indexed.TEAM_THREADS = teams
                    dispatch.clear_cache()  # (launches prepared anew)
                    times[teams] = gpu_us(ours)
                kind = str(dtype).removeprefix("torch.")
                print(
                    f"| {name} | {rows} x {width} {kind} | {times[default]:.2f} | "
                    f"{times[0]:.2f} | {gpu_us(theirs):.2f} |",
                    flush=True,
                )
    finally:
        cuda_indexed.TEAM_THREADS = default


if __name__ == "__main__":
    main()
