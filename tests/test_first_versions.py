"""The first versions still in DirectML's API: PADDING, DEPTH_TO_SPACE and SPACE_TO_DEPTH
(the pages' examples, every rule, the feature-level tables, the functional calls at levels
older than the later versions, DxDispatch files) against naive element-by-element loops."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    DepthToSpaceDesc,
    Device,
    DmlError,
    FeatureLevel,
    InvalidDescriptorError,
    PaddingDesc,
    SpaceToDepthDesc,
    UnsupportedFeatureLevelError,
)

F32, I8, U32 = DataType.FLOAT32, DataType.INT8, DataType.UINT32


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


def _run(desc: object, x: np.ndarray, level: str = "6_4") -> np.ndarray:
    """The descriptor run through the Device API on byte buffers of TotalTensorSizeInBytes."""
    op = Device(level).create_operator(desc)  # type: ignore[arg-type]
    in_t = desc.input_tensor  # type: ignore[attr-defined]
    out_t = desc.output_tensor  # type: ignore[attr-defined]
    source = np.zeros(in_t.total_tensor_size_in_bytes, np.uint8)
    flat = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    source[: flat.size] = flat
    out = np.full(out_t.total_tensor_size_in_bytes, 7, np.uint8)
    op.execute([source], [out])
    count = int(np.prod(out_t.sizes))
    return out.view(out_t.data_type.numpy_dtype)[:count].reshape(out_t.sizes)


# -- the pages' examples ------------------------------------------------------------------

PAGE = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
FIRST_ROWS = {  # the first output row of each page example (the rest follow the same rule)
    "CONSTANT": [9] * 10,
    "EDGE": [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
    "REFLECTION": [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
    "SYMMETRIC": [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
}


@pytest.mark.parametrize("mode", FIRST_ROWS)
def test_padding_page_examples(mode: str) -> None:
    desc = PaddingDesc(
        _t(F32, 1, 1, 4, 4), _t(F32, 1, 1, 8, 10), mode, 9, [0, 0, 1, 2], [0, 0, 3, 4]
    )
    got = _run(desc, PAGE, "3_0")
    numpy_mode = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect"}
    pad = [(1, 3), (2, 4)]
    want = (
        np.pad(PAGE, pad, "constant", constant_values=9)
        if mode == "CONSTANT"
        else np.pad(PAGE, pad, numpy_mode.get(mode, "symmetric"))
    )
    np.testing.assert_array_equal(got[0, 0], want)
    assert got[0, 0, 0].tolist() == FIRST_ROWS[mode]


def test_depth_to_space_page_example() -> None:
    values = [c * 9 + k for c in range(8) for k in range(6)]
    x = np.array(values, np.uint32).reshape(1, 8, 2, 3)
    got = _run(DepthToSpaceDesc(_t(U32, 1, 8, 2, 3), _t(U32, 1, 2, 4, 6), 2), x)
    assert got[0, 0].tolist() == [
        [0, 18, 1, 19, 2, 20],
        [36, 54, 37, 55, 38, 56],
        [3, 21, 4, 22, 5, 23],
        [39, 57, 40, 58, 41, 59],
    ]
    assert got[0, 1, 0].tolist() == [9, 27, 10, 28, 11, 29]
    back = _run(SpaceToDepthDesc(_t(U32, 1, 2, 4, 6), _t(U32, 1, 8, 2, 3), 2), got)
    np.testing.assert_array_equal(back, x)


# -- rules and tables ----------------------------------------------------------------------

RULES = [
    (
        PaddingDesc(_t(F32, 1, 1, 2, 3), _t(F32, 1, 1, 3, 3), 0, 0, [0, 0, 1, 0], [0, 0, 1, 0]),
        r"PADDING.OutputTensor.Sizes\[2\] is 3: must be InputTensor.Sizes\[2\] \+ StartPadding",
    ),
    (
        PaddingDesc(_t(F32, 1, 1, 2, 3), _t(F32, 1, 1, 2, 3), 0, 0, [0, 0, 0], [0, 0, 0]),
        "PADDING.DimensionCount is 3: must equal InputTensor.DimensionCount 4",
    ),
    (
        PaddingDesc(_t(F32, 1, 1, 2, 3), _t(I8, 1, 1, 2, 3), 0, 0, [0] * 4, [0] * 4),
        "PADDING.OutputTensor.DataType is INT8: must equal InputTensor.DataType FLOAT32",
    ),
    (
        PaddingDesc(_t(F32, 1, 1, 2, 3), _t(F32, 1, 1, 2, 3), "WRAP", 0, [0] * 4, [0] * 4),
        "PADDING.PaddingMode is WRAP: PADDING takes CONSTANT, EDGE, REFLECTION and SYMMETRIC",
    ),
    (
        DepthToSpaceDesc(_t(F32, 1, 6, 2, 2), _t(F32, 1, 1, 4, 4), 2),
        r"DEPTH_TO_SPACE.InputTensor.Sizes\[1\] is 6: InputChannelCount must be a multiple",
    ),
    (
        SpaceToDepthDesc(_t(F32, 1, 1, 3, 4), _t(F32, 1, 4, 1, 2), 2),
        r"SPACE_TO_DEPTH.InputTensor.Sizes\[2\] is 3: must be a multiple of BlockSize 2",
    ),
    (
        DepthToSpaceDesc(_t(F32, 1, 4, 2, 2), _t(F32, 1, 1, 4, 5), 2),
        r"DEPTH_TO_SPACE.OutputTensor.Sizes\[3\] is 5: must be 4",
    ),
    (DepthToSpaceDesc(_t(F32, 1, 4, 2, 2), _t(F32, 1, 4, 2, 2), 0), "BlockSize is 0"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: object, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()  # type: ignore[attr-defined]


def test_bad_fields_are_refused_when_built() -> None:
    with pytest.raises(InvalidDescriptorError, match=r"PADDING\.PaddingMode is 7"):
        PaddingDesc(_t(F32, 1, 1, 1, 1), _t(F32, 1, 1, 1, 1), 7, 0, [0] * 4, [0] * 4)
    negative = PaddingDesc(_t(F32, 1, 1, 1, 1), _t(F32, 1, 1, 1, 1), 0, 0, [0, 0, -1, 0], [0] * 4)
    with pytest.raises(InvalidDescriptorError, match=r"PADDING\.StartPadding\[2\] is -1"):
        negative.validate()


def test_feature_level_tables() -> None:
    def pad(dt: DataType, rank: int, mode: str = "EDGE") -> PaddingDesc:
        return PaddingDesc(
            _t(dt, *[2] * rank), _t(dt, *[3] * rank), mode, 0, [1] * rank, [0] * rank
        )

    pad(F32, 4).validate("1_0")
    pad(DataType.FLOAT16, 5).validate("1_0")
    for dt, rank, needs in (
        (I8, 4, "2_1"),
        (F32, 3, "3_1"),
        (I8, 8, "3_1"),
        (DataType.INT64, 4, "5_0"),
        (DataType.FLOAT64, 1, "5_0"),
    ):
        before = FeatureLevel.parse(needs)
        older = max(lv for lv in FeatureLevel if lv < before)
        with pytest.raises(UnsupportedFeatureLevelError):
            pad(dt, rank).validate(older)
        pad(dt, rank).validate(needs)
    with pytest.raises(UnsupportedFeatureLevelError, match="SYMMETRIC needs DML_FEATURE_LEVEL_3_0"):
        pad(F32, 4, "SYMMETRIC").validate("2_1")
    pad(F32, 4, "SYMMETRIC").validate("3_0")
    for cls in (DepthToSpaceDesc, SpaceToDepthDesc):
        deep, space = _t(F32, 1, 4, 1, 1), _t(F32, 1, 1, 2, 2)
        desc = cls(deep, space, 2) if cls is DepthToSpaceDesc else cls(space, deep, 2)
        desc.validate("1_0")
        ints = BufferTensorDesc(U32, deep.sizes), BufferTensorDesc(U32, space.sizes)
        desc = cls(*ints, 2) if cls is DepthToSpaceDesc else cls(ints[1], ints[0], 2)
        with pytest.raises(UnsupportedFeatureLevelError, match="need DML_FEATURE_LEVEL_2_1"):
            desc.validate("1_0")
        desc.validate("2_1")
        longs = (
            BufferTensorDesc(DataType.INT64, deep.sizes),
            BufferTensorDesc(DataType.INT64, space.sizes),
        )
        desc = cls(*longs, 2) if cls is DepthToSpaceDesc else cls(longs[1], longs[0], 2)
        with pytest.raises(UnsupportedFeatureLevelError):
            desc.validate("4_1")
        desc.validate("5_0")


# -- PaddingValue is a FLOAT --------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "value", "want"),
    [
        (np.int8, 10.6, 10),
        (np.int8, -10.6, -10),
        (np.int8, 300.0, 127),
        (np.int8, -1e9, -128),
        (np.uint8, -3.0, 0),
        (np.int32, float("nan"), 0),
        (np.int64, 2.0**40 + 0.5, 2**40),
        (np.float16, 0.1, np.float16(np.float32(0.1))),
        (np.float64, 0.1, np.float64(np.float32(0.1))),
    ],
)
def test_padding_value_is_a_float_converted_to_the_type(
    dtype: type, value: float, want: object
) -> None:
    dt = DataType.from_numpy(dtype)
    desc = PaddingDesc(_t(dt, 1, 1, 1, 1), _t(dt, 1, 1, 1, 2), 0, value, [0] * 4, [0, 0, 0, 1])
    got = _run(desc, np.zeros(1, dtype))
    assert got.reshape(-1)[1] == want
    assert got.reshape(-1)[1].tobytes() == np.array(want, dtype).tobytes()


# -- the functional calls at older feature levels ------------------------------------------


def test_functional_calls_take_the_first_versions_before_the_later_ones(backend: str) -> None:
    x = to_device(backend, np.arange(2 * 8 * 3 * 2, dtype=np.float32).reshape(2, 8, 3, 2))
    for level in ("1_0", "2_1", "6_4"):
        got = to_host(dmlops.depth_to_space(x, 2, feature_level=level))
        np.testing.assert_array_equal(got, to_host(dmlops.depth_to_space(x, 2, "DCR")))
        back = to_host(dmlops.space_to_depth(to_device(backend, got), 2, feature_level=level))
        np.testing.assert_array_equal(back, to_host(x))
    with pytest.raises(UnsupportedFeatureLevelError, match="DEPTH_TO_SPACE1 needs"):
        dmlops.depth_to_space(x, 2, "CRD", feature_level="2_0")
    ints = to_device(backend, np.arange(4, dtype=np.int8).reshape(1, 1, 2, 2))
    got = to_host(dmlops.padding(ints, [0, 0, 1, 0], [0, 0, 0, 1], value=10.6, feature_level="3_0"))
    assert got.tolist() == [[[[10, 10, 10], [0, 1, 10], [2, 3, 10]]]]
    with pytest.raises(DmlError, match=r"PADDING1\.PaddingValue is 10\.6: not an INT8"):
        dmlops.padding(ints, [0, 0, 1, 0], [0, 0, 0, 1], value=10.6)
    with pytest.raises(
        UnsupportedFeatureLevelError, match=r"PADDING\.InputTensor\.DimensionCount is 1"
    ):
        dmlops.padding(to_device(backend, np.ones(3, np.float32)), [1], [1], feature_level="2_1")


@settings(max_examples=40, deadline=None)
@given(
    mode=st.sampled_from(["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC"]),
    sizes=st.lists(st.integers(1, 4), min_size=4, max_size=5),
    data=st.data(),
)
def test_padding_matches_a_naive_loop(mode: str, sizes: list[int], data: st.DataObject) -> None:
    rank = len(sizes)
    start = data.draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    end = data.draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    if mode == "REFLECTION":
        start = [min(a, n - 1) for a, n in zip(start, sizes, strict=True)]
        end = [min(b, n - 1) for b, n in zip(end, sizes, strict=True)]
    x = np.arange(int(np.prod(sizes)), dtype=np.float32).reshape(sizes)
    out = tuple(n + a + b for n, a, b in zip(sizes, start, end, strict=True))
    got = _run(PaddingDesc(_t(F32, *sizes), _t(F32, *out), mode, -2.5, start, end), x)
    for pos in itertools.product(*(range(n) for n in out)):
        src = []
        for p, a, n in zip(pos, start, sizes, strict=True):
            i = p - a
            if mode == "EDGE":
                i = min(max(i, 0), n - 1)
            elif mode == "REFLECTION" and n > 1:
                i = -i if i < 0 else (2 * (n - 1) - i if i >= n else i)
            elif mode == "REFLECTION":
                i = 0
            elif mode == "SYMMETRIC":
                while not 0 <= i < n:
                    i = -i - 1 if i < 0 else 2 * n - 1 - i
            src.append(i)
        inside = all(0 <= i < n for i, n in zip(src, sizes, strict=True))
        want = x[tuple(src)] if inside else np.float32(-2.5)
        assert got[pos] == want, (pos, src)


# -- DxDispatch ----------------------------------------------------------------------------


def test_dxdispatch_files_take_the_first_versions(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": list(range(16))},
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 16, "value": 0},
            },
            "z": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 36, "value": 0},
            },
        },
        "dispatchables": {
            "d2s": {
                "type": "DML_OPERATOR_DEPTH_TO_SPACE",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 4, 2, 2]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                    "BlockSize": 2,
                },
            },
            "pad": {
                "type": "DML_OPERATOR_PADDING",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 6, 6]},
                    "PaddingMode": "DML_PADDING_MODE_REFLECTION",
                    "StartPadding": [0, 0, 1, 1],
                    "EndPadding": [0, 0, 1, 1],
                },
            },
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "d2s",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {
                "type": "dispatch",
                "dispatchable": "pad",
                "bindings": {"InputTensor": "y", "OutputTensor": "z"},
            },
            {"type": "print", "resource": "z"},
        ],
    }
    path = tmp_path / "first.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("1_0"), lines.append)
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    y = x.reshape(1, 2, 2, 1, 2, 2).transpose(0, 3, 4, 1, 5, 2).reshape(4, 4)
    want = np.pad(y, 1, "reflect")
    assert lines == ["Resource 'z': " + ", ".join(f"{v:g}" for v in want.reshape(-1))]
    bad = json.loads(json.dumps(model))
    bad["dispatchables"]["d2s"]["desc"]["Order"] = 1  # the first version has no Order
    path.write_text(json.dumps(bad))
    with pytest.raises(DmlError, match="Order"):
        load_model(path)
