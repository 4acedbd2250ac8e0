"""The CPU engine's streaming stores: each large copy with every store kept in the caches
against its contiguous runs streamed past them, with numpy's copy beside; float32, medians
over `calls` calls, the least and most of three alternations, in ms. Prints one line per
case, and the job size from which this machine's engine streams by default.

    python benchmarks/streaming.py [THREADS] [--plot PNG]   (threads: the engine's own count)

`--plot` also draws each case's least median of the three, streamed and numpy as ratios to
the cached stores' (bars; below 1 is faster).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.backends.cpu_engine.caches import last_level_cache_bytes
from dmlops.bench.contention import latencies
from dmlops.bench.plot import plot_ratios

CACHED = 1 << 62  # (no job this large: every store kept in the caches)


def _cases() -> dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]]:
    """(dmlops call, numpy call) of each case."""
    from dmlops.bench.graphs import PATTERNS, bound_on_cpu

    rng = np.random.default_rng(1)

    def f(*shape: int) -> np.ndarray[Any, Any]:
        return rng.standard_normal(shape, dtype=np.float32)

    parts, big_parts = [f(64, 256, 64) for _ in range(4)], [f(64, 1024, 64) for _ in range(4)]
    big = f(1024, 128, 128)
    channels_last = f(8, 64, 128, 128).transpose(0, 2, 3, 1)
    heads = f(16, 512, 3 * 16 * 64)[:, :, :1024].reshape(16, 512, 16, 64).transpose(0, 2, 1, 3)
    images = f(8, 64, 256, 256)

    def whole(v: Any) -> Callable[[], Any]:
        return lambda: dmlops.slice1(v, [0] * v.ndim, list(v.shape), [1] * v.ndim)

    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]] = {
        "join of 4 x 4 MiB": (lambda: dmlops.join(parts, 1), lambda: np.concatenate(parts, 1)),
        "join of 4 x 16 MiB": (
            lambda: dmlops.join(big_parts, 1),
            lambda: np.concatenate(big_parts, 1),
        ),
        "4-way split of 64 MiB": (
            lambda: dmlops.split(big, 1, [32] * 4),
            lambda: [a.copy() for a in np.split(big, 4, 1)],
        ),
        "head transpose, 32 MiB (256-B rows)": (whole(heads), lambda: np.ascontiguousarray(heads)),
        "reversed rows, 64 MiB (not streamed)": (
            lambda: dmlops.slice1(big, [0, 0, 0], list(big.shape), [1, 1, -1]),
            lambda: np.ascontiguousarray(big[:, :, ::-1]),
        ),
        "NCHW -> NHWC, 32 MiB (tiles, not streamed)": (
            whole(channels_last),
            lambda: np.ascontiguousarray(channels_last),
        ),
        "stride-2 slice 64 -> 16 MiB (not streamed)": (
            lambda: dmlops.slice(images, [0] * 4, [8, 64, 128, 128], [1, 1, 2, 2]),
            lambda: np.ascontiguousarray(images[:, :, ::2, ::2]),
        ),
    }
    for p in PATTERNS:
        bound = bound_on_cpu(p, p.model(p.shapes(False)))
        cases[f"{p.name.split(' (')[0]}, bound graph"] = (
            bound.dispatch,
            lambda p=p, ins=bound.ins: [  # type: ignore[misc]
                np.ascontiguousarray(w) for w in p.reference(np, ins)
            ],
        )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("threads", nargs="?", type=int, help="the engine's thread count")
    parser.add_argument("--plot", metavar="PNG", help="also draw the ratios into this file")
    args = parser.parse_args()
    if cpu_engine.native() is None:
        raise SystemExit("the CPU engine is not built")
    if args.threads:
        dmlops.set_num_threads(args.threads)
    threads = dmlops.get_num_threads()
    calls = 60 if threads == 1 else 150
    default = cpu_engine.DEFAULTS["streaming_bytes"]
    print(
        f"threads {threads}; last-level cache {last_level_cache_bytes() >> 20} MiB; jobs of "
        f"{default / (1 << 20):g} MiB or more stream by default"
    )
    print(f"{'case':44s} {'cached':>15s} {'streamed':>15s} {'numpy':>15s}   (ms, least/most)")
    least: dict[str, dict[str, float]] = {}
    for name, (ours, numpy_call) in _cases().items():
        got: dict[str, list[float]] = {"cached": [], "streamed": [], "numpy": []}
        for _ in range(3):
            for mode, threshold in (("cached", CACHED), ("streamed", 1)):
                cpu_engine.configure(streaming_bytes=threshold)
                got[mode].append(statistics.median(latencies(ours, calls)))
            if numpy_call is not None:
                got["numpy"].append(statistics.median(latencies(numpy_call, calls)))
        cpu_engine.configure(streaming_bytes=default)
        cells = [f"{min(v) * 1e3:7.3f}/{max(v) * 1e3:<7.3f}" for v in got.values() if v]
        print(f"{name:44s} " + " ".join(cells), flush=True)
        least[name] = {mode: min(v) for mode, v in got.items() if v}
    if args.plot:
        plot_ratios(least, "cached", f"{threads} threads", args.plot)


if __name__ == "__main__":
    main()
