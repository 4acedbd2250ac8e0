"""Conformance kits: the ONNX case generator and its backend-test directories, the WebNN
cases, and the differential runner with its shrinker."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")

from conftest import BACKENDS, to_device, to_host
from dmlops.cli import main
from dmlops.conformance import backend_tests, differential, onnx_cases, webnn_cases


def bits(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    a = np.ascontiguousarray(a)
    return (a.dtype.str, a.shape, a.tobytes())


@pytest.fixture(scope="module")
def cases() -> list[onnx_cases.OnnxCase]:
    return onnx_cases.generate(5, 400)


def test_cases_are_deterministic_for_a_seed() -> None:
    one = onnx_cases.generate(3, 60)
    two = onnx_cases.generate(3, 60)
    assert [c.model.SerializeToString() for c in one] == [c.model.SerializeToString() for c in two]
    assert [[bits(v) for v in c.inputs.values()] for c in one] == [
        [bits(v) for v in c.inputs.values()] for c in two
    ]
    other = onnx_cases.generate(4, 60)
    assert [c.name for c in one] != [c.name for c in other]


def test_every_operator_opset_and_many_types_are_drawn(cases: list[onnx_cases.OnnxCase]) -> None:
    ops = {op for c in cases for op in c.recipe.operators}
    assert ops == set(onnx_cases.OPERATORS)
    assert len({c.recipe.dtype for c in cases}) >= 10
    assert {c.recipe.opset for c in cases} >= {1, 10, 11, 13, 18, 21}
    assert any(len(c.recipe.operators) > 1 for c in cases)
    assert any(not c.valid for c in cases)


def test_valid_cases_are_valid_onnx_and_run_on_dmlops(cases: list[onnx_cases.OnnxCase]) -> None:
    import onnx

    for c in cases:
        if c.valid:
            onnx.checker.check_model(c.model, full_check=True)
            assert c.error is None, (c.name, c.error)
            assert c.outputs is not None


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "numpy"])
def test_every_backend_gives_the_numpy_answers(
    backend: str, cases: list[onnx_cases.OnnxCase]
) -> None:
    """The generated models (every operator, opset, type, chains) on the GPU backends: the
    numpy engine's bits, or the same refusal."""
    import dmlops
    import dmlops.onnx

    device = dmlops.Device(backend=backend)
    for c in cases[:160]:
        feeds = {k: to_device(backend, v) for k, v in c.inputs.items()}
        if c.outputs is None:
            if c.recipe.invalid in onnx_cases.DATA_RULES:
                continue  # a GPU clamps out-of-range indices unless asked to validate them
            with pytest.raises(dmlops.DmlError):
                dmlops.onnx.run(c.model, feeds, device)
            continue
        got = [to_host(o) for o in dmlops.onnx.run(c.model, feeds, device)]
        assert [bits(g) for g in got] == [bits(w) for w in c.outputs], c.name


def test_invalid_cases_are_refused_by_dmlops(cases: list[onnx_cases.OnnxCase]) -> None:
    invalid = [c for c in cases if not c.valid]
    assert invalid
    for c in invalid:
        assert c.outputs is None and c.error, c.name


def test_answers_match_onnx_reference_evaluator(cases: list[onnx_cases.OnnxCase]) -> None:
    """dmlops' answers against onnx's own numpy reference, bit for bit (floats by value
    where the reference computes through other types). Where the reference differs,
    onnxruntime must side with dmlops: the reference's Slice clamps a start before the axis
    to -1 for negative steps, where ONNX clamps it to 0 (a finding, in the docs)."""
    from onnx.reference import ReferenceEvaluator

    def same(want: list[Any], got: list[Any]) -> bool:
        for w, g in zip(want, got, strict=True):
            w = np.asarray(w)
            if w.shape != g.shape:
                return False
            if g.dtype.kind == "f":
                if not np.array_equal(w.astype(g.dtype), g, equal_nan=True):
                    return False
            elif bits(w.astype(g.dtype)) != bits(g):
                return False
        return True

    checked = overruled = 0
    for c in cases:
        if not c.valid or c.outputs is None:
            continue
        try:
            want = ReferenceEvaluator(c.model).run(None, c.inputs)
        except Exception:  # noqa: BLE001 - the reference lacks some types and ops' forms
            continue
        checked += 1
        if same(want, c.outputs):
            continue
        assert any(n.op_type == "Slice" for n in c.model.graph.node), c.name
        got = differential.OnnxRuntimeRunner()(c.model, c.inputs)
        assert same(got, c.outputs), c.name
        overruled += 1
    assert checked > 200 and overruled < checked // 20


def test_onnxruntime_agrees_wherever_both_answer(cases: list[onnx_cases.OnnxCase]) -> None:
    """Every valid case onnxruntime runs gives dmlops' bits, except NaN payloads in float16
    outputs (onnxruntime's Tile, Pad and DepthToSpace quiet them: a finding, in the docs)."""
    pytest.importorskip("onnxruntime")
    runner = differential.OnnxRuntimeRunner()
    answered = 0
    for c in cases:
        outcome = differential.compare(c, runner)
        if outcome.verdict == "disagree":
            for got, want in zip(runner(c.model, c.inputs), c.outputs or [], strict=True):
                same = np.isnan(got) == np.isnan(want) if got.dtype.kind == "f" else None
                assert got.dtype == np.float16 and same is not None and same.all(), c.name
                np.testing.assert_array_equal(got, want)
        assert outcome.verdict != "runtime accepts invalid", c.name
        answered += outcome.verdict in ("agree", "disagree")
    assert answered > 250


def test_backend_test_directories_round_trip_and_load(
    cases: list[onnx_cases.OnnxCase], tmp_path: Path
) -> None:
    from onnx.backend.test.loader import load_model_tests

    chosen = cases[:40]
    index = backend_tests.write_cases(chosen, tmp_path)
    assert len(index) == len(chosen)
    assert json.loads((tmp_path / "index.json").read_text()) == index
    loaded = load_model_tests(str(tmp_path), "valid")
    assert {t.name for t in loaded} == {c.name for c in chosen if c.valid}
    for c in chosen:
        kind = "valid" if c.valid else "invalid"
        model, inputs, outputs = backend_tests.read_case(tmp_path / kind / c.name)
        assert model.SerializeToString() == c.model.SerializeToString()
        assert [bits(v) for v in inputs.values()] == [bits(v) for v in c.inputs.values()]
        if c.valid:
            assert [bits(v) for v in outputs] == [bits(v) for v in c.outputs or []]
        else:
            assert outputs == []
            assert (tmp_path / kind / c.name / "rule.txt").read_text().strip() == c.recipe.invalid


class _WrongOnTranspose:
    """A runtime that answers as dmlops does, except that it flips the bits of the first
    element of every output of a model holding a Transpose."""

    name = "a runtime wrong on Transpose"

    def __call__(self, model: Any, inputs: dict[str, Any]) -> list[Any]:
        import dmlops
        import dmlops.onnx

        outs = [
            np.array(o)
            for o in dmlops.onnx.run(model, inputs, device=dmlops.Device(backend="numpy"))
        ]
        if any(n.op_type == "Transpose" for n in model.graph.node):
            for o in outs:
                if o.size:
                    o.reshape(-1).view(f"u{o.itemsize}")[0] ^= 1
        return outs


def _transpose_chains() -> list[onnx_cases.Recipe]:
    return [
        onnx_cases.Recipe(seed, ("Transpose", "Tile", "Concat"), 13, "float32", 4, 5)
        for seed in range(40, 60)
    ]


def test_the_shrinker_keeps_the_disagreement_and_shrinks() -> None:
    runtime = _WrongOnTranspose()
    shrunk_any = False
    for recipe in _transpose_chains()[:6]:
        case = onnx_cases.make_case(recipe)
        if case is None:
            continue
        found = differential.compare(case, runtime)
        if found.verdict != "disagree":  # an empty output has no bit to flip
            continue
        small = differential.shrink(found, runtime)
        assert small.verdict == "disagree"
        assert differential.compare(small.case, runtime).verdict == "disagree"
        assert small.case.size <= case.size
        assert small.case.recipe.operators[0] == "Transpose"
        shrunk_any |= small.case.size < case.size
        assert len(small.case.model.graph.node) == 1  # Tile and Concat are not needed
    assert shrunk_any


def test_the_shrinker_leaves_a_case_that_cannot_shrink() -> None:
    runtime = _WrongOnTranspose()
    recipe = onnx_cases.Recipe(1, ("Transpose",), 13, "int8", 1, 1)
    case = onnx_cases.make_case(recipe)
    assert case is not None
    found = differential.compare(case, runtime)
    assert found.verdict == "disagree"
    assert differential.shrink(found, runtime).case.size == case.size


def test_conform_reports_and_writes_findings(tmp_path: Path) -> None:
    report = differential.conform(
        _WrongOnTranspose(), 40, seed=2, operators=["Transpose", "Slice"], out=tmp_path
    )
    counts = report.counts()
    assert sum(sum(r.values()) for r in counts.values()) == len(report.outcomes)
    assert counts["Transpose"]["disagree"] > 0
    assert counts.get("Slice", {}).get("disagree", 0) == 0
    assert "| Transpose |" in report.table()
    assert report.shrunk
    for _, small, where in report.shrunk:
        assert small.verdict == "disagree"
        assert where is not None and (where / "model.onnx").exists()
        assert "verdict: disagree" in (where / "finding.txt").read_text()
        model, _, outputs = backend_tests.read_case(where)
        assert len(outputs) == len(model.graph.output)


def test_a_runtime_that_accepts_invalid_models_is_reported() -> None:
    class AcceptsAll(_WrongOnTranspose):
        def __call__(self, model: Any, inputs: dict[str, Any]) -> list[Any]:
            return [np.zeros(1, np.float32)]

    recipe = onnx_cases.Recipe(3, ("Transpose",), 13, "float32", invalid="transpose_perm_repeats")
    case = onnx_cases.make_case(recipe)
    assert case is not None and not case.valid
    assert differential.compare(case, AcceptsAll()).verdict == "runtime accepts invalid"
    assert differential.compare(case, differential.OnnxRuntimeRunner()).verdict == "agree"


@pytest.mark.parametrize("rule", sorted(onnx_cases.INVALID_RULES))
def test_every_invalid_rule_is_refused_by_dmlops_and_onnxruntime(rule: str) -> None:
    pytest.importorskip("onnxruntime")
    op = onnx_cases.INVALID_RULES[rule][0]
    for seed in range(3):
        case = onnx_cases.make_case(onnx_cases.Recipe(seed, (op,), 13, "float32", invalid=rule))
        assert case is not None and case.error, rule
        verdict = differential.compare(case, differential.OnnxRuntimeRunner()).verdict
        assert verdict == "agree", (rule, seed)


def test_webnn_cases_pass_through_dmlops_webnn() -> None:
    found = webnn_cases.generate(1, 300)
    assert set(found) == set(webnn_cases.OPERATIONS)
    for op, tests in found.items():
        for t in tests:
            assert t["graph"]["operators"][0]["name"] == op
            assert webnn_cases.run_case(t) is None, t["name"]


def test_webnn_runner_catches_a_wrong_expectation() -> None:
    (test,) = webnn_cases.generate(2, 1, ["transpose"])["transpose"]
    out = next(iter(test["graph"]["expectedOutputs"].values()))
    out["data"][0] = out["data"][0] + 1
    assert webnn_cases.run_case(test) is not None


def test_webnn_files_round_trip(tmp_path: Path) -> None:
    found = webnn_cases.generate(3, 42)
    files = webnn_cases.write(found, tmp_path)
    assert len(files) == len(found)
    for path in files:
        tests = webnn_cases.load(path)
        assert tests == found[path.stem]
        assert all(webnn_cases.run_case(t) is None for t in tests)


def test_webnn_runner_reads_the_wpt_shape() -> None:
    """A case written as the web-platform-tests write theirs (gather.https.any.js)."""
    test = {
        "name": "gather float32 1D tensor and int32 1D indices default options",
        "graph": {
            "inputs": {
                "gatherInput": {
                    "data": [-66.5, -68.75, -77.0, -26.25, 89.0, -45.5],
                    "descriptor": {"shape": [6], "dataType": "float32"},
                },
                "gatherIndices": {
                    "data": [4, 0, 4],
                    "descriptor": {"shape": [3], "dataType": "int32"},
                    "constant": True,
                },
            },
            "operators": [
                {
                    "name": "gather",
                    "arguments": [{"input": "gatherInput"}, {"indices": "gatherIndices"}],
                    "outputs": "gatherOutput",
                }
            ],
            "expectedOutputs": {
                "gatherOutput": {
                    "data": [89.0, -66.5, 89.0],
                    "descriptor": {"shape": [3], "dataType": "float32"},
                }
            },
        },
    }
    assert webnn_cases.run_case(test) is None


def test_cli_gen_tests_onnx_and_webnn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen-tests", str(tmp_path / "o"), "--format", "onnx", "--count", "30"]) == 0
    assert "valid ONNX backend tests" in capsys.readouterr().out
    assert any((tmp_path / "o" / "valid").iterdir())
    assert main(["gen-tests", str(tmp_path / "w"), "--format", "webnn", "--count", "28"]) == 0
    assert "WebNN cases" in capsys.readouterr().out
    assert (tmp_path / "w" / "gatherND.json").exists()
    ops = "Gather,Pad"
    assert main(["gen-tests", str(tmp_path / "g"), "--format", "onnx", "--operators", ops]) == 0
    index = json.loads((tmp_path / "g" / "index.json").read_text())
    assert {op for e in index for op in e["operators"]} <= {"Gather", "Pad"}


def test_cli_conform(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime")
    argv = ["conform", "onnxruntime", "--count", "60", "--seed", "9", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| all | " in out and "onnxruntime" in out


def test_recipes_refuse_unknown_operators() -> None:
    with pytest.raises(KeyError, match="Nope"):
        onnx_cases.recipes(0, 3, ["Nope"])
    with pytest.raises(KeyError, match="nope"):
        webnn_cases.generate(0, 3, ["nope"])


def test_a_smaller_recipe_makes_a_smaller_case() -> None:
    big = onnx_cases.Recipe(7, ("Slice", "Tile"), 13, "int32", 4, 5)
    small = dataclasses.replace(big, operators=("Slice",), max_dim=1, max_rank=1)
    a, b = onnx_cases.make_case(big), onnx_cases.make_case(small)
    assert a is not None and b is not None
    assert b.size < a.size
