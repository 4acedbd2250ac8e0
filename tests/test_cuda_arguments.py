"""The CUDA backend's kernel arguments, checked on the CPU: CAST's and NONZERO's boxes passed
by value (`kernels/convert.cu`'s and `kernels/compact.cu`'s structs, word by word), and the
walk a converting launch makes over its boxes, emulated, against the copy's own pairs."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
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


def test_a_converting_plan_apart_and_through_scratch(monkeypatch: pytest.MonkeyPatch) -> None:
    """CudaConversion's launches run against a fake device (host memory at made-up addresses,
    each launch's box walked as convert.cu walks it): a transposed read converted straight
    into its output, and a conversion over its own bytes staged through scratch memory
    (converted there first, then its bits moved back)."""
    from dmlops import BufferTensorDesc, DataType
    from dmlops.backends.cuda import convert
    from dmlops.backends.cuda import kernels as cuda_kernels
    from dmlops.conversion import convert as cast_rules
    from dmlops.ops.cast import CastDesc

    base, memory = 1 << 40, np.zeros(1 << 16, np.uint8)
    functions: dict[tuple[tuple[str, int], ...], int] = {}
    types = {code: np.dtype(name) for name, code in convert.TYPE_CODES.items()}

    def handle(runtime: Any, kernel: str, defines: Any, entry: Any = None) -> int:
        assert kernel == "convert"
        return functions.setdefault(defines, len(functions) + 1)

    def launch(function: int, *grid_and_more: int) -> None:
        named = dict(next(d for d, f in functions.items() if f == function))
        x, y = types[named["XT"]], types[named["YT"]]
        params = grid_and_more[-2]
        arguments = (ctypes.c_uint64 * 3).from_address(params)
        walk = np.ctypeslib.as_array((ctypes.c_int64 * 26).from_address(arguments[0]))
        src = ctypes.c_uint64.from_address(arguments[1]).value - base
        dst = ctypes.c_uint64.from_address(arguments[2]).value - base
        for s, d in _walked(walk.copy(), 0, 0):
            value = memory[src + s * x.itemsize : src + (s + 1) * x.itemsize].view(x)
            moved = value.view(y) if named["MODE"] == 2 else cast_rules(value, y)
            memory[dst + d * y.itemsize : dst + (d + 1) * y.itemsize] = moved.view(np.uint8)

    monkeypatch.setattr(cuda_kernels, "handle", handle)
    monkeypatch.setattr(convert, "launch_kernel", launch)
    monkeypatch.setattr(
        convert,
        "scratch",
        lambda cp, n, stream: SimpleNamespace(data=SimpleNamespace(ptr=base + 40000)),
    )
    backend = SimpleNamespace(
        cupy=SimpleNamespace(cuda=SimpleNamespace(runtime=None)),
        _on=lambda device: contextlib.nullcontext(),
    )
    rng = np.random.default_rng(3)
    values = (rng.standard_normal(60) * 40000).astype(np.float32)
    values[:3] = [np.nan, -0.0, 3e9]
    memory[:240] = values.view(np.uint8)
    # a transposed [4, 15] view of the 60 floats, cast to int16 elsewhere
    f32, i16, i32 = DataType.FLOAT32, DataType.INT16, DataType.INT32
    desc = CastDesc(
        BufferTensorDesc(f32, (1, 1, 4, 15), (60, 60, 1, 4)), BufferTensorDesc(i16, (1, 1, 4, 15))
    )
    apart = convert.CudaConversion(backend, desc.lower())
    apart([base], [base + 20000], (0, 7))
    want = cast_rules(values.reshape(15, 4).T, np.int16)
    assert memory[20000:20120].view(np.int16).tobytes() == want.tobytes()
    # float32 to int32 over the same 240 bytes
    same = CastDesc(BufferTensorDesc(f32, (1, 1, 6, 10)), BufferTensorDesc(i32, (1, 1, 6, 10)))
    in_place = convert.CudaConversion(backend, same.lower())
    in_place([base], [base], (0, 7))
    assert memory[:240].view(np.int32).tobytes() == cast_rules(values, np.int32).tobytes()
    assert len(functions) == 3  # (float32 -> int16, float32 -> int32, int32's bits moved)
