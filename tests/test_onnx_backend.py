"""onnx's own backend tests (`onnx.backend.test.BackendTest`) run unchanged against
`dmlops.onnx.backend` for every ONNX operator dmlops lowers: the node tests of each, and
the few out of dmlops' scope excluded by name with the reason (arithmetic, sequences,
Resize's keep_aspect_ratio_policy and regions of interest). On a machine with a GPU the CUDA variants
run too."""

from __future__ import annotations

import pytest

backend_tests = pytest.importorskip("onnx.backend.test")

import dmlops.onnx.backend as dmlops_backend  # noqa: E402

CLAIMED = (
    "slice", "split", "concat", "transpose", "reshape", "squeeze", "unsqueeze", "flatten",
    "depthtospace", "spacetodepth", "pad", "tile", "expand", "identity", "gather",
    "gatherelements", "gather_elements", "gathernd", "scatter", "scatterelements",
    "scatter_elements", "scatternd", "onehot", "reversesequence", "resize", "upsample", "maxunpool",
    "constant", "tril", "triu", "eyelike", "nonzero", "range",
)  # fmt: skip
OUT_OF_SCOPE = {
    # arithmetic: interpolation, antialiasing, scatter reductions
    r"_cubic|_linear|antialias": "interpolating Resize modes compute",
    r"test_scatter.*(reduction|_add_|_max_|_min_|_mul|multiply|duplicate|_add_cpu|_add_cuda)": (
        "scatter reductions compute"
    ),
    r"test_scatternd_(add|max|min|multiply)": "ScatterND reductions compute",
    # not tensors
    r"test_identity_(opt|sequence)|test_split_to_sequence": "optional and sequence values",
    r"not_larger|not_smaller": "keep_aspect_ratio_policy",
    r"tf_crop_and_resize": "a region of interest",
    r"test_range_.*_expanded": "Range's expansion is a Loop of arithmetic (Ceil, Div, ...)",
    # onnxruntime and onnx's reference disagree: onnxruntime's indices (and DirectML's) name
    # positions of the given output_shape, the reference's of the default-shaped result
    r"test_maxunpool_export_with_output_shape": "onnxruntime's meaning of output_shape",
}

backend_test = backend_tests.BackendTest(dmlops_backend, __name__)
for op in CLAIMED:
    backend_test.include(rf"^test_{op}(_|$)")
for pattern in OUT_OF_SCOPE:
    backend_test.exclude(pattern)
backend_test.exclude(r"_cuda$" if not dmlops_backend.supports_device("CUDA") else r"^$")

globals().update(backend_test.test_cases)


def test_the_interface_refuses_what_it_does_not_lower() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph)
    assert not dmlops_backend.is_compatible(model)
    with pytest.raises(dmlops_backend.ModelError, match=r"Relu.*is not lowered by dmlops"):
        dmlops_backend.prepare(model)
    assert dmlops_backend.supports_device("CPU") and not dmlops_backend.supports_device("TPU")
