"""Short rows of 2-byte elements read from inside source words (the layouts section's 8-D
uint16 box, and 2-D rows of ten): the `funnel` kernel against `packed`, which gathers each
destination word element by element, timed in turn in several rounds (bound dispatches,
median of batches; medians of the rounds).

    python benchmarks/webgpu_short_rows.py [REPS [ROUNDS]]   (10 and 5)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

import dmlops.webgpu as wg
from dmlops import BufferTensorDesc, DataType, Device, SliceDesc
from dmlops.backends import get_backend
from dmlops.backends.webgpu import strategies
from dmlops.bench.common import medians_in_turn
from dmlops.bench.webgpu import _batched

CASES = {  # input shape, window start, window sizes
    "8-D box [7]*7+[10] of [9]*7+[12]": ((9,) * 7 + (12,), [1] * 8, [7] * 7 + [10]),
    "2-D rows of 10 of [2**20, 12]": ((1 << 20, 12), [0, 1], [1 << 20, 10]),
}


@contextmanager
def strategy(name: str) -> Iterator[None]:
    """Copies the strategies give `funnel` moved by `packed` instead, while in the block."""
    if name == "funnel":
        yield
        return
    original = strategies._piece_of

    def packed_instead(es: int, sb: int, db: int, shape: Any, ss: Any, ds: Any) -> Any:
        piece = original(es, sb, db, shape, ss, ds)
        if piece.kernel != "funnel":
            return piece
        sizes, src, dst = strategies._layout(es, shape, ss, ds)
        return strategies._packed(es, sb, db, sizes, src, dst)

    strategies._piece_of = packed_instead
    try:
        yield
    finally:
        strategies._piece_of = original


def time_case(
    shape: tuple[int, ...], start: list[int], sizes: list[int], how: str, reps: int
) -> float:
    t, ones = DataType.UINT16, [1] * len(shape)
    into = BufferTensorDesc(t, tuple(sizes))
    desc = SliceDesc(BufferTensorDesc(t, shape), into, start, sizes, ones)
    host = np.random.default_rng(0).integers(0, 2**16, shape, dtype=np.uint16)
    x, out = wg.asarray(host), wg.empty(tuple(sizes), np.uint16)
    with strategy(how):
        table = Device(backend="webgpu").create_operator(desc).bind([x], [out])
        table.dispatch()
    window = host[tuple(slice(a, a + n) for a, n in zip(start, sizes, strict=True))]
    assert np.array_equal(out.numpy(), window), how
    return _batched(table.dispatch, reps, get_backend("webgpu").synchronize)


def main() -> None:
    reps, rounds = (int(a) for a in [*sys.argv[1:], "10", "5"][:2])
    print(f"adapter: {get_backend('webgpu').description}")
    print("| case | packed | funnel | funnel / packed |")
    print("|---|---:|---:|---:|")
    for name, (shape, start, sizes) in CASES.items():
        timers = [partial(time_case, shape, start, sizes, h, reps) for h in ("packed", "funnel")]
        packed, funnel = medians_in_turn(timers, rounds)
        print(f"| {name} | {packed * 1e6:.1f} µs | {funnel * 1e6:.1f} µs | {funnel / packed:.2f} |")


if __name__ == "__main__":
    main()
