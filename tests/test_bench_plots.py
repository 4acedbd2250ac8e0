"""The benchmark plots group results as their names say."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_ratio_plots_draw_every_contender_against_the_baseline(tmp_path: Path) -> None:
    """The benchmark scripts' ratio plot draws each case's other contenders (a case may lack
    one) against the baseline's time, into a PNG."""
    pytest.importorskip("matplotlib")
    from dmlops.bench.plot import plot_ratios

    path = tmp_path / "ratios.png"
    rows = {"a": {"plain": 2.0, "tiles": 1.0, "numpy": 4.0}, "b": {"plain": 1.0, "tiles": 1.5}}
    plot_ratios(rows, "plain", "2 threads", str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
