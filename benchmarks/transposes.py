"""The CPU engine's element transposes: each copy's plain walk against its square tiles (and
leftover strips; the tiles moved element by element, and as 16-byte blocks transposed in
registers), with numpy's and torch's copy of the same permuted view, float32 (--dtype),
medians of 7 calls in ms. Prints one line per case.

    python benchmarks/transposes.py [THREADS] [--dtype DTYPE] [--plot PNG]   (threads: 1)

`--plot` also draws each case's times as ratios to the plain walk's (bars).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
import dmlops.backends.cpu_engine as engine
from dmlops.bench.common import median_cpu
from dmlops.bench.plot import plot_ratios

CASES: list[tuple[str, tuple[int, ...], Callable[[Any], Any]]] = [
    ("[2000, 2000]", (2000, 2000), lambda x: x.T),
    ("[2048, 2048]", (2048, 2048), lambda x: x.T),
    ("[4096, 4096]", (4096, 4096), lambda x: x.T),
    ("[1000, 1000]", (1000, 1000), lambda x: x.T),
    ("NHWC -> NCHW [8, 128, 128, 64]", (8, 128, 128, 64), lambda x: x.permute(0, 3, 1, 2)
     if hasattr(x, "permute") else x.transpose(0, 3, 1, 2)),
    ("NCHW -> NHWC [8, 64, 128, 128]", (8, 64, 128, 128), lambda x: x.permute(0, 2, 3, 1)
     if hasattr(x, "permute") else x.transpose(0, 2, 3, 1)),
    ("batched [16, 512, 512]", (16, 512, 512), lambda x: x.transpose(1, 2)
     if hasattr(x, "permute") else x.transpose(0, 2, 1)),
    ("[4000, 4001] window of [4096, 4096]", (4096, 4096), lambda x: x[:4000, :4001].T),
]  # fmt: skip


def median_ms(fn: Callable[[], Any], calls: int = 7) -> float:
    return median_cpu(fn, calls) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("threads", nargs="?", type=int, default=1)
    parser.add_argument("--dtype", default="float32", help="the elements' type (float32)")
    parser.add_argument("--plot", metavar="PNG", help="also draw the ratios into this file")
    args = parser.parse_args()
    threads = args.threads
    dmlops.set_num_threads(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    tiled = engine._tiled_transpose
    columns = "plain walk / tiles, element loops / tiles, 16-byte blocks / numpy / torch"
    print(f"{args.dtype}, threads {threads}: {columns} (ms)")
    rows: dict[str, dict[str, float]] = {}
    for name, shape, view_of in CASES:
        x = np.random.default_rng(0).integers(0, 100, shape).astype(args.dtype)
        view = view_of(x)
        out = np.empty(view.shape, x.dtype)
        row = []
        plain = lambda s, a, b, size, blocks=False: [(s, a, b, 0, 0, "")]  # noqa: E731
        for walk, blocks in ((plain, 1), (tiled, 0), (tiled, 1)):
            engine._tiled_transpose = walk  # (the plain walk: every copy as the plan gives it)
            engine.configure(tile_blocks=blocks)
            dmlops.functional.clear_cache()
            call = (view, [0] * view.ndim, list(view.shape), [1] * view.ndim)
            row.append(median_ms(lambda call=call, out=out: dmlops.slice1(*call, out=out)))
            assert np.array_equal(out, view)
        engine._tiled_transpose = tiled
        engine.configure(tile_blocks=1)
        dmlops.functional.clear_cache()
        row.append(median_ms(lambda out=out, view=view: np.copyto(out, view)))
        if torch is not None:
            source, target = torch.from_numpy(x), torch.from_numpy(out)
            tview = view_of(source)
            row.append(median_ms(lambda target=target, tview=tview: target.copy_(tview)))
        print(f"{name:36s} " + " ".join(f"{t:8.2f}" for t in row), flush=True)
        names = ("plain walk", "tiles, element loops", "tiles, 16-byte blocks", "numpy", "torch")
        rows[name] = dict(zip(names, row, strict=False))
    if args.plot:
        plot_ratios(rows, "plain walk", f"{threads} threads", args.plot)


if __name__ == "__main__":
    main()
