"""Benchmark section "sizes": the contention section's operators and the graphs section's
chains at outputs from about 4 KiB to 16 MiB, idle, with numpy (and onnxruntime for the
chains) in the same process: where a call's fixed cost (its validation and dispatch in
Python, a few microseconds) meets numpy's view copies. Each contender gives the median and
the 99th percentile ("... p99") over `calls` calls (after 0.1 s of warm-up calls); ratios
are to numpy's median.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import contention
from .common import Result
from .contention import _graphs as contention_graphs
from .contention import percentiles

__all__ = ["SIZES", "graph_shapes", "run"]

SECTION = "sizes"
SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20)  # output bytes asked for (float32)
OURS = "dmlops"
GRAPH = contention.OURS

Contenders = dict[str, Callable[[], Any]]


def _side(elements: float, multiple: int = 2) -> int:
    """The side of a square of about `elements` elements, a multiple of `multiple`."""
    return max(multiple, int(math.sqrt(elements)) // multiple * multiple)


def _operators(nbytes: int) -> list[tuple[str, int, Contenders]]:
    """(operator, output bytes, contenders) of about `nbytes` of float32 output each."""
    import dmlops

    rng = np.random.default_rng(2)
    n = max(256, nbytes // 4)

    def normal(*shape: int) -> np.ndarray[Any, Any]:
        return rng.standard_normal(shape, dtype=np.float32)

    rows = normal(n // 128, 128)
    wide = normal(2 * (n // 128), 256)
    split_rows = normal(n // 256, 256)
    parts = [normal(n // 256, 64) for _ in range(4)]
    side = _side(n / 64)
    images = normal(1, 64, side, side)
    channels_last = images.transpose(0, 2, 3, 1)
    cl_shape = list(channels_last.shape)
    return [
        (
            "slice1 reversed rows",
            rows.nbytes,
            {
                OURS: lambda: dmlops.slice1(rows, [0, 0], list(rows.shape), [1, -1]),
                "numpy": lambda: np.ascontiguousarray(rows[:, ::-1]),
            },
        ),
        (
            "slice, strides 2 x 2",
            wide.nbytes // 4,
            {
                OURS: lambda: dmlops.slice(wide, [0, 0], [len(wide) // 2, 128], [2, 2]),
                "numpy": lambda: np.ascontiguousarray(wide[::2, ::2]),
            },
        ),
        (
            "4-way split of the last axis",
            split_rows.nbytes,
            {
                OURS: lambda: dmlops.split(split_rows, 1, [64] * 4),
                "numpy": lambda: [np.ascontiguousarray(q) for q in np.split(split_rows, 4, 1)],
            },
        ),
        (
            "join of 4 on the last axis",
            4 * parts[0].nbytes,
            {
                OURS: lambda: dmlops.join(parts, 1),
                "numpy": lambda: np.concatenate(parts, 1),
            },
        ),
        (
            "NCHW -> NHWC",
            images.nbytes,
            {
                OURS: lambda: dmlops.slice1(channels_last, [0] * 4, cl_shape, [1] * 4),
                "numpy": lambda: np.ascontiguousarray(channels_last),
            },
        ),
        (
            "depth_to_space, block 2",
            images.nbytes,
            {
                OURS: lambda: dmlops.depth_to_space(images, 2),
                "numpy": lambda: np.ascontiguousarray(
                    images.reshape(1, 2, 2, 16, side, side)
                    .transpose(0, 3, 4, 1, 5, 2)
                    .reshape(1, 16, 2 * side, 2 * side)
                ),
            },
        ),
    ]


def graph_shapes(name: str, nbytes: int) -> dict[str, tuple[int, ...]]:
    """The graphs section's chain `name` shaped for about `nbytes` of float32 output."""
    n = max(256, nbytes // 4)
    if name.startswith("Focus"):
        side = _side(n / 3)
        return {"x": (1, 3, side, side)}
    if name.startswith("QKV"):
        return {"x": (1, max(1, n // 3072), 3072)}
    if name.startswith("pixel"):
        side = _side(n / 16)
        return {"x": (1, 16, side, side)}
    steps = max(2, n // (32 * 128))
    return {"cache": (1, 32, steps - 1, 128), "new": (1, 32, 1, 128)}


def _graphs(nbytes: int) -> list[tuple[str, int, Contenders]]:
    """(chain, output bytes, contenders) for the graphs section's chains at `nbytes` (the
    contention section's contenders, on these shapes)."""
    return [
        (case.split(" (")[0], out_bytes, contenders)
        for case, out_bytes, contenders in contention_graphs(
            lambda name: graph_shapes(name, nbytes)
        )
    ]


def _label(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.0f} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def run(calls: int = 200, sizes: tuple[int, ...] = SIZES) -> list[Result]:
    """Each operator and chain at each size: median and 99th percentile a contender."""
    results = []
    for nbytes in sizes:
        for case, out_bytes, contenders in [*_operators(nbytes), *_graphs(nbytes)]:
            res = Result(SECTION, f"{case}, {_label(out_bytes)}", "cpu", out_bytes, "numpy")
            for name, fn in contenders.items():
                res.times[name], res.times[f"{name} p99"] = percentiles(fn, calls)
            results.append(res)
    return results
