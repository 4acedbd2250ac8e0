"""Where an eager training step of each torch-section block spends its GPU time: dmlops'
operators called one by one against torch's own code, torch's profiler over 5 steps, the
CUDA kernels of each with their total time (the torch section's blocks and shapes).

    python benchmarks/eager_probe.py [BLOCK-SUBSTRING ...]
"""

from __future__ import annotations

import sys

import torch

from dmlops.bench.torch_steps import BLOCKS, _step


def profile(fn, inputs, grads) -> None:  # type: ignore[no-untyped-def]
    def step() -> None:
        for i in inputs:
            i.grad = None
        _step(fn, inputs, grads)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / 5
    print(f"  GPU time per step {total:8.1f} us")
    for e in events[:10]:
        name = e.key if len(e.key) < 70 else e.key[:67] + "..."
        print(f"  {e.device_time_total / 5:8.1f} us  {e.count // 5:3d}x  {name}")


def main(selected: list[str]) -> None:
    for block in BLOCKS:
        if selected and not any(s in block.name for s in selected):
            continue
        inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in block.shapes]
        outs = _step(block.theirs, inputs, None)
        grads = [torch.randn_like(o) for o in outs]
        for who, fn in (("dmlops eager", block.ours), ("torch eager", block.theirs)):
            print(f"== {block.name}: {who}")
            profile(fn, inputs, grads)


if __name__ == "__main__":
    main(sys.argv[1:])
