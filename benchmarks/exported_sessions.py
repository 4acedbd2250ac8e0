"""`session.run` of the exported models in tests/data/exported against onnxruntime, in the same
process: per model the best of 7 runs of N calls, then the median dmlops / onnxruntime time per
kind of model (indexing, Pad / Tile / Expand, other data movement) and the slowest rows.

    python benchmarks/exported_sessions.py [--all]   (--all: every model's row too)
"""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import dmlops.onnx as dml_onnx

HERE = Path(__file__).resolve().parents[1] / "tests" / "data" / "exported"
INDEXING = {"Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND",
            "OneHot", "ReverseSequence"}  # fmt: skip
FILLING = {"Pad", "Tile", "Expand"}


def best(fn: Callable[[], object]) -> float:
    fn()
    number = max(1, int(0.02 / max(1e-6, timeit.timeit(fn, number=1))))
    return min(timeit.repeat(fn, number=number, repeat=7)) / number


def main() -> None:
    rows: dict[str, list[tuple[float, str]]] = {
        "indexing": [],
        "pad/tile/expand": [],
        "data movement": [],
    }
    for path in sorted(HERE.glob("*.onnx")):
        ops = {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}
        kind = (
            "indexing"
            if ops & INDEXING
            else "pad/tile/expand"
            if ops & FILLING
            else "data movement"
        )
        data = np.load(path.with_suffix(".npz"))
        feeds = {k: data[k] for k in data.files if k.startswith("in")}
        ours = dml_onnx.InferenceSession(str(path))
        theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [i.name for i in theirs.get_inputs()]
        feeds = {n: feeds[n] for n in names if n in feeds}
        t_ours = best(lambda o=ours, f=feeds: o.run(None, f))
        t_ort = best(lambda t=theirs, f=feeds: t.run(None, f))
        rows[kind].append(
            (t_ours / t_ort, f"{path.stem}: {t_ours * 1e6:.1f} vs {t_ort * 1e6:.1f} µs")
        )
    print("| models | count | median dmlops / onnxruntime | slowest |")
    print("|---|---:|---:|---|")
    for kind, found in rows.items():
        if not found:
            continue
        ratios = [r for r, _ in found]
        slowest = max(found)[1]
        print(f"| {kind} | {len(found)} | {statistics.median(ratios):.2f} | {slowest} |")
    if "--all" in sys.argv[1:]:
        for kind, found in rows.items():
            for ratio, row in sorted(found):
                print(f"{kind:16s} {ratio:5.2f}  {row}")


if __name__ == "__main__":
    main()
