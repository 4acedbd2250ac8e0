"""ONNX models with NonZero or a Range of run-time bounds (outputs whose shapes depend on
values): run in parts by dmlops.onnx, bit for bit as onnxruntime."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmlops  # noqa: E402
import dmlops.onnx as donnx  # noqa: E402
from conftest import HAS_CUDA  # noqa: E402
from onnx_oracle import OLD_ONNXRUNTIME, held_to  # noqa: E402


def _model(nodes: list[Any], inputs: list[tuple[str, int]], outputs: list[str], inits=()) -> Any:
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
        [onnx.ValueInfoProto(name=n) for n in outputs],
        list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _both(model: Any, feeds: dict[str, np.ndarray]) -> None:
    got = [np.asarray(g) for g in donnx.run(model, feeds)]
    want = held_to(model, feeds, got)  # (onnxruntime's, or the reference where it stands alone)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


MASKED = _model(  # y = x[mask] and the mask's coordinates, as torch exports them
    [
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["y"]),
        helper.make_node("NonZero", ["y"], ["again"]),
    ],
    [("x", TensorProto.FLOAT), ("mask", TensorProto.BOOL)],
    ["y", "idx", "again"],
)


@pytest.mark.parametrize("fraction", [0.0, 0.3, 1.0])
def test_boolean_mask_indexing_runs_as_onnxruntime_runs_it(fraction: float) -> None:
    rng = np.random.default_rng(int(fraction * 10))
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    x[0, 0, :2] = 0.0
    x[1, 1, 0] = -0.0  # zero for NonZero
    _both(MASKED, {"x": x, "mask": rng.random((4, 5)) < fraction})


def test_the_rest_is_compiled_per_count_and_parts_are_said() -> None:
    session = donnx.InferenceSession(MASKED.SerializeToString())
    x = np.ones((4, 5, 6), np.float32)
    for count in (3, 7, 3):
        mask = np.zeros((4, 5), bool)
        mask.flat[:count] = True
        y, idx, again = session.run(None, {"x": x, "mask": mask})
        assert y.shape == (count, 6) and idx.shape == (count, 2) and again.shape == (2, count * 6)
    compiled = donnx.compile(MASKED, {"x": x, "mask": mask})
    assert isinstance(compiled, donnx.DynamicModel) and "in parts at NonZero" in compiled.describe()
    assert compiled.plan is None
    with pytest.raises(dmlops.ModelError, match="depends on the values"):
        compiled.output_type(0)


def test_range_of_run_time_bounds() -> None:
    if OLD_ONNXRUNTIME:
        pytest.skip("this onnxruntime cannot load a Range read by a node and also an output")
    model = _model(
        [
            helper.make_node("Add", ["start", "length"], ["limit"]),
            helper.make_node("Range", ["start", "limit", "one"], ["positions"]),
            helper.make_node("Gather", ["table", "positions"], ["rows"], axis=0),
            helper.make_node("Range", ["fs", "fl", "fd"], ["steps"]),
        ],
        [
            ("table", TensorProto.FLOAT),
            ("start", TensorProto.INT64),
            ("length", TensorProto.INT64),
            ("fs", TensorProto.FLOAT),
            ("fl", TensorProto.FLOAT),
            ("fd", TensorProto.FLOAT),
        ],
        ["rows", "positions", "steps"],
        [numpy_helper.from_array(np.array(1, np.int64), "one")],
    )
    table = np.random.default_rng(0).standard_normal((40, 8)).astype(np.float32)
    for start, length, fs, fl, fd in (
        (3, 9, 0.1, 7.3, 0.3),
        (0, 0, 5.0, -1.0, -0.7),
        (7, 33, 1, 1, 1),
    ):
        feeds = {
            "table": table,
            "start": np.array(start, np.int64),
            "length": np.array(length, np.int64),
            "fs": np.array(fs, np.float32),
            "fl": np.array(fl, np.float32),
            "fd": np.array(fd, np.float32),
        }
        _both(model, feeds)


def test_nonzero_of_any_rank_as_onnxruntime() -> None:
    model = _model([helper.make_node("NonZero", ["x"], ["nz"])], [("x", TensorProto.FLOAT)], ["nz"])
    rng = np.random.default_rng(6)
    for shape in [(), (7,), (2, 3, 1, 2, 2, 3), (1, 2, 1, 2, 1, 2, 2)]:
        x = (rng.random(shape) < 0.5).astype(np.float32) * rng.standard_normal(shape)
        x = np.asarray(x, np.float32)
        _both(model, {"x": x})
    for value in (0.0, -0.0, 2.5, np.nan):
        _both(model, {"x": np.array(value, np.float32)})


def test_what_is_refused_is_refused_by_name() -> None:
    zero_step = _model(
        [helper.make_node("Range", ["a", "b", "c"], ["r"])],
        [("a", TensorProto.INT64), ("b", TensorProto.INT64), ("c", TensorProto.INT64)],
        ["r"],
    )
    with pytest.raises(dmlops.ModelError, match="delta is 0"):
        donnx.run(zero_step, {k: np.array(v, np.int64) for k, v in zip("abc", [0, 5, 0])})


def test_a_model_torch_exports_for_boolean_masks() -> None:
    torch = pytest.importorskip("torch")

    class Masked(torch.nn.Module):
        def forward(self, x: Any, mask: Any) -> Any:
            return x[mask], torch.nonzero(mask)

    x = torch.randn(4, 5, 6)
    buffer = io.BytesIO()
    try:
        torch.onnx.export(
            Masked(),
            (x, x[..., 0] > 0),
            buffer,
            input_names=["x", "mask"],
            output_names=["y", "where"],
            dynamic_axes={"x": {0: "n"}, "mask": {0: "n"}},
            dynamo=False,
        )
    except Exception as e:  # noqa: BLE001 - an exporter this torch lacks
        pytest.skip(f"torch.onnx.export: {type(e).__name__}")
    model = onnx.load_from_string(buffer.getvalue())
    assert "NonZero" in [n.op_type for n in model.graph.node]
    for fraction in (0.0, 0.5):
        mask = np.random.default_rng(1).random((4, 5)) < fraction
        _both(model, {"x": x.numpy(), "mask": mask})


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_boolean_mask_indexing_on_cupy_arrays() -> None:
    import cupy

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    mask = rng.random((4, 5)) < 0.5
    got = donnx.run(MASKED, {"x": cupy.asarray(x), "mask": cupy.asarray(mask)})
    assert all(isinstance(g, cupy.ndarray) for g in got)
    want = donnx.run(MASKED, {"x": x, "mask": mask})
    for g, w in zip(got, want, strict=True):
        assert cupy.asnumpy(g).tobytes() == np.asarray(w).tobytes()


def test_explain_says_a_model_runs_in_parts(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlops.cli import main

    path = tmp_path / "masked.onnx"
    onnx.save(MASKED, str(path))
    shapes = ["--input-shape", "x=4,5,6", "--input-shape", "mask=4,5"]
    assert main(["explain", str(path), *shapes]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VALID at") and "in parts at NonZero" in out
