"""dmlops.dask: lazy chunk-by-chunk operators, bit-identical to the functional API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import dmlops  # noqa: E402
import dmlops.dask as dd  # noqa: E402


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


def test_a_distributed_cluster_gives_the_same_bits() -> None:
    distributed = pytest.importorskip("distributed")
    x = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    dx = da.from_array(x, chunks=(7, 11))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, memory_limit="300MiB",
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
    rows = example.run(tmp_path, mib=448, worker_mib=400)
    ours, theirs = rows
    assert ours["pipeline"] == "dmlops.dask" and ours["identical"]
    assert ours["tasks"] <= theirs["tasks"]
    assert max(ours["peak_mib"]) < 400  # each worker stayed under its limit


def test_the_core_package_does_not_import_dask() -> None:
    import subprocess
    import sys

    code = "import sys, dmlops, dmlops.functional; print(any(m.startswith('dask') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
