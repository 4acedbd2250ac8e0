"""The CPU engine in a cgroup with a CPU quota that several processes share, as a server's
workers or a process pool's children share a container's (the performance page's "a quota
shared"): PROCS processes in one group of QUOTA CPUs, each calling the same chain back to
back for SECONDS at once; the engine's budget counting the group's CPU time (as it loads),
counting its own process's alone, and off; numpy's chain for reference. Each process's
median and 99th percentile, and the periods the kernel stopped the group in. Rounds
alternate the modes. Needs root and a writable cgroup file system.

    python benchmarks/quota_siblings.py [QUOTA=2.5] [PROCS=2] [SECONDS=3] [ROUNDS=2]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

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
    fields = dict(line.split() for line in (group.path / "cpu.stat").read_text().splitlines())
    if "throttled_usec" in fields:
        return int(fields["nr_throttled"]), int(fields["throttled_usec"]) / 1e3
    return int(fields["nr_throttled"]), int(fields["throttled_time"]) / 1e6


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


def main() -> None:
    quota = float(sys.argv[1]) if len(sys.argv) > 1 else 2.5
    procs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
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
    print(f"quota {quota} CPUs shared by {procs} processes, {seconds} s each, {rounds} rounds")
    print(
        "| chain | budget | medians (ms) | 99th percentiles (ms) | calls a process "
        "| periods stopped | ms stopped |"
    )
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for (chain, mode), runs in found.items():
        rows = [row for run in runs for row in run[0]]  # type: ignore[union-attr]
        medians = [row[0] * 1e3 for row in rows]
        tails = [row[1] * 1e3 for row in rows]
        calls = statistics.median(row[2] for row in rows)
        stopped = "/".join(str(run[1]) for run in runs)
        ms = "/".join(f"{run[2]:.0f}" for run in runs)
        print(
            f"| {chain} | {mode} | {min(medians):.2f}-{max(medians):.2f} | "
            f"{min(tails):.2f}-{max(tails):.2f} | {calls:.0f} | {stopped} | {ms} |"
        )


if __name__ == "__main__":
    main()
