"""GPU calls run on the caller's stream and device: torch side streams, CuPy streams, JAX,
CUDA graph capture and replay, explicit streams, a second GPU.

A long-spinning kernel is queued on the caller's stream before each input is written, so a
call that does not wait for that stream reads the old data every time, not by chance."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dmlops
from conftest import HAS_CUDA
from dmlops import BindingError, BufferTensorDesc, DataType, Device, Graph, JoinDesc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]

SPIN_NS = 20_000_000  # 20 ms: far longer than any launch takes to start elsewhere

_SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start = clock64();
    while ((clock64() - start) < ns) { }
}
"""


def _torch():  # type: ignore[no-untyped-def]
    return pytest.importorskip("torch")


def _spin_torch(torch) -> None:  # type: ignore[no-untyped-def]
    torch.cuda._sleep(SPIN_NS)  # cycles: at ~2 GHz about 10 ms


def _spin_cupy() -> None:
    import cupy

    kernel = cupy.RawKernel(_SPIN, "spin")
    kernel((1,), (1,), (np.uint64(SPIN_NS),))  # on CuPy's current stream


def _ops(torch, x):  # type: ignore[no-untyped-def]
    """Each operator on x (a [4, 6, 8] tensor) and what torch gives for it."""
    return [
        (
            lambda: dmlops.slice(x, [1, 0, 2], [2, 3, 3], [1, 2, 2]),
            lambda: x[1:3, 0:6:2, 2:8:2],
        ),
        (
            lambda: dmlops.slice1(x, [0, 0, 0], [4, 6, 8], [-1, 2, -3]),
            lambda: x.flip(0, 2)[:, 0:6:2, 0:8:3],
        ),
        (lambda: dmlops.split(x, 1, [1, 5])[1], lambda: x[:, 1:]),
        (lambda: dmlops.join([x, x.flip(2)], 2), lambda: torch.cat([x, x.flip(2)], 2)),
    ]


def test_torch_side_stream_orders_inputs_and_outputs() -> None:
    torch = _torch()
    src = torch.arange(4 * 6 * 8, dtype=torch.float32, device="cuda").reshape(4, 6, 8)
    x = torch.zeros_like(src)
    for k in range(4):
        torch.cuda.synchronize()
        x.zero_()
        torch.cuda.synchronize()
        call, want = _ops(torch, x)[k]
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            _spin_torch(torch)
            x.copy_(src)  # lands only after the spin
            y = call()
            seen = y.clone()  # consumed on s right after the call
        torch.cuda.synchronize()
        expect = want()
        assert torch.equal(seen, expect), k
        assert torch.equal(y, expect), k


def test_torch_side_stream_out_and_outs() -> None:
    torch = _torch()
    src = torch.arange(8 * 16, dtype=torch.int32, device="cuda").reshape(8, 16)
    x = torch.zeros_like(src)
    out = torch.full((8, 16), -1, dtype=torch.int32, device="cuda")
    parts = [torch.full((8, n), -1, dtype=torch.int32, device="cuda") for n in (4, 12)]
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        _spin_torch(torch)
        x.copy_(src)
        dmlops.slice1(x, [0, 0], [8, 16], [-1, 1], out=out)
        dmlops.split(x, 1, [4, 12], outs=parts)
        seen = [out.clone(), *(p.clone() for p in parts)]
    torch.cuda.synchronize()
    assert torch.equal(seen[0], src.flip(0))
    assert torch.equal(seen[1], src[:, :4]) and torch.equal(seen[2], src[:, 4:])


def test_eight_threads_each_on_its_own_torch_stream() -> None:
    torch = _torch()
    errors: list[str] = []

    def work(k: int) -> None:
        s = torch.cuda.Stream()
        x = torch.zeros((64, 96), dtype=torch.float32, device="cuda")
        with torch.cuda.stream(s):
            for i in range(6):
                torch.cuda._sleep(SPIN_NS // 10)
                x.fill_(k * 100 + i)
                a, b = dmlops.split(x, 1, [32, 64])
                y = dmlops.join([b, a], 1)
                if not bool((y == k * 100 + i).all()):  # .all() waits on s
                    errors.append(f"thread {k} step {i}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_cupy_non_blocking_stream() -> None:
    import cupy

    src = cupy.arange(32 * 40, dtype=cupy.uint16).reshape(32, 40)
    x = cupy.zeros_like(src)
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        _spin_cupy()
        x[...] = src
        y = dmlops.slice1(x, [0, 0], [32, 40], [-2, -3])
        seen = y.copy()
    s.synchronize()
    assert bool((seen == src[::-2, ::-3]).all())


def test_explicit_stream_for_execute_and_dispatch() -> None:
    torch = _torch()
    import cupy

    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT32, [1, 1, 4, 8])] * 2,
        BufferTensorDesc(DataType.FLOAT32, [1, 1, 8, 8]),
        2,
    )
    op = Device(backend="cuda").create_operator(desc)
    a = torch.ones(32, device="cuda")
    b = torch.zeros(32, device="cuda")
    out = torch.empty(64, device="cuda")
    torch.cuda.synchronize()
    for stream in (torch.cuda.Stream(), cupy.cuda.Stream(non_blocking=True)):
        handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else stream.ptr
        out.fill_(-1)
        torch.cuda.synchronize()
        ext = torch.cuda.ExternalStream(handle)
        with torch.cuda.stream(ext):
            _spin_torch(torch)
            b.fill_(float(handle % 7 + 2))  # written on the explicit stream after the spin
        op.execute([a, b], [out], stream=stream)
        with torch.cuda.stream(ext):
            seen = out.clone()
        torch.cuda.synchronize()
        assert torch.equal(seen, torch.cat([a, b]))
        table = op.bind([a, b], [out])
        out.fill_(-1)
        torch.cuda.synchronize()
        with torch.cuda.stream(ext):
            _spin_torch(torch)
            b.fill_(5.0)
        table.dispatch(handle)  # a raw cudaStream_t
        with torch.cuda.stream(ext):
            seen = out.clone()
        torch.cuda.synchronize()
        assert torch.equal(seen, torch.cat([a, b]))


def test_not_a_stream_is_refused() -> None:
    import cupy

    x = cupy.zeros(16, cupy.float32)
    table = Device(backend="cuda").create_operator(
        JoinDesc(
            [BufferTensorDesc(DataType.FLOAT32, [1, 1, 1, 8])] * 2,
            BufferTensorDesc(DataType.FLOAT32, [1, 1, 1, 16]),
            3,
        )
    )
    with pytest.raises(dmlops.DmlError, match="not a CUDA stream"):
        table.execute([x[:8], x[8:]], [cupy.empty(16, cupy.float32)], stream="s")


def test_jax_arrays_in_and_out() -> None:
    jnp = pytest.importorskip("jax.numpy")
    import jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU here")
    x = jnp.arange(6 * 10, dtype=jnp.float32).reshape(6, 10)
    y = dmlops.slice1(x, [0, 0], [6, 10], [-1, -2])
    assert type(y).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x)[::-1, ::-2])
    a, b = dmlops.split(x, 0, [2, 4])
    np.testing.assert_array_equal(np.asarray(dmlops.join([b, a], 0)), np.roll(np.asarray(x), -2, 0))


# -- CUDA graph capture -----------------------------------------------------------------


def _capture_cases(torch):  # type: ignore[no-untyped-def]
    """(name, inputs, run into preallocated outputs, reference) for capture tests."""
    x = torch.zeros((4, 6, 8), dtype=torch.float32, device="cuda")
    out_slice = torch.empty((2, 3, 3), device="cuda")
    out_slice1 = torch.empty((4, 3, 3), device="cuda")
    outs_split = [torch.empty((4, n, 8), device="cuda") for n in (2, 4)]
    past = torch.zeros((1, 2, 5, 8), device="cuda")
    new = torch.zeros((1, 2, 1, 8), device="cuda")
    kv = torch.empty((1, 2, 6, 8), device="cuda")
    desc = JoinDesc(
        [
            BufferTensorDesc(DataType.FLOAT32, [1, 2, 5, 8]),
            BufferTensorDesc(DataType.FLOAT32, [1, 2, 1, 8]),
        ],
        BufferTensorDesc(DataType.FLOAT32, [1, 2, 6, 8]),
        2,
    )
    kv_bound = torch.empty_like(kv)
    table = Device(backend="cuda").create_operator(desc).bind([past, new], [kv_bound])
    g = Graph()
    gx = g.input(BufferTensorDesc(DataType.FLOAT32, [4, 6, 8]))
    parts = g.split(gx, 1, [3, 3])
    gy = g.join([parts[1], parts[0]], 1)
    compiled = g.compile([gy], Device(backend="cuda"))
    graph_out = torch.empty((4, 6, 8), device="cuda")
    executed = torch.empty_like(kv)
    execute_op = Device(backend="cuda").create_operator(desc)
    return [
        (
            [x],
            lambda: dmlops.slice(x, [1, 0, 2], [2, 3, 3], [1, 2, 2], out=out_slice),
            lambda: out_slice,
            lambda: x[1:3, 0:6:2, 2:8:2],
        ),
        (
            [x],
            lambda: dmlops.slice1(x, [0, 0, 0], [4, 6, 8], [1, -2, -3], out=out_slice1),
            lambda: out_slice1,
            lambda: x.flip(1, 2)[:, ::2, ::3],
        ),
        (
            [x],
            lambda: dmlops.split(x, 1, [2, 4], outs=outs_split),
            lambda: outs_split[1],
            lambda: x[:, 2:],
        ),
        (
            [past, new],
            lambda: dmlops.join([past, new], 2, out=kv),
            lambda: kv,
            lambda: torch.cat([past, new], 2),
        ),
        ([past, new], table.dispatch, lambda: kv_bound, lambda: torch.cat([past, new], 2)),
        (
            [past, new],
            lambda: execute_op.execute([past, new], [executed]),
            lambda: executed,
            lambda: torch.cat([past, new], 2),
        ),
        (
            [x],
            lambda: compiled.execute([x], [graph_out]),
            lambda: graph_out,
            lambda: torch.cat([x[:, 3:], x[:, :3]], 1),
        ),
    ]


@pytest.mark.parametrize("case", range(7))
def test_torch_graph_capture_replays_with_new_data(case: int) -> None:
    torch = _torch()
    inputs, run, result, want = _capture_cases(torch)[case]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        run()  # warm: compiled, tables uploaded
    torch.cuda.current_stream().wait_stream(s)
    _capture_and_replay(torch, inputs, run, result, want)


def _capture_and_replay(torch, inputs, run, result, want) -> None:  # type: ignore[no-untyped-def]
    """Capture `run` into a CUDA graph, then replay it on new input data three times."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    for step in range(3):
        for k, t in enumerate(inputs):
            t.copy_(torch.randn(t.shape, device="cuda") + 100 * step + k)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(result(), want()), step


def test_cold_call_during_capture_works() -> None:
    torch = _torch()
    x = torch.zeros((3, 5, 7), device="cuda")
    out = torch.empty((3, 5, 7), device="cuda")
    s = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.stream(s), torch.cuda.graph(graph, stream=s):
        # a signature, a plan and addresses never seen before: tables are made in capture
        dmlops.slice1(x, [0, 0, 0], [3, 5, 7], [-1, -1, -1], out=out)
    for step in range(2):
        x.copy_(torch.randn(x.shape, device="cuda") + step)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, x.flip(0, 1, 2))
    _turn_over(torch, lambda o: dmlops.slice1(x, [0, 0, 0], [3, 5, 7], [-1, -1, -1], out=o), out)
    x.copy_(torch.randn(x.shape, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x.flip(0, 1, 2))


def _turn_over(torch, call, like) -> None:  # type: ignore[no-untyped-def]
    """The same call on 40 other outputs (all alive, so all at new addresses): every table
    the cache held before is pushed out, and new tables are allocated."""
    others = [torch.empty_like(like) for _ in range(40)]
    for o in others:
        call(o)
    torch.cuda.synchronize()


def test_warm_call_captured_keeps_its_tables() -> None:
    torch = _torch()
    past = torch.zeros((1, 4, 7, 16), device="cuda")
    new = torch.zeros((1, 4, 1, 16), device="cuda")
    kv = torch.empty((1, 4, 8, 16), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        dmlops.join([past, new], 2, out=kv)  # warm, outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dmlops.join([past, new], 2, out=kv)
    with torch.cuda.stream(s):  # the stream the tables were uploaded on: its pool reuses them
        _turn_over(torch, lambda o: dmlops.join([past, new], 2, out=o), kv)
    for step in range(3):
        past.copy_(torch.randn(past.shape, device="cuda") + step)
        new.copy_(torch.randn(new.shape, device="cuda") - step)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(kv, torch.cat([past, new], 2)), step


def test_cupy_stream_capture_replays_with_new_data() -> None:
    import cupy

    x = cupy.zeros((6, 9), cupy.float32)
    out = cupy.empty((6, 9), cupy.float32)
    parts = [cupy.empty((6, n), cupy.float32) for n in (4, 5)]
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        dmlops.slice1(x, [0, 0], [6, 9], [-1, -1], out=out)  # warm
        dmlops.split(x, 1, [4, 5], outs=parts)
        s.begin_capture()
        dmlops.slice1(x, [0, 0], [6, 9], [-1, -1], out=out)
        dmlops.split(x, 1, [4, 5], outs=parts)
        graph = s.end_capture()
    for step in range(3):
        x[...] = cupy.random.standard_normal((6, 9), dtype=cupy.float32) + step
        cupy.cuda.Device().synchronize()
        graph.launch(s)
        s.synchronize()
        assert bool((out == x[::-1, ::-1]).all())
        assert bool((parts[0] == x[:, :4]).all()) and bool((parts[1] == x[:, 4:]).all())


# -- two GPUs ---------------------------------------------------------------------------


def _gpus() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


two_gpus = pytest.mark.skipif(HAS_CUDA and _gpus() < 2, reason="needs two GPUs")


@two_gpus
def test_second_gpu_through_every_entry_point() -> None:
    torch = _torch()
    import cupy

    torch.cuda.set_device(0)
    x = torch.arange(2 * 4 * 6 * 8, dtype=torch.float32, device="cuda:1").reshape(2, 4, 6, 8)
    a, b = dmlops.split(x, 2, [2, 4])
    assert a.device == torch.device("cuda:1")
    assert torch.equal(dmlops.join([b, a], 2), torch.cat([x[:, :, 2:], x[:, :, :2]], 2))
    assert torch.equal(
        dmlops.slice1(x, [0, 0, 0, 0], [2, 4, 6, 8], [-1, -1, -1, -1]), x.flip(0, 1, 2, 3)
    )
    with cupy.cuda.Device(1):
        c = cupy.arange(64, dtype=cupy.int16).reshape(8, 8)
    assert cupy.cuda.runtime.getDevice() == 0
    parts = dmlops.split(c, 0, [3, 5])
    assert parts[0].device.id == 1
    # compared on the host: CuPy's comparison of GPU-1 arrays from GPU 0 enables peer access,
    # an API error that compute-sanitizer counts
    np.testing.assert_array_equal(cupy.asnumpy(dmlops.join(parts, 0)), cupy.asnumpy(c))
    # Device API and a compiled graph on buffers of GPU 1
    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT32, [1, 1, 4, 8])] * 2,
        BufferTensorDesc(DataType.FLOAT32, [1, 1, 8, 8]),
        2,
    )
    out = torch.empty(64, device="cuda:1")
    p, q = torch.ones(32, device="cuda:1"), torch.full((32,), 2.0, device="cuda:1")
    Device(backend="cuda").create_operator(desc).execute([p, q], [out])
    assert torch.equal(out, torch.cat([p, q]))
    g = Graph()
    gi = g.input(BufferTensorDesc(DataType.FLOAT32, [8, 8]))
    top, bottom = g.split(gi, 0, [3, 5])
    op = g.compile([g.join([bottom, top], 0)], Device(backend="cuda"))
    gout = torch.empty(64, device="cuda:1")
    op.execute([out], [gout])
    assert torch.equal(
        gout.reshape(8, 8), torch.cat([out.reshape(8, 8)[3:], out.reshape(8, 8)[:3]])
    )
    assert torch.cuda.current_device() == 0 and cupy.cuda.runtime.getDevice() == 0
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


@two_gpus
def test_second_gpu_onnx_and_dask() -> None:
    torch = _torch()
    onnx = pytest.importorskip("onnx")
    da = pytest.importorskip("dask.array")
    import cupy
    import dask
    from onnx import TensorProto, helper

    import dmlops.dask
    import dmlops.onnx

    node = helper.make_node("Concat", ["a", "b"], ["y"], axis=1)
    graph = helper.make_graph(
        [node],
        "cat",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    a = torch.ones((2, 3), device="cuda:1")
    b = torch.zeros((2, 3), device="cuda:1")
    (y,) = dmlops.onnx.run(model, {"a": a, "b": b}, Device(backend="cuda"))
    assert y.device == torch.device("cuda:1") and torch.equal(y, torch.cat([a, b], 1))
    with cupy.cuda.Device(1):
        host = np.arange(8 * 12, dtype=np.float32).reshape(8, 12)
        arr = da.from_array(cupy.asarray(host), chunks=(4, 6), asarray=False)
    result = dmlops.dask.slice1(arr, [0, 0], [8, 12], [-1, -1])
    # each chunk's task runs on a dask thread whose current device is GPU 0: the chunks stay
    # on GPU 1 (dask's own assembly of them in .compute() runs on its thread's current
    # device, as CuPy's concatenate does, so the chunks are taken as they come)
    chunks = dask.compute(*result.to_delayed().ravel())
    assert {c.device.id for c in chunks} == {1}
    with cupy.cuda.Device(1):
        out = cupy.concatenate(
            [cupy.concatenate(chunks[k : k + 2], axis=1) for k in range(0, len(chunks), 2)]
        )
    np.testing.assert_array_equal(cupy.asnumpy(out), host[::-1, ::-1])


@two_gpus
def test_mixed_devices_are_refused_and_the_process_stays_healthy() -> None:
    torch = _torch()
    a = torch.ones((2, 8), device="cuda:0")
    b = torch.ones((2, 8), device="cuda:1")
    with pytest.raises(
        BindingError,
        match=r"JOIN.InputTensors\[0\] is on cuda:0 and JOIN.InputTensors\[1\] on cuda:1",
    ):
        dmlops.join([a, b], 0)
    out = torch.empty((2, 8), device="cuda:1")
    with pytest.raises(BindingError, match=r"cuda:0 and .*OutputTensor on cuda:1"):
        dmlops.slice1(a, [0, 0], [2, 8], [1, 1], out=out)
    assert torch.equal(dmlops.join([b, b], 0), torch.ones((4, 8), device="cuda:1"))
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


# -- the indexed path: side streams, graph capture (warm and cold), a second GPU -----------


def _indexed_cases(torch):  # type: ignore[no-untyped-def]
    """(inputs rewritten between replays, run, result, what torch gives) per indexed call."""
    table = torch.zeros((64, 16), device="cuda")
    ids = torch.randint(0, 64, (24,), device="cuda")
    rows = torch.empty((24, 16), device="cuda")
    cache = torch.zeros((32, 8), device="cuda")
    slots = torch.randperm(32, device="cuda")[:6].reshape(6, 1)
    updates = torch.zeros((6, 8), device="cuda")
    x = torch.zeros((10, 12), device="cuda")
    along = torch.randint(0, 12, (10, 5), device="cuda")
    picked = torch.empty((10, 5), device="cuda")

    def scattered():  # type: ignore[no-untyped-def]
        return cache

    expected_cache = cache.clone()

    def want_cache():  # type: ignore[no-untyped-def]
        return expected_cache.index_copy(0, slots.reshape(-1), updates)

    # more rows than one launch resolves: a winner table, cleared before each replay
    big = torch.zeros((4096, 4), device="cuda")
    big_slots = torch.randperm(4096, device="cuda")[:1500].reshape(1500, 1)
    big_updates = torch.zeros((1500, 4), device="cuda")
    expected_big = big.clone()
    # ... and targets that meet, rows a warp each: the copy frees the table's slots itself
    wide = torch.zeros((4096, 256), device="cuda")
    wide_slots = torch.randint(0, 1500, (5000, 1), device="cuda")
    wide_updates = torch.zeros((5000, 256), device="cuda")
    expected_wide = wide.clone()

    def want_wide():  # type: ignore[no-untyped-def]
        order = torch.arange(5000, device="cuda")
        last = torch.full((4096,), -1, device="cuda").scatter_reduce(
            0, wide_slots.reshape(-1), order, "amax"
        )  # the last row to each slot wins
        got = expected_wide.clone()
        hit = last >= 0
        got[hit] = wide_updates[last[hit]]
        return got

    return [
        ([table], lambda: dmlops.gather(table, ids, 0, out=rows), lambda: rows,
         lambda: table.index_select(0, ids)),
        ([updates], lambda: dmlops.scatter_nd(cache, slots, updates, out=cache), scattered,
         want_cache),
        ([x], lambda: dmlops.gather_elements(x, along, 1, out=picked), lambda: picked,
         lambda: torch.gather(x, 1, along)),
        ([big_updates], lambda: dmlops.scatter_nd(big, big_slots, big_updates, out=big),
         lambda: big,
         lambda: expected_big.index_copy(0, big_slots.reshape(-1), big_updates)),
        ([wide_updates], lambda: dmlops.scatter_nd(wide, wide_slots, wide_updates, out=wide),
         lambda: wide, want_wide),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(5))
def test_indexed_calls_on_a_side_stream_and_in_graph_capture(case: int) -> None:
    torch = _torch()
    inputs, run, result, want = _indexed_cases(torch)[case]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for k, t in enumerate(inputs):
            _spin_torch(torch)  # the write lands late on s: a call off s reads old data
            t.copy_(torch.randn(t.shape, device="cuda") + k)
        run()
        assert torch.equal(result(), want())
    torch.cuda.current_stream().wait_stream(s)
    _capture_and_replay(torch, inputs, run, result, want)


def test_cold_indexed_call_during_capture_works() -> None:
    torch = _torch()
    table = torch.zeros((37, 9), device="cuda")
    ids = torch.tensor([36, 0, 5, 5, 17], device="cuda")
    rows = torch.empty((5, 9), device="cuda")
    s = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.stream(s), torch.cuda.graph(graph, stream=s):
        dmlops.gather(table, ids, 0, out=rows)  # a signature never seen: made in capture
    for step in range(2):
        table.copy_(torch.randn(table.shape, device="cuda") + step)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(rows, table[ids])


@two_gpus
def test_second_gpu_indexed_calls() -> None:
    torch = _torch()
    import cupy

    torch.cuda.set_device(0)
    table = torch.randn((50, 8), device="cuda:1")
    ids = torch.tensor([[4, 49], [0, 4]], device="cuda:1")
    got = dmlops.gather(table, ids, 0)
    assert got.device == torch.device("cuda:1") and torch.equal(got, table[ids])
    cache = torch.zeros((16, 8), device="cuda:1")
    slots = torch.tensor([[3], [9]], device="cuda:1")
    dmlops.scatter_nd(cache, slots, table[:2], out=cache)
    assert torch.equal(cache[[3, 9]], table[:2]) and int((cache != 0).any(1).sum()) == 2
    along = torch.randint(0, 8, (50, 3), device="cuda:1")
    assert torch.equal(dmlops.gather_elements(table, along, 1), torch.gather(table, 1, along))
    with cupy.cuda.Device(1):
        c = cupy.arange(40, dtype=cupy.int64).reshape(10, 4)
        i = cupy.asarray([9, 1])
    g = dmlops.gather(c, i, 0)
    assert g.device.id == 1
    np.testing.assert_array_equal(cupy.asnumpy(g), np.arange(40).reshape(10, 4)[[9, 1]])
    with pytest.raises(BindingError):
        dmlops.gather(table, ids.to("cuda:0"), 0)  # arrays on two GPUs: refused by name
    assert torch.cuda.current_device() == 0 and cupy.cuda.runtime.getDevice() == 0
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


# -- warm calls on torch tensors: addresses read at once, new outputs by new_empty -------


def test_warm_torch_calls_stage_overlaps_and_follow_the_stream() -> None:
    """The same calls three times (the first compiles, the later take the lean path):
    outputs that overlap inputs are staged, in-place scatters write only their rows, views
    with offsets are read where they are, and each call runs on the current stream."""
    torch = _torch()
    g = torch.Generator(device="cpu").manual_seed(7)
    side = torch.cuda.Stream()
    for _ in range(3):
        z = torch.arange(1 << 14, dtype=torch.float32, device="cuda")
        want = torch.cat([z[1 << 13 :], z[: 1 << 13]])
        dmlops.join([z[1 << 13 :], z[: 1 << 13]], 0, out=z)  # out= is both inputs
        assert torch.equal(z, want)

        x = torch.arange(64 * 256, dtype=torch.float32, device="cuda").reshape(64, 256)
        want = x.flip(1)
        dmlops.slice1(x, [0, 0], [64, 256], [1, -1], out=x)  # reversed in place
        assert torch.equal(x, want)

        table = torch.randn(1000, 64, generator=g).cuda()
        ids = torch.randint(0, 1000, (32,), generator=g).cuda()
        view = table[10:]  # a view: its data_ptr is past the storage's start
        assert torch.equal(dmlops.gather(view, ids % 990, 0), view[ids % 990])

        cache = torch.zeros(4096, 64, device="cuda")
        rows = torch.randperm(4096, generator=g)[:32].cuda()
        upd = torch.randn(32, 64, generator=g).cuda()
        expected = cache.clone().index_copy_(0, rows, upd)
        assert dmlops.scatter_nd(cache, rows[:, None], upd, out=cache) is cache
        assert torch.equal(cache, expected)

        with torch.cuda.stream(side):  # queued behind a long kernel on the side stream
            src = torch.zeros(1000, 64, device="cuda")
            _spin_torch(torch)
            src.fill_(3.0)
            got = dmlops.gather(src, ids, 0)
        side.synchronize()
        assert bool((got == 3.0).all())


# rows of 32 bytes (a thread a row), 33 elements (a warp a row, element by element), 1 KiB
# (a warp a row in 16-byte chunks) — each freeing its winning slots itself — and 4 KiB
# (several warps a row: the table cleared before each call)
@pytest.mark.parametrize("width", [8, 33, 256, 1024])
@pytest.mark.parametrize("graphed", [True, False])
def test_warm_winner_table_scatters_replay_with_new_data(
    graphed: bool, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scatter whose targets meet, of more rows than one launch resolves (a winner table),
    called again and again on the same tensors with new updates and new targets: each
    call's last row per target wins, as one CUDA graph replayed (GRAPHED_WINNERS) or
    launched piece by piece, whether the table is cleared per call or by the copy."""
    torch = _torch()
    from dmlops.backends.cuda import indexed

    monkeypatch.setattr(indexed, "GRAPHED_WINNERS", graphed)
    g = torch.Generator(device="cpu").manual_seed(11)
    cache = torch.zeros((4096, width), device="cuda")
    slots = torch.zeros((6000, 1), dtype=torch.int64, device="cuda")
    updates = torch.zeros((6000, width), device="cuda")
    for step in range(4):
        slots.copy_(torch.randint(0, 3000, (6000, 1), generator=g))  # duplicates
        updates.copy_(torch.randn((6000, width), generator=g) + step)
        want, rows = cache.cpu().numpy().copy(), updates.cpu().numpy()
        for row, slot in enumerate(slots.reshape(-1).tolist()):
            want[slot] = rows[row]  # in order: the last row per slot wins
        assert dmlops.scatter_nd(cache, slots, updates, out=cache) is cache
        assert np.array_equal(cache.cpu().numpy(), want), step
