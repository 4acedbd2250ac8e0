"""Benchmark section "dask": dmlops.dask against dask.array's own, out of core, on a LocalCluster.

An uncompressed Zarr array a few times larger than the cluster's memory limit is read,
transformed and written back to Zarr by 2 worker processes with 1 thread each:

- window: SLICE1 with strides [-2, -1] against `x[::-2, ::-1]`;
- split + join: SPLIT in three along rows, JOIN in reverse order, against slicing and
  `da.concatenate`;
- pipeline: window, then split, then join, as in examples/dask_out_of_core.py.

Each contender is timed from building its graph to the last chunk written (median of a
few runs); "zarr copy" (read and write the input unchanged) is the floor on this machine,
shown beside the case that writes as many bytes.
Per contender it records the task count and, per worker, the peak of the bytes Dask holds
as task results (managed memory) and the peak growth of the process' resident memory
over its idle size, sampled every 2 ms.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .common import Result

__all__ = ["run", "start_sampler", "stop_sampler", "make_input", "PIPELINES"]

SECTION = "dask"
OURS = "dmlops.dask"
THEIRS = "dask.array"
FLOOR = "zarr copy"
COLUMNS = 4096
CHUNK_ROWS = 256  # 4 MiB float32 chunks


def _module(name: str) -> Any:
    return importlib.import_module(name)


def start_sampler(dask_worker: Any) -> None:
    """On a worker: sample managed bytes and resident memory every 2 ms until stopped."""
    psutil = _module("psutil")

    process = psutil.Process()
    state = {"base": process.memory_info().rss, "rss": 0, "managed": 0, "stop": 0}

    def sample() -> None:
        while not state["stop"]:
            state["rss"] = max(state["rss"], process.memory_info().rss)
            state["managed"] = max(state["managed"], dask_worker.state.nbytes)
            time.sleep(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    dask_worker._dmlops_sampler = (state, thread)


def stop_sampler(dask_worker: Any) -> dict[str, int]:
    """On a worker: stop sampling; peak managed bytes and peak resident growth in bytes."""
    state, thread = dask_worker._dmlops_sampler
    state["stop"] = 1
    thread.join()
    return {"managed": state["managed"], "rss_growth": max(0, state["rss"] - state["base"])}


def make_input(path: Path, mib: int, compressors: Any = None) -> Any:
    """A float32 Zarr array [rows, 4096] of about `mib` MiB in 4 MiB chunks, chunk by chunk."""
    import numpy as np

    da = _module("dask.array")

    rows = max(CHUNK_ROWS, mib * (1 << 20) // (COLUMNS * 4) // CHUNK_ROWS * CHUNK_ROWS)
    x = da.random.default_rng(0).standard_normal(
        (rows, COLUMNS), dtype=np.float32, chunks=(CHUNK_ROWS, COLUMNS)
    )
    x.to_zarr(str(path), overwrite=True, compressors=compressors)
    return da.from_zarr(str(path))


def _thirds(n: int) -> list[int]:
    return [n // 3, n // 3, n - 2 * (n // 3)]


def _window_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.slice1(x, [0, 0], list(x.shape), [-2, -1])


def _window_theirs(x: Any) -> Any:
    return x[::-2, ::-1]


def _split_join_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.join(dd.split(x, 0, _thirds(x.shape[0]))[::-1], 0)


def _split_join_theirs(x: Any) -> Any:
    da = _module("dask.array")

    cuts = list(itertools.accumulate([0, *_thirds(x.shape[0])]))
    return da.concatenate([x[a:b] for a, b in itertools.pairwise(cuts)][::-1], axis=0)


def _pipeline_ours(x: Any) -> Any:
    import dmlops.dask as dd

    w = _window_ours(x)
    return dd.join(dd.split(w, 0, _thirds(w.shape[0])), 0)


def _pipeline_theirs(x: Any) -> Any:
    da = _module("dask.array")

    w = _window_theirs(x)
    cuts = list(itertools.accumulate([0, *_thirds(w.shape[0])]))
    return da.concatenate([w[a:b] for a, b in itertools.pairwise(cuts)], axis=0)


def _pad_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.padding(x, [64, 0], [64, 0], "REFLECTION")


def _pad_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.pad(x, ((64, 64), (0, 0)), mode="reflect")


def _tile_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.tile(x, [2, 1])


def _tile_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.tile(x, (2, 1))


def _rows(x: Any) -> Any:
    """Every 8th row in a shuffled order (the same for both contenders)."""
    import numpy as np

    return np.random.default_rng(1).permutation(np.arange(0, x.shape[0], 8))


def _take_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.gather(x, _rows(x), 0)


def _take_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.take(x, _rows(x), axis=0)


def _rows_nd_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.gather_nd(x, _rows(x)[:, None])


def _cast_ours(x: Any) -> Any:
    import numpy as np

    import dmlops.dask as dd

    return dd.cast(x, np.float16)


def _cast_theirs(x: Any) -> Any:
    import numpy as np

    return x.astype(np.float16)


def _tril_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.tril(x, 100)


def _tril_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.tril(x, 100)


def _window_model(shape: tuple[int, ...]) -> Any:
    """An ONNX model of the pipeline below: a reversed window (Slice, steps -2 and -1), Split
    in three, Concat of the pieces in reverse order."""
    from onnx import TensorProto, helper, numpy_helper

    rows = -(-shape[0] // 2)
    params = {
        "starts": [-1, -1],
        "ends": [-(2**62), -(2**62)],
        "steps": [-2, -1],
        "split": _thirds(rows),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "", "steps"], ["w"]),
            helper.make_node("Split", ["w", "split"], ["a", "b", "c"], axis=0),
            helper.make_node("Concat", ["c", "b", "a"], ["y"], axis=0),
        ],
        "window_split_join",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in params.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _onnx_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.run_onnx(_window_model(tuple(x.shape)), {"x": x})[0]


def _onnx_theirs(x: Any) -> Any:
    da = _module("dask.array")

    w = _window_theirs(x)
    cuts = list(itertools.accumulate([0, *_thirds(w.shape[0])]))
    return da.concatenate([w[a:b] for a, b in itertools.pairwise(cuts)][::-1], axis=0)


Build = Callable[[Any], Any]
SAME_BYTES = ("split 3 + join reversed",)  # cases writing as many bytes as the floor copies
PIPELINES: dict[str, dict[str, Build]] = {
    "window [-2,-1]": {OURS: _window_ours, THEIRS: _window_theirs},
    "split 3 + join reversed": {OURS: _split_join_ours, THEIRS: _split_join_theirs},
    "window, split, join": {OURS: _pipeline_ours, THEIRS: _pipeline_theirs},
    "pad 64 rows each end (reflect)": {OURS: _pad_ours, THEIRS: _pad_theirs},
    "tile 2 x 1": {OURS: _tile_ours, THEIRS: _tile_theirs},
    "take every 8th row, shuffled": {OURS: _take_ours, THEIRS: _take_theirs},
    "gather_nd of every 8th row, shuffled": {OURS: _rows_nd_ours, THEIRS: _take_theirs},
    "cast to float16": {OURS: _cast_ours, THEIRS: _cast_theirs},
    "tril (k = 100)": {OURS: _tril_ours, THEIRS: _tril_theirs},
    "ONNX model: window, split, join reversed": {OURS: _onnx_ours, THEIRS: _onnx_theirs},
}


def measure(client: Any, x: Any, build: Build, out: Path, reps: int) -> dict[str, Any]:
    """Median seconds from graph building to the last chunk in Zarr; tasks; memory peaks."""
    import warnings

    times, managed, growth, tasks = [], [0], [0], 0
    for _ in range(reps):
        shutil.rmtree(out, ignore_errors=True)
        client.run(start_sampler)
        start = time.perf_counter()
        result = build(x)
        tasks = len(result.__dask_graph__())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dask's note that it rechunks for Zarr
            result.to_zarr(str(out), overwrite=True, compressors=None)
        times.append(time.perf_counter() - start)
        peaks = client.run(stop_sampler).values()
        managed = max(managed, sorted(p["managed"] for p in peaks))
        growth = max(growth, sorted(p["rss_growth"] for p in peaks))
    return {
        "seconds": statistics.median(times),
        "tasks": tasks,
        "managed": managed,
        "growth": growth,
    }


def _mib(values: list[int]) -> str:
    return "/".join(f"{v / 2**20:.0f}" for v in values)


def run(
    reps: int,
    mib: int,
    worker_mib: int,
    directory: Path | None = None,
    only: Sequence[str] = (),
) -> list[Result]:
    """Time each case through dmlops.dask and dask.array (and the Zarr copy floor); `only`:
    the cases whose name contains one of these (every case where empty)."""
    da = _module("dask.array")
    distributed = _module("distributed")

    reps = max(1, min(reps, 3))
    where = Path(tempfile.mkdtemp(prefix="dmlops-bench-dask-")) if directory is None else directory
    results: list[Result] = []
    try:
        x = make_input(where / "input.zarr", mib)
        chunk = CHUNK_ROWS * COLUMNS * 4
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            memory_limit=f"{worker_mib}MiB", dashboard_address=None,
        ) as cluster, distributed.Client(cluster) as client:  # fmt: skip
            floor = measure(client, x, lambda a: a, where / "floor.zarr", reps)
            for case, builds in PIPELINES.items():
                if only and not any(part in case for part in only):
                    continue
                if case.startswith("ONNX") and importlib.util.find_spec("onnx") is None:
                    continue  # (dmlops[onnx] not installed)
                rows = {
                    name: measure(client, x, b, where / f"{name}.zarr", reps)
                    for name, b in builds.items()
                }
                if case in SAME_BYTES:
                    rows[FLOOR] = floor
                a, b = (da.from_zarr(str(where / f"{n}.zarr")).view("u4") for n in builds)
                if not bool((a == b).all().compute()):
                    raise AssertionError(f"dask bench {case}: dmlops.dask wrote other bits")
                result = Result(SECTION, case, "cpu", int(builds[OURS](x).nbytes), THEIRS)
                for name, row in rows.items():
                    result.times[name] = row["seconds"]
                    result.details[name] = (
                        f"{row['tasks']} tasks; per worker peak managed "
                        f"{_mib(row['managed'])} MiB, RSS growth {_mib(row['growth'])} MiB"
                    )
                result.details["setup"] = (
                    f"{x.nbytes / 2**20:.0f} MiB input, {chunk / 2**20:.0f} MiB chunks, "
                    f"2 workers x 1 thread x {worker_mib} MiB"
                )
                results.append(result)
    finally:
        if directory is None:
            shutil.rmtree(where, ignore_errors=True)
    return results
