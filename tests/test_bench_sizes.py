"""The sizes section: every operator and chain at each size asked, right shapes, its
medians and 99th percentiles against numpy's, and its plot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dmlops.bench import sizes
from dmlops.bench.graphs import PATTERNS


@pytest.mark.parametrize("nbytes", [1 << 10, 4 << 10, 64 << 10, 16 << 20])
def test_each_chain_is_shaped_for_about_the_size_asked(nbytes: int) -> None:
    for p in PATTERNS:
        shapes = sizes.graph_shapes(p.name, nbytes)
        out = 4 * sum(math.prod(s) for s in shapes.values())  # (each chain moves its input)
        assert out <= max(4 * nbytes, 64 << 10), (p.name, shapes)
        if p.name.startswith(("Focus", "pixel")):
            assert shapes["x"][2] % 2 == 0 and shapes["x"][3] % 2 == 0


def test_a_small_run_times_every_contender_against_numpy(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    results = sizes.run(calls=3, sizes=(4 << 10,))
    assert len(results) == 6 + len(PATTERNS)
    for r in results:
        assert r.section == "sizes" and r.reference == "numpy" and r.case.endswith("KiB")
        ours = [n for n in r.times if n.startswith("dmlops") and not n.endswith(" p99")]
        assert ours and all(f"{n} p99" in r.times for n in ours)
        assert all(r.times[f"{n} p99"] >= r.times[n] for n in ours)
    pytest.importorskip("matplotlib")
    from dmlops.bench.plot import plot

    path = tmp_path / "run.png"
    plot(results, str(path))
    drawn = tmp_path / "run_sizes.png"
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
