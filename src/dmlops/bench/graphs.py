"""Benchmark section "graphs": real-model chains of data movement as one compiled graph.

A YOLOv5-style Focus stem (four stride-2 slices and a channel concat), a
transformer QKV split with the head reshape and transpose, pixel unshuffle
(reshape, transpose, reshape) and a KV-cache append: each built as an ONNX
model with onnx.helper and compiled by `dmlops.onnx.compile` into one plan.
Timed against the copy ceiling of its output bytes, the same chain op by op
through dmlops' functional API, torch eager and torch.compile (GPU), and
onnxruntime (CPU).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import dmlops

from .common import (
    ALL_CORES,
    DRAM_CEILING,
    Result,
    all_cores_copy,
    dram_copy_time,
    have,
    median_cpu,
)

__all__ = ["BoundOnCpu", "PATTERNS", "bound_on_cpu", "run"]

SECTION = "graphs"
OURS = "dmlops graph (bound)"


@dataclass(frozen=True)
class Pattern:
    """A real-model chain: its ONNX model, input shapes and the same chain in array code."""

    name: str
    model: Callable[[dict[str, tuple[int, ...]]], Any]  # shapes -> ONNX ModelProto
    shapes: Callable[[bool], dict[str, tuple[int, ...]]]  # gpu -> input shapes
    reference: Callable[[Any, list[Any]], list[Any]]  # (xp-like module, inputs) -> outputs
    op_by_op: Callable[[list[Any]], list[Any]]  # dmlops functional, node by node
    module: str  # the same chain as a torch module (exported when torch is there)

    def with_shapes(self, shapes: dict[str, tuple[int, ...]]) -> Pattern:
        """The same chain on inputs of these shapes (on every device)."""

        def fixed(gpu: bool) -> dict[str, tuple[int, ...]]:
            return shapes

        return dataclasses.replace(self, shapes=fixed)


def _i64(name: str, values: list[int]) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _model(
    nodes: list[Any], inputs: dict[str, tuple[int, ...]], outputs: list[str], inits: list[Any]
) -> Any:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "pattern",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


_OFFSETS = ((0, 0), (1, 0), (0, 1), (1, 1))


def _focus_model(shapes: dict[str, tuple[int, ...]]) -> Any:
    from onnx import helper

    _, _, h, w = shapes["x"]
    nodes, inits = [], []
    for k, (a, b) in enumerate(_OFFSETS):
        names = [f"{p}{k}" for p in ("starts", "ends", "axes", "steps")]
        for name, v in zip(names, ([a, b], [h, w], [2, 3], [2, 2]), strict=True):
            inits.append(_i64(name, v))
        nodes.append(helper.make_node("Slice", ["x", *names], [f"s{k}"]))
    nodes.append(helper.make_node("Concat", [f"s{k}" for k in range(4)], ["y"], axis=1))
    return _model(nodes, shapes, ["y"], inits)


def _focus_op_by_op(xs: list[Any]) -> list[Any]:
    x = xs[0]
    n, c, h, w = x.shape
    parts = [
        dmlops.slice(x, [0, 0, a, b], [n, c, h // 2, w // 2], [1, 1, 2, 2]) for a, b in _OFFSETS
    ]
    return [dmlops.join(parts, 1)]


def _qkv_dims(shapes: dict[str, tuple[int, ...]]) -> tuple[int, int, int, int]:
    b, t, e = shapes["x"]
    return b, t, 16, e // 48


def _qkv_model(shapes: dict[str, tuple[int, ...]]) -> Any:
    from onnx import helper

    b, t, h, d = _qkv_dims(shapes)
    nodes = [helper.make_node("Split", ["x", "split"], ["q", "k", "v"], axis=2)]
    inits = [_i64("split", [h * d] * 3), _i64("heads", [b, t, h, d])]
    for z in ("q", "k", "v"):
        nodes.append(helper.make_node("Reshape", [z, "heads"], [f"{z}4"]))
        nodes.append(helper.make_node("Transpose", [f"{z}4"], [f"{z}h"], perm=[0, 2, 1, 3]))
    return _model(nodes, shapes, ["qh", "kh", "vh"], inits)


def _qkv_op_by_op(xs: list[Any]) -> list[Any]:
    x = xs[0]
    b, t, e = x.shape
    h, d = 16, e // 48
    outs = []
    for part in dmlops.split(x, 2, [h * d] * 3):
        heads = part.reshape(b, t, h, d).transpose(0, 2, 1, 3)  # a view: the copy is the node
        outs.append(dmlops.slice1(heads, [0] * 4, list(heads.shape), [1] * 4))
    return outs


def _unshuffle_model(shapes: dict[str, tuple[int, ...]]) -> Any:
    from onnx import helper

    n, c, hr, wr = shapes["x"]
    r = 2
    inits = [
        _i64("six", [n, c, hr // r, r, wr // r, r]),
        _i64("four", [n, c * r * r, hr // r, wr // r]),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "six"], ["x6"]),
        helper.make_node("Transpose", ["x6"], ["t6"], perm=[0, 1, 3, 5, 2, 4]),
        helper.make_node("Reshape", ["t6", "four"], ["y"]),
    ]
    return _model(nodes, shapes, ["y"], inits)


def _unshuffle_op_by_op(xs: list[Any]) -> list[Any]:
    x = xs[0]
    n, c, hr, wr = x.shape
    view = x.reshape(n, c, hr // 2, 2, wr // 2, 2).transpose(0, 1, 3, 5, 2, 4)
    return [
        dmlops.slice1(view, [0] * 6, list(view.shape), [1] * 6).reshape(n, c * 4, hr // 2, wr // 2)
    ]


def _append_model(shapes: dict[str, tuple[int, ...]]) -> Any:
    from onnx import helper

    return _model([helper.make_node("Concat", ["cache", "new"], ["y"], axis=2)], shapes, ["y"], [])


PATTERNS = [
    Pattern(
        "Focus stem (4 stride-2 slices + concat)",
        _focus_model,
        lambda gpu: {"x": (16, 3, 640, 640) if gpu else (2, 3, 640, 640)},
        lambda xp, xs: [xp.concatenate([xs[0][..., a::2, b::2] for a, b in _OFFSETS], 1)],
        _focus_op_by_op,
        "focus",
    ),
    Pattern(
        "QKV split + head reshape/transpose",
        _qkv_model,
        lambda gpu: {"x": (8, 2048, 3072) if gpu else (1, 1024, 3072)},
        lambda xp, xs: [
            p.reshape(xs[0].shape[0], xs[0].shape[1], 16, -1).transpose(0, 2, 1, 3)
            for p in xp.split(xs[0], 3, 2)
        ],
        _qkv_op_by_op,
        "qkv",
    ),
    Pattern(
        "pixel unshuffle (reshape, transpose, reshape)",
        _unshuffle_model,
        lambda gpu: {"x": (16, 16, 256, 256) if gpu else (2, 16, 256, 256)},
        lambda xp, xs: [
            xs[0]
            .reshape(*xs[0].shape[:2], xs[0].shape[2] // 2, 2, xs[0].shape[3] // 2, 2)
            .transpose(0, 1, 3, 5, 2, 4)
            .reshape(xs[0].shape[0], xs[0].shape[1] * 4, xs[0].shape[2] // 2, xs[0].shape[3] // 2)
        ],
        _unshuffle_op_by_op,
        "unshuffle",
    ),
    Pattern(
        "KV-cache append (concat along time)",
        _append_model,
        lambda gpu: (
            {"cache": (8, 32, 1023, 128), "new": (8, 32, 1, 128)}
            if gpu
            else {"cache": (1, 32, 511, 128), "new": (1, 32, 1, 128)}
        ),
        lambda xp, xs: [xp.concatenate(xs, 2)],
        lambda xs: [dmlops.join(xs, 2)],
        "append",
    ),
]


def _torch_module(kind: str) -> Any:
    """The pattern as torch code, for torch's TorchScript exporter."""
    import torch
    from torch import nn

    class Focus(nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return torch.cat([x[..., a::2, b::2] for a, b in _OFFSETS], 1)

    class Qkv(nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            b, t, e = x.shape
            return tuple(
                z.reshape(b, t, 16, e // 48).transpose(1, 2).contiguous() for z in x.chunk(3, -1)
            )

    class Unshuffle(nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return nn.functional.pixel_unshuffle(x, 2)

    class Append(nn.Module):  # type: ignore[misc]
        def forward(self, cache: Any, new: Any) -> Any:
            return torch.cat([cache, new], 2)

    return {"focus": Focus, "qkv": Qkv, "unshuffle": Unshuffle, "append": Append}[kind]()


def _exported(p: Pattern, shapes: dict[str, tuple[int, ...]]) -> tuple[Any, str]:
    """(ONNX model, label): exported by torch's TorchScript exporter when torch is there."""
    if not have("torch"):
        return p.model(shapes), "hand-built ONNX"
    import io

    import onnx
    import torch

    buf = io.BytesIO()
    args = tuple(torch.zeros(s) for s in shapes.values())
    torch.onnx.export(
        _torch_module(p.module), args, buf, input_names=list(shapes), opset_version=17, dynamo=False
    )
    return onnx.load_from_string(buf.getvalue()), "exported by torch.onnx.export"


def _torch_fn(p: Pattern) -> Callable[[list[Any]], list[Any]]:
    import torch

    class _TorchXP:
        @staticmethod
        def concatenate(parts: list[Any], axis: int) -> Any:
            return torch.cat([q.t if isinstance(q, _TorchView) else q for q in parts], axis)

        @staticmethod
        def split(x: Any, n: int, axis: int) -> Any:
            return [_TorchView(t) for t in torch.chunk(x.t, n, axis)]

    def fn(xs: list[Any]) -> list[Any]:
        outs = []
        for o in p.reference(_TorchXP, [_TorchView(x) for x in xs]):
            outs.append(o.t.contiguous() if isinstance(o, _TorchView) else o.contiguous())
        return outs

    return fn


class _TorchView:
    """Enough of numpy's view API on a torch tensor for the patterns' reference code."""

    def __init__(self, t: Any) -> None:
        self.t = t
        self.shape = tuple(t.shape)

    def reshape(self, *shape: int) -> _TorchView:
        return _TorchView(self.t.reshape(*shape))

    def transpose(self, *perm: int) -> _TorchView:
        return _TorchView(self.t.permute(*perm))

    def __getitem__(self, index: Any) -> _TorchView:
        return _TorchView(self.t[index])

    def contiguous(self) -> Any:
        return self.t.contiguous()


def _bench_gpu(p: Pattern, reps: int) -> Result:
    import cupy

    from .layouts import _batched

    shapes = p.shapes(True)
    rng = np.random.default_rng(0)
    host = {n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes.items()}
    xs = {n: cupy.asarray(a) for n, a in host.items()}
    model, source = _exported(p, shapes)
    compiled = dmlops.onnx.compile(model, xs, dmlops.Device(backend="cuda"))
    assert isinstance(compiled, dmlops.onnx.compiled.CompiledModel)  # data movement only
    op = compiled.operator
    assert op is not None  # the patterns' outputs are never empty
    outs = [cupy.empty(t.sizes, cupy.float32) for _, t in op.desc.output_fields()]
    ins = [xs[n] for n in compiled.data_inputs]
    table = op.bind(ins, [o.reshape(-1) for o in outs])
    table.dispatch()
    want = [cupy.ascontiguousarray(w) for w in p.reference(cupy, ins)]
    for o, w in zip(outs, want, strict=True):
        if not bool((o.reshape(w.shape) == w).all()):
            raise AssertionError(f"dmlops gave a wrong answer on {p.name}")
    out_bytes = sum(int(o.nbytes) for o in outs)
    res = Result(SECTION, f"{p.name} ({source})", "gpu", out_bytes, OURS)
    sync = cupy.cuda.Device().synchronize
    res.times[OURS] = _batched(table.dispatch, reps, sync)
    src = cupy.empty(out_bytes, cupy.uint8)
    dst = cupy.empty_like(src)
    res.times["d2d copy ceiling"] = _batched(
        lambda: dst.data.copy_from_device(src.data, out_bytes), reps, sync
    )
    res.times["dmlops op by op"] = _batched(lambda: p.op_by_op(ins), reps, sync)
    if have("torch"):
        import torch

        tin = [torch.utils.dlpack.from_dlpack(x) for x in ins]
        eager = _torch_fn(p)
        res.times["torch eager"] = _batched(lambda: eager(tin), reps, torch.cuda.synchronize)
        torch._dynamo.reset()
        compiled_fn = torch.compile(eager, dynamic=False)
        try:
            res.times["torch.compile"] = _batched(
                lambda: compiled_fn(tin), reps, torch.cuda.synchronize
            )
        except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
            print(f"  torch.compile failed on {p.name}: {e}", file=sys.stderr)
    return res


@dataclass
class BoundOnCpu:
    """A pattern compiled from its model and bound on the CPU, its answer checked."""

    model: Any
    xs: dict[str, Any]  # the model's inputs by name
    ins: list[Any]  # the data inputs, in the plan's order
    outs: list[Any]
    dispatch: Callable[[], None]


def bound_on_cpu(p: Pattern, model: Any) -> BoundOnCpu:
    """`p` as `model` compiled by dmlops.onnx into one plan, bound to new outputs and run
    once against the pattern's numpy reference."""
    import dmlops.onnx

    shapes = p.shapes(False)
    rng = np.random.default_rng(0)
    xs = {n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes.items()}
    compiled = dmlops.onnx.compile(model, xs)
    assert isinstance(compiled, dmlops.onnx.compiled.CompiledModel)  # data movement only
    op = compiled.operator
    assert op is not None  # the patterns' outputs are never empty
    outs = [np.empty(t.sizes, np.float32) for _, t in op.desc.output_fields()]
    ins = [xs[n] for n in compiled.data_inputs]
    table = op.bind(ins, [o.reshape(-1) for o in outs])
    table.dispatch()
    for o, w in zip(outs, p.reference(np, ins), strict=True):
        if not np.array_equal(o.reshape(np.shape(w)), w):
            raise AssertionError(f"dmlops gave a wrong answer on {p.name}")
    return BoundOnCpu(model, xs, ins, outs, table.dispatch)


def _bench_cpu(p: Pattern, reps: int) -> Result:
    model, source = _exported(p, p.shapes(False))
    bound = bound_on_cpu(p, model)
    xs, ins, outs, table = bound.xs, bound.ins, bound.outs, bound
    out_bytes = sum(o.nbytes for o in outs)
    res = Result(SECTION, f"{p.name} ({source})", "cpu", out_bytes, OURS)
    res.times[OURS] = median_cpu(table.dispatch, reps)
    res.times["dmlops.onnx.run"] = median_cpu(lambda: dmlops.onnx.run(model, xs), reps)
    src = np.ones(out_bytes // 4, np.float32)
    dst = np.empty_like(src)
    res.times["np.copyto ceiling"] = median_cpu(lambda: np.copyto(dst, src), reps)
    res.times[ALL_CORES] = median_cpu(all_cores_copy(dst, src), reps)
    res.times[DRAM_CEILING] = dram_copy_time(out_bytes)
    res.times["dmlops op by op"] = median_cpu(lambda: p.op_by_op(ins), reps)
    res.times["numpy"] = median_cpu(
        lambda: [np.ascontiguousarray(w) for w in p.reference(np, ins)], reps
    )
    if have("onnxruntime"):
        import onnxruntime as ort

        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        res.times["onnxruntime"] = median_cpu(lambda: sess.run(None, xs), reps)
    return res


def run(devices: list[str], reps: int) -> list[Result]:
    """Every pattern on the requested devices (needs onnx)."""
    if not have("onnx"):
        print("the graphs section needs onnx: skipped", file=sys.stderr)
        return []
    import dmlops.onnx  # noqa: F401 - the compile entry point

    results = []
    for dev in devices:
        for p in PATTERNS:
            results.append(_bench_gpu(p, reps) if dev == "gpu" else _bench_cpu(p, reps))
            print(f"  measured {dev}: {p.name}", file=sys.stderr, flush=True)
    return results
