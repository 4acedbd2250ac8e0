"""The webgpu backend on a real adapter (skipped without one): strategies, arrays, errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import HAS_WEBGPU
from dmlops.errors import BindingError, DmlError

pytestmark = [
    pytest.mark.webgpu,
    pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter"),
]

DTYPES = [
    np.float32, np.float16, np.uint32, np.uint16, np.uint8, np.int32,
    np.int16, np.int8, np.float64, np.uint64, np.int64,
]  # fmt: skip


def _random(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    raw = np.random.default_rng(seed).integers(
        0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize
    )
    return raw.astype(np.uint8).view(dtype).reshape(shape)


def _same(got: Any, want: np.ndarray) -> None:
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


@settings(max_examples=80, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    rows=st.integers(1, 6),
    cols=st.integers(1, 70),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_windows_of_every_type_and_alignment_are_bit_exact(
    dtype: Any, rows: int, cols: int, data: st.DataObject, seed: int
) -> None:
    import dmlops.webgpu as wg

    host = _random((rows, cols), dtype, seed)
    shift = data.draw(st.integers(0, 3))  # the input starts `shift` elements into its buffer
    backing = _random((rows * cols + shift,), dtype, seed + 1)
    backing[shift:] = host.reshape(-1)
    x = wg.asarray(backing)[shift:].reshape(rows, cols)
    c0 = data.draw(st.integers(0, cols - 1))
    width = data.draw(st.integers(1, cols - c0))
    step = data.draw(st.sampled_from([1, -1, 2, -2, 3]))
    args = ([0, c0], [rows, width], [1, step])
    _same(dmlops.slice1(x, *args), dmlops.slice1(host, *args))


def _shared(group: Any) -> bool:
    """Whether a dispatch asks for BOX_VECTORS' share of the workgroups wanted."""
    from dmlops.backends.webgpu.strategies import BOX_VECTORS

    return bool(group.kernel == "pack" and group.dims >= BOX_VECTORS[0])


def _chosen(dispatches: list[Any], kernel: str) -> None:
    assert {g.kernel for g in dispatches} == set(kernel.split("+")), [g.kernel for g in dispatches]


@contextmanager
def _workgroups_wanted(count: int) -> Iterator[None]:
    """The element-wise dispatches split into at least `count` workgroups, with a fresh call
    cache before and after."""
    from dmlops.backends.webgpu import WebGpuBackend

    backend = WebGpuBackend.instance()
    held = backend.workgroups_wanted
    backend.workgroups_wanted = count
    dmlops.functional.clear_cache()
    try:
        yield
    finally:
        backend.workgroups_wanted = held
        dmlops.functional.clear_cache()


@pytest.fixture(params=[0, 2, 1 << 20], ids=["few", "some", "many"])
def workgroups(request: pytest.FixtureRequest) -> Any:
    """The element-wise dispatches split into at least this many workgroups (0: as a CPU
    adapter runs them, 1 << 20: one element per thread); a fresh call cache either way."""
    with _workgroups_wanted(request.param):
        yield request.param


def test_each_strategy_is_chosen_and_exact(dispatches: list[Any], workgroups: int) -> None:
    import dmlops.webgpu as wg

    cases = [  # (dtype, shape, window, kernel)
        (np.float32, (64, 64), ([0, 4], [64, 48], [1, 1]), "vec4"),
        (np.float32, (64, 64), ([0, 0], [64, 64], [1, -1]), "vec4r4"),
        (np.float16, (64, 64), ([0, 0], [64, 64], [1, -1]), "vec4r2"),
        (np.int8, (64, 64), ([0, 0], [64, 64], [1, -1]), "vec4r1"),
        (np.float64, (64, 64), ([0, 0], [64, 64], [1, -1]), "vec4r8"),
        (np.float32, (64, 64), ([0, 0], [64, 32], [1, 2]), "pick4x2p0"),
        (np.float32, (64, 64), ([0, 0], [64, 64], [1, 4]), "pick4x4p0"),
        (np.float64, (64, 64), ([0, 0], [64, 64], [1, 2]), "pick8x2p0"),
        (np.float32, (64, 64), ([0, 0], [64, 30], [1, 2]), "u32"),  # rows of 60 bytes
        (np.float64, (64, 64), ([0, 1], [64, 31], [1, 3]), "u32"),
        (np.float16, (64, 63), ([0, 1], [64, 50], [1, 1]), "rows16+rows"),
        (np.int8, (64, 131), ([0, 3], [64, 125], [1, 1]), "rows16+rows"),
        (np.int8, (64, 61), ([0, 3], [64, 57], [1, 1]), "packed"),  # short rows
        (np.int8, (64, 61), ([0, 3], [64, 13], [1, 1]), "packed"),  # shorter than a block
        # short rows of whole destination words from inside source words: funnel-shifted
        (np.float16, (64, 12), ([0, 1], [64, 10], [1, 1]), "pack"),
        (np.int8, (64, 61), ([0, 3], [64, 12], [1, 1]), "funnel"),  # every row's own phase
        (np.uint16, (4, 5, 7, 12), ([1, 2, 3, 1], [3, 3, 4, 10], [1, 1, 1, 1]), "pack"),
        (np.int8, (64, 64), ([0, 1], [64, 60], [1, 1]), "funnel"),
        (np.int8, (64, 131), ([0, 1], [64, 64], [1, 1]), "rows16+rows"),  # 64 bytes: blocks
        (np.int8, (64, 64), ([0, 0], [64, 64], [1, 2]), "pick1x2p0"),  # whole vectors
        (np.int8, (64, 64), ([0, 0], [64, 64], [2, 4]), "pick1x4p0"),
        (np.float16, (64, 64), ([0, 0], [64, 64], [2, 2]), "pick2x2p0"),
        (np.float16, (64, 128), ([0, 0], [64, 128], [1, 4]), "pick2x4p0"),
        (np.int8, (64, 64), ([0, 0], [64, 60], [1, 2]), "packed"),  # rows of 30 bytes
        (np.uint16, (64, 64), ([0, 1], [64, 61], [1, -3]), "pack"),
        (np.float16, (64, 64), ([0, 1], [32, 29], [2, 2]), "pack"),  # rows of 30 bytes
        (np.float16, (64, 64), ([0, 1], [32, 31], [2, 2]), "pick2x2p1"),
    ]
    seen: set[int] = set()  # elements per thread of the element-wise dispatches
    for k, (dtype, shape, window, kernel) in enumerate(cases):
        host = _random(shape, dtype, k)
        x = wg.asarray(host)
        dispatches.clear()
        got = dmlops.slice1(x, *window)
        _chosen(dispatches, kernel)
        # (high-rank pack boxes ask for a share of the workgroups: BOX_VECTORS)
        seen |= {g.per_thread for g in dispatches if g.per_thread and not _shared(g)}
        _same(got, dmlops.slice1(host, *window))
    if workgroups == 2:  # the small dispatches here: 1, 2 or 4 elements a thread
        assert seen & {2, 4} and 8 not in seen, seen
    else:
        assert seen == ({8} if workgroups == 0 else {1}), seen
    for k, dtype in enumerate((np.int8, np.float16)):
        # the four block phases merged into one copy of contiguous destination rows
        host = _random((1, 8, 6, 10), dtype, 50 + k)
        dispatches.clear()
        got = dmlops.depth_to_space(wg.asarray(host), 2)
        _chosen(dispatches, "packed" if dtype is np.int8 else "pack")
        _same(got, dmlops.depth_to_space(host, 2))
        # written at a stride (every other element of a given output): merged bytes
        out = wg.asarray(np.zeros((6, 20), dtype))
        dispatches.clear()
        dmlops.slice1(wg.asarray(host[0, 0]), [0, 0], [6, 10], [1, 1], out=out[:, ::2])
        _chosen(dispatches, "bytes")
        want = np.zeros((6, 20), dtype)
        want[:, ::2] = host[0, 0]
        _same(out, want)
    transposes = ((np.float32, "transpose4"), (np.int64, "transpose8"))
    transposes += ((np.float16, "packed_transpose"), (np.int8, "packed_transpose"))
    for k, (dtype, kernel) in enumerate(transposes):
        host = _random((70, 45), dtype, 100 + k)
        x = wg.asarray(host)
        dispatches.clear()
        got = dmlops.slice1(x.T, [1, 2], [40, 66], [1, -1])
        _chosen(dispatches, kernel)
        _same(got, dmlops.slice1(np.ascontiguousarray(host.T), [1, 2], [40, 66], [1, -1]))
    for k, dtype in enumerate((np.float16, np.uint16)):
        # even unit-stride axes and strides, word-aligned ends: 2 x 2 blocks of whole words
        host = _random((70, 46), dtype, 110 + k)
        x = wg.asarray(host)
        for window in (([2, 2], [40, 66], [1, 1]), ([2, 2], [40, 64], [1, 2])):
            dispatches.clear()
            got = dmlops.slice1(x.T, *window)
            _chosen(dispatches, "transpose2")
            _same(got, dmlops.slice1(np.ascontiguousarray(host.T), *window))


def test_picked_rows_of_every_phase_and_direction_are_exact(dispatches: list[Any]) -> None:
    """Every 2nd, 3rd or 4th element, forwards and backwards, from every start in a group:
    the pick kernels where the rows are whole vectors, the same bytes as numpy either way."""
    import dmlops.webgpu as wg

    picked = 0
    for k, dtype in enumerate((np.int8, np.float16, np.float32, np.float64)):
        es = np.dtype(dtype).itemsize
        host = _random((8, 256 // es * 4), dtype, 200 + k)
        x = wg.asarray(host)
        cols = host.shape[1]
        for step in (2, -2, 3, -3, 4, -4):
            width = 64 // es * abs(step)  # 64 output bytes a row: whole vectors
            for start in range(abs(step) + 1):
                first = start if step > 0 else cols - 1 - start
                window = ([0, first if step > 0 else first - width + 1], [8, width], [1, step])
                dispatches.clear()
                got = dmlops.slice1(x, *window)
                picked += any(g.kernel.startswith("pick") for g in dispatches)
                _same(got, dmlops.slice1(host, *window))
    assert picked >= 40  # (the starts a vector's lanes line up with)


def test_rows_of_whole_words_are_picked_a_word_at_a_time(dispatches: list[Any]) -> None:
    """1- and 2-byte rows that are whole words but not whole vectors (36 bytes): every
    2nd, 3rd or 4th element from every start, both directions, by the word pick kernels
    where a word's elements line up with the groups, the same bytes as numpy either way."""
    import dmlops.webgpu as wg

    picked = set()
    for k, dtype in enumerate((np.int8, np.float16)):
        es = np.dtype(dtype).itemsize
        host = _random((6, 160 // es), dtype, 300 + k)
        x = wg.asarray(host)
        cols = host.shape[1]
        for step in (2, -2, 3, -3, 4, -4):
            width = 36 // es  # 36 output bytes a row: nine words, no whole vector
            for start in range(abs(step) + 1):
                first = start if step > 0 else cols - 1 - start
                window = (
                    [0, min(first, first - (width - 1) * -step)],
                    [6, (width - 1) * abs(step) + 1],
                    [1, step],
                )
                dispatches.clear()
                got = dmlops.slice1(x, *window)
                picked |= {g.kernel for g in dispatches if g.kernel.startswith("pickw")}
                _same(got, dmlops.slice1(host, *window))
    for es in (1, 2):
        for step in (2, 3, 4):
            assert {f"pickw{es}x{step}p0", f"pickw{es}x{step}p0r"} <= picked, (es, step)


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from([np.float32, np.uint32, np.float64, np.int64, np.float16, np.int8]),
    shape=st.lists(st.integers(1, 70), min_size=2, max_size=4),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_permuted_views_are_bit_exact(
    dtype: Any, shape: list[int], data: st.DataObject, seed: int
) -> None:
    import dmlops.webgpu as wg

    host = _random(tuple(shape), dtype, seed)
    axes = data.draw(st.permutations(range(len(shape))))
    view = np.transpose(host, axes)
    x = wg.asarray(host)
    # the same permutation as a WebGpuArray view: strides permuted
    xv = x[...]
    xv = type(xv)(view.shape, xv.dtype, xv.block, xv._backend, xv.offset, view.strides)
    sizes = list(view.shape)
    _same(dmlops.slice1(xv, [0] * len(sizes), sizes, [1] * len(sizes)), np.ascontiguousarray(view))


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from([np.float16, np.uint16, np.int8, np.uint8, np.float32, np.int32]),
    rows=st.integers(16, 150),
    cols=st.integers(16, 90),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_windows_of_transposed_small_elements_are_bit_exact(
    dtype: Any, rows: int, cols: int, data: st.DataObject, seed: int
) -> None:
    """Crops of x.T (odd row lengths and offsets: destination words shared between tiles
    and rows), reversed along either axis: through the packed transpose (1- and 2-byte
    elements), the 2 x 2 block one (2-byte, even, ascending) or the element one."""
    import dmlops.webgpu as wg

    host = _random((rows, cols), dtype, seed)
    c0, r0 = data.draw(st.integers(0, cols - 16)), data.draw(st.integers(0, rows - 16))
    width = data.draw(st.integers(16, cols - c0))
    height = data.draw(st.integers(16, rows - r0))
    steps = [data.draw(st.sampled_from([1, -1])) for _ in range(2)]
    args = ([c0, r0], [width, height], steps)
    got = dmlops.slice1(wg.asarray(host).T, *args)
    _same(got, dmlops.slice1(np.ascontiguousarray(host.T), *args))


def test_256_way_split_is_one_dispatch_on_persistent_buffers(dispatches: list[Any]) -> None:
    import dmlops.webgpu as wg

    host = _random((256, 1024), np.float32, 7)
    x = wg.asarray(host)
    outs = [wg.empty((1, 1024), np.float32) for _ in range(256)]
    desc = dmlops.SplitDesc(
        dmlops.BufferTensorDesc("FLOAT32", (256, 1024)),
        [dmlops.BufferTensorDesc("FLOAT32", (1, 1024))] * 256,
        0,
    )
    table = dmlops.Device(backend="webgpu").create_operator(desc).bind([x], outs)
    dispatches.clear()
    table.dispatch()  # encoded through wgpu-py (validated) ...
    assert len(dispatches) == 1
    zeros = wg.asarray(np.zeros((1, 1024), np.float32))
    for o in outs[:3]:
        dmlops.slice(zeros, [0, 0], [1, 1024], [1, 1], out=o)
    dispatches.clear()
    table.dispatch()  # ... then through wgpu-native's C functions where available
    assert len(dispatches) == 1
    for k, o in enumerate(outs):
        _same(o, host[k : k + 1])


def test_device_webgpu_takes_numpy_in_and_out() -> None:
    host = _random((6, 10), np.int16, 3)
    out = np.zeros((3, 10), np.int16)
    got = dmlops.slice(host, [0, 0], [3, 10], [2, 1], device="webgpu", out=out)
    assert got is out
    _same(out, host[::2])
    pieces = dmlops.split(host, 1, [4, 6], device="webgpu")
    assert all(isinstance(p, np.ndarray) for p in pieces)
    _same(
        dmlops.join(pieces[::-1], 1, device="webgpu"), np.concatenate([host[:, 4:], host[:, :4]], 1)
    )
    before = out.copy()
    with pytest.raises(DmlError, match="SLICE"):
        dmlops.slice(host, [0, 0], [4, 10], [2, 1], device="webgpu", out=out)
    assert out.tobytes() == before.tobytes()  # a failed call writes nothing


def test_read_backs_of_every_size_class_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-backs go through a kept buffer per power-of-two size, or a buffer of their own
    above STAGING_KEPT; any offset and size comes back whole, from several threads too."""
    from concurrent.futures import ThreadPoolExecutor

    import dmlops.backends.webgpu as webgpu_backend
    import dmlops.webgpu as wg

    monkeypatch.setattr(webgpu_backend, "STAGING_KEPT", 4096)  # small: both paths run
    monkeypatch.setattr(webgpu_backend.WebGpuBackend.instance(), "_staging", {})
    hosts = [_random((n,), np.uint8, n) for n in (1, 3, 255, 256, 257, 4095, 5000, 70001)]
    arrays = [wg.asarray(h) for h in hosts]
    for h, a in zip(hosts, arrays, strict=True):
        for start in range(min(h.size, 5)):
            _same(a[start:], h[start:])
        _same(a[::-3], h[::-3])
    with ThreadPoolExecutor(4) as pool:
        for h, got in zip(hosts * 4, pool.map(lambda a: a.numpy(), arrays * 4), strict=True):
            _same(got, h)


def test_webgpu_arrays_index_like_numpy() -> None:
    import dmlops.webgpu as wg

    host = _random((5, 6, 7), np.uint8, 11)
    x = wg.asarray(host)
    for key in (np.s_[1], np.s_[:, ::-2], np.s_[..., 3], np.s_[2:, None, 1:5:3]):
        _same(x[key], host[key])
    _same(x.reshape(30, 7)[::3].T, host.reshape(30, 7)[::3].T)
    _same(dmlops.slice1(x[:, ::-1], [0, 0, 0], [5, 6, 7], [1, 1, -1]), host[:, ::-1, ::-1])
    with pytest.raises(TypeError, match="basic indexing"):
        x[[0, 1]]


def test_binding_and_mixing_errors() -> None:
    import dmlops.webgpu as wg

    desc = dmlops.Slice1Desc(
        dmlops.BufferTensorDesc("FLOAT32", (4,)), dmlops.BufferTensorDesc("FLOAT32", (4,)),
        [0], [4], [-1],
    )  # fmt: skip
    op = dmlops.Device(backend="webgpu").create_operator(desc)
    with pytest.raises(BindingError, match="not a WebGPU buffer"):
        op.execute([np.zeros(4, np.float32)], [wg.empty((4,), np.float32)])
    with pytest.raises(BindingError, match="mix host"):
        dmlops.join([wg.asarray(np.zeros(2, np.float32)), np.zeros(2, np.float32)], 0)
    buf = wg.asarray(np.arange(8, dtype=np.float32))
    with pytest.raises(BindingError, match="overlaps"):
        op.execute([buf[:4]], [buf[2:6]])


def test_adapter_errors_name_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import wgpu

    from dmlops.backends.webgpu import choose_adapter

    with pytest.raises(DmlError, match="no adapter matches 'no-such-gpu'; found: "):
        choose_adapter("no-such-gpu")
    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", lambda: [])
    with pytest.raises(DmlError, match=r"no Vulkan, Metal or Direct3D 12 adapter.*mesa-vulkan"):
        choose_adapter(None)


def test_graphs_run_unchanged_on_webgpu() -> None:
    import dmlops.webgpu as wg

    g = dmlops.Graph()
    x = g.input(dmlops.BufferTensorDesc("FLOAT16", (1, 4, 6, 6)))
    tl = g.slice(x, [0, 0, 0, 0], [1, 4, 3, 3], [1, 1, 2, 2])
    br = g.slice(x, [0, 0, 1, 1], [1, 4, 3, 3], [1, 1, 2, 2])
    y = g.join([tl, br], 1)
    op = g.compile([y], dmlops.Device(backend="webgpu"))
    host = _random((1, 4, 6, 6), np.float16, 5)
    out = wg.empty((1, 8, 3, 3), np.float16)
    op.execute([wg.asarray(host)], [out])
    _same(out, np.concatenate([host[..., ::2, ::2], host[..., 1::2, 1::2]], 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
def test_many_tiles_and_every_thread_step_are_exact(dtype: Any) -> None:
    """Copies of several tiles, so every invocation walks all its steps and carries."""
    import dmlops.webgpu as wg

    host = _random((300, 1001), dtype, 9)
    x = wg.asarray(host)
    for window in (
        ([0, 4], [300, 900], [1, 1]),
        ([1, 3], [299, 997], [-1, 3]),
        ([0, 0], [300, 1001], [2, -1]),
    ):
        _same(dmlops.slice1(x, *window), dmlops.slice1(host, *window))
    _same(dmlops.slice1(x.T, [0, 0], [1001, 300], [1, 1]), np.ascontiguousarray(host.T))


def test_large_arrays_reuse_pooled_buffers() -> None:
    """An array too large for an arena gets a buffer of its own; dropped, the buffer waits in
    a bounded pool for the next array of its rounded size (no new buffer to zero), and a
    reused array computes as a fresh one."""
    import gc

    from dmlops import webgpu
    from dmlops.backends.webgpu import WebGpuBackend
    from dmlops.backends.webgpu import memory as webgpu_memory

    memory = WebGpuBackend.instance().memory
    memory.trim()
    big = memory.arena_bytes // 4 + 4096
    first = memory.allocate(big)
    buffer, base = first.buffer, first.base
    del first
    gc.collect()
    assert memory.pooled_bytes >= big
    again = memory.allocate(big + 100)  # rounds to the same size
    assert again.buffer is buffer and again.base == base
    assert memory.pooled_bytes == 0
    del again
    gc.collect()
    # a pool over its bound destroys its oldest buffers
    held = webgpu_memory.POOL_BYTES
    try:
        webgpu_memory.POOL_BYTES = big  # room for one
        blocks = [memory.allocate(big) for _ in range(2)]
        del blocks
        gc.collect()
        assert memory.pooled_bytes <= big
    finally:
        webgpu_memory.POOL_BYTES = held
        memory.trim()
    n = big // 4 + 1
    x = np.arange(n, dtype=np.uint32)
    for _ in range(2):  # the second result lands in the first's pooled buffer
        y = dmlops.slice(webgpu.asarray(x), [1], [n - 1], [1])
        np.testing.assert_array_equal(y.numpy(), x[1:])
        del y
        gc.collect()


def test_kernel_modules_are_made_trusted_with_bounds_checks() -> None:
    """On wgpu-native, dmlops' modules are made through its trusted creation (bounds checks
    kept, no forced loop bounding) where it has one (wgpu 0.32 and later), else through
    wgpu-py's public creation (0.31, the newest for Python 3.10); a kernel that does not
    compile still raises."""
    import wgpu
    from wgpu.backends.wgpu_native import _api

    from dmlops.backends.webgpu import WebGpuBackend
    from dmlops.backends.webgpu.native import shader_module, trusted_modules

    device = WebGpuBackend.instance().device
    has_trusted = hasattr(_api.lib, "wgpuDeviceCreateShaderModuleTrusted")
    assert trusted_modules(device) is has_trusted
    assert not trusted_modules(object())
    good = "@compute @workgroup_size(1) fn main() { }"
    assert type(shader_module(device, good)).__name__ == "GPUShaderModule"
    with pytest.raises(wgpu.GPUValidationError, match="nope"):
        shader_module(device, "@compute @workgroup_size(1) fn main() { let x: u32 = nope; }")


def test_high_rank_boxes_of_short_rows(dispatches: list[Any], workgroups: int) -> None:
    """Boxes of four or more dimensions whose short rows of 1- and 2-byte elements are
    funnel-shifted (rows starting in every phase of a word, the aligned ones too) move a
    whole row an invocation (pad1 1 in the table); others of words and 16-byte vectors two
    elements half a row apart (pad1 0); the same bytes as numpy either way."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu.strategies import ROW_WORDS

    cases = [  # (dtype, shape, window, kernel)
        (np.float32, (5, 6, 7, 32), ([1, 1, 1, 4], [3, 4, 5, 8], [1, 1, 1, 1]), "vec4"),
        (np.float32, (5, 6, 7, 32), ([1, 1, 1, 0], [3, 4, 5, 8], [1, 1, 1, -1]), "vec4r4"),
        (np.float32, (5, 6, 7, 9), ([1, 1, 1, 1], [3, 4, 5, 3], [1, 1, 1, 1]), "u32"),
        (np.float64, (3, 4, 5, 6, 9), ([0, 1, 1, 1, 0], [3, 3, 4, 5, 3], [1, 1, 1, 1, 3]), "u32"),
        (np.uint16, (4, 5, 7, 12), ([1, 2, 3, 1], [3, 3, 4, 10], [1, 1, 1, 1]), "pack"),
        (np.int8, (3, 4, 5, 61), ([0, 1, 1, 3], [3, 3, 4, 12], [1, 1, 1, 1]), "funnel"),
        (np.uint16, (9,) * 7 + (12,), ([1] * 8, [3] * 7 + [10], [1] * 8), "pack"),
    ]
    for k, (dtype, shape, window, kernel) in enumerate(cases):
        host = _random(shape, dtype, 400 + k)
        dispatches.clear()
        got = dmlops.slice1(wg.asarray(host), *window)
        _chosen(dispatches, kernel)
        for g in dispatches:
            pads = g.table.reshape(-1, ROW_WORDS)[: g.pieces, 6:8]
            walked = int(kernel == "funnel")
            assert (pads[:, 1] == walked).all() and (pads[:, 0] == pads[0, 0]).all(), pads
        _same(got, dmlops.slice1(host, *window))


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from([np.float16, np.uint16, np.int16]),
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    data=st.data(),
    seed=st.integers(0, 2**31),
)
def test_two_byte_windows_into_one_run_are_packed_and_bit_exact(
    dtype: Any, shape: list[int], data: st.DataObject, seed: int
) -> None:
    """SLICE1 windows of 2-byte elements, every rank to 8, any steps (negative ones too),
    written as a new array (one aligned run): `pack` where the run is whole words, a last
    vector the run only partly fills included; the bytes numpy gives."""
    import dmlops.webgpu as wg

    host = _random(tuple(shape), dtype, seed)
    offsets, sizes, steps = [], [], []
    for n in shape:
        first = data.draw(st.integers(0, n - 1))
        size = data.draw(st.integers(1, n - first))
        step = data.draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
        offsets.append(first)
        sizes.append(size)
        steps.append(step)
    with _workgroups_wanted(data.draw(st.sampled_from([0, 1 << 20]))):
        got = dmlops.slice1(wg.asarray(host), offsets, sizes, steps)
    _same(got, dmlops.slice1(host, offsets, sizes, steps))


def test_two_byte_runs_take_pack_the_old_kernels_without_it(
    dispatches: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 2-byte layouts `pack` took over (a high-rank box of misaligned short rows, rows
    read at step -3 or 5, short rows): `pack` writes the bytes the kernels before it wrote
    (taken again with PACK_ELEMENTS emptied), into arrays of their own and into one arena
    buffer beside their input (the source read through the destination's binding)."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import strategies

    cases = [  # (dtype, shape, window, kernel before)
        (np.uint16, (9,) * 7 + (12,), ([1] * 8, [3] * 7 + [10], [1] * 8), "funnel"),
        (np.uint16, (64, 64), ([0, 1], [64, 61], [1, -3]), "packed"),
        (np.float16, (40, 80), ([0, 2], [40, 76], [1, 5]), "packed"),
        (np.float16, (300, 12), ([0, 1], [300, 10], [1, 1]), "funnel"),
    ]
    for k, (dtype, shape, window, before) in enumerate(cases):
        host = _random(shape, dtype, 700 + k)
        want = dmlops.slice1(host, *window)
        for kernels, elements in (("pack", (2,)), (before, ())):
            monkeypatch.setattr(strategies, "PACK_ELEMENTS", elements)
            dmlops.functional.clear_cache()
            dispatches.clear()
            _same(dmlops.slice1(wg.asarray(host), *window), want)
            _chosen(dispatches, kernels)
    monkeypatch.undo()
    dmlops.functional.clear_cache()


def test_high_rank_vector_boxes_ask_for_workgroups_as_flat_copies_do(
    dispatches: list[Any], workgroups: int
) -> None:
    """A dispatch of 16-byte vectors in four or more dimensions (the 5-D float32 box's
    layout) asks for as many workgroups as a flat copy of its count, where a `pack` box of
    as many dimensions asks for BOX_VECTORS' share (its threads move more vectors each); on
    a GPU adapter (workgroups wanted) vector boxes move a vector an invocation step, on a
    CPU adapter two half a row apart; either way the bytes are numpy's."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu.strategies import (
        BOX_VECTORS,
        ROW_WORDS,
        WORKGROUPS_WANTED,
        _per_thread,
        piece_of,
        pieces_of,
    )

    shape = [20, 20, 24, 24, 24]  # the layouts section's 5-D box: rows of 96 bytes
    src = [22 * 26 * 26 * 32, 26 * 26 * 32, 26 * 32, 32, 1]  # (outermost first, elements)
    dst = [20 * 24**3, 24**3, 24 * 24, 24, 1]
    box = piece_of(4, 0, 0, shape, src, dst)
    unfolded = piece_of(4, 0, 0, shape, src, dst, fold_boxes=False)
    words = piece_of(4, 4, 0, shape, src, dst)  # (a source not 16-byte aligned)
    flat = piece_of(4, 0, 0, [24 * 20 * 20, 24 * 24], [24 * 28, 1], [24 * 24, 1])
    kernels = [p.kernel for p in (box, unfolded, words, flat)]
    assert kernels == ["vec4", "vec4", "u32", "vec4"], kernels
    assert (box.sizes[0], box.extra, unfolded.sizes[0], unfolded.extra) == (3, (6, 0), 6, (1, 0))
    assert piece_of(4, 0, 0, [24 * 20 * 20, 24 * 24], [24 * 28, 1], [24 * 24, 1], False) == flat
    assert len(box.sizes) >= BOX_VECTORS[0] > len(flat.sizes) and box.count == flat.count
    # (a workgroups wanted at which a share of it would leave 8 vectors a thread)
    wanted = box.tiles(8) * BOX_VECTORS[1] // 2
    assert _per_thread([box], wanted) == _per_thread([flat], wanted) == 1
    # a uint16 8-D box of 20-byte rows at odd elements: `pack`, which takes the share
    boxes = [7] * 7 + [10]
    pack_src = [9**6 * 12, 9**5 * 12, 9**4 * 12, 9**3 * 12, 9**2 * 12, 9 * 12, 12, 1]
    pack_dst = [7**6 * 10, 7**5 * 10, 7**4 * 10, 7**3 * 10, 7**2 * 10, 7 * 10, 10, 1]
    (pack,) = pieces_of(2, 2, 0, boxes, pack_src, pack_dst)
    assert pack.kernel == "pack" and len(pack.sizes) >= BOX_VECTORS[0]
    assert _per_thread([pack], WORKGROUPS_WANTED) > _per_thread(
        [piece_of(2, 0, 0, [pack.count], [1], [1])], WORKGROUPS_WANTED
    )
    for k, shape in enumerate([(21, 21, 25, 25, 32), (3, 4, 5, 6, 7, 36)]):
        host = _random(shape, np.float32, 470 + k)
        rank = len(shape)
        window = ([*[0, 1, 0, 1, 1, 0][: rank - 1], 4], [2] * (rank - 1) + [24], [1] * rank)
        dispatches.clear()
        got = dmlops.slice1(wg.asarray(host), *window)
        _chosen(dispatches, "vec4")
        pads = dispatches[0].table.reshape(-1, ROW_WORDS)[: dispatches[0].pieces, 6:8]
        assert (pads == ([6, 0] if workgroups == 0 else [1, 0])).all(), pads
        _same(got, dmlops.slice1(host, *window))


@pytest.mark.parametrize("where", ["apart", "index with source", "index with output"])
def test_vector_rows_with_each_binding_of_their_buffers(dispatches: list[Any], where: str) -> None:
    """Indexed rows of whole 16-byte vectors move a vector an invocation whichever buffers
    hold the source, the output and the index (buffers of their own; the index in the
    source's buffer; in the output's, read as a vector's component): gathers and a
    scatter whose targets meet give numpy's bytes."""
    import gc

    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import WebGpuBackend

    memory = WebGpuBackend.instance().memory
    held = memory.arena_bytes
    memory.arena_bytes = 4096  # (arrays over 1 KiB get buffers of their own)
    try:
        rng = np.random.default_rng(len(where))
        host = rng.standard_normal((64, 16)).astype(np.float32)  # 4 KiB: its own buffer
        ids = rng.integers(-64, 64, 40).astype(np.int32)  # 160 bytes: an arena's
        small = rng.standard_normal((4, 16)).astype(np.float32)  # 256 bytes: an arena's
        want = np.take(host, ids, axis=0)
        if where == "index with output":  # a gather of 4 rows from the big table into
            table, x = wg.asarray(host), wg.asarray(ids[:4])  # an arena output
            got = dmlops.gather(table, x, 0)
            want = np.take(host, ids[:4], axis=0)
        elif where == "index with source":  # the table and its indices share an arena
            table, x = wg.asarray(small), wg.asarray((ids % 4).astype(np.int32))
            got = dmlops.gather(table, x, 0)
            want = np.take(small, ids % 4, axis=0)
        else:
            table, x = wg.asarray(host), wg.asarray(np.repeat(ids, 2))
            got = dmlops.gather(table, x, 0)
            want = np.take(host, np.repeat(ids, 2), axis=0)
        assert "indexed-vector-teams" in dispatches, dispatches
        _same(got, want)
        target = wg.asarray(host)
        slots = rng.integers(0, 64, (300, 1))
        updates = rng.standard_normal((300, 16)).astype(np.float32)
        dmlops.scatter_nd(target, wg.asarray(slots), wg.asarray(updates), out=target)
        expected = host.copy()
        for k, s in enumerate(slots[:, 0]):
            expected[s] = updates[k]
        _same(target, expected)
        del table, x, got, target
        gc.collect()
    finally:
        memory.arena_bytes = held


def test_held_dispatches_run_in_program_order() -> None:
    """Warm calls' dispatches wait in one open compute pass (up to MAX_PENDING) and are
    submitted before a write, a read, a buffer's destruction or a wait: a chain of calls, an
    input overwritten and a buffer destroyed while calls that read them are held all give
    what numpy gives in program order."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import WebGpuBackend
    from dmlops.backends.webgpu.native import MAX_PENDING

    backend = WebGpuBackend.instance()
    native = backend.native
    if native is None:
        pytest.skip("wgpu-py's public API in use: nothing is held")
    host = _random((64, 64), np.float32, 500)
    x = wg.asarray(host)
    a, b = wg.empty((32, 64), np.float32), wg.empty((32, 32), np.float32)
    window = ([0, 0], [64, 64], [2, 1]), ([0, 0], [32, 64], [1, 2])
    for _ in range(2):  # (the first call of a binding is encoded through wgpu-py)
        dmlops.slice1(x, *window[0], out=a)
        dmlops.slice1(a, *window[1], out=b)
    wg.synchronize()
    assert native.pending == 0
    before = native.submissions
    dmlops.slice1(x, *window[0], out=a)  # held: a from x as it is now ...
    dmlops.slice1(a, *window[1], out=b)  # ... and b from that a
    assert native.pending == 2 and native.submissions == before
    backend.native.write(x.block.buffer, x.block.offset, np.zeros(64 * 64, np.float32))
    assert native.pending == 0 and native.submissions == before + 1
    _same(b, host[::2, ::2])  # (the write came after the held calls)
    _same(x, np.zeros((64, 64), np.float32))

    big = wg.asarray(host)  # a buffer destroyed while a held call reads it
    out = wg.empty((64, 64), np.float32)
    for _ in range(2):
        dmlops.slice1(big, [0, 0], [64, 64], [1, -1], out=out)
    wg.synchronize()
    dmlops.slice1(big, [0, 0], [64, 64], [1, -1], out=out)
    assert native.pending == 1
    seen = []

    class Buffer:  # stands in for a pooled buffer the memory destroys
        def destroy(self) -> None:
            seen.append(native.pending)

    backend.memory._destroy([Buffer()])
    assert seen == [0]
    _same(out, host[:, ::-1])

    before = native.submissions
    for _ in range(MAX_PENDING + 1):
        dmlops.slice1(x, *window[0], out=a)
    assert native.submissions == before + 1 and native.pending == 1
    wg.synchronize()
    assert native.pending == 0 and native.submissions == before + 2


def test_a_large_dispatch_on_an_idle_queue_is_submitted_at_once() -> None:
    """The first dispatch of at least `early_workgroups` workgroups after a wait or a
    read-back is submitted at once, the ones after it held as before (small ones always
    held); the results are numpy's in program order either way."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import WebGpuBackend

    backend = WebGpuBackend.instance()
    native = backend.native
    if native is None:
        pytest.skip("wgpu-py's public API in use")
    host = _random((256, 256), np.float32, 650)
    x, a, b = wg.asarray(host), wg.empty((256, 128), np.float32), wg.empty((256, 128), np.float32)
    window = ([0, 0], [256, 256], [1, -2])
    dmlops.slice1(x, *window, out=a)  # (both calls warm: a first one goes through wgpu-py)
    dmlops.slice1(a, [0, 0], [256, 128], [-1, 1], out=b)
    wg.synchronize()
    held = native.early_workgroups
    try:
        for early, hurried in ((1, True), (1 << 30, False), (0, False)):
            native.early_workgroups = early
            wg.synchronize()
            assert native.idle
            before = native.submissions
            dmlops.slice1(x, *window, out=a)
            assert native.submissions == before + hurried and native.pending == int(not hurried)
            dmlops.slice1(a, [0, 0], [256, 128], [-1, 1], out=b)  # (held: the queue is busy)
            assert native.submissions == before + hurried and native.pending >= 1
            _same(b, host[::-1, ::-2])
            assert native.idle  # (the read-back waited for everything)
    finally:
        native.early_workgroups = held


def test_gpu_seconds_times_the_passes_a_call_runs() -> None:
    """`gpu_seconds` times each compute pass a call runs with timestamp queries (the held
    pass submitted first), sums them, and the call's results are as without it; the
    benchmarks' GPU-timed bound dispatch uses it."""
    from types import SimpleNamespace

    import dmlops.webgpu as wg
    from dmlops import BufferTensorDesc, DataType, Slice1Desc
    from dmlops.backends.webgpu import WebGpuBackend
    from dmlops.bench.webgpu import gpu_timed_seconds

    backend = WebGpuBackend.instance()
    if not backend.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    host = _random((256, 256), np.float32, 600)
    x, out = wg.asarray(host), wg.empty((256, 128), np.float32)
    window = ([0, 0], [256, 256], [1, -2])
    dmlops.slice1(x, *window, out=out)
    dmlops.slice1(x, *window, out=out)  # (held)
    seconds = backend.gpu_seconds(lambda: dmlops.slice1(x, *window, out=out))
    assert seconds is not None and 0 < seconds < 1
    assert backend.gpu_seconds(lambda: None) == 0
    _same(out, host[:, ::-2])
    t = BufferTensorDesc(DataType.FLOAT32, (256, 256))
    desc = Slice1Desc(t, BufferTensorDesc(DataType.FLOAT32, (256, 128)), *window)
    out2 = wg.empty((256, 128), np.float32)
    timed = gpu_timed_seconds(SimpleNamespace(desc=desc), x, out2, 3)
    assert timed is not None and 0 < timed < 1
    _same(out2, host[:, ::-2])


@pytest.mark.parametrize("invocations", [256, 512])
def test_tiled_transposes_with_each_workgroup_height(invocations: int) -> None:
    """The tiled transposes' workgroups of 32 x 8 and, where the device allows 512
    invocations, 32 x 16 for 2-byte cells: partial tiles, both exact."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import WebGpuBackend

    backend = WebGpuBackend.instance()
    if backend.invocations < invocations:
        pytest.skip(f"the device allows {backend.invocations} invocations")
    held, backend.invocations = backend.invocations, invocations
    backend._pipelines.clear()
    dmlops.functional.clear_cache()
    try:
        for k, dtype in enumerate((np.float16, np.float32)):
            host = _random((150, 98), dtype, 700 + k)
            window = ([2, 4], [90, 140], [1, 1])
            got = dmlops.slice1(wg.asarray(host).T, *window)
            _same(got, dmlops.slice1(np.ascontiguousarray(host.T), *window))
    finally:
        backend.invocations = held
        backend._pipelines.clear()
        dmlops.functional.clear_cache()


@pytest.mark.parametrize("spin", [0.0, 1e-9, 0.05])
def test_waits_and_read_backs_poll_then_block(spin: float) -> None:
    """A wait and a read-back poll the device without blocking for up to `spin_seconds`
    (a GPU adapter's), then block: every length of spin gives the results in full."""
    import dmlops.webgpu as wg
    from dmlops.backends.webgpu import WebGpuBackend

    native = WebGpuBackend.instance().native
    if native is None:
        pytest.skip("wgpu-py's public API in use")
    held, native.spin_seconds = native.spin_seconds, spin
    try:
        host = _random((512, 512), np.float32, 800)
        x, out = wg.asarray(host), wg.empty((512, 256), np.float32)
        for _ in range(3):
            dmlops.slice1(x, [0, 0], [512, 512], [-1, 2], out=out)
        wg.synchronize()
        assert native.pending == 0
        dmlops.slice1(x, [0, 1], [512, 511], [1, 2], out=out)
        _same(out, host[:, 1::2])
    finally:
        native.spin_seconds = held


def test_threads_calling_at_once_each_get_their_results() -> None:
    """Eight threads calling at once on arrays of their own, the first calls of the process
    among them (one backend made, not one a thread; dispatches held in the one open pass
    from every thread, reads and writes between them): each thread's results are its own,
    every time."""
    from concurrent.futures import ThreadPoolExecutor

    import dmlops.webgpu as wg

    def work(k: int) -> bool:
        host = _random((64, 96), np.int32, 900 + k)
        x = wg.asarray(host)
        out = wg.empty((32, 96), np.int32)
        ok = True
        for step in range(20):
            window = ([step % 2, 0], [64 - step % 2, 96], [2, -1])
            dmlops.slice1(x, *window, out=out)
            if step % 5 == 4:
                ok &= (
                    out.numpy().tobytes()
                    == np.ascontiguousarray(host[step % 2 :: 2, ::-1][:32]).tobytes()
                )
                host = host + 1
                x = wg.asarray(host)  # (a write while other threads' dispatches are held)
        return ok

    from dmlops.backends.webgpu import WebGpuBackend

    held, WebGpuBackend._instance = WebGpuBackend._instance, None
    try:
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(work, range(8)))
        assert WebGpuBackend._instance is not None
    finally:
        if WebGpuBackend._instance is not None:
            WebGpuBackend._instance.synchronize()
        WebGpuBackend._instance = held
        dmlops.functional.clear_cache()


def test_an_integer_index_gives_an_element_view() -> None:
    """`a[k]` of a WebGPU array is the 0-D view of element k (numpy gives a scalar for the
    stand-in's element: its address was taken from that copy)."""
    import dmlops.webgpu as wg

    a = wg.asarray(np.arange(12, dtype=np.uint32).reshape(3, 4))
    assert a[1, 2].numpy().tolist() == 6 and a[-1][-1].numpy().tolist() == 11
    assert a.reshape(-1)[5].shape == () and int(a.reshape(-1)[5].numpy()) == 5
