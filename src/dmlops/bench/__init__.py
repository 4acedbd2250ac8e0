"""Benchmarks: dmlops against numpy, torch, CuPy, onnxruntime and JAX, and the copy ceiling.

Sections (one module each): operators, layouts (GPU), graphs, call-cost, dask (CPU,
LocalCluster, out of core), torch (GPU training steps with dmlops under torch.compile),
indexed (gathers and scatters: embeddings, MoE, paged and in-place KV caches), contention
(the CPU engine idle, beside busy processes and in a CPU set: medians and 99th percentiles),
sizes (4 KiB to 16 MiB), callers (many Python threads calling at once),
startup (a fresh process's import and first calls), family (CAST, RESAMPLE, tril, arange,
nonzero).
Prints a Markdown table
(median time, GB/s counted as 2 x output bytes, time over each section's
reference), writes JSON and, with --plot, a PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from .common import Result, format_table, gpu_present, have

__all__ = ["main", "run_sections", "SECTIONS"]

SECTIONS = (
    "operators", "layouts", "graphs", "contention", "sizes", "callers", "startup", "call-cost",
    "dask", "torch", "indexed", "family",
)  # fmt: skip


def run_sections(
    sections: list[str],
    devices: list[str],
    reps: int,
    cpu_mib: int,
    gpu_mib: int,
    compilers: bool = True,
    dask_mib: int = 1536,
    dask_worker_mib: int = 256,
    calls: int = 200,
    dask_cases: Sequence[str] = (),
    quotas: Sequence[float] = (),
) -> list[Result]:
    """Run the named sections on the named devices."""
    results: list[Result] = []
    if "webgpu" in devices:
        from . import webgpu

        if "operators" in sections:
            results += webgpu.operators(reps, gpu_mib)
        if "layouts" in sections:
            results += webgpu.layouts(reps)
        if "call-cost" in sections:
            results += webgpu.call_cost(reps)
        if "indexed" in sections:
            results += webgpu.indexed(reps)
        devices = [d for d in devices if d != "webgpu"]
    for section in sections:
        if section == "operators":
            from . import operators

            results += operators.run(devices, reps, cpu_mib, gpu_mib)
        elif section == "layouts":
            from . import layouts

            results += layouts.run(devices, reps, compilers)
        elif section == "graphs":
            from . import graphs

            results += graphs.run(devices, reps)
        elif section == "contention" and "cpu" in devices:
            from . import contention

            conditions = contention.CONDITIONS + contention.quota_conditions(list(quotas))
            results += contention.run(calls, conditions)
        elif section == "sizes" and "cpu" in devices:
            from . import sizes

            results += sizes.run(calls)
        elif section == "callers" and "cpu" in devices:
            from . import callers

            results += callers.run(calls)
        elif section == "startup" and "cpu" in devices:
            from . import startup

            results += startup.run()
        elif section == "call-cost":
            from . import call_cost

            results += call_cost.run(devices, reps)
        elif section == "indexed":
            from . import indexed

            results += indexed.run(devices, reps)
        elif section == "family":
            from . import family

            results += family.run(devices, reps)
        elif section == "torch":
            from . import torch_steps

            results += torch_steps.run(devices, reps)
        elif section == "dask" and "cpu" in devices:
            if not all(have(m) for m in ("dask", "distributed", "zarr")):
                print("dask section: needs pip install 'dmlops[dask]'; skipped", file=sys.stderr)
                continue
            from . import dask

            results += dask.run(reps, dask_mib, dask_worker_mib, only=dask_cases)
    return results


def main(argv: list[str] | None = None) -> int:
    """Entry point of `dmlops bench` and benchmarks/run.py."""
    parser = argparse.ArgumentParser(prog="dmlops bench", description=__doc__)
    parser.add_argument(
        "--device",
        choices=["cpu", "gpu", "webgpu", "all"],
        default="all",
        help="where to run (gpu and all skip the GPU when none is present; webgpu runs the "
        "operators, layouts, call-cost and indexed sections on the webgpu backend, with the CUDA "
        "backend and torch as peers where CUDA is present; all leaves webgpu out)",
    )
    parser.add_argument(
        "--section",
        choices=[*SECTIONS, "all"],
        action="append",
        help="which section(s) to run (default all; repeat to pick several)",
    )
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per contender")
    parser.add_argument(
        "--cpu-mib", type=int, default=256, help="large input size on the CPU (MiB)"
    )
    parser.add_argument(
        "--gpu-mib", type=int, default=1024, help="large input size on the GPU (MiB)"
    )
    parser.add_argument("--dask-mib", type=int, default=1536, help="dask: Zarr input size (MiB)")
    parser.add_argument(
        "--dask-worker-mib", type=int, default=256, help="dask: memory limit per worker (MiB)"
    )
    parser.add_argument(
        "--dask-case",
        action="append",
        default=[],
        help="dask: run only the cases whose name contains this (repeatable)",
    )
    parser.add_argument(
        "--no-compilers",
        action="store_true",
        help="layouts: leave out torch.compile and jax.jit (they take minutes to compile)",
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=200,
        help="contention and sizes: calls per contender (and condition); callers: at most"
        " this many calls a thread in a timing",
    )
    parser.add_argument(
        "--quota",
        type=float,
        action="append",
        default=[],
        metavar="CPUS",
        help="contention: also under a cgroup CPU quota of this many CPUs, as a container's "
        "(repeatable; needs root and a writable cgroup file system)",
    )
    parser.add_argument("--json", default="bench-results/results.json", help="where to write JSON")
    parser.add_argument("--plot", metavar="PNG", help="also draw the results into this PNG file")
    parser.add_argument(
        "--from-json",
        metavar="JSON",
        action="append",
        help="measure nothing: print (and --plot) results saved by earlier runs",
    )
    args = parser.parse_args(argv)
    if args.from_json:
        saved = [
            Result.from_json(i) for f in args.from_json for i in json.loads(Path(f).read_text())
        ]
        print(format_table(saved))
        if args.plot:
            from .plot import plot

            plot(saved, args.plot)
        return 0
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU
    devices = ["cpu", "gpu"] if args.device == "all" else [args.device]
    if "gpu" in devices and not gpu_present():
        print("no CUDA GPU with CuPy found: skipping the GPU", file=sys.stderr)
        devices.remove("gpu")
    chosen = args.section or ["all"]
    sections = list(SECTIONS) if "all" in chosen else chosen
    results = run_sections(
        sections,
        devices,
        args.reps,
        args.cpu_mib,
        args.gpu_mib,
        not args.no_compilers,
        args.dask_mib,
        args.dask_worker_mib,
        args.calls,
        args.dask_case,
        args.quota,
    )
    print(f"machine: {platform.node()} {platform.machine()} {platform.processor()}")
    print(format_table(results))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps([r.as_json() for r in results], indent=1))
    if args.plot:
        from .plot import plot

        plot(results, args.plot)
    return 0
