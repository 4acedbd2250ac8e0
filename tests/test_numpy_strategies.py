"""The numpy backend's ways of running a plan — one strided view pair per copy, abutting runs
as one concatenate (`SideBySide`), small plans as element maps (`ElementMap`), the CPU
engine's one job — move the same bits as a naive element-by-element interpreter of the
plan, on every element size, layout and operator whose plans take them."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from dmlops import BufferTensorDesc, DataType
from dmlops.backends import cpu_engine
from dmlops.backends import numpy_backend as nb
from dmlops.backends.numpy_map import ElementMap
from dmlops.backends.numpy_runs import SideBySide
from dmlops.ops import JoinDesc, Padding1Desc, Slice1Desc, TileDesc
from dmlops.plan import Plan
from strategies import layouts

TYPES = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.INT64}


@pytest.fixture(autouse=True)
def numpy_engine_only():  # type: ignore[no-untyped-def]
    """The numpy engine chooses its own ways here (the CPU engine is one more way, below)."""
    cpu_engine.set_enabled(False)
    yield
    cpu_engine.set_enabled(True)


def naive(plan: Plan, ins: list[bytes], outs: list[bytearray]) -> None:
    """Every copy, element by element, straight from the plan's definition."""
    size = plan.element_size
    sources = [*ins, *plan.fill_buffers(plan.fill_width)]
    for c in plan.copies:
        src = sources[c.src]
        for at in itertools.product(*(range(n) for n in c.shape)):
            s = c.src_offset + size * sum(i * t for i, t in zip(at, c.src_strides, strict=True))
            d = c.dst_offset + size * sum(i * t for i, t in zip(at, c.dst_strides, strict=True))
            outs[c.dst][d : d + size] = src[s : s + size]


def _buffers(desc: Any, seed: int) -> tuple[list[np.ndarray[Any, Any]], list[int]]:
    rng = np.random.default_rng(seed)
    ins = [
        rng.integers(0, 256, t.total_tensor_size_in_bytes, dtype=np.uint8)
        for _, t in desc.input_fields()
    ]
    return ins, [t.total_tensor_size_in_bytes for _, t in desc.output_fields()]


def _check_every_way(desc: Any, seed: int) -> None:
    plan = desc.lower()
    ins, out_sizes = _buffers(desc, seed)
    want = [bytearray(b"\xab" * n) for n in out_sizes]
    naive(plan, [bytes(b) for b in ins], want)
    ways: dict[str, Any] = {"chosen": nb.NumpyBackend(threads=1).executor(plan)}
    fills = [np.frombuffer(b, np.uint8) for b in plan.fill_buffers(plan.fill_width)]
    mapped = ElementMap.of(plan, best_only=False)
    if mapped is not None:
        ways["element map"] = lambda i, o: mapped([*i, *fills], o)
    runs = SideBySide.of(plan.copies, plan.element_size) if not plan.fills else None
    if runs is not None:
        ways["side by side"] = runs
    engine = cpu_engine.EnginePlan.of(plan)
    if engine is not None:
        ways["engine"] = lambda i, o: engine.run([*i, *fills], o, 3)
    for name, run in ways.items():
        outs = [np.full(n, 0xAB, np.uint8) for n in out_sizes]
        assert run(ins, outs) in (None, True), name
        for got, expected in zip(outs, want, strict=True):
            assert got.tobytes() == bytes(expected), name
    if mapped is not None:  # buffers that are not numpy arrays: viewed the general way
        given = [bytearray(b"\xab" * n) for n in out_sizes]
        assert mapped([*(bytes(b) for b in ins), *(bytes(f) for f in fills)], given)
        assert given == want


@st.composite
def descriptors(draw: st.DrawFn) -> Any:
    size = draw(st.sampled_from(sorted(TYPES)))
    dt = TYPES[size]
    kind = draw(st.sampled_from(["join", "padding", "tile", "slice1"]))
    rank = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 4)) for _ in range(rank)]
    if kind == "join":
        axis = draw(st.integers(0, rank - 1))
        packed = draw(st.booleans())  # every tensor packed: runs side by side
        parts = []
        for _ in range(draw(st.integers(2, 9))):
            part = list(sizes)
            part[axis] = draw(st.integers(1, 3))
            strides = None if packed else draw(layouts(part, False))
            parts.append(BufferTensorDesc(dt, part, strides))
        out = list(sizes)
        out[axis] = sum(p.sizes[axis] for p in parts)
        strides = None if packed else draw(layouts(out, True))
        return JoinDesc(parts, BufferTensorDesc(dt, out, strides), axis)
    x = BufferTensorDesc(dt, sizes, draw(layouts(sizes, False)))
    if kind == "padding":
        mode = draw(st.sampled_from(["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"]))
        limit = {"REFLECTION": -1, "SYMMETRIC": 0, "WRAP": 0}.get(mode, 2)
        start = [draw(st.integers(0, max(0, min(2, n + limit)))) for n in sizes]
        end = [draw(st.integers(0, max(0, min(2, n + limit)))) for n in sizes]
        out = [n + a + b for n, a, b in zip(sizes, start, end, strict=True)]
        value_type = dt if mode == "CONSTANT" else None
        return Padding1Desc(x, BufferTensorDesc(dt, out), mode, value_type, 3, start, end)
    if kind == "tile":
        repeats = [draw(st.integers(1, 3)) for _ in sizes]
        out = [n * r for n, r in zip(sizes, repeats, strict=True)]
        return TileDesc(x, BufferTensorDesc(dt, out, draw(layouts(out, True))), repeats)
    steps = [draw(st.sampled_from([1, 2, -1, -2])) for _ in sizes]
    out = [-(-n // abs(s)) for n, s in zip(sizes, steps, strict=True)]
    return Slice1Desc(x, BufferTensorDesc(dt, out), [0] * rank, sizes, steps)


@settings(max_examples=150, deadline=None)
@given(desc=descriptors(), seed=st.integers(0, 99))
def test_every_way_of_running_a_plan_moves_the_same_bits(desc: Any, seed: int) -> None:
    desc.validate()
    _check_every_way(desc, seed)


def test_a_join_of_many_pieces_is_one_concatenate() -> None:
    parts = [BufferTensorDesc(DataType.FLOAT32, (16, 64))] * 64
    for axis, out in ((0, (1024, 64)), (1, (16, 4096))):
        desc = JoinDesc(parts, BufferTensorDesc(DataType.FLOAT32, out), axis)
        executor = nb.NumpyBackend(threads=1).executor(desc.lower())
        assert executor.side_by_side is not None and executor.element_map is None
        _check_every_way(desc, axis)


def test_a_join_of_few_small_pieces_copies_each_by_its_views() -> None:
    """A few small pieces (a KV-cache append's two): each copy's own views, which cost less
    than one concatenate's setup; the side-by-side run would move the same bits."""
    f32 = DataType.FLOAT32
    parts = [BufferTensorDesc(f32, (2, 4, 16, 8)), BufferTensorDesc(f32, (2, 4, 1, 8))]
    desc = JoinDesc(parts, BufferTensorDesc(f32, (2, 4, 17, 8)), 2)
    plan = desc.lower()
    executor = nb.NumpyBackend(threads=1).executor(plan)
    assert executor.side_by_side is None and SideBySide.of(plan.copies, 4) is not None
    _check_every_way(desc, 0)


def test_small_tiles_and_pads_run_as_element_maps() -> None:
    x = BufferTensorDesc(DataType.FLOAT32, (2, 3, 6, 7))
    out = BufferTensorDesc(DataType.FLOAT32, (2, 3, 10, 11))
    for mode in ("REFLECTION", "CONSTANT"):
        value_type = DataType.FLOAT32 if mode == "CONSTANT" else None
        desc = Padding1Desc(x, out, mode, value_type, 0.5, (0, 0, 2, 2), (0, 0, 2, 2))
        executor = nb.NumpyBackend(threads=1).executor(desc.lower())
        assert executor.element_map is not None, mode
        _check_every_way(desc, 1)
    # a large plan keeps its views: a table would cost more than it saves
    big = BufferTensorDesc(DataType.FLOAT32, (2, 3, 60, 70))
    desc = Padding1Desc(
        big, BufferTensorDesc(DataType.FLOAT32, (2, 3, 64, 74)), "REFLECTION", None, 0,
        (0, 0, 2, 2), (0, 0, 2, 2),
    )  # fmt: skip
    assert nb.NumpyBackend(threads=1).executor(desc.lower()).element_map is None


@pytest.mark.parametrize("order", ["C", "F"])
def test_joins_of_any_memory_order_and_strided_outputs_keep_every_bit(order: str) -> None:
    """float16 NaN payloads and -0.0 through the concatenate path; Fortran-ordered pieces
    (read in their memory order) and a strided `out=` (bound through its byte span)."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 16, (12, 5, 6), dtype=np.uint16)
    bits[0, 0, :3] = (0x7C01, 0xFE5A, 0x8000)  # NaN payloads, -0.0
    pieces = [np.asarray(p.view(np.float16), order=order) for p in bits]
    for axis in (0, 1):
        want = np.concatenate(pieces, axis)
        got = dmlops.join(pieces, axis)
        assert got.view(np.uint16).tobytes() == want.view(np.uint16).tobytes()
        holder = np.zeros((want.shape[0], want.shape[1] * 2), np.float16)
        dmlops.join(pieces, axis, out=holder[:, ::2])
        assert holder[:, ::2].view(np.uint16).tobytes() == want.view(np.uint16).tobytes()
        assert not holder[:, 1::2].view(np.uint16).any()


def test_pads_and_tiles_of_typed_arrays_keep_every_bit() -> None:
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 16, (2, 3, 5, 4), dtype=np.uint16)
    bits.flat[:2] = (0x7C01, 0x8000)
    x = bits.view(np.float16)
    for mode in ("REFLECTION", "EDGE", "SYMMETRIC", "WRAP"):
        got = dmlops.padding(x, [0, 0, 2, 1], [0, 0, 1, 2], mode)
        np_mode = {"REFLECTION": "reflect", "EDGE": "edge", "SYMMETRIC": "symmetric"}
        want = np.pad(bits, ((0, 0), (0, 0), (2, 1), (1, 2)), np_mode.get(mode, "wrap"))
        assert got.view(np.uint16).tobytes() == want.tobytes(), mode
    got = dmlops.tile(np.asfortranarray(x), [1, 2, 2, 3])
    assert got.view(np.uint16).tobytes() == np.tile(bits, (1, 2, 2, 3)).tobytes()
