"""dmlops.dask.run_onnx: ONNX models of data movement applied to dask arrays, lazily, equal
bit for bit to onnxruntime's answers on random chunkings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmlops  # noqa: E402
import dmlops.dask as dd  # noqa: E402
from conftest import HAS_CUDA, for_onnxruntime  # noqa: E402
from dmlops.conformance import onnx_cases  # noqa: E402


def _same(a: Any, b: Any) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_as_onnxruntime(ours: Any, theirs: Any) -> None:
    """Bit for bit, except a NaN's payload: onnxruntime's float16 kernels rewrite it (0x7E01
    comes back 0x7E00), where dmlops moves the bits as they are."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if ours.dtype.kind == "f":
        both_nan = np.isnan(ours) & np.isnan(theirs)
        ours, theirs = ours[~both_nan], theirs[~both_nan]
    assert ours.tobytes() == theirs.tobytes()


def _random_chunks(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(rng.integers(1, n + 1)) if n else 1 for n in shape)


def _onnxruntime(model: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    try:
        session = ort.InferenceSession(for_onnxruntime(model), providers=["CPUExecutionProvider"])
        return list(session.run(None, inputs))
    except Exception:  # noqa: BLE001 - a type or opset onnxruntime lacks: dmlops' answer alone
        return None


@pytest.mark.parametrize("seed", [3, 11, 21])
def test_generated_models_on_random_chunkings_equal_onnxruntime(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = onnx_cases.generate(seed, 120, invalid_fraction=0.0, chain_fraction=0.4)
    ran = 0
    for case in cases:
        if case.outputs is None:  # refused by dmlops.onnx: refused here too
            continue
        inputs = {
            k: da.from_array(v, chunks=_random_chunks(rng, v.shape)) if v.ndim else v
            for k, v in case.inputs.items()
        }
        got = [o.compute() for o in dd.run_onnx(case.model, inputs)]
        expected = _onnxruntime(case.model, case.inputs)
        for g, own in zip(got, case.outputs, strict=True):
            _same(g, own)
        if expected is not None:
            for g, want in zip(got, expected, strict=True):
                _same_as_onnxruntime(g, want)
            ran += 1
    assert ran > 60  # most cases were checked against onnxruntime


def _focus_model() -> Any:
    """YOLOv5's Focus stem: four stride-2 slices of an image joined along channels."""
    nodes, inits = [], []
    for k, (r, c) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        for name, v in (("s", [r, c]), ("e", [2**62, 2**62]), ("a", [2, 3]), ("t", [2, 2])):
            inits.append(numpy_helper.from_array(np.array(v, np.int64), f"{name}{k}"))
        nodes.append(
            helper.make_node("Slice", ["x", f"s{k}", f"e{k}", f"a{k}", f"t{k}"], [f"p{k}"])
        )
    nodes.append(helper.make_node("Concat", [f"p{k}" for k in range(4)], ["y"], axis=1))
    graph = helper.make_graph(
        nodes,
        "focus",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_chain_of_strided_nodes_is_one_layer_reading_only_its_chunks() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 12)).astype(np.float32)
    dx = da.from_array(x, chunks=(1, 3, 4, 6))
    (y,) = dd.run_onnx(_focus_model(), {"x": dx})
    assert len(y.dask.layers) == 2  # the input and one layer of chunk tasks
    _same(
        y.compute(),
        np.concatenate([x[..., r::2, c::2] for r, c in [(0, 0), (1, 0), (0, 1), (1, 1)]], 1),
    )
    for key, task in dict(y.dask).items():  # each output chunk reads one input chunk
        if key[0] == y.name:
            reads = [a for a in task[1:] if isinstance(a, tuple) and a[0] == dx.name]
            assert len(reads) == 1


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any]) -> Any:
    graph = helper.make_graph(nodes, "m", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_run_time_indices_parameters_and_casts() -> None:
    rng = np.random.default_rng(2)
    table = rng.standard_normal((40, 6)).astype(np.float32)
    ids = rng.integers(-40, 40, (5, 3)).astype(np.int64)
    model = _model(
        [
            helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),
            helper.make_node("Cast", ["rows"], ["half"], to=TensorProto.FLOAT16),
            helper.make_node("Slice", ["half", "starts", "ends"], ["y"]),
        ],
        [
            helper.make_tensor_value_info("table", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("ids", TensorProto.INT64, None),
            helper.make_tensor_value_info("starts", TensorProto.INT64, None),
            helper.make_tensor_value_info("ends", TensorProto.INT64, None),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
        [],
    )
    starts, ends = np.array([1, 0, 2], np.int64), np.array([4, 3, 5], np.int64)
    feeds = {"table": table, "ids": ids, "starts": starts, "ends": ends}
    (want,) = _onnxruntime(model, feeds) or [None]
    for lazy_ids in (ids, da.from_array(ids, chunks=(2, 2))):
        inputs = {"table": da.from_array(table, chunks=(7, 4)), "ids": lazy_ids}
        (y,) = dd.run_onnx(model, inputs | {"starts": starts, "ends": ends})
        _same(y.compute(), want)


def test_refusals_come_before_any_task_runs() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    dx = da.from_array(np.zeros((4, 4), np.float32), chunks=2)
    adds = _model([helper.make_node("Add", ["x", "x"], ["y"])], [x], [y], [])
    with pytest.raises(dmlops.ModelError, match="Add"):
        dd.run_onnx(adds, {"x": dx})
    zero_step = _model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
        [x],
        [y],
        [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in zip("seat", [0, 4, 0, 0])],
    )
    with pytest.raises(dmlops.DmlError, match="step"):
        dd.run_onnx(zero_step, {"x": dx})
    pooled = _model(
        [helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [x, helper.make_tensor_value_info("i", TensorProto.INT64, None)],
        [y],
        [],
    )
    with pytest.raises(dmlops.ModelError, match="MaxUnpool is not on Dask"):
        x4 = da.from_array(np.zeros((1, 1, 2, 2), np.float32))
        dd.run_onnx(pooled, {"x": x4, "i": da.from_array(np.zeros((1, 1, 2, 2), np.int64))})


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_cupy_chunks_stay_cupy_through_a_model() -> None:
    import cupy

    x = np.random.default_rng(1).standard_normal((2, 3, 8, 12)).astype(np.float32)
    dx = da.from_array(cupy.asarray(x), chunks=(1, 3, 4, 6), asarray=False)
    (y,) = dd.run_onnx(_focus_model(), {"x": dx})
    got = y.compute()
    assert isinstance(got, cupy.ndarray)
    (want,) = dmlops.onnx.run(_focus_model(), {"x": x})
    _same(cupy.asnumpy(got), want)
