"""What every benchmark section shares: results, timers, the table, the JSON and the plot."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Fn", "Result", "have", "median_cpu", "median_gpu", "gpu_present", "format_table",
    "all_cores_copy", "ALL_CORES", "DRAM_CEILING", "dram_copy_time", "HOLD", "hold_stream",
]  # fmt: skip

ALL_CORES = "copy ceiling, all cores"
# the all-cores copy of buffers far larger than any cache, scaled to a case's bytes: what
# the memory system moves, where ALL_CORES (the case's own bytes, copied again and again)
# may be served from the caches
DRAM_CEILING = "DRAM copy ceiling, all cores (derived)"
_DRAM_BYTES = 512 << 20  # each of the two buffers

Fn = Callable[[], Any]


def have(module: str) -> bool:
    """Whether a module can be imported."""
    return importlib.util.find_spec(module) is not None


@dataclass
class Result:
    """One case on one device: each contender's median seconds.

    `reference` names the contender the table's ratios divide by; `count` is the
    number of arrays (call-cost section), else None; `details` holds notes per contender
    (dask section: tasks and memory peaks) printed under the table.
    """

    section: str
    case: str
    device: str
    output_bytes: int
    reference: str
    times: dict[str, float] = field(default_factory=dict)
    count: int | None = None
    details: dict[str, str] = field(default_factory=dict)

    def gbps(self, name: str) -> float:
        """Bandwidth counted as bytes read plus written (2 x output bytes)."""
        return 2 * self.output_bytes / self.times[name] / 1e9

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> Result:
        """A result written by as_json."""
        return cls(
            item["section"],
            item["case"],
            item["device"],
            int(item["output_bytes"]),
            item["reference"],
            dict(item["median_seconds"]),
            item.get("count"),
            dict(item.get("details", {})),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "case": self.case,
            "device": self.device,
            "output_bytes": self.output_bytes,
            "count": self.count,
            "reference": self.reference,
            "median_seconds": self.times,
            "details": self.details,
        }


def median_cpu(fn: Fn, reps: int) -> float:
    """Median wall time of `fn` after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def medians_in_turn(timers: list[Callable[[], float]], rounds: int) -> list[float]:
    """Each timer's median over `rounds` rounds, the timers run in turn within a round (a
    machine whose speed drifts, as lavapipe on a small VM does by ±40 % a minute, then
    shifts every contender alike), each round starting one timer further on (the one run
    just after another contender finds the caches as that one left them: on the 2-core VM
    that alone moved a copy by 10-30 %, so no timer is always that one)."""
    count = len(timers)
    runs = []
    for k in range(rounds):
        times = [0.0] * count
        for i in (*range(k % count, count), *range(k % count)):
            times[i] = timers[i]()
        runs.append(times)
    return [statistics.median(times) for times in zip(*runs, strict=True)]


def best_per_call(fn: Fn, calls: int, sync: Fn, warm: int = 20, runs: int = 5) -> float:
    """Host seconds per call: the best of `runs` runs of `calls` back-to-back calls of `fn`,
    each run ended by `sync()` (a device synchronisation), after `warm` calls."""
    for _ in range(warm):
        fn()
    sync()
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


_HOLD_SOURCE = r"""
extern "C" __global__ void dmlops_bench_hold(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}
"""
# seconds a batched sample's stream is held before its first event: the batch's calls are
# all queued when the device starts them, so the first call's host latency is not counted
# as device time (the call-cost table measures host time)
HOLD = 0.002


@functools.cache
def _hold_kernel() -> Any:
    import cupy

    return cupy.RawKernel(_HOLD_SOURCE, "dmlops_bench_hold")


def hold_stream(seconds: float) -> None:
    """Keep the current CUDA stream busy for `seconds` (one thread spinning on the global
    timer): work queued behind it starts together, the host's launch time out of its timing."""
    import numpy as np

    _hold_kernel()((1,), (1,), (np.uint64(int(seconds * 1e9)),))


def median_gpu(
    fn: Fn,
    reps: int,
    wall: bool = False,
    sync: Fn | None = None,
    batch: int = 1,
    hold: float = 0.0,
) -> float:
    """Median time of `fn`: CUDA events on the current stream around `batch` calls back to
    back (per call: with batch > 1 the device's time where it exceeds the host's, as a
    program with queued work sees it), or (wall) host time to sync. `hold` (seconds): the
    stream is held that long before each sample's first event, so that the first call's
    host latency is queued behind it rather than timed."""
    import cupy

    for _ in range(3):
        out = fn()
    cupy.cuda.Device().synchronize()
    times = []
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(reps):
        if wall:
            t0 = time.perf_counter()
            out = fn()
            if sync is not None:
                sync()
            else:
                cupy.cuda.Device().synchronize()
            times.append(time.perf_counter() - t0)
        else:
            if hold:
                hold_stream(hold)
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / batch)
    del out
    return statistics.median(times)


def gpu_present() -> bool:
    """Whether CuPy sees a CUDA GPU."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no GPU
        return False


def _duration(t: float) -> str:
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.3f} ms"


def format_table(results: list[Result]) -> str:
    """A Markdown table: median time, GB/s, and each contender's time over the reference's."""
    lines = [
        "| section | device | case | contender | median | GB/s | time / reference |",
        "| --- | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in results:
        ref = r.times.get(r.reference)
        for name, t in r.times.items():
            ratio = (
                "reference" if name == r.reference else ("" if ref is None else f"{t / ref:.2f}")
            )
            lines.append(
                f"| {r.section} | {r.device} | {r.case} | {name} | {_duration(t)} | "
                f"{r.gbps(name):.1f} | {ratio} |"
            )
    notes = [f"- {r.case}, {name}: {text}" for r in results for name, text in r.details.items()]
    return "\n".join(lines + (["", *notes] if notes else []))


def dram_copy_time(out_bytes: int) -> float:
    """Seconds an all-cores copy takes per `out_bytes` when its buffers live in DRAM."""
    return _dram_seconds_per_byte() * out_bytes


@functools.cache
def _dram_seconds_per_byte() -> float:
    """The median of copying 512 MiB between two fresh buffers on every core, per byte
    (measured once per process)."""
    import numpy as np

    src = np.ones(_DRAM_BYTES, np.uint8)
    dst = np.empty_like(src)
    return median_cpu(all_cores_copy(dst, src), 5) / _DRAM_BYTES


def all_cores_copy(dst: Any, src: Any) -> Fn:
    """A copy of contiguous array `src` into `dst` on every thread the CPU engine may use
    (its pool, pieces taken dynamically) where the engine is there, else np.copyto in one
    band per thread on a thread pool (numpy releases the GIL while it copies): the CPU's
    multi-threaded copy ceiling for those bytes, measured as the engine runs a plan."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from ..backends import cpu_engine

    d, s = dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
    threads = cpu_engine.get_num_threads()
    if cpu_engine.available():
        made = cpu_engine.EnginePlan.contiguous(s.size)
        return lambda: made.run([s], [d], threads)
    pool = ThreadPoolExecutor(threads)
    bounds = [s.size * k // threads for k in range(threads + 1)]
    bands = [(d[a:b], s[a:b]) for a, b in itertools.pairwise(bounds) if b > a]

    def band(pair: tuple[Any, Any]) -> None:
        np.copyto(*pair)

    return lambda: list(pool.map(band, bands))
