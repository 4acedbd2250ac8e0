"""The benchmark plots group results as their names say."""

from __future__ import annotations

from dmlops.bench.common import Result
from dmlops.bench.plot import contention_cases


def test_contention_results_group_by_case_and_condition() -> None:
    """The condition is the bracket that ends a result's name, so a case whose own name
    holds a shape in brackets keeps its panel and its four conditions."""
    names = [
        "NCHW -> NHWC of [8, 64, 128, 128], 32 MiB [idle, 2 threads]",
        "NCHW -> NHWC of [8, 64, 128, 128], 32 MiB [1 busy, 2 threads]",
        "Focus stem (4 stride-2 slices + concat) [cpuset 4, 2 threads]",
    ]
    results = [Result("contention", n, "cpu", 1, "numpy") for n in names]
    cases = contention_cases(results)
    assert list(cases) == ["NCHW -> NHWC of [8, 64, 128, 128], 32 MiB", "Focus stem"]
    assert list(cases["NCHW -> NHWC of [8, 64, 128, 128], 32 MiB"]) == ["idle", "1 busy"]
    assert cases["Focus stem"]["cpuset 4"] is results[2]
