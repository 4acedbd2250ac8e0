"""The CPU engine's tail latency against its settings, on a many-core host: a QKV-shaped
split + head transpose (12.6 MB) bound once and dispatched 400 times, idle and beside
spinning processes, for several thread counts and spin times; and what fresh outputs cost
(first-touch page faults) against preallocated ones. Prints one line per variant."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.bench.contention import latencies


def percentiles(fn, calls=400):  # type: ignore[no-untyped-def]
    """(median, 99th percentile, worst) in µs, warmed up as the contention section does."""
    times = latencies(fn, calls)
    return times[calls // 2] * 1e6, times[int(calls * 0.99)] * 1e6, times[-1] * 1e6


def main() -> None:
    x = np.random.default_rng(0).standard_normal((1, 1024, 3072), dtype=np.float32)
    heads = [
        x[..., 1024 * k : 1024 * (k + 1)].reshape(1, 1024, 16, 64).transpose(0, 2, 1, 3)
        for k in range(3)
    ]
    outs = [np.empty((1, 16, 1024, 64), np.float32) for _ in range(3)]

    def bound() -> None:
        for h, o in zip(heads, outs, strict=True):
            dmlops.slice1(h, [0] * 4, list(h.shape), [1] * 4, out=o)

    def fresh() -> None:
        for h in heads:
            dmlops.slice1(h, [0] * 4, list(h.shape), [1] * 4)

    def numpy_fresh() -> None:
        for h in heads:
            np.ascontiguousarray(h)

    def numpy_out() -> None:
        for h, o in zip(heads, outs, strict=True):
            np.copyto(o, h)

    for busy in (0, 1, 2):
        spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)
        ]
        time.sleep(0.2)
        try:
            everyone = len(__import__("os").sched_getaffinity(0))
            for threads in (everyone, max(1, everyone // 2)):
                dmlops.set_num_threads(threads)
                for spin_us in (50, 0):
                    cpu_engine.configure(spin_us=spin_us)
                    m, p99, worst = percentiles(bound)
                    print(
                        f"busy {busy} threads {threads:2d} spin {spin_us:3d}: out= median "
                        f"{m:7.1f} us p99 {p99:7.1f} max {worst:7.1f}"
                    )
                cpu_engine.configure(spin_us=50)
            dmlops.set_num_threads(everyone)
            for name, fn in (
                ("fresh", fresh),
                ("numpy fresh", numpy_fresh),
                ("numpy out=", numpy_out),
            ):
                m, p99, worst = percentiles(fn, 100)
                print(f"busy {busy} {name:12s}: median {m:7.1f} us p99 {p99:7.1f} max {worst:7.1f}")
        finally:
            for s in spinners:
                s.kill()


if __name__ == "__main__" and "--per-core" not in sys.argv:
    main()


def per_core() -> None:
    """Each graphs-section chain on one thread: the engine against the numpy engine's views
    running the same plan into the same preallocated buffers (medians of rounds in turn)."""
    import statistics

    import dmlops.onnx
    from dmlops.backends import numpy_backend as nb
    from dmlops.bench.graphs import PATTERNS

    for p in PATTERNS:
        shapes = p.shapes(False)
        rng = np.random.default_rng(0)
        xs = {n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes.items()}
        compiled = dmlops.onnx.compile(p.model(shapes), xs)
        op = compiled.operator  # type: ignore[union-attr]
        outs = [
            np.empty(t.sizes, np.float32).reshape(-1).view(np.uint8)
            for _, t in op.desc.output_fields()
        ]
        ins = [xs[n].reshape(-1).view(np.uint8) for n in compiled.data_inputs]  # type: ignore[union-attr]
        engine = nb.NumpyBackend(threads=1).executor(op.plan)
        cpu_engine.set_enabled(False)
        views = nb.NumpyBackend(threads=1).executor(op.plan)
        cpu_engine.set_enabled(True)
        ours, theirs = [], []

        def run_engine(engine=engine, ins=ins, outs=outs) -> None:  # type: ignore[no-untyped-def]
            engine(ins, outs)

        def run_views(views=views, ins=ins, outs=outs) -> None:  # type: ignore[no-untyped-def]
            views(ins, outs)

        for _ in range(7):
            ours.append(percentiles(run_engine, 40)[0])
            theirs.append(percentiles(run_views, 40)[0])
        print(
            f"one thread, {p.name[:34]:34s}: engine {statistics.median(ours):8.1f} us, "
            f"numpy views {statistics.median(theirs):8.1f} us"
        )


if __name__ == "__main__" and "--per-core" in sys.argv:
    per_core()
