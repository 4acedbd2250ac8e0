"""CUDA strided plans whose piece tables travel in their launches' parameters (`ByValue`):
prepared once per device and alignment of the bound addresses, so calls whose outputs are
new arrays (at new addresses) prepare nothing; each bit-exact against the numpy backend.
Plans whose tables are longer go through uploaded tables (`Prepared`) as before."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import dmlops
from conftest import HAS_CUDA

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How many times the CUDA backend made by-value launches and uploaded tables."""
    from dmlops.backends.cuda import CudaBackend

    counts = {"by_value": 0, "prepare": 0}
    for name in counts:
        original = getattr(CudaBackend, name)

        def wrapped(self: Any, *args: Any, _name: str = name, _f: Any = original) -> Any:
            counts[_name] += 1
            return _f(self, *args)

        monkeypatch.setattr(CudaBackend, name, wrapped)
    dmlops.functional.clear_cache()
    yield counts
    dmlops.functional.clear_cache()


def _host(t: Any) -> np.ndarray[Any, Any]:
    return t.cpu().numpy()  # type: ignore[no-any-return]


def _kept(call: Callable[[], Any], n: int) -> list[Any]:
    import torch

    results = [call() for _ in range(n)]
    torch.cuda.synchronize()
    assert len({r.data_ptr() for r in results}) == n  # (every output at a new address)
    return results


def test_calls_at_new_addresses_prepare_nothing(counted: dict[str, int]) -> None:
    import torch

    x = torch.randn(6, 7, 8, device="cuda")
    window = ([0, 0, 0], [6, 7, 8], [-1, 2, 1])
    want = dmlops.slice1(_host(x), *window)
    for r in _kept(lambda: dmlops.slice1(x, *window), 40):
        assert np.array_equal(_host(r), want)
    assert counted == {"by_value": 1, "prepare": 0}
    parts = [torch.randn(4, 5, device="cuda") for _ in range(8)]
    joined = dmlops.join([_host(p) for p in parts], 1)
    for r in _kept(lambda: dmlops.join(parts, 1), 20):
        assert np.array_equal(_host(r), joined)
    assert counted == {"by_value": 2, "prepare": 0}


def test_each_alignment_has_its_own_launches(counted: dict[str, int]) -> None:
    import torch

    flat = torch.randn(1 + 6 * 7 * 8, device="cuda")
    aligned, off = flat[:-1].view(6, 7, 8), flat[1:].view(6, 7, 8)  # (4 bytes apart)
    window = ([0, 1, 0], [6, 6, 8], [1, 1, -1])
    for x in (aligned, off, aligned, off):
        want = dmlops.slice1(_host(x), *window)

        def call(x: Any = x) -> Any:
            return dmlops.slice1(x, *window)

        for r in _kept(call, 5):
            assert np.array_equal(_host(r), want)
    assert counted == {"by_value": 2, "prepare": 0}


def test_fills_and_outputs_given(counted: dict[str, int]) -> None:
    import torch

    x = torch.arange(24, dtype=torch.float32, device="cuda").reshape(2, 3, 4)
    want = dmlops.padding(_host(x), [1, 0, 2], [0, 2, 1], "CONSTANT", -1.5)
    for r in _kept(lambda: dmlops.padding(x, [1, 0, 2], [0, 2, 1], "CONSTANT", -1.5), 10):
        assert np.array_equal(_host(r), want)
    outs = [torch.empty(2, 3, 4, device="cuda") for _ in range(10)]
    for o in outs:
        dmlops.slice1(x, [0, 0, 0], [2, 3, 4], [1, -1, 1], out=o)
    flipped = _host(x)[:, ::-1]
    assert all(np.array_equal(_host(o), flipped) for o in outs)
    sequence = torch.empty(5, 7, dtype=torch.int32, device="cuda")
    dmlops.fill_value_sequence([5, 7], 3, -2, out=sequence)
    assert np.array_equal(_host(sequence), np.arange(3, 3 - 2 * 35, -2).reshape(5, 7))
    assert counted["prepare"] == 0


def test_long_tables_upload_as_before(counted: dict[str, int]) -> None:
    import torch

    parts = [torch.randn(2, 3, device="cuda") for _ in range(600)]  # (6,000 words and more)
    want = np.concatenate([_host(p) for p in parts], 1)
    for r in _kept(lambda: dmlops.join(parts, 1), 3):
        assert np.array_equal(_host(r), want)
    assert counted["by_value"] == 1 and counted["prepare"] == 3  # (declined once: remembered)


def test_uploaded_tables_where_by_value_is_off(
    counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from dmlops.backends import cuda as cuda_backend

    monkeypatch.setattr(cuda_backend, "BY_VALUE", False)
    dmlops.functional.clear_cache()
    x = torch.randn(6, 7, 8, device="cuda")
    want = dmlops.slice1(_host(x), [0, 0, 0], [6, 7, 8], [1, -1, 2])
    for r in _kept(lambda: dmlops.slice1(x, [0, 0, 0], [6, 7, 8], [1, -1, 2]), 4):
        assert np.array_equal(_host(r), want)
    assert counted == {"by_value": 0, "prepare": 4}


def test_by_value_launches_in_graph_capture_and_on_side_streams() -> None:
    import torch

    dmlops.functional.clear_cache()
    x = torch.randn(5, 9, device="cuda")
    out = torch.empty(5, 9, device="cuda")
    dmlops.slice1(x, [0, 0], [5, 9], [-1, -1], out=torch.empty(5, 9, device="cuda"))  # (warm)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.cuda.graph(graph, stream=side):
        dmlops.slice1(x, [0, 0], [5, 9], [-1, -1], out=out)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.stream(side):  # (the same launches at other addresses meanwhile)
        others = _kept(lambda: dmlops.slice1(x, [0, 0], [5, 9], [-1, -1]), 8)
    for step in range(3):
        x.copy_(torch.randn(5, 9, device="cuda") + step)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, x.flip(0, 1)), step
    assert all(o.shape == (5, 9) for o in others)


def test_indexed_calls_at_new_addresses_prepare_once(indexed_preparations: list[Any]) -> None:
    """Gathers into new outputs and scatters into new targets: launches without a winner
    table are prepared once per alignment, each call's addresses written into their
    parameters; a source 4 bytes off is another alignment."""
    import torch

    made = indexed_preparations
    dmlops.functional.clear_cache()
    flat = torch.randn(1 + 1000 * 64, device="cuda")
    x, off = flat[:-1].view(1000, 64), flat[1:].view(1000, 64)
    idx = torch.randint(-1000, 1000, (32,), device="cuda")
    for source in (x, off, x):
        want = np.take(_host(source), _host(idx), 0)

        def gathered(source: Any = source) -> Any:
            return dmlops.gather(source, idx, 0)

        for r in _kept(gathered, 20):
            assert np.array_equal(_host(r), want)
    assert len(made) == 2
    ie = torch.randint(0, 64, (1000, 8), device="cuda")
    for r in _kept(lambda: dmlops.gather_elements(x, ie, 1), 20):
        assert np.array_equal(_host(r), np.take_along_axis(_host(x), _host(ie), 1))
    rows = torch.randint(0, 300, (40, 1), device="cuda")  # (repeats: the shared-memory scan)
    updates = torch.randn(40, 64, device="cuda")
    for _ in range(2):
        targets = [torch.randn(300, 64, device="cuda") for _ in range(10)]
        wants = [_host(t).copy() for t in targets]
        for w in wants:
            for j, r in enumerate(_host(rows)[:, 0].tolist()):  # (in order: the later wins)
                w[r] = _host(updates)[j]
        for t in targets:
            assert dmlops.scatter_nd(t, rows, updates, out=t) is t
        torch.cuda.synchronize()
        assert all(np.array_equal(_host(t), w) for t, w in zip(targets, wants, strict=True))
    assert len(made) == 4


def test_threads_launching_the_same_warm_launches_keep_their_addresses() -> None:
    import threading

    import torch

    dmlops.functional.clear_cache()
    x = torch.randn(1000, 64, device="cuda")
    idx = torch.randint(0, 1000, (64,), device="cuda")
    want = np.take(_host(x), _host(idx), 0)
    window = ([0, 0], [1000, 64], [-1, 1])
    flipped = dmlops.slice1(_host(x), *window)
    dmlops.gather(x, idx, 0), dmlops.slice1(x, *window)  # (prepared)
    results: list[list[Any]] = [[] for _ in range(8)]

    def work(k: int) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(50):
                results[k].append((dmlops.gather(x, idx, 0), dmlops.slice1(x, *window)))
        stream.synchronize()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    for made in results:
        for g, f in made:
            assert np.array_equal(_host(g), want)
            assert np.array_equal(_host(f), flipped)


def test_tables_upload_where_the_by_value_kernels_cannot_be_built(
    counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from dmlops.backends.cuda import CudaBackend

    grid = CudaBackend._grid

    def refusing(cp: Any, state: Any, group: Any) -> tuple[int, int]:
        if any(name == "TABLE_WORDS" for name, _ in group.defines):
            raise RuntimeError("NVRTC failed on a dmlops kernel (a stand-in)")
        return grid(cp, state, group)

    monkeypatch.setattr(CudaBackend, "_grid", staticmethod(refusing))
    x = torch.randn(6, 7, 8, device="cuda")
    want = dmlops.slice1(_host(x), [0, 0, 0], [6, 7, 8], [1, 1, -1])
    for r in _kept(lambda: dmlops.slice1(x, [0, 0, 0], [6, 7, 8], [1, 1, -1]), 3):
        assert np.array_equal(_host(r), want)
    assert counted == {"by_value": 1, "prepare": 3}


def test_a_thread_with_no_cuda_context_yet_launches_warm_calls() -> None:
    """A warm call from a thread whose CUDA calls never reached the driver (CuPy's pool
    handing back a freed block, as in Dask's worker threads) makes its device's context
    current and launches: tables by value, warm indexed launches, a conversion, a
    compaction (NONZERO_COORDINATES)."""
    import ctypes
    import threading

    import cupy

    dmlops.functional.clear_cache()
    x = cupy.asarray(np.random.default_rng(3).standard_normal((100, 64)).astype(np.float32))
    idx = cupy.asarray(np.array([5, 0, 99, 7, 7], np.int64))
    sparse = cupy.where(x > 1, x, 0).reshape(1, 1, 100, 64)
    calls: dict[str, Callable[[], Any]] = {
        "by value": lambda: dmlops.slice1(x, [0, 0], [100, 64], [-1, 2]),
        "indexed": lambda: dmlops.gather(x, idx, 0),
        "conversion": lambda: dmlops.cast(x, np.float16),
        "compaction": lambda: dmlops.nonzero_coordinates(sparse)[1],
    }
    wants = {name: cupy.asnumpy(call()) for name, call in calls.items()}  # (blocks freed)
    driver = ctypes.CDLL("libcuda.so.1")
    for name, call in calls.items():
        found: dict[str, Any] = {}

        def work(call: Callable[[], Any] = call, found: dict[str, Any] = found) -> None:
            context = ctypes.c_void_p()
            driver.cuCtxGetCurrent(ctypes.byref(context))
            found["context"] = context.value
            try:
                found["result"] = call()
            except RuntimeError as error:  # (raised again below, in the test's thread)
                found["error"] = error

        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert found["context"] is None, name  # (none current: the case under test)
        assert "error" not in found, (name, found.get("error"))
        got = cupy.asnumpy(found["result"])
        assert got.dtype == wants[name].dtype and got.tobytes() == wants[name].tobytes(), name


def test_long_tables_at_new_addresses_are_planned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A join of 600 arrays (tables too long to pass by value: uploaded) into new outputs,
    20 calls kept: each bit-exact, the plan's groups made twice in all (the by-value
    attempt, which finds the tables too long, then `Tables`); with tables off, once a call
    more."""
    import torch

    from dmlops.backends import cuda
    from dmlops.backends.cuda import CudaBackend

    parts = [torch.full((2, 8), float(k), device="cuda") for k in range(600)]
    want = np.concatenate([_host(p) for p in parts], 0)
    made: list[int] = []
    original = CudaBackend._groups

    def counted(self: Any, *args: Any) -> Any:
        made.append(1)
        return original(self, *args)

    monkeypatch.setattr(CudaBackend, "_groups", counted)
    for tables in (True, False):
        monkeypatch.setattr(cuda, "TABLES", tables)
        dmlops.functional.clear_cache()
        made.clear()
        for r in _kept(lambda: dmlops.join(parts, 0), 20):
            assert np.array_equal(_host(r), want)
        assert len(made) == 2 if tables else len(made) >= 20, (tables, len(made))


def test_warm_calls_make_their_outputs_from_one_template() -> None:
    """From its second warm call a call of one new output makes it with `output_maker`
    (`empty_like` of an expanded element): each output new memory, row-major, bit-exact;
    a warm call first met under CUDA graph capture makes none there (its memory would come
    from the graph's pool): the replay is exact, and the next call outside makes it."""
    import torch

    from dmlops.calls import dispatch

    dmlops.functional.clear_cache()
    x = torch.randn(100, 64, device="cuda")
    idx = torch.tensor([5, 0, 99, 7], device="cuda")
    want = _host(x)[[5, 0, 99, 7]]
    kept = [dmlops.gather(x, idx, 0) for _ in range(6)]
    torch.cuda.synchronize()
    assert len({t.data_ptr() for t in kept}) == 6
    for t in kept:
        assert t.shape == (4, 64) and t.stride() == (64, 1)
        assert np.array_equal(_host(t), want)
    ((call, _),) = dispatch._CACHE.items.values()
    assert call.hot.__name__ == "hot"  # (the maker's)

    dmlops.functional.clear_cache()
    dmlops.gather(x, idx, 0)  # (compiled: its hot call made, not yet run)
    ((call, _),) = dispatch._CACHE.items.values()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = dmlops.gather(x, idx, 0)
    assert call.hot.__name__ == "hot_new"
    graph.replay()
    torch.cuda.synchronize()
    assert np.array_equal(_host(captured), want)
    after = dmlops.gather(x, idx, 0)
    assert call.hot.__name__ == "hot" and np.array_equal(_host(after), want)
