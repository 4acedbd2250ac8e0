"""Every CUDA kernel strategy: chosen where it should be, and bit-exact against numpy on a
fuzz of random layouts (sizes, offsets, pitches, dtypes, signs), on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import HAS_CUDA

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]

DTYPES = [np.int8, np.float16, np.float32, np.float64]


def _random_buffer(n_bytes: int, seed: int):  # type: ignore[no-untyped-def]
    import cupy

    host = np.random.default_rng(seed).integers(0, 256, n_bytes, dtype=np.uint8)
    return host, cupy.asarray(host)


def _check(got, want) -> None:  # type: ignore[no-untyped-def]
    import cupy

    got = cupy.asnumpy(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


def _kernels(log) -> set[str]:  # type: ignore[no-untyped-def]
    return {g.kernel for g in log}


@settings(max_examples=40)
@given(
    dtype=st.sampled_from(DTYPES),
    rows=st.integers(1, 40),
    width=st.integers(1, 700),
    extra=st.integers(0, 40),
    start=st.integers(0, 31),
    out_shift=st.integers(0, 15),
    seed=st.integers(0, 2**31),
)
def test_rows_fuzz(launches, dtype, rows, width, extra, start, out_shift, seed) -> None:  # type: ignore[no-untyped-def]
    import cupy

    item = np.dtype(dtype).itemsize
    pitch = width + extra
    n = start + rows * pitch
    host, dev = _random_buffer((n + 64) * item, seed)
    x = dev.view(dtype)[start : start + rows * pitch].reshape(rows, pitch)[:, :width]
    want = host.view(dtype)[start : start + rows * pitch].reshape(rows, pitch)[:, :width]
    space = cupy.zeros(rows * width + out_shift + 8, dtype)
    out = space[out_shift : out_shift + rows * width].reshape(rows, width)
    launches.clear()
    dmlops.slice1(x, [0, 0], [rows, width], [1, 1], out=out)
    _check(out, want)
    assert _kernels(launches) <= {"rows", "strided", "pack"}
    if width * item >= 128 and (start * item % 16 or out_shift * item % 16):
        # rows too misaligned for 16-byte vectors: narrower vectors or the rows kernel,
        # never one element per thread
        scalar = [g for g in launches if g.kernel == "strided" and dict(g.defines)["VW"] == item]
        assert not scalar, scalar


@settings(max_examples=40)
@given(
    dtype=st.sampled_from(DTYPES),
    a=st.integers(1, 90),
    b=st.integers(1, 90),
    lead=st.integers(1, 3),
    crop=st.tuples(st.integers(0, 5), st.integers(0, 5)),
    flip=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_transpose_fuzz(launches, dtype, a, b, lead, crop, flip, seed) -> None:  # type: ignore[no-untyped-def]
    item = np.dtype(dtype).itemsize
    host, dev = _random_buffer(lead * a * b * item, seed)
    # [lead, b, a] with unit stride on the middle axis: the destination's last axis is not it
    x = dev.view(dtype).reshape(lead, a, b).transpose(0, 2, 1)
    hx = host.view(dtype).reshape(lead, a, b).transpose(0, 2, 1)
    offs = [0, min(crop[0], b - 1), min(crop[1], a - 1)]
    sizes = [lead, b - offs[1], a - offs[2]]
    strides = [1, -1 if flip else 1, 1]
    launches.clear()
    got = dmlops.slice1(x, offs, sizes, strides)
    want = hx[:, offs[1] :, offs[2] :]
    if flip:
        want = want[:, ::-1]
    _check(got, want)
    if min(sizes[1], sizes[2]) >= 16:
        assert "transpose" in _kernels(launches)


@settings(max_examples=40)
@given(
    dtype=st.sampled_from(DTYPES),
    rows=st.integers(1, 24),
    cols=st.integers(1, 600),
    step=st.sampled_from([2, 3, 4, -2, -3, -4, 5, -7]),
    offset=st.integers(0, 9),
    row_step=st.sampled_from([1, 2, -1]),
    seed=st.integers(0, 2**31),
)
def test_gather_fuzz(launches, dtype, rows, cols, step, offset, row_step, seed) -> None:  # type: ignore[no-untyped-def]
    item = np.dtype(dtype).itemsize
    host, dev = _random_buffer(rows * cols * item, seed)
    x = dev.view(dtype).reshape(rows, cols)
    hx = host.view(dtype).reshape(rows, cols)
    off = min(offset, cols - 1)
    launches.clear()
    got = dmlops.slice1(x, [0, off], [rows, cols - off], [row_step, step])
    want = hx[::row_step, off:][:, ::step]
    _check(got, want)
    assert _kernels(launches) <= {"strided", "rows", "transpose", "pack"}


@settings(max_examples=30)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(2, 7), min_size=5, max_size=8),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_high_rank_fuzz(launches, dtype, shape, data, seed) -> None:  # type: ignore[no-untyped-def]
    item = np.dtype(dtype).itemsize
    n = int(np.prod(shape))
    host, dev = _random_buffer(n * item, seed)
    x = dev.view(dtype).reshape(shape)
    hx = host.view(dtype).reshape(shape)
    offs = [data.draw(st.integers(0, s - 1)) for s in shape]
    sizes = [data.draw(st.integers(1, s - o)) for s, o in zip(shape, offs)]
    steps = [data.draw(st.sampled_from([1, 1, -1, 2])) for _ in shape]
    got = dmlops.slice1(x, offs, sizes, steps)
    want = hx[tuple(slice(o, o + s) for o, s in zip(offs, sizes))][
        tuple(slice(None, None, t) for t in steps)
    ]
    _check(got, want)


@settings(max_examples=40)
@given(
    dtype=st.sampled_from([np.int8, np.float16, np.float32]),
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    start=st.integers(0, 7),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_pack_fuzz(launches, dtype, shape, start, data, seed) -> None:  # type: ignore[no-untyped-def]
    """Windows of any rank, step and sign read from a misaligned start into a new
    (contiguous) output: the pack kernel where it is chosen, bit-exact everywhere."""
    item = np.dtype(dtype).itemsize
    n = int(np.prod(shape))
    host, dev = _random_buffer((n + start) * item, seed)
    x = dev.view(dtype)[start : start + n].reshape(shape)
    hx = host.view(dtype)[start : start + n].reshape(shape)
    offs = [data.draw(st.integers(0, s - 1)) for s in shape]
    sizes = [data.draw(st.integers(1, s - o)) for s, o in zip(shape, offs, strict=True)]
    steps = [data.draw(st.sampled_from([1, -1, 2, -3, 5])) for _ in shape]
    launches.clear()
    got = dmlops.slice1(x, offs, sizes, steps)
    want = hx[tuple(slice(o, o + s) for o, s in zip(offs, sizes, strict=True))][
        tuple(slice(None, None, t) for t in steps)
    ]
    _check(got, want)
    assert _kernels(launches) <= {"strided", "rows", "transpose", "pack"}


def test_each_strategy_is_chosen_and_exact(launches) -> None:  # type: ignore[no-untyped-def]
    import cupy

    host = (
        np.random.default_rng(1).integers(0, 2**16, (512, 1030), dtype=np.uint16).view(np.float16)
    )
    x = cupy.asarray(host)
    cases = {
        "rows": (lambda a: a[:, 3:1003], lambda a: dmlops.slice(a, [0, 3], [512, 1000], [1, 1])),
        "transpose": (
            lambda a: a.T[5:900, 7:500],
            lambda a: dmlops.slice(a.T, [5, 7], [895, 493], [1, 1]),
        ),
        "strided": (
            lambda a: a[:, :1024:2],
            lambda a: dmlops.slice1(a, [0, 0], [512, 1024], [1, 2]),
        ),
        "pack (a step of 3 whose vectors do not fit: rows of 343 elements)": (
            lambda a: a[:, :1029:3],
            lambda a: dmlops.slice1(a, [0, 0], [512, 1029], [1, 3]),
        ),
        "pack (short misaligned rows, a tail vector cut short)": (
            lambda a: a[1:102, 1:22],
            lambda a: dmlops.slice(a, [1, 1], [101, 21], [1, 1]),
        ),
    }
    for kernel, (view, run) in cases.items():
        launches.clear()
        _check(run(x), view(host))
        assert [g.kernel for g in launches] == [kernel.split()[0]]
    launches.clear()
    _check(dmlops.slice1(x, [0, 0], [512, 1024], [1, -2]), host[:, 1023::-2])
    (group,) = launches
    assert dict(group.defines)["GATHER"] == 2 and dict(group.defines)["REVERSE"] == 1


@pytest.mark.parametrize("merge", [True, False])
def test_small_plans_are_exact_in_one_launch_or_per_strategy(launches, monkeypatch, merge) -> None:  # type: ignore[no-untyped-def]
    import cupy

    from dmlops.backends.cuda import strategies
    from dmlops.functional import clear_cache

    if not merge:
        monkeypatch.setattr(strategies, "MERGE_ELEMENTS", 0)
    clear_cache()
    rng = np.random.default_rng(3)
    for dtype in DTYPES:
        host = rng.integers(0, 256, (2, 37, 403 * np.dtype(dtype).itemsize), np.uint8)
        host = host.view(dtype)[..., :401]
        x = cupy.asarray(host)
        cases = [
            (lambda a: dmlops.tril(a), np.tril(host)),
            (lambda a: dmlops.triu(a, -3), np.triu(host, -3)),
            (lambda a: dmlops.split(a, 2, [1, 397, 3])[1], host[..., 1:398]),
            (
                lambda a: dmlops.join([a[0].T, a[1, :, :5].T], 0),
                np.concatenate([host[0].T, host[1, :, :5].T]),
            ),
        ]
        for run, want in cases:
            launches.clear()
            _check(run(x), want)
            strided = [g for g in launches if g.kernel != "transpose"]
            if merge:
                assert len(strided) == 1
    if not merge:  # (the same plans, per strategy: several launches)
        launches.clear()
        dmlops.tril(cupy.asarray(host))
        assert len(launches) > 1
