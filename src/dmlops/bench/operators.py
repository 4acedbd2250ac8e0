"""Benchmark section "operators": each operator on large tensors against the copy ceiling,
numpy, torch, CuPy, onnxruntime (CPU) and JAX."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..device import Device
from ..ops import JoinDesc, OperatorDesc, Slice1Desc, SliceDesc, SplitDesc
from ..tensor import BufferTensorDesc, DataType
from .common import (
    ALL_CORES,
    DRAM_CEILING,
    Fn,
    Result,
    all_cores_copy,
    dram_copy_time,
    have,
    median_cpu,
    median_gpu,
)

__all__ = ["run"]

SECTION = "operators"
OURS = "dmlops (bound)"


@dataclass
class Case:
    """A benchmark case: the dmlops descriptor, its input shapes and peer implementations."""

    name: str
    desc: OperatorDesc
    in_shapes: list[tuple[int, ...]]
    numpy_fn: Callable[[list[Any], list[Any]], Any]  # writes into outs, numpy or cupy module style
    torch_fn: Callable[[list[Any]], Any]
    jax_fn: Callable[[Any, list[Any]], Any]
    onnx: tuple[str, dict[str, Any]] | None
    latency: bool = False


def _t(shape: tuple[int, ...]) -> BufferTensorDesc:
    return BufferTensorDesc(DataType.FLOAT32, shape)


def make_cases(rows: int) -> list[Case]:
    """The benchmark cases for a [rows, 1024] float32 input."""
    cols = 1024
    r0, r1, c0, c1 = rows // 8, rows // 8 + 3 * rows // 4, 128, 896
    big = (rows, cols)
    parts = [256, 384, 384]
    cases = [
        Case(
            "slice rows",
            SliceDesc(_t(big), _t((r1 - r0, c1 - c0)), [r0, c0], [r1 - r0, c1 - c0], [1, 1]),
            [big],
            lambda x, o: o[0].__setitem__(Ellipsis, x[0][r0:r1, c0:c1]),
            lambda x: x[0][r0:r1, c0:c1].clone(),
            lambda jnp, x: x[0][r0:r1, c0:c1],
            ("Slice", {"starts": [r0, c0], "ends": [r1, c1], "axes": [0, 1], "steps": [1, 1]}),
        ),
        Case(
            "slice strides 2x2",
            SliceDesc(_t(big), _t((rows // 2, cols // 2)), [0, 0], [rows // 2, cols // 2], [2, 2]),
            [big],
            lambda x, o: o[0].__setitem__(Ellipsis, x[0][::2, ::2]),
            lambda x: x[0][::2, ::2].clone(),
            lambda jnp, x: x[0][::2, ::2],
            ("Slice", {"starts": [0, 0], "ends": [rows, cols], "axes": [0, 1], "steps": [2, 2]}),
        ),
        Case(
            "slice1 reverse 2 axes",
            Slice1Desc(_t(big), _t(big), [0, 0], [rows, cols], [-1, -1]),
            [big],
            lambda x, o: o[0].__setitem__(Ellipsis, x[0][::-1, ::-1]),
            lambda x: x[0].flip((0, 1)),
            lambda jnp, x: x[0][::-1, ::-1],
            (
                "Slice",
                {
                    "starts": [-1, -1],
                    "ends": [-(2**62), -(2**62)],
                    "axes": [0, 1],
                    "steps": [-1, -1],
                },
            ),
        ),
        Case(
            "split 3-way",
            SplitDesc(_t(big), [_t((rows, p)) for p in parts], 1),
            [big],
            lambda x, o: [
                o[i].__setitem__(Ellipsis, x[0][:, a:b])
                for i, (a, b) in enumerate(((0, 256), (256, 640), (640, 1024)))
            ],
            lambda x: [t.clone() for t in x[0].split(parts, 1)],
            lambda jnp, x: jnp.split(x[0], [256, 640], axis=1),
            ("Split", {"axis": 1, "split": parts, "outputs": 3}),
        ),
        Case(
            "split 256-way 1 MiB",
            SplitDesc(_t((256, 1024)), [_t((1, 1024))] * 256, 0),
            [(256, 1024)],
            lambda x, o: [o[i].__setitem__(Ellipsis, x[0][i : i + 1]) for i in range(256)],
            lambda x: [t.clone() for t in x[0].split(1, 0)],
            lambda jnp, x: jnp.split(x[0], 256, axis=0),
            ("Split", {"axis": 0, "split": [1] * 256, "outputs": 256}),
        ),
        Case(
            "join 3-way",
            JoinDesc([_t((rows, p)) for p in parts], _t(big), 1),
            [(rows, p) for p in parts],
            lambda x, o: o[0].__setitem__(Ellipsis, x[0]) if len(x) == 1 else _concat(x, o[0]),
            lambda x: _torch().cat(x, 1),
            lambda jnp, x: jnp.concatenate(x, axis=1),
            ("Concat", {"axis": 1}),
        ),
        Case(
            "seed 4x4 SLICE1 (latency)",
            Slice1Desc(
                _t((1, 1, 4, 4)), _t((1, 1, 2, 2)), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]
            ),
            [(1, 1, 4, 4)],
            lambda x, o: o[0].__setitem__(Ellipsis, x[0][:, :, ::-2, 1::2]),
            lambda x: x[0][:, :, 1::2, 1::2].flip(2).clone(),
            lambda jnp, x: x[0][:, :, ::-2, 1::2],
            None,
            latency=True,
        ),
    ]
    return cases


def _concat(xs: list[Any], out: Any) -> None:
    module = sys.modules[type(out).__module__.split(".")[0]]
    module.concatenate(xs, axis=1, out=out)


def _torch() -> Any:
    import torch

    return torch


def _onnx_model(op: str, attrs: dict[str, Any], in_shapes: list[tuple[int, ...]]) -> bytes:
    from onnx import TensorProto, helper

    inputs = [
        helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s)
        for i, s in enumerate(in_shapes)
    ]
    inits = []
    if op == "Slice":
        names = ["x0"]
        for key in ("starts", "ends", "axes", "steps"):
            inits.append(helper.make_tensor(key, TensorProto.INT64, [len(attrs[key])], attrs[key]))
            names.append(key)
        node = helper.make_node("Slice", names, ["y0"])
        outs = ["y0"]
    elif op == "Split":
        inits.append(
            helper.make_tensor("split", TensorProto.INT64, [len(attrs["split"])], attrs["split"])
        )
        outs = [f"y{i}" for i in range(attrs["outputs"])]
        node = helper.make_node("Split", ["x0", "split"], outs, axis=attrs["axis"])
    else:
        outs = ["y0"]
        node = helper.make_node(
            "Concat", [f"x{i}" for i in range(len(in_shapes))], outs, axis=attrs["axis"]
        )
    graph = helper.make_graph(
        [node],
        op,
        inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def _time_dmlops(
    case: Case, backend: str, xs: list[Any], outs: list[Any], timer: Callable[[Fn], float]
) -> dict[str, float]:
    """dmlops' contenders: bound dispatch, execute, and (latency case) the functional call."""
    op = Device(backend=backend).create_operator(case.desc)
    table = op.bind(xs, outs)
    times = {
        "dmlops (bound)": timer(table.dispatch),
        "dmlops execute": timer(lambda: op.execute(xs, outs)),
    }
    if case.latency:
        import dmlops

        d = case.desc
        assert isinstance(d, Slice1Desc)
        times["dmlops.slice1()"] = timer(
            lambda: dmlops.slice1(
                xs[0], d.input_window_offsets, d.input_window_sizes, d.input_window_strides
            )
        )
    return times


def _bench_cpu(case: Case, reps: int) -> Result:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s, dtype=np.float32) for s in case.in_shapes]
    outs = [np.empty(t.sizes, np.float32) for _, t in case.desc.output_fields()]
    out_bytes = sum(o.nbytes for o in outs)
    res = Result(SECTION, case.name, "cpu", out_bytes, OURS)
    r = 5 * reps if case.latency else reps
    res.times.update(_time_dmlops(case, "numpy", xs, outs, lambda f: median_cpu(f, r)))
    if not case.latency:
        src = np.ones(out_bytes // 4, np.float32)
        dst = np.empty_like(src)
        res.times["np.copyto ceiling"] = median_cpu(lambda: np.copyto(dst, src), r)
        res.times[ALL_CORES] = median_cpu(all_cores_copy(dst, src), r)
        res.times[DRAM_CEILING] = dram_copy_time(out_bytes)
    res.times["numpy"] = median_cpu(lambda: case.numpy_fn(xs, outs), r)
    if have("torch"):
        import torch

        txs = [torch.from_numpy(x) for x in xs]
        res.times["torch"] = median_cpu(lambda: case.torch_fn(txs), r)
    if case.onnx is not None and have("onnxruntime") and have("onnx"):
        import onnxruntime as ort

        sess = ort.InferenceSession(
            _onnx_model(case.onnx[0], case.onnx[1], case.in_shapes),
            providers=["CPUExecutionProvider"],
        )
        feeds = {f"x{i}": x for i, x in enumerate(xs)}
        res.times["onnxruntime"] = median_cpu(lambda: sess.run(None, feeds), r)
    return res


def _bench_gpu(case: Case, reps: int) -> Result:
    import cupy

    rng = cupy.random.default_rng(0)
    xs = [rng.standard_normal(s, dtype=cupy.float32) for s in case.in_shapes]
    outs = [cupy.empty(t.sizes, cupy.float32) for _, t in case.desc.output_fields()]
    out_bytes = sum(int(o.nbytes) for o in outs)
    res = Result(SECTION, case.name, "gpu", out_bytes, OURS)
    wall = case.latency
    res.times.update(_time_dmlops(case, "cuda", xs, outs, lambda f: median_gpu(f, reps, wall)))
    if not case.latency:
        src = cupy.ones(out_bytes // 4, cupy.float32)
        dst = cupy.empty_like(src)
        res.times["d2d copy ceiling"] = median_gpu(
            lambda: dst.data.copy_from_device(src.data, out_bytes), reps
        )
    res.times["cupy"] = median_gpu(lambda: case.numpy_fn(xs, outs), reps, wall)
    if have("torch"):
        import torch

        txs = [torch.utils.dlpack.from_dlpack(x) for x in xs]
        res.times["torch"] = median_gpu(
            lambda: case.torch_fn(txs), reps, wall, torch.cuda.synchronize
        )
    if have("jax"):
        import jax
        import jax.numpy as jnp

        jxs = [jax.device_put(np.asarray(cupy.asnumpy(x))) for x in xs]
        f = jax.jit(lambda *a: case.jax_fn(jnp, list(a)))

        wait: Any = jax.block_until_ready  # (untyped in JAX's stubs)

        def run_jax() -> Any:
            return wait(f(*jxs))

        res.times["jax"] = median_gpu(run_jax, reps, wall=True, sync=lambda: None)
        del jxs
    cupy.get_default_memory_pool().free_all_blocks()
    return res


def run(devices: list[str], reps: int, cpu_mib: int, gpu_mib: int) -> list[Result]:
    """Run every case on the requested devices."""
    results = []
    for dev in devices:
        mib = cpu_mib if dev == "cpu" else gpu_mib
        rows = mib * 1024 * 1024 // (1024 * 4)
        for case in make_cases(rows):
            r = _bench_cpu(case, reps) if dev == "cpu" else _bench_gpu(case, reps)
            results.append(r)
            print(f"  measured {dev}: {case.name}", file=sys.stderr, flush=True)
    return results
