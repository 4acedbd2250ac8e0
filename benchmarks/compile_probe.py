"""A bench block under torch.compile on the GPU, dmlops' operators against torch's own code:
the generated kernels of each (names, and the code into a folder) and the step's median.

    python benchmarks/compile_probe.py [BLOCK NAME | all] [OUTPUT FOLDER]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

from dmlops.bench.common import median_gpu
from dmlops.bench.torch_steps import BLOCKS, Block, _step


def main() -> None:
    args = sys.argv[1:]
    name = args[0] if args else "QKV split + heads"
    folder = Path(args[1]) if len(args) > 1 else None
    for spec in BLOCKS:
        if name in ("all", spec.name):
            print(f"== {spec.name}", flush=True)
            probe(spec, folder / spec.name.replace(" ", "_") if folder else None)


def probe(spec: Block, folder: Path | None) -> None:
    inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in spec.shapes]
    outs = _step(spec.theirs, inputs, None)
    grads = [torch.randn_like(o) for o in outs]
    for who, fn in (("dmlops", spec.ours), ("torch", spec.theirs)):
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True)

        def step(c=compiled) -> None:  # type: ignore[no-untyped-def]
            for i in inputs:
                i.grad = None
            _step(c, inputs, grads)

        _, codes = run_and_get_code(step)
        kernels = [sorted(set(re.findall(r"def (triton_\w+)\(", c))) for c in codes]
        one, queued = median_gpu(step, 30), median_gpu(step, 30, batch=8)
        print(f"{who}: {one * 1e6:8.1f} us (queued {queued * 1e6:8.1f})  kernels {kernels}")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8), flush=True)
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            for k, code in enumerate(codes):
                (folder / f"{who}_{k}.py").write_text(code)


if __name__ == "__main__":
    main()
