"""Where the CPU engine should let the GIL go: many Python threads calling at once, under
several values of `gil_held_bytes_a_thread`, numpy's view copies beside.

For each output size, thread count and limit: a round's time (every thread one call) of
three of the callers section's operators (reversed rows, a stride-2 slice, NCHW -> NHWC),
over numpy's, the median of five timings. `--one-thread` runs every job on its calling
thread (`set_num_threads(1)`: a scheduler's tasks, `DMLOPS_NUM_THREADS=1`), where the limit
is one thread's share. The limits alternate within each case, so a drift of the machine
meets them all. Usage:

    python benchmarks/gil_sweep.py [--threads 1,4,16] [--sizes 65536,262144,1048576]
        [--limits 0,262144,524288,1048576,4194304] [--one-thread]
"""

from __future__ import annotations

import argparse
import statistics

import dmlops
from dmlops.backends import cpu_engine
from dmlops.bench.callers import calls_a_thread, round_time
from dmlops.bench.sizes import _label, _operators

_KEPT = ("slice1 reversed rows", "slice, strides 2 x 2", "NCHW -> NHWC")


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=_ints, default=[1, 4, 16])
    parser.add_argument("--sizes", type=_ints, default=[64 << 10, 256 << 10, 1 << 20])
    parser.add_argument("--limits", type=_ints, default=[0, 256 << 10, 512 << 10, 1 << 20, 4 << 20])
    parser.add_argument("--one-thread", action="store_true", help="every job on its caller")
    args = parser.parse_args()
    if args.one_thread:
        dmlops.set_num_threads(1)
    default = cpu_engine.DEFAULTS["gil_held_bytes_a_thread"]
    print(f"engine threads {dmlops.get_num_threads()}; default limit {default} bytes a thread")
    print("| case | threads | " + " | ".join(f"limit {v}" for v in args.limits) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in args.limits) + " |")
    try:
        for nbytes in args.sizes:
            for case, out_bytes, contenders in _operators(nbytes):
                if case not in _KEPT:
                    continue
                calls = calls_a_thread(out_bytes)
                for threads in args.threads:
                    ours: dict[int, list[float]] = {v: [] for v in args.limits}
                    theirs = []
                    for _ in range(5):
                        for limit in args.limits:
                            cpu_engine.configure(gil_held_bytes_a_thread=limit)
                            ours[limit].append(round_time(contenders["dmlops"], threads, calls))
                        theirs.append(round_time(contenders["numpy"], threads, calls))
                    numpy_round = statistics.median(theirs)
                    cells = [f"{statistics.median(ours[v]) / numpy_round:.2f}" for v in args.limits]
                    name = f"{case}, {_label(out_bytes)}"
                    print(f"| {name} | {threads} | " + " | ".join(cells) + " |", flush=True)
    finally:
        cpu_engine.configure(gil_held_bytes_a_thread=default)


if __name__ == "__main__":
    main()
