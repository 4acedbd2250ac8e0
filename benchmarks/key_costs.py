"""What a call's signature costs on torch tensors: one tensor's key and the keys of 4, 64
and 1,024 tensors (`library_keys`), keyed before (the warm case: their guards remembered).

    python benchmarks/key_costs.py [cpu|cuda]   (default: cuda where there is a GPU)
"""

from __future__ import annotations

import sys
import timeit

import torch

from dmlops.backends.library_keys import array_keys, many_array_keys


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    one, many = array_keys()[torch.Tensor], many_array_keys()[torch.Tensor]
    print(f"{'tensors':>8s} {'key, ns':>10s}  ({device})")
    for n in (1, 4, 64, 1024):
        ts = [torch.zeros(16, 64, device=device) for _ in range(n)]
        fn, arg = (one, ts[0]) if n == 1 else (many, ts)
        fn(arg)  # (keyed once: the warm case)
        calls = max(200, 200_000 // n)
        best = min(timeit.repeat(lambda: fn(arg), number=calls, repeat=3)) / calls  # noqa: B023
        print(f"{n:8d} {best * 1e9:10.0f}")


if __name__ == "__main__":
    main()
