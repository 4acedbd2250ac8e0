"""DxDispatch-style JSON model files: resources, dispatchables, commands.

A model is read into plain data with every key and type checked (errors name
the JSON path), memory is bounded before anything is allocated, and nothing
from the file is ever evaluated as code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._files import DEFAULT_MAX_FILE_BYTES, read_bounded
from .device import Binding, Device
from .errors import DmlError, ModelError
from .ops import (
    CastDesc,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    DiagonalMatrix1Desc,
    DiagonalMatrixDesc,
    ElementWiseIdentityDesc,
    FillValueConstantDesc,
    FillValueSequenceDesc,
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    GatherNdDesc,
    JoinDesc,
    MaxUnpoolingDesc,
    NonzeroCoordinatesDesc,
    OneHotDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    ReverseSubsequencesDesc,
    ScatterElementsDesc,
    ScatterNdDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SpaceToDepthDesc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from .tensor import BufferTensorDesc, DataType, TensorFlags

__all__ = ["Model", "load_model", "run_model", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 256 << 20
MAX_FILE_BYTES = DEFAULT_MAX_FILE_BYTES
MAX_DEPTH = 32


@dataclass
class Resource:
    """A buffer: its initial bytes and the data type its values (and bindings) use."""

    data_type: DataType
    data: np.ndarray[Any, Any]  # uint8


@dataclass
class Model:
    """A parsed model: resources, operator descriptors by name, and the command list."""

    resources: dict[str, Resource]
    dispatchables: dict[str, OperatorDesc]
    commands: list[dict[str, Any]]


def _fail(path: str, message: str) -> ModelError:
    return ModelError(f"{path}: {message}")


def _obj(value: Any, path: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {type(value).__name__}")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise _fail(f"{path}.{unknown[0]}", "unknown key")
    for key in sorted(required):
        if key not in value:
            raise _fail(path, f"missing required key '{key}'")
    return value


def _int(value: Any, path: str, low: int = 0, high: int = 2**64 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, f"expected an integer, got {json.dumps(value)[:40]}")
    if not low <= value <= high:
        raise _fail(path, f"{value} is outside [{low}, {high}]")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"expected a string, got {type(value).__name__}")
    return value


def _int_list(value: Any, path: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(path, f"expected an array of integers, got {type(value).__name__}")
    if len(value) > 64:
        raise _fail(path, f"{len(value)} entries: at most 64")
    # the UINT/INT range rules are DirectML's, reported by validate() with the field's name
    return [_int(v, f"{path}[{i}]", -(2**63), 2**64 - 1) for i, v in enumerate(value)]


def _number(value: Any, path: str) -> float | int:
    if isinstance(value, bool):
        raise _fail(path, "expected a number")
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        table = {
            "nan": math.nan,
            "inf": math.inf,
            "+inf": math.inf,
            "-inf": -math.inf,
            "infinity": math.inf,
            "-infinity": -math.inf,
        }
        if value.strip().lower() in table:
            return table[value.strip().lower()]
        try:
            return float(value)
        except ValueError:
            pass
    raise _fail(path, f"expected a number or 'NaN'/'inf', got {json.dumps(value)[:40]}")


def _values(values: list[float | int], dt: DataType, path: str) -> np.ndarray[Any, Any]:
    npdt = dt.numpy_dtype
    if npdt.kind == "f":
        return np.array(values, dtype=np.float64).astype(npdt)
    out = np.empty(len(values), dtype=npdt)
    info = np.iinfo(npdt)  # type: ignore[type-var]
    for i, v in enumerate(values):
        if isinstance(v, float) and not v.is_integer():
            raise _fail(f"{path}[{i}]", f"{v} is not an integer value for {dt.name}")
        if not info.min <= v <= info.max:
            raise _fail(f"{path}[{i}]", f"{v} is outside the range of {dt.name}")
        out[i] = int(v)
    return out


def _resource(value: Any, path: str, budget: list[int]) -> Resource:
    r = _obj(
        value,
        path,
        {"initialValuesDataType", "initialValues"},
        {"initialValuesOffsetInBytes", "sizeInBytes", "type"},
    )
    if r.get("type", "buffer") != "buffer":
        raise _fail(f"{path}.type", f"'{r['type']}' is not supported: only 'buffer'")
    try:
        dt = DataType.parse(_str(r["initialValuesDataType"], f"{path}.initialValuesDataType"))
    except DmlError as e:
        raise _fail(f"{path}.initialValuesDataType", str(e)) from None
    if dt is DataType.UNKNOWN:
        raise _fail(f"{path}.initialValuesDataType", "UNKNOWN is not a data type of values")
    init = r["initialValues"]
    ipath = f"{path}.initialValues"
    es = dt.element_size
    if isinstance(init, list):
        count = len(init)
        listed = [_number(v, f"{ipath}[{i}]") for i, v in enumerate(init)]

        def make() -> np.ndarray[Any, Any]:
            return _values(listed, dt, ipath)

    else:
        o = _obj(init, ipath, {"valueCount"}, {"value", "valueStart", "valueDelta"})
        count = _int(o["valueCount"], f"{ipath}.valueCount")
        if "value" in o:
            if "valueStart" in o or "valueDelta" in o:
                raise _fail(ipath, "give either 'value' or 'valueStart'/'valueDelta', not both")
            one = _values([_number(o["value"], f"{ipath}.value")], dt, f"{ipath}.value")

            def make() -> np.ndarray[Any, Any]:
                return np.full(count, one[0], dtype=dt.numpy_dtype)

        elif "valueStart" in o and "valueDelta" in o:
            start = _number(o["valueStart"], f"{ipath}.valueStart")
            delta = _number(o["valueDelta"], f"{ipath}.valueDelta")

            def make() -> np.ndarray[Any, Any]:
                ramp = start + delta * np.arange(count, dtype=np.float64)
                return ramp.astype(dt.numpy_dtype)

        else:
            raise _fail(ipath, "needs 'value', or both 'valueStart' and 'valueDelta'")
    offset = _int(r.get("initialValuesOffsetInBytes", 0), f"{path}.initialValuesOffsetInBytes")
    needed = offset + count * es
    size = _int(r.get("sizeInBytes", needed), f"{path}.sizeInBytes")
    if size < needed:
        raise _fail(
            f"{path}.sizeInBytes", f"{size} is less than the initial values' {needed} bytes"
        )
    budget[0] -= size
    if budget[0] < 0:
        raise _fail(path, f"resources exceed the memory limit ({size} bytes here)")
    data = np.zeros(size, dtype=np.uint8)
    data[offset:needed] = make().view(np.uint8)
    return Resource(dt, data)


_TENSOR_KEYS = {"DataType", "Sizes"}
_TENSOR_OPTIONAL = {
    "Strides",
    "Flags",
    "TotalTensorSizeInBytes",
    "GuaranteedBaseOffsetAlignment",
    "DimensionCount",
}


def _flags(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    names = value if isinstance(value, list) else [value]
    flags = 0
    for i, n in enumerate(names):
        name = _str(n, f"{path}[{i}]" if isinstance(value, list) else path)
        name = name.removeprefix("DML_TENSOR_FLAG_")
        if name not in TensorFlags.__members__:
            raise _fail(path, f"'{n}' is not a DML_TENSOR_FLAGS name")
        flags |= int(TensorFlags[name])
    return flags


def _tensor(value: Any, path: str) -> BufferTensorDesc:
    t = _obj(value, path, _TENSOR_KEYS, _TENSOR_OPTIONAL)
    try:
        dt = DataType.parse(_str(t["DataType"], f"{path}.DataType"))
    except DmlError as e:
        raise _fail(f"{path}.DataType", str(e)) from None
    sizes = _int_list(t["Sizes"], f"{path}.Sizes")
    if "DimensionCount" in t and _int(t["DimensionCount"], f"{path}.DimensionCount") != len(sizes):
        raise _fail(
            f"{path}.DimensionCount", f"{t['DimensionCount']} disagrees with Sizes ({len(sizes)})"
        )
    strides = _int_list(t["Strides"], f"{path}.Strides") if "Strides" in t else None
    total = t.get("TotalTensorSizeInBytes")
    return BufferTensorDesc(
        dt,
        sizes,
        strides,
        None if total is None else _int(total, f"{path}.TotalTensorSizeInBytes"),
        _int(t.get("GuaranteedBaseOffsetAlignment", 0), f"{path}.GuaranteedBaseOffsetAlignment"),
        _flags(t.get("Flags", 0), f"{path}.Flags"),
    )


def _tensor_list(value: Any, path: str) -> list[BufferTensorDesc]:
    if not isinstance(value, list):
        raise _fail(path, "expected an array of tensor descs")
    if len(value) > 4096:
        raise _fail(path, f"{len(value)} tensors: at most 4096")
    return [_tensor(v, f"{path}[{i}]") for i, v in enumerate(value)]


def _count(d: dict[str, Any], key: str, path: str) -> int | None:
    return None if key not in d else _int(d[key], f"{path}.{key}")


_INDEXED: dict[str, tuple[type[OperatorDesc], tuple[str, ...]]] = {
    "DML_OPERATOR_GATHER": (
        GatherDesc,
        ("InputTensor", "IndicesTensor", "OutputTensor", "Axis", "IndexDimensions"),
    ),
    "DML_OPERATOR_GATHER_ELEMENTS": (
        GatherElementsDesc,
        ("InputTensor", "IndicesTensor", "OutputTensor", "Axis"),
    ),
    "DML_OPERATOR_GATHER_ND": (
        GatherNdDesc,
        (
            "InputTensor",
            "IndicesTensor",
            "OutputTensor",
            "InputDimensionCount",
            "IndicesDimensionCount",
        ),
    ),
    "DML_OPERATOR_GATHER_ND1": (
        GatherNd1Desc,
        (
            "InputTensor",
            "IndicesTensor",
            "OutputTensor",
            "InputDimensionCount",
            "IndicesDimensionCount",
            "BatchDimensionCount",
        ),
    ),
    "DML_OPERATOR_SCATTER_ELEMENTS": (
        ScatterElementsDesc,
        ("InputTensor", "IndicesTensor", "UpdatesTensor", "OutputTensor", "Axis"),
    ),
    "DML_OPERATOR_SCATTER_ND": (
        ScatterNdDesc,
        (
            "InputTensor",
            "IndicesTensor",
            "UpdatesTensor",
            "OutputTensor",
            "InputDimensionCount",
            "IndicesDimensionCount",
        ),
    ),
    "DML_OPERATOR_ONE_HOT": (
        OneHotDesc,
        ("IndicesTensor", "ValuesTensor", "OutputTensor", "Axis"),
    ),
}
_INDEXED["DML_OPERATOR_REVERSE_SUBSEQUENCES"] = (
    ReverseSubsequencesDesc,
    ("InputTensor", "SequenceLengthsTensor", "OutputTensor", "Axis"),
)
_INDEXED["DML_OPERATOR_SCATTER"] = _INDEXED["DML_OPERATOR_SCATTER_ELEMENTS"]  # DirectML's alias
_INDEXED["DML_OPERATOR_MAX_UNPOOLING"] = (
    MaxUnpoolingDesc,
    ("InputTensor", "IndicesTensor", "OutputTensor"),
)


def _desc(kind: str, value: Any, path: str) -> OperatorDesc:
    if kind in _INDEXED:
        cls, fields = _INDEXED[kind]
        d = _obj(value, path, set(fields), set())
        args = [
            _tensor(d[f], f"{path}.{f}") if f.endswith("Tensor") else _int(d[f], f"{path}.{f}")
            for f in fields
        ]
        return cls(*args)
    if kind in ("DML_OPERATOR_SLICE", "DML_OPERATOR_SLICE1"):
        one = kind == "DML_OPERATOR_SLICE"
        fields = (
            ("Offsets", "Sizes", "Strides")
            if one
            else ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")
        )
        d = _obj(value, path, {"InputTensor", "OutputTensor", *fields}, {"DimensionCount"})
        arrays = [_int_list(d[f], f"{path}.{f}") for f in fields]
        cls = SliceDesc if one else Slice1Desc
        return cls(
            _tensor(d["InputTensor"], f"{path}.InputTensor"),
            _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
            arrays[0],
            arrays[1],
            arrays[2],
            dimension_count=_count(d, "DimensionCount", path),
        )
    if kind == "DML_OPERATOR_SLICE_GRAD":
        window = ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")
        tensors = ("InputGradientTensor", "OutputGradientTensor")
        d = _obj(value, path, {*tensors, *window}, {"DimensionCount"})
        arrays = [_int_list(d[f], f"{path}.{f}") for f in window]
        return SliceGradDesc(
            _tensor(d[tensors[0]], f"{path}.{tensors[0]}"),
            _tensor(d[tensors[1]], f"{path}.{tensors[1]}"),
            arrays[0],
            arrays[1],
            arrays[2],
            dimension_count=_count(d, "DimensionCount", path),
        )
    if kind == "DML_OPERATOR_PADDING1":
        required = {"InputTensor", "OutputTensor", "PaddingMode", "StartPadding", "EndPadding"}
        optional = {"PaddingValueDataType", "PaddingValue", "DimensionCount"}
        d = _obj(value, path, required, optional)
        try:
            return Padding1Desc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                d["PaddingMode"],
                d.get("PaddingValueDataType"),
                d.get("PaddingValue", 0),
                _int_list(d["StartPadding"], f"{path}.StartPadding"),
                _int_list(d["EndPadding"], f"{path}.EndPadding"),
                dimension_count=_count(d, "DimensionCount", path),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_PADDING":
        required = {"InputTensor", "OutputTensor", "PaddingMode", "StartPadding", "EndPadding"}
        d = _obj(value, path, required, {"PaddingValue", "DimensionCount"})
        try:
            return PaddingDesc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                d["PaddingMode"],
                d.get("PaddingValue", 0.0),
                _int_list(d["StartPadding"], f"{path}.StartPadding"),
                _int_list(d["EndPadding"], f"{path}.EndPadding"),
                dimension_count=_count(d, "DimensionCount", path),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind in ("DML_OPERATOR_DEPTH_TO_SPACE", "DML_OPERATOR_SPACE_TO_DEPTH"):
        d = _obj(value, path, {"InputTensor", "OutputTensor", "BlockSize"}, set())
        first: type[DepthToSpaceDesc] | type[SpaceToDepthDesc] = (
            DepthToSpaceDesc if kind.endswith("DEPTH_TO_SPACE") else SpaceToDepthDesc
        )
        try:
            return first(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                _int(d["BlockSize"], f"{path}.BlockSize"),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_NONZERO_COORDINATES":
        names = {"InputTensor", "OutputCountTensor", "OutputCoordinatesTensor"}
        d = _obj(value, path, names, set())
        try:
            return NonzeroCoordinatesDesc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputCountTensor"], f"{path}.OutputCountTensor"),
                _tensor(d["OutputCoordinatesTensor"], f"{path}.OutputCoordinatesTensor"),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_CAST":
        d = _obj(value, path, {"InputTensor", "OutputTensor"}, set())
        try:
            return CastDesc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_ELEMENT_WISE_IDENTITY":
        d = _obj(value, path, {"InputTensor", "OutputTensor"}, {"ScaleBias"})
        scale_bias = None
        if d.get("ScaleBias") is not None:
            sb = _obj(d["ScaleBias"], f"{path}.ScaleBias", {"Scale", "Bias"}, set())
            scale_bias = (sb["Scale"], sb["Bias"])
        try:
            return ElementWiseIdentityDesc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                scale_bias,
            )
        except (DmlError, TypeError, ValueError) as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_DIAGONAL_MATRIX":
        d = _obj(value, path, {"OutputTensor"}, {"Offset", "Value"})
        try:
            return DiagonalMatrixDesc(
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                d.get("Offset", 0),
                d.get("Value", 1.0),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_DIAGONAL_MATRIX1":
        optional = {"InputTensor", "ValueDataType", "Value", "DiagonalFillBegin", "DiagonalFillEnd"}
        d = _obj(value, path, {"OutputTensor"}, optional)
        source = d.get("InputTensor")
        try:
            return DiagonalMatrix1Desc(
                None if source is None else _tensor(source, f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                d.get("ValueDataType"),
                d.get("Value", 1),
                d.get("DiagonalFillBegin", 0),
                d.get("DiagonalFillEnd", 1),
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_FILL_VALUE_SEQUENCE":
        d = _obj(value, path, {"OutputTensor", "ValueDataType", "ValueStart", "ValueDelta"}, set())
        try:
            return FillValueSequenceDesc(
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                d["ValueDataType"],
                d["ValueStart"],
                d["ValueDelta"],
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_FILL_VALUE_CONSTANT":
        d = _obj(value, path, {"OutputTensor", "ValueDataType", "Value"}, set())
        try:
            return FillValueConstantDesc(
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"), d["ValueDataType"], d["Value"]
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind in ("DML_OPERATOR_RESAMPLE", "DML_OPERATOR_RESAMPLE1", "DML_OPERATOR_RESAMPLE2"):
        return _resample(kind, value, path)
    if kind == "DML_OPERATOR_UPSAMPLE_2D":
        d = _obj(
            value, path, {"InputTensor", "OutputTensor", "ScaleSize", "InterpolationMode"}, set()
        )
        scale = _obj(d["ScaleSize"], f"{path}.ScaleSize", {"Width", "Height"}, set())
        mode = d["InterpolationMode"]
        if not isinstance(mode, (str, int)) or isinstance(mode, bool):
            raise _fail(
                f"{path}.InterpolationMode", "expected a DML_INTERPOLATION_MODE name or value"
            )
        try:
            return Upsample2dDesc(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                (
                    _int(scale["Height"], f"{path}.ScaleSize.Height"),
                    _int(scale["Width"], f"{path}.ScaleSize.Width"),
                ),
                mode,
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    if kind == "DML_OPERATOR_TILE":
        d = _obj(value, path, {"InputTensor", "OutputTensor", "Repeats"}, {"RepeatsCount"})
        return TileDesc(
            _tensor(d["InputTensor"], f"{path}.InputTensor"),
            _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
            _int_list(d["Repeats"], f"{path}.Repeats"),
            repeats_count=_count(d, "RepeatsCount", path),
        )
    if kind == "DML_OPERATOR_SPLIT":
        d = _obj(value, path, {"InputTensor", "OutputTensors", "Axis"}, {"OutputCount"})
        return SplitDesc(
            _tensor(d["InputTensor"], f"{path}.InputTensor"),
            _tensor_list(d["OutputTensors"], f"{path}.OutputTensors"),
            _int(d["Axis"], f"{path}.Axis"),
            output_count=_count(d, "OutputCount", path),
        )
    if kind == "DML_OPERATOR_JOIN":
        d = _obj(value, path, {"InputTensors", "OutputTensor", "Axis"}, {"InputCount"})
        return JoinDesc(
            _tensor_list(d["InputTensors"], f"{path}.InputTensors"),
            _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
            _int(d["Axis"], f"{path}.Axis"),
            input_count=_count(d, "InputCount", path),
        )
    if kind in ("DML_OPERATOR_DEPTH_TO_SPACE1", "DML_OPERATOR_SPACE_TO_DEPTH1"):
        d = _obj(value, path, {"InputTensor", "OutputTensor", "BlockSize"}, {"Order"})
        order = d.get("Order", 0)
        if not isinstance(order, (str, int)) or isinstance(order, bool):
            raise _fail(f"{path}.Order", "expected a DML_DEPTH_SPACE_ORDER name or value")
        block: type[DepthToSpace1Desc] | type[SpaceToDepth1Desc] = (
            DepthToSpace1Desc if kind.endswith("DEPTH_TO_SPACE1") else SpaceToDepth1Desc
        )
        try:
            return block(
                _tensor(d["InputTensor"], f"{path}.InputTensor"),
                _tensor(d["OutputTensor"], f"{path}.OutputTensor"),
                _int(d["BlockSize"], f"{path}.BlockSize"),
                order,
            )
        except DmlError as e:
            raise _fail(path[: -len(".desc")], str(e)) from None
    raise _fail(
        f"{path[: -len('.desc')]}.type",
        f"'{kind}' is not one of DML_OPERATOR_SLICE, DML_OPERATOR_SLICE1, DML_OPERATOR_SPLIT, "
        "DML_OPERATOR_JOIN, DML_OPERATOR_SLICE_GRAD, DML_OPERATOR_TILE, DML_OPERATOR_PADDING, "
        "DML_OPERATOR_PADDING1, DML_OPERATOR_DEPTH_TO_SPACE, DML_OPERATOR_DEPTH_TO_SPACE1, "
        "DML_OPERATOR_SPACE_TO_DEPTH, DML_OPERATOR_SPACE_TO_DEPTH1, DML_OPERATOR_UPSAMPLE_2D, "
        "DML_OPERATOR_FILL_VALUE_CONSTANT, DML_OPERATOR_ELEMENT_WISE_IDENTITY, "
        "DML_OPERATOR_DIAGONAL_MATRIX1, DML_OPERATOR_RESAMPLE, DML_OPERATOR_RESAMPLE1, "
        "DML_OPERATOR_FILL_VALUE_SEQUENCE, DML_OPERATOR_CAST, DML_OPERATOR_NONZERO_COORDINATES, "
        "DML_OPERATOR_RESAMPLE2, "
        "DML_OPERATOR_DIAGONAL_MATRIX, " + ", ".join(sorted(_INDEXED)),
    )


def _floats(value: Any, path: str) -> list[float]:
    if not isinstance(value, list) or any(
        isinstance(v, bool) or not isinstance(v, (int, float)) for v in value
    ):
        raise _fail(path, "expected an array of numbers")
    return [float(v) for v in value]


def _resample(kind: str, value: Any, path: str) -> OperatorDesc:
    """RESAMPLE (ScaleCount, Scales), RESAMPLE1 (DimensionCount, the offsets) or RESAMPLE2
    (and RoundingDirection) from a DxDispatch desc."""
    required = {"InputTensor", "OutputTensor", "InterpolationMode", "Scales"}
    if kind != "DML_OPERATOR_RESAMPLE":
        required |= {"InputPixelOffsets", "OutputPixelOffsets"}
    if kind == "DML_OPERATOR_RESAMPLE2":
        required.add("RoundingDirection")
    count = "ScaleCount" if kind == "DML_OPERATOR_RESAMPLE" else "DimensionCount"
    d = _obj(value, path, required, {count})
    i = _tensor(d["InputTensor"], f"{path}.InputTensor")
    o = _tensor(d["OutputTensor"], f"{path}.OutputTensor")
    scales = _floats(d["Scales"], f"{path}.Scales")
    n = None if count not in d else _int(d[count], f"{path}.{count}")
    try:
        if kind == "DML_OPERATOR_RESAMPLE":
            return ResampleDesc(i, o, scales, d["InterpolationMode"], n)
        offsets = (
            _floats(d["InputPixelOffsets"], f"{path}.InputPixelOffsets"),
            _floats(d["OutputPixelOffsets"], f"{path}.OutputPixelOffsets"),
        )
        if kind == "DML_OPERATOR_RESAMPLE1":
            return Resample1Desc(i, o, scales, *offsets, d["InterpolationMode"], n)
        return Resample2Desc(
            i, o, scales, *offsets, d["RoundingDirection"], d["InterpolationMode"], n
        )
    except DmlError as e:
        raise _fail(path[: -len(".desc")], str(e)) from None


def _depth(value: Any) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            return deepest
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest


def load_model(
    source: str | Path | dict[str, Any],
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Model:
    """Read and check a model (path, JSON text or parsed object); errors name the JSON path.

    A path must name a regular file of at most max_file_bytes; resources may hold at most
    max_bytes in all.
    """
    if isinstance(source, dict):
        doc: Any = source
    else:
        text: str
        if isinstance(source, Path) or not source.lstrip().startswith("{"):
            p = Path(source)
            try:
                text = read_bounded(p, max_file_bytes).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ModelError(f"{p}: not UTF-8 text: {e.reason} at byte {e.start}") from None
        else:
            text = source
        try:
            doc = json.loads(text)
        except RecursionError:
            raise ModelError(f"$: nested deeper than {MAX_DEPTH} levels") from None
        except json.JSONDecodeError as e:
            raise ModelError(f"$: not JSON: {e}") from None
    if _depth(doc) > MAX_DEPTH:
        raise ModelError(f"$: nested deeper than {MAX_DEPTH} levels")
    top = _obj(doc, "$", {"resources", "dispatchables", "commands"}, {"$schema"})
    res_obj = top["resources"]
    if not isinstance(res_obj, dict):
        raise _fail("$.resources", "expected an object")
    budget = [max_bytes]
    resources = {n: _resource(v, f"$.resources.{n}", budget) for n, v in res_obj.items()}
    dis_obj = top["dispatchables"]
    if not isinstance(dis_obj, dict):
        raise _fail("$.dispatchables", "expected an object")
    dispatchables: dict[str, OperatorDesc] = {}
    for name, v in dis_obj.items():
        path = f"$.dispatchables.{name}"
        d = _obj(v, path, {"type", "desc"}, {"executionFlags"})
        for i, f in enumerate(d.get("executionFlags", [])):
            if not _str(f, f"{path}.executionFlags[{i}]").startswith("DML_EXECUTION_FLAG_"):
                raise _fail(f"{path}.executionFlags[{i}]", f"'{f}' is not a DML_EXECUTION_FLAG")
        dispatchables[name] = _desc(_str(d["type"], f"{path}.type"), d["desc"], f"{path}.desc")
    commands = top["commands"]
    if not isinstance(commands, list):
        raise _fail("$.commands", "expected an array")
    for i, c in enumerate(commands):
        path = f"$.commands[{i}]"
        if not isinstance(c, dict) or "type" not in c:
            raise _fail(path, "expected an object with a 'type'")
        if c["type"] == "dispatch":
            _obj(c, path, {"type", "dispatchable", "bindings"}, set())
            if _str(c["dispatchable"], f"{path}.dispatchable") not in dispatchables:
                raise _fail(f"{path}.dispatchable", f"no dispatchable named '{c['dispatchable']}'")
            if not isinstance(c["bindings"], dict):
                raise _fail(f"{path}.bindings", "expected an object")
        elif c["type"] == "print":
            _obj(c, path, {"type", "resource"}, set())
            if _str(c["resource"], f"{path}.resource") not in resources:
                raise _fail(f"{path}.resource", f"no resource named '{c['resource']}'")
        else:
            raise _fail(f"{path}.type", f"'{c['type']}' is not 'dispatch' or 'print'")
    return Model(resources, dispatchables, commands)


def _binding(
    value: Any, path: str, resources: dict[str, Resource], buffers: dict[str, Any]
) -> Binding:
    if isinstance(value, str):
        if value not in resources:
            raise _fail(path, f"no resource named '{value}'")
        return Binding(buffers[value])
    b = _obj(value, path, {"name"}, {"elementOffset", "elementCount", "format"})
    name = _str(b["name"], f"{path}.name")
    if name not in resources:
        raise _fail(f"{path}.name", f"no resource named '{name}'")
    es = resources[name].data_type.element_size
    offset = _int(b.get("elementOffset", 0), f"{path}.elementOffset") * es
    count = b.get("elementCount")
    size = None if count is None else _int(count, f"{path}.elementCount") * es
    return Binding(buffers[name], offset, size)


def format_resource(name: str, resource: Resource, data: np.ndarray[Any, Any]) -> str:
    """A resource's values, as DxDispatch prints them."""
    es = resource.data_type.element_size
    usable = data[: len(data) // es * es]
    values = usable.view(resource.data_type.numpy_dtype)
    text = ", ".join(f"{v:g}" if values.dtype.kind == "f" else str(v) for v in values.tolist())
    return f"Resource '{name}': {text}"


def run_model(
    model: Model, device: Device | None = None, echo: Callable[[str], None] = print
) -> dict[str, np.ndarray[Any, Any]]:
    """Execute the commands; returns each resource's final bytes (host uint8 arrays)."""
    device = device or Device()
    compiled = {}
    for name, desc in model.dispatchables.items():
        try:
            compiled[name] = device.create_operator(desc)
        except DmlError as e:
            raise ModelError(f"$.dispatchables.{name}: {e}") from None
    cuda = device.backend.name == "cuda"
    if cuda:
        import cupy

        buffers = {n: cupy.asarray(r.data) for n, r in model.resources.items()}
    else:
        buffers = {n: r.data.copy() for n, r in model.resources.items()}

    def host(name: str) -> np.ndarray[Any, Any]:
        b = buffers[name]
        return np.asarray(cupy.asnumpy(b) if cuda else b)

    for i, c in enumerate(model.commands):
        path = f"$.commands[{i}]"
        if c["type"] == "print":
            echo(
                format_resource(c["resource"], model.resources[c["resource"]], host(c["resource"]))
            )
            continue
        op = compiled[c["dispatchable"]]
        bindings = c["bindings"]
        unknown = sorted(
            set(bindings)
            - {n.split("[")[0] for n, _ in op.desc.input_fields() + op.desc.output_fields()}
        )
        if unknown:
            raise _fail(
                f"{path}.bindings.{unknown[0]}",
                f"{op.desc.OPERATOR} has no tensor field '{unknown[0]}'",
            )

        def bound(
            fields: list[tuple[str, Any]], bpath: str, bindings: dict[str, Any] = bindings
        ) -> list[Binding]:
            out = []
            names = list(dict.fromkeys(name.split("[")[0] for name, _ in fields))
            for array_name in names:  # each field, or each array field (InputTensors[k])
                if array_name not in bindings:
                    raise _fail(bpath, f"missing binding for '{array_name}'")
                value = bindings[array_name]
                count = sum(1 for name, _ in fields if name.startswith(array_name + "["))
                if count:
                    if not isinstance(value, list):
                        raise _fail(f"{bpath}.{array_name}", "expected an array of bindings")
                    if len(value) != count:
                        raise _fail(
                            f"{bpath}.{array_name}", f"{len(value)} bindings for {count} tensors"
                        )
                    for k, v in enumerate(value):
                        out.append(
                            _binding(v, f"{bpath}.{array_name}[{k}]", model.resources, buffers)
                        )
                else:
                    out.append(_binding(value, f"{bpath}.{array_name}", model.resources, buffers))
            return out

        ins = bound(op.desc.input_fields(), f"{path}.bindings")
        outs = bound(op.desc.output_fields(), f"{path}.bindings")
        try:
            op.execute(ins, outs)
        except DmlError as e:
            raise ModelError(f"{path}: {e}") from None
    return {n: host(n) for n in buffers}
