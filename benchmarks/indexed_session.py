"""One device session for the indexed workloads: the WebGPU section at a bandwidth-bound
scale beside the CUDA backend, the GPU section against torch, and host cost per call of
tiny indexed calls against torch (1,000 back-to-back calls, then one synchronize).

    python benchmarks/indexed_session.py [SCALE]
"""

from __future__ import annotations

import sys


def call_costs() -> None:
    import torch

    import dmlops
    from dmlops.bench.common import best_per_call

    dev = "cuda"
    x = torch.randn(1000, 64, device=dev)
    ids = torch.randint(0, 1000, (32,), device=dev)
    cache = torch.zeros(4096, 64, device=dev)
    slots = torch.randperm(4096, device=dev)[:32]
    rows = torch.randn(32, 64, device=dev)
    along = torch.randint(0, 64, (1000, 8), device=dev)
    seeds = torch.arange(16.0, device=dev).reshape(4, 4)
    parts = [torch.randn(16, 64, device=dev) for _ in range(64)]
    cases = [
        ("gather 32 rows of [1000, 64]", lambda: dmlops.gather(x, ids),
         lambda: x.index_select(0, ids)),
        ("scatter_nd(out=) 32 rows into [4096, 64]",
         lambda: dmlops.scatter_nd(cache, slots[:, None], rows, out=cache),
         lambda: cache.index_copy_(0, slots, rows)),
        ("gather_elements [1000, 64] by [1000, 8]", lambda: dmlops.gather_elements(x, along, 1),
         lambda: torch.gather(x, 1, along)),
        ("slice1, the seeds' 4x4", lambda: dmlops.slice1(seeds, [0, 0], [4, 4], [1, -1]),
         lambda: seeds.flip(1).contiguous()),
        ("join of 64 x [16, 64]", lambda: dmlops.join(parts, 0), lambda: torch.cat(parts, 0)),
    ]  # fmt: skip
    print("| call | dmlops | torch | ratio |\n| --- | ---: | ---: | ---: |")
    for name, ours, theirs in cases:
        per = [best_per_call(fn, 1000, torch.cuda.synchronize, warm=50) for fn in (ours, theirs)]
        print(f"| {name} | {per[0] * 1e6:.1f} µs | {per[1] * 1e6:.1f} µs | {per[0] / per[1]:.2f} |")


def main() -> int:
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
    from dmlops.bench.common import format_table

    results = []
    try:
        from dmlops.bench import webgpu

        results += webgpu.indexed(15, scale)
    except Exception as e:  # noqa: BLE001 - no WebGPU adapter here: the rest still runs
        print(f"webgpu: {type(e).__name__}: {e}")
    from dmlops.bench import indexed

    results += indexed.run(["gpu"], 15)
    print(format_table(results))
    call_costs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
