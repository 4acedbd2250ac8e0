"""JOIN's own support table (JOIN page + feature-level history), through every front end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dmlops
from dmlops import (
    BufferTensorDesc,
    DataType,
    FeatureLevel,
    JoinDesc,
    SplitDesc,
    UnsupportedFeatureLevelError,
)
from dmlops.cli import main

DIRECTML_JOIN = Path(__file__).resolve().parent / "data" / "dxdispatch" / "dml_join.json"
F32 = DataType.FLOAT32


def join_of(rank: int, dt: DataType = F32) -> JoinDesc:
    sizes = (2,) + (1,) * (rank - 1)
    half = (1,) + (1,) * (rank - 1)
    return JoinDesc([BufferTensorDesc(dt, half)] * 2, BufferTensorDesc(dt, sizes), 0)


@pytest.mark.parametrize(
    "level, rank, dt, valid",
    [
        ("3_0", 3, F32, False),
        ("3_0", 4, F32, True),
        ("3_0", 5, F32, True),
        ("3_0", 6, F32, False),
        ("3_1", 6, F32, True),
        ("3_1", 6, DataType.INT64, False),
        ("4_1", 1, F32, True),
        ("4_1", 8, DataType.INT64, True),
        ("4_1", 1, DataType.FLOAT64, True),
        ("1_0", 4, DataType.INT8, False),
        ("2_1", 4, DataType.INT8, True),
        ("2_1", 5, F32, False),
    ],
)
def test_join_table(level: str, rank: int, dt: DataType, valid: bool) -> None:
    desc = join_of(rank, dt)
    if valid:
        desc.validate(level)
    else:
        with pytest.raises(UnsupportedFeatureLevelError, match=r"^JOIN\.InputTensors\[0\]\."):
            desc.validate(level)


def test_join_message_names_the_field_and_the_level_it_needs() -> None:
    with pytest.raises(
        UnsupportedFeatureLevelError,
        match=r"^JOIN\.InputTensors\[0\]\.DimensionCount is 3: DML_FEATURE_LEVEL_3_0 and above "
        r"supports 4 to 5 dimensions for JOIN; 3 dimensions of FLOAT32 need DML_FEATURE_LEVEL_3_1$",
    ):
        join_of(3).validate(FeatureLevel.FL_3_0)
    with pytest.raises(
        UnsupportedFeatureLevelError,
        match=r"DataType is INT8: DML_FEATURE_LEVEL_1_0 .*; 4 dimensions of INT8 need "
        r"DML_FEATURE_LEVEL_2_1$",
    ):
        join_of(4, DataType.INT8).validate(FeatureLevel.FL_1_0)
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_1$"):
        join_of(6, DataType.INT64).validate(FeatureLevel.FL_3_1)


def test_split_keeps_its_own_table() -> None:
    for rank in (1, 3, 6, 8):
        sizes = (2,) + (1,) * (rank - 1)
        SplitDesc(BufferTensorDesc(F32, sizes), [BufferTensorDesc(F32, sizes)], 0).validate(
            FeatureLevel.FL_3_0
        )


def test_functional_join_at_3_0() -> None:
    parts = [np.zeros((2, 3, 4), np.float32)] * 2
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_3_1"):
        dmlops.join(parts, 0, feature_level="3_0")
    assert dmlops.join(parts, 0, feature_level="3_1").shape == (4, 3, 4)
    four = [np.zeros((1, 2, 3, 4), np.float32)] * 2
    assert dmlops.join(four, 0, feature_level="3_0").shape == (2, 2, 3, 4)


def test_onnx_concat_at_3_0_says_which_level_it_needs() -> None:
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from dmlops import onnx as dml_onnx

    def concat_model(rank: int) -> object:
        shape = [2] * rank
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "ab"]
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        node = helper.make_node("Concat", ["a", "b"], ["y"], axis=0)
        return helper.make_model(helper.make_graph([node], "g", ins, [out]))

    x3 = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    dev30 = dmlops.Device(feature_level="3_0")
    with pytest.raises(
        dmlops.DmlError,
        match=r"ONNX node 'Concat': node 0 \(JOIN\)\.InputTensors\[0\]\..*3 dimensions of FLOAT32 need DML_FEATURE_LEVEL_3_1",
    ):
        dml_onnx.run(concat_model(3), {"a": x3, "b": x3}, device=dev30)
    (y,) = dml_onnx.run(
        concat_model(3), {"a": x3, "b": x3}, device=dmlops.Device(feature_level="3_1")
    )
    np.testing.assert_array_equal(y, np.concatenate([x3, x3]))
    x4 = x3.reshape(1, 2, 2, 2)
    (y4,) = dml_onnx.run(concat_model(4), {"a": x4, "b": x4}, device=dev30)
    np.testing.assert_array_equal(y4, np.concatenate([x4, x4]))


def test_dmlops_run_of_a_1d_join_needs_3_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(DIRECTML_JOIN), "--feature-level", "3_0"]) == 1
    err = capsys.readouterr().err
    assert "JOIN.InputTensors[0].DimensionCount is 1" in err
    assert "need DML_FEATURE_LEVEL_3_1" in err
    assert main(["run", str(DIRECTML_JOIN), "--feature-level", "3_1"]) == 0
    assert "Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9" in capsys.readouterr().out
