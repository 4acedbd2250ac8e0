"""Copies of whole contiguous rows, one row at a time: a window of the inner axis and
GATHER of table rows (rows of 100 to 2,000 bytes; gathers of 4 to 64 KiB too), and
REVERSE_SUBSEQUENCES of 1- and 2-KiB rows. The engine's 32-byte moves (where the CPU has
AVX2: a copy's rows of 32 bytes up to `WIDE_RUN_MOST`, 768; an indexed copy's rows of any
length from 32 bytes, forwards) against memcpy a row (`wide_vectors=0`), numpy beside; bit
for bit first, medians of 9 rounds of 7 calls, interleaved in one process (each round led
by the next contender), ms.

    python benchmarks/whole_rows.py [THREADS] [--plot PNG]   (threads: 1)

`--plot` draws each case's times as ratios to numpy's (bars).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.bench.common import median_cpu, medians_in_turn
from dmlops.bench.plot import plot_ratios

ROW_BYTES = (100, 200, 400, 760, 1000, 2000)


def _cases(rng: np.random.Generator) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    cases = []
    for nbytes in ROW_BYTES:
        for dt in ("uint8", "float32"):
            n = nbytes // np.dtype(dt).itemsize
            if n * np.dtype(dt).itemsize != nbytes:
                continue
            x = rng.integers(0, 100, (64, 256, n + 8)).astype(dt)
            table = rng.integers(0, 100, (50000, n)).astype(dt)
            rows = rng.integers(0, 50000, 20000).astype(np.int32)
            cases += [
                (f"window, rows of {nbytes} B {dt}",
                 lambda x=x, n=n: dmlops.slice1(x, [0, 0, 3], [64, 256, n], [1, 1, 1]),
                 lambda x=x, n=n: x[:, :, 3 : 3 + n].copy()),
                (f"gather, rows of {nbytes} B {dt}",
                 lambda t=table, r=rows: dmlops.gather(t, r, 0),
                 lambda t=table, r=rows: np.take(t, r, 0)),
            ]  # fmt: skip
    for nbytes in (4096, 16384, 65536):
        table = rng.integers(0, 100, ((64 << 20) // nbytes, nbytes)).astype(np.uint8)
        rows = rng.integers(0, table.shape[0], (8 << 20) // nbytes).astype(np.int32)
        cases.append(
            (f"gather, rows of {nbytes} B uint8",
             lambda t=table, r=rows: dmlops.gather(t, r, 0),
             lambda t=table, r=rows: np.take(t, r, 0))
        )  # fmt: skip
    lengths = rng.integers(0, 129, 64).astype(np.int32)
    for dt in ("uint8", "float16", "float32"):
        seq = rng.integers(0, 100, (128, 64, 512)).astype(dt)

        def reversed_rows(seq: Any = seq) -> Any:
            out = seq.copy()
            for b, n in enumerate(lengths):
                out[:n, b] = seq[:n, b][::-1]
            return out

        out = _at_the_same_page_offset(seq)
        cases += [
            (f"reverse_subsequences, rows of {seq.itemsize * 512} B {dt}",
             lambda seq=seq: dmlops.reverse_subsequences(seq, lengths, 0, 1), reversed_rows),
            (f"reverse_subsequences, rows of {seq.itemsize * 512} B {dt}, out= 4K-aliased",
             lambda seq=seq, out=out: dmlops.reverse_subsequences(seq, lengths, 0, 1, out=out),
             reversed_rows),
        ]  # fmt: skip
    return cases


def _at_the_same_page_offset(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """An empty array like x whose data sit at x's offset in their 4 KiB pages (where
    memcpy copies a long run backwards)."""
    held = np.empty(x.nbytes + 4096, np.uint8)
    start = (x.ctypes.data - held.ctypes.data) % 4096
    return held[start : start + x.nbytes].view(x.dtype).reshape(x.shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("threads", nargs="?", type=int, default=1)
    parser.add_argument("--plot", metavar="PNG", help="also draw the ratios into this file")
    args = parser.parse_args()
    dmlops.set_num_threads(args.threads)
    names = ("32-byte moves", "memcpy a row", "numpy")
    print(f"threads {args.threads}; times in ms")
    print(f"| case | {' | '.join(names)} | 32-byte moves / numpy |")
    print("| --- | ---: | ---: | ---: | ---: |")
    found: dict[str, dict[str, float]] = {}
    try:
        for name, ours, theirs in _cases(np.random.default_rng(0)):

            def at(wide: int, ours: Callable[[], Any] = ours) -> float:
                cpu_engine.configure(wide_vectors=wide)
                return median_cpu(ours, 7)

            for wide in (1, 0):
                cpu_engine.configure(wide_vectors=wide)
                assert ours().tobytes() == theirs().tobytes(), (name, wide)
            times = medians_in_turn(
                [lambda: at(1), lambda: at(0), lambda t=theirs: median_cpu(t, 7)], 9
            )
            ms = " | ".join(f"{t * 1e3:.3f}" for t in times)
            print(f"| {name} | {ms} | {times[0] / times[2]:.2f} |", flush=True)
            found[name] = dict(zip(names, times, strict=True))
    finally:
        cpu_engine.configure(wide_vectors=1)
    if args.plot:
        label = "1 thread" if args.threads == 1 else f"{args.threads} threads"
        plot_ratios(found, "numpy", label, args.plot)


if __name__ == "__main__":
    main()
