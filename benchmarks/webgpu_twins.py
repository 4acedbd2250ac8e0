"""Each WebGPU layout in a small element type against its float32 twin (the same shape and
window in float32, which moves twice or four times the bytes), on whatever adapter WebGPU
picks (lavapipe on a machine without a GPU): bound dispatches, median of batches, the three
types timed in turn in each of several rounds and the median of the rounds reported, and
the time ratio small / float32 (above 1: the small type is slower than its twin).

    python benchmarks/webgpu_twins.py [--side 1024] [--reps 7] [--rounds 5]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import dmlops.webgpu as wg
from dmlops import BufferTensorDesc, DataType, Device, Slice1Desc, SliceDesc
from dmlops.backends import get_backend
from dmlops.bench.common import medians_in_turn
from dmlops.bench.webgpu import _batched

TYPES = {np.float16: DataType.FLOAT16, np.int8: DataType.INT8, np.float32: DataType.FLOAT32}


def _desc(dt: DataType, shape: tuple[int, ...], strides: tuple[int, ...] | None = None) -> Any:
    return BufferTensorDesc(dt, shape, strides)


def cases(side: int) -> dict[str, Callable[[Any], tuple[tuple[int, ...], Any]]]:
    """name -> (input shape, descriptor) for an element type."""
    n = side

    def transposed(t: DataType) -> tuple[tuple[int, ...], Any]:
        view = _desc(t, (n, n), (1, n))  # x.T
        return (n, n), SliceDesc(
            view, _desc(t, (n - 64, n - 32)), [32, 16], [n - 64, n - 32], [1, 1]
        )

    def strides22(t: DataType) -> tuple[tuple[int, ...], Any]:
        return (n, n), SliceDesc(
            _desc(t, (n, n)), _desc(t, (n // 2, n // 2)), [0, 0], [n // 2, n // 2], [2, 2]
        )

    def inner(step: int) -> Callable[[DataType], tuple[tuple[int, ...], Any]]:
        def make(t: DataType) -> tuple[tuple[int, ...], Any]:
            width = -(-n // abs(step))
            return (n, n), Slice1Desc(
                _desc(t, (n, n)), _desc(t, (n, width)), [0, 0], [n, n], [1, step]
            )

        return make

    def reversed_inner(t: DataType) -> tuple[tuple[int, ...], Any]:
        return (n, n), Slice1Desc(_desc(t, (n, n)), _desc(t, (n, n)), [0, 0], [n, n], [1, -1])

    def box8(t: DataType) -> tuple[tuple[int, ...], Any]:
        shape = (6,) * 7 + (12,)
        sizes = [4] * 7 + [10]
        return shape, SliceDesc(_desc(t, shape), _desc(t, tuple(sizes)), [1] * 8, sizes, [1] * 8)

    return {
        "slice of x.T": transposed,
        "strides 2x2": strides22,
        "inner stride 2": inner(2),
        "inner stride -2": inner(-2),
        "inner stride 3": inner(3),
        "inner stride -3": inner(-3),
        "reversed inner": reversed_inner,
        "8-D box (10-element rows)": box8,
    }


def time_case(
    make: Callable[[DataType], tuple[tuple[int, ...], Any]], dtype: Any, reps: int
) -> float:
    shape, desc = make(TYPES[dtype])
    rng = np.random.default_rng(0)
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    host = rng.integers(0, 255, size, dtype=np.uint8).view(dtype).reshape(shape)
    out_t = desc.output_fields()[0][1]
    x, out = wg.asarray(host), wg.empty(out_t.sizes, dtype)
    table = Device(backend="webgpu").create_operator(desc).bind([x], [out])
    table.dispatch()
    return _batched(table.dispatch, reps, get_backend("webgpu").synchronize)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"adapter: {get_backend('webgpu').description}, side {args.side}")
    print("| layout | float32 | float16 | int8 | float16 / float32 | int8 / float32 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, make in cases(args.side).items():
        t32, t16, t8 = medians_in_turn(
            [partial(time_case, make, d, args.reps) for d in (np.float32, np.float16, np.int8)],
            args.rounds,
        )
        print(
            f"| {name} | {t32 * 1e6:.0f} µs | {t16 * 1e6:.0f} µs | {t8 * 1e6:.0f} µs | "
            f"{t16 / t32:.2f} | {t8 / t32:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
