"""DIAGONAL_MATRIX: the page's four examples, every rule, the table, every backend and type
against numpy.eye (batches, offsets past either edge, a FLOAT value truncated for integer
types), DxDispatch files."""

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
    DiagonalMatrixDesc,
    DmlError,
    UnsupportedFeatureLevelError,
)

F32 = DataType.FLOAT32


@pytest.mark.parametrize(
    ("sizes", "offset", "want"),
    [
        ((1, 1, 3, 3), 0, [[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
        ((1, 1, 3, 3), 1, [[0, 1, 0], [0, 0, 1], [0, 0, 0]]),
        ((1, 1, 3, 2), -1, [[0, 0], [1, 0], [0, 1]]),
        ((1, 1, 3, 2), -3, [[0, 0], [0, 0], [0, 0]]),
    ],
)
def test_page_examples(sizes: tuple[int, ...], offset: int, want: list[list[int]]) -> None:
    desc = DiagonalMatrixDesc(BufferTensorDesc(F32, sizes), offset, 1.0)
    out = np.full(int(np.prod(sizes)), 7, np.float32)
    Device("2_0").create_operator(desc).execute([], [out])
    assert out.reshape(sizes)[0, 0].tolist() == want


def test_rules_and_table() -> None:
    square = BufferTensorDesc(F32, (1, 1, 2, 2))
    with pytest.raises(DmlError, match=r"Offset is 2147483648: outside INT's range"):
        DiagonalMatrixDesc(square, 2**31).validate()
    with pytest.raises(DmlError, match=r"Offset is 1\.5: not an INT"):
        DiagonalMatrixDesc(square, 1.5).validate()  # type: ignore[arg-type]
    with pytest.raises(DmlError, match=r"Value is 'x': not a number"):
        DiagonalMatrixDesc(square, 0, "x").validate()  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_2_0"):
        DiagonalMatrixDesc(square).validate("1_0")
    flat = BufferTensorDesc(F32, (2, 2))
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_0"):
        DiagonalMatrixDesc(flat).validate("3_1")
    DiagonalMatrixDesc(flat).validate("4_0")
    wide = BufferTensorDesc(DataType.INT64, (2, 2))
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_5_1"):
        DiagonalMatrixDesc(wide).validate("5_0")
    with pytest.raises(UnsupportedFeatureLevelError):
        DiagonalMatrixDesc(BufferTensorDesc(F32, (2,))).validate()


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        (np.float32, -0.0, -0.0),
        (np.float16, 0.1, np.float16(np.float32(0.1))),
        (np.int8, 10.6, 10),
        (np.uint64, 3.0, 3),
    ],
)
@pytest.mark.parametrize(
    ("sizes", "offset"), [((3, 3), 0), ((2, 4, 5), 2), ((2, 1, 5, 3), -4), ((4, 2), 7)]
)
def test_every_backend_and_type_against_numpy_eye(
    backend: str, dtype: type, value: float, stored: float, sizes: tuple[int, ...], offset: int
) -> None:
    got = dmlops.diagonal_matrix(
        sizes, offset, value, dtype, device=None if backend == "numpy" else backend
    )
    eye = np.eye(sizes[-2], sizes[-1], offset, dtype=bool)
    want = np.broadcast_to(np.where(eye, np.array(stored, dtype), np.array(0, dtype)), sizes)
    assert to_host(got).tobytes() == np.ascontiguousarray(want).tobytes()
    out = to_device(backend, np.full(sizes, 9, dtype))
    assert dmlops.diagonal_matrix(sizes, offset, value, out=out) is out
    assert to_host(out).tobytes() == np.ascontiguousarray(want).tobytes()


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 6, "value": 7},
            }
        },
        "dispatchables": {
            "eye": {
                "type": "DML_OPERATOR_DIAGONAL_MATRIX",
                "desc": {
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 3, 2]},
                    "Offset": -1,
                    "Value": 2.5,
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "eye", "bindings": {"OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "eye.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("2_0"), lines.append)
    assert lines == ["Resource 'y': 0, 0, 2.5, 0, 0, 2.5"]
