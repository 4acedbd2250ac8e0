"""Small indexed copies compiled (backends/compiled_indexed.py): a plan compiles them once it
has run a few times; the compiled pass checks every index before it writes, keeps the later
of two rows aimed at one place, and agrees with numpy's path (and the naive references of
test_indexed.py, which run under the "numpy-compiled" backend too)."""

from __future__ import annotations

import numpy as np
import pytest

import dmlops
from dmlops.backends import compiled_indexed, numpy_backend
from dmlops.errors import IndexOutOfRangeError

pytestmark = pytest.mark.skipif(not compiled_indexed.available(), reason="no numba")


def _last_executor():  # type: ignore[no-untyped-def]
    """The numpy executor behind the functional call compiled last."""
    (entry,) = list(dmlops.calls._CACHE.items.values())[-1:]
    return entry[0].run


@pytest.fixture
def fresh():  # type: ignore[no-untyped-def]
    dmlops.functional.clear_cache()
    yield
    dmlops.functional.clear_cache()


def test_a_plan_compiles_its_indexed_copies_after_a_few_runs(fresh, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """(The engine's own indexed kernel off: numba's run where it is not built.)"""
    from dmlops.backends import native_indexed

    monkeypatch.setitem(native_indexed._STATE, "enabled", False)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    idx = np.array([[7, 0], [1, 1], [2, 6], [0, 3], [5, 4], [3, 1], [6, 2], [4, 7]])
    upd = -np.arange(16, dtype=np.float32).reshape(8, 2)
    want = x.copy()
    np.put_along_axis(want, idx, upd, 1)
    for run in range(numpy_backend._WARM_RUNS + 1):
        got = dmlops.scatter_elements(x, idx, upd, 1)
        assert got.tobytes() == want.tobytes()
        executor = _last_executor()
        compiled_now = executor.kernels is not None
        assert compiled_now == (run >= numpy_backend._WARM_RUNS - 1)


@pytest.mark.parametrize("backend", ["numpy-compiled"])
def test_the_later_row_wins_and_a_bad_index_writes_nothing(backend: str) -> None:
    x = np.zeros((4, 6), np.float32)
    idx = np.array([[1, 1, 5], [0, 2, 0], [3, 3, 3], [-1, -6, 4]])
    upd = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    dmlops.scatter_elements(x, idx, upd, 1, out=x)
    assert numpy_backend._WARM_RUNS == 1  # (this test's backend: compiled from the first run)
    assert x.tolist() == [
        [0, 2, 0, 0, 0, 3],
        [6, 0, 5, 0, 0, 0],
        [0, 0, 0, 9, 0, 0],
        [11, 0, 0, 0, 12, 10],
    ]
    before = x.copy()
    bad = idx.copy()
    bad[2, 1] = 6
    with pytest.raises(IndexOutOfRangeError, match=r"SCATTER_ELEMENTS.*is 6, outside \[-6, 6\)"):
        dmlops.scatter_elements(x, bad, upd, 1, out=x)
    assert x.tobytes() == before.tobytes()


@pytest.mark.parametrize("backend", ["numpy-compiled"])
@pytest.mark.parametrize("itype", [np.int32, np.uint32, np.int64, np.uint64])
def test_every_index_type_and_negative_strides(backend: str, itype: type) -> None:
    base = np.arange(40, dtype=np.float64).reshape(5, 8)
    x = base[::-1, ::-2]  # negative strides on both axes
    idx = np.array([[3, 0], [1, 2], [0, 0], [2, 3], [1, 1]], itype)
    got = dmlops.gather_elements(x, idx, 1)
    assert got.tobytes() == np.take_along_axis(x, idx.astype(np.int64), 1).tobytes()


@pytest.mark.parametrize("backend", ["numpy-compiled"])
def test_one_hot_reverse_and_scatter_nd_with_copies(backend: str) -> None:
    labels = np.array([0, 3, -1, 7, 2])  # -1 counts from the end, 7 is out of range: no hot
    got = dmlops.one_hot(labels, 4, np.array([-0.0, 1.5], np.float32))
    want = np.full((5, 4), -0.0, np.float32)
    for i, k in enumerate([0, 3, 3, None, 2]):
        if k is not None:
            want[i, k] = 1.5
    assert got.tobytes() == want.tobytes()
    seq = np.arange(24, dtype=np.int16).reshape(4, 3, 2)
    lengths = np.array([4, 0, 2])
    out = dmlops.reverse_subsequences(seq, lengths, 0, 1)
    want_r = seq.copy()
    for b, n in enumerate(lengths):
        want_r[:n, b] = seq[:n, b][::-1]
    assert out.tobytes() == want_r.tobytes()
    data = np.arange(12, dtype=np.uint8).reshape(4, 3)
    made = dmlops.scatter_nd(data, np.array([[2], [0], [2]]), np.full((3, 3), 99, np.uint8))
    want_s = data.copy()
    want_s[[2, 0]] = 99
    assert made.tobytes() == want_s.tobytes()
    assert data.tolist() == np.arange(12).reshape(4, 3).tolist()  # the input untouched


@pytest.mark.parametrize("backend", ["numpy-compiled"])
def test_a_new_output_with_a_bad_index_still_raises(backend: str) -> None:
    """Into new outputs the strided copies run before the indices are checked (no one sees
    those arrays): a bad index still raises, named, and the inputs stay as they were."""
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    upd = np.ones((2, 3), np.float32)
    made = dmlops.scatter_nd(data, np.array([[3], [1]]), upd)
    assert made[[1, 3]].tolist() == [[1.0] * 3] * 2
    with pytest.raises(IndexOutOfRangeError, match=r"SCATTER_ND.*is 4, outside \[-4, 4\)"):
        dmlops.scatter_nd(data, np.array([[3], [4]]), upd)
    assert data.tolist() == np.arange(12, dtype=np.float32).reshape(4, 3).tolist()


def test_bound_buffers_are_viewed_as_their_whole_elements() -> None:
    """A bound buffer as the kernels' flat array: an array's own bytes (written through),
    bytes read-only, and a length that is no multiple of the element cut to whole ones."""
    from dmlops.backends.compiled_indexed import _flat

    a = np.zeros((3, 3), np.float32)
    flat = _flat(a, np.dtype(np.uint32))
    flat[4] = 0x3F800000  # 1.0f
    assert flat.shape == (9,) and a[1, 1] == 1.0
    assert not _flat(b"abcd", np.dtype(np.uint8)).flags.writeable
    odd = _flat(bytearray(b"\x01\x00\x02\x00\x03"), np.dtype(np.uint16))
    assert odd.tolist() == [1, 2]


@pytest.mark.parametrize("backend", ["numpy-compiled"])
def test_the_plans_strided_copy_runs_in_the_kernel_call(backend: str) -> None:
    """A plan of one strided copy and one indexed copy (a scatter's data, one-hot's fill) runs
    both in one kernel call: data read through strides on every axis (the copy's odometer),
    the rows after it, a bad index writing nothing."""
    base = np.arange(6 * 10 * 4, dtype=np.float32).reshape(6, 10, 4)
    data = base[::-1, 1::3, ::-2]  # [6, 3, 2], strided and reversed
    idx = np.array([[5, 1], [0, 2], [5, 1]])
    upd = -np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    made = dmlops.scatter_nd(data, idx, upd)
    executor = _last_executor()
    assert executor.one_kernel is not None and executor.one_kernel.copy is not None
    want = data.copy()
    for (a, b), row in zip(idx, upd, strict=True):
        want[a, b] = row
    assert made.tobytes() == want.tobytes()
    bad = idx.copy()
    bad[1, 0] = 6
    with pytest.raises(IndexOutOfRangeError, match=r"SCATTER_ND.*is 6, outside \[-6, 6\)"):
        dmlops.scatter_nd(data, bad, upd)
    assert base.tobytes() == np.arange(240, dtype=np.float32).tobytes()
    hot = dmlops.one_hot(np.array([[1, -1], [4, 0]]), 3, np.array([np.nan, -0.0], np.float32))
    assert _last_executor().one_kernel.copy is not None  # the fill: a stride-0 read
    want_h = np.full((2, 2, 3), np.nan, np.float32)
    want_h[0, 0, 1] = want_h[0, 1, 2] = want_h[1, 1, 0] = -0.0
    assert hot.tobytes() == want_h.tobytes()


def test_lengths_of_other_types_become_uint32_through_numpy() -> None:
    """REVERSE_SUBSEQUENCES' lengths that are not read as they are (types the kernels do not
    read, the other byte order) become UINT32: negatives 0, past 2**32 - 1 clipped."""
    from dmlops.arrays.indexed import _read_as_is, _uint32_lengths

    lengths = np.array([-(2**63), -1, 0, 3, 2**32 - 1, 2**32, 2**63 - 1], ">i8")
    assert _read_as_is(lengths) is None
    made = _uint32_lengths(lengths)
    assert made.dtype == np.uint32
    assert made.tolist() == [0, 0, 0, 3, 2**32 - 1, 2**32 - 1, 2**32 - 1]
    small = np.array([-128, -1, 0, 3, 127], np.int8)
    assert _read_as_is(small) is None and _uint32_lengths(small).tolist() == [0, 0, 0, 3, 127]
    assert _read_as_is(np.array([1], np.int64)) is not None
