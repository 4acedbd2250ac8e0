"""dmlops.dask: lazy chunk-by-chunk operators, bit-identical to the functional API."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
import dask  # noqa: E402
from dask.array.chunk import getitem as chunk_getitem  # noqa: E402

import dmlops  # noqa: E402
import dmlops.dask as dd  # noqa: E402
from conftest import HAS_CUDA  # noqa: E402


def _chunks(draw: Any, n: int) -> tuple[int, ...]:
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3)))) if n > 1 else []
    bounds = [0, *cuts, n]
    return tuple(b - a for a, b in zip(bounds, bounds[1:], strict=False) if b > a)


@st.composite
def cases(draw: Any) -> tuple[np.ndarray, Any]:
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    dtype = draw(st.sampled_from([np.float32, np.int8, np.float64, np.uint16]))
    x = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    if dtype == np.float32:
        x.flat[0] = -0.0
    return x, da.from_array(x, chunks=tuple(_chunks(draw, n) for n in shape))


def _same(a: Any, b: Any) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@settings(max_examples=60, deadline=None)
@given(cases(), st.data())
def test_slice1_matches_the_functional_api(case: Any, data: st.DataObject) -> None:
    x, dx = case
    offs, sizes, strides = [], [], []
    for n in x.shape:
        o = data.draw(st.integers(0, n - 1))
        offs.append(o)
        sizes.append(data.draw(st.integers(1, n - o)))
        strides.append(data.draw(st.sampled_from([1, 2, 3, -1, -2])))
    with dask.config.set(scheduler="threads"):
        _same(dd.slice1(dx, offs, sizes, strides).compute(), dmlops.slice1(x, offs, sizes, strides))


@settings(max_examples=40, deadline=None)
@given(cases(), st.data())
def test_slice_split_and_join_match_the_functional_api(case: Any, data: st.DataObject) -> None:
    x, dx = case
    axis = data.draw(st.integers(0, x.ndim - 1))
    n = x.shape[axis]
    cut = data.draw(st.integers(0, n))
    sizes = [s for s in (cut, n - cut) if s] or [n]
    with dask.config.set(scheduler="threads"):
        pieces = dd.split(dx, axis, sizes)
        for p, q in zip(pieces, dmlops.split(x, axis, sizes), strict=True):
            _same(p.compute(), q)
        _same(
            dd.join([*pieces, dx], axis).compute(),
            dmlops.join([*dmlops.split(x, axis, sizes), x], axis),
        )
        offs = [0] * x.ndim
        out = [(k + 1) // 2 for k in x.shape]
        _same(
            dd.slice(dx, offs, out, [2] * x.ndim, chunks=2).compute(),
            dmlops.slice(x, offs, out, [2] * x.ndim),
        )


def test_errors_are_raised_eagerly_with_the_functional_messages() -> None:
    x = da.zeros((4, 4), chunks=2, dtype=np.float32)
    with pytest.raises(dmlops.DmlError) as lazy:
        dd.slice1(x, [0, 2], [1, 3], [1, 1])
    with pytest.raises(dmlops.DmlError) as eager:
        dmlops.slice1(np.zeros((4, 4), np.float32), [0, 2], [1, 3], [1, 1])
    assert str(lazy.value) == str(eager.value)
    with pytest.raises(dmlops.DmlError, match="SPLIT"):
        dd.split(x, 0, [1, 2])
    with pytest.raises(dmlops.DmlError, match="JOIN"):
        dd.join([x, x.astype(np.int32)], 0)


def test_a_negative_stride_reads_only_the_chunks_it_needs() -> None:
    x = np.arange(64, dtype=np.int32)
    dx = da.from_array(x, chunks=8)
    out = dd.slice1(dx, [0], [64], [-1], chunks=8)
    graph = dict(out.__dask_graph__())
    deps = [k for k in graph if isinstance(k, tuple) and k[0] == out.name]
    assert len(deps) == 8
    from dask.core import get_dependencies

    assert get_dependencies(graph, (out.name, 0)) == {(dx.name, 7)}
    assert get_dependencies(graph, (out.name, 7)) == {(dx.name, 0)}
    _same(out.compute(scheduler="threads"), x[::-1])


def _resident_mib() -> int:
    import os

    import psutil

    return int(psutil.Process(os.getpid()).memory_info().rss >> 20)


@functools.cache
def _worker_mib(least: int) -> int:
    """A worker memory limit of `least` MiB, or a fresh worker's own resident memory and 200
    MiB more where that is larger (on a machine with CuPy a fresh worker imports it: 350 MiB
    on an H200 host, over a 300 MiB limit, and its nanny kills it)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:  # fmt: skip
        (fresh,) = client.run(_resident_mib).values()
    return max(least, fresh + 200)


def test_a_distributed_cluster_gives_the_same_bits() -> None:
    distributed = pytest.importorskip("distributed")
    x = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    dx = da.from_array(x, chunks=(7, 11))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, memory_limit=f"{_worker_mib(300)}MiB",
        dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:  # fmt: skip
        got = client.compute(dd.slice1(dx, [3, 1], [30, 29], [-2, 3])).result()
        _same(got, dmlops.slice1(x, [3, 1], [30, 29], [-2, 3]))
        pieces = dd.split(dx, 1, [5, 20, 5])
        joined = client.compute(dd.join(pieces[::-1], 1)).result()
        _same(joined, np.concatenate([x[:, 25:], x[:, 5:25], x[:, :5]], 1))


def test_out_of_core_zarr_pipeline_stays_under_the_worker_limit(tmp_path: Any) -> None:
    """examples/dask_out_of_core.py at small scale: input larger than a worker's limit."""
    pytest.importorskip("distributed")
    pytest.importorskip("zarr")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "examples" / "dask_out_of_core.py"
    spec = importlib.util.spec_from_file_location("dask_out_of_core", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    worker_mib = _worker_mib(300)  # (the input stays 148 MiB larger than a worker's limit)
    rows = example.run(tmp_path, mib=worker_mib + 148, worker_mib=worker_mib)
    ours, theirs = rows
    assert ours["pipeline"] == "dmlops.dask" and ours["identical"]
    assert ours["tasks"] <= theirs["tasks"]
    # each worker grew by a few chunks (4 MiB each), far from the input's 448 MiB or more
    assert 0 < max(ours["growth"]) < 64 * 2**20


def test_the_core_package_does_not_import_dask() -> None:
    import subprocess
    import sys

    code = "import sys, dmlops, dmlops.functional; print(any(m.startswith('dask') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _layers(arr: Any) -> set[str]:
    return set(arr.__dask_graph__().layers)


def test_a_chain_of_operators_is_one_layer_over_the_source() -> None:
    x = np.arange(60 * 7, dtype=np.int16).reshape(60, 7)
    dx = da.from_array(x, chunks=(8, 4))
    w = dd.slice1(dx, [1, 0], [58, 7], [-2, -1])
    pieces = dd.split(w, 0, [10, 9, 10])
    out = dd.join(pieces[::-1], 0)
    assert _layers(out) == _layers(dx) | {out.name}  # no layer of w or of the pieces
    w_ref = dmlops.slice1(x, [1, 0], [58, 7], [-2, -1])
    ref = dmlops.join(dmlops.split(w_ref, 0, [10, 9, 10])[::-1], 0)
    with dask.config.set(scheduler="threads"):
        _same(out.compute(), ref)
        _same(w.compute(), w_ref)  # the intermediate still computes on its own


def test_default_chunks_read_one_source_chunk_each_along_a_single_map() -> None:
    x = np.arange(96, dtype=np.float32)
    dx = da.from_array(x, chunks=(10, 30, 26, 30))
    for strides in ([-1], [2], [-3]):
        out = dd.slice1(dx, [1], [95], strides)
        graph = dict(out.__dask_graph__())
        from dask.core import get_dependencies

        for index in range(len(out.chunks[0])):
            assert len(get_dependencies(graph, (out.name, index))) == 1
        _same(out.compute(scheduler="threads"), dmlops.slice1(x, [1], [95], strides))


@st.composite
def chains(draw: Any) -> tuple[list[tuple[str, Any]], np.ndarray, Any]:
    x, dx = draw(cases())
    steps = []
    shape = list(x.shape)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["slice1", "slice", "split", "join"]))
        if kind in ("slice1", "slice"):
            pick = [1, 2, -1, -2] if kind == "slice1" else [1, 2, 3]
            strides = [draw(st.sampled_from(pick)) for _ in shape]
            offs = [draw(st.integers(0, n - 1)) for n in shape]
            if kind == "slice1":  # window sizes; the output is ceil(size / |stride|)
                sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offs, strict=True)]
                shape = [-(-s // abs(t)) for s, t in zip(sizes, strides, strict=True)]
            else:  # output sizes
                sizes = [
                    draw(st.integers(1, (n - o - 1) // t + 1))
                    for n, o, t in zip(shape, offs, strides, strict=True)
                ]
                shape = list(sizes)
            steps.append((kind, (offs, sizes, strides)))
        else:
            axis = draw(st.integers(0, len(shape) - 1))
            n = shape[axis]
            cut = draw(st.integers(1, n)) if n > 1 else 1
            sizes = [s for s in (cut, n - cut) if s]
            order = draw(st.permutations(range(len(sizes))))
            steps.append((kind, (axis, sizes, order)))
            if kind == "split":
                shape[axis] = sizes[-1]
    return steps, x, dx


def _apply(steps: list[tuple[str, Any]], x: Any, module: Any) -> Any:
    for kind, args in steps:
        if kind == "slice1":
            x = module.slice1(x, *args)
        elif kind == "slice":
            x = module.slice(x, *args)
        else:
            axis, sizes, order = args
            pieces = module.split(x, axis, sizes)
            x = module.join([pieces[k] for k in order], axis) if kind == "join" else pieces[-1]
    return x


@settings(max_examples=60, deadline=None)
@given(chains())
def test_chains_compose_bit_identically_to_the_functional_api(chain: Any) -> None:
    steps, x, dx = chain
    with dask.config.set(scheduler="threads"):
        _same(_apply(steps, dx, dd).compute(), _apply(steps, x, dmlops))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@settings(max_examples=30, deadline=None)
@given(chains())
def test_cupy_chunks_run_on_the_cuda_backend(chain: Any) -> None:
    import cupy

    steps, x, dx = chain
    on_gpu = da.from_array(cupy.asarray(x), chunks=dx.chunks, asarray=False)
    result = _apply(steps, on_gpu, dd)
    assert isinstance(result._meta, cupy.ndarray)
    with dask.config.set(scheduler="threads"):
        got = result.compute()
    assert isinstance(got, cupy.ndarray)
    _same(cupy.asnumpy(got), _apply(steps, x, dmlops))


def test_a_chunk_that_is_a_source_chunk_is_an_alias() -> None:
    x = np.arange(48, dtype=np.uint8).reshape(12, 4)
    dx = da.from_array(x, chunks=(4, 4))
    _, b = dd.split(dx, 0, [4, 8])
    graph = dict(b.__dask_graph__())
    assert graph[(b.name, 0, 0)] == (dx.name, 1, 0)  # no task: the source chunk itself
    _same(b.compute(scheduler="threads"), x[4:])


def test_a_split_joined_back_in_order_is_chunked_as_its_input() -> None:
    """Pieces that go on where the one before ends (a split's parts joined back in order,
    here of a reversed window) are one box: no chunk edge at the split's cuts, every output
    chunk a window of one source chunk (no rechunk before Zarr); parts joined in another order,
    or with a part left out, keep their cuts where they do not go on."""
    x = np.arange(48 * 6, dtype=np.float32).reshape(48, 6)
    dx = da.from_array(x, chunks=(8, 6))
    w = dd.slice1(dx, [0, 0], [48, 6], [-2, -1])  # 24 rows, chunks of 4
    back = dd.join(dd.split(w, 0, [5, 11, 8]), 0)
    assert back.chunks == w.chunks == ((4,) * 6, (6,))
    graph = dict(back.__dask_graph__())
    assert all(graph[(back.name, i, 0)][0] is chunk_getitem for i in range(6))
    _same(back.compute(scheduler="threads"), x[::-2, ::-1])
    a, b, c = dd.split(w, 0, [5, 11, 8])
    for parts, cuts, want in [
        ([c, a, b], {8}, np.concatenate([x[::-2, ::-1][16:], x[::-2, ::-1][:16]])),  # (a, b one)
        ([a, c], {5}, np.concatenate([x[::-2, ::-1][:5], x[::-2, ::-1][16:]])),
    ]:
        joined = dd.join(parts, 0)
        assert cuts <= set(np.cumsum(joined.chunks[0]).tolist())
        _same(joined.compute(scheduler="threads"), want)


@pytest.mark.parametrize("mode", ["REFLECTION", "EDGE", "SYMMETRIC", "WRAP", "CONSTANT"])
def test_a_pad_keeps_every_input_chunk_as_it_is(mode: str) -> None:
    """The middle of a pad is the input whole (a mirror or an edge run stops where the input
    starts): every input chunk is an output chunk, no task."""
    x = np.arange(12 * 3, dtype=np.float32).reshape(12, 3)
    dx = da.from_array(x, chunks=(4, 3))
    padded = dd.padding(dx, [2, 0], [3, 0], mode)
    assert padded.chunks[0] == (2, 4, 4, 4, 3)
    graph = dict(padded.__dask_graph__())
    for i in range(3):
        assert graph[(padded.name, i + 1, 0)] == (dx.name, i, 0)
    _same(padded.compute(scheduler="threads"), dmlops.padding(x, [2, 0], [3, 0], mode))


def test_a_window_of_one_source_chunk_is_taken_as_dask_takes_it() -> None:
    """One task reading one block through dask's own chunk getitem: a view of the block
    where it holds at least half of it, else a copy (the block is let go, and Zarr stores
    the chunk without copying it again), as `x[::-1, ::-2]` in dask.array is."""
    x = np.arange(96, dtype=np.float32).reshape(12, 8)
    dx = da.from_array(x, chunks=(4, 8))
    w = dd.slice1(dx, [0, 0], [12, 8], [-1, -2])  # reversed rows, every other column
    graph = dict(w.__dask_graph__())
    task = graph[(w.name, 0, 0)]
    assert task[0] is chunk_getitem and task[1] == (dx.name, 2, 0)  # no copy task
    block = x[8:12]
    half = task[0](block, task[2])
    assert half.flags.owndata and not np.shares_memory(half, block)
    _same(half, x[11:7:-1, 7::-2])
    _same(w.compute(scheduler="threads"), x[::-1, ::-2])
    rows = dd.slice1(dx, [0, 0], [12, 8], [-1, 1])  # reversed rows: all of each block
    task = dict(rows.__dask_graph__())[(rows.name, 0, 0)]
    view = task[0](block, task[2])
    assert np.shares_memory(view, block)
    _same(view, x[11:7:-1])
    across = dd.slice1(dx, [2, 0], [4, 8], [1, 1], chunks=(4, 8))  # two blocks: a copy
    assert graph_task_reads(across, (across.name, 0, 0)) == 2


def graph_task_reads(arr: Any, key: Any) -> int:
    """How many source chunks the task making `key` reads."""
    task = dict(arr.__dask_graph__())[key]
    return sum(isinstance(a, tuple) and isinstance(a[0], str) for a in task[1:])


@st.composite
def strided_chains(draw: Any) -> tuple[list[tuple[str, Any]], np.ndarray, Any]:
    """Chains mixing every strided operator dmlops.dask has: their pads, repeats, blocks,
    zero-filled gradients and upsampling composed with slices, bit for bit."""
    x, dx = draw(cases())
    steps: list[tuple[str, Any]] = []
    shape = list(x.shape)
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["tile", "padding", "slice1", "identity", "slice_grad"]
        if len(shape) == 4:
            kinds += ["depth_to_space", "space_to_depth"]
            if x.dtype.itemsize > 1:
                kinds += ["upsample_2d"]
        kind = draw(st.sampled_from(kinds))
        rank = len(shape)
        if kind == "tile":
            repeats = [draw(st.integers(1, 2)) for _ in shape]
            steps.append((kind, (repeats,)))
            shape = [n * r for n, r in zip(shape, repeats, strict=True)]
        elif kind == "padding":
            mode = draw(st.sampled_from(["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"]))
            most = [n - 1 if mode == "REFLECTION" else 3 for n in shape]
            start = [draw(st.integers(0, min(2, m))) for m in most]
            end = [draw(st.integers(0, min(2, m))) for m in most]
            steps.append((kind, (start, end, mode, 3)))
            shape = [n + a + b for n, a, b in zip(shape, start, end, strict=True)]
        elif kind == "slice1":
            offs = [draw(st.integers(0, n - 1)) for n in shape]
            sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offs, strict=True)]
            strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
            steps.append((kind, (offs, sizes, strides)))
            shape = [-(-s // abs(t)) for s, t in zip(sizes, strides, strict=True)]
        elif kind == "identity":
            steps.append((kind, ()))
        elif kind == "slice_grad":
            grown = [n + draw(st.integers(0, 3)) for n in shape]
            strides = [draw(st.sampled_from([1, 2, -1])) for _ in shape]
            window = [(n - 1) * abs(t) + 1 for n, t in zip(shape, strides, strict=True)]
            grown = [max(g, w) for g, w in zip(grown, window, strict=True)]
            offs = [draw(st.integers(0, g - w)) for g, w in zip(grown, window, strict=True)]
            steps.append((kind, (grown, offs, window, strides)))
            shape = grown
        elif kind == "upsample_2d":
            scale = [draw(st.integers(1, 3)), draw(st.integers(1, 2))]
            steps.append((kind, (scale,)))
            shape = [*shape[:-2], shape[-2] * scale[0], shape[-1] * scale[1]]
        elif kind == "depth_to_space" and shape[1] % 4 == 0:
            steps.append((kind, (2, draw(st.sampled_from(["DCR", "CRD"])))))
            shape = [shape[0], shape[1] // 4, shape[2] * 2, shape[3] * 2]
        elif kind == "space_to_depth" and shape[2] % 2 == 0 and shape[3] % 2 == 0:
            steps.append((kind, (2, draw(st.sampled_from(["DCR", "CRD"])))))
            shape = [shape[0], shape[1] * 4, shape[2] // 2, shape[3] // 2]
        assert rank == len(shape)
    return steps, x, dx


def _apply_strided(steps: list[tuple[str, Any]], x: Any, module: Any) -> Any:
    for kind, args in steps:
        if kind == "identity":
            x = module.element_wise_identity(x)
        elif kind == "slice_grad":
            grown, offs, window, strides = args
            x = module.slice_grad(x, grown, offs, window, strides)
        else:
            x = getattr(module, kind)(x, *args)
    return x


@settings(max_examples=80, deadline=None)
@given(strided_chains())
def test_every_strided_operator_composes_bit_identically_to_the_array_api(chain: Any) -> None:
    steps, x, dx = chain
    with dask.config.set(scheduler="threads"):
        _same(_apply_strided(steps, dx, dd).compute(), _apply_strided(steps, x, dmlops))


def test_the_strided_operators_validate_before_any_task_runs() -> None:
    dx = da.from_array(np.zeros((2, 3, 4, 4), np.float32), chunks=2)
    with pytest.raises(dmlops.DmlError, match=r"TILE\.OutputTensor\.DimensionCount is 2"):
        dd.tile(dx, [1, 2])
    with pytest.raises(dmlops.DmlError, match=r"DEPTH_TO_SPACE1\.InputTensor\.Sizes\[1\] is 3"):
        dd.depth_to_space(dx, 2)
    with pytest.raises(dmlops.DmlError, match=r"PADDING1\.OutputTensor\.DimensionCount is 3"):
        dd.padding(dx, [0, 0, 1], [0, 0, 1])
    folded = dd.padding(dx, [0, 0, 0, 5], [0, 0, 0, 0], "REFLECTION")  # (folds periodically)
    _same(
        folded.compute(),
        dmlops.padding(np.zeros((2, 3, 4, 4), np.float32), [0, 0, 0, 5], [0] * 4, "REFLECTION"),
    )
    with pytest.raises(dmlops.DmlError, match=r"LINEAR"):
        dd.upsample_2d(dx, [2, 2]) if False else dmlops.upsample_2d(
            np.zeros((1, 1, 2, 2), np.float32), [2, 2], "LINEAR"
        )


def test_a_constant_pad_of_an_empty_array_is_the_constant() -> None:
    empty = da.from_array(np.zeros((2, 0, 3), np.float32))
    got = dd.padding(empty, [0, 1, 0], [0, 1, 0], "CONSTANT", 3.0).compute()
    _same(got, np.full((2, 2, 3), 3.0, np.float32))


@settings(max_examples=60, deadline=None)
@given(cases(), st.data())
def test_gather_routes_indices_to_their_chunks_as_numpy_take(
    case: Any, data: st.DataObject
) -> None:
    """Unsorted, repeated and negative indices of any shape, on every axis and chunking."""
    x, dx = case
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    index_shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=2))
    idx = np.array(
        data.draw(
            st.lists(
                st.integers(-n, n - 1),
                min_size=int(np.prod(index_shape)),
                max_size=int(np.prod(index_shape)),
            )
        ),
        np.int64,
    ).reshape(index_shape)
    with dask.config.set(scheduler="threads"):
        got = dd.gather(dx, idx, axis).compute()
    _same(got, np.take(x, idx, axis))


def test_gather_reads_only_the_chunks_its_indices_name() -> None:
    x = np.arange(40, dtype=np.int32).reshape(10, 4)
    dx = da.from_array(x, chunks=(2, 4))
    got = dd.gather(dx, [9, 8, 1], 0)
    graph = got.__dask_graph__()
    read = {
        k[1]
        for name, layer in graph.layers.items()
        if name.startswith("dmlops-gather")
        for task in dict(layer).values()
        for k in task[1:]
        if k[0] == dx.name
    }
    assert read == {0, 4}  # the chunks of rows 0-1 and 8-9 alone
    _same(got.compute(), x[[9, 8, 1]])
    with pytest.raises(dmlops.IndexOutOfRangeError, match=r"index at element 1 is 10"):
        dd.gather(dx, [0, 10], 0)
    _same(dd.gather(dx, [0, 10, -11], 0, clamp_indices=True).compute(), x[[0, 9, 0]])
    lazy = da.from_array(np.array([[9, -1], [0, 3]]), chunks=1)  # (values known when run)
    _same(dd.gather(dx, lazy, 0).compute(), x[[[9, 9], [0, 3]]])
    across = da.from_array(np.array([[3, -1], [0, 2]]), chunks=1)
    _same(dd.gather(dx, across, 1).compute(), np.take(x, [[3, -1], [0, 2]], 1))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_gather_and_the_strided_operators_keep_cupy_chunks_on_the_gpu() -> None:
    import cupy

    x = np.arange(2 * 8 * 4 * 6, dtype=np.float32).reshape(2, 8, 4, 6)
    dx = da.from_array(cupy.asarray(x), chunks=(1, 3, 2, 4), asarray=False)
    results = [
        (dd.gather(dx, [7, 0, 3], 1), np.take(x, [7, 0, 3], 1)),
        (
            dd.padding(dx, [0, 0, 1, 2], [0, 1, 1, 0], "CONSTANT", 2.0),
            dmlops.padding(x, [0, 0, 1, 2], [0, 1, 1, 0], value=2.0),
        ),
        (dd.upsample_2d(dx, [2, 2]), dmlops.upsample_2d(x, [2, 2])),
        (dd.depth_to_space(dx, 2), dmlops.depth_to_space(x, 2)),
    ]
    with dask.config.set(scheduler="threads"):
        for result, want in results:
            got = result.compute()
            assert isinstance(got, cupy.ndarray)
            _same(cupy.asnumpy(got), want)


@settings(max_examples=40, deadline=None)
@given(cases(), st.data())
def test_gather_elements_one_hot_and_reverse_match_the_functional_api(
    case: Any, data: st.DataObject
) -> None:
    """Indices known or a dask array (their own chunking), negative ones, every axis;
    one-hot of chunked indices at any axis; reversals at any lengths on every axis pair."""
    x, dx = case
    rank = x.ndim
    axis = data.draw(st.integers(-rank, rank - 1))
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = data.draw(st.integers(0, 4))
    count = int(np.prod(shape))
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count)))
    idx = idx.astype(np.int64).reshape(shape)
    want = dmlops.gather_elements(x, idx, axis)
    with dask.config.set(scheduler="threads"):
        _same(dd.gather_elements(dx, idx, axis).compute(), want)
        if 0 not in shape:
            lazy = da.from_array(idx, chunks=tuple(_chunks(data.draw, k) for k in shape))
            _same(dd.gather_elements(dx, lazy, axis).compute(), want)
        hot_axis = data.draw(st.integers(-rank - 1, rank))
        depth = data.draw(st.integers(1, 5))
        ids = (x.astype(np.int64) % 7) - 2
        table = np.array([1, -3], np.int16)
        dids = da.from_array(ids, chunks=dx.chunks)
        _same(
            dd.one_hot(dids, depth, table, hot_axis).compute(),
            dmlops.one_hot(ids, depth, table, hot_axis),
        )
        if rank >= 2:
            time, batch = data.draw(st.permutations(range(rank)))[:2]
            lengths = np.array(
                data.draw(
                    st.lists(
                        st.integers(0, x.shape[time] + 1),
                        min_size=x.shape[batch],
                        max_size=x.shape[batch],
                    )
                )
            )
            _same(
                dd.reverse_subsequences(dx, lengths, time, batch).compute(),
                dmlops.reverse_subsequences(x, lengths, time, batch),
            )


def test_the_indexed_operators_validate_before_any_task_runs() -> None:
    dx = da.from_array(np.zeros((4, 5), np.float32), chunks=2)
    with pytest.raises(dmlops.IndexOutOfRangeError, match=r"outside \[-4, 4\)"):
        dd.gather_elements(dx, np.full((4, 5), 4), 0)
    with pytest.raises(dmlops.DmlError, match=r"at most its sizes off axis 0"):
        dd.gather_elements(dx, np.zeros((2, 6), np.int64), 0)
    with pytest.raises(dmlops.DmlError, match=r"at most its sizes off axis 1"):
        dd.scatter_elements(dx, np.zeros((5, 1), np.int64), np.zeros((5, 1), np.float32), 1)
    with pytest.raises(dmlops.DmlError, match=r"ONE_HOT"):
        dd.one_hot(da.from_array(np.zeros(3, np.float32)), 2, np.array([0, 1]))
    with pytest.raises(dmlops.DmlError, match=r"indices are a dask array"):
        dd.one_hot(np.zeros(3, np.int64), 2, np.array([0, 1]))
    with pytest.raises(dmlops.DmlError, match=r"REVERSE_SUBSEQUENCES"):
        dd.reverse_subsequences(dx, np.array([1, 2]), 0, 1)  # 2 lengths for 5 batch rows


def test_lazy_lengths_and_indices_smaller_than_the_input_off_the_axis() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 7, 3)).astype(np.float32)
    dx = da.from_array(x, chunks=(4, 3, 2))
    lengths = np.array([0, 1, 6, 3, 2, 5, 4])
    lazy = da.from_array(lengths, chunks=2)
    _same(
        dd.reverse_subsequences(dx, lazy, 0, 1).compute(),
        dmlops.reverse_subsequences(x, lengths, 0, 1),
    )
    idx = rng.integers(-7, 7, (4, 5, 2))  # fewer rows and columns than x off axis 1
    for indices in (idx, da.from_array(idx, chunks=(3, 2, 1))):
        _same(
            dd.gather_elements(dx, indices, 1).compute(),
            dmlops.gather_elements(x, idx, 1),
        )
    updates = rng.standard_normal(idx.shape).astype(np.float32)
    distinct = np.argsort(rng.random((4, 7, 2)), axis=1)[:, :5]  # no element written twice
    for indices in (distinct, da.from_array(distinct, chunks=(3, 2, 1))):
        _same(
            dd.scatter_elements(dx, indices, updates, 1).compute(),
            dmlops.scatter_elements(x, distinct, updates, 1),
        )


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_gather_elements_one_hot_and_reverse_keep_cupy_chunks() -> None:
    import cupy

    x = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    dx = da.from_array(cupy.asarray(x), chunks=(4, 2), asarray=False)
    idx = np.arange(3 * 5).reshape(3, 5) % 6  # three rows picked per column
    ids = np.array([[0, 3], [-1, 9]])
    dids = da.from_array(cupy.asarray(ids), chunks=1, asarray=False)
    table = np.array([0, 2], np.float32)
    lengths = np.array([2, 0, 5, 6, 1])
    results = [
        (dd.gather_elements(dx, idx, 0), np.take_along_axis(x, idx, 0)),
        (dd.one_hot(dids, 4, table, -1), dmlops.one_hot(ids, 4, table, -1)),
        (dd.reverse_subsequences(dx, lengths, 0, 1), dmlops.reverse_subsequences(x, lengths, 0, 1)),
        (dd.gather_nd(dx, np.array([[5, 1], [0, -1]])), x[[5, 0], [1, -1]]),
        (dd.gather(dx, dids % 5, 1), np.take(x, ids % 5, 1)),
        (
            dd.scatter_elements(dx, idx, np.ones((3, 5), np.float32), 0),
            dmlops.scatter_elements(x, idx, np.ones((3, 5), np.float32), 0),
        ),
        (
            dd.scatter_nd(dx, np.array([[4], [1]]), np.zeros((2, 5), np.float32)),
            dmlops.scatter_nd(x, np.array([[4], [1]]), np.zeros((2, 5), np.float32)),
        ),
    ]
    for lazy, want in results:
        assert type(lazy.blocks[0].compute()).__module__.split(".")[0] == "cupy"
        _same(cupy.asnumpy(lazy.compute()), want)


@settings(max_examples=40, deadline=None)
@given(cases(), st.data())
def test_gather_nd_and_lazy_gather_match_the_functional_api(case: Any, data: st.DataObject) -> None:
    """Tuples of every length after any batch, indices known or a dask array of their own
    chunking; GATHER with lazy indices on every axis."""
    x, dx = case
    rank = x.ndim
    b = data.draw(st.integers(0, rank - 1))
    k = data.draw(st.integers(1, rank - b))
    picks = data.draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    ids = np.stack(
        [
            np.array(
                data.draw(
                    st.lists(
                        st.integers(-x.shape[b + j], x.shape[b + j] - 1),
                        min_size=int(np.prod((*x.shape[:b], *picks))),
                        max_size=int(np.prod((*x.shape[:b], *picks))),
                    )
                ),
                np.int64,
            ).reshape((*x.shape[:b], *picks))
            for j in range(k)
        ],
        -1,
    )
    want = dmlops.gather_nd(x, ids, b)
    with dask.config.set(scheduler="threads"):
        _same(dd.gather_nd(dx, ids, b).compute(), want)
        chunked = da.from_array(ids, chunks=tuple(_chunks(data.draw, n) for n in ids.shape))
        _same(dd.gather_nd(dx, chunked, b).compute(), want)
        axis = data.draw(st.integers(-rank, rank - 1))
        n = x.shape[axis]
        flat = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5)))
        lazy = da.from_array(flat.reshape(-1, 1), chunks=1)
        _same(dd.gather(dx, lazy, axis).compute(), np.take(x, flat.reshape(-1, 1), axis))
    with pytest.raises(dmlops.DmlError, match=r"GATHER_ND"):
        dd.gather_nd(dx, np.zeros((2, rank + 1), np.int64))


@settings(max_examples=40, deadline=None)
@given(cases(), st.data())
def test_scatters_match_the_functional_api(case: Any, data: st.DataObject) -> None:
    """Repeated targets (the later update wins, as DirectML), negative indices, every axis
    and tuple length; indices and updates known or dask arrays of their own chunking."""
    x, dx = case
    rank = x.ndim
    axis = data.draw(st.integers(-rank, rank - 1))
    shape = list(x.shape)
    shape[axis] = data.draw(st.integers(1, 4))
    count = int(np.prod(shape))
    n = x.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=count, max_size=count)))
    idx = idx.astype(np.int64).reshape(shape)
    updates = (np.arange(count) + 100).astype(x.dtype).reshape(shape)
    want = dmlops.scatter_elements(x, idx, updates, axis)
    k = data.draw(st.integers(1, rank))
    rows = data.draw(st.integers(1, 4))
    tuples = np.stack(
        [np.array(data.draw(st.lists(st.integers(-x.shape[j], x.shape[j] - 1), min_size=rows, max_size=rows)))
         for j in range(k)], -1,
    )  # fmt: skip
    blocks = (np.arange(rows * int(np.prod(x.shape[k:]))) + 50).astype(x.dtype)
    blocks = blocks.reshape(rows, *x.shape[k:])
    want_nd = dmlops.scatter_nd(x, tuples, blocks)
    with dask.config.set(scheduler="threads"):
        _same(dd.scatter_elements(dx, idx, updates, axis).compute(), want)
        chunks = tuple(_chunks(data.draw, m) for m in shape)
        lazy = dd.scatter_elements(
            dx, da.from_array(idx, chunks=chunks), da.from_array(updates, chunks=chunks), axis
        )
        _same(lazy.compute(), want)
        _same(dd.scatter_nd(dx, tuples, blocks).compute(), want_nd)
        _same(dd.scatter_nd(dx, da.from_array(tuples, chunks=1), blocks).compute(), want_nd)
    with pytest.raises(dmlops.IndexOutOfRangeError):
        dd.scatter_elements(dx, np.full(shape, n), updates, axis)
    with pytest.raises(dmlops.DmlError, match=r"SCATTER_ND"):
        dd.scatter_nd(dx, tuples, blocks[:, None])


@settings(max_examples=40, deadline=None)
@given(cases(), st.data())
def test_cast_tril_and_triu_chunk_by_chunk(case: Any, data: st.DataObject) -> None:
    """CAST to any type and the triangles at any diagonal, each chunk its own task (the
    triangles shift the diagonal span by the chunk's corner), as the functional API."""
    x, dx = case
    target = data.draw(st.sampled_from([np.int8, np.uint16, np.float16, np.float64, np.int64]))
    with dask.config.set(scheduler="threads"):
        _same(dd.cast(dx, target).compute(), dmlops.cast(x, target))
        if x.ndim >= 2:
            k = data.draw(st.integers(-7, 7))
            _same(dd.tril(dx, k).compute(), np.tril(x, k))
            _same(dd.triu(dx, k).compute(), np.triu(x, k))
    with pytest.raises(dmlops.DmlError, match=r"CAST\.OutputTensor\.DataType is bool"):
        dd.cast(dx, bool)


@settings(max_examples=30, deadline=None)
@given(cases(), st.data())
def test_resample_rechunks_only_the_axes_it_moves(case: Any, data: st.DataObject) -> None:
    """Any scales and offsets, each of RESAMPLE, RESAMPLE1 and RESAMPLE2's forms, as the
    functional API; an axis whose map is the identity keeps its chunks."""
    x, dx = case
    if x.dtype == np.int8:  # (RESAMPLE2's table has no one-byte type)
        return
    scales = [data.draw(st.sampled_from([1.0, 1.0, 0.5, 1.5, 2.0])) for _ in x.shape]
    form = data.draw(st.sampled_from([{}, {"rounding_direction": "INCREASING"}]))
    want = dmlops.resample(x, scales, **form)
    got = dd.resample(dx, scales, **form)
    with dask.config.set(scheduler="threads"):
        _same(got.compute(), want)
    for d, s in enumerate(scales):
        if s == 1.0 and not form:
            assert got.chunks[d] == dx.chunks[d]


def test_gather_nd_of_known_tuples_reads_only_the_chunks_they_name() -> None:
    x = np.arange(10 * 4 * 3, dtype=np.int32).reshape(10, 4, 3)
    dx = da.from_array(x, chunks=(2, 4, 3))
    got = dd.gather_nd(dx, np.array([[9, 1], [8, -1], [1, 0]]))
    graph = got.__dask_graph__()
    sources = {
        k[1]
        for name, layer in graph.layers.items()
        if name.startswith("dmlops-gather")
        for task in dict(layer).values()
        for k in task[1:]
        if isinstance(k, tuple) and k and isinstance(k[0], str) and "reshape" in k[0]
    }
    _same(got.compute(), x[[9, 8, 1], [1, -1, 0]])
    assert sources == {0, 4}  # (rows 0-1 and 8-9 alone, through x's merged view)


def test_scatter_nd_of_known_tuples_touches_only_the_chunks_they_name() -> None:
    x = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
    dx = da.from_array(x, chunks=(8, 3))
    rows = np.array([[33], [2], [33], [-1]])  # row 33 twice: the later update wins
    updates = np.arange(4 * 6, dtype=np.float32).reshape(4, 6) + 1000
    result = dd.scatter_nd(dx, rows, da.from_array(updates, chunks=(1, 3)))
    graph = dict(result.__dask_graph__())
    ours = {k: v for k, v in graph.items() if k[0] == result.name}
    aliases = [k for k, v in ours.items() if v[0] == dx.name]
    assert len(aliases) == 3 * 2  # rows 8-31 (three blocks of 8): no tuple lands there
    for task in ours.values():  # each output chunk reads one chunk of x, no merged block
        reads = [a for a in task if isinstance(a, tuple) and a and a[0] == dx.name]
        assert len(reads) == 1 or task[0] == dx.name
    _same(result.compute(), dmlops.scatter_nd(x, rows, updates))


def test_chunks_alike_share_one_plan_and_task_function() -> None:
    """A regular grid's chunks that read alike pieces of alike blocks share one compiled
    plan (one task function), so a graph of many chunks composes a few plans, not one a
    chunk; every chunk still gives its own numpy answer."""
    x = np.arange(8 * 4 * 6 * 6, dtype=np.float32).reshape(8, 4, 6, 6)
    dx = da.from_array(x, chunks=(1, 4, 6, 6))
    got = dd.depth_to_space(dx, 2)
    graph = dict(got.__dask_graph__())
    functions = {id(task[0]) for key, task in graph.items() if key[0] == got.name}
    assert len(functions) == 1 < got.npartitions
    _same(got.compute(scheduler="sync"), dmlops.depth_to_space(x, 2))
