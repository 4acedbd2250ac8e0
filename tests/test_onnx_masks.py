"""Masks and position ids as exporters write them: Trilu of a constant (torch.tril / triu
of ones), EyeLike of a data tensor's shape, Range and ConstantOfShape from the input's
shape, evaluated when the model is compiled and moved with the data; against
onnxruntime, bit for bit, in one plan and in steps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

import dmlops.onnx  # noqa: E402


def _model(nodes: list[Any], inputs: list[Any], outputs: list[str], inits: list[Any]) -> Any:
    graph = h.make_graph(
        nodes, "g", inputs, [h.make_empty_tensor_value_info(o) for o in outputs], inits
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _agree(model: Any, feeds: dict[str, np.ndarray]) -> None:
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = dmlops.onnx.run(model, feeds)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == w.dtype and np.asarray(g).tobytes() == w.tobytes()


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_a_causal_mask_from_the_inputs_length(upper: int, k: int) -> None:
    """Shape -> Gather -> Concat -> ConstantOfShape -> Trilu (torch.tril(torch.ones(T, T)))
    beside the data's own movement."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "one"], ["t"], axis=0),
        h.make_node("Concat", ["t", "t"], ["tt"], axis=0),
        h.make_node(
            "ConstantOfShape", ["tt"], ["ones"], value=h.make_tensor("v", T.BOOL, [1], [1])
        ),
        h.make_node("Trilu", ["ones", "k"], ["mask"], upper=upper),
        h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
    ]
    inits = [
        h.make_tensor("one", T.INT64, [1], [1]),
        h.make_tensor("k", T.INT64, [], [k]),
    ]
    model = _model(
        nodes, [h.make_tensor_value_info("x", T.FLOAT, ["b", "t", 4])], ["mask", "xt"], inits
    )
    _agree(model, {"x": np.random.default_rng(0).standard_normal((2, 5, 4), dtype=np.float32)})


def test_eye_like_of_a_data_tensor_and_position_ids() -> None:
    """EyeLike reads its input's shape and type, not its values; Range from the length,
    expanded over the batch (position ids)."""
    nodes = [
        h.make_node("EyeLike", ["x"], ["eye"], k=1),
        h.make_node("EyeLike", ["x"], ["eye64"], dtype=T.INT64),
        h.make_node("Concat", ["x", "eye"], ["joined"], axis=0),
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        h.make_node("Range", ["start", "n", "step"], ["ids"]),
        h.make_node("Unsqueeze", ["ids", "axis0"], ["row"]),
        h.make_node("Expand", ["row", "wide"], ["ids2"]),
    ]
    inits = [
        h.make_tensor("zero", T.INT64, [], [0]),
        h.make_tensor("start", T.INT64, [], [0]),
        h.make_tensor("step", T.INT64, [], [1]),
        h.make_tensor("axis0", T.INT64, [1], [0]),
        h.make_tensor("wide", T.INT64, [2], [3, 1]),
    ]
    model = _model(
        nodes, [h.make_tensor_value_info("x", T.FLOAT, [4, 6])], ["joined", "eye64", "ids2"], inits
    )
    _agree(model, {"x": np.arange(24, dtype=np.float32).reshape(4, 6)})
    with pytest.raises(dmlops.ModelError, match="EyeLike"):
        bad = _model(
            [h.make_node("EyeLike", ["x"], ["eye"])],
            [h.make_tensor_value_info("x", T.FLOAT, [2, 2, 2])],
            ["eye"],
            [],
        )
        dmlops.onnx.run(bad, {"x": np.zeros((2, 2, 2), np.float32)})


def test_trilu_of_data_runs_and_a_vector_is_refused_by_name() -> None:
    model = _model(
        [h.make_node("Trilu", ["x"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [3, 3])],
        ["y"],
        [],
    )
    _agree(model, {"x": np.arange(9, dtype=np.float32).reshape(3, 3)})
    vector = _model(
        [h.make_node("Trilu", ["x"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [3])],
        ["y"],
        [],
    )
    with pytest.raises(dmlops.ModelError, match="Trilu: the input has 1 dimensions"):
        dmlops.onnx.run(vector, {"x": np.ones(3, np.float32)})
