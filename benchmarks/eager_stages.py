"""When an eager dmlops call with a gradient launches its kernel: timestamps at each layer's
entry (the functional call, the operator's checks, the chain's record, the autograd
Function, the inner functional call and its dispatch, the launch) and at its return, µs
from the call's start, medians over 100 training steps of the torch section's blocks.

    python benchmarks/eager_stages.py [BLOCK-SUBSTRING ...]   (QKV, KV-cache)
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cupy
import torch

import dmlops.functional as functional
import dmlops.torch.chains as chains
import dmlops.torch.operators as torch_ops
from dmlops.bench.torch_steps import BLOCKS

_MARKS: list[tuple[str, float]] = []


def _marked(real: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(real)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _MARKS.append((name, time.perf_counter()))
        return real(*args, **kwargs)

    return wrapper


def _install() -> None:
    """Wrap each layer's entry (and CuPy's launch) with a timestamp."""
    for owner, attribute, name in (
        (functional, "_torch_wanted", "functional call"),
        (torch_ops._Operator, "__call__", "operator checks"),
        (chains, "run", "chain record"),
        (torch_ops._Operator, "_function", "autograd Function"),
        (functional, "_dispatch", "dispatch"),
        (cupy.cuda.driver, "launchKernel", "launch"),
    ):
        setattr(owner, attribute, _marked(getattr(owner, attribute), name))


def main() -> None:
    wanted = sys.argv[1:] or ["QKV", "KV-cache"]
    _install()
    for block in BLOCKS:
        if not any(w in block.name for w in wanted):
            continue
        inputs = [torch.randn(s, device="cuda", requires_grad=True) for s in block.shapes]
        outs = block.theirs(*inputs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        grads = [torch.randn_like(o) for o in outs]
        at: dict[str, list[float]] = {}
        for step in range(120):
            for i in inputs:
                i.grad = None
            torch.cuda.synchronize()
            _MARKS.clear()
            start = time.perf_counter()
            result = block.ours(*inputs)
            _MARKS.append(("returned", time.perf_counter()))
            forward = list(_MARKS)
            result = list(result) if isinstance(result, (list, tuple)) else [result]
            torch.autograd.backward(result, grads)
            if step >= 20:
                for k, (name, t) in enumerate(forward):
                    at.setdefault(f"{k:02d} {name}", []).append((t - start) * 1e6)
        print(f"{block.name}: µs from the call's start (median)")
        for name, values in at.items():
            print(f"  {name:24s} {statistics.median(values):7.1f}")


if __name__ == "__main__":
    main()
