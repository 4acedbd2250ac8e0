"""CPU engine settings, A/B in one process, interleaved: the contention section's dmlops rows
(and onnxruntime's, for reference) with each setting in turn, ROUNDS rounds of 200 calls;
prints each row's median / 99th percentile per round, in ms.

    python benchmarks/engine_ab.py SETTING [BUSY] [ROUNDS]

SETTING: `ranges`, a range of pieces a thread (home_ranges=1) or one shared range (0);
`tags`, new outputs on the memory their call had or the newest of their size; `caller_spin`,
the caller's spin for a job's last pieces before it sleeps, 200 µs (1) or 20 µs (0);
`wide_vectors`, rows read backwards (16 MiB of each element size into a given output) in
AVX2 vectors (1) or the portable loop (0), a forward copy beside; `swap`, the QKV chain into
fixed buffers, the same buffers swapped every call, and new outputs; `spin`, idle workers
spinning as the defaults have it before they sleep (1) or sleeping at once (0); `long_spin`,
idle workers spinning 300 µs (1) or 50 µs (0) before they sleep after every job;
`idle_spin`, 300 µs (1) or 50 µs (0) after a job that had a free CPU for every thread it
wanted (50 µs after the others either way); `streaming`, the same rows as `wide_vectors`
with jobs from the machine's streaming size written past the caches (1; rows read backwards
are staged and streamed) or every store cached (0); `deal`, two rows reading one run's even
and odd elements dealt from one read up to the default row length (1) or two passes (0):
the contention rows and the sizes section's Focus stem and pixel unshuffle at 64 KiB and
1 MiB.
BUSY: processes spinning beside (taskset -c 0-3 ... for a CPU set).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.backends import numpy_backend as nb
from dmlops.backends.cpu_engine.caches import NEVER, chosen_streaming_bytes
from dmlops.bench.contention import _graphs, _operators, latencies
from dmlops.bench.graphs import PATTERNS

_TAGGED = (nb.NumpyBackend.empty, nb.NumpyBackend.empties)


def _home_ranges(on: int) -> None:
    cpu_engine.configure(home_ranges=on)


def _tags(on: int) -> None:
    empty, empties = _TAGGED
    if not on:
        empty = lambda shape, dtype, tag=0: _TAGGED[0](shape, dtype)  # noqa: E731
        empties = lambda shapes, dtype, tag=0: _TAGGED[1](shapes, dtype)  # noqa: E731
    setattr(nb.NumpyBackend, "empty", staticmethod(empty))  # noqa: B010
    setattr(nb.NumpyBackend, "empties", staticmethod(empties))  # noqa: B010


def _caller_spin(on: int) -> None:
    cpu_engine.configure(caller_spin_us=200 if on else 20)


def _streaming(on: int) -> None:
    chosen = chosen_streaming_bytes(machine=cpu_engine.DEFAULTS["streaming_bytes"])
    cpu_engine.configure(streaming_bytes=chosen if on else NEVER)


_SHORT_SPIN, _IDLE_SPIN = cpu_engine.DEFAULTS["spin_us"], cpu_engine.DEFAULTS["idle_spin_us"]


def _spin(on: int) -> None:
    cpu_engine.configure(spin_us=_SHORT_SPIN * on, idle_spin_us=_IDLE_SPIN * on)


def _long_spin(on: int) -> None:
    spin = _IDLE_SPIN if on else _SHORT_SPIN
    cpu_engine.configure(spin_us=spin, idle_spin_us=spin)


def _idle_spin(on: int) -> None:
    cpu_engine.configure(idle_spin_us=_IDLE_SPIN if on else _SHORT_SPIN)


def _wide_vectors(on: int) -> None:
    cpu_engine.configure(wide_vectors=on)


def _deal(on: int) -> None:
    cpu_engine.configure(deal_most_bytes=cpu_engine.DEFAULTS["deal_most_bytes"] * on)


def _dealt_cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    from dmlops.bench.sizes import GRAPH
    from dmlops.bench.sizes import _graphs as sized_graphs

    cases = _contention_cases("deal")
    for nbytes in (64 << 10, 1 << 20):
        for case, out_bytes, contenders in sized_graphs(nbytes):
            if case.startswith(("Focus", "pixel")):
                cases.append((f"{case}, {out_bytes >> 10} KiB", {GRAPH: contenders[GRAPH]}))
    return cases


def _reversed_rows_cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    rng = np.random.default_rng(1)
    cases: list[tuple[str, dict[str, Callable[[], Any]]]] = []
    for dtype in (np.uint8, np.float16, np.float32, np.float64):
        size = np.dtype(dtype).itemsize
        x = rng.integers(0, 256, 16 << 20, dtype=np.uint8).view(dtype).reshape(-1, 512 // size)
        cases.append((f"{np.dtype(dtype).name} rows of 512 bytes, 16 MiB", _rows_both_ways(x)))
    return cases


def _rows_both_ways(x: np.ndarray) -> dict[str, Callable[[], Any]]:
    out, rows = np.empty_like(x), list(x.shape)
    return {
        "dmlops reversed": lambda: dmlops.slice1(x, [0, 0], rows, [1, -1], out=out),
        "dmlops forward (fixed)": lambda: dmlops.slice1(x, [0, 0], rows, [1, 1], out=out),
    }


def _contention_cases(setting: str) -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    cases = [(case, contenders) for case, _, contenders in _graphs() + _operators()]
    if setting == "ranges":
        values = np.random.default_rng(0).standard_normal((2048, 4096), dtype=np.float32)
        cast = {"dmlops": lambda: dmlops.cast(values, np.float16)}
        cases.append(("CAST fp32->fp16 32 MiB", cast))
    return cases


def _swap_cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    x = np.random.default_rng(0).standard_normal((1, 1024, 3072), dtype=np.float32)
    a = [np.empty((1, 1024, 1024), np.float32) for _ in range(3)]
    b = [np.empty((1, 1024, 1024), np.float32) for _ in range(3)]
    calls = [0]

    def run(parts: list[np.ndarray], heads: list[np.ndarray]) -> None:
        for part, head in zip(dmlops.split(x, 2, [1024] * 3, outs=parts), heads, strict=True):
            view = part.reshape(1, 1024, 16, 64).transpose(0, 2, 1, 3)
            dmlops.slice1(view, [0] * 4, list(view.shape), [1] * 4, out=head.reshape(view.shape))

    def swapped() -> None:
        calls[0] += 1
        run(a, b) if calls[0] % 2 else run(b, a)

    contenders = {
        "fixed buffers": lambda: run(a, b),
        "buffers swapped": swapped,
        "new outputs": lambda: PATTERNS[1].op_by_op([x]),
    }
    return [("QKV split + head transposes, 12 MiB", contenders)]


def main() -> None:
    setting = sys.argv[1] if len(sys.argv) > 1 else "ranges"
    busy = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    switches = {
        "ranges": _home_ranges, "tags": _tags, "caller_spin": _caller_spin, "spin": _spin,
        "long_spin": _long_spin, "idle_spin": _idle_spin, "streaming": _streaming,
        "wide_vectors": _wide_vectors, "deal": _deal,
    }  # fmt: skip
    switch = {**switches, "swap": None}[setting]
    if setting == "swap":
        cases = _swap_cases()
    elif setting in ("wide_vectors", "streaming"):
        cases = _reversed_rows_cases()
    elif setting == "deal":
        cases = _dealt_cases()
    else:
        cases = _contention_cases(setting)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    time.sleep(0.3)
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for r in range(rounds):
            for case, contenders in cases:
                for name, fn in contenders.items():
                    if name.startswith("numpy") or (setting == "tags" and "bound" in name):
                        continue
                    fixed = switch is None or name.startswith("onnxruntime") or "fixed" in name
                    for on in [None] if fixed else [1, 0] if r % 2 else [0, 1]:
                        if on is not None and switch is not None:
                            switch(on)
                        times = latencies(fn, 200)
                        key = (case, name if on is None else f"{name} {setting}={on}")
                        found.setdefault(key, []).append((statistics.median(times), times[197]))
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    print(f"# {setting}, busy={busy}, threads={dmlops.get_num_threads()}, {rounds} rounds:")
    for (case, name), per_round in found.items():
        cells = "  ".join(f"{m * 1e3:6.3f}/{p * 1e3:6.3f}" for m, p in per_round)
        print(f"{case[:44]:44s} {name:36s} {cells}")
    for on in (1, 0):  # each setting's rows and rounds whose 99th percentile is near its median
        tag = f" {setting}={on}"
        runs = [mp for (_, name), rounds_ in found.items() if name.endswith(tag) for mp in rounds_]
        if runs:
            near = sum(p <= 1.5 * m for m, p in runs)
            total = sum(m for m, _ in runs) * 1e3
            print(f"#{tag}: p99 <= 1.5 x median {near} of {len(runs)}; medians {total:.3f} ms")


if __name__ == "__main__":
    main()
