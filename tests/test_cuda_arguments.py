"""The CUDA backend's kernel arguments, checked on the CPU: CAST's and NONZERO's boxes passed
by value (`kernels/convert.cu`'s and `kernels/compact.cu`'s structs, word by word), and the
walk a converting launch makes over its boxes, emulated, against the copy's own pairs."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dmlops.backends.cuda.compact import _rows_walk
from dmlops.backends.cuda.convert import _boxes, box_walk, dense_strides
from dmlops.compaction import Compaction


def _pairs(
    shape: tuple[int, ...], src: tuple[int, ...], dst: tuple[int, ...]
) -> list[tuple[int, int]]:
    """Every (source, destination) element offset of a strided copy, naively."""
    return [
        (sum(c * s for c, s in zip(at, src)), sum(c * d for c, d in zip(at, dst)))
        for at in itertools.product(*map(range, shape))
    ]


def _walked(walk: np.ndarray, src_at: int, dst_at: int) -> list[tuple[int, int]]:
    """The pairs convert.cu's warps visit for a `Box` (its tiles' index arithmetic, in
    Python): a tile is 128 elements of one row's last dimension, four a lane."""
    rank = int(walk[25:].view(np.int32)[0])
    shape, src, dst = walk[1 : 1 + rank], walk[9 : 9 + rank], walk[17 : 17 + rank]
    last, inner = rank - 1, int(shape[rank - 1])
    chunks = -(-inner // 128)
    seen = []
    for t in range(int(walk[0]) // inner * chunks):
        row = t // chunks
        rest, frm, to = row, 0, 0
        for k in range(last - 1, 0, -1):
            c = rest % int(shape[k])
            rest //= int(shape[k])
            frm += c * int(src[k])
            to += c * int(dst[k])
        if last > 0:
            frm += rest * int(src[0])
            to += rest * int(dst[0])
        for lane in range(32):
            for k in range(4):
                c = (t - row * chunks) * 128 + lane + 32 * k
                if c < inner:
                    seen.append(
                        (src_at + frm + c * int(src[last]), dst_at + to + c * int(dst[last]))
                    )
    return seen


@given(st.data())
def test_a_converting_copy_walks_its_own_pairs(data: st.DataObject) -> None:
    rank = data.draw(st.integers(1, 10))  # (past eight: cut along the leading dimensions)
    sizes = st.integers(1, {1: 300, 2: 150}.get(rank, 3))
    shape = tuple(data.draw(st.lists(sizes, min_size=rank, max_size=rank)))
    src = tuple(data.draw(st.lists(st.integers(-40, 40), min_size=rank, max_size=rank)))
    dst = dense_strides(shape)
    if data.draw(st.booleans()):  # (a destination with negative and padded strides)
        dst = tuple(d * data.draw(st.sampled_from([-2, 1, 3])) for d in dst)
    walked: list[tuple[int, int]] = []
    for box_shape, s, d, src_at, dst_at in _boxes(shape, src, dst, 0, 0):
        assert len(box_shape) <= 8
        walked += _walked(box_walk(box_shape, s, d), src_at, dst_at)
    assert sorted(walked) == sorted(_pairs(shape, src, dst))


def test_the_structs_word_by_word() -> None:
    walk = box_walk((2, 3), (30, -1), (3, 1))
    assert walk.dtype == np.int64 and walk.size == 26  # struct Box of convert.cu: 208 bytes
    assert walk[0] == 6 and list(walk[1:3]) == [2, 3] and list(walk[9:11]) == [30, -1]
    assert list(walk[17:19]) == [3, 1] and list(walk[25:].view(np.int32)) == [2, 1]
    assert box_walk((4, 5), (5, 1)).size == 18  # compact.cu's Box: 144 bytes
    c = Compaction(0, 0, (60, 12, 4, 1), (1, 5, 3, 4), "float32", 0, 0, 1, 0, 8, 2, 6)
    rows = _rows_walk(c)
    assert rows.size == 12  # compact.cu's Rows: 96 bytes
    assert rows[0] == 60 and list(rows[1:5]) == [5, 3, 4, 0] and list(rows[9:11]) == [8, 2]
    assert list(rows[11:].view(np.int32)) == [3, 6]  # rank (the leading 1 left out), columns
    assert dense_strides((2, 3, 4)) == (12, 4, 1) and dense_strides(()) == ()
