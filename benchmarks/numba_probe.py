"""Whether a compiled engine with its own threads (numba's prange) beats numpy and Python
threads on the CPU graphs' plans: the KV-cache append (two row copies) and the QKV head
transpose (rows of 64 floats), against np.concatenate / np.copyto and onnxruntime-like
targets. Needs numba (not a dependency of dmlops).

    python benchmarks/numba_probe.py
"""

from __future__ import annotations

import os
import timeit
from collections.abc import Callable

import numba
import numpy as np


@numba.njit(parallel=True, nogil=True, cache=False)
def copy_rows(dst, src, dst_off, src_off, nbytes):  # type: ignore[no-untyped-def]
    for i in numba.prange(dst_off.size):
        d = dst_off[i]
        s = src_off[i]
        n = nbytes[i]
        dst[d : d + n] = src[s : s + n]


def per_call(fn: Callable[[], object]) -> float:
    fn()
    return min(timeit.repeat(fn, number=20, repeat=7)) / 20 * 1e6


def rows_of(shape: tuple[int, ...], src_strides: tuple[int, ...], dst_strides: tuple[int, ...],
            row: int, src0: int = 0, dst0: int = 0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Byte offsets of every row of a copy whose last dimension is contiguous."""
    grid = np.indices(shape).reshape(len(shape), -1).T
    return dst0 + grid @ np.array(dst_strides), src0 + grid @ np.array(src_strides)


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    print(f"cores {cores}, numba {numba.__version__} ({numba.config.THREADING_LAYER})")
    past = np.random.standard_normal((1, 32, 511, 128)).astype(np.float32)
    new = np.random.standard_normal((1, 32, 1, 128)).astype(np.float32)
    out = np.empty((1, 32, 512, 128), np.float32)
    o8, p8, n8 = (
        out.reshape(-1).view(np.uint8),
        past.reshape(-1).view(np.uint8),
        new.reshape(-1).view(np.uint8),
    )
    row_p = 511 * 128 * 4
    d1, s1 = rows_of((32,), (row_p,), (512 * 128 * 4,), row_p)
    d2, s2 = rows_of((32,), (512,), (512 * 128 * 4,), 512, 0, row_p)
    l1, l2 = np.full(32, row_p, np.int64), np.full(32, 512, np.int64)

    def kv_numba() -> None:
        copy_rows(o8, p8, d1, s1, l1)
        copy_rows(o8, n8, d2, s2, l2)

    kv_numba()
    assert np.array_equal(out, np.concatenate([past, new], 2))
    joined = per_call(lambda: np.concatenate([past, new], 2, out=out))
    print(f"KV append 8.4 MB: numba {per_call(kv_numba):.0f} µs; np.concatenate {joined:.0f} µs")
    # QKV: x [B=8, T=512, 3, H=12, D=64] -> [3, B, H, T, D], rows of 64 floats
    x = np.random.standard_normal((8, 512, 3, 12, 64)).astype(np.float32)
    y = np.empty((3, 8, 12, 512, 64), np.float32)
    x8, y8 = x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)
    shape = (3, 8, 12, 512)
    xs = tuple(s for s in (x.strides[2], x.strides[0], x.strides[3], x.strides[1]))
    ys = y.strides[:4]
    dq, sq = rows_of(shape, xs, ys, 256)
    lq = np.full(dq.size, 256, np.int64)

    def qkv_numba() -> None:
        copy_rows(y8, x8, dq, sq, lq)

    qkv_numba()
    assert np.array_equal(y, x.transpose(2, 0, 3, 1, 4))
    t = x.transpose(2, 0, 3, 1, 4)
    print(f"QKV transpose 12.6 MB: numba {per_call(qkv_numba):.0f} µs; "
          f"np.copyto {per_call(lambda: np.copyto(y, t)):.0f} µs")  # fmt: skip
    for threads in sorted({1, 2, 4, 8, cores} & set(range(1, cores + 1))):
        numba.set_num_threads(threads)
        print(
            f"  {threads} threads: KV {per_call(kv_numba):.0f} µs, QKV {per_call(qkv_numba):.0f} µs"
        )


if __name__ == "__main__":
    main()
