"""Small calls on the CPU: flat buffers of strided arrays read in C, small plans of several
copies on the engine's calling thread, lone copies that step far on the engine, strided
inputs on the fresh path — each where it applies, and every bit right."""

from __future__ import annotations

import functools
import gc
import os
import threading
import time
import weakref
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from dmlops import BufferTensorDesc, DataType, FeatureLevel
from dmlops.backends import cpu_engine
from dmlops.backends import numpy_backend as nb
from dmlops.backends.cpu_engine import _weaves
from dmlops.calls import dispatch
from dmlops.ops import DepthToSpace1Desc, JoinDesc, Slice1Desc

native = cpu_engine.native()
needs_engine = pytest.mark.skipif(native is None, reason="the CPU engine was not built")


def _call_of(run: Any) -> Any:
    """The compiled call the one call `run()` makes (a fresh cache)."""
    dispatch.clear_cache()
    run()
    (entry,) = dispatch._CACHE.items.values()
    return entry[0]


def _bits(a: Any) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@needs_engine
@pytest.mark.parametrize("step", [1, 2, -1, -3])
def test_a_span_is_a_strided_arrays_bytes_from_its_lowest_element(step: int) -> None:
    x = np.arange(2 * 5 * 12, dtype=np.uint16).reshape(2, 5, 12)
    view = x[:, 1:4, ::step]
    reach = [s * (n - 1) for s, n in zip(view.strides, view.shape, strict=True)]
    lowest = sum(min(0, r) for r in reach)
    nbytes = sum(max(0, r) for r in reach) - lowest + view.itemsize
    flat = np.frombuffer(native.span(view, lowest, nbytes), np.uint8)
    start = view.__array_interface__["data"][0] + lowest - x.__array_interface__["data"][0]
    assert flat.tobytes() == x.view(np.uint8).reshape(-1)[start : start + nbytes].tobytes()
    assert flat.flags.writeable


@needs_engine
def test_a_span_keeps_its_array_alive_and_its_read_only_flag() -> None:
    x = np.arange(64, dtype=np.float32)
    x.flags.writeable = False
    alive = weakref.ref(x)
    flat = np.frombuffer(native.span(x[::2], 0, 4 * 63), np.uint8)
    del x
    gc.collect()
    assert alive() is not None  # (the span holds the view, the view its base)
    assert not flat.flags.writeable
    assert flat[:8].view(np.float32).tolist() == [0.0, 1.0]
    with pytest.raises(TypeError):
        native.span(object(), 0, 4)
    with pytest.raises(ValueError):
        native.span(np.zeros(4), 0, -1)


def test_strided_inputs_read_through_their_flat_buffers_keep_every_bit() -> None:
    """Views of every kind through the functional API (the C span where the engine is, else
    the array interface): NaN payloads and -0.0 of float16, negative strides, read-only."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 1 << 16, (3, 8, 10), dtype=np.uint16)
    bits[0, 0, :3] = (0x7C01, 0xFE5A, 0x8000)
    x = bits.view(np.float16)
    frozen = x.copy()
    frozen.flags.writeable = False
    for source in (x, frozen):
        for view in (source[:, ::-1, 1::3], source.transpose(2, 0, 1), source[1:, 2:7, ::-2]):
            got = dmlops.slice1(view, [0] * 3, list(view.shape), [1, 1, 1])
            assert _bits(got) == _bits(view)
            parts = [view, view[:, :, :1]]
            assert _bits(dmlops.join(parts, 2)) == _bits(np.concatenate(parts, 2))
    assert not frozen.flags.writeable


def test_a_call_on_strided_inputs_into_new_outputs_takes_the_fresh_path() -> None:
    x = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    view = x.transpose(0, 2, 1)
    call = _call_of(lambda: dmlops.slice1(view, [0, 0, 0], [4, 8, 6], [1, 2, 1]))
    assert call.fresh_flats and not call.fresh
    want = np.ascontiguousarray(view[:, ::2, :])
    assert _bits(dmlops.slice1(view, [0, 0, 0], [4, 8, 6], [1, 2, 1])) == _bits(want)
    # a given output: the general path (its overlap with the input is tested there)
    out = np.empty_like(want)
    given = _call_of(lambda: dmlops.slice1(view, [0, 0, 0], [4, 8, 6], [1, 2, 1], out=out))
    assert not given.fresh_flats and _bits(out) == _bits(want)


@needs_engine
def test_small_plans_of_several_copies_run_on_the_engine_on_one_thread() -> None:
    f32 = DataType.FLOAT32
    parts = [BufferTensorDesc(f32, (2, 4, 16, 8)), BufferTensorDesc(f32, (2, 4, 1, 8))]
    plan = JoinDesc(parts, BufferTensorDesc(f32, (2, 4, 17, 8)), 2).lower()
    executor = nb.NumpyBackend().executor(plan)
    assert executor.engine is not None and executor.one_thread
    assert executor.run_fresh == executor._run  # (no questions left for a new output)
    # a lone copy of whole rows too
    lone = Slice1Desc(BufferTensorDesc(f32, (8, 64)), BufferTensorDesc(f32, (4, 64)), (0, 0),
                      (8, 64), (2, 1)).lower()  # fmt: skip
    assert nb.NumpyBackend().executor(lone).engine is not None
    rng = np.random.default_rng(0)
    pieces = [rng.standard_normal((2, 4, n, 8), dtype=np.float32) for n in (16, 1)]
    assert _bits(dmlops.join(pieces, 2)) == _bits(np.concatenate(pieces, 2))
    many = [rng.standard_normal((3, n), dtype=np.float32) for n in (1, 5, 2, 7)]
    assert _bits(dmlops.join(many, 1)) == _bits(np.concatenate(many, 1))
    got = dmlops.split(np.arange(60, dtype=np.int8).reshape(3, 20), 1, [4, 16])
    assert [g.tolist() for g in got] == [
        q.tolist() for q in np.split(np.arange(60, dtype=np.int8).reshape(3, 20), [4], 1)
    ]


@needs_engine
def test_a_small_plan_whose_output_meets_its_input_runs_its_views_in_order() -> None:
    """The engine writes nothing where an output overlaps an input: the plan's own views,
    copy after copy, then move the bytes (as the views alone would)."""
    u8 = DataType.UINT8
    parts = [BufferTensorDesc(u8, (3, 4)), BufferTensorDesc(u8, (3, 4))]
    plan = JoinDesc(parts, BufferTensorDesc(u8, (3, 8)), 1).lower()
    executor = nb.NumpyBackend().executor(plan)
    assert executor.engine is not None
    for shift in (0, 5, 12, 24):
        expected = np.arange(48, dtype=np.uint8)
        executor._views([expected[0:12], expected[12:24]], [expected[shift : shift + 24]])
        for bound in (False, True):  # (a call, and a dispatch bound once)
            memory = np.arange(48, dtype=np.uint8)
            ins, outs = [memory[0:12], memory[12:24]], [memory[shift : shift + 24]]
            if bound:
                executor.bound(ins, outs)()
            else:
                executor._run(ins, outs)
            assert memory.tobytes() == expected.tobytes(), (shift, bound)


@needs_engine
def test_every_lone_copy_runs_on_the_engine_and_beside_rows_one_stepping_far() -> None:
    """A plan of strided copies only runs on the engine, a lone copy whose neighbours lie
    within a line (a stride-2 slice, reversed rows) as much as one stepping far
    (DEPTH_TO_SPACE's columns, a transpose); beside an indexed copy's rows a lone small copy
    stays in the rows' compiled kernel unless it steps far."""
    f32 = DataType.FLOAT32
    d2s = DepthToSpace1Desc(BufferTensorDesc(f32, (1, 4, 16, 16)),
                            BufferTensorDesc(f32, (1, 1, 32, 32)), 2, "DCR").lower()  # fmt: skip
    assert nb.NumpyBackend().executor(d2s).engine is not None
    for steps in ((1, 2), (1, -1)):
        near = Slice1Desc(BufferTensorDesc(f32, (16, 64)), BufferTensorDesc(f32, (16, 64 // 2 if
                          steps[1] == 2 else 64)), (0, 0), (16, 64), steps).lower()  # fmt: skip
        assert nb.NumpyBackend().executor(near).engine is not None, steps
    x = np.arange(4 * 16 * 16, dtype=np.float32).reshape(1, 4, 16, 16)
    want = x.reshape(1, 2, 2, 1, 16, 16).transpose(0, 3, 4, 1, 5, 2).reshape(1, 1, 32, 32)
    assert _bits(dmlops.depth_to_space(x, 2)) == _bits(want)
    t = x[0].transpose(0, 2, 1)
    assert _bits(dmlops.slice1(t, [0, 0, 0], list(t.shape), [1, 1, 1])) == _bits(t)
    rows, updates = np.array([[3], [0]]), np.ones((2, 32), np.float32)
    square = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    for data, far in ((square[::-1], False), (square.T, True)):
        scatter = _call_of(lambda data=data: dmlops.scatter_nd(data, rows, updates))
        assert (scatter.run.engine is not None) == far
        want = data.copy()
        want[[3, 0]] = updates
        assert _bits(dmlops.scatter_nd(data, rows, updates)) == _bits(want)


def test_short_rows_side_by_side_on_both_sides_are_not_woven() -> None:
    """A split's parts of 16 elements (contiguous in the source): plain rows; a
    depth-to-space's columns (phases from channels apart): woven."""
    assert not _weaves((256, 16), (64, 1), (16, 1), 16)
    assert _weaves((256, 2), (64, 256), (2, 1), 16)
    assert not _weaves((256, 2), (64, 256), (4, 1), 16)


def test_the_newest_feature_level_is_the_largest() -> None:
    assert FeatureLevel.newest() is max(FeatureLevel)
    assert FeatureLevel.parse(None) is max(FeatureLevel)


def test_an_array_without_a_strided_buffer_is_read_through_its_array_interface(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refusing:  # (the engine's span declines: as for a buffer it cannot export)
        @staticmethod
        def span(owner: Any, low: int, nbytes: int) -> Any:
            raise BufferError("no strided buffer")

    monkeypatch.setattr(cpu_engine, "native", lambda: Refusing)
    x = np.arange(24, dtype=np.int16).reshape(4, 6)[:, ::-2]
    flat = nb.NumpyBackend().flat_function(-8, 46, False)  # (rows 12 bytes apart, -4 steps)
    assert flat is not None
    got = flat(x)
    start = x.__array_interface__["data"][0] - 8
    assert got.__array_interface__["data"][0] == start and got.nbytes == 46


def _small_calls_right(seed: int) -> bool:
    """Small calls of each new path (a join of views, a split, a transpose, a
    depth-to-space) against numpy's answers."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 16, 16), dtype=np.float32)
    views = [x[:, :, k : k + 4] for k in range(0, 16, 4)]
    image = x.reshape(1, 4, 16, 16)
    d2s = image.reshape(1, 2, 2, 1, 16, 16).transpose(0, 3, 4, 1, 5, 2).reshape(1, 1, 32, 32)
    return (
        _bits(dmlops.join(views[::-1], 2)) == _bits(np.concatenate(views[::-1], 2))
        and all(
            _bits(a) == _bits(b)
            for a, b in zip(dmlops.split(x, 1, [3, 13]), np.split(x, [3], 1), strict=True)
        )
        and _bits(dmlops.slice1(x.transpose(2, 0, 1), [0, 0, 0], [16, 4, 16], [1, 1, 1]))
        == _bits(x.transpose(2, 0, 1))
        and _bits(dmlops.depth_to_space(image, 2)) == _bits(d2s)
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_small_calls_from_many_threads_and_a_child_forked_among_them_are_right() -> None:
    """Eight Python threads making small calls at once (the engine's one-thread calls, the
    spans of their views), and a child forked while they run, which makes them too."""
    stop, failures = threading.Event(), []

    def loop(seed: int) -> None:
        while not stop.is_set():
            if not _small_calls_right(seed):
                failures.append(seed)
                return

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.05)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - (the child's coverage is not gathered)
            os._exit(0 if all(_small_calls_right(k) for k in range(20)) else 1)
        deadline = time.monotonic() + 30
        while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
            time.sleep(0.01)
        if not done[0]:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done[0] and os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures


def test_a_warm_call_on_numpy_arrays_takes_no_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once compiled, a call on numpy arrays into new outputs is answered from its signature
    (`_warm`): the general path is never entered. A new signature, a float where an int
    was, an unhashable feature level and a given output still take it (and its checks)."""
    from dmlops.arrays import family, strided
    from dmlops.errors import DmlError

    x = np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8)
    image = x.reshape(1, 4, 8, 8)
    parts = [x[:1], x[1:]]
    calls = {
        "slice1": lambda: dmlops.slice1(x, [0, 0, 0], [4, 8, 8], [1, 2, -1]),
        "slice1 of a view": lambda: dmlops.slice1(
            x.transpose(2, 1, 0), [0] * 3, [8, 8, 4], [1] * 3
        ),
        "split": lambda: dmlops.split(x, 0, [1, 3]),
        "split into one piece": lambda: dmlops.split(x, 0, [4]),
        "join": lambda: dmlops.join(parts, 0),
        "depth_to_space": lambda: dmlops.depth_to_space(image, 2),
        "cast": lambda: dmlops.cast(x, np.float16),
    }
    cold = {name: call() for name, call in calls.items()}

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path")

    monkeypatch.setattr(strided, "_dispatch", general)
    monkeypatch.setattr(family, "_dispatch", general)
    for name, call in calls.items():
        warm = call()
        split = name.startswith("split")
        assert isinstance(warm, list) == split, name  # (a split's pieces: always a list)
        pairs = zip(warm, cold[name], strict=True) if split else [(warm, cold[name])]
        assert all(_bits(a) == _bits(b) for a, b in pairs), name
    with pytest.raises(AssertionError, match="general path"):
        dmlops.slice1(x, [0, 0, 0], [4, 8, 8], [1, 2, 1])  # (new)
    with pytest.raises(AssertionError, match="general path"):
        dmlops.join(parts, 0, out=np.empty_like(x))  # (a given output)
    monkeypatch.undo()
    with pytest.raises(DmlError, match="InputWindowStrides"):
        dmlops.slice1(x, [0, 0, 0], [4, 8, 8], [1, 2.0, -1])
    with pytest.raises(DmlError, match="feature level"):
        dmlops.slice1(x, [0, 0, 0], [4, 8, 8], [1, 2, -1], feature_level=[4, 1])  # type: ignore[arg-type]


@needs_engine
def test_a_cast_of_one_run_goes_straight_to_the_engine_and_overlaps_read_first() -> None:
    """CAST float32 -> float16 of a contiguous array: one engine conversion of its run (a
    strided one: the general path); an output sharing the input's memory still reads every
    value before it writes (numpy's answer on a copy of the input)."""
    from dmlops.backends.converting import HostConversion
    from dmlops.ops import CastDesc

    f32, f16 = DataType.FLOAT32, DataType.FLOAT16
    whole = CastDesc(BufferTensorDesc(f32, (4, 8)), BufferTensorDesc(f16, (4, 8))).lower()
    assert HostConversion(whole).run is not None
    strided = CastDesc(BufferTensorDesc(f32, (4, 8), (16, 2)), BufferTensorDesc(f16, (4, 8)))
    assert HostConversion(strided.lower()).run is None
    values = np.array([1.0, -0.0, 65520.0, 1e-8, np.nan, -np.inf, 3.14159, 2.0**-24], np.float32)
    got = dmlops.cast(np.tile(values, 4), np.float16)
    with np.errstate(over="ignore"):  # (65520 rounds to infinity, as CAST's rules say)
        want = np.tile(values, 4).astype(np.float16).view(np.uint16)
    want[4::8] = 0x7FFF  # (CAST's NaN)
    assert got.view(np.uint16).tolist() == want.tolist()
    memory = np.tile(values, 4)
    expected = dmlops.cast(memory.copy(), np.float16)
    dmlops.cast(memory, np.float16, out=memory.view(np.float16)[8:40])
    assert (
        memory.view(np.float16)[8:40].view(np.uint16).tolist() == expected.view(np.uint16).tolist()
    )


@pytest.mark.parametrize(
    ("source", "target"),
    [(np.float32, np.float16), (np.float16, np.float32), (np.float64, np.float16)],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_casts_of_whole_arrays_in_either_memory_order_keep_every_value(
    source: Any, target: Any, order: str
) -> None:
    """The engine's pairs over arrays of any rank, C- or Fortran-ordered, into new outputs
    and into given ones of the same order (each read in its own memory order)."""
    rng = np.random.default_rng(5)
    x = np.asarray(rng.standard_normal((3, 4, 5)).astype(source), order=order)
    want = x.astype(target)
    assert _bits(dmlops.cast(x, target)) == _bits(want)
    given = np.empty(x.shape, target, order=order)
    dmlops.cast(x, target, out=given)
    assert given.tolist() == want.tolist()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_basic_index_gives_exactly_the_view_a_producer_makes(data: st.DataObject) -> None:
    """`basic_index` finds the slices that make a source's view of a shape, byte strides
    and offset, and only those: any view of a window (steps of any sign) is found, and
    its slices make that view; a view no slicing gives (another type, rank or a step
    across rows) is refused."""
    rank = data.draw(st.integers(1, 4))
    shape_in = tuple(data.draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    dtype = np.dtype(data.draw(st.sampled_from(["u1", "f2", "f4", "c16"])))
    source = np.arange(int(np.prod(shape_in)) * dtype.itemsize, dtype=np.uint8).view(dtype)
    source = source.reshape(shape_in)
    index = []
    for n in shape_in:
        step = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
        start = data.draw(st.integers(0, n - 1))
        index.append(slice(start, None, step))
    view = source[tuple(index)]
    offset = view.__array_interface__["data"][0] - source.__array_interface__["data"][0]
    found = nb.basic_index(source, view.shape, dtype, offset, view.strides)
    assert found is not False
    made = source[found]
    steps = [(n, t) for n, t in zip(view.shape, view.strides, strict=True) if n > 1]
    assert made.shape == view.shape
    assert [(n, t) for n, t in zip(made.shape, made.strides, strict=True) if n > 1] == steps
    assert made.tobytes() == view.tobytes()
    assert nb.basic_index(source, view.shape, np.dtype("i8"), offset, view.strides) is False
    assert nb.basic_index(np.zeros((), dtype), (), dtype, 0, ()) is False
    assert nb.basic_index(source, (1, *view.shape), dtype, offset, (0, *view.strides)) is False
    if view.shape[-1] > 1:  # (a step of half an element: no slicing)
        strides = (*view.strides[:-1], view.strides[-1] + dtype.itemsize // 2 or 1)
        half = nb.basic_index(source, view.shape, dtype, offset, strides)
        assert half is False or dtype.itemsize == 1


def test_warm_slices_of_numpy_arrays_are_made_by_slicing_and_keep_every_bit() -> None:
    """A warm SLICE1's output made by slicing its source (the basic index found once) is
    bit-exact, NaN payloads and -0.0 included, for windows the signature fixes."""
    host = np.arange(6 * 10, dtype=np.uint32).reshape(6, 10)
    host[0, :3] = [0x7FC00001, 0x80000000, 0xFFFFFFFF]
    x = host.view(np.float32)
    for window in (
        ([0, 0], [6, 10], [1, -1]),
        ([1, 2], [5, 8], [-2, 3]),
        ([0, 0], [6, 10], [1, 1]),
    ):
        want = np.stack([x[i] for i in range(6)])  # (its naive form below)
        starts, sizes, steps = window
        rows = range(starts[0], starts[0] + sizes[0])[:: 1 if steps[0] > 0 else -1][
            :: abs(steps[0])
        ]
        cols = range(starts[1], starts[1] + sizes[1])[:: 1 if steps[1] > 0 else -1][
            :: abs(steps[1])
        ]
        want = np.array([[x[r, c] for c in cols] for r in rows], np.float32)
        for _ in range(3):  # (cold, then warm: the index found, then used)
            got = dmlops.slice1(x, *window)
            assert got.tobytes() == want.tobytes() and got.flags.c_contiguous


@pytest.mark.parametrize("dtype", ["u1", "f2", "f4", "c16"])
@pytest.mark.parametrize("steps", [[2, 1], [-1, 1], [-3, 1], [2, 1, 1]])
def test_warm_whole_row_windows_are_made_by_the_producer_and_keep_every_bit(
    dtype: str, steps: list[int]
) -> None:
    """Windows of whole contiguous rows (the plan's copy moves each row as one void
    element) are made by the producer too, its view the rows' elements again; bit-exact."""
    rank = len(steps)
    shape = (9, 3, 40)[-rank:] if rank == 3 else (9, 40)
    host = np.arange(int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    x = host.view(dtype).reshape(shape)
    window = ([0] * rank, list(shape), steps)
    index = tuple(slice(None, None, k) for k in steps)
    dispatch.clear_cache()
    for _ in range(3):
        got = dmlops.slice1(x, *window)
        assert got.tobytes() == np.ascontiguousarray(x[index]).tobytes()
        assert got.dtype == x.dtype and got.flags.c_contiguous
    ((_, (call, _)),) = list(dispatch._CACHE.items.items())
    assert call.produce is not None


def test_warm_calls_keyed_before_their_arguments_are_read_keep_each_level() -> None:
    """PADDING, TILE and DEPTH_TO_SPACE answer a warm call from their arguments as given
    (the feature level in the key): calls at two levels, alternated, each answer as a cold
    call at its own level does — PADDING's FLOAT value converted to the type at 4_1,
    PADDING1's refused; DEPTH_TO_SPACE1's CRD order refused at 2_0."""
    from dmlops import InvalidDescriptorError, UnsupportedFeatureLevelError

    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    cold = dmlops.padding(x, [1, 1], [1, 1], value=1.7, feature_level="4_1")
    x4 = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    dmlops.functional.clear_cache()
    for _ in range(3):
        assert np.array_equal(
            dmlops.padding(x, [1, 1], [1, 1], value=1.7, feature_level="4_1"), cold
        )
        with pytest.raises(InvalidDescriptorError):
            dmlops.padding(x, [1, 1], [1, 1], value=1.7)
        assert dmlops.tile(x, [2, 1]).shape == (4, 3)
        assert dmlops.depth_to_space(x4, 2, order="CRD").shape == (1, 1, 4, 4)
        with pytest.raises(UnsupportedFeatureLevelError):
            dmlops.depth_to_space(x4, 2, order="CRD", feature_level="2_0")


def _naive_slice1(x: np.ndarray, starts: list[int], sizes: list[int], steps: list[int]) -> Any:
    """SLICE1 element by element (each axis's positions from its window, reversed by a
    negative step)."""
    axes = []
    for start, size, step in zip(starts, sizes, steps, strict=True):
        positions = list(range(start, start + size))
        axes.append(positions[:: 1 if step > 0 else -1][:: abs(step)])
    out = np.empty([len(a) for a in axes], x.dtype)
    for index in np.ndindex(*out.shape):
        out[index] = x[tuple(a[i] for a, i in zip(axes, index, strict=True))]
    return out


@needs_engine
def test_a_small_plan_makes_its_output_and_runs_in_one_engine_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A warm small call on the engine, a lone copy (a tile, a stride-2 window) as much as
    several (a join) or one with a fill (a padding), is the engine's `fresh`: a new array
    of numpy's own, every bit right (NaN payloads, -0.0); a large one is not."""
    host = np.arange(16 * 12, dtype=np.uint32).reshape(16, 12)
    host[0, :3] = [0x7FC00001, 0x80000000, 0xFFFFFFFF]
    x = host.view(np.float32)
    calls = {
        "tile": (lambda: dmlops.tile(x, [2, 1]), np.tile(x, (2, 1))),
        "window": (
            lambda: dmlops.slice1(x, [1, 0], [15, 12], [2, -1]),
            _naive_slice1(x, [1, 0], [15, 12], [2, -1]),
        ),
        "join": (lambda: dmlops.join([x, x[:3]], 0), np.concatenate([x, x[:3]], 0)),
        "padding": (
            lambda: dmlops.padding(x, [1, 0], [0, 2], value=-0.0),
            np.pad(x, ((1, 0), (0, 2)), constant_values=-0.0),
        ),
    }
    for name, (call, want) in calls.items():
        made = _call_of(call)
        assert isinstance(made.produce, functools.partial), name
        assert made.produce.func is native.fresh, name
        for _ in range(3):
            got = call()
            assert type(got) is np.ndarray and got.flags.c_contiguous and got.flags.owndata
            assert got.dtype == want.dtype and _bits(got) == _bits(want), name
    big = np.zeros((512, 256), np.float32)  # (1 MiB: the pool and the engine's memory)
    made = _call_of(lambda: dmlops.slice1(big, [0, 0], [512, 256], [1, -1]))
    assert not (isinstance(made.produce, functools.partial) and made.produce.func is native.fresh)


@needs_engine
def test_a_warm_call_into_a_given_output_runs_in_one_engine_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once compiled, a call into a given numpy output runs from its signature in one
    engine call (the general path is never entered) and returns that output; an output that
    meets the input, one made read-only and a new one of another shape take the general
    path, which stages, refuses or compiles them, nothing written before a refusal."""
    from dmlops.arrays import strided
    from dmlops.errors import BindingError, DmlError

    x = np.arange(8 * 6, dtype=np.int16).reshape(8, 6)
    out = np.full((4, 6), -1, np.int16)
    window = ([0, 0], [8, 6], [2, -1])
    want = _naive_slice1(x, *window)
    assert dmlops.slice1(x, *window, out=out) is out and _bits(out) == _bits(want)
    joined = np.empty((10, 6), np.int16)
    dmlops.join([x, x[:2]], 0, out=joined)
    padded = np.empty((9, 6), np.int16)
    dmlops.padding(x, [1, 0], [0, 0], value=7, out=padded)

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path")

    monkeypatch.setattr(strided, "_dispatch", general)
    for _ in range(2):
        out[...] = -1
        assert dmlops.slice1(x, *window, out=out) is out and _bits(out) == _bits(want)
        assert dmlops.join([x, x[:2]], 0, out=joined) is joined
        assert _bits(joined) == _bits(np.concatenate([x, x[:2]], 0))
        assert dmlops.padding(x, [1, 0], [0, 0], value=7, out=padded) is padded
        assert _bits(padded) == _bits(np.pad(x, ((1, 0), (0, 0)), constant_values=7))
    with pytest.raises(AssertionError, match="general path"):
        dmlops.slice1(x, *window, out=np.empty((4, 6), np.int16)[::-1])  # (new: strided)
    monkeypatch.undo()
    # in place (the output is the input): staged by the general path, as numpy would read it
    square = np.arange(36, dtype=np.float64).reshape(6, 6)
    reverse = ([0, 0], [6, 6], [-1, 1])
    dmlops.slice1(np.empty_like(square), *reverse, out=np.empty_like(square))  # (compiled)
    expected = square[::-1].copy()
    assert dmlops.slice1(square, *reverse, out=square) is square
    assert _bits(square) == _bits(expected)
    out.flags.writeable = False
    with pytest.raises(BindingError, match="read-only"):
        dmlops.slice1(x, *window, out=out)
    assert _bits(out) == _bits(want)
    wrong = np.full((5, 6), 3, np.int16)
    with pytest.raises(DmlError, match="SLICE1"):
        dmlops.slice1(x, *window, out=wrong)
    assert (wrong == 3).all()


@needs_engine
def test_the_engines_one_output_calls_refuse_what_they_cannot_bind() -> None:
    """`fresh` and `into` check their arguments: counts, a tuple of fills, a list of inputs,
    at most 15 arrays bound, a table whose header fits."""
    f32 = DataType.FLOAT32
    plan = Slice1Desc(BufferTensorDesc(f32, (4, 4)), BufferTensorDesc(f32, (4, 4)), (0, 0),
                      (4, 4), (1, -1)).lower()  # fmt: skip
    executor = nb.NumpyBackend().executor(plan)
    assert executor.engine is not None
    table = executor.engine.table
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    made = native.fresh(table, np.empty, (4, 4), np.dtype(np.float32), (), [x])
    assert made.tolist() == x[:, ::-1].tolist()
    out = np.zeros((4, 4), np.float32)
    assert native.into(table, (), (x,), out) is True and _bits(out) == _bits(made)
    assert native.into(table, (), [out], out) is False  # (meets its input: nothing written)
    with pytest.raises(TypeError):
        native.fresh(table, np.empty, (4, 4), np.float32, ())
    with pytest.raises(TypeError):
        native.into(table, [], [x], out)
    with pytest.raises(TypeError):
        native.into(table, (), x, out)
    with pytest.raises(ValueError, match="at most 15"):
        native.into(table, (), [x] * 16, out)
    with pytest.raises(ValueError, match="bindings"):
        native.into(table, (), [x, x], out)
    with pytest.raises(ValueError, match="header"):
        native.into(b"\0" * 8, (), [x], out)
    with pytest.raises(ValueError, match="contiguous"):
        native.into(table, (), [x], np.zeros((4, 8), np.float32)[:, ::2])  # (numpy's refusal)


@needs_engine
def test_an_in_place_scatter_of_whole_rows_runs_on_the_engines_kernel() -> None:
    """SCATTER_ND of whole rows into its own data (a KV-cache write) runs on the engine's
    indexed kernel, not numpy's fancy assignment: rows in index order (the later of two to
    one row stays), negative indices counted from the end, every bit (NaN payloads); an index
    out of range is named with nothing written, and updates that are a view of the output are
    read as they were."""
    from dmlops.errors import IndexOutOfRangeError

    host = np.arange(10 * 6, dtype=np.uint32).reshape(10, 6)
    host[2, 1] = 0x7FC00001
    cache = host.view(np.float32).copy()
    updates = (np.arange(4 * 6, dtype=np.uint32).reshape(4, 6) + 0xFF800000).view(np.float32)
    rows = np.array([[7], [-1], [2], [7]])
    call = _call_of(lambda: dmlops.scatter_nd(cache.copy(), rows, updates, out=None))
    want = cache.copy()
    for (row,), update in zip(rows, updates, strict=True):  # (naive: in index order)
        want[row] = update
    for _ in range(3):
        data = cache.copy()
        assert dmlops.scatter_nd(data, rows, updates, out=data) is data
        assert _bits(data) == _bits(want)
    placed = _call_of(lambda: dmlops.scatter_nd(data, rows, updates, out=data))
    assert placed.run.natives is not None and placed.run._run == placed.run._general
    assert call.run.natives is not None
    bad = np.array([[7], [10], [2], [1]])
    data = cache.copy()
    with pytest.raises(IndexOutOfRangeError, match="is 10"):
        dmlops.scatter_nd(data, bad, updates, out=data)
    assert _bits(data) == _bits(cache)
    data = cache.copy()
    view = data[:4]  # (the updates are the output's first rows)
    want = cache.copy()
    for (row,), update in zip(rows, cache[:4].copy(), strict=True):
        want[row] = update
    dmlops.scatter_nd(data, rows, view, out=data)
    assert _bits(data) == _bits(want)


def test_a_warm_call_into_a_given_output_without_into_runs_from_its_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A join of twenty arrays into a given output (too many bindings for the engine's
    one-call `into`): warm, its compiled call runs straight from the signature, the general
    path never entered; into an output that one of its inputs views, the general path
    stages that input first (every value right)."""
    parts = [np.full((2, 3), k, np.float32) for k in range(20)]
    out = np.empty((40, 3), np.float32)
    dmlops.join(parts, 0, out=out)  # (compiled)
    entered: list[int] = []

    def counted(*a: Any, real: Any = dispatch._dispatch, seen: Any = entered) -> Any:
        seen.append(1)
        return real(*a)

    monkeypatch.setattr(dispatch, "_dispatch", counted)
    again = [p + 1 for p in parts]
    assert dmlops.join(again, 0, out=out) is out and not entered
    assert np.array_equal(out, np.concatenate(again, 0))
    inside = [out[2 * k : 2 * k + 2] for k in range(20)][::-1]  # (views of the output)
    want = np.concatenate([v.copy() for v in inside], 0)
    assert dmlops.join(inside, 0, out=out) is out and entered
    assert np.array_equal(out, want)
