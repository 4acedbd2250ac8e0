"""A Dask out-of-core case, dmlops.dask against dask.array, on one LocalCluster of 2 workers
x 1 thread (the bench's own runs each contender on a cluster of its own): a float32 Zarr
array of MIB MiB (4 MiB chunks) through the case into Zarr, ROUNDS rounds alternating which
contender runs first. Prints each run's seconds, its fused tasks' compute seconds summed and
the transfers between workers, then the medians.

    python benchmarks/dask_one_cluster.py ["window, split, join"] [ROUNDS] [MIB] [LIMIT_MIB]

LIMIT_MIB: each worker's memory limit (256 by default, as the bench's; a host where a fresh
worker imports CuPy needs more).

The case is a name from `dmlops.bench.dask.PIPELINES`.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import distributed

from dmlops.bench.dask import OURS, PIPELINES, THEIRS, make_input, measure, warm_imports


def _run(client: Any, x: Any, build: Any, out: Path) -> tuple[float, float, int]:
    """(seconds, compute seconds of every task summed, transfers) of one run (the bench's
    own `measure`, inside a task stream)."""
    with distributed.get_task_stream(client=client) as stream:
        seconds = measure(client, x, build, out)["seconds"]
    parts = [s for e in stream.data for s in e["startstops"]]
    computed = sum(s["stop"] - s["start"] for s in parts if s["action"] == "compute")
    return seconds, computed, sum(s["action"] == "transfer" for s in parts)


def main() -> None:
    case = sys.argv[1] if len(sys.argv) > 1 else "window, split, join"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    mib = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    builds = {k: v for k, v in PIPELINES[case].items() if k in (OURS, THEIRS)}
    warnings.simplefilter("ignore")  # (dask's note that it rechunks for Zarr, port notes)
    where = Path(tempfile.mkdtemp(prefix="dmlops-dask-one-cluster-"))
    x = make_input(where / "in.zarr", mib)
    found: dict[str, list[float]] = {name: [] for name in builds}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit=f"{limit}MiB",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        client.run(warm_imports)
        print(f"# {case}: {mib} MiB, {rounds} rounds, one cluster of 2 workers x 1 thread")
        for r in range(rounds):
            names = list(builds) if r % 2 == 0 else list(builds)[::-1]
            for name in names:
                seconds, computed, moved = _run(client, x, builds[name], where / "out.zarr")
                found[name].append(seconds)
                print(f"{r} {name:12} {seconds:6.3f} s  tasks' compute {computed:6.3f} s  "
                      f"transfers {moved}")  # fmt: skip
    ours, theirs = (statistics.median(found[n]) for n in builds)
    print(f"medians: dmlops.dask {ours:.3f} s, dask.array {theirs:.3f} s, {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
