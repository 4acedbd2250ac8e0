"""The CPU engine in a cgroup with a CPU quota that several processes share, as a server's
workers or a process pool's children share a container's (the performance page's "a quota
shared"): PROCS processes in one group of QUOTA CPUs, each calling the same chain back to
back for SECONDS at once; the engine's budget counting the group's CPU time (as it loads),
counting its own process's alone, and off; numpy's chain for reference. Each process's
median and 99th percentile, and the periods the kernel stopped the group in. Rounds
alternate the modes. Needs root and a writable cgroup file system.

    python benchmarks/quota_siblings.py [QUOTA=2.5] [PROCS=2] [SECONDS=3] [ROUNDS=2]
    python benchmarks/quota_siblings.py --plot OUT.png TABLE.txt...  (redraw printed tables)
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dmlops.bench.cpu_quota import QuotaGroup, make_quota_group

CHILD = r"""
import json, statistics, sys, time
import numpy as np
from dmlops.backends import cpu_engine
from dmlops.bench.graphs import PATTERNS, bound_on_cpu
mode, chain, start, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
engine = cpu_engine.native()
if mode == "own":
    engine.quota_usage("")
elif mode == "off":
    cpu_engine.configure(quota_millicpus=0)
pattern = next(p for p in PATTERNS if p.name.startswith(chain.split(":")[0]))
bound = bound_on_cpu(pattern, pattern.model(pattern.shapes(False)))
ins = bound.ins
fn = {
    "bound": bound.dispatch,
    "op by op": lambda: pattern.op_by_op(ins),
    "numpy": lambda: [np.ascontiguousarray(w) for w in pattern.reference(np, ins)],
}[chain.split(":")[1]]
fn()
while time.time() < start:
    fn()
times = []
while time.time() < start + seconds:
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps([statistics.median(times), times[int(0.99 * len(times))], len(times)]))
"""

CHAINS = ("Focus:op by op", "Focus:bound", "Focus:numpy", "QKV:bound", "QKV:numpy")
MODES = ("group", "own", "off")


def _stopped(group: QuotaGroup) -> tuple[int, float]:
    """(periods stopped, ms stopped) of the group so far."""
    return group.throttled(), group.throttled_ms()


def _run(group: QuotaGroup, mode: str, chain: str, procs: int, seconds: float) -> list[object]:
    start = time.time() + 2.5  # (every process imported and warm by then)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, mode, chain, str(start), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=group.enter,
        )
        for _ in range(procs)
    ]
    time.sleep(max(0.0, start - time.time()))
    before = _stopped(group)
    outs = [c.communicate()[0] for c in children]
    after = _stopped(group)
    rows = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    return [rows, after[0] - before[0], after[1] - before[1]]


def _table(quota: float, procs: int, seconds: float, rounds: int) -> str:
    found: dict[tuple[str, str], list[list[object]]] = {}
    for r in range(rounds):
        for chain in CHAINS:
            modes = ("numpy",) if chain.endswith("numpy") else MODES[:: 1 if r % 2 == 0 else -1]
            for mode in modes:
                group = make_quota_group(quota)
                try:
                    found.setdefault((chain, mode), []).append(
                        _run(group, mode, chain, procs, seconds)
                    )
                finally:
                    time.sleep(0.2)
                    group.remove()
    lines = [
        f"quota {quota} CPUs shared by {procs} processes, {seconds} s each, {rounds} rounds",
        "| chain | budget | medians (ms) | 99th percentiles (ms) | calls a process "
        "| periods stopped | ms stopped |",
        "| --- | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for (chain, mode), runs in found.items():
        rows = [row for run in runs for row in run[0]]  # type: ignore[union-attr]
        medians = [row[0] * 1e3 for row in rows]
        tails = [row[1] * 1e3 for row in rows]
        calls = statistics.median(row[2] for row in rows)
        stopped = "/".join(str(run[1]) for run in runs)
        ms = "/".join(f"{run[2]:.0f}" for run in runs)
        lines.append(
            f"| {chain} | {mode} | {min(medians):.2f}-{max(medians):.2f} | "
            f"{min(tails):.2f}-{max(tails):.2f} | {calls:.0f} | {stopped} | {ms} |"
        )
    return "\n".join(lines)


def plot(tables: list[str], path: str) -> None:
    """Each printed table as a panel: every chain and budget's 99th percentiles (the bar to
    the largest, a mark at the smallest) over its medians' range (log axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(6.5 * len(tables), 4.6), squeeze=False)
    for ax, text in zip(axes[0], tables, strict=True):
        title, *lines = [line for line in text.splitlines() if line.strip()]
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
        labels = [f"{chain}, {mode}" for chain, mode, *_ in rows]
        low = [float(r[2].split("-")[0]) for r in rows]
        top = [float(r[3].split("-")[1]) for r in rows]
        colors = [{"group": "C0", "own": "C1", "off": "C3"}.get(r[1], "C7") for r in rows]
        ys = range(len(rows))
        ax.barh(ys, top, color=colors, alpha=0.8, label="99th percentile (the largest)")
        ax.scatter(low, ys, color="black", s=12, zorder=3, label="median (the smallest)")
        ax.set_xscale("log")
        ax.set_yticks(list(ys))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("ms a call")
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--plot"]:
        texts = [Path(name).read_text() for name in args[2:]]
        tables = [t for text in texts for t in re.split(r"^(?=quota )", text, flags=re.M)[1:]]
        plot([t.split("\n#")[0] for t in tables], args[1])
        return
    quota = float(args[0]) if len(args) > 0 else 2.5
    procs = int(args[1]) if len(args) > 1 else 2
    seconds = float(args[2]) if len(args) > 2 else 3.0
    rounds = int(args[3]) if len(args) > 3 else 2
    print(_table(quota, procs, seconds, rounds))


if __name__ == "__main__":
    main()
