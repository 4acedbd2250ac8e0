"""dmlops.dask on a Dask GPU cluster: two worker processes, each on its own GPU (dask-cuda's
LocalCUDACluster lists every card to each worker, its own first: "0,1" and "1,0"), CuPy
chunks staying on their worker's card."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dmlops  # noqa: E402
import dmlops.dask as dd  # noqa: E402


def _gpus() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no GPU
        return 0


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_gpus() < 2, reason="needs two CUDA GPUs"),
]


def _cluster(layout: str) -> Any:
    """Two GPU workers: dask-cuda's LocalCUDACluster (each worker lists every card, its own
    first), or by hand a Nanny per GPU with CUDA_VISIBLE_DEVICES naming its card alone."""
    if layout == "dask-cuda":
        dask_cuda = pytest.importorskip("dask_cuda")
        return dask_cuda.LocalCUDACluster(
            CUDA_VISIBLE_DEVICES="0,1", threads_per_worker=1, dashboard_address=None
        )
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {
        f"gpu{i}": {
            "cls": Nanny,
            "options": {"env": {"CUDA_VISIBLE_DEVICES": str(i)}, "nthreads": 1},
        }
        for i in range(2)
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    return SpecCluster(workers=workers, scheduler=scheduler)


def _where() -> tuple[str | None, int, str]:
    """What a worker sees: its CUDA_VISIBLE_DEVICES, how many cards, its current card's UUID."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return (
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        cupy.cuda.runtime.getDeviceCount(),
        bytes(props["uuid"]).hex(),
    )


def _executed(dask_worker: Any) -> int:
    """Tasks this worker has run."""
    return int(dask_worker.state.executed_count)


def _on_gpu(block: Any) -> Any:
    import cupy

    return cupy.asarray(block)


def _chunk_kind(block: Any) -> Any:
    return np.array([[type(block).__module__.split(".")[0] == "cupy"]])


@pytest.mark.parametrize("layout", ["dask-cuda", "one card a worker"])
def test_every_operator_on_a_two_gpu_cluster(layout: str) -> None:
    import cupy

    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    ids = rng.integers(-64, 64, 40)
    idx2 = rng.integers(0, 64, (20, 48))
    lengths = rng.integers(0, 65, 48)
    nd = np.stack([rng.permutation(64)[:10], rng.integers(0, 48, 10)], 1)
    with _cluster(layout) as cluster, distributed.Client(cluster) as client:
        seen = list(client.run(_where).values())
        # each worker's current card (its first visible one) is a card of its own
        assert sorted(str(v[0]).split(",")[0] for v in seen) == ["0", "1"]
        assert all(v[1] == (2 if layout == "dask-cuda" else 1) for v in seen), seen
        assert seen[0][2] != seen[1][2]
        dx = da.from_array(x, chunks=(16, 24)).map_blocks(_on_gpu, dtype=x.dtype)
        dids = da.from_array(ids, chunks=10).map_blocks(_on_gpu, dtype=ids.dtype)
        cases = {
            "slice1 reversed": (
                dd.slice1(dx, [0, 0], [64, 48], [-2, -1]),
                x[::-2, ::-1],
            ),
            "split + join": (
                dd.join(dd.split(dx, 1, [20, 28])[::-1], 1),
                np.concatenate([x[:, 20:], x[:, :20]], 1),
            ),
            "padding reflect": (
                dd.padding(dx, [3, 0], [2, 5], "REFLECT"),
                np.pad(x, ((3, 2), (0, 5)), "reflect"),
            ),
            "tile": (dd.tile(dx, [2, 1]), np.tile(x, (2, 1))),
            "gather, lazy indices": (dd.gather(dx, dids, 0), np.take(x, ids, 0)),
            "gather_elements": (dd.gather_elements(dx, idx2, 0), np.take_along_axis(x, idx2, 0)),
            "gather_nd": (dd.gather_nd(dx, nd), x[nd[:, 0], nd[:, 1]]),
            "scatter_nd": (
                dd.scatter_nd(dx, nd, np.ones(10, np.float32)),
                dmlops.scatter_nd(x, nd, np.ones(10, np.float32)),
            ),
            "reverse_subsequences": (
                dd.reverse_subsequences(dx, lengths, 0, 1),
                dmlops.reverse_subsequences(x, lengths, 0, 1),
            ),
            "cast": (dd.cast(dx, np.float16), dmlops.cast(x, np.float16)),
            "tril": (dd.tril(dx, 3), np.tril(x, 3)),
            "resample": (dd.resample(dx, [1.5, 0.5]), dmlops.resample(x, [1.5, 0.5])),
        }
        lazy = [result for result, _ in cases.values()]
        kinds = [r.map_blocks(_chunk_kind, chunks=(1, 1), dtype=bool) for r in lazy]
        before = client.run(_executed)
        computed = client.compute(lazy + kinds, sync=True)
        after = client.run(_executed)
        answers, chunk_kinds = computed[: len(lazy)], computed[len(lazy) :]
        for (name, (_, want)), got, kind in zip(cases.items(), answers, chunk_kinds, strict=True):
            host = cupy.asnumpy(got)
            assert host.dtype == want.dtype and host.shape == want.shape, name
            assert host.tobytes() == want.tobytes(), name
            assert bool(np.all(kind)), f"{name}: a chunk left the GPU"
        # (tasks each worker ran: what it holds afterwards depends on when the results it
        # sent the client were released, and one worker's store was once empty by then)
        ran = {w: after[w] - before[w] for w in after}
        assert all(n > 0 for n in ran.values()), f"both workers ran tasks: {ran}"
