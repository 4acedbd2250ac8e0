"""WebGPU layouts (`backends/webgpu/layouts.py`): a strided plan's tables at new offsets of
the same low bits made by shifting each row's offsets, equal to planning them anew (pure
numpy, no adapter); and on an adapter, calls whose outputs are kept (each at a new place
in an arena) bit-exact with no planning after the first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import HAS_WEBGPU
from dmlops.backends.webgpu.layouts import _only_offsets_move, _Rows
from dmlops.backends.webgpu.memory import ALIGN
from dmlops.backends.webgpu.strategies import group_copies
from dmlops.plan import Plan, StridedCopy


@st.composite
def strided_plans(draw: st.DrawFn) -> tuple[Plan, int, int]:
    """A plan of one to three strided copies of one element size (strides of any sign),
    from up to two inputs into up to two outputs, and how many of each."""
    es = draw(st.sampled_from([1, 2, 4, 8]))
    inputs, outputs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    copies = []
    for _ in range(draw(st.integers(1, 3))):
        rank = draw(st.integers(1, 4))
        shape = tuple(draw(st.lists(st.integers(1, 40), min_size=rank, max_size=rank)))
        src_strides, dst_strides, src_low, dst_low = [], [], 0, 0
        dense = 1
        for n in reversed(shape):  # (a packed destination; a source stepping any way)
            step = draw(st.sampled_from([1, 2, 3, -1, -2]))
            src_strides.insert(0, step * dense)
            if step < 0:
                src_low += (n - 1) * -step * dense
            dst_strides.insert(0, dense)
            dense *= n * abs(step)
        copies.append(
            StridedCopy(
                draw(st.integers(0, inputs - 1)),
                (src_low + draw(st.integers(0, 64))) * es,
                tuple(src_strides),
                draw(st.integers(0, outputs - 1)),
                (dst_low + draw(st.integers(0, 64))) * es,
                tuple(dst_strides),
                shape,
            )
        )
    spans = tuple((0, 1 << 30) for _ in range(inputs)), tuple((0, 1 << 30) for _ in range(outputs))
    return Plan(es, tuple(copies), *spans), inputs, outputs


@settings(max_examples=300, deadline=None)
@given(strided_plans(), st.data())
def test_shifted_tables_equal_tables_planned_at_the_new_offsets(
    case: tuple[Plan, int, int], data: st.DataObject
) -> None:
    plan, inputs, outputs = case
    buffers = data.draw(
        st.lists(st.integers(0, 1), min_size=inputs + outputs, max_size=inputs + outputs)
    )
    lows = data.draw(
        st.lists(st.integers(0, ALIGN - 1), min_size=inputs + outputs, max_size=inputs + outputs)
    )
    first = data.draw(
        st.lists(st.integers(0, 50), min_size=inputs + outputs, max_size=inputs + outputs)
    )
    then = data.draw(
        st.lists(st.integers(0, 50), min_size=inputs + outputs, max_size=inputs + outputs)
    )

    def bound(aligns: list[int], shift: int = 0) -> tuple[list[tuple[int, int]], ...]:
        at = [(b, a * ALIGN + low + shift) for b, a, low in zip(buffers, aligns, lows, strict=True)]
        return at[:inputs], at[inputs:]

    groups = group_copies(plan, *bound(first), 100)
    moved = group_copies(plan, *bound(first, ALIGN), 100)
    if not _only_offsets_move(groups, moved):
        return  # (such a plan is planned anew at each binding)
    moves = np.array(then, np.int64) - np.array(first, np.int64)
    want = group_copies(plan, *bound(then), 100)
    assert len(want) == len(groups)
    for g, m, w in zip(groups, moved, want, strict=True):
        got = _Rows(g, m, None).table_at(moves[:inputs] * ALIGN, moves[inputs:] * ALIGN)
        assert got.dtype == np.uint32 and np.array_equal(got, w.table)


def test_common_plans_shift_their_offsets_only() -> None:
    """The plans of slices, reversals, joins and transposes of every element size are laid
    out once (the check passes), not planned per binding."""
    from dmlops import BufferTensorDesc, DataType, Slice1Desc

    for dt in (DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64):
        x = BufferTensorDesc(dt, (3, 5, 8, 12))
        for starts, sizes, steps in (
            ([0, 0, 0, 1], [3, 5, 4, 11], [1, 1, -2, 1]),
            ([0, 1, 0, 0], [3, 4, 8, 12], [1, 1, 1, -1]),
            ([0, 0, 0, 0], [3, 5, 8, 6], [-1, 1, 1, 2]),
        ):
            out = BufferTensorDesc(dt, tuple(-(-s // abs(k)) for s, k in zip(sizes, steps)))
            plan = Slice1Desc(x, out, starts, sizes, steps).lower()
            for low in (0, 4, 6, 16):
                groups = group_copies(plan, [(0, low)], [(0, 4096 + low)], 100)
                moved = group_copies(plan, [(0, low + ALIGN)], [(0, 4096 + low + ALIGN)], 100)
                assert _only_offsets_move(groups, moved), (dt, starts, steps, low)


webgpu = pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter")


@pytest.fixture
def plannings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the WebGPU backend planned a binding's groups."""
    from dmlops.backends.webgpu import WebGpuBackend

    made: list[int] = []
    original = WebGpuBackend.groups

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(WebGpuBackend, "groups", counted)
    dmlops.functional.clear_cache()
    return made


def _kept(call: Callable[[Any], Any], x: Any, n: int) -> list[Any]:

    results = [call(x) for _ in range(n)]
    return [r.numpy() for r in results]


@webgpu
@pytest.mark.webgpu
def test_kept_outputs_are_exact_and_planned_once(plannings: list[int]) -> None:
    import dmlops.webgpu as wg

    rng = np.random.default_rng(7)
    host = rng.standard_normal((6, 7, 33)).astype(np.float32)
    host.view(np.uint32)[0, 0, :4] = [0x7FC00001, 0x80000000, 0x7F800001, 0xFFFFFFFF]
    x = wg.asarray(host)
    calls: dict[str, Callable[[Any], Any]] = {
        "slice1": lambda a: dmlops.slice1(a, [0, 1, 0], [6, 6, 33], [-1, 2, 3]),
        "padding": lambda a: dmlops.padding(a, [0, 1, 2], [1, 0, 3], value=-0.0),
        "join": lambda a: dmlops.join([a, a], 2),
    }
    for name, call in calls.items():
        want = call(host)
        plannings.clear()
        for got in _kept(call, x, 12):
            assert got.tobytes() == want.tobytes(), name
        assert len(plannings) <= 2, (name, len(plannings))  # (the first binding: twice)


@webgpu
@pytest.mark.webgpu
def test_kept_outputs_at_odd_offsets_and_split_outputs(
    plannings: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Views at odd byte offsets, 1- and 2-byte elements and a split's several outputs,
    kept, match the same calls with layouts off (each binding planned anew)."""
    import dmlops.webgpu as wg
    from dmlops.backends import webgpu as backend

    rng = np.random.default_rng(8)
    for dtype in (np.uint8, np.float16, np.float64):
        host = rng.integers(0, 255, (5, 41), np.uint8).astype(dtype)
        x = wg.asarray(host)
        view = x[1:, 3:]  # (an odd byte offset for 1- and 2-byte elements)
        calls: list[Callable[[Any], Any]] = [
            lambda a: dmlops.slice1(a, [0, 0], [4, 38], [1, -3]),
            lambda a: dmlops.split(a, 1, [7, 31]),
        ]
        for call in calls:
            monkeypatch.setattr(backend, "LAYOUTS", False)
            dmlops.functional.clear_cache()
            want = [r.numpy() for r in _flat(call(view))]
            monkeypatch.setattr(backend, "LAYOUTS", True)
            dmlops.functional.clear_cache()
            kept = [_flat(call(view)) for _ in range(8)]
            for results in kept:
                got = [r.numpy() for r in results]
                assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
        # one call's plan on views at other byte offsets (other low bits), kept
        shifted = [x[1:, k : k + 38] for k in (0, 1, 2, 3, 0, 2)]
        results = [dmlops.slice1(v, [0, 0], [4, 38], [1, -3]) for v in shifted]
        for v, r in zip(shifted, results, strict=True):
            want = dmlops.slice1(v.numpy(), [0, 0], [4, 38], [1, -3])
            assert r.numpy().tobytes() == want.tobytes()


def _flat(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (list, tuple)) else [result]


@webgpu
@pytest.mark.webgpu
@pytest.mark.parametrize("ring", [None, 2])
def test_many_calls_at_new_offsets_before_a_wait_each_read_their_own_table(
    ring: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls at new offsets write their tables into a ring of buffers ahead of the open
    pass: 100 calls on 25 inputs, none waited for, each output its own input's slice (a
    ring of 2, shorter than a pass, must fail: the test's own check)."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import layouts

    if ring is not None:
        monkeypatch.setattr(layouts, "RING", ring)
    dmlops.functional.clear_cache()
    # each case its own plan and values: a wrong table's write of values that memory
    # already holds (an earlier run's output at the same place) would go unseen
    width, first = (5, 0) if ring is None else (6, 1000)
    hosts = [
        np.arange(3 * width, dtype=np.float32).reshape(3, width) + first + k for k in range(25)
    ]
    xs = [wg.asarray(h) for h in hosts]
    window = ([0, 0], [3, width], [-1, 2])
    results = [dmlops.slice1(xs[k % 25], *window) for k in range(100)]
    got = [r.numpy() for r in results]
    right = [
        g.tobytes() == dmlops.slice1(hosts[k % 25], *window).tobytes() for k, g in enumerate(got)
    ]
    if ring is None:
        assert all(right)
    else:
        assert not all(right)  # (the invariant the ring keeps, broken)


@webgpu
@pytest.mark.webgpu
def test_kept_indexed_outputs_before_a_wait_are_exact_and_laid_out_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gathers and scatters (duplicate indices: the latest update wins) at new offsets,
    80 of each on 20 inputs before a wait: each output exact; each plan's indexed copies
    laid out once (their meta tables shifted into a ring after that)."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import layouts

    made: list[int] = []
    original = layouts.indexed_parts

    def counted(*args: Any) -> Any:
        made.append(1)
        return original(*args)

    monkeypatch.setattr(layouts, "indexed_parts", counted)
    dmlops.functional.clear_cache()
    rng = np.random.default_rng(11)
    hosts = [rng.standard_normal((40, 24)).astype(np.float32) for _ in range(20)]
    xs = [wg.asarray(h) for h in hosts]
    rows = np.array([3, 39, 0, 3, 17], np.int64)
    cols = rng.integers(0, 24, (40, 5)).astype(np.int64)
    updates = [rng.standard_normal((40, 5)).astype(np.float32) for _ in range(20)]
    ups = [wg.asarray(u) for u in updates]
    idx, cidx = wg.asarray(rows), wg.asarray(cols)
    calls: dict[str, Callable[[int, bool], Any]] = {
        "gather": lambda k, gpu: dmlops.gather((xs if gpu else hosts)[k], idx if gpu else rows, 0),
        "gather_elements": lambda k, gpu: dmlops.gather_elements(
            (xs if gpu else hosts)[k], cidx if gpu else cols, 1
        ),
        "scatter_elements": lambda k, gpu: dmlops.scatter_elements(
            (xs if gpu else hosts)[k], cidx if gpu else cols, (ups if gpu else updates)[k], 1
        ),
    }
    for name, call in calls.items():
        made.clear()
        results = [call(k % 20, True) for k in range(80)]
        for k, r in enumerate(results):
            assert r.numpy().tobytes() == call(k % 20, False).tobytes(), (name, k)
        assert len(made) == 1, (name, len(made))


@webgpu
@pytest.mark.webgpu
def test_threads_calling_one_plan_at_new_offsets_each_get_their_own_results() -> None:
    """Four threads, 40 kept calls each of one slice and one gather plan on inputs of their
    own (layouts made and rings turned from every thread): each output exact."""
    import threading

    import dmlops.webgpu as wg

    dmlops.functional.clear_cache()
    rng = np.random.default_rng(12)
    hosts = [rng.standard_normal((9, 33)).astype(np.float32) for _ in range(4)]
    xs = [wg.asarray(h) for h in hosts]
    rows = np.array([8, 0, 4, 4], np.int64)
    idx = wg.asarray(rows)
    window = ([0, 0], [9, 33], [-1, 3])
    results: list[list[tuple[Any, Any]]] = [[] for _ in range(4)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for _ in range(40):
                results[k].append((dmlops.slice1(xs[k], *window), dmlops.gather(xs[k], idx, 0)))
        except Exception as error:  # noqa: BLE001 - raised again in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k, made in enumerate(results):
        sliced, gathered = dmlops.slice1(hosts[k], *window), np.take(hosts[k], rows, 0)
        for s, g in made:
            assert s.numpy().tobytes() == sliced.tobytes()
            assert g.numpy().tobytes() == gathered.tobytes()
