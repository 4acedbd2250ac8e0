"""Why op-by-op chains stay over numpy on a machine whose memory is the limit: the bytes
each way of computing a chain moves, and its time, on one thread and on all.

numpy's chain reads views and copies once (`np.concatenate` of four stride-2 views, one
`ascontiguousarray` per head transpose); dmlops' functional API makes each operator's
output, as DirectML's operators do, so the chain op by op writes every intermediate and
reads it again; the bound graph (one plan) moves what numpy's moves. Bytes: each input
line a copy touches read once, each output byte written once (a write of a line not in
the cache also reads it first: not counted). Medians of ROUNDS rounds of 9 calls.

    python benchmarks/op_by_op_traffic.py [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops
from dmlops.bench.common import median_cpu
from dmlops.bench.graphs import PATTERNS, bound_on_cpu


def _median_ms(fn: Callable[[], Any], rounds: int) -> float:
    return statistics.median(median_cpu(fn, 9) for _ in range(rounds)) * 1e3


def _moved_mb(chain: str, x: np.ndarray[Any, Any]) -> tuple[float, float]:
    """(numpy's and the bound graph's MB, op by op's MB) of a chain on input x."""
    n = x.nbytes / 2**20
    if chain.startswith("Focus"):  # four stride-2 slices read x's lines twice, then a join
        return 2 * n + n, (2 * n + n) + (n + n)
    return n + n, (n + n) + (n + n)  # QKV: a split, then each head transpose


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    rounds = parser.parse_args().rounds
    print(f"threads {dmlops.get_num_threads()}; ms, medians of {rounds} rounds\n")
    print(
        "| chain | MB numpy / graph | MB op by op | numpy | graph, all threads | "
        "op by op, all threads | graph, 1 thread | op by op, 1 thread |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    threads = dmlops.get_num_threads()
    for p in PATTERNS[:2]:
        bound = bound_on_cpu(p, p.model(p.shapes(False)))
        ins = bound.ins
        times = {}
        times["numpy"] = _median_ms(
            lambda p=p, ins=ins: [np.ascontiguousarray(w) for w in p.reference(np, ins)], rounds
        )
        for count in (threads, 1):
            dmlops.set_num_threads(count)
            times[f"graph {count}"] = _median_ms(bound.dispatch, rounds)
            times[f"op {count}"] = _median_ms(lambda p=p, ins=ins: p.op_by_op(ins), rounds)
        dmlops.set_num_threads(threads)
        ours, op_by_op = _moved_mb(p.name, ins[0])
        print(
            f"| {p.name} | {ours:.1f} | {op_by_op:.1f} | {times['numpy']:.3f} | "
            f"{times[f'graph {threads}']:.3f} | {times[f'op {threads}']:.3f} | "
            f"{times['graph 1']:.3f} | {times['op 1']:.3f} |"
        )


if __name__ == "__main__":
    main()
