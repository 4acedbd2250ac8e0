"""Out of core with dmlops.dask: a Zarr array larger than a worker's memory limit is
window-sliced with negative strides, split into pieces, joined back and written to Zarr
on a LocalCluster; the same through dask.array's own slicing and concatenate.

    python examples/dask_out_of_core.py [--mib 1024] [--worker-mib 400] [--dir /tmp/ooc]

Prints, per pipeline: tasks, the median wall time of three runs taken in turns, and each
worker's peak growth of resident memory (sampled every 2 ms by dmlops.bench.dask), and
checks that both wrote the same bits.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

import dask.array as da
from distributed import Client, LocalCluster

import dmlops.dask as dd
from dmlops.bench.dask import combine_runs, make_input, measure, warm_imports


def pipeline_dmlops(x: Any) -> Any:
    """Every other row from the end, the columns reversed; split in three and joined back."""
    rows, cols = x.shape
    w = dd.slice1(x, [0, 0], [rows, cols], [-2, -1])
    n = w.shape[0]
    return dd.join(dd.split(w, 0, [n // 3, n // 3, n - 2 * (n // 3)]), 0)


def pipeline_dask(x: Any) -> Any:
    """The same with dask.array's own slicing and concatenate."""
    w = x[::-2, ::-1]
    n = w.shape[0]
    cuts = [0, n // 3, 2 * (n // 3), n]
    return da.concatenate([w[a:b] for a, b in itertools.pairwise(cuts)], axis=0)


def run(directory: Path, mib: int, worker_mib: int) -> list[dict[str, Any]]:
    """Both pipelines on one 2-worker cluster; one row per pipeline."""
    directory.mkdir(parents=True, exist_ok=True)
    x = make_input(directory / "input.zarr", mib)
    rows = []
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True,
        memory_limit=f"{worker_mib}MiB", dashboard_address=None,
    ) as cluster, Client(cluster) as client:  # fmt: skip
        client.run(warm_imports)  # (the workers' imports, outside the timed runs)
        pipelines = (("dmlops.dask", pipeline_dmlops), ("dask.array", pipeline_dask))
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in pipelines}
        for _ in range(3):  # in turns, so that the machine's drift falls on both alike
            for label, build in pipelines:
                runs[label].append(measure(client, x, build, directory / f"{label}.zarr"))
        for label, measured in runs.items():
            rows.append({"pipeline": label, **combine_runs(measured)})
    a, b = (da.from_zarr(str(directory / f"{r['pipeline']}.zarr")).view("u4") for r in rows)
    same = bool((a == b).all().compute(scheduler="threads"))
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
    print(f"{'pipeline':<14}{'tasks':>8}{'seconds':>10}  peak RSS growth per worker  identical")
    for r in rows:
        peaks = ", ".join(f"{p / 2**20:.0f} MiB" for p in r["growth"])
        line = f"{r['pipeline']:<14}{r['tasks']:>8}{r['seconds']:>10.2f}  {peaks:<26}"
        print(f"{line}  {r['identical']}")


if __name__ == "__main__":
    main()
