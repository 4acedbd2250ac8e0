"""Where a warm small GPU call's host time goes (the performance page's "where a warm call's
host time goes"): the whole call, torch's, the cached call's hot part (output, addresses,
launch), the launch alone, and the call with its launch made a no-op; then torch's own
bindings per tensor over 1,024 tensors. µs, best of 7 runs of 2,000 calls.

    python benchmarks/host_parts.py
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from profile_calls import cases

from dmlops.bench.common import best_per_call
from dmlops.calls import dispatch


def per_call(fn: Callable[[], Any], n: int = 2000) -> float:
    return best_per_call(fn, n, torch.cuda.synchronize, warm=200, runs=7) * 1e6


def _read_all(getter: Callable[[Any], Any], ts: list[Any]) -> tuple[Any, ...]:
    return tuple(map(getter, ts))


def parts(
    ours: Callable[[], Any], theirs: Callable[[], Any], ins: list[Any], out: Any
) -> list[float]:
    """(whole call, torch's, the hot part, the launch alone, the call without its launch)."""
    dispatch.clear_cache()
    for _ in range(5):
        ours()
    ((_, (call, _)),) = list(dispatch._CACHE.items.items())[-1:]
    hot = call.hot
    whole, torch_time = per_call(ours), per_call(theirs)
    hot_time = per_call(lambda: hot(ins, out))
    flats = list(map(torch.Tensor.data_ptr, ins))
    written = [hot(ins, out).data_ptr()]
    run, queue = call.run, call.queue
    launch = per_call(lambda: run(flats, written, queue(None)))
    try:  # the same call with the backend's launch made a no-op
        call.run = lambda *a: None
        call.hot = call._hot_call(call.lean)
        no_launch = per_call(ours)
    finally:
        call.run, call.hot = run, hot
    return [whole, torch_time, hot_time, launch, no_launch]


def main() -> None:
    calls = cases()
    x = calls["gather"][2][0]
    print(f"{'case':18} {'whole':>7} {'torch':>7} {'hot':>7} {'launch':>7} {'no launch':>9}")
    for name in ("gather", "scatter_nd out=", "gather_elements"):
        ours, theirs, ins, out = calls[name]
        print(f"{name:18} " + " ".join(f"{t:7.2f}" for t in parts(ours, theirs, ins, out)))
    ts = calls["join 1024 out="][2]
    base = torch._C.TensorBase
    getters = {
        "get_device": base.get_device,
        "dtype": base.dtype.__get__,
        "shape": base.shape.__get__,
        "stride()": base.stride,
        "data_ptr": base.data_ptr,
    }
    for label, getter in getters.items():
        each = per_call(partial(_read_all, getter, ts), n=100) / len(ts)
        print(f"a tensor's {label:12} {each:.3f} µs")
    print(f"new_empty {per_call(lambda: x.new_empty((32, 64))):.2f} µs a call")
    print(f"torch.cat, a tensor {per_call(lambda: torch.cat(ts, 0), n=100) / len(ts):.3f} µs")


if __name__ == "__main__":
    main()
