"""Eager training steps of the torch section's blocks: dmlops' operators one by one against
torch's own code and the copy ceiling, medians of CUDA-event timed steps (the section's own
timing, without its compiled contenders and first calls).

    python benchmarks/eager_steps.py
"""

from __future__ import annotations

import functools

import torch

from dmlops.bench.common import median_gpu
from dmlops.bench.torch_steps import BLOCKS, _ceiling, _step


def _run(fn, inputs, grads) -> None:  # type: ignore[no-untyped-def]
    for i in inputs:
        i.grad = None
    _step(fn, inputs, grads)


def main() -> None:
    print("| block | dmlops eager | torch eager | copy ceiling |\n| --- | ---: | ---: | ---: |")
    for block in BLOCKS:
        inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in block.shapes]
        outs = _step(block.theirs, inputs, None)
        grads = [torch.randn_like(o) for o in outs]
        written = sum(o.numel() * o.element_size() for o in outs)
        written += sum(i.numel() * i.element_size() for i in inputs)

        contenders = (block.ours, block.theirs)
        times = [median_gpu(functools.partial(_run, fn, inputs, grads), 20) for fn in contenders]
        times.append(_ceiling(written, 20))
        print(f"| {block.name} | " + " | ".join(f"{t * 1e3:.2f} ms" for t in times) + " |")


if __name__ == "__main__":
    main()
