"""Benchmark section "torch": training steps (forward + backward) of real data-movement
blocks with dmlops' operators inside torch programs.

Blocks: a YOLOv5 Focus stem (four stride-2 slices, channel concat), a QKV split with the
head transpose, pixel unshuffle, a KV-cache append, and a slice of a transposed view. Each
step runs the block and backpropagates a fixed gradient. Contenders: dmlops' operators
under torch.compile, the same eagerly, the block as one `dmlops.torch.Block` (one plan
forward, one backward), torch.compile of torch's own code, and torch eager;
the copy ceiling is a device-to-device copy of the bytes the step writes (forward output
plus input gradient). Steps are timed in five rounds of every contender in turn, each round
starting with the next contender, the median of the rounds' medians reported (one host's
Python speed drifts between minutes).
Also timed: the first call of each (compilation included); the two
torch.compile contenders' first calls each in a fresh process with empty inductor and Triton
caches, after a small unrelated compile there (so neither pays the process' one-time
compiler start, nor finds kernels the other compiled: dmlops' decompositions give the same
kernels as torch's own code, which a shared cache would hand to whichever runs second).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dmlops

from .common import Result, median_gpu

__all__ = ["run", "BLOCKS"]

SECTION = "torch"
REFERENCE = "torch.compile"
_ROUNDS = 5  # rounds of every contender's median, the median of them reported


@dataclass(frozen=True)
class Block:
    """A block as dmlops code, as torch code and as a dmlops graph (`dmlops.torch.block`:
    one plan forward, one backward), with its input shapes (on the GPU)."""

    name: str
    shapes: list[tuple[int, ...]]
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    graph: Callable[..., Any]


_WINDOWS = ((0, 0), (1, 0), (0, 1), (1, 1))


def _focus_graph(g: Any, x: Any) -> Any:
    n, c, h, w = x.sizes
    return g.join(
        [g.slice(x, [0, 0, a, b], [n, c, h // 2, w // 2], [1, 1, 2, 2]) for a, b in _WINDOWS], 1
    )


def _focus_ours(x: Any) -> Any:
    n, c, h, w = x.shape
    parts = [
        dmlops.slice(x, [0, 0, a, b], [n, c, h // 2, w // 2], [1, 1, 2, 2])
        for a, b in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]
    return dmlops.join(parts, 1)


def _focus_theirs(x: Any) -> Any:
    import torch

    return torch.cat(
        [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
    )


_HEADS, _HEAD_DIM = 16, 64


def _qkv_ours(x: Any) -> Any:
    # the heads of q, k and v one axis [B, 3H, T, D] (a strided view), split along it: the
    # pieces are [B, H, T, D] as they come (no view of them is returned, which under
    # torch.compile AOTAutograd would regenerate on every call)
    b, t, _ = x.shape
    view = x.view(b, t, 3 * _HEADS, _HEAD_DIM).permute(0, 2, 1, 3)
    return dmlops.split(view, 1, [_HEADS] * 3)


def _qkv_graph(g: Any, x: Any) -> Any:
    b, t, _ = x.sizes
    h, d = _HEADS, _HEAD_DIM
    parts = g.split(x, 2, [h * d] * 3)
    return [g.reinterpret(p, (b, h, t, d), (t * h * d, d, h * d, 1)) for p in parts]


def _qkv_theirs(x: Any) -> Any:
    b, t, _ = x.shape
    q, k, v = x.split(_HEADS * _HEAD_DIM, 2)
    return [p.view(b, t, _HEADS, _HEAD_DIM).transpose(1, 2).contiguous() for p in (q, k, v)]


def _unshuffle_ours(x: Any) -> Any:
    return dmlops.space_to_depth(x, 2, "CRD")


def _unshuffle_graph(g: Any, x: Any) -> Any:
    return g.space_to_depth(x, 2, "COLUMN_ROW_DEPTH")


def _unshuffle_theirs(x: Any) -> Any:
    import torch

    return torch.nn.functional.pixel_unshuffle(x, 2)


def _append_ours(past: Any, new: Any) -> Any:
    return dmlops.join([past, new], 2)


def _append_graph(g: Any, past: Any, new: Any) -> Any:
    return g.join([past, new], 2)


def _append_theirs(past: Any, new: Any) -> Any:
    import torch

    return torch.cat([past, new], 2)


def _transposed_ours(x: Any) -> Any:
    n, h, w = x.shape
    return dmlops.slice1(x.transpose(1, 2), [0, 0, 1], [n, w, h - 1], [1, 1, 2])


def _transposed_graph(g: Any, x: Any) -> Any:
    n, h, w = x.sizes
    view = g.reinterpret(x, (n, w, h), (h * w, 1, w))
    return g.slice1(view, [0, 0, 1], [n, w, h - 1], [1, 1, 2])


def _transposed_theirs(x: Any) -> Any:
    return x.transpose(1, 2)[:, :, 1::2].contiguous()


BLOCKS = [
    Block("Focus stem", [(16, 3, 640, 640)], _focus_ours, _focus_theirs, _focus_graph),
    Block(
        "QKV split + heads",
        [(16, 1024, 3 * _HEADS * _HEAD_DIM)],
        _qkv_ours,
        _qkv_theirs,
        _qkv_graph,
    ),
    Block(
        "pixel unshuffle",
        [(16, 64, 256, 256)],
        _unshuffle_ours,
        _unshuffle_theirs,
        _unshuffle_graph,
    ),
    Block(
        "KV-cache append",
        [(32, 32, 1023, 128), (32, 32, 1, 128)],
        _append_ours,
        _append_theirs,
        _append_graph,
    ),
    Block(
        "slice of transposed view",
        [(64, 1024, 2048)],
        _transposed_ours,
        _transposed_theirs,
        _transposed_graph,
    ),
]


def _step(block: Callable[..., Any], inputs: list[Any], grads: list[Any] | None) -> Any:
    """Forward, then backward of the given output gradients (made on the first call)."""
    import torch

    outs = block(*inputs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if grads is None:
        return outs
    torch.autograd.backward(outs, grads)
    return outs


def _ceiling(nbytes: int, reps: int) -> float:
    import torch

    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    return median_gpu(lambda: b.copy_(a), reps)


def _time_block(torch: Any, block: Block, reps: int) -> list[Result]:
    """The block's step times and first-call times, and the copy ceiling of its bytes."""
    torch._dynamo.reset()
    inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in block.shapes]
    outs = _step(block.theirs, inputs, None)
    grads = [torch.randn_like(o) for o in outs]
    written = sum(o.numel() * o.element_size() for o in outs)
    written += sum(i.numel() * i.element_size() for i in inputs)
    del outs
    from dmlops.torch.block import Block as GraphBlock

    contenders = {  # dmlops eager first: its first call includes loading its kernels
        "dmlops eager": block.ours,
        "dmlops Block (eager)": GraphBlock(block.graph),
        "dmlops + torch.compile": torch.compile(block.ours, fullgraph=True),
        "torch.compile": torch.compile(block.theirs),
        "torch eager": block.theirs,
    }

    def step(fn: Callable[..., Any]) -> None:
        for i in inputs:
            i.grad = None
        _step(fn, inputs, grads)

    samples: dict[str, list[float]] = {name: [] for name in contenders}
    first: dict[str, float] = {}
    for name, fn in contenders.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(fn)
        torch.cuda.synchronize()
        first[name] = time.perf_counter() - t0
    order = list(contenders.items())
    for r in range(_ROUNDS):  # contenders in turn, each round starting one further along,
        for name, fn in order[r:] + order[:r]:  # so neither drift nor the one before favours
            samples[name].append(median_gpu(functools.partial(step, fn), reps))
    times = {name: statistics.median(s) for name, s in samples.items()}
    for name in _COMPILED:
        fresh = _first_call_fresh(BLOCKS.index(block), name)
        if fresh is not None:
            first[name] = fresh
    times["copy ceiling"] = _ceiling(written, reps)
    return [
        Result(SECTION, block.name, "gpu", written // 2, REFERENCE, times),
        Result(SECTION, f"{block.name} (first call)", "gpu", written // 2, REFERENCE, first),
    ]


_COMPILED = ("dmlops + torch.compile", "torch.compile")

_FIRST_CALL = """
import sys, time, torch
from dmlops.bench.torch_steps import BLOCKS, _COMPILED, _step
block, who = BLOCKS[int(sys.argv[1])], sys.argv[2]
warm = torch.randn(64, device="cuda", requires_grad=True)
def helper(a):
    return (a * 2).sin()
# the compiler's own start, a call of a Python function of the user's among it (dynamo's
# first such call imports torch.distributed.tensor.experimental, once per process)
torch.compile(lambda a: helper(a))(warm).sum().backward()
inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in block.shapes]
grads = [torch.randn_like(o) for o in _step(block.theirs, inputs, None)]
ours = who == _COMPILED[0]
fn = torch.compile(block.ours, fullgraph=True) if ours else torch.compile(block.theirs)
torch.cuda.synchronize()
t0 = time.perf_counter()
_step(fn, inputs, grads)
torch.cuda.synchronize()
print(time.perf_counter() - t0)
"""


def _first_call_fresh(index: int, who: str) -> float | None:
    """A compiled contender's first step in a fresh process with empty compiler caches (None
    where that process fails)."""
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as caches:
        env = dict(os.environ)
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(caches, "triton")
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_CALL, str(index), who],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode:
        return None
    return float(done.stdout.split()[-1])


def run(devices: list[str], reps: int) -> list[Result]:
    """Time each block's training step; empty without torch or a GPU."""
    if "gpu" not in devices:
        return []
    try:
        import torch
    except ImportError:
        return []
    results = []
    for block in BLOCKS:
        results += _time_block(torch, block, reps)
        torch.cuda.empty_cache()
    return results
