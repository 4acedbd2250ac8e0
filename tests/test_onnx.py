"""ONNX conformance: every backend node test case for Slice, Split and Concat."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import HAS_CUDA, to_host

onnx = pytest.importorskip("onnx")

from dmlops import Device, ModelError  # noqa: E402
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
            )
        )
        and "split_to_sequence" not in c.name
    ]


CASES = _cases()
DEVICES = [
    "numpy",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")),
]


def test_the_onnx_package_provides_the_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("backend", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_onnx_backend_node_case(case, backend: str) -> None:  # type: ignore[no-untyped-def]
    device = Device(backend=backend)
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
    with pytest.raises(ModelError, match=r"Relu is not one of Slice, Split, Concat, Identity"):
        dml_onnx.run(helper.make_model(g), [np.zeros(2, np.float32)])
