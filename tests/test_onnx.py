"""ONNX conformance: every backend node test case for Slice, Split and Concat."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import HAS_CUDA, WEBGPU, to_host

onnx = pytest.importorskip("onnx")

from dmlops import Device, FeatureLevel, ModelError  # noqa: E402
from dmlops import onnx as dml_onnx  # noqa: E402


def _cases() -> list:  # type: ignore[type-arg]
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return [
        c
        for c in cases
        if c.name.startswith(
            (
                "test_slice",
                "test_split_",
                "test_concat_",
                "test_transpose",
                "test_reshape",
                "test_squeeze",
                "test_unsqueeze",
                "test_flatten",
                "test_depthtospace",
                "test_spacetodepth",
                "test_pad",
                "test_constant_pad",
                "test_edge_pad",
                "test_reflect_pad",
                "test_wrap_pad",
                "test_tile",
                "test_expand",
            )
        )
        and "split_to_sequence" not in c.name
    ]


CASES = _cases()
DEVICES = [
    "numpy",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")),
    WEBGPU,
]


def test_the_onnx_package_provides_the_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("backend", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_onnx_backend_node_case(case, backend: str) -> None:  # type: ignore[no-untyped-def]
    device = Device(FeatureLevel.newest(), backend=backend)  # PADDING1 is 5_0, WRAP 6_4
    for inputs, expected in case.data_sets:
        got = dml_onnx.run(case.model, list(inputs), device)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            g = to_host(g)
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)


def test_slice_window_clamps_like_onnx() -> None:
    assert dml_onnx.slice_window([10], [-3], [2**63 - 1]) == ([7], [3], [1], [3])
    assert dml_onnx.slice_window([10], [-1], [-(2**63)], steps=[-1]) == ([0], [10], [-1], [10])
    assert dml_onnx.slice_window([10], [8], [1], steps=[-3]) == ([2], [7], [-3], [3])
    assert dml_onnx.slice_window([10], [100], [200])[3] == [0]
    assert dml_onnx.slice_window([4, 5], [1], [3], axes=[-1]) == ([0, 1], [4, 2], [1, 1], [4, 2])


def test_opset_1_attributes_and_empty_results() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    nodes = [
        helper.make_node("Slice", ["x"], ["a"], starts=[0, 1], ends=[2, 100], axes=[0, 1]),
        helper.make_node("Slice", ["x"], ["e"], starts=[2], ends=[1], axes=[0]),
        helper.make_node("Identity", ["a"], ["b"]),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [x],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("b", "e")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    b, e = dml_onnx.run(m, {"x": data})
    np.testing.assert_array_equal(b, data[0:2, 1:])
    assert e.shape == (0, 4)


def test_unsupported_nodes_are_refused() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(
        ModelError, match=r"Relu is neither data movement \(Slice, .*\) nor shape arithmetic"
    ):
        dml_onnx.run(helper.make_model(g), [np.zeros(2, np.float32)])


# --- models as exporters write them: Constant nodes and shape arithmetic ------------------


def _model(nodes, inputs, outputs, opset: int = 17):  # type: ignore[no-untyped-def]
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "exported",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _const(name: str, values, dtype=np.int64):  # type: ignore[no-untyped-def]
    from onnx import helper, numpy_helper

    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(values, dtype), name)
    )


def test_constant_nodes_become_parameters() -> None:
    from onnx import helper

    nodes = [
        _const("starts", [1, 0]),
        _const("ends", [2**63 - 1, 2**63 - 1]),
        _const("axes", [2, 3]),
        _const("steps", [2, 2]),
        helper.make_node("Constant", [], ["k"], value_ints=[0]),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
        helper.make_node("Identity", ["k"], ["kk"]),
    ]
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8), dtype=np.float32)
    y, kk = dml_onnx.run(_model(nodes, {"x": x.shape}, ["y", "kk"]), {"x": x})
    np.testing.assert_array_equal(y, x[:, :, 1::2, ::2])
    assert kk.tolist() == [0]


def test_chunk_shape_arithmetic_is_folded_when_compiled() -> None:
    # x.chunk(2, dim=1) as the TorchScript exporter writes it
    from onnx import helper

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        _const("one", 1),
        helper.make_node("Gather", ["shape", "one"], ["dim"], axis=0),
        _const("two", 2),
        _const("zero", [0]),
        helper.make_node("Add", ["dim", "one"], ["dim1"]),
        helper.make_node("Div", ["dim1", "two"], ["half"]),
        helper.make_node("Unsqueeze", ["half", "zero"], ["end0"]),
        _const("axis", [1]),
        helper.make_node("Slice", ["x", "zero", "end0", "axis"], ["a"]),
        helper.make_node("Mul", ["half", "two"], ["full"]),
        helper.make_node("Unsqueeze", ["full", "zero"], ["end1"]),
        helper.make_node("Slice", ["x", "end0", "end1", "axis"], ["b"]),
    ]
    x = np.random.default_rng(1).standard_normal((2, 7, 5), dtype=np.float32)
    model = _model(nodes, {"x": x.shape}, ["a", "b"])
    a, b = dml_onnx.run(model, {"x": x})
    np.testing.assert_array_equal(a, x[:, :4])
    np.testing.assert_array_equal(b, x[:, 4:])
    compiled = dml_onnx.compile(model, {"x": x})
    assert compiled.plan.bytes_written == x.nbytes  # the arithmetic left nothing to run


def test_reshape_shape_from_shape_arithmetic() -> None:
    # ViT patchify's reshape target computed from the input's shape
    from onnx import helper

    nodes = [
        helper.make_node("Shape", ["x"], ["s"], start=0, end=1),
        _const("c", [3, 2, 4, 2, 4]),
        helper.make_node("Concat", ["s", "c"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 4, 1, 3, 5]),
    ]
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8), dtype=np.float32)
    (y,) = dml_onnx.run(_model(nodes, {"x": x.shape}, ["y"]), {"x": x})
    np.testing.assert_array_equal(y, x.reshape(2, 3, 2, 4, 2, 4).transpose(0, 2, 4, 1, 3, 5))


def test_a_gather_whose_indices_arrive_at_run_time_runs() -> None:
    from onnx import TensorProto, helper

    # the indices are a model input: their values are data, known only at run time
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x, i = np.arange(8, dtype=np.float32).reshape(4, 2), np.array([3, -4], np.int64)
    (y,) = dml_onnx.run(model, {"x": x, "i": i})
    assert y.tolist() == [[6, 7], [0, 1]]


def test_arithmetic_on_float_data_is_refused_by_name() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match=r"ONNX node 'Add': Add on floating-point data 'x'"):
        dml_onnx.run(model, {"x": np.zeros(2, np.float32)})


def test_gather_at_constant_indices_is_data_movement() -> None:
    from onnx import helper

    nodes = [_const("i", [3, 0, -1]), helper.make_node("Gather", ["x", "i"], ["y"], axis=1)]
    x = np.random.default_rng(4).standard_normal((2, 4, 3), dtype=np.float32)
    (y,) = dml_onnx.run(_model(nodes, {"x": x.shape}, ["y"]), {"x": x})
    np.testing.assert_array_equal(y, x[:, [3, 0, -1]])
