"""Indexed operators inside one graph: a gather composes with the strided nodes around it into
one pass (its index reads stepped, cut and moved with its output), scatters write after their
output's pieces, and everything matches element-by-element loops, bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlops import BufferTensorDesc, DataType, DmlError, Graph
from dmlops.ops import OneHotDesc, ReverseSubsequencesDesc
from dmlops.tensor import packed_strides
from test_graph import _bits, _run


def _coords(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(n) for n in shape)))


def naive_gather(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """out[a, j, b] = x[a, idx[j], b], one element at a time (negative indices from the end)."""
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    out = np.empty(shape, x.dtype)
    for c in _coords(shape):
        j = c[axis : axis + idx.ndim]
        k = int(idx[j])
        k = k + x.shape[axis] if k < 0 else k
        out[c] = x[(*c[:axis], k, *c[axis + idx.ndim :])]
    return out


def naive_gather_elements(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    out = np.empty(idx.shape, x.dtype)
    for c in _coords(idx.shape):
        k = int(idx[c])
        k = k + x.shape[axis] if k < 0 else k
        out[c] = x[(*c[:axis], k, *c[axis + 1 :])]
    return out


def naive_scatter_elements(
    x: np.ndarray, idx: np.ndarray, updates: np.ndarray, axis: int
) -> np.ndarray:
    out = x.copy()
    for c in _coords(idx.shape):
        k = int(idx[c])
        k = k + x.shape[axis] if k < 0 else k
        out[(*c[:axis], k, *c[axis + 1 :])] = updates[c]
    return out


def _one_pass(graph: Graph, outputs: list) -> None:  # type: ignore[type-arg]
    assert graph.intermediates(outputs) == []
    plan = graph.plan(outputs)
    assert plan.indexed, "the gather is not in the plan"


def test_gather_transpose_slice_is_one_pass(backend: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5, 4), dtype=np.float32)
    idx = rng.integers(-6, 6, size=(7,)).astype(np.int64)
    g = Graph()
    xi, ii = g.input(x), g.input(idx)
    gathered = g.gather(xi, g.reinterpret(ii, [1, 1, 7]), axis=0, index_dimensions=1)
    assert gathered.sizes == (7, 5, 4)
    # transpose to [4, 7, 5]: a view of the packed gather output
    p = packed_strides((7, 5, 4))
    moved = g.identity(g.reinterpret(gathered, [4, 7, 5], [p[2], p[0], p[1]]))
    out = g.slice1(moved, [1, 0, 0], [3, 7, 5], [1, -2, 2])
    _one_pass(g, [out])
    _, (got,) = _run(g, [out], [x, idx], backend)
    want = naive_gather(x, idx, 0).transpose(2, 0, 1)[1:4, ::-2, ::2]
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_gather_then_join_and_split_keep_index_reads(backend: str) -> None:
    rng = np.random.default_rng(2)
    table = rng.standard_normal((10, 8), dtype=np.float32)
    ids = rng.integers(0, 10, size=(1, 6)).astype(np.int32)
    g = Graph()
    ti, ii = g.input(table), g.input(ids)
    rows = g.gather(ti, ii, axis=0, index_dimensions=1)  # [6, 8]
    left, right = g.split(rows, 1, [3, 5])
    both = g.join([right, left, rows], 1)  # [6, 16]
    _one_pass(g, [both, left])
    _, (got, got_left) = _run(g, [both, left], [table, ids], backend)
    gathered = naive_gather(table, ids[0], 0)
    want = np.concatenate([gathered[:, 3:], gathered[:, :3], gathered], 1)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(_bits(got_left), _bits(gathered[:, :3]))


def test_indices_read_through_a_view_of_an_input(backend: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 9), dtype=np.float32)
    both = rng.integers(0, 9, size=(5, 8)).astype(np.int64)
    g = Graph()
    xi, bi = g.input(x), g.input(both)
    picked = g.slice1(bi, [0, 1], [5, 6], [1, -2])  # [5, 3]: every other index, reversed
    out = g.gather_elements(xi, picked, axis=1)
    _one_pass(g, [out])
    _, (got,) = _run(g, [out], [x, both], backend)
    np.testing.assert_array_equal(got, naive_gather_elements(x, both[:, 1:7][:, ::-2], 1))


def test_gather_of_a_join_reads_a_materialised_table(backend: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4), dtype=np.float32)
    b = rng.standard_normal((2, 4), dtype=np.float32)
    idx = np.array([[4], [0], [3], [4]], np.uint32)
    g = Graph()
    ai, bi, ii = g.input(a), g.input(b), g.input(idx)
    table = g.join([ai, bi], 0)
    out = g.gather(table, g.reinterpret(ii, [1, 4]), axis=0, index_dimensions=1)
    assert len(g.intermediates([out])) == 1
    _, (got,) = _run(g, [out], [a, b, idx], backend)
    want = naive_gather(np.concatenate([a, b]), idx[:, 0], 0)
    np.testing.assert_array_equal(got, want)


def test_gather_nd_in_a_graph(backend: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 5), dtype=np.float32)
    idx = np.array([[[1, 2], [0, 0]], [[3, 1], [2, 2]]], np.int64)  # [2, 2, 2]
    g = Graph()
    xi, ii = g.input(x), g.input(idx)
    out = g.gather_nd(xi, ii)  # [2, 2, 5]
    flipped = g.slice1(out, [0, 0, 0], [2, 2, 5], [-1, 1, -1])
    _one_pass(g, [flipped])
    _, (got,) = _run(g, [flipped], [x, idx], backend)
    want = np.empty((2, 2, 5), np.float32)
    for i, j in _coords((2, 2)):
        want[i, j] = x[tuple(idx[i, j])]
    np.testing.assert_array_equal(got, want[::-1, :, ::-1])


def test_scatter_writes_after_its_pieces_and_is_materialised_when_read(backend: str) -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 6), dtype=np.float32)
    idx = np.array([[3, 0], [1, 1], [0, 2], [2, 3]], np.int64)
    upd = rng.standard_normal((4, 2), dtype=np.float32)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    flipped = g.slice1(xi, [0, 0], [4, 6], [-1, 1])
    written = g.scatter_elements(flipped, ii, ui, axis=1)
    assert g.intermediates([written]) == []
    tail = g.slice(written, [0, 2], [4, 4], [1, 1])
    assert len(g.intermediates([tail])) == 1
    _, (got, got_tail) = _run(g, [written, tail], [x, idx, upd], backend)
    want = naive_scatter_elements(x[::-1], idx, upd, 1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_tail, want[:, 2:])


def test_scatter_nd_into_a_padded_tensor(backend: str) -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    idx = np.array([[0, 0], [4, 5]], np.int64)  # [2, 2]: two elements of the [5, 6] padded
    upd = np.array([[-1, -2]], np.int32).reshape(1, 2)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    padded = g.padding(xi, [1, 1], [1, 1], "CONSTANT", 7)
    out = g.scatter_nd(padded, ii, g.reinterpret(ui, [1, 2]))
    assert g.intermediates([out]) == []
    _, (got,) = _run(g, [out], [x, idx, upd], backend)
    want = np.pad(x, 1, constant_values=7)
    want[0, 0], want[4, 5] = -1, -2
    np.testing.assert_array_equal(got, want)


def _one_hot_and_reverse(g: Graph, idx: np.ndarray, seq: np.ndarray, lengths: np.ndarray) -> tuple:  # type: ignore[type-arg]
    """ONE_HOT of int32 `idx` ([rows, 1]) into depth 5 by values [0, 9], and
    REVERSE_SUBSEQUENCES of `seq` ([n, c], along n) by [c] uint32 `lengths`, as generic
    nodes on new graph inputs: (one-hot, reversed, the sequences' input, the arrays bound)."""
    values = np.array([0, 9], np.int32)
    ii, vi, si, li = (g.input(a) for a in (idx, values, seq, lengths))
    rows, (n, c) = idx.shape[0], seq.shape
    i32, element = DataType.INT32, DataType.INT32 if seq.dtype == np.int32 else DataType.FLOAT32
    (hot,) = g.operator(
        OneHotDesc(
            BufferTensorDesc(i32, (rows, 1)),
            BufferTensorDesc(i32, (1, 2)),
            BufferTensorDesc(i32, (rows, 5)),
            1,
        ),
        [ii, g.reinterpret(vi, [1, 2])],
    )
    (rev,) = g.operator(
        ReverseSubsequencesDesc(
            BufferTensorDesc(element, (1, 1, n, c)),
            BufferTensorDesc(DataType.UINT32, (1, 1, 1, c)),
            BufferTensorDesc(element, (1, 1, n, c)),
            2,
        ),
        [g.reinterpret(si, [1, 1, n, c]), g.reinterpret(li, [1, 1, 1, c])],
    )
    return hot, rev, si, [idx, values, seq, lengths]


def _one_hot_and_reverse_wanted(
    idx: np.ndarray, seq: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """What `_one_hot_and_reverse` gives, element by element (on-value 9, off 0)."""
    hot = np.zeros((idx.shape[0], 5), np.int32)
    for r, k in enumerate(idx[:, 0]):
        k = k + 5 if k < 0 else k
        if 0 <= k < 5:
            hot[r, k] = 9
    rev = seq.copy()
    for col, n in enumerate(lengths):
        rev[:n, col] = seq[:n, col][::-1]
    return hot, rev


def test_one_hot_and_reverse_through_the_generic_node(backend: str) -> None:
    idx = np.array([[2], [0], [5], [-1]], np.int32)  # 5 is out of range: no write
    seq = np.arange(12, dtype=np.float32).reshape(4, 3)
    lengths = np.array([3, 1, 0], np.uint32)
    g = Graph()
    hot, rev, _, arrays = _one_hot_and_reverse(g, idx, seq, lengths)
    _, (got_hot, got_rev) = _run(g, [hot, rev], arrays, backend)
    want_hot, want_rev = _one_hot_and_reverse_wanted(idx, seq, lengths)
    np.testing.assert_array_equal(got_hot, want_hot)
    np.testing.assert_array_equal(got_rev.reshape(4, 3), want_rev)


def test_out_of_range_index_raises_and_leaves_outputs_untouched() -> None:
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    idx = np.array([1, 4], np.int64)
    g = Graph()
    xi, ii = g.input(x), g.input(idx)
    rows = g.gather(xi, g.reinterpret(ii, [1, 2]), axis=0, index_dimensions=1)
    also = g.slice(xi, [0, 0], [2, 2], [1, 1])
    op = g.compile([rows, also])
    outs = [np.full(16, 0xAB, np.uint8), np.full(16, 0xAB, np.uint8)]
    with pytest.raises(DmlError, match=r"GATHER\.IndicesTensor"):
        op.execute([x.reshape(-1).view(np.uint8), idx.view(np.uint8)], outs)
    assert all((o == 0xAB).all() for o in outs)


def test_mixed_types_gather_moves_whole_elements() -> None:
    rng = np.random.default_rng(7)
    wide = rng.standard_normal((5, 3)).astype(np.float64)
    narrow = rng.standard_normal((2, 3)).astype(np.float32)
    idx = np.array([4, -5, 2], np.int64)
    g = Graph()
    wi, ni, ii = g.input(wide), g.input(narrow), g.input(idx)
    rows = g.gather(wi, g.reinterpret(ii, [1, 3]), axis=0, index_dimensions=1)
    flipped = g.slice1(rows, [0, 0], [3, 3], [-1, 1])
    copied = g.identity(ni)
    _, (got, got_narrow) = _run(g, [flipped, copied], [wide, narrow, idx])
    np.testing.assert_array_equal(got, naive_gather(wide, idx, 0)[::-1])
    np.testing.assert_array_equal(got_narrow, narrow)


def test_generic_node_checks_its_inputs() -> None:
    g = Graph()
    xi = g.input(np.zeros((2, 3), np.float32))
    f32 = DataType.FLOAT32
    desc = ReverseSubsequencesDesc(
        BufferTensorDesc(f32, (1, 1, 2, 4)),
        BufferTensorDesc(DataType.UINT32, (1, 1, 1, 4)),
        BufferTensorDesc(f32, (1, 1, 2, 4)),
        2,
    )
    with pytest.raises(DmlError, match=r"node 0 \(REVERSE_SUBSEQUENCES\): 1 inputs given"):
        g.operator(desc, [xi])
    li = g.input(np.zeros((1, 1, 1, 4), np.uint32))
    with pytest.raises(DmlError, match=r"InputTensor is FLOAT32 \[1, 1, 2, 4\]: the graph"):
        g.operator(desc, [xi, li])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_gather_chains_match_element_loops(data: st.DataObject) -> None:
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(0, rank - 1))
    count = data.draw(st.integers(1, 5))
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count)))
    idx = idx.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    dtype = data.draw(st.sampled_from([np.uint8, np.float16, np.float32, np.float64]))
    x = np.arange(int(np.prod(shape)), dtype=np.uint64).astype(dtype).reshape(shape)
    g = Graph()
    xi, ii = g.input(x), g.input(idx)
    index_shape = (1,) * (rank - 1) + (count,)
    out = g.gather(xi, g.reinterpret(ii, index_shape), axis=axis, index_dimensions=1)
    want = naive_gather(x, idx, axis)
    # then a window with random steps, flips included
    sizes = out.sizes
    offsets = [data.draw(st.integers(0, s - 1)) for s in sizes]
    windows = [data.draw(st.integers(1, s - o)) for s, o in zip(sizes, offsets, strict=True)]
    steps = [data.draw(st.sampled_from([1, 2, -1, -2])) for _ in sizes]
    cut = g.slice1(out, offsets, windows, steps)
    window = tuple(slice(o, o + w) for o, w in zip(offsets, windows, strict=True))
    want = want[window][tuple(slice(None, None, s) for s in steps)]
    _one_pass(g, [cut])
    _, (got,) = _run(g, [cut], [x, idx])
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_a_reshaped_scatter_result_is_still_one_pass(backend: str) -> None:
    """A plain reshape of a scatter's output keeps its bytes: written in place, no copy."""
    x = np.arange(24, dtype=np.float32).reshape(1, 4, 6)
    idx = np.array([[[2], [0]]], np.int64)  # [1, 2, 1]
    upd = -np.arange(12, dtype=np.float32).reshape(1, 2, 6)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    written = g.scatter_nd(g.reinterpret(xi, [4, 6]), g.reinterpret(ii, [2, 1]),
                           g.reinterpret(ui, [2, 6]))  # fmt: skip
    flat = g.reinterpret(written, [24])
    assert g.intermediates([flat]) == []
    _, (got,) = _run(g, [flat], [x, idx, upd], backend)
    want = x.reshape(4, 6).copy()
    want[2], want[0] = upd[0, 0], upd[0, 1]
    np.testing.assert_array_equal(got, want.reshape(-1))


def test_a_scatter_placed_whole_writes_where_it_lands(backend: str) -> None:
    """ONNX ScatterElements with fewer index rows than data: the window scattered, then the
    rest joined on. The join places the scattered window whole, so its indexed writes land
    in the join's output directly: one pass, duplicates' later row winning as before."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 7), dtype=np.float32)
    idx = np.array([[6, 0], [2, 3], [2, 4]], np.int64)  # [3, 2]: a window of rows and columns
    upd = rng.standard_normal((3, 2), dtype=np.float32)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    window = g.slice(xi, [0, 0], [3, 7], [1, 1])
    written = g.scatter_elements(window, ii, ui, axis=1)
    rows = g.join([written, g.slice(xi, [3, 0], [2, 7], [1, 1])], 0)
    assert g.intermediates([rows]) == []
    twice = g.join([rows, rows], 1)  # the joined result placed again, twice
    assert g.intermediates([twice]) == []
    tiled = g.tile(written, [2, 1])  # every repeat a whole placement
    assert g.intermediates([tiled]) == []
    _, (got, got_twice, got_tiled) = _run(g, [rows, twice, tiled], [x, idx, upd], backend)
    want = x.copy()
    want[:3] = naive_scatter_elements(x[:3], idx, upd, 1)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    np.testing.assert_array_equal(_bits(got_twice), _bits(np.concatenate([want, want], 1)))
    np.testing.assert_array_equal(_bits(got_tiled), _bits(np.tile(want[:3], (2, 1))))


def test_a_scatter_read_in_part_by_a_join_is_materialised(backend: str) -> None:
    """A join that reads a scatter's output through a cut view (not whole) needs its
    bytes first: one intermediate, and the same values."""
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    idx = np.array([[1], [0]], np.int64)
    upd = -np.arange(12, dtype=np.int32).reshape(2, 6)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    written = g.scatter_nd(xi, ii, ui)
    half = g.join([g.slice(written, [0, 0], [2, 6], [1, 1]), xi], 0)
    assert len(g.intermediates([half])) == 1
    _, (got,) = _run(g, [half], [x, idx, upd], backend)
    want = x.copy()
    want[1], want[0] = upd[0], upd[1]
    np.testing.assert_array_equal(got, np.concatenate([want[:2], x], 0))


def test_one_hot_and_reverse_placed_whole_are_one_pass(backend: str) -> None:
    """Writes that fill their output (ONE_HOT's on-values over its fill, a reversal's
    moved rows) placed whole by a join: one pass, each element written as alone."""
    idx = np.array([[2], [0], [4]], np.int32)
    seq = np.arange(15, dtype=np.int32).reshape(5, 3)
    lengths = np.array([3, 1, 5], np.uint32)
    g = Graph()
    hot, rev, si, arrays = _one_hot_and_reverse(g, idx, seq, lengths)
    hots = g.join([hot, hot], 0)
    revs = g.join([rev, g.reinterpret(si, [1, 1, 5, 3])], 3)
    assert g.intermediates([hots]) == [] and g.intermediates([revs]) == []
    _, (got_hots, got_revs) = _run(g, [hots, revs], arrays, backend)
    want_hot, want_rev = _one_hot_and_reverse_wanted(idx, seq, lengths)
    np.testing.assert_array_equal(got_hots, np.concatenate([want_hot, want_hot], 0))
    np.testing.assert_array_equal(got_revs.reshape(5, 6), np.concatenate([want_rev, seq], 1))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_scatters_placed_whole_match_element_loops(data: st.DataObject) -> None:
    """A scatter into a random window of a 2-D or 3-D tensor (duplicate targets included),
    then placed whole by joins with the rest and with other tensors, tiled or not: one pass,
    and every element as a loop over the steps writes it."""
    rank = data.draw(st.integers(2, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(0, rank - 1))
    window = tuple(n if d == axis else data.draw(st.integers(1, n)) for d, n in enumerate(shape))
    dtype = data.draw(st.sampled_from([np.uint8, np.float16, np.float32, np.int32]))
    x = np.arange(int(np.prod(shape)), dtype=np.uint64).astype(dtype).reshape(shape)
    n = shape[axis]
    idx_shape = tuple(
        data.draw(st.integers(1, n)) if d == axis else w for d, w in enumerate(window)
    )
    count = int(np.prod(idx_shape))
    idx = np.array(
        data.draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count)), np.int64
    ).reshape(idx_shape)
    upd = (100 + np.arange(count)).astype(dtype).reshape(idx_shape)
    g = Graph()
    xi, ii, ui = g.input(x), g.input(idx), g.input(upd)
    part = g.slice(xi, [0] * rank, list(window), [1] * rank)
    out = g.scatter_elements(part, ii, ui, axis=axis)
    want = x.copy()
    region = tuple(slice(0, w) for w in window)
    want[region] = naive_scatter_elements(x[region], idx, upd, axis)
    for d in reversed(range(rank)):  # the rest of the data joined on, as ONNX lowers it
        if window[d] < shape[d]:
            at = [0] * rank
            at[d] = window[d]
            sizes = [*window[:d], shape[d] - window[d], *shape[d + 1 :]]
            out = g.join([out, g.slice(xi, at, sizes, [1] * rank)], d)
            window = (*window[:d], shape[d], *window[d + 1 :])
    if data.draw(st.booleans()):  # placed again, after the data
        along = data.draw(st.integers(0, rank - 1))
        out = g.join([xi, out], along)
        want = np.concatenate([x, want], along)
    if data.draw(st.booleans()):  # each repeat a whole placement
        repeats = [data.draw(st.integers(1, 2)) for _ in range(rank)]
        out = g.tile(out, repeats)
        want = np.tile(want, repeats)
    assert g.intermediates([out]) == []
    _, (got,) = _run(g, [out], [x, idx, upd])
    np.testing.assert_array_equal(_bits(got), _bits(want))
