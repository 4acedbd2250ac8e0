"""The CPU engine's thread count against the graphs section's CPU patterns: each compiled
model's bound dispatch with 1, 2, 4, ... threads, beside onnxruntime and np.copyto of the
output bytes (one thread, and the same copy cut across every core).

    python benchmarks/cpu_threads.py
"""

from __future__ import annotations

import os
import timeit
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import dmlops
import dmlops.onnx as dml_onnx
from dmlops.backends import get_backend
from dmlops.bench.graphs import PATTERNS


def best(fn, number: int = 20) -> float:  # type: ignore[no-untyped-def]
    fn()
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def main() -> None:
    import onnxruntime as ort

    cores = os.cpu_count() or 1
    backend = get_backend("numpy")
    counts = sorted({1, 2, 4, 8, cores} & set(range(1, cores + 1)))
    print(f"cores {cores}; times in µs (best of 7)")
    print(
        "| pattern | MB out | "
        + " | ".join(f"{t} thr" for t in counts)
        + " | ORT | copyto 1 | copyto all |"
    )
    rng = np.random.default_rng(0)
    pool = ThreadPoolExecutor(cores)
    for p in PATTERNS:
        shapes = p.shapes(False)
        model = p.model(shapes)
        arrays = {k: rng.standard_normal(v, dtype=np.float32) for k, v in shapes.items()}
        cells = []
        for t in counts:
            backend.threads = t
            dmlops.functional.clear_cache()
            compiled = dml_onnx.compile(model, arrays, dmlops.Device())
            op = compiled.operator
            op._executor = None  # compiled models are cached: a new executor for this count
            outs = [
                np.empty(s, dtype)
                for s, dtype in (compiled.output_type(k) for k in range(len(compiled.outputs)))
            ]
            table = op.bind(
                [arrays[n] for n in compiled.data_inputs], [o.reshape(-1) for o in outs]
            )
            cells.append(best(table.dispatch))
        backend.threads = cores
        options = ort.SessionOptions()
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        cells.append(best(lambda s=session, x=arrays: s.run(None, x)))
        nbytes = sum(
            int(np.prod(s)) * 4
            for s in (compiled.output_type(k)[0] for k in range(len(compiled.outputs)))
        )
        a, b = np.empty(nbytes // 4, np.float32), np.ones(nbytes // 4, np.float32)
        cells.append(best(lambda a=a, b=b: np.copyto(a, b)))
        bands = np.array_split(np.arange(a.size), cores)

        def band(r: np.ndarray, a: np.ndarray = a, b: np.ndarray = b) -> None:
            np.copyto(a[r[0] : r[-1] + 1], b[r[0] : r[-1] + 1])

        def all_cores(bands: list[np.ndarray] = bands) -> None:
            list(pool.map(band, bands))

        cells.append(best(all_cores))
        print(
            f"| {p.name} | {nbytes / 1e6:.1f} | " + " | ".join(f"{c:.0f}" for c in cells) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
