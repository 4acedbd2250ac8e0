"""The CPU KV-cache append (join along time of [1,32,511,128] and [1,32,1,128] fp32, the
bench's graphs case): its runs as one table (one parallel region of word loops) or as its
copies' own compiled kernels (the engine's choice for runs of 64 KiB or more), each with
long runs cut into pieces of several sizes, then the copy's own kernel on several thread
counts, against onnxruntime and the all-cores copy of the same bytes; medians of 300 calls,
same process.

    python benchmarks/kv_cpu_probe.py
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import dmlops
from dmlops import BufferTensorDesc as B
from dmlops import DataType as D
from dmlops.backends import compiled, numpy_backend
from dmlops.bench.common import all_cores_copy, median_cpu


def median_us(fn: Callable[[], object], n: int = 300) -> float:
    for _ in range(30):
        fn()
    return median_cpu(fn, n) * 1e6


def bound(cache: np.ndarray, new: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    g = dmlops.Graph()
    parts = [g.input(B(D.FLOAT32, list(a.shape))) for a in (cache, new)]
    op = g.compile([g.join(parts, 2)], dmlops.Device(backend="numpy"))
    executor = numpy_backend.NumpyBackend.instance().executor(op.plan)
    return lambda: executor([cache, new], [out])


def main() -> None:
    cache = np.random.default_rng(0).random((1, 32, 511, 128), dtype=np.float32)
    new = np.random.default_rng(1).random((1, 32, 1, 128), dtype=np.float32)
    out = np.empty((1, 32, 512, 128), np.float32)
    want = np.concatenate([cache, new], 2)
    rows: dict[str, float] = {}
    tables = (compiled.run_table, compiled.rows_table, compiled.strided_table)
    for piece in (256 << 10, 128 << 10, 64 << 10, 32 << 10):
        compiled._PIECE = piece
        for label, one_region in (("table of runs", True), ("separate copies", False)):
            compiled._LONG_RUN = 1 << 62 if one_region else 64 << 10  # (the engine's choice)
            if not one_region:
                compiled.run_table = compiled.rows_table = compiled.strided_table = (  # type: ignore[assignment]
                    lambda copies: None
                )
            run = bound(cache, new, out)
            out[...] = 0
            run()
            assert np.array_equal(out, want)
            rows[f"{label}, pieces of {piece >> 10} KiB"] = median_us(run)
            compiled.run_table, compiled.rows_table, compiled.strided_table = tables
    compiled._PIECE = 256 << 10
    import numba

    cores = numba.config.NUMBA_NUM_THREADS
    for threads in sorted({2, 4, 8, 12, cores} & set(range(1, cores + 1))):
        numba.set_num_threads(threads)
        for piece in (256 << 10, 64 << 10):
            compiled._PIECE = piece
            rows[f"copy's own kernel on {threads} threads, pieces of {piece >> 10} KiB"] = (
                median_us(bound(cache, new, out))
            )
    numba.set_num_threads(cores)
    compiled._PIECE = 256 << 10
    rows[f"(numba's threading layer: {numba.threading_layer()})"] = 0.0
    rows["np.concatenate(out=)"] = median_us(lambda: np.concatenate([cache, new], 2, out=out))
    # (a source never written would read the kernel's shared zero page: no traffic)
    flat_src, flat_dst = out.copy(), np.empty_like(out)
    rows["all-cores copy of the same bytes"] = median_us(all_cores_copy(flat_dst, flat_src))
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            [helper.make_node("Concat", ["cache", "new"], ["y"], axis=2)],
            "kv",
            [
                helper.make_tensor_value_info("cache", TensorProto.FLOAT, list(cache.shape)),
                helper.make_tensor_value_info("new", TensorProto.FLOAT, list(new.shape)),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out.shape))],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        feeds = {"cache": cache, "new": new}
        rows["onnxruntime"] = median_us(lambda: sess.run(None, feeds))
        del onnx
    except ImportError:
        pass
    print("| variant | µs |\n| --- | ---: |")
    for name, us in rows.items():
        print(f"| {name} | {us:.1f} |")


if __name__ == "__main__":
    main()
