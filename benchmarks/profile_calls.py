"""Where a warm functional call spends its host time on the GPU: per-call cost of the
indexed calls (and slice1, join) against torch, then cProfile's top functions per call.

    python benchmarks/profile_calls.py [CASE ...]   (--table-only: no profiles)
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from typing import Any

import torch

import dmlops
from dmlops.bench.common import best_per_call


def per_call(fn, n: int = 1000) -> float:  # type: ignore[no-untyped-def]
    return best_per_call(fn, n, torch.cuda.synchronize) * 1e6


def cases() -> dict[str, tuple[Any, Any, list[Any], Any]]:
    """Each warm call: (dmlops' call, torch's, dmlops' input arrays, its given output)."""
    dev = "cuda"
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(1000, 64, generator=g).to(dev)
    idx = torch.randint(0, 1000, (32,), generator=g).to(dev)
    cache = torch.zeros(4096, 64, device=dev)
    rows = torch.randperm(4096, generator=g)[:32].to(dev)
    upd = torch.randn(32, 64, generator=g).to(dev)
    ie = torch.randint(0, 64, (1000, 8), generator=g).to(dev)
    seed = torch.arange(16, dtype=torch.float32, device=dev).reshape(1, 1, 4, 4)
    parts = [torch.randn(16, 64, generator=g).to(dev) for _ in range(64)]
    joined = torch.empty(1024, 64, device=dev)
    many = [torch.randn(16, 64, generator=g).to(dev) for _ in range(1024)]
    joined_many = torch.empty(16 * 1024, 64, device=dev)
    rows2 = rows.reshape(32, 1)
    slots = (1 << 30) // (8 * 128 * 2)
    kv = torch.zeros(slots, 8, 128, device=dev, dtype=torch.float16)
    where = torch.randperm(slots, device=dev)[:4096]
    column = where[:, None].contiguous()
    kv_new = torch.randn(4096, 8, 128, device=dev, dtype=torch.float16)
    window = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])
    return {
        "gather": (
            lambda: dmlops.gather(x, idx, 0),
            lambda: torch.index_select(x, 0, idx),
            [x, idx],
            None,
        ),
        "scatter_nd out=": (
            lambda: dmlops.scatter_nd(cache, rows2, upd, out=cache),
            lambda: cache.index_copy_(0, rows, upd),
            [cache, rows2, upd],
            cache,
        ),
        "gather_elements": (
            lambda: dmlops.gather_elements(x, ie, 1),
            lambda: torch.gather(x, 1, ie),
            [x, ie],
            None,
        ),
        "slice1 seed": (
            lambda: dmlops.slice1(seed, *window),
            lambda: seed[:, :, 0:4:2, 1:4:2].flip(2).contiguous(),
            [seed],
            None,
        ),
        "kv write": (
            lambda: dmlops.scatter_nd(kv, column, kv_new, out=kv),
            lambda: kv.index_copy_(0, where, kv_new),
            [kv, column, kv_new],
            kv,
        ),
        "join 64": (lambda: dmlops.join(parts, 0), lambda: torch.cat(parts, 0), parts, None),
        "join 64 out=": (
            lambda: dmlops.join(parts, 0, out=joined),
            lambda: torch.cat(parts, 0, out=joined),
            parts,
            joined,
        ),
        "join 1024 out=": (
            lambda: dmlops.join(many, 0, out=joined_many),
            lambda: torch.cat(many, 0, out=joined_many),
            many,
            joined_many,
        ),
    }


def main() -> None:
    calls = {name: (ours, theirs) for name, (ours, theirs, _, _) in cases().items()}
    print(f"{'call':18s} {'dmlops us':>10s} {'torch us':>10s}")
    for name, (ours, theirs) in calls.items():
        print(f"{name:18s} {per_call(ours):10.1f} {per_call(theirs):10.1f}", flush=True)
    if "--table-only" in sys.argv[1:]:
        return
    for name in sys.argv[1:] or ["gather", "scatter_nd out=", "slice1 seed"]:
        fn = calls[name][0]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        print(f"\n== {name}: top functions (2000 calls)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(28)


if __name__ == "__main__":
    main()
