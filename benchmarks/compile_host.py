"""Host time of a compiled training step, dmlops' operators against torch's own code, on
tiny inputs (the host's work alone: guards, AOTAutograd's wrappers, launches), both compiled
with fullgraph=True and timed in turn for several rounds; then the forward alone without
gradients. CUDA when present, else the CPU.

    python benchmarks/compile_host.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import torch

from dmlops.bench.common import best_per_call
from dmlops.bench.torch_steps import BLOCKS, _step

TINY = {
    "Focus stem": [(1, 1, 4, 4)],
    "QKV split + heads": [(1, 2, 3 * 16 * 64)],
    "pixel unshuffle": [(1, 1, 4, 4)],
    "KV-cache append": [(1, 1, 3, 4), (1, 1, 1, 4)],
    "slice of transposed view": [(1, 4, 4)],
}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    print("| block | dmlops step | torch step | ratio | dmlops forward | torch forward | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for block in BLOCKS:
        inputs = [torch.randn(s, device=device, requires_grad=True) for s in TINY[block.name]]
        grads = [torch.randn_like(o) for o in _step(block.theirs, inputs, None)]
        plain = [i.detach() for i in inputs]
        compiled = {}
        for who, fn in (("dmlops", block.ours), ("torch", block.theirs)):
            torch._dynamo.reset()
            c = torch.compile(fn, fullgraph=True)

            def step(c: Any = c, inputs: Any = inputs, grads: Any = grads) -> None:
                for i in inputs:
                    i.grad = None
                _step(c, inputs, grads)

            with torch.no_grad():
                c(*plain)
            for _ in range(20):
                step()
            compiled[who] = (step, c)
        steps: dict[str, list[float]] = {"dmlops": [], "torch": []}
        forwards: dict[str, list[float]] = {"dmlops": [], "torch": []}
        for _ in range(rounds):
            for who, (step, c) in compiled.items():
                steps[who].append(best_per_call(step, 300, sync, warm=0, runs=1))
                with torch.no_grad():
                    forward = lambda c=c, plain=plain: c(*plain)  # noqa: E731
                    forwards[who].append(best_per_call(forward, 300, sync, warm=0, runs=1))
        s = {w: statistics.median(v) * 1e6 for w, v in steps.items()}
        f = {w: statistics.median(v) * 1e6 for w, v in forwards.items()}
        print(
            f"| {block.name} | {s['dmlops']:.1f} µs | {s['torch']:.1f} µs | "
            f"{s['dmlops'] / s['torch']:.2f} | {f['dmlops']:.1f} µs | {f['torch']:.1f} µs | "
            f"{f['dmlops'] / f['torch']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
