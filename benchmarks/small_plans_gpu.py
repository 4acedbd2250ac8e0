"""Device time of small and mid-sized multi-copy plans on CUDA (DIAGONAL_MATRIX1's tril and
triu, a 3-way SPLIT, PADDING1) against torch eager and a device copy of the same output
bytes: 8 calls between CUDA events behind a held stream, median of 30, µs.

    python benchmarks/small_plans_gpu.py LABEL OUT.json [MERGE_ELEMENTS]

MERGE_ELEMENTS overrides `backends.cuda.strategies.MERGE_ELEMENTS` (how small a plan of
several launches must be to take one element-wise launch); the performance page's
`results/gpu_small_plans_h200_s14.txt` ran it at 0, 1M, 4M and 16M.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

import dmlops
from dmlops.backends.cuda import strategies
from dmlops.bench.common import HOLD, median_gpu

CASES = [
    ("tril fp16 [64,1024,1024]", (64, 1024, 1024), torch.float16, 0, "tril"),
    ("triu1 fp16 [8,4096,4096]", (8, 4096, 4096), torch.float16, 1, "triu"),
    ("tril fp32 [16,1024,1024]", (16, 1024, 1024), torch.float32, 0, "tril"),
    ("tril fp32 [4096,4096]", (4096, 4096), torch.float32, 0, "tril"),
    ("triu-3 fp32 [4096,4096]", (4096, 4096), torch.float32, -3, "triu"),
    ("tril fp32 [3,4000,37]", (3, 4000, 37), torch.float32, 0, "tril"),
    ("tril fp32 [2,37,4000]", (2, 37, 4000), torch.float32, 0, "tril"),
    ("tril fp16 [256,128,128]", (256, 128, 128), torch.float16, 0, "tril"),
    ("tril int8 [4096,4096]", (4096, 4096), torch.int8, 5, "tril"),
    ("tril fp16 [16,256,256]", (16, 256, 256), torch.float16, 0, "tril"),
    ("tril fp32 [8,512,512]", (8, 512, 512), torch.float32, 0, "tril"),
    ("split3 fp32 [64,4096]", (64, 4096), torch.float32, 0, "split"),
    ("split3 fp32 [256,4096]", (256, 4096), torch.float32, 0, "split"),
    ("split3 fp16 [1024,4096]", (1024, 4096), torch.float16, 0, "split"),
    ("pad reflect fp32 [8,3,224,224]", (8, 3, 224, 224), torch.float32, 0, "pad"),
    ("pad const fp16 [4,64,56,56]", (4, 64, 56, 56), torch.float16, 0, "padc"),
]


def contenders(x: Any, k: int, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(dmlops' call, torch's) for one case."""
    pad = torch.nn.functional.pad
    if kind == "split":
        return (
            lambda: dmlops.split(x, 1, [1, 4092, 3]),
            lambda: [t.contiguous() for t in torch.split(x, [1, 4092, 3], 1)],
        )
    if kind == "pad":
        return (
            lambda: dmlops.padding(x, [0, 0, 3, 3], [0, 0, 3, 3], mode="REFLECTION"),
            lambda: pad(x, (3, 3, 3, 3), mode="reflect"),
        )
    if kind == "padc":
        return (
            lambda: dmlops.padding(x, [0, 0, 1, 1], [0, 0, 1, 1]),
            lambda: pad(x, (1, 1, 1, 1)),
        )
    ours, theirs = (dmlops.tril, torch.tril) if kind == "tril" else (dmlops.triu, torch.triu)
    return (lambda: ours(x, k)), (lambda: theirs(x, k))


def same(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return all(torch.equal(p, q) for p, q in zip(a, b, strict=True))
    return bool(torch.equal(a, b))


def main() -> None:
    label, out = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        strategies.MERGE_ELEMENTS = int(sys.argv[3])
    rows = {}
    for name, shape, dtype, k, kind in CASES:
        x = (torch.randn(shape, device="cuda") * 100).to(dtype)
        ours, theirs = contenders(x, k, kind)
        assert same(ours(), theirs()), name
        nbytes = x.numel() * x.element_size()
        moved = torch.empty(max(1, nbytes // 2), dtype=torch.float16, device="cuda")
        source = torch.empty_like(moved)
        times = [
            median_gpu(f, 30, batch=8, hold=HOLD) * 1e6
            for f in (ours, theirs, partial(moved.copy_, source))
        ]
        rows[name] = times
        print(f"{label:6} {name:32} dmlops {times[0]:8.1f}  torch {times[1]:8.1f}  "
              f"copy {times[2]:8.1f} µs", flush=True)  # fmt: skip
    with open(out, "w") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    main()
