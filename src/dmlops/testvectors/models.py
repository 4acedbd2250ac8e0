"""Test vectors written out: DxDispatch-style JSON models, their sidecars (each output
resource's expected printout, or the rule an invalid descriptor breaks) and an index."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError
from ..ops import (
    NonzeroCoordinatesDesc,
    OperatorDesc,
)
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from .broken import _broken
from .check import _FIELD, _RESOURCE, _number
from .descriptors import _CLASSES, _SENTINEL, OPERATORS, _index_values, _random_desc


def _values(dt: DataType, count: int, salt: int) -> list[Any]:
    """Distinct-looking values that DxDispatch's printout shows exactly."""
    i = np.arange(count, dtype=np.int64) * 37 + salt * 101 + 11
    kind = dt.numpy_dtype.kind
    if kind == "f":
        return [float(v) for v in (i % 2048) * 0.25 - 256]
    bits = 8 * dt.element_size
    low = -(1 << (bits - 1)) if kind == "i" else 0
    span = min(1 << bits, 1 << 16)
    return [int(v) for v in i % span + max(low, -(span // 2))]


def _with_zeros(values: list[Any]) -> list[Any]:
    """Every third value zero (-0.0 among the floats' zeros: zero too, for NONZERO)."""
    floats = bool(values) and isinstance(values[0], float)
    return [
        (-0.0 if floats and j % 2 else 0 * v) if (j * 7) % 3 == 0 else v
        for j, v in enumerate(values)
    ]


def _undefined_rows(desc: OperatorDesc, lines: list[str]) -> list[str]:
    """NONZERO_COORDINATES' printout with the coordinates' rows past the count as "*" (their
    values are undefined: DirectML writes only the first count rows)."""
    if not isinstance(desc, NonzeroCoordinatesDesc):
        return lines
    found = {m.group(1): m.group(2) for m in (_RESOURCE.match(x) for x in lines) if m}
    count = int(_number(found["out0"].split(",")[0]))
    columns = desc.output_coordinates_tensor.sizes[-1]
    elements = math.prod(desc.output_coordinates_tensor.sizes)
    values = found["out1"].split(",")
    kept = [v if not count * columns <= j < elements else " *" for j, v in enumerate(values)]
    return [
        f"Resource 'out1': {','.join(kept).strip()}" if x.startswith("Resource 'out1'") else x
        for x in lines
    ]


def _tensor_json(t: BufferTensorDesc) -> dict[str, Any]:
    out: dict[str, Any] = {"DataType": t.data_type.name, "Sizes": list(t.sizes)}
    if t.strides is not None:
        out["Strides"] = list(t.strides)
    return out


def _model(desc: OperatorDesc, name: str, indices: list[int] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    index_field = getattr(desc, "INDEX_FIELD", None)
    bindings: dict[str, Any] = {}
    for role, fields in (("in", desc.input_fields()), ("out", desc.output_fields())):
        names = []
        for k, (_, t) in enumerate(fields):
            rname = f"{role}{k}"
            count = max(1, math.ceil(t.total_tensor_size_in_bytes / t.data_type.element_size))
            values: Any = (
                _values(t.data_type, count, k)
                if role == "in"
                else {"valueCount": count, "value": _SENTINEL}
            )
            if role == "in" and indices is not None and fields[k][0] == index_field:
                values = indices
            if role == "in" and isinstance(desc, NonzeroCoordinatesDesc):
                values = _with_zeros(values)
            resources[rname] = {"initialValuesDataType": t.data_type.name, "initialValues": values}
            names.append(rname)
        for (field, _), rname in zip(fields, names, strict=True):
            if field.endswith("]"):  # an array of tensors (SPLIT's outputs, JOIN's inputs)
                bindings.setdefault(field.split("[")[0], []).append(rname)
            else:
                bindings[field] = rname
    fields_json: dict[str, Any] = {}
    for key, value in desc._field_items():
        if isinstance(value, BufferTensorDesc):
            fields_json[key] = _tensor_json(value)
        elif isinstance(value, list) and value and isinstance(value[0], BufferTensorDesc):
            fields_json[key] = [_tensor_json(v) for v in value]
        elif isinstance(value, (tuple, list)):
            fields_json[key] = list(value)
        else:
            fields_json[key] = value
    outputs = [f"out{k}" for k in range(len(desc.output_fields()))]
    return {
        "resources": resources,
        "dispatchables": {name: {"type": desc.operator_type, "desc": fields_json}},
        "commands": [
            {"type": "dispatch", "dispatchable": name, "bindings": bindings},
            *({"type": "print", "resource": o} for o in outputs),
        ],
    }


def generate(
    out_dir: str | Path,
    count: int,
    seed: int,
    operators: Sequence[str] | None = None,
    feature_level: FeatureLevel | int | str | None = None,
    invalid_fraction: float = 0.2,
    max_bytes: int = 1 << 20,
) -> list[dict[str, Any]]:
    """Write `count` models, their sidecars and index.json into out_dir; returns the index."""
    from ..dxdispatch import load_model, run_model

    level = FeatureLevel.parse(feature_level)
    if operators is None:  # every operator the feature level has
        operators = [op for op in OPERATORS if _CLASSES[op].SUPPORT[0].level <= level]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    index = []
    for k in range(count):
        op = str(operators[int(rng.integers(0, len(operators)))])
        while True:
            desc = _random_desc(rng, op, level)
            if (
                sum(
                    t.total_tensor_size_in_bytes
                    for _, t in desc.input_fields() + desc.output_fields()
                )
                <= max_bytes
            ):
                break
        expected: dict[str, Any]
        invalid = rng.random() < invalid_fraction
        if invalid:
            for _ in range(20):
                broken = _broken(rng, desc)
                try:
                    broken.validate(level)
                except DmlError as e:
                    desc = broken
                    message = str(e)
                    field = _FIELD.match(message)
                    expected = {
                        "valid": False,
                        "error": message,
                        "field": field.group(0) if field else "",
                        "rule": message.partition(": ")[2],
                    }
                    break
            else:
                invalid = False
        name = f"{k:05d}_{op}"
        model = _model(desc, op, None if invalid else _index_values(rng, desc))
        if not invalid:
            lines: list[str] = []
            run_model(load_model(model), Device(level), lines.append)
            expected = {"valid": True, "printout": _undefined_rows(desc, lines)}
        (out / f"{name}.json").write_text(json.dumps(model))
        (out / f"{name}.expected.json").write_text(json.dumps(expected))
        index.append(
            {
                "model": f"{name}.json",
                "expected": f"{name}.expected.json",
                "operator": op,
                "valid": not invalid,
            }
        )
    (out / "index.json").write_text(
        json.dumps({"seed": seed, "feature_level": level.dml_name, "models": index}, indent=1)
    )
    return index
