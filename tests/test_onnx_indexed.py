"""ONNX's indexed data movement (Gather at run-time indices, GatherElements, GatherND,
Scatter/ScatterElements, ScatterND, OneHot) and the integer arithmetic exporters put on index
tensors: onnx's own backend node tests, exporter-shaped models, sessions on every backend."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from conftest import HAS_CUDA, to_device, to_host

pytest.importorskip("onnx")
from onnx import TensorProto, helper
from onnx.backend.test.case.node import collect_testcases

import dmlops
import dmlops.onnx as dml_onnx
from dmlops.errors import ModelError

BACKENDS = [
    "numpy",
    pytest.param(
        "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]
    ),
]
PREFIXES = ("test_gather", "test_scatter", "test_onehot", "test_reversesequence")
REFUSED = {  # each with the reason dmlops gives
    "reduction": "computes (adds, multiplies, ...): dmlops only moves data",
}


def _cases():  # type: ignore[no-untyped-def]
    # onnx builds its cases once per process, all operators at once (a few seconds)
    return [c for c in collect_testcases(None) if c.name.startswith(PREFIXES)]


CASES = {c.name: c for c in _cases()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_backend_node_cases(backend: str, name: str) -> None:
    case = CASES[name]
    device = dmlops.Device(backend=backend)
    for ins, outs in case.data_sets:
        feed = {i.name: to_device(backend, v) for i, v in zip(case.model.graph.input, ins)}
        refused = next(
            (
                why
                for key, why in REFUSED.items()
                if key in name
                or (
                    key == "reduction"
                    and any(
                        a.name == "reduction" and a.s not in (b"none", b"")
                        for n in case.model.graph.node
                        for a in n.attribute
                    )
                )
            ),
            None,
        )
        if refused:
            with pytest.raises(dmlops.DmlError, match=re.escape(refused)):
                dml_onnx.InferenceSession(case.model, device).run(None, feed)
            return
        got = dml_onnx.InferenceSession(case.model, device).run(None, feed)
        for g, e in zip(got, outs, strict=True):
            g = to_host(g)
            assert g.dtype == e.dtype and g.shape == e.shape
            assert g.tobytes() == np.ascontiguousarray(e).tobytes()


def _embedding_model() -> object:
    """What exporters write for `table[ids - 1]` with negative wrap: Sub, Less, Where, Add,
    Cast, then Gather and a Reshape of the rows."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("", i64, [], [1])),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("", i64, [], [0])),
        helper.make_node("Constant", [], ["n"], value=helper.make_tensor("", i64, [], [10])),
        helper.make_node("Sub", ["ids", "one"], ["i"]),
        helper.make_node("Less", ["i", "zero"], ["neg"]),
        helper.make_node("Add", ["i", "n"], ["wrapped"]),
        helper.make_node("Where", ["neg", "wrapped", "i"], ["fixed"]),
        helper.make_node("Cast", ["fixed"], ["i32"], to=TensorProto.INT32),
        helper.make_node("Gather", ["table", "i32"], ["rows"], axis=0),
        helper.make_node("Shape", ["rows"], ["s"]),
        helper.make_node("Transpose", ["rows"], ["y"], perm=[1, 0, 2]),
    ]
    graph = helper.make_graph(
        nodes,
        "embedding",
        [
            helper.make_tensor_value_info("table", TensorProto.FLOAT16, [10, 4]),
            helper.make_tensor_value_info("ids", i64, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_exporter_index_arithmetic_runs_where_the_indices_live(backend: str) -> None:
    table = np.arange(40, dtype=np.float16).reshape(10, 4)
    session = dml_onnx.InferenceSession(_embedding_model(), dmlops.Device(backend=backend))
    for ids in (np.array([[1, 2, 3], [0, 10, 5]]), np.array([[4, 4, 4], [9, 1, 0]])):
        (y,) = session.run(
            None, {"table": to_device(backend, table), "ids": to_device(backend, ids)}
        )
        expected = table[np.where(ids - 1 < 0, ids - 1 + 10, ids - 1)].transpose(1, 0, 2)
        np.testing.assert_array_equal(to_host(y), expected)
    assert len(session._compiled) == 1  # run-time indices never recompile the model


def test_staged_models_explain_their_steps() -> None:
    compiled = dml_onnx.compile(
        _embedding_model(),
        {"table": np.zeros((10, 4), np.float16), "ids": np.zeros((2, 3), np.int64)},
    )
    assert isinstance(compiled, dml_onnx.StagedModel)
    text = compiled.describe()
    # the gather and the transpose after it are one plan (one pass over memory)
    assert "Gather + Transpose -> y (one pass)" in text
    assert "Sub -> i (integer arithmetic" in text


def test_constant_index_gathers_are_one_indexed_copy() -> None:
    ids = np.arange(1000) % 7
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["i"],
            value=helper.make_tensor("", TensorProto.INT64, [1000], ids.tolist()),
        ),
        helper.make_node("Gather", ["x", "i"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(14, dtype=np.float32).reshape(2, 7)
    compiled = dml_onnx.compile(model, {"x": x})
    assert isinstance(compiled, dml_onnx.StagedModel) and len(compiled.steps) == 1
    (y,) = dml_onnx.run(model, {"x": x})
    np.testing.assert_array_equal(y, x[:, ids])


def test_scatter_reductions_are_refused_by_name() -> None:
    nodes = [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1]),
            helper.make_tensor_value_info("u", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feed = {
        "x": np.zeros(4, np.float32),
        "i": np.zeros((1, 1), np.int64),
        "u": np.ones(1, np.float32),
    }
    with pytest.raises(ModelError, match="ScatterND: reduction 'add' computes"):
        dml_onnx.run(model, feed)


def test_data_movement_between_run_time_steps_is_one_plan() -> None:
    """Gather, Slice + Transpose + Concat, then a Gather reading the transposed view: one plan
    (the gathered rows cut and moved in one pass; the second gather reads the transposed
    view from an intermediate buffer: two passes), no step between."""
    i64 = TensorProto.INT64
    c = lambda name, *v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor("", i64, [len(v)], v)
    )
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),  # [3, 4, 6]
        c("s", 1), c("e", 5), c("ax", 2),
        helper.make_node("Slice", ["rows", "s", "e", "ax"], ["cut"]),  # [3, 4, 4]
        helper.make_node("Transpose", ["cut"], ["t"], perm=[0, 2, 1]),  # [3, 4, 4]
        helper.make_node("Concat", ["t", "cut"], ["both"], axis=2),  # [3, 4, 8]
        helper.make_node("Gather", ["t", "pick"], ["picked"], axis=1),  # [3, 2, 4]
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("table", TensorProto.FLOAT, [5, 4, 6]),
            helper.make_tensor_value_info("ids", i64, [3]),
            helper.make_tensor_value_info("pick", i64, [2]),
        ],
        [
            helper.make_tensor_value_info("both", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("picked", TensorProto.FLOAT, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    table = np.arange(120, dtype=np.float32).reshape(5, 4, 6)
    ids, pick = np.array([4, 0, 2]), np.array([3, -1])
    compiled = dml_onnx.compile(model, {"table": table, "ids": ids, "pick": pick})
    assert len(compiled.steps) == 1, compiled.describe()
    text = "Gather + Slice + Transpose + Concat + Gather -> both, picked (one plan of 2 passes)"
    assert text in compiled.describe()
    both, picked = dml_onnx.run(model, {"table": table, "ids": ids, "pick": pick})
    cut = table[ids][:, :, 1:5]
    t = cut.transpose(0, 2, 1)
    np.testing.assert_array_equal(both, np.concatenate([t, cut], axis=2))
    np.testing.assert_array_equal(picked, t[:, [3, -1]])


def _indexed_model(nodes, inputs, outputs):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _gather_transpose_slice():  # type: ignore[no-untyped-def]
    i64 = TensorProto.INT64
    c = lambda name, *v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor("", i64, [len(v)], v)
    )
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),  # [2, 3, 8]
        helper.make_node("Transpose", ["rows"], ["t"], perm=[2, 0, 1]),  # [8, 2, 3]
        c("s", 6, 1), c("e", -100, 3), c("ax", 0, 2), c("st", -2, 1),
        helper.make_node("Slice", ["t", "s", "e", "ax", "st"], ["y"]),  # [4, 2, 2]
    ]  # fmt: skip
    inputs = [("table", TensorProto.FLOAT, [10, 8]), ("ids", i64, [2, 3])]
    return _indexed_model(nodes, inputs, ["y"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_transpose_slice_is_one_pass(backend: str) -> None:
    table = np.arange(80, dtype=np.float32).reshape(10, 8)
    ids = np.array([[9, -1, 0], [3, 3, -10]])
    model = _gather_transpose_slice()
    compiled = dml_onnx.compile(model, {"table": table, "ids": ids})
    assert compiled.describe() == "1 step:\n  Gather + Transpose + Slice -> y (one pass)"
    (y,) = dml_onnx.run(model, {"table": to_device(backend, table), "ids": to_device(backend, ids)})
    want = table[ids].transpose(2, 0, 1)[6::-2, :, 1:3]
    np.testing.assert_array_equal(to_host(y), want)


def test_explain_reports_gather_transpose_slice_as_one_pass(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from onnx import save

    from dmlops.cli import main

    path = tmp_path / "m.onnx"
    save(_gather_transpose_slice(), str(path))
    assert main(["explain", str(path)]) == 0
    assert "Gather + Transpose + Slice -> y (one pass)" in capsys.readouterr().out


@pytest.mark.parametrize("backend", BACKENDS)
def test_indexed_nodes_fuse_with_their_neighbours(backend: str) -> None:
    """GatherElements on fewer indices than data, GatherND with batch_dims, ScatterND and
    ScatterElements between data movement: one step, matching numpy."""
    i64, f32 = TensorProto.INT64, TensorProto.FLOAT
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),  # [4, 3, 5]
        helper.make_node("GatherElements", ["xt", "ie"], ["ge"], axis=2),  # [4, 2, 3]
        helper.make_node("GatherND", ["xt", "ind"], ["gn"], batch_dims=1),  # [4, 2, 5]
        helper.make_node("ScatterND", ["xt", "isn", "u"], ["sn"]),  # [4, 3, 5]
        helper.make_node("Concat", ["sn", "sn"], ["y"], axis=0),  # [8, 3, 5]
        helper.make_node("ScatterElements", ["x", "ise", "v"], ["se"], axis=0),  # [3, 4, 5]
    ]
    inputs = [
        ("x", f32, [3, 4, 5]),
        ("ie", i64, [4, 2, 3]),
        ("ind", i64, [4, 2, 1]),
        ("isn", i64, [2, 2]),
        ("u", f32, [2, 5]),
        ("ise", i64, [3, 4, 5]),
        ("v", f32, [3, 4, 5]),
    ]
    model = _indexed_model(nodes, inputs, ["ge", "gn", "y", "se"])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 5), dtype=np.float32)
    values = {
        "x": x,
        "ie": rng.integers(-5, 5, (4, 2, 3)),
        "ind": rng.integers(-3, 3, (4, 2, 1)),
        "isn": np.array([[0, 2], [3, -1]]),
        "u": rng.standard_normal((2, 5), dtype=np.float32),
        "ise": np.argsort(rng.random((3, 4, 5)), axis=0),
        "v": rng.standard_normal((3, 4, 5), dtype=np.float32),
    }
    compiled = dml_onnx.compile(model, values)
    assert len(compiled.steps) == 1, compiled.describe()
    got = dml_onnx.run(model, {k: to_device(backend, a) for k, a in values.items()})
    xt = x.transpose(1, 0, 2)
    ge = np.take_along_axis(xt[:, :2, :], values["ie"] % 5, axis=2)
    gn = np.stack([xt[b][values["ind"][b, :, 0]] for b in range(4)])
    sn = xt.copy()
    for (a, b), row in zip(values["isn"], values["u"], strict=True):
        sn[a, b] = row
    se = x.copy()
    np.put_along_axis(se, values["ise"], values["v"], axis=0)
    for g, w in zip(got, [ge, gn, np.concatenate([sn, sn]), se], strict=True):
        np.testing.assert_array_equal(to_host(g), w)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_gpu_arrays_pick_the_device_or_are_refused_by_name() -> None:
    from dmlops.errors import BindingError

    table = np.arange(80, dtype=np.float32).reshape(10, 8)
    ids = np.array([[1, 2, 3], [4, 5, 6]])
    model = _gather_transpose_slice()
    feed = {"table": to_device("cuda", table), "ids": to_device("cuda", ids)}
    (y,) = dml_onnx.run(model, feed)  # no device given: the arrays' GPU
    assert type(y) is type(feed["table"])
    session = dml_onnx.InferenceSession(model, dmlops.Device())  # the CPU
    with pytest.raises(BindingError, match="is not host memory"):
        session.run(None, feed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_hot_joins_the_plan_around_it(backend: str) -> None:
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["depth"], value=helper.make_tensor("", i64, [1], [5])),
        helper.make_node("OneHot", ["ids", "depth", "vals"], ["hot"], axis=1),  # [3, 5, 2]
        helper.make_node("Transpose", ["hot"], ["y"], perm=[2, 0, 1]),  # [2, 3, 5]
    ]
    model = _indexed_model(nodes, [("ids", i64, [3, 2]), ("vals", TensorProto.FLOAT, [2])], ["y"])
    ids = np.array([[0, 4], [-1, 7], [2, -6]])
    vals = np.array([0.5, -2.0], np.float32)
    compiled = dml_onnx.compile(model, {"ids": ids, "vals": vals})
    # one step; the transpose reads the one-hot result from a buffer of its own (2 passes)
    assert compiled.describe() == "1 step:\n  OneHot + Transpose -> y (one plan of 2 passes)"
    (y,) = dml_onnx.run(model, {"ids": to_device(backend, ids), "vals": to_device(backend, vals)})
    hot = np.full((3, 5, 2), 0.5, np.float32)
    for r, c in np.ndindex(3, 2):
        k = ids[r, c] + 5 if ids[r, c] < 0 else ids[r, c]
        if 0 <= k < 5:
            hot[r, k, c] = -2.0
    np.testing.assert_array_equal(to_host(y), hot.transpose(2, 0, 1))


def _one_hot_by_equal(reshaped_out: bool) -> object:
    """What the dynamo exporter writes for one_hot: Unsqueeze the labels, Equal against a
    range, Cast; with `reshaped_out` the unsqueezed labels are a model output too."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("", i64, [1], [-1])),
        helper.make_node(
            "Constant", [], ["range"], value=helper.make_tensor("", i64, [5], list(range(5)))
        ),
        helper.make_node("Unsqueeze", ["labels", "axes"], ["u"]),
        helper.make_node("Equal", ["u", "range"], ["eq"]),
        helper.make_node("Cast", ["eq"], ["y"], to=TensorProto.INT64),
    ]
    outputs = [helper.make_tensor_value_info("y", i64, None)]
    if reshaped_out:
        outputs.append(helper.make_tensor_value_info("u", i64, None))
    graph = helper.make_graph(
        nodes, "one_hot", [helper.make_tensor_value_info("labels", i64, [2, 3])], outputs
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reshape_between_steps_is_a_view_unless_it_is_an_output(backend: str) -> None:
    """A step that only reshapes a value later steps read runs no plan (the array's own
    reshape); one whose value the model returns stays a copy, so no output aliases an
    input."""
    labels = np.array([[0, 4, 2], [1, 1, 3]], np.int64)
    want = (labels[..., None] == np.arange(5)).astype(np.int64)
    for reshaped_out, how in ((False, "(a view)"), (True, "(one pass)")):
        model = _one_hot_by_equal(reshaped_out)
        compiled = dml_onnx.compile(model, {"labels": labels})
        assert f"Unsqueeze -> u {how}" in compiled.describe()
        session = dml_onnx.InferenceSession(model, dmlops.Device(backend=backend))
        x = to_device(backend, labels.copy())
        got = session.run(None, {"labels": x})
        np.testing.assert_array_equal(to_host(got[0]), want)
        if reshaped_out:
            np.testing.assert_array_equal(to_host(got[1]), labels[..., None])
            x[0, 0] = 3  # the returned value is the model's own, not a view of the input
            assert int(to_host(got[1])[0, 0, 0]) == 0


def _counted_gather_nd(column: np.ndarray, data_shape: list[int], rest_shape: list[int], b: int):  # type: ignore[no-untyped-def]
    """GatherND(x, Concat(column, Unsqueeze(i - 1)), batch_dims=b): the exporters' form of
    x[arange(n), i - 1] when `column` counts along the index's first non-batch axis."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("", i64, [], [1])),
        helper.make_node("Sub", ["i", "one"], ["less"]),
        helper.make_node("Constant", [], ["last"], value=helper.make_tensor("", i64, [1], [-1])),
        helper.make_node("Unsqueeze", ["less", "last"], ["u"]),
        helper.make_node(
            "Constant", [], ["column"],
            value=helper.make_tensor("", i64, list(column.shape), column.ravel().tolist()),
        ),
        helper.make_node("Concat", ["column", "u"], ["index"], axis=-1),
        helper.make_node("GatherND", ["x", "index"], ["y"], batch_dims=b),
    ]  # fmt: skip
    inputs = [("x", TensorProto.FLOAT, data_shape), ("i", i64, rest_shape)]
    return _indexed_model(nodes, inputs, ["y"])


# (the counting column, data shape, shape of i, batch_dims, whether it is read as a batch axis)
_COUNTED = [
    (np.arange(3).reshape(3, 1), [3, 6, 4], [3], 0, True),  # x[arange(3), i - 1]
    (np.array([[2], [0], [1]]), [3, 6, 4], [3], 0, False),  # not counting
    (np.arange(3).reshape(3, 1), [5, 6, 4], [3], 0, False),  # fewer rows than the data's
    (np.repeat(np.arange(3)[:, None, None], 2, 1), [3, 6, 4], [3, 2], 0, True),  # [3, 2, 1]
    (np.tile(np.arange(4)[None, :, None], (2, 1, 1)), [2, 4, 6], [2, 4], 1, True),  # batched
    (np.tile(np.arange(2)[:, None, None], (1, 4, 1)), [2, 4, 6], [2, 4], 1, False),  # batch axis
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(_COUNTED)))
def test_a_counting_index_column_is_a_batch_axis(backend: str, case: int) -> None:
    """A GatherND whose index tuples begin with a constant column counting along the
    index's first non-batch axis (and whose data has exactly that many entries there) reads
    that axis as one more batch dimension: the Concat is neither written nor read back (one
    pass). Any other column keeps the tuples as they are. Both against a naive reference."""
    from test_indexed import ref_gather_nd

    column, data_shape, rest_shape, b, batched = _COUNTED[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(data_shape).astype(np.float32)
    i = rng.integers(1, data_shape[b + 1] + 1, rest_shape).astype(np.int64)
    model = _counted_gather_nd(column, data_shape, rest_shape, b)
    compiled = dml_onnx.compile(model, {"x": x, "i": i})
    passes = "(one pass)" if batched else "(one plan of 2 passes)"
    assert f"Unsqueeze + Concat + GatherND -> y {passes}" in compiled.describe()
    index = np.concatenate([column, (i - 1)[..., None]], -1)
    session = dml_onnx.InferenceSession(model, dmlops.Device(backend=backend))
    (y,) = session.run(None, {"x": to_device(backend, x), "i": to_device(backend, i)})
    np.testing.assert_array_equal(to_host(y), ref_gather_nd(x, index, b))
