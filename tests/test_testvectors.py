"""Test vectors for backend authors: gen-tests writes models whose sidecars `dmlops run` matches."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from dmlops import Device
from dmlops.cli import main
from dmlops.dxdispatch import load_model, run_model
from dmlops.tensor import DataType
from dmlops.testvectors import check, generate


def _run_cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(list(args))
        except SystemExit as e:  # argparse
            rc = int(e.code or 0)
    return rc, buf.getvalue()


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vectors")
    rc, text = _run_cli("gen-tests", str(out), "--count", "150", "--seed", "3")
    assert rc == 0 and "wrote 150 models" in text
    return out


def _index(d: Path) -> list[dict[str, object]]:
    models: list[dict[str, object]] = json.loads((d / "index.json").read_text())["models"]
    return models


def test_every_model_round_trips_through_run_and_check(vectors: Path) -> None:
    index = _index(vectors)
    assert sum(1 for m in index if m["valid"]) > 80
    assert sum(1 for m in index if not m["valid"]) > 10
    for m in index:
        rc, printout = _run_cli("run", str(vectors / str(m["model"])))
        expected = json.loads((vectors / str(m["expected"])).read_text())
        assert (rc == 0) == expected["valid"], (m, printout)
        assert check(expected, printout) == [], m
        if not expected["valid"]:
            assert expected["error"] in printout
            assert expected["error"].startswith(expected["field"])
            assert expected["rule"] and expected["rule"] in expected["error"]
        (vectors / "out.txt").write_text(printout)
        rc, text = _run_cli("check", str(vectors / str(m["expected"])), str(vectors / "out.txt"))
        assert (rc, text.strip()) == (0, "match")


def test_the_generator_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    generate(tmp_path / "a", 40, seed=11)
    generate(tmp_path / "b", 40, seed=11)
    generate(tmp_path / "c", 40, seed=12)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert any(
        (tmp_path / "a" / n).read_bytes() != (tmp_path / "c" / n).read_bytes()
        for n in files
        if (tmp_path / "c" / n).exists()
    )


def test_the_vectors_cover_operators_dtypes_ranks_and_layouts(tmp_path: Path) -> None:
    generate(tmp_path, 800, seed=5)
    # (SLICE1's own features counted over SLICE1 models too: one operator of 25 otherwise)
    generate(tmp_path / "slice1", 150, seed=5, operators=["slice1"])
    ops, dtypes, ranks = set(), set(), set()
    negative = strided = offset = partial = 0
    models = [(tmp_path, m) for m in _index(tmp_path)]
    models += [(tmp_path / "slice1", m) for m in _index(tmp_path / "slice1")]
    for folder, m in models:
        model = json.loads((folder / str(m["model"])).read_text())
        (dispatchable,) = model["dispatchables"].values()
        ops.add(dispatchable["type"])
        desc = dispatchable["desc"]
        tensor = (
            desc.get("InputTensor")
            or desc.get("InputGradientTensor")
            or (desc["InputTensors"][0] if "InputTensors" in desc else desc["OutputTensor"])
        )  # ONE_HOT's data type is its output's
        dtypes.add(tensor["DataType"])
        ranks.add(len(tensor["Sizes"]))
        strided += "Strides" in tensor
        negative += any(s < 0 for s in desc.get("InputWindowStrides", []))
        offset += any(o > 0 for o in desc.get("InputWindowOffsets", desc.get("Offsets", [])))
        if dispatchable["type"] == "DML_OPERATOR_SLICE1" and m["valid"]:
            windows, strides = desc["InputWindowSizes"], desc["InputWindowStrides"]
            most = [1 + (w - 1) // abs(s) for w, s in zip(windows, strides, strict=True)]
            partial += desc["OutputTensor"]["Sizes"] != most
    names = (
        "SLICE", "SLICE1", "SLICE_GRAD", "SPLIT", "JOIN", "TILE", "PADDING", "PADDING1",
        "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "UPSAMPLE_2D",
        "FILL_VALUE_CONSTANT", "ELEMENT_WISE_IDENTITY", "DIAGONAL_MATRIX", "DIAGONAL_MATRIX1",
        "RESAMPLE", "RESAMPLE1", "RESAMPLE2", "FILL_VALUE_SEQUENCE", "CAST",
        "MAX_UNPOOLING", "NONZERO_COORDINATES",
        "GATHER",
        "GATHER_ELEMENTS", "GATHER_ND", "SCATTER_ELEMENTS", "SCATTER_ND", "ONE_HOT",
        "REVERSE_SUBSEQUENCES",
    )  # the newest level's  # fmt: skip
    assert ops == {f"DML_OPERATOR_{o}" for o in names}
    assert dtypes == {dt.name for dt in DataType if dt is not DataType.UNKNOWN}
    assert ranks == set(range(1, 9))
    assert min(negative, strided, offset, partial) > 5


def test_slice_grad_vectors_check_and_older_levels_leave_it_out(tmp_path: Path) -> None:
    index = generate(tmp_path / "g", 40, seed=9, operators=["slice_grad"])
    assert {m["operator"] for m in index} == {"slice_grad"}
    for m in index:
        expected = json.loads((tmp_path / "g" / str(m["expected"])).read_text())
        if expected["valid"]:
            assert check(expected, "\n".join(expected["printout"])) == []
        else:
            assert expected["error"].startswith("SLICE_GRAD.")
    older = generate(tmp_path / "o", 30, seed=9, feature_level="2_1")
    assert "slice_grad" not in {m["operator"] for m in older}


def test_a_lower_feature_level_keeps_to_its_table(tmp_path: Path) -> None:
    generate(tmp_path, 60, seed=2, operators=["slice1", "join"], feature_level="2_1")
    for m in _index(tmp_path):
        model = json.loads((tmp_path / str(m["model"])).read_text())
        (dispatchable,) = model["dispatchables"].values()
        assert dispatchable["type"] in ("DML_OPERATOR_SLICE1", "DML_OPERATOR_JOIN")
        desc = dispatchable["desc"]
        tensor = (
            desc.get("InputTensor")
            or desc.get("InputGradientTensor")
            or desc.get("OutputTensor")  # ONE_HOT: its data type is the output's
            or desc["InputTensors"][0]
        )
        tensor = tensor if "InputTensors" not in desc else desc["InputTensors"][0]
        assert len(tensor["Sizes"]) in ((4, 5) if "SLICE1" in dispatchable["type"] else (4,))
        assert tensor["DataType"] not in ("FLOAT64", "INT64", "UINT64")


def test_check_reports_a_wrong_element_and_a_missing_resource() -> None:
    expected = {"valid": True, "printout": ["Resource 'out0': 1, 2, -0, 4", "Resource 'out1': 5"]}
    assert check(expected, "Resource 'out0': 1, 2, -0, 4\nResource 'out1': 5\n") == []
    problems = check(expected, "Resource 'out0': 1, 2, 0, 5\n")
    assert problems == [
        "resource 'out0'[2]: printed 0, expected -0",
        "resource 'out0'[3]: printed 5, expected 4",
        "resource 'out1' was not printed",
    ]
    assert check(expected, "Resource 'out0': 1, 2\nResource 'out1': 5") == [
        "resource 'out0': 2 values printed, 4 expected"
    ]


def test_check_of_an_invalid_model_wants_a_rejection_not_outputs() -> None:
    expected = {
        "valid": False,
        "error": "SLICE.Strides[0] is 0: must be at least 1",
        "field": "SLICE.Strides[0]",
        "rule": "must be at least 1",
    }
    assert (
        check(expected, "error: $.dispatchables.x: SLICE.Strides[0] is 0: must be at least 1") == []
    )
    assert check(expected, "Failed to create operator: E_INVALIDARG (0x80070057)") == []
    assert check(expected, "Resource 'out0': 1, 2") != []
    assert check(expected, "") != []


def test_check_cli_exits_1_on_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text(json.dumps({"valid": True, "printout": ["Resource 'o': 3"]}))
    (tmp_path / "r.txt").write_text("Resource 'o': 4\n")
    rc, text = _run_cli("check", str(tmp_path / "e.json"), str(tmp_path / "r.txt"))
    assert rc == 1 and "printed 4, expected 3" in text


def _element_at(t: dict[str, list[int]], c: Sequence[int]) -> int:
    """The element a coordinate of a model's tensor lies at (its Strides, else packed)."""
    sizes = t["Sizes"]
    strides = t.get("Strides")
    if strides is None:
        strides, step = [], 1
        for n in reversed(sizes):
            strides.insert(0, step)
            step *= n
    return sum(i * s for i, s in zip(c, strides, strict=True))


def _naive_elements(model: dict[str, object]) -> list[float]:
    """GATHER_ELEMENTS / SCATTER_ELEMENTS of a model, element by element from its JSON."""
    import itertools

    resources = model["resources"]
    (dispatchable,) = model["dispatchables"].values()  # type: ignore[attr-defined]
    desc = dispatchable["desc"]

    at = _element_at

    out_t = desc["OutputTensor"]
    out = [7] * resources["out0"]["initialValues"]["valueCount"]  # type: ignore[index]
    axis = desc["Axis"]
    if dispatchable["type"] == "DML_OPERATOR_ONE_HOT":
        index = resources["in0"]["initialValues"]  # type: ignore[index]
        off, on = resources["in1"]["initialValues"][:2]  # type: ignore[index]
        for c in itertools.product(*(range(k) for k in out_t["Sizes"])):
            where = tuple(0 if d == axis else v for d, v in enumerate(c))
            hit = index[at(desc["IndicesTensor"], where)] == c[axis]
            out[at(out_t, c)] = on if hit else off
        return out
    data = resources["in0"]["initialValues"]  # type: ignore[index]
    index = resources["in1"]["initialValues"]  # type: ignore[index]
    n = desc["InputTensor"]["Sizes"][axis]
    i_t = desc["IndicesTensor"]
    if dispatchable["type"] == "DML_OPERATOR_SCATTER_ELEMENTS":
        for c in itertools.product(*(range(k) for k in desc["InputTensor"]["Sizes"])):
            out[at(out_t, c)] = data[at(desc["InputTensor"], c)]
        updates = resources["in2"]["initialValues"]  # type: ignore[index]
        for c in itertools.product(*(range(k) for k in i_t["Sizes"])):
            k = index[at(i_t, c)] % n
            target = tuple(k if d == axis else v for d, v in enumerate(c))
            out[at(out_t, target)] = updates[at(desc["UpdatesTensor"], c)]
        return out
    for c in itertools.product(*(range(k) for k in out_t["Sizes"])):
        k = index[at(i_t, c)] % n
        source = tuple(k if d == axis else v for d, v in enumerate(c))
        out[at(out_t, c)] = data[at(desc["InputTensor"], source)]
    return out


@pytest.mark.parametrize("level", [None, "3_0", "2_1"])
def test_indexed_vectors_match_a_naive_reference(tmp_path: Path, level: str) -> None:
    """Their indices lie inside their axes, a scatter names each element once, and the
    sidecar's printout is what element loops over the model's own JSON give."""
    ops = ["gather_elements", "scatter_elements", "one_hot"]
    index = generate(tmp_path, 45, seed=9, operators=ops, feature_level=level,
                     invalid_fraction=0.2)  # fmt: skip
    checked = 0
    for m in index:
        model = json.loads((tmp_path / str(m["model"])).read_text())
        expected = json.loads((tmp_path / str(m["expected"])).read_text())
        if not m["valid"]:
            assert expected["error"].startswith(
                ("GATHER_ELEMENTS.", "SCATTER_ELEMENTS.", "ONE_HOT.")
            )
            continue
        want = _naive_elements(model)
        got = expected["printout"][0].split(": ", 1)[1].split(", ")
        assert [float(v) for v in got] == [float(v) for v in want]
        checked += 1
    assert checked >= 25


def _naive_tuples(model: dict[str, object]) -> list[float]:
    """GATHER / GATHER_ND / SCATTER_ND / REVERSE_SUBSEQUENCES of a model, element by element
    from its JSON (every tensor of one rank; an ND operator's counts are that rank)."""
    import itertools

    resources = model["resources"]
    (dispatchable,) = model["dispatchables"].values()  # type: ignore[attr-defined]
    desc, kind = dispatchable["desc"], dispatchable["type"]

    at = _element_at

    def every(t: dict[str, list[int]]) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(k) for k in t["Sizes"])))

    def value(name: str, t: dict[str, list[int]], c: Sequence[int]) -> float:
        return resources[name]["initialValues"][at(t, c)]  # type: ignore[index, no-any-return]

    x_t, out_t = desc["InputTensor"], desc["OutputTensor"]
    sizes = x_t["Sizes"]
    rank = len(sizes)
    out = [7] * resources["out0"]["initialValues"]["valueCount"]  # type: ignore[index]
    if kind == "DML_OPERATOR_REVERSE_SUBSEQUENCES":
        axis, l_t = desc["Axis"], desc["SequenceLengthsTensor"]
        for c in every(out_t):
            length = value("in1", l_t, [0 if d == axis else v for d, v in enumerate(c)])
            p = c[axis]
            src = [length - 1 - p if d == axis and p < length else v for d, v in enumerate(c)]
            out[at(out_t, c)] = value("in0", x_t, src)
        return out
    i_t = desc["IndicesTensor"]
    isz = i_t["Sizes"]
    if kind == "DML_OPERATOR_GATHER":
        axis = desc["Axis"]
        for c in every(out_t):
            k = int(value("in1", i_t, [0] * (rank - 1) + [c[axis]])) % sizes[axis]
            out[at(out_t, c)] = value("in0", x_t, [k if d == axis else v for d, v in enumerate(c)])
        return out
    k = isz[-1]  # the tuple's length; tuples are numbered by the indices' other dimensions
    tuples = list(itertools.product(*(range(n) for n in isz[:-1])))

    def target(j: tuple[int, ...]) -> list[int]:
        return [int(value("in1", i_t, [*j, t])) % sizes[t] for t in range(k)]

    if kind == "DML_OPERATOR_GATHER_ND":  # out = the tuples' sub-blocks, right-aligned
        blocks = list(itertools.product(*(range(n) for n in sizes[k:])))
        flat = [value("in0", x_t, target(j) + list(b)) for j in tuples for b in blocks]
        for n, c in enumerate(every(out_t)):
            out[at(out_t, c)] = flat[n]
        return out
    for c in every(out_t):  # SCATTER_ND: the input, then each tuple's block of updates
        out[at(out_t, c)] = value("in0", x_t, c)
    u_t = desc["UpdatesTensor"]
    blocks = list(itertools.product(*(range(n) for n in sizes[k:])))
    rows = [value("in2", u_t, c) for c in every(u_t)]
    for n, (j, b) in enumerate(itertools.product(tuples, blocks)):
        out[at(out_t, target(j) + list(b))] = rows[n]
    return out


@pytest.mark.parametrize("level", [None, "3_0", "2_1"])
def test_gather_nd_scatter_nd_gather_and_reverse_vectors_match_a_naive_reference(
    tmp_path: Path, level: str
) -> None:
    ops = ["gather", "gather_nd", "scatter_nd", "reverse_subsequences"]
    index = generate(tmp_path, 60, seed=4, operators=ops, feature_level=level,
                     invalid_fraction=0.2)  # fmt: skip
    checked = set()
    for m in index:
        model = json.loads((tmp_path / str(m["model"])).read_text())
        expected = json.loads((tmp_path / str(m["expected"])).read_text())
        if not m["valid"]:
            assert expected["error"].startswith(
                ("GATHER.", "GATHER_ND.", "SCATTER_ND.", "REVERSE_SUBSEQUENCES.")
            )
            continue
        want = _naive_tuples(model)
        got = expected["printout"][0].split(": ", 1)[1].split(", ")
        assert [float(v) for v in got] == [float(v) for v in want], m["model"]
        (dispatchable,) = model["dispatchables"].values()
        checked.add(dispatchable["type"])
    assert len(checked) == 4


def test_nonzero_vectors_leave_the_undefined_rows_unchecked(tmp_path: Path) -> None:
    index = generate(tmp_path, 12, seed=3, operators=["nonzero_coordinates"], invalid_fraction=0)
    for m in index:
        expected = json.loads((tmp_path / str(m["expected"])).read_text())
        model = json.loads((tmp_path / str(m["model"])).read_text())
        lines: list[str] = []
        run_model(load_model(model), Device(), lines.append)
        assert check(expected, "\n".join(lines)) == []
        count_line, coords_line = expected["printout"]
        count = int(count_line.split(": ")[1].split(",")[0])
        desc = next(iter(model["dispatchables"].values()))["desc"]
        columns = desc["OutputCoordinatesTensor"]["Sizes"][-1]
        values = coords_line.split(": ")[1].split(", ")
        assert "*" not in values[: count * columns]
        rows = math.prod(desc["OutputCoordinatesTensor"]["Sizes"]) // columns
        assert values[count * columns : rows * columns] == ["*"] * ((rows - count) * columns)
        # a backend's other values there pass; a wrong coordinate does not
        other = [v if v != "*" else "9" for v in values]
        printed = f"{count_line}\nResource 'out1': {', '.join(other)}"
        assert check(expected, printed) == []
        if count:
            wrong = ["5" if k == 0 else v for k, v in enumerate(other)]
            assert check(expected, f"{count_line}\nResource 'out1': {', '.join(wrong)}")
