"""CAST float32 -> float16 (32 MiB), NONZERO of a [2048, 2048] uint8 mask, DIAGONAL_MATRIX1's
tril of [16, 1024, 1024] float32 and FILL_VALUE_SEQUENCE's arange of 4M float32 beside BUSY
spinning processes (argv[1]): dmlops, numpy and an onnxruntime session (threads: the CPU set's
count) in the same process, median / 99th percentile of 100 calls (the contention section's
timing), in ms.

    python benchmarks/family_under_load.py BUSY      (taskset -c 0-3 ... for a CPU set)
"""

import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import dmlops
from dmlops.bench.contention import latencies


def session(
    node: object, inputs: int, outputs: int, shape: list[int], initializers: tuple[object, ...] = ()
) -> ort.InferenceSession:
    """An onnxruntime session of one node from input x (and constant initializers) to y, its
    threads as many as the process's CPU set (its default pool pins one to every CPU of the
    machine, outside a set)."""
    graph = helper.make_graph(
        [node],
        "m",
        [helper.make_tensor_value_info("x", inputs, shape)],
        [helper.make_tensor_value_info("y", outputs, None)],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = len(os.sched_getaffinity(0))
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2048, 4096), dtype=np.float32)
    mask = (rng.random((1, 1, 2048, 2048)) < 0.5).astype(np.uint8)
    cast = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16)
    cast_session = session(cast, TensorProto.FLOAT, TensorProto.FLOAT16, list(values.shape))
    nonzero = helper.make_node("NonZero", ["x"], ["y"])
    nonzero_session = session(nonzero, TensorProto.UINT8, TensorProto.INT64, list(mask.shape))
    square = rng.standard_normal((16, 1024, 1024), dtype=np.float32)
    trilu = helper.make_node("Trilu", ["x"], ["y"], upper=0)
    tril_session = session(trilu, TensorProto.FLOAT, TensorProto.FLOAT, list(square.shape))
    start = np.array(1.5, np.float32)
    delta = helper.make_tensor("delta", TensorProto.FLOAT, [], [0.25])
    limit = helper.make_tensor("limit", TensorProto.FLOAT, [], [1.5 + 0.25 * (1 << 22)])
    ranged = helper.make_node("Range", ["x", "limit", "delta"], ["y"])
    range_session = session(ranged, TensorProto.FLOAT, TensorProto.FLOAT, [], (limit, delta))
    cases = {
        "CAST fp32->fp16 32 MiB": {
            "dmlops": lambda: dmlops.cast(values, np.float16),
            "numpy": lambda: values.astype(np.float16),
            "onnxruntime": lambda: cast_session.run(None, {"x": values}),
        },
        "NONZERO [2048,2048] uint8": {
            "dmlops": lambda: dmlops.nonzero(mask),
            "numpy": lambda: np.argwhere(mask),
            "onnxruntime": lambda: nonzero_session.run(None, {"x": mask}),
        },
        "DIAGONAL_MATRIX1 tril [16,1024,1024] fp32": {
            "dmlops": lambda: dmlops.tril(square),
            "numpy": lambda: np.tril(square),
            "onnxruntime": lambda: tril_session.run(None, {"x": square}),
        },
        "FILL_VALUE_SEQUENCE arange 4M fp32": {
            "dmlops": lambda: dmlops.arange(1.5, 1.5 + 0.25 * (1 << 22), 0.25, dtype=np.float32),
            "numpy": lambda: np.arange(1 << 22, dtype=np.float32) * np.float32(0.25) + start,
            "onnxruntime": lambda: range_session.run(None, {"x": start}),
        },
    }
    busy = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    time.sleep(0.3)
    try:
        for case, contenders in cases.items():
            row = []
            for name, fn in contenders.items():
                times = latencies(fn, 100)
                row.append(f"{name} {times[50] * 1e3:.2f}/{times[99] * 1e3:.2f}")
            print(f"[{busy} busy] {case}: " + "; ".join(row), flush=True)
    finally:
        for s in spinners:
            s.kill()
            s.wait()


if __name__ == "__main__":
    main()
