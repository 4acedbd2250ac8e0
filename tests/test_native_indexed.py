"""Indexed copies on the CPU engine's native kernel (backends/native_indexed.py,
native/indexed.c): each gather form (single elements by a shared index row, by an index
each, whole rows, index tuples, clamped indices, reversed subsequences) and scatters (rows
and elements, repeated places: the later row stays, index tuples, clamped) against naive
references, on one thread and on the pool, every element and index size; a bad index writes
nothing and is named; an output that meets an input takes the ordered path; a table reaching
outside its buffers is refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dmlops
from dmlops.backends import cpu_engine
from dmlops.backends.native_indexed import NativeIndexed
from dmlops.errors import IndexOutOfRangeError

pytestmark = pytest.mark.skipif(cpu_engine.native() is None, reason="the engine is not built")

DTYPES = [np.uint8, np.float16, np.float32, np.int64]
INDEX_TYPES = [np.int32, np.uint32, np.int64, np.uint64]


@pytest.fixture(params=[1, 4], ids=["one-thread", "pool"])
def threads(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    before = dmlops.get_num_threads()
    dmlops.set_num_threads(request.param)
    dmlops.functional.clear_cache()
    yield request.param
    dmlops.set_num_threads(before)
    dmlops.functional.clear_cache()


def _values(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    """Random bits of every element (NaN payloads and -0.0 included for floats)."""
    rng = np.random.default_rng(seed)
    size = np.dtype(dtype).itemsize
    raw = rng.integers(0, 256, int(np.prod(shape)) * size, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _natives_ran() -> bool:
    """Whether the last compiled call's plan ran its gathers natively."""
    (entry,) = list(dmlops.calls._CACHE.items.values())[-1:]
    return entry[0].run.natives is not None


def _index(rng: np.random.Generator, size: int, shape: tuple[int, ...], itype: type) -> np.ndarray:
    """Indices into an axis of `size`, negative ones too for signed types."""
    low = -size if np.dtype(itype).kind == "i" else 0
    return rng.integers(low, size, shape).astype(itype)


def _wrapped(idx: np.ndarray, size: int) -> np.ndarray:
    k = idx.astype(np.int64)
    return np.where(k < 0, k + size, k)


def _naive_gather(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    k = _wrapped(idx, x.shape[axis])
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        a, j, b = c[:axis], c[axis : axis + idx.ndim], c[axis + idx.ndim :]
        out[c] = x[(*a, int(k[j]), *b)]
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", INDEX_TYPES)
def test_an_inner_axis_by_a_shared_index_row(threads: int, dtype: type, itype: type) -> None:
    """GATHER along the last axis: every row reads the same indices (the shared form)."""
    rng = np.random.default_rng(1)
    x = _values((1500, 3, 37), dtype)  # 1.3 MiB of int64 output: pieces on the pool
    idx = _index(rng, 37, (2, 25), itype)
    got = dmlops.gather(x, idx, 2)
    assert _natives_ran()
    want = np.take(x, _wrapped(idx, 37), 2)
    assert got.tobytes() == want.tobytes()
    small = x[:3, :2]
    assert dmlops.gather(small, idx, 2).tobytes() == _naive_gather(small, idx, 2).tobytes()


@pytest.mark.parametrize("grain", [16, 1 << 14])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_shared_index_row_over_many_whole_rows(threads: int, dtype: type, grain: int) -> None:
    """The shared form's whole rows in one loop (as many as a piece and the dimension
    before hold): pieces cut inside rows (16-byte grains) and of many rows, a source whose
    rows lie backwards and apart, outputs contiguous and strided (out=); the naive bytes."""
    rng = np.random.default_rng(21)
    x = _values((7, 60, 40), dtype)[:, ::-2]  # rows 2 apart, backwards
    idx = _index(rng, 40, (13,), np.int64)
    want = _naive_gather(x, idx, 2)
    try:
        cpu_engine.configure(least_grain=grain, most_grain=max(grain, 64))
        got = dmlops.gather(x, idx, 2)
        assert _natives_ran()
        assert got.tobytes() == want.tobytes()
        held = np.zeros((7, 30, 2 * 13), dtype)
        out = held[:, :, ::2]
        dmlops.gather(x, idx, 2, out=out)
        assert out.tobytes() == want.tobytes()
        assert not held[:, :, 1::2].any()
    finally:
        cpu_engine.configure(
            least_grain=cpu_engine.DEFAULTS["least_grain"],
            most_grain=cpu_engine.DEFAULTS["most_grain"],
        )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", INDEX_TYPES)
def test_gather_elements_an_index_each(threads: int, dtype: type, itype: type) -> None:
    rng = np.random.default_rng(2)
    x = _values((3000, 70), dtype)
    idx = _index(rng, 70, (3000, 41), itype)
    got = dmlops.gather_elements(x, idx, 1)
    assert _natives_ran()
    assert got.tobytes() == np.take_along_axis(x, _wrapped(idx, 70), 1).tobytes()
    # along the outer axis, from a source with negative strides
    y = x[::-1, ::-3]
    idx0 = _index(rng, 3000, (50, 24), itype)
    got0 = dmlops.gather_elements(y, idx0, 0)
    assert got0.tobytes() == np.take_along_axis(y, _wrapped(idx0, 3000), 0).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("row", [1, 3, 8, 13, 64, 100, 191, 257])
@pytest.mark.parametrize("wide", [1, 0])
def test_whole_rows_of_every_length(threads: int, dtype: type, row: int, wide: int) -> None:
    """GATHER along the outer axis: rows of 1 to 257 elements (fixed-size moves: 16-byte
    ones, 32-byte ones where the CPU has AVX2 and `wide_vectors` allows them, rows of other
    lengths from 32 bytes in 32-byte moves there too; memcpy), from a
    contiguous table and from a transposed one (rows of strided elements)."""
    rng = np.random.default_rng(3)
    table = _values((4000, row), dtype)
    idx = _index(rng, 4000, (3000,), np.int64)
    try:
        cpu_engine.configure(wide_vectors=wide)
        got = dmlops.gather(table, idx, 0)
    finally:
        cpu_engine.configure(wide_vectors=1)
    assert got.tobytes() == np.take(table, _wrapped(idx, 4000), 0).tobytes()
    columns = _values((row, 900), dtype, seed=4).T  # rows whose elements are 900 apart
    idx_t = _index(rng, 900, (700,), np.int32)
    got_t = dmlops.gather(columns, idx_t, 0)
    assert got_t.tobytes() == np.take(columns, _wrapped(idx_t, 900), 0).tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64])
def test_index_tuples_and_batch_dimensions(threads: int, dtype: type) -> None:
    """GATHER_ND: tuples of two and three indices (the general form), with batch dims."""
    rng = np.random.default_rng(5)
    x = _values((40, 30, 20, 16), dtype)
    idx = np.stack([_index(rng, 40, (900,), np.int64), _index(rng, 30, (900,), np.int64)], -1)
    got = dmlops.gather_nd(x, idx)
    k = [_wrapped(idx[:, t], x.shape[t]) for t in range(2)]
    assert got.tobytes() == x[k[0], k[1]].tobytes()
    assert _natives_ran()
    idx3 = np.stack([_index(rng, n, (40, 50), np.int32) for n in (30, 20, 16)], -1)
    got3 = dmlops.gather_nd(x, idx3, batch_dims=1)
    k3 = [_wrapped(idx3[..., t], n) for t, n in enumerate((30, 20, 16))]
    want3 = x[np.arange(40)[:, None], k3[0], k3[1], k3[2]]
    assert got3.tobytes() == want3.tobytes()


def test_clamped_indices(threads: int) -> None:
    """WebNN's clamp: out-of-range indices clamped into the axis (no error, nothing skipped)."""
    x = _values((2000, 50), np.float32)
    idx = np.array([-70, -50, -1, 0, 49, 50, 1 << 40], np.int64)
    got = dmlops.gather(x, idx, 1, clamp_indices=True)
    clamped = np.clip(idx, -50, 49)
    assert got.tobytes() == np.take(x, _wrapped(clamped, 50), 1).tobytes()


def test_reversed_subsequences(threads: int) -> None:
    rng = np.random.default_rng(6)
    seq = _values((300, 64, 24), np.float16)
    lengths = rng.integers(0, 320, 64).astype(np.int64)  # (some past the axis: clamped)
    got = dmlops.reverse_subsequences(seq, lengths, 0, 1)
    want = seq.copy()
    for b, n in enumerate(np.minimum(lengths, 300)):
        want[:n, b] = seq[:n, b][::-1]
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("wide", [1, 0])
def test_rows_forwards_at_every_length(threads: int, dtype: type, wide: int) -> None:
    """Whole rows that move one at a time (reversed subsequences, scattered rows): rows of 1
    to over 4 KiB, 4 KiB exactly among them (where memcpy would copy backwards), forwards in
    32-byte moves where the CPU has AVX2 and `wide_vectors` allows them, else memcpy; the
    element-by-element answers."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(24)
    try:
        cpu_engine.configure(wide_vectors=wide)
        for nbytes in (8, 24, 40, 100, 300, 1000, 4096, 5000):
            width = max(1, nbytes // size)
            seq = _values((12, 5, width), dtype)
            lengths = rng.integers(0, 13, 5).astype(np.int32)
            got = dmlops.reverse_subsequences(seq, lengths, 0, 1)
            want = np.empty_like(seq)
            for t in range(12):
                for b in range(5):
                    for j in range(width):
                        source = lengths[b] - 1 - t if t < lengths[b] else t
                        want[t, b, j] = seq[source, b, j]
            assert got.tobytes() == want.tobytes(), nbytes
            data = _values((30, width), dtype)
            idx = _index(rng, 30, (20, 1), np.int64)
            updates = _values((20, width), dtype, seed=12)
            got_s = dmlops.scatter_nd(data, idx, updates)
            assert got_s.tobytes() == _naive_scatter_rows(data, idx, updates).tobytes(), nbytes
    finally:
        cpu_engine.configure(wide_vectors=1)


@pytest.mark.parametrize("where", [0, -1])
def test_a_bad_index_writes_nothing_and_is_named(threads: int, where: int) -> None:
    """The check runs before any row moves (on the pool, the bad index in its first or its
    last piece): out= stays as it was, and the error names the index."""
    x = _values((4000, 64), np.float32)
    idx = np.random.default_rng(7).integers(0, 64, (4000, 64)).astype(np.int32)
    idx[where, where] = 64
    out = np.full((4000, 64), 7.0, np.float32)
    with pytest.raises(IndexOutOfRangeError, match=r"is 64, outside \[-64, 64\)"):
        dmlops.gather_elements(x, idx, 1, out=out)
    assert (out == 7.0).all()
    with pytest.raises(IndexOutOfRangeError):
        dmlops.gather_elements(x, idx, 1)


def test_an_output_that_meets_its_input_takes_the_ordered_path(threads: int) -> None:
    x = _values((256, 256), np.float32)
    source = x.copy()
    idx = np.random.default_rng(8).permutation(256).astype(np.int32)
    dmlops.gather(x, idx, 0, out=x)  # (in place: every row read before it is overwritten)
    assert x.tobytes() == source[idx].tobytes()


def test_a_table_outside_its_buffers_is_refused() -> None:
    """The kernel checks every place it may reach against the buffers' lengths first."""
    from dmlops.backends.compiled_indexed import indexed_meta
    from dmlops.indexed import IndexAxis, IndexedCopy
    from dmlops.tensor import DataType

    copy = IndexedCopy(
        "GATHER.IndicesTensor", 0, 0, (0, 0), 0, 0, (4, 1), (3, 4), 1, DataType.INT32, 0,
        (0, 1), 1, (IndexAxis(10, 4),), False, (0, 160),
    )  # fmt: skip
    gather = NativeIndexed.of(copy, 4)
    assert gather is not None
    src = np.arange(40, dtype=np.float32)
    idx = np.array([9, 0, 3, 1], np.int32)
    out = np.zeros(12, np.float32)
    assert gather.run([src, idx], [out], 2) is True
    assert out.reshape(3, 4).tolist() == [list(src.reshape(10, 4)[:, 0][[9, 0, 3, 1]])] * 3
    with pytest.raises(ValueError, match="outside its buffers"):
        gather.run([src[:36], idx], [out], 2)  # (axis 10 x 4 elements reaches element 36)
    with pytest.raises(ValueError, match="outside its buffers"):
        gather.run([src, idx[:3]], [out], 2)
    with pytest.raises(ValueError, match="outside its buffers"):
        gather.run([src, idx], [out[:11]], 2)
    meta = indexed_meta(copy, 4)
    with pytest.raises(ValueError, match=r"not an indexed copy's"):
        cpu_engine.native().indexed(meta[:-1], src, out, idx, 4, 1)  # (a word short)
    meta[3] = 1  # (as a scatter: the axis now reaches 40 elements of the 12-element output)
    with pytest.raises(ValueError, match="outside its buffers"):
        cpu_engine.native().indexed(meta, src, out, idx, 4, 1)


def _naive_scatter_rows(data: np.ndarray, idx: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """SCATTER_ND by a naive loop: each index tuple's row (or element), in index order."""
    out = data.copy()
    k = idx.shape[-1]
    for j in itertools.product(*(range(n) for n in idx.shape[:-1])):
        place = tuple(int(v) + (data.shape[t] if v < 0 else 0) for t, v in enumerate(idx[j]))
        out[place] = updates[j]
        assert len(place) == k
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("itype", INDEX_TYPES)
def test_scattered_rows_in_index_order(threads: int, dtype: type, itype: type) -> None:
    """SCATTER_ND of whole rows, places repeated (the later row stays), from updates with
    negative strides; index tuples of two (the general form)."""
    rng = np.random.default_rng(9)
    data = _values((3000, 24), dtype)
    idx = _index(rng, 3000, (2500, 1), itype)
    updates = _values((2500, 48), dtype, seed=10)[::-1, ::2]
    got = dmlops.scatter_nd(data, idx, updates)
    assert _natives_ran()
    assert got.tobytes() == _naive_scatter_rows(data, idx, updates).tobytes()
    pairs = np.stack([_index(rng, 3000, (700,), itype), _index(rng, 24, (700,), itype)], -1)
    values = _values((700,), dtype, seed=11)
    got2 = dmlops.scatter_nd(data, pairs, values)
    assert got2.tobytes() == _naive_scatter_rows(data, pairs, values).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
def test_scattered_elements_in_index_order(threads: int, dtype: type) -> None:
    rng = np.random.default_rng(12)
    data = _values((2000, 50), dtype)
    idx = rng.integers(-50, 50, (2000, 30)).astype(np.int64)  # (repeats in most rows)
    updates = _values((2000, 30), dtype, seed=13)
    got = dmlops.scatter_elements(data, idx, updates, 1)
    want = data.copy()
    for r in range(2000):
        for c in range(30):
            want[r, idx[r, c] % 50] = updates[r, c]
    assert got.tobytes() == want.tobytes()
    clamped = dmlops.scatter_elements(data, idx * 3, updates, 1, clamp_indices=True)
    want_c = data.copy()
    for r in range(2000):
        for c in range(30):
            want_c[r, int(np.clip(idx[r, c] * 3, -50, 49)) % 50] = updates[r, c]
    assert clamped.tobytes() == want_c.tobytes()


def test_a_bad_scatter_index_writes_nothing(threads: int) -> None:
    """Every index checked before the data is copied into out= or any row moves."""
    data = _values((3000, 16), np.float32)
    idx = np.random.default_rng(14).integers(0, 3000, (2000, 1)).astype(np.int64)
    idx[-1, 0] = 3000
    out = np.full((3000, 16), 5.0, np.float32)
    with pytest.raises(IndexOutOfRangeError, match=r"is 3000, outside \[-3000, 3000\)"):
        dmlops.scatter_nd(data, idx, _values((2000, 16), np.float32), out=out)
    assert (out == 5.0).all()
    before = data.copy()
    with pytest.raises(IndexOutOfRangeError):
        dmlops.scatter_nd(data, idx, _values((2000, 16), np.float32), out=data)
    assert data.tobytes() == before.tobytes()
