"""MAX_UNPOOLING: every rule, the table, every backend and type against a naive loop, a
max pooling's own indices (onnxruntime's MaxPool, torch's max_pool2d), duplicates, indices
out of range, DxDispatch files and ONNX MaxUnpool against onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import TORCH_DEVICES, to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    Device,
    DmlError,
    IndexOutOfRangeError,
    MaxUnpoolingDesc,
    UnsupportedFeatureLevelError,
)

F32, U32, U64 = DataType.FLOAT32, DataType.UINT32, DataType.UINT64


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


def naive(x: np.ndarray, indices: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """Zeros, then output.flat[indices[c]] = x[c] in index order (the later one wins)."""
    out = np.zeros(int(np.prod(sizes)), x.dtype)
    for value, k in zip(x.reshape(-1), indices.reshape(-1), strict=True):
        out[int(k)] = value
    return out.reshape(sizes)


RULES = [
    (
        MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(U32, 1, 1, 2, 3), _t(F32, 1, 1, 4, 4)),
        r"IndicesTensor\.Sizes is \[1, 1, 2, 3\]: must be \[1, 1, 2, 2\]",
    ),
    (
        MaxUnpoolingDesc(
            _t(F32, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(DataType.FLOAT16, 1, 1, 4, 4)
        ),
        r"DataType is FLOAT16: must equal",
    ),
    (
        MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(F32, 1, 4, 4)),
        r"OutputTensor\.DimensionCount is 3",
    ),
    (
        MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(DataType.INT64, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4)),
        r"IndicesTensor\.DataType is INT64",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: MaxUnpoolingDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_the_table() -> None:
    MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4)).validate("3_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_3_0"):
        MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4)).validate(
            "2_1"
        )
    wide = MaxUnpoolingDesc(_t(F32, 1, 1, 2, 2), _t(U64, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4))
    ints = MaxUnpoolingDesc(
        _t(DataType.INT8, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(DataType.INT8, 1, 1, 4, 4)
    )
    for desc in (wide, ints):
        with pytest.raises(UnsupportedFeatureLevelError):
            desc.validate("4_1")
        desc.validate("5_0")
    doubles = MaxUnpoolingDesc(
        _t(DataType.FLOAT64, 1, 1, 2, 2), _t(U32, 1, 1, 2, 2), _t(DataType.FLOAT64, 1, 1, 4, 4)
    )
    with pytest.raises(UnsupportedFeatureLevelError, match="FLOAT64"):
        doubles.validate()


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    h=st.integers(1, 4),
    w=st.integers(1, 4),
    grow=st.integers(1, 3),
    dtype=st.sampled_from([np.float32, np.float16, np.int32, np.int64, np.uint8, np.float64]),
    itype=st.sampled_from([np.uint32, np.uint64, np.int64, np.int32]),
    data=st.data(),
)
def test_every_backend_and_type_against_a_naive_loop(
    backend: str, n: int, c: int, h: int, w: int, grow: int, dtype: Any, itype: Any, data: Any
) -> None:
    """Random indices (duplicates included: the later wins) into a larger output."""
    sizes = (n, c, h * grow, w * grow)
    total = int(np.prod(sizes))
    picks = data.draw(
        st.lists(st.integers(0, total - 1), min_size=n * c * h * w, max_size=n * c * h * w)
    )
    x = (np.arange(n * c * h * w) + 1).astype(dtype).reshape(n, c, h, w)
    idx = np.array(picks, itype).reshape(n, c, h, w)
    got = to_host(dmlops.max_unpooling(to_device(backend, x), to_device(backend, idx), sizes))
    assert got.tobytes() == naive(x, idx, sizes).tobytes()


def test_a_pooling_s_own_indices_and_torch_s_plane_indices(backend: str) -> None:
    torch = pytest.importorskip("torch")
    t = torch.randn(2, 3, 6, 8)
    y, plane = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    whole = plane + torch.arange(6).reshape(2, 3, 1, 1) * 48  # (n * C + c) * H * W added
    got = dmlops.max_unpooling(
        to_device(backend, y.numpy()), to_device(backend, whole.numpy()), [2, 3, 6, 8]
    )
    want = torch.nn.functional.max_unpool2d(y, plane, 2).numpy()
    assert to_host(got).tobytes() == want.tobytes()
    with pytest.raises(DmlError, match="takes no gradient"):
        dmlops.max_unpooling(
            y.clone().requires_grad_(), whole, [2, 3, 6, 8], out=torch.empty(2, 3, 6, 8)
        )


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_torch_gradient_as_max_unpool2d(device: str) -> None:
    """The gradient of each input element is the output gradient where it landed, as torch's
    max_unpool2d gives it; of two elements sent to one place the later one takes it."""
    torch = pytest.importorskip("torch")
    t = torch.randn(2, 3, 6, 8, device=device)
    y, plane = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    whole = plane + torch.arange(6, device=device).reshape(2, 3, 1, 1) * 48
    mine, theirs = y.clone().requires_grad_(), y.clone().requires_grad_()
    weights = torch.randn(2, 3, 6, 8, device=device)
    (dmlops.max_unpooling(mine, whole, [2, 3, 6, 8]) * weights).sum().backward()
    (torch.nn.functional.max_unpool2d(theirs, plane, 2) * weights).sum().backward()
    assert torch.equal(mine.grad, theirs.grad)
    both = torch.tensor([[[[1.0, 2.0]]]], device=device, requires_grad=True)
    dmlops.max_unpooling(
        both, torch.tensor([[[[3, 3]]]], device=device), [1, 1, 2, 2]
    ).sum().backward()
    assert both.grad.tolist() == [[[[0.0, 1.0]]]]


def test_indices_out_of_range_are_refused_before_any_write() -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    out = np.full((1, 1, 4, 4), 7, np.float32)
    for bad in ([0, 1, 2, 16], [0, 1, 2, -1]):
        with pytest.raises(IndexOutOfRangeError, match=r"MAX_UNPOOLING\.IndicesTensor"):
            dmlops.max_unpooling(
                x, np.array(bad, np.int64).reshape(1, 1, 2, 2), [1, 1, 4, 4], out=out
            )
        assert (out == 7).all()


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [5, 6, 7, 8]},
            "i": {"initialValuesDataType": "UINT32", "initialValues": [0, 3, 9, 15]},
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 16, "value": 9},
            },
        },
        "dispatchables": {
            "unpool": {
                "type": "DML_OPERATOR_MAX_UNPOOLING",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
                    "IndicesTensor": {"DataType": "UINT32", "Sizes": [1, 1, 2, 2]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "unpool",
                "bindings": {"InputTensor": "x", "IndicesTensor": "i", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "unpool.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("3_0"), lines.append)
    assert lines == ["Resource 'y': 5, 0, 0, 6, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 8"]


@pytest.mark.parametrize("output_shape", [False, True])
def test_onnx_max_unpool_of_max_pool_against_onnxruntime(output_shape: bool) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto as T
    from onnx import helper as h

    import dmlops.onnx

    # (an odd height needs output_shape: the default output is 2 * 3 rows)
    x = np.random.default_rng(0).standard_normal((2, 3, 7 if output_shape else 6, 8))
    x = x.astype(np.float32)
    nodes = [
        h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    pool = h.make_graph(
        nodes, "p", [h.make_tensor_value_info("x", T.FLOAT, list(x.shape))],
        [h.make_empty_tensor_value_info("y"), h.make_empty_tensor_value_info("i")],
    )  # fmt: skip
    pm = h.make_model(pool, opset_imports=[h.make_opsetid("", 13)])
    pm.ir_version = 8
    y, i = ort.InferenceSession(pm.SerializeToString()).run(None, {"x": x})
    inputs = ["y", "i", "s"] if output_shape else ["y", "i"]
    inits = [h.make_tensor("s", T.INT64, [4], [2, 3, 7, 8])] if output_shape else []
    graph = h.make_graph(
        [h.make_node("MaxUnpool", inputs, ["z"], kernel_shape=[2, 2], strides=[2, 2])],
        "u",
        [
            h.make_tensor_value_info("y", T.FLOAT, list(y.shape)),
            h.make_tensor_value_info("i", T.INT64, list(i.shape)),
        ],
        [h.make_empty_tensor_value_info("z")],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"y": y, "i": i})[0]
    got = dmlops.onnx.run(model, {"y": y, "i": i})
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("source", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"])
def test_torch_indices_are_cast_by_torch_as_numpy_casts_them(source: str) -> None:
    """Signed torch indices and lengths become the unsigned types DirectML reads by torch
    itself (a CUDA tensor's first call imports no CuPy for it): the same bits as numpy's
    astype, clipped first where a bound is given, a view where only the sign changes."""
    torch = pytest.importorskip("torch")
    from dmlops.arrays.indexed import cast_in_library
    from dmlops.elements import torch_to_numpy

    rng = np.random.default_rng(5)
    info = np.iinfo(source)
    values = rng.integers(info.min, info.max, 64, dtype=source, endpoint=True)
    values[:4] = [info.min, info.max, 0, 1]
    tensor = torch.from_numpy(values.copy())
    for dtype, low, high in (
        ("uint64", None, None),
        ("uint32", None, None),
        ("uint32", 0, 2**32 - 1),
        ("int64", None, None),
    ):
        got = cast_in_library(tensor, dtype, low, high)
        want = cast_in_library(values, dtype, low, high)
        assert isinstance(got, torch.Tensor) and str(got.dtype) == f"torch.{dtype}"
        assert torch_to_numpy(got).tobytes() == want.tobytes(), (dtype, low, high)
    same_width = getattr(torch, f"uint{8 * values.itemsize}")
    if source.startswith("int"):
        assert cast_in_library(tensor, str(same_width)[6:]).data_ptr() == tensor.data_ptr()
