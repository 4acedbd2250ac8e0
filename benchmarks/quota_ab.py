"""The CPU engine in a cgroup with a CPU quota, its quota budget on and off (the performance
page's "in a container with a CPU quota"): the contention section's dmlops rows and numpy's,
each round in a fresh process in a group of QUOTA CPUs, budget on and off alternated; the
median, the 99th percentile and the periods the kernel stopped each contender's calls in.
Needs root and a writable cgroup file system.

    python benchmarks/quota_ab.py [QUOTA=1.5] [CALLS=200] [ROUNDS=2]
"""

from __future__ import annotations

import json
import subprocess
import sys

from dmlops.bench.cpu_quota import make_quota_group

CHILD = r"""
import json, statistics, sys, time
from dmlops.backends import cpu_engine
from dmlops.bench.contention import _graphs, _operators, latencies
from dmlops.bench.cpu_quota import own_throttled
if sys.argv[1] == "off":
    cpu_engine.native()
    cpu_engine.configure(quota_millicpus=0)
rows = []
for case, _, contenders in _graphs() + _operators():
    for name, fn in contenders.items():
        if not (name.startswith("dmlops") or name == "numpy"):
            continue
        time.sleep(0.25)
        before = own_throttled()
        times = latencies(fn, int(sys.argv[2]))
        stopped = own_throttled() - before
        rows.append([case[:24], name[:14], statistics.median(times),
                     times[int(0.99 * len(times))], stopped])
print(json.dumps(rows))
"""


def main() -> None:
    quota = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    group = make_quota_group(quota)
    found: dict[tuple[str, str], dict[str, list[list[float]]]] = {}
    try:
        for r in range(rounds):
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, mode, str(calls)],
                    capture_output=True,
                    text=True,
                    check=True,
                    preexec_fn=group.enter,
                )
                for case, name, *numbers in json.loads(done.stdout.strip().splitlines()[-1]):
                    found.setdefault((case, name), {}).setdefault(mode, []).append(numbers)
    finally:
        group.remove()
    print(f"quota {quota}: median ms / p99 ms / stopped periods, per round; budget on | off")
    for (case, name), by_mode in found.items():
        cells = {
            mode: " ".join(f"{m * 1e3:6.2f}/{p * 1e3:6.2f}/{int(t):2d}" for m, p, t in rounds_)
            for mode, rounds_ in by_mode.items()
        }
        print(f"{case:24} {name:14} on {cells['on']} | off {cells['off']}")


if __name__ == "__main__":
    main()
