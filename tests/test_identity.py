"""ELEMENT_WISE_IDENTITY: a layout change between two tensor descriptions on every backend
and type against a naive loop, every rule, the table, ScaleBias refused by name, torch's
gradient, DxDispatch files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    Device,
    DmlError,
    ElementWiseIdentityDesc,
    UnsupportedFeatureLevelError,
)
from strategies import layouts

F32 = DataType.FLOAT32


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    dtype=st.sampled_from([np.float32, np.float16, np.int64, np.uint8, np.float64]),
    data=st.data(),
)
def test_any_two_layouts_on_every_backend_against_a_naive_loop(
    backend: str, sizes: list[int], dtype: type, data: st.DataObject
) -> None:
    """An identity between an input and an output of their own strides (broadcast inputs
    included) writes output[c] = input[c] for every c, through the Device API."""
    dt = DataType.from_numpy(dtype)
    in_desc = BufferTensorDesc(dt, sizes, data.draw(layouts(sizes, False)))
    out_desc = BufferTensorDesc(dt, sizes, data.draw(layouts(sizes, True)))
    desc = ElementWiseIdentityDesc(in_desc, out_desc)
    size = np.dtype(dtype).itemsize
    source = np.random.default_rng(0).integers(0, 256, in_desc.total_tensor_size_in_bytes, np.uint8)
    out = np.full(out_desc.total_tensor_size_in_bytes, 0xAB, np.uint8)
    op = Device(backend=backend).create_operator(desc)
    got_dev = to_device(backend, out)
    op.execute([to_device(backend, source)], [got_dev])
    got = to_host(got_dev)
    want = out.copy()
    for c in itertools.product(*(range(n) for n in sizes)):
        src = sum(i * s for i, s in zip(c, in_desc.effective_strides, strict=True)) * size
        dst = sum(i * s for i, s in zip(c, out_desc.effective_strides, strict=True)) * size
        want[dst : dst + size] = source[src : src + size]
    assert got.tobytes() == want.tobytes()


def test_rules_and_table() -> None:
    a, b = BufferTensorDesc(F32, (2, 3)), BufferTensorDesc(F32, (3, 2))
    with pytest.raises(DmlError, match=r"OutputTensor\.Sizes is \[3, 2\]: must equal"):
        ElementWiseIdentityDesc(a, b).validate()
    with pytest.raises(DmlError, match=r"DataType is INT32: must equal"):
        ElementWiseIdentityDesc(a, BufferTensorDesc(DataType.INT32, (2, 3))).validate()
    ints = BufferTensorDesc(DataType.INT32, (2, 3))
    with pytest.raises(DmlError, match=r"ScaleBias is given for INT32 tensors: .* float"):
        ElementWiseIdentityDesc(ints, ints, (2.0, 1.0)).validate()
    with pytest.raises(DmlError, match=r"ScaleBias\.Scale is inf: must be a finite FLOAT"):
        ElementWiseIdentityDesc(a, a, (float("inf"), 1.0)).validate()
    with pytest.raises(DmlError, match=r"a DML_SCALE_BIAS is \(Scale, Bias\)"):
        ElementWiseIdentityDesc(a, a, (2.0,)).validate()
    four = BufferTensorDesc(F32, (1, 1, 2, 3))
    ElementWiseIdentityDesc(four, four).validate("1_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_3_0"):
        ElementWiseIdentityDesc(a, a).validate("2_1")
    wide = BufferTensorDesc(DataType.INT64, (2, 3))
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_1"):
        ElementWiseIdentityDesc(wide, wide).validate("3_0")


def test_functional_copy_gradient_and_out(backend: str) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    view = to_device(backend, x).transpose(2, 0, 1)[::-1] if backend != "webgpu" else None
    if view is not None:
        got = to_host(dmlops.element_wise_identity(view))
        assert got.tobytes() == np.ascontiguousarray(x.transpose(2, 0, 1)[::-1]).tobytes()
    out = to_device(backend, np.zeros((2, 3, 4), np.float32))
    assert dmlops.element_wise_identity(to_device(backend, x), out=out) is out
    assert to_host(out).tobytes() == x.tobytes()


def test_torch_gradient() -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(2, 3).requires_grad_()
    y = dmlops.element_wise_identity(t.T)
    assert y.is_contiguous() and torch.equal(y.detach(), t.detach().T)
    (y * torch.arange(6.0).reshape(3, 2)).sum().backward()
    assert torch.equal(t.grad, torch.arange(6.0).reshape(3, 2).T)


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 1, 2, 3, 4, 5]},
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 6, "value": 0},
            },
        },
        "dispatchables": {
            "t": {
                "type": "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 3]},
                    "OutputTensor": {
                        "DataType": "FLOAT32",
                        "Sizes": [1, 1, 2, 3],
                        "Strides": [6, 6, 1, 2],
                    },
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "t",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("1_0"), lines.append)
    assert lines == ["Resource 'y': 0, 3, 1, 4, 2, 5"]
    model["dispatchables"]["t"]["desc"]["ScaleBias"] = {"Scale": 2, "Bias": 0.5}
    path.write_text(json.dumps(model))
    run_model(load_model(path), Device(), lines.append)
    assert lines[-1] == "Resource 'y': 0.5, 6.5, 2.5, 8.5, 4.5, 10.5"


def test_in_place_execution_as_the_page_permits(backend: str) -> None:
    """The output binding may alias the input's (one address, one layout): every element
    written where it was read; a layout change over the same bytes stays refused."""
    import dmlops
    from conftest import to_device, to_host
    from dmlops import BindingError, BufferTensorDesc, DataType, Device, ElementWiseIdentityDesc

    f32 = DataType.FLOAT32
    host = np.arange(24, dtype=np.float32)
    device = Device(backend=backend)
    x = to_device(backend, host.copy())
    same = ElementWiseIdentityDesc(
        BufferTensorDesc(f32, (2, 3, 4)), BufferTensorDesc(f32, (2, 3, 4))
    )
    device.create_operator(same).execute([x], [x])
    assert to_host(x).tobytes() == host.tobytes()
    turned = ElementWiseIdentityDesc(
        BufferTensorDesc(f32, (4, 6)), BufferTensorDesc(f32, (4, 6), (1, 4))
    )
    with pytest.raises(BindingError, match=r"overlaps ELEMENT_WISE_IDENTITY\.InputTensor"):
        device.create_operator(turned).execute([x], [x])
    back = to_device(backend, host.reshape(4, 6).copy())  # (the functional call: in place)
    assert dmlops.element_wise_identity(back, out=back) is back
    assert to_host(back).tobytes() == host.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_scale_bias_against_float_arithmetic(backend: str, dtype: Any) -> None:
    """x * Scale + Bias element by element: in float32 (float64 for FLOAT64), the product
    rounded before the sum, a FLOAT16 result rounded once more; NaN the one NaN; any layout."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((5, 8)) * 1000).astype(dtype)
    x.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    scale, bias = 1.0 / 3.0, -7.1
    wide = np.float64 if dtype == np.float64 else np.float32
    s, b = wide(np.float32(scale)), wide(np.float32(bias))
    want = np.empty((8, 5), dtype)
    view = x.T
    for i in range(8):
        for j in range(5):
            v = wide(view[i, j])
            with np.errstate(invalid="ignore", over="ignore"):
                r = wide(wide(v * s) + b)
            want[i, j] = (
                dtype(r)
                if not np.isnan(r)
                else np.array(0x7FFFFFFFFFFFFFFF, np.uint64).view(np.float64).astype(dtype)
            )
    got = dmlops.element_wise_identity(to_device(backend, view), scale_bias=(scale, bias))
    assert to_host(got).tobytes() == want.tobytes()
