"""Fuzz the ONNX and DxDispatch adapters: a correct result or a DmlError, nothing else.

The normal run keeps a short profile; DMLOPS_FUZZ_EXAMPLES=N runs N cases per adapter
(`benchmarks/fuzz_adapters.py` runs long campaigns in parallel processes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("onnx")

from fuzz_adapters import (
    check_dxdispatch_case,
    check_onnx_case,
    dxdispatch_cases,
    onnx_cases,
    time_limit,
)

ROOT = Path(__file__).parent.parent
EXAMPLES = int(os.environ.get("DMLOPS_FUZZ_EXAMPLES", "150"))
BASES: list[dict[str, Any]] = [
    json.loads(p.read_text())
    for p in sorted((ROOT / "examples").glob("*.json"))
    + sorted((ROOT / "tests" / "data" / "dxdispatch").glob("*.json"))
]
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(onnx_cases())
def test_onnx_models_run_correctly_or_raise_dml_errors(case: tuple[Any, dict[str, Any]]) -> None:
    model, feeds = case
    with time_limit(20):
        check_onnx_case(model, feeds)


@FUZZ
@given(dxdispatch_cases(BASES))
def test_dxdispatch_documents_run_correctly_or_raise_dml_errors(doc: dict[str, Any]) -> None:
    with time_limit(20):
        check_dxdispatch_case(doc)


def test_the_fuzzers_reach_both_outcomes() -> None:
    """A fuzzer that only ever produces rejections would test nothing."""
    from hypothesis import find

    find(onnx_cases(), lambda c: check_onnx_case(*c) == "ok", settings=settings(max_examples=2000))
    find(
        onnx_cases(),
        lambda c: check_onnx_case(*c) == "rejected",
        settings=settings(max_examples=2000),
    )
    find(
        dxdispatch_cases(BASES),
        lambda d: check_dxdispatch_case(d) == "ok" and d not in BASES,
        settings=settings(max_examples=2000),
    )


def test_the_naive_dxdispatch_oracle_catches_a_wrong_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dmlops.dxdispatch as dx

    real = dx.run_model

    def corrupt(*args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        finals = real(*args, **kwargs)
        for data in finals.values():
            data[...] = 0
        return finals

    monkeypatch.setattr(dx, "run_model", corrupt)
    naive = ("SLICE", "SLICE1", "SPLIT", "JOIN")
    checked = [
        doc
        for doc in BASES
        if all(d["type"].split("_OPERATOR_")[-1] in naive for d in doc["dispatchables"].values())
        and "elementOffset" not in json.dumps(doc["commands"])  # sub-range bindings: no oracle
    ]
    assert len(checked) >= 6
    for doc in checked:
        with pytest.raises(AssertionError):
            check_dxdispatch_case(doc)
