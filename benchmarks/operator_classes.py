"""Every operator and layout class on the CPU against numpy's own way of doing it, in one
process, interleaved: strided windows (steps 3 and -2, a window on every axis), transposes,
TILE, PADDING (constant, edge, reflection), JOIN and SPLIT on an outer and the inner axis,
DEPTH_TO_SPACE / SPACE_TO_DEPTH, GATHER (rows, an inner axis), GATHER_ELEMENTS, GATHER_ND,
SCATTER_ND, SCATTER_ELEMENTS, REVERSE_SUBSEQUENCES at 1, 2, 4 and 8-byte elements, then
ONE_HOT, SLICE_GRAD and UPSAMPLE_2D: each answer checked bit for bit against numpy's first,
then ROUNDS rounds of 7 calls each after a warm-up call (the median a round; the table: the
median of the rounds).

    python benchmarks/operator_classes.py [--threads N] [--rounds R] [--only TEXT]
                                          [--json FILE] [--plot PNG]

Run it under DMLOPS_NUM_THREADS=1 for the per-core comparison (numpy is single-threaded),
beside busy processes or under `taskset -c 0-3` for a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.bench.common import median_cpu, medians_in_turn

Case = tuple[str, Callable[[], Any], Callable[[], Any]]
_RNG = np.random.default_rng(0)


def _values(shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return _RNG.standard_normal(shape).astype(dtype)
    return _RNG.integers(0, 100, shape).astype(dtype)


def _layouts(dt: str) -> list[Case]:
    x = _values((64, 256, 256), dt)
    t = x.transpose(0, 2, 1)
    parts = [x[:, i * 64 : (i + 1) * 64].copy() for i in range(4)]
    inner = [q.transpose(0, 2, 1).copy() for q in parts]
    img = _values((4, 64, 128, 128), dt)
    return [
        (f"slice1 step 3 inner {dt}",
         lambda: dmlops.slice1(x, [0, 0, 0], list(x.shape), [1, 1, 3]),
         lambda: np.ascontiguousarray(x[:, :, ::3])),
        (f"slice1 step -2 inner {dt}",
         lambda: dmlops.slice1(x, [0, 0, 0], list(x.shape), [1, 1, -2]),
         lambda: np.ascontiguousarray(x[:, :, ::-2])),
        (f"slice window [1:-1] all axes {dt}",
         lambda: dmlops.slice1(x, [1, 1, 1], [62, 254, 254], [1, 1, 1]),
         lambda: x[1:-1, 1:-1, 1:-1].copy()),
        (f"transpose last two {dt}",
         lambda: dmlops.slice1(t, [0, 0, 0], list(t.shape), [1, 1, 1]),
         lambda: np.ascontiguousarray(t)),
        (f"tile [1,2,2] {dt}", lambda: dmlops.tile(x[:16], [1, 2, 2]),
         lambda: np.tile(x[:16], (1, 2, 2))),
        (f"pad reflect 3 {dt}", lambda: dmlops.padding(x, [0, 3, 3], [0, 3, 3], "REFLECTION"),
         lambda: np.pad(x, ((0, 0), (3, 3), (3, 3)), mode="reflect")),
        (f"pad constant 1 {dt}", lambda: dmlops.padding(x, [0, 1, 1], [0, 1, 1], "CONSTANT", 0),
         lambda: np.pad(x, ((0, 0), (1, 1), (1, 1)))),
        (f"pad edge 2 {dt}", lambda: dmlops.padding(x, [0, 2, 2], [0, 2, 2], "EDGE"),
         lambda: np.pad(x, ((0, 0), (2, 2), (2, 2)), mode="edge")),
        (f"join axis 1 x4 {dt}", lambda: dmlops.join(parts, 1),
         lambda: np.concatenate(parts, 1)),
        (f"join axis 2 x4 {dt}", lambda: dmlops.join(inner, 2),
         lambda: np.concatenate(inner, 2)),
        (f"split axis 2 x4 {dt}", lambda: dmlops.split(x, 2, [64] * 4),
         lambda: [q.copy() for q in np.split(x, 4, 2)]),
        (f"depth_to_space 2 DCR {dt}", lambda: dmlops.depth_to_space(img, 2, "DCR"),
         lambda: np.ascontiguousarray(
             img.reshape(4, 2, 2, 16, 128, 128).transpose(0, 3, 4, 1, 5, 2)
         ).reshape(4, 16, 256, 256)),
        (f"space_to_depth 2 DCR {dt}", lambda: dmlops.space_to_depth(img, 2, "DCR"),
         lambda: np.ascontiguousarray(
             img.reshape(4, 64, 64, 2, 64, 2).transpose(0, 3, 5, 1, 2, 4)
         ).reshape(4, 256, 64, 64)),
    ]  # fmt: skip


def _indexed(dt: str) -> list[Case]:
    table = _values((50000, 64), dt)
    rows = _RNG.integers(0, 50000, 20000).astype(np.int32)
    columns = _RNG.integers(0, 64, 32).astype(np.int32)
    each = _RNG.integers(0, 64, (50000, 16)).astype(np.int32)
    updates = _values((20000, 64), dt)
    places = _RNG.permutation(50000)[:20000].astype(np.int32)
    spots = np.argsort(_RNG.random((50000, 64)), axis=1)[:, :16].astype(np.int32)
    spot_values = _values((50000, 16), dt)
    seq = _values((128, 64, 512), dt)
    lengths = _RNG.integers(0, 129, 64).astype(np.int32)

    def scatter_rows() -> Any:
        out = table.copy()
        out[places] = updates
        return out

    def scatter_elements() -> Any:
        out = table.copy()
        np.put_along_axis(out, spots, spot_values, 1)
        return out

    def reversed_sequences() -> Any:
        out = seq.copy()
        for b, n in enumerate(lengths):
            out[:n, b] = seq[:n, b][::-1]
        return out

    return [
        (f"gather rows 20000 of [50000,64] {dt}", lambda: dmlops.gather(table, rows, 0),
         lambda: np.take(table, rows, 0)),
        (f"gather inner axis 32 of 64 {dt}", lambda: dmlops.gather(table, columns, 1),
         lambda: np.take(table, columns, 1)),
        (f"gather_elements axis 1 {dt}", lambda: dmlops.gather_elements(table, each, 1),
         lambda: np.take_along_axis(table, each, 1)),
        (f"gather_nd rows {dt}", lambda: dmlops.gather_nd(table, rows[:, None]),
         lambda: table[rows]),
        (f"scatter_nd rows {dt}",
         lambda: dmlops.scatter_nd(table, places[:, None], updates), scatter_rows),
        (f"scatter_elements axis 1 {dt}",
         lambda: dmlops.scatter_elements(table, spots, spot_values, 1), scatter_elements),
        (f"reverse_subsequences {dt}",
         lambda: dmlops.reverse_subsequences(seq, lengths, 0, 1), reversed_sequences),
    ]  # fmt: skip


def _family() -> list[Case]:
    labels = _RNG.integers(0, 1000, 4096).astype(np.int32)
    hot = np.array([0, 1], np.float32)
    grad = _values((64, 128, 128), np.float32)
    img = _values((4, 64, 128, 128), np.float32)

    def slice_grad() -> Any:
        out = np.zeros((64, 256, 256), np.float32)
        out[:, ::2, ::2] = grad
        return out

    return [
        ("one_hot 4096 x 1000 float32", lambda: dmlops.one_hot(labels, 1000, hot),
         lambda: np.eye(1000, dtype=np.float32)[labels]),
        ("slice_grad steps 2 float32",
         lambda: dmlops.slice_grad(grad, [64, 256, 256], [0, 0, 0], [64, 255, 255], [1, 2, 2]),
         slice_grad),
        ("upsample_2d nearest x2 float32", lambda: dmlops.upsample_2d(img, [2, 2]),
         lambda: img.repeat(2, 2).repeat(2, 3)),
    ]  # fmt: skip


def cases() -> list[Case]:
    """Every case, the layouts and indexed copies at each element size."""
    found: list[Case] = []
    for dt in ("uint8", "float16", "float32", "int64"):
        found += _layouts(dt) + _indexed(dt)
    return found + _family()


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b, strict=True))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def measure(rounds: int, only: str | None) -> list[dict[str, Any]]:
    """[{case, same, dmlops, numpy}] in seconds: medians of per-round medians."""
    rows = []
    for name, ours, theirs in cases():
        if only and only not in name:
            continue
        same = _same(ours(), theirs())
        ours_s, theirs_s = medians_in_turn(
            [lambda fn=ours: median_cpu(fn, 7), lambda fn=theirs: median_cpu(fn, 7)], rounds
        )
        row = {"case": name, "same": same, "dmlops": ours_s, "numpy": theirs_s}
        rows.append(row)
        print(
            f"| {name} | {'yes' if same else 'NO'} | {row['dmlops'] * 1e3:.3f} | "
            f"{row['numpy'] * 1e3:.3f} | {row['dmlops'] / row['numpy']:.2f} |",
            flush=True,
        )
    return rows


def plot(rows: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = [r["dmlops"] / r["numpy"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(rows) + 1.2))
    colours = ["tab:red" if q > 1 else "tab:blue" for q in ratios]
    ax.barh(range(len(rows)), ratios, color=colours)
    ax.set_yticks(range(len(rows)), [r["case"] for r in rows], fontsize=6)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("dmlops time / numpy time (below 1: dmlops faster)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="dmlops' threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default=None, help="cases whose name contains this")
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    if args.threads:
        dmlops.set_num_threads(args.threads)
    threads = dmlops.get_num_threads()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"dmlops threads {threads}, CPUs {cpus}; times in ms\n")
    print("| case | same bits | dmlops | numpy | dmlops / numpy |")
    print("| --- | --- | ---: | ---: | ---: |")
    rows = measure(args.rounds, args.only)
    over = [r["case"] for r in rows if r["dmlops"] > r["numpy"]]
    print(f"\n{len(over)} of {len(rows)} over numpy: {', '.join(over) or 'none'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "cpus": cpus, "rows": rows}, f, indent=1)
    if args.plot:
        plot(rows, args.plot, f"dmlops on {threads} thread(s) against numpy, {cpus} CPUs")


if __name__ == "__main__":
    main()
