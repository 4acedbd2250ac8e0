"""The element-wise WebGPU word kernels (strided, funnel) two ways: each thread loading and
storing one element at a time (elements.wgsl) or loading all its elements first
(elements_batched.wgsl), at several workgroup targets (elements per thread), on the layouts
section's cases those kernels move; each against a device copy of its output bytes (torch
where CUDA is present, else WebGPU's own buffer copy), variants in turn, several rounds.

    python benchmarks/webgpu_box_variants.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys

from dmlops import DmlError
from dmlops.backends import webgpu
from dmlops.bench import layouts
from dmlops.bench.webgpu import _backend, bound_seconds, copy_seconds, layout_arrays

KERNELS = {"vec4", "u32", "funnel"}
VARIANTS = [(False, None), (True, None), (True, 0), (True, 2048), (False, 0)]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    backend = _backend()
    default_wanted = backend.workgroups_wanted
    cases = [c for c in layouts.CASES if c.layout_class != "transposed"]
    copies: dict[str, float] = {}
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(rounds):
        for case in cases:
            try:
                host, x, out = layout_arrays(case)
            except DmlError as error:  # larger than this adapter binds
                print(f"{case.name}: skipped ({error})", flush=True)
                continue
            copies.setdefault(case.name, copy_seconds(out.nbytes, 15))
            for v, (batched, wanted) in enumerate(VARIANTS):
                webgpu.BATCHED_LOADS.clear()
                if batched:
                    webgpu.BATCHED_LOADS.update(KERNELS)
                backend.workgroups_wanted = default_wanted if wanted is None else wanted
                backend._pipelines.clear()
                t = bound_seconds(case, host, x, out, 15, f"{case.name} variant {v}")
                times.setdefault((case.name, v), []).append(t)
    webgpu.BATCHED_LOADS.clear()
    backend.workgroups_wanted = default_wanted
    names = [
        f"{'batched' if b else 'one by one'}, {'default' if w is None else w} wg"
        for b, w in VARIANTS
    ]
    print("| case | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(VARIANTS))
    for case in cases:
        if case.name not in copies:
            continue
        cells = []
        for v in range(len(VARIANTS)):
            t = statistics.median(times[(case.name, v)])
            cells.append(f"{t * 1e6:.1f} µs ({copies[case.name] / t:.2f})")
        print(f"| {case.name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
