"""ONNX backend-test directories, each laid out as onnx's own node tests are:
`ROOT/valid/test_NAME/model.onnx` with `test_data_set_0/input_K.pb` and `output_K.pb`
(serialized TensorProtos), loadable by `onnx.backend.test.loader.load_model_tests(ROOT,
"valid")` and by onnxruntime's `onnx_test_runner ROOT/valid`. Models ONNX forbids go under
`ROOT/invalid/` with their inputs and the rule they break (`rule.txt`): onnx's layout has no
place for an expected refusal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_cases import OnnxCase

__all__ = ["write_case", "write_cases", "read_case"]


def _tensor_file(path: Path, array: np.ndarray[Any, Any], name: str) -> None:
    from onnx import numpy_helper

    path.write_bytes(numpy_helper.from_array(np.asarray(array), name).SerializeToString())


def write_case(case: OnnxCase, root: str | Path, kind: str | None = None) -> Path:
    """Write one case under ROOT/KIND/NAME (KIND: valid or invalid, unless given); the
    directory written."""
    import onnx

    kind = kind or ("valid" if case.valid else "invalid")
    where = Path(root) / kind / case.name
    data = where / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    onnx.save_model(case.model, str(where / "model.onnx"))
    names = [i.name for i in case.model.graph.input]
    for k, name in enumerate(names):
        _tensor_file(data / f"input_{k}.pb", case.inputs[name], name)
    if case.outputs is not None:
        for k, (out, value) in enumerate(zip(case.model.graph.output, case.outputs, strict=True)):
            _tensor_file(data / f"output_{k}.pb", value, out.name)
    if not case.valid:
        (where / "rule.txt").write_text(f"{case.recipe.invalid}\n")
    return where


def write_cases(cases: Sequence[OnnxCase], root: str | Path) -> list[dict[str, Any]]:
    """Write every case (a valid case dmlops refused is left out and listed as such) and
    ROOT/index.json: per case its directory, operators, opset, data type and verdict."""
    index = []
    for case in cases:
        entry: dict[str, Any] = {
            "name": case.name,
            "operators": list(case.recipe.operators),
            "opset": case.recipe.opset,
            "dtype": case.recipe.dtype,
            "valid": case.valid,
            "seed": case.recipe.seed,
        }
        if case.valid and case.outputs is None:
            entry["dmlops_refused"] = case.error
        else:
            entry["path"] = str(write_case(case, root).relative_to(root))
            if not case.valid:
                entry["rule"] = case.recipe.invalid
                entry["dmlops_error"] = case.error
        index.append(entry)
    Path(root).mkdir(parents=True, exist_ok=True)
    (Path(root) / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return index


def read_case(
    directory: str | Path,
) -> tuple[Any, dict[str, np.ndarray[Any, Any]], list[np.ndarray[Any, Any]]]:
    """(model, inputs by name, expected outputs) of a backend-test directory."""
    import onnx
    from onnx import numpy_helper

    where = Path(directory)
    model = onnx.load_model(str(where / "model.onnx"))
    data = where / "test_data_set_0"

    def tensors(stem: str) -> list[Any]:
        found = sorted(data.glob(f"{stem}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        return [onnx.load_tensor_from_string(p.read_bytes()) for p in found]

    inputs = {t.name: numpy_helper.to_array(t) for t in tensors("input")}
    outputs = [numpy_helper.to_array(t) for t in tensors("output")]
    return model, inputs, outputs
