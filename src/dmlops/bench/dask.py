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

import contextlib
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

__all__ = [
    "PIPELINES",
    "combine_runs",
    "round_order",
    "make_input",
    "measure",
    "run",
    "start_sampler",
    "stop_sampler",
    "warm_imports",
]

SECTION = "dask"
OURS = "dmlops.dask"
THEIRS = "dask.array"
XARRAY = "xarray isel"
FLOOR = "zarr copy"
COLUMNS = 4096
TIMEOUT_S = 300  # a contender's run that takes longer is said to have failed
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
    sampler = getattr(dask_worker, "_dmlops_sampler", None)
    if sampler is None:  # the worker was restarted (it went over its memory limit)
        return {"managed": -1, "rss_growth": -1}
    state, thread = sampler
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


def _xarray_window(x: Any) -> Any:
    xr = _module("xarray")

    return xr.DataArray(x).isel(dim_0=slice(None, None, -2), dim_1=slice(None, None, -1)).data


def _xarray_take(x: Any) -> Any:
    xr = _module("xarray")

    return xr.DataArray(x).isel(dim_0=_rows(x)).data


def _images(x: Any) -> Any:
    """The input as a batch of 4-channel 64 x 64 images: [rows / 4, 4, 64, 64] (a reshape
    that splits the chunks evenly: no data moves)."""
    return x.reshape(x.shape[0] // 4, 4, 64, 64)


def _depth_to_space_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.depth_to_space(_images(x), 2)


def _depth_to_space_theirs(x: Any) -> Any:
    images = _images(x)
    n = images.shape[0]
    blocks = images.reshape(n, 2, 2, 1, 64, 64).transpose(0, 3, 4, 1, 5, 2)
    return blocks.reshape(n, 1, 128, 128)


def _upsample_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.upsample_2d(_images(x), [2, 2])


def _upsample_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.repeat(da.repeat(_images(x), 2, axis=2), 2, axis=3)


def _slice_grad_ours(x: Any) -> Any:
    import dmlops.dask as dd

    rows, columns = x.shape
    return dd.slice_grad(x, [rows + 128, columns], [64, 0], [rows, columns], [1, 1])


def _slice_grad_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return da.pad(x, ((64, 64), (0, 0)))


def _columns(x: Any) -> Any:
    """Per row, 512 distinct columns in a shuffled order (the same for every row)."""
    da = _module("dask.array")

    picks = np.random.default_rng(3).permutation(x.shape[1])[:512]
    return da.broadcast_to(da.from_array(picks[None, :]), (x.shape[0], 512)).rechunk(
        (x.chunks[0], (512,))
    )


def _gather_elements_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.gather_elements(x, _columns(x), 1)


def _gather_elements_theirs(x: Any) -> Any:
    return x.map_blocks(
        lambda block, ids: np.take_along_axis(block, ids, 1),
        _columns(x),
        chunks=(x.chunks[0], (512,)),
        dtype=x.dtype,
    )


def _scatter_elements_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.scatter_elements(x, _columns(x), x[:, :512], 1)


def _put_along(block: Any, ids: Any, updates: Any) -> Any:
    out = block.copy()
    np.put_along_axis(out, ids, updates, 1)
    return out


def _scatter_elements_theirs(x: Any) -> Any:
    return x.map_blocks(_put_along, _columns(x), x[:, :512], dtype=x.dtype)


def _scatter_nd_ours(x: Any) -> Any:
    import dmlops.dask as dd

    rows = _rows(x)
    return dd.scatter_nd(x, rows[:, None], x[: len(rows)])


def _scatter_nd_theirs(x: Any) -> Any:
    rows = _rows(x)
    out = x.copy()
    out[rows] = x[: len(rows)]
    return out


def _ids(x: Any) -> Any:
    da = _module("dask.array")

    return da.random.default_rng(2).integers(0, x.shape[1], x.shape[0], chunks=x.chunks[0])


def _one_hot_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.one_hot(_ids(x), x.shape[1], np.array([0, 1], np.float32), -1)


def _one_hot_theirs(x: Any) -> Any:
    da = _module("dask.array")

    return (_ids(x)[:, None] == da.arange(x.shape[1])).astype(np.float32)


def _lengths(x: Any) -> Any:
    return np.random.default_rng(4).integers(0, x.shape[1] + 1, x.shape[0])


def _reverse_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.reverse_subsequences(x, _lengths(x), 1, 0)


def _reversed_rows(block: Any, lengths: Any) -> Any:
    j = np.arange(block.shape[1])[None, :]
    n = lengths.reshape(-1, 1)
    return np.take_along_axis(block, np.where(j < n, n - 1 - j, j), 1)


def _reverse_theirs(x: Any) -> Any:
    da = _module("dask.array")

    lengths = da.from_array(_lengths(x), chunks=(x.chunks[0],))
    return x.map_blocks(_reversed_rows, lengths[:, None], dtype=x.dtype)


def _resample_ours(x: Any) -> Any:
    import dmlops.dask as dd

    return dd.resample(x, [1.5, 1.0])


def _resample_theirs(x: Any) -> Any:
    da = _module("dask.array")

    rows = int(x.shape[0] * 1.5)
    index = np.minimum((np.arange(rows) + 0.5) / 1.5, x.shape[0] - 1).astype(np.int64)
    return da.take(x, index, axis=0)


Build = Callable[[Any], Any]
SAME_BYTES = ("split 3 + join reversed",)  # cases writing as many bytes as the floor copies
PIPELINES: dict[str, dict[str, Build]] = {
    "window [-2,-1]": {OURS: _window_ours, THEIRS: _window_theirs, XARRAY: _xarray_window},
    "split 3 + join reversed": {OURS: _split_join_ours, THEIRS: _split_join_theirs},
    "window, split, join": {OURS: _pipeline_ours, THEIRS: _pipeline_theirs},
    "pad 64 rows each end (reflect)": {OURS: _pad_ours, THEIRS: _pad_theirs},
    "tile 2 x 1": {OURS: _tile_ours, THEIRS: _tile_theirs},
    "take every 8th row, shuffled": {OURS: _take_ours, THEIRS: _take_theirs, XARRAY: _xarray_take},
    "gather_nd of every 8th row, shuffled": {OURS: _rows_nd_ours, THEIRS: _take_theirs},
    "cast to float16": {OURS: _cast_ours, THEIRS: _cast_theirs},
    "tril (k = 100)": {OURS: _tril_ours, THEIRS: _tril_theirs},
    "ONNX model: window, split, join reversed": {OURS: _onnx_ours, THEIRS: _onnx_theirs},
    "depth_to_space 2 (4-channel images)": {
        OURS: _depth_to_space_ours,
        THEIRS: _depth_to_space_theirs,
    },
    "upsample_2d 2 x 2 (4-channel images)": {OURS: _upsample_ours, THEIRS: _upsample_theirs},
    "slice_grad: 64 zero rows each end": {OURS: _slice_grad_ours, THEIRS: _slice_grad_theirs},
    "gather_elements: 512 columns a row": {
        OURS: _gather_elements_ours,
        THEIRS: _gather_elements_theirs,
    },
    "scatter_elements: 512 columns a row": {
        OURS: _scatter_elements_ours,
        THEIRS: _scatter_elements_theirs,
    },
    "scatter_nd: every 8th row": {OURS: _scatter_nd_ours, THEIRS: _scatter_nd_theirs},
    "one_hot: 4096 classes a row": {OURS: _one_hot_ours, THEIRS: _one_hot_theirs},
    "reverse_subsequences along rows": {OURS: _reverse_ours, THEIRS: _reverse_theirs},
    "resample x 1.5 rows (nearest)": {OURS: _resample_ours, THEIRS: _resample_theirs},
}


def measure(client: Any, x: Any, build: Build, out: Path) -> dict[str, Any]:
    """One run: seconds from graph building to the last chunk in Zarr; tasks; memory peaks
    (combine_runs makes several one row)."""
    import warnings

    shutil.rmtree(out, ignore_errors=True)
    client.run(start_sampler)
    start = time.perf_counter()
    result = build(x)
    tasks = len(result.__dask_graph__())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dask's note that it rechunks for Zarr
        stored = result.to_zarr(str(out), overwrite=True, compressors=None, compute=False)
    try:  # (a worker paused over its memory limit waits forever: said, not a hang)
        client.compute(stored).result(timeout=TIMEOUT_S)
    except TimeoutError:
        raise TimeoutError(f"not done in {TIMEOUT_S} s (a worker paused?)") from None
    seconds = time.perf_counter() - start
    peaks = [p for p in client.run(stop_sampler).values() if p["managed"] >= 0]
    return {
        "seconds": seconds,
        "tasks": tasks,
        "managed": sorted(p["managed"] for p in peaks) or [0],
        "growth": sorted(p["rss_growth"] for p in peaks) or [0],
        "restarts": len(client.scheduler_info()["workers"]) - len(peaks),
    }


def combine_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One contender's runs as one row: the median time, the largest peaks, the restarts
    summed."""
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "tasks": runs[-1]["tasks"],
        "managed": max(r["managed"] for r in runs),
        "growth": max(r["growth"] for r in runs),
        "restarts": sum(r["restarts"] for r in runs),
    }


def warm_imports() -> None:
    """On a worker: import what the contenders' tasks use."""
    for name in ("numpy", "zarr", "dask.array", "dmlops", "dmlops.dask"):
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            importlib.import_module(name)


def round_order(names: list[str], round_index: int) -> list[str]:
    """The contenders' order in a round: each round starts with the next one, so that none
    always runs first (after the previous round's last) or last."""
    k = round_index % len(names)
    return names[k:] + names[:k]


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

    reps = max(1, min(reps, 9))
    where = Path(tempfile.mkdtemp(prefix="dmlops-bench-dask-")) if directory is None else directory
    results: list[Result] = []
    try:
        x = make_input(where / "input.zarr", mib)
        chunk = CHUNK_ROWS * COLUMNS * 4

        def in_turns(builds: dict[str, Build]) -> dict[str, dict[str, Any]]:
            """Each contender on a cluster of its own (no memory kept from another's runs),
            the contenders run in turn, once a round, each round starting with the next
            one, so that the machine's drift (the VM's timings swing by tens of per cent
            over a minute) and a place in the round fall on each alike."""
            with contextlib.ExitStack() as stack:
                clients = {}
                for name in builds:
                    made = distributed.LocalCluster(
                        n_workers=2, threads_per_worker=1, processes=True,
                        memory_limit=f"{worker_mib}MiB", dashboard_address=None,
                    )  # fmt: skip
                    cluster = stack.enter_context(made)
                    clients[name] = stack.enter_context(distributed.Client(cluster))
                    clients[name].run(warm_imports)  # (imports outside the timed runs)
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name in builds}
                failed: dict[str, dict[str, Any]] = {}
                for r in range(reps):
                    for name in round_order(list(builds), r):
                        build = builds[name]
                        if name in failed:
                            continue
                        out = where / f"{name}.zarr"
                        try:
                            runs[name].append(measure(clients[name], x, build, out))
                        except Exception as e:  # noqa: BLE001 - one that cannot run it: said
                            first = str(e).splitlines()[0][:160] if str(e) else ""
                            failed[name] = {"failed": f"{type(e).__name__}: {first}"}
                return {name: failed.get(name) or combine_runs(runs[name]) for name in builds}

        floor = in_turns({FLOOR: lambda a: a})[FLOOR]
        for case, builds in PIPELINES.items():
            if only and not any(part in case for part in only):
                continue
            if case.startswith("ONNX") and importlib.util.find_spec("onnx") is None:
                continue  # (dmlops[onnx] not installed)
            if importlib.util.find_spec("xarray") is None:
                builds = {k: v for k, v in builds.items() if k != XARRAY}
            rows = in_turns(builds)
            if case in SAME_BYTES:
                rows[FLOOR] = floor
            ran = [n for n in builds if "failed" not in rows[n]]
            ours, *others = (da.from_zarr(str(where / f"{n}.zarr")) for n in ran)
            if OURS not in ran:  # (said in the details below; nothing to compare)
                others = []
            bits = f"u{ours.dtype.itemsize}"
            for other in others:
                same = ours.shape == other.shape and bool(
                    (ours.view(bits) == other.view(bits)).all().compute()
                )
                if not same:
                    raise AssertionError(f"dask bench {case}: dmlops.dask wrote other bits")
            result = Result(SECTION, case, "cpu", int(builds[OURS](x).nbytes), THEIRS)
            for name, row in rows.items():
                if "failed" in row:
                    result.details[name] = f"failed: {row['failed']}"
                    continue
                result.times[name] = row["seconds"]
                result.details[name] = (
                    f"{row['tasks']} tasks; per worker peak managed "
                    f"{_mib(row['managed'])} MiB, RSS growth {_mib(row['growth'])} MiB"
                    + (
                        f"; {row['restarts']} worker restart(s) over the memory limit"
                        if row["restarts"]
                        else ""
                    )
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
