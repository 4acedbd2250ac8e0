"""How often each CPU is taken away from a thread that never blocks, and what that alone
does to the tail of a short call spread over many threads.

One thread pinned to each CPU of the process's set spins on the clock (`cpu_jitter.c`,
built here with the interpreter's C compiler) and records every gap between two reads
longer than the threshold. The table gives, a CPU, the gaps of at least 10, 50 and 200 µs
a second and the longest; then, for calls of a few lengths on 1 thread and on every CPU,
the share of moments at which a call starting then would lose at least half its length
on one of its CPUs: a thread held off its CPU for that long with a piece in hand makes the
call at least 1.5x as long as one that is not, so where that share passes 1 % no
scheduling inside the engine can bring the 99th percentile within 1.5x the median.

    python benchmarks/cpu_jitter.py [--seconds 10] [--threshold-us 5] [--json F] [--plot F]
    (needs a C compiler; run it alone on the machine, or beside the load to be measured)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import sysconfig
import tempfile
from typing import Any

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
CALL_US = (30, 100, 300, 1000)
LEVELS_US = (10, 50, 200)


def build(directory: pathlib.Path) -> pathlib.Path:
    """The spinner program, compiled into `directory`."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    program = directory / "cpu_jitter"
    subprocess.run(
        [compiler, "-O2", "-pthread", str(HERE / "cpu_jitter.c"), "-o", str(program)],
        check=True,
    )
    return program


def record(seconds: float, threshold_us: float, cpus: list[int]) -> dict[str, Any]:
    """Every CPU's gaps (start and length, ns) and reads over one run."""
    with tempfile.TemporaryDirectory() as d:
        program = build(pathlib.Path(d))
        out = subprocess.run(
            [str(program), str(seconds), str(int(threshold_us * 1000)), *map(str, cpus)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    gaps: dict[int, list[tuple[int, int]]] = {c: [] for c in cpus}
    reads: dict[int, int] = {}
    for line in out.splitlines():
        kind, *values = line.split()
        if kind == "gap":
            gaps[int(values[0])].append((int(values[1]), int(values[2])))
        elif kind == "reads":
            reads[int(values[0])] = int(values[1])
    return {"seconds": seconds, "threshold_us": threshold_us, "gaps": gaps, "reads": reads}


def hit_share(
    gaps: dict[int, list[tuple[int, int]]],
    cpus: list[int],
    call_ns: int,
    span_ns: int,
    samples: int,
    rng: np.random.Generator,
) -> float:
    """The share of start times at which a call of `call_ns` on `cpus` loses at least half
    its length to one gap of one of them."""
    need = call_ns // 2
    starts = rng.integers(0, max(1, span_ns - call_ns), samples)
    hit = np.zeros(samples, bool)
    for c in cpus:
        if not gaps[c]:
            continue
        g = np.array(gaps[c], np.int64)
        long_enough = g[g[:, 1] >= need]
        for begin, length in long_enough:
            # the overlap of [begin, begin + length) with [s, s + call_ns) at least `need`
            low = begin - call_ns + need
            high = begin + length - need
            hit |= (starts >= low) & (starts <= high)
    return float(hit.mean())


def summarise(run: dict[str, Any], samples: int = 200_000) -> dict[str, Any]:
    """Per-CPU rates and the predicted share of calls over 1.5x for each call length."""
    seconds, gaps = run["seconds"], run["gaps"]
    cpus = sorted(gaps)
    per_cpu = []
    for c in cpus:
        lengths = np.array([g[1] for g in gaps[c]], np.int64) / 1000.0
        per_cpu.append(
            {
                "cpu": c,
                **{f"per_s_{u}us": float((lengths >= u).sum() / seconds) for u in LEVELS_US},
                "longest_us": float(lengths.max()) if lengths.size else 0.0,
                "lost_pct": float(lengths.sum() / (seconds * 1e6) * 100),
            }
        )
    rng = np.random.default_rng(0)
    span = int(seconds * 1e9)
    calls = []
    for us in CALL_US:
        calls.append(
            {
                "call_us": us,
                "one_cpu": float(
                    np.mean(
                        [hit_share(gaps, [c], us * 1000, span, samples // 8, rng) for c in cpus]
                    )
                ),
                "every_cpu": hit_share(gaps, cpus, us * 1000, span, samples, rng),
            }
        )
    return {"cpus": len(cpus), "per_cpu": per_cpu, "calls": calls}


def table(summary: dict[str, Any]) -> str:
    """Markdown: each CPU's gaps, then each call length's predicted share."""
    head = [f"≥{u} µs /s" for u in LEVELS_US]
    lines = [
        "| CPU | " + " | ".join(head) + " | longest µs | time lost |",
        "| ---: |" + " ---: |" * (len(head) + 2),
    ]
    for row in summary["per_cpu"]:
        rates = " | ".join(f"{row[f'per_s_{u}us']:.1f}" for u in LEVELS_US)
        lines.append(
            f"| {row['cpu']} | {rates} | {row['longest_us']:.0f} | {row['lost_pct']:.3f} % |"
        )
    n = summary["cpus"]
    lines += [
        "",
        f"| call | 1 CPU: share losing half | {n} CPUs: share losing half |",
        "| ---: | ---: | ---: |",
    ]
    for row in summary["calls"]:
        one, every = row["one_cpu"] * 100, row["every_cpu"] * 100
        lines.append(f"| {row['call_us']} µs | {one:.2f} % | {every:.2f} % |")
    return "\n".join(lines)


def plot(run: dict[str, Any], path: str) -> None:
    """Each CPU's gaps a second at least each length (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c, gs in sorted(run["gaps"].items()):
        if not gs:
            continue
        lengths = np.sort(np.array([g[1] for g in gs]) / 1000.0)[::-1]
        ax.loglog(lengths, np.arange(1, lengths.size + 1) / run["seconds"], lw=1, label=f"CPU {c}")
    ax.set_xlabel("gap length (µs)")
    ax.set_ylabel("gaps a second at least that long")
    ax.set_title("A spinning thread's time off its CPU")
    ax.grid(True, which="both", alpha=0.3)
    if len(run["gaps"]) <= 16:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threshold-us", type=float, default=5.0)
    parser.add_argument("--json")
    parser.add_argument("--plot")
    args = parser.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    run = record(args.seconds, args.threshold_us, cpus)
    summary = summarise(run)
    print(table(summary))
    if args.json:
        saved = {**summary, "seconds": args.seconds, "threshold_us": args.threshold_us}
        pathlib.Path(args.json).write_text(json.dumps(saved, indent=1))
    if args.plot:
        plot(run, args.plot)


if __name__ == "__main__":
    main(sys.argv[1:])
