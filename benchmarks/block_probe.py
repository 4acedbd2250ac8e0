"""Where a torch `Block` training step's time goes on the GPU, per bench block: the step as
the bench times it (events around one step), the same with 8 steps queued back to back
(the device's time where it exceeds the host's), the forward and backward plans alone on
buffers made once (their kernels' time), the copy ceiling of each, and the host's time per
step on tiny inputs (the Python and autograd work alone), against torch eager's.

    python benchmarks/block_probe.py [--profile BLOCK]
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from dmlops.bench.common import best_per_call, median_gpu
from dmlops.bench.torch_steps import BLOCKS, _step
from dmlops.torch.block import Block

TINY = {  # per block: inputs small enough that the host's time is the step's
    "Focus stem": [(1, 3, 16, 16)],
    "QKV split + heads": [(1, 16, 3072)],
    "pixel unshuffle": [(1, 4, 16, 16)],
    "KV-cache append": [(1, 2, 15, 128), (1, 2, 1, 128)],
    "slice of transposed view": [(1, 32, 64)],
}


def _host_per_step(fn: Any, inputs: list[Any], grads: list[Any], n: int = 300) -> float:
    def step() -> None:
        for i in inputs:
            i.grad = None
        _step(fn, inputs, grads)

    return best_per_call(step, n, torch.cuda.synchronize)


def _copy(nbytes: int) -> float:
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    return median_gpu(lambda: b.copy_(a), 30, batch=8)


def _probe(spec: Any) -> None:
    inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in spec.shapes]
    outs = _step(spec.theirs, inputs, None)
    grads = [torch.randn_like(o) for o in outs]
    block = Block(spec.graph)

    def step(fn: Any = block) -> None:
        for i in inputs:
            i.grad = None
        _step(fn, inputs, grads)

    one = median_gpu(step, 30)
    queued = median_gpu(step, 30, batch=8)
    theirs = median_gpu(lambda: step(spec.theirs), 30)
    compiled = next(iter(block._compiled.values()))
    fwd = compiled.forward
    ins = [i.detach() for i in inputs]
    fouts = [torch.empty(s, device="cuda") for s in compiled.out_shapes]
    t_fwd = median_gpu(lambda: fwd._run_fresh(ins, fouts), 30, batch=8)
    back = compiled.backward()
    t_bwd = 0.0
    op = back.op
    if op is not None:
        bouts = [torch.empty(compiled.descs[k].sizes, device="cuda") for k in back.written]
        t_bwd = median_gpu(lambda: op._run_fresh(grads, bouts), 30, batch=8)
    c_fwd = _copy(sum(o.numel() * 4 for o in fouts))
    c_bwd = _copy(sum(i.numel() * 4 for i in inputs))
    print(
        f"{spec.name:26s} step {one * 1e6:7.1f} us (queued {queued * 1e6:7.1f}; torch eager "
        f"{theirs * 1e6:7.1f})  fwd {t_fwd * 1e6:6.1f} us ({c_fwd / t_fwd:.2f} of copy)  "
        f"bwd {t_bwd * 1e6:6.1f} us ({c_bwd / max(t_bwd, 1e-9):.2f} of copy)  "
        f"views {[v is not None for v in back.views]} zeroed {back.zeroed}",
        flush=True,
    )


def _profile(name: str) -> None:
    """cProfile's top functions over 500 tiny steps of one block's `Block`."""
    import cProfile
    import pstats

    spec = next(b for b in BLOCKS if b.name == name)
    inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in TINY[name]]
    grads = [torch.randn_like(o) for o in _step(spec.theirs, inputs, None)]
    _host_per_step(Block(spec.graph), inputs, grads, 20)
    block = Block(spec.graph)
    _host_per_step(block, inputs, grads, 20)
    prof = cProfile.Profile()
    prof.enable()
    _host_per_step(block, inputs, grads, 100)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(30)


def main() -> None:
    if sys.argv[1:2] == ["--profile"]:
        _profile(sys.argv[2] if len(sys.argv) > 2 else "Focus stem")
        return
    for spec in BLOCKS:
        _probe(spec)
        torch.cuda.empty_cache()
    for spec in BLOCKS:  # host time: tiny inputs
        shapes = TINY[spec.name]
        inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in shapes]
        outs = _step(spec.theirs, inputs, None)
        grads = [torch.randn_like(o) for o in outs]
        ours = _host_per_step(Block(spec.graph), inputs, grads)
        theirs = _host_per_step(spec.theirs, inputs, grads)
        print(
            f"host {spec.name:26s} {shapes}: Block {ours * 1e6:6.1f} us, torch eager "
            f"{theirs * 1e6:6.1f} us",
            flush=True,
        )


if __name__ == "__main__":
    main()
