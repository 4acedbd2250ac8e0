"""Out of core with dmlops.dask: a Zarr array larger than a worker's memory limit is
window-sliced with negative strides, split into pieces, joined back and written to Zarr
on a LocalCluster; the same through dask.array's own slicing and concatenate.

    python examples/dask_out_of_core.py [--mib 1024] [--worker-mib 400] [--dir /tmp/ooc]

Prints, per pipeline: tasks, wall time and each worker's peak resident memory
(the worker processes' ru_maxrss), and checks that both wrote the same bits.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import time
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import dmlops.dask as dd

CHUNK_ROWS = 256  # rows of 4096 float32: 4 MiB chunks


def _peak_rss_mib(dask_worker: Any = None) -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_input(path: Path, mib: int) -> Any:
    """A float32 Zarr array [rows, 4096] of about `mib` MiB, written chunk by chunk."""
    rows = max(CHUNK_ROWS, mib * (1 << 20) // (4096 * 4) // CHUNK_ROWS * CHUNK_ROWS)
    x = da.random.default_rng(0).standard_normal(
        (rows, 4096), dtype=np.float32, chunks=(CHUNK_ROWS, 4096)
    )
    x.to_zarr(str(path), overwrite=True)
    return da.from_zarr(str(path))


def pipeline_dmlops(x: Any) -> Any:
    """Every other row from the end, the columns reversed; split in three and joined back."""
    rows, cols = x.shape
    w = dd.slice1(x, [0, 0], [rows, cols], [-2, -1])
    n = w.shape[0]
    pieces = dd.split(w, 0, [n // 3, n // 3, n - 2 * (n // 3)])
    return dd.join(pieces, 0)


def pipeline_dask(x: Any) -> Any:
    """The same with dask.array's own slicing and concatenate."""
    w = x[::-2, ::-1]
    n = w.shape[0]
    cuts = [0, n // 3, 2 * (n // 3), n]
    return da.concatenate([w[a:b] for a, b in itertools.pairwise(cuts)], axis=0)


def run(directory: Path, mib: int, worker_mib: int) -> list[dict[str, Any]]:
    """Run both pipelines on a fresh 2-worker cluster each; returns one row per pipeline."""
    directory.mkdir(parents=True, exist_ok=True)
    x = make_input(directory / "input.zarr", mib)
    rows = []
    for label, build in (("dmlops.dask", pipeline_dmlops), ("dask.array", pipeline_dask)):
        out_path = directory / f"{label}.zarr"
        shutil.rmtree(out_path, ignore_errors=True)
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            memory_limit=f"{worker_mib}MiB", dashboard_address=None,
        ) as cluster, Client(cluster) as client:  # fmt: skip
            result = build(x)
            tasks = len(result.__dask_graph__())
            start = time.perf_counter()
            result.to_zarr(str(out_path), overwrite=True)
            seconds = time.perf_counter() - start
            peaks = sorted(client.run(_peak_rss_mib).values())
        rows.append({"pipeline": label, "tasks": tasks, "seconds": seconds, "peak_mib": peaks})
    a = da.from_zarr(str(directory / "dmlops.dask.zarr"))
    b = da.from_zarr(str(directory / "dask.array.zarr"))
    same = bool((a.view(np.uint32) == b.view(np.uint32)).all().compute(scheduler="threads"))
    for row in rows:
        row["identical"] = same
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="input size (default 1024 MiB)")
    parser.add_argument("--worker-mib", type=int, default=400, help="memory limit per worker")
    parser.add_argument("--dir", default="/tmp/dmlops-ooc", help="where the Zarr stores go")
    args = parser.parse_args()
    rows = run(Path(args.dir), args.mib, args.worker_mib)
    print(f"input {args.mib} MiB in 4 MiB chunks; 2 workers x 1 thread, {args.worker_mib} MiB each")
    print(f"{'pipeline':<14}{'tasks':>8}{'seconds':>10}  peak worker RSS (MiB)  identical")
    for r in rows:
        peaks = ", ".join(f"{p:.0f}" for p in r["peak_mib"])
        line = f"{r['pipeline']:<14}{r['tasks']:>8}{r['seconds']:>10.2f}  {peaks:<21}"
        print(f"{line}  {r['identical']}")


if __name__ == "__main__":
    main()
