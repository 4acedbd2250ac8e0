"""Where a batch of ten bound WebGPU dispatches and one wait spends its time (the layouts
section's measure): host time to encode the ten, to submit the held pass and to wait; GPU
time (timestamp queries) of one dispatch alone and of ten in one pass; and the batch's time
per call with the held pass submitted at the end, after the first dispatch, or after every
one (medians of 30 batches).

    python benchmarks/webgpu_batches.py [CASE-SUBSTRING ...]   (the 5-D box, the 8-D box,
                                                                the float16 slice of x.T)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dmlops import Device
from dmlops.bench import layouts
from dmlops.bench.webgpu import _backend, layout_arrays

CASES = ["5-D box", "8-D box", "float16 slice of x.T"]
FLUSHES: dict[str, Callable[[int], bool]] = {  # submit the held pass after dispatch k?
    "held": lambda k: False,
    "first at once": lambda k: k == 0,
    "every one": lambda k: True,
}


def _us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def _pass_seconds(backend: Any, dispatches: list[Any], repeat: int) -> float:
    """GPU seconds of one compute pass running `dispatches` `repeat` times (timestamps)."""
    wgpu, device = backend.wgpu, backend.device
    query = device.create_query_set(type="timestamp", count=2)
    usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
    resolved = device.create_buffer(size=16, usage=usage)
    backend.synchronize()
    encoder = device.create_command_encoder()
    writes = {"query_set": query, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
    compute = encoder.begin_compute_pass(timestamp_writes=writes)
    for _ in range(repeat):
        for pipeline, group, (x, y), _, _ in dispatches:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(x, y, 1)
    compute.end()
    encoder.resolve_query_set(query, 0, 2, resolved, 0)
    device.queue.submit([encoder.finish()])
    ticks = np.frombuffer(device.queue.read_buffer(resolved, 0, 16), np.uint64)
    return float(ticks[1] - ticks[0]) * backend._tick_seconds()


def _dispatches(backend: Any, table: Any) -> list[Any]:
    """The (pipeline, bind group, grid, ...) dispatches one call of `table` runs."""
    captured: list[Any] = []
    run = backend.run
    backend.run = lambda d, steps=None: (captured.append(d), run(d, steps))
    try:
        table.dispatch()
    finally:
        backend.run = run
    return list(captured[0])


def main() -> None:
    wanted = sys.argv[1:] or CASES
    backend = _backend()
    native = backend.native
    if native is None or not backend.timestamps:
        raise SystemExit("needs wgpu-native's encoder and timestamp queries")
    print(
        "| case | encode 10 | submit | wait | total | GPU one | GPU each of 10 in a pass | "
        + " | ".join(f"{m}, a call" for m in FLUSHES)
        + " |"
    )
    print("| --- " * (7 + len(FLUSHES)) + "|")
    for case in layouts.CASES:
        if not any(w in case.name for w in wanted):
            continue
        _, x, out = layout_arrays(case)
        table = Device(backend="webgpu").create_operator(case.desc).bind([x], [out])
        dispatches = _dispatches(backend, table)
        early, native.early_workgroups = native.early_workgroups, 0  # (held: the plain case)
        parts: list[list[float]] = [[], [], [], []]
        for _ in range(30):
            backend.synchronize()
            t0 = time.perf_counter()
            for _ in range(10):
                table.dispatch()
            t1 = time.perf_counter()
            native.flush()
            t2 = time.perf_counter()
            backend.synchronize()
            t3 = time.perf_counter()
            for part, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t3 - t0), strict=True):
                part.append(seconds)
        per_call: dict[str, list[float]] = {m: [] for m in FLUSHES}
        for _ in range(30):
            for mode, flush_after in FLUSHES.items():
                backend.synchronize()
                t0 = time.perf_counter()
                for k in range(10):
                    table.dispatch()
                    if flush_after(k):
                        native.flush()
                backend.synchronize()
                per_call[mode].append((time.perf_counter() - t0) / 10)
        native.early_workgroups = early
        one = statistics.median(_pass_seconds(backend, dispatches, 1) for _ in range(10))
        ten = statistics.median(_pass_seconds(backend, dispatches, 10) for _ in range(10))
        cells = [f"{_us(p):.1f} µs" for p in parts]
        cells += [f"{one * 1e6:.1f} µs", f"{ten * 1e5:.1f} µs"]
        cells += [f"{_us(v):.1f} µs" for v in per_call.values()]
        print(f"| {case.name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
