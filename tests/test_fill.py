"""FILL_VALUE_CONSTANT: the page's example, every rule, the table, every backend and type
(the value's bits exactly, -0.0 and NaN payloads included), DxDispatch files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dmlops
from conftest import to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    Device,
    DmlError,
    FillValueConstantDesc,
    UnsupportedFeatureLevelError,
)

F32 = DataType.FLOAT32


def test_page_example() -> None:
    desc = FillValueConstantDesc(BufferTensorDesc(F32, (1, 1, 2, 4)), "FLOAT32", 13.0)
    op = Device("2_1").create_operator(desc)
    out = np.zeros(8, np.float32)
    op.execute([], [out])
    assert out.tolist() == [13.0] * 8


RULES = [
    (
        FillValueConstantDesc(BufferTensorDesc(F32, (2,)), "INT32", 1),
        r"ValueDataType is INT32: must equal",
    ),
    (
        FillValueConstantDesc(BufferTensorDesc(DataType.INT8, (2,)), None, 128),
        r"Value is 128: not an INT8",
    ),
    (
        FillValueConstantDesc(BufferTensorDesc(DataType.INT32, (2,)), None, 0.5),
        r"Value is 0\.5: not an INT32",
    ),
    (FillValueConstantDesc(BufferTensorDesc(F32, (2,)), None, "1"), r"Value is '1': not a number"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: FillValueConstantDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_the_table() -> None:
    four = FillValueConstantDesc(BufferTensorDesc(DataType.UINT8, (1, 1, 1, 3)), None, 3)
    four.validate("2_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_2_1"):
        four.validate("2_0")
    flat = FillValueConstantDesc(BufferTensorDesc(DataType.UINT8, (3,)), None, 3)
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_0"):
        flat.validate("3_1")
    flat.validate("4_0")
    wide = FillValueConstantDesc(BufferTensorDesc(DataType.FLOAT64, (3,)), None, 0.1)
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_1"):
        wide.validate("4_0")
    wide.validate("4_1")


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.float32, -0.0),
        (np.float16, 65504.0),
        (np.float64, 0.1),
        (np.int8, -128),
        (np.uint64, 2**64 - 1),
        (np.int64, -(2**63)),
        (np.uint16, 7),
    ],
)
def test_every_backend_and_type(backend: str, dtype: type, value: float) -> None:
    sizes = (3, 1, 4, 2, 5)
    want = np.full(sizes, value, dtype)
    got = dmlops.fill_value_constant(
        sizes, value, dtype, device=None if backend == "numpy" else backend
    )
    assert to_host(got).tobytes() == want.tobytes()
    out = to_device(backend, np.zeros((2, 3), dtype))
    assert dmlops.fill_value_constant((2, 3), value, out=out) is out
    assert to_host(out).tobytes() == np.full((2, 3), value, dtype).tobytes()


def test_a_failed_call_leaves_out_untouched() -> None:
    out = np.full(4, 9, np.int8)
    with pytest.raises(DmlError, match="not an INT8"):
        dmlops.fill_value_constant((4,), 300, out=out)
    assert (out == 9).all()


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "y": {"initialValuesDataType": "INT16", "initialValues": {"valueCount": 4, "value": 0}}
        },
        "dispatchables": {
            "fill": {
                "type": "DML_OPERATOR_FILL_VALUE_CONSTANT",
                "desc": {
                    "OutputTensor": {"DataType": "INT16", "Sizes": [1, 1, 2, 2]},
                    "ValueDataType": "INT16",
                    "Value": -7,
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "fill", "bindings": {"OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "fill.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("2_1"), lines.append)
    assert lines == ["Resource 'y': -7, -7, -7, -7"]
