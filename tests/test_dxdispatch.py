"""DxDispatch-style JSON models: DirectML's own examples, ours, and hostile files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import HAS_CUDA
from dmlops import Device, ModelError
from dmlops.cli import main
from dmlops.dxdispatch import load_model, run_model
from dmlops.worked_examples import WORKED_EXAMPLES

ROOT = Path(__file__).resolve().parent.parent
DIRECTML = ROOT / "tests" / "data" / "dxdispatch"
EXPECTED = {
    "dml_slice.json": ["Resource 'output': 7, 9, 12, 14, 17, 19"],
    "dml_split.json": ["Resource 'Out1': 1, 2", "Resource 'Out2': 3, 4", "Resource 'Out3': 5, 6"],
    "dml_join.json": ["Resource 'Out': 1, 2, 3, 100, 115, 5, 6, 7, 8, 9"],
}
DEVICES = [
    "numpy",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")),
]


@pytest.mark.parametrize("backend", DEVICES)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_directml_example_models_run_unchanged(name: str, backend: str) -> None:
    lines: list[str] = []
    run_model(load_model(DIRECTML / name), Device(backend=backend), lines.append)
    assert lines == EXPECTED[name]


def test_cli_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(DIRECTML / "dml_join.json")]) == 0
    assert capsys.readouterr().out.strip() == EXPECTED["dml_join.json"][0]


EXAMPLE_FILES = [
    "slice_contiguous",
    "slice_strided",
    "slice1_positive_strides",
    "slice1_negative_strides",
    "split_axis2",
    "split_axis3",
]


@pytest.mark.parametrize("name, ex", list(zip(EXAMPLE_FILES, WORKED_EXAMPLES)))
def test_bundled_examples_match_the_seed_pages(name: str, ex) -> None:  # type: ignore[no-untyped-def]
    model = load_model(ROOT / "examples" / f"{name}.json")
    assert model.dispatchables[name] == ex.desc
    final = run_model(model, Device(), lambda s: None)
    outs = [final[r] for r in sorted(k for k in final if k.startswith("output"))]
    for got, want in zip(outs, ex.expected_arrays()):
        np.testing.assert_array_equal(got.view(np.float32), want.ravel())


def model(**over):  # type: ignore[no-untyped-def]
    doc = json.loads((DIRECTML / "dml_slice.json").read_text())
    for path, value in over.items():
        target = doc
        keys = path.split("/")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return doc


@pytest.mark.parametrize(
    "doc, match",
    [
        (model(**{"resources/input/bogus": 1}), r"\$\.resources\.input\.bogus: unknown key"),
        (model(**{"extra": {}}), r"\$\.extra: unknown key"),
        (model(**{"commands": KeyError}), r"\$: missing required key 'commands'"),
        (
            model(**{"resources/input/initialValues/valueCount": "25"}),
            r"\$\.resources\.input\.initialValues\.valueCount: expected an integer",
        ),
        (
            model(**{"resources/input/initialValues/valueCount": 10**12}),
            r"\$\.resources\.input: resources exceed the memory limit",
        ),
        (
            model(**{"resources/input/initialValues": ["__import__('os').system('true')"]}),
            r"\$\.resources\.input\.initialValues\[0\]: expected a number",
        ),
        (
            model(**{"resources/input/initialValuesDataType": "FLOAT128"}),
            r"\$\.resources\.input\.initialValuesDataType: .*not a data type name",
        ),
        (
            model(**{"dispatchables/slice/type": "DML_OPERATOR_GEMM"}),
            r"\$\.dispatchables\.slice\.type: 'DML_OPERATOR_GEMM' is not one of",
        ),
        (
            model(**{"dispatchables/slice/desc/Offsets": [0, 0, 1, "x"]}),
            r"\$\.dispatchables\.slice\.desc\.Offsets\[3\]: expected an integer",
        ),
        (
            model(**{"dispatchables/slice/desc/InputTensor/Sizes": 5}),
            r"\$\.dispatchables\.slice\.desc\.InputTensor\.Sizes: expected an array",
        ),
        (
            model(**{"commands/0/dispatchable": "nope"}),
            r"\$\.commands\[0\]\.dispatchable: no dispatchable named 'nope'",
        ),
        (
            model(**{"commands/1/type": "shell"}),
            r"\$\.commands\[1\]\.type: 'shell' is not 'dispatch' or 'print'",
        ),
        (
            model(**{"resources/input/sizeInBytes": 8}),
            r"\$\.resources\.input\.sizeInBytes: 8 is less than",
        ),
    ],
)
def test_malformed_models_name_the_json_path(doc, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ModelError, match=match):
        load_model(doc)


def test_invalid_descriptor_and_bindings_name_the_path() -> None:
    bad = model(**{"dispatchables/slice/desc/Strides": [1, 1, 1, 4]})
    with pytest.raises(
        ModelError, match=r"\$\.dispatchables\.slice: SLICE\.Offsets\[3\] is 1: .* reads outside"
    ):
        run_model(load_model(bad), Device(), lambda s: None)
    small = model(**{"commands/0/bindings/OutputTensor": {"name": "output", "elementCount": 5}})
    with pytest.raises(
        ModelError, match=r"\$\.commands\[0\]: SLICE\.OutputTensor binding: 20 bytes bound"
    ):
        run_model(load_model(small), Device(), lambda s: None)
    missing = model(**{"commands/0/bindings/OutputTensor": KeyError})
    with pytest.raises(
        ModelError, match=r"\$\.commands\[0\]\.bindings: missing binding for 'OutputTensor'"
    ):
        run_model(load_model(missing), Device(), lambda s: None)


def test_deep_nesting_and_garbage_are_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"resources": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(ModelError, match=r"nested deeper than"):
        load_model(deep)
    junk = tmp_path / "junk.json"
    junk.write_text("{ not json")
    with pytest.raises(ModelError, match=r"not JSON"):
        load_model(junk)
    with pytest.raises(ModelError, match=r"No such file"):
        load_model(tmp_path / "absent.json")
    assert main(["run", str(junk)]) == 1


def test_special_values_and_data_types() -> None:
    doc = {
        "resources": {
            "a": {
                "initialValuesDataType": "DML_TENSOR_DATA_TYPE_FLOAT32",
                "initialValues": ["NaN", "-inf", -0.0, 2.5],
            },
            "b": {"initialValuesDataType": "INT64", "initialValues": {"valueCount": 4, "value": 0}},
            "c": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 4, "value": 0},
            },
        },
        "dispatchables": {
            "rev": {
                "type": "DML_OPERATOR_SLICE1",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                    "InputWindowOffsets": [0],
                    "InputWindowSizes": [4],
                    "InputWindowStrides": [-1],
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "rev",
                "bindings": {"InputTensor": "a", "OutputTensor": "c"},
            },
            {"type": "print", "resource": "c"},
            {"type": "print", "resource": "b"},
        ],
    }
    lines: list[str] = []
    run_model(load_model(doc), Device(), lines.append)
    assert lines == ["Resource 'c': 2.5, -0, -inf, nan", "Resource 'b': 0, 0, 0, 0"]
