"""Benchmark section "contention": the CPU engine on a machine that runs other work too.

The graphs section's four chains (bound plan, and op by op through the functional API) and a
few operators, with numpy and onnxruntime in the same process, under each condition: idle,
one and two other processes spinning on a core each, and a CPU set of four cores (the
process started under that affinity, as `taskset -c 0-3` starts it, so every library picks
its thread count from it; onnxruntime's default pool pins a worker to every CPU of the
machine regardless, so there a session of as many threads as the set also runs); and, where
asked (`quota_conditions`) and the machine lets this process make a control group, a CPU
quota as a container has (`docker run --cpus 1.5`), with the periods in which the kernel
stopped the measuring process for having spent it. Each
condition runs in a fresh process; each contender gives the median and the 99th percentile
over `calls` calls after 0.1 s of warm-up calls (a scheduler time slice lost waiting for a
descheduled thread shows in the 99th percentile, not in the median).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .common import Result, have

__all__ = ["CONDITIONS", "latencies", "percentiles", "quota_conditions", "run"]

SECTION = "contention"
CONDITIONS = ("idle", "1 busy", "2 busy", "cpuset 4")
OURS = "dmlops graph (bound)"
ORT_IN_SET = "onnxruntime, threads = CPU set"
_SPIN = "while True: pass"


_WARM_SECONDS = 0.1


def latencies(fn: Callable[[], Any], calls: int) -> list[float]:
    """Seconds of each of `calls` calls, sorted, after warm-up calls for 0.1 s (at least
    three): the contender before, onnxruntime above all, leaves its threads spinning for a
    while after its last call, and a multi-threaded contender's first calls share the cores
    with them."""
    start = time.perf_counter()
    warm = 0
    while warm < 3 or time.perf_counter() - start < _WARM_SECONDS:
        fn()
        warm += 1
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)


def _cpu_set_size() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def percentiles(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(median, 99th percentile) of `calls` calls."""
    times = latencies(fn, calls)
    return statistics.median(times), times[min(len(times) - 1, int(0.99 * len(times)))]


def _operators() -> list[tuple[str, int, dict[str, Callable[[], Any]]]]:
    """(case, output bytes, contenders) for a few single operators."""
    import dmlops

    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 128, 128), dtype=np.float32)  # 16 MiB
    flat = rng.standard_normal(1 << 18, dtype=np.float32)  # 1 MiB
    sizes = [1024] * 256
    cuts = np.cumsum(sizes)[:-1]
    parts = [rng.standard_normal((64, 256, 64), dtype=np.float32) for _ in range(4)]
    images = rng.standard_normal((8, 64, 128, 128), dtype=np.float32)
    channels_last = images.transpose(0, 2, 3, 1)
    shape = channels_last.shape
    return [
        (
            "slice1 reversed rows, 16 MiB",
            x.nbytes,
            {
                "dmlops": lambda: dmlops.slice1(x, [0, 0, 0], list(x.shape), [1, 1, -1]),
                "numpy": lambda: np.ascontiguousarray(x[:, :, ::-1]),
            },
        ),
        (
            "256-way split, 1 MiB",
            flat.nbytes,
            {
                "dmlops": lambda: dmlops.split(flat, 0, sizes),
                "numpy": lambda: [q.copy() for q in np.split(flat, cuts)],
            },
        ),
        (
            "join of 4 x 4 MiB on axis 1",
            4 * parts[0].nbytes,
            {
                "dmlops": lambda: dmlops.join(parts, 1),
                "numpy": lambda: np.concatenate(parts, 1),
            },
        ),
        (
            "NCHW -> NHWC of [8, 64, 128, 128], 32 MiB",
            images.nbytes,
            {
                "dmlops": lambda: dmlops.slice1(channels_last, [0] * 4, list(shape), [1] * 4),
                "numpy": lambda: np.ascontiguousarray(channels_last),
            },
        ),
    ]


def _graphs(
    shapes_of: Callable[[str], dict[str, tuple[int, ...]]] | None = None,
) -> list[tuple[str, int, dict[str, Callable[[], Any]]]]:
    """(case, output bytes, contenders) for the graphs section's chains (on inputs of the
    shapes `shapes_of(chain's name)` gives, where given)."""

    from .graphs import PATTERNS, bound_on_cpu

    found = []
    for p in PATTERNS:
        if shapes_of is not None:
            p = p.with_shapes(shapes_of(p.name))
        bound = bound_on_cpu(p, p.model(p.shapes(False)))
        model, xs, ins, outs = bound.model, bound.xs, bound.ins, bound.outs
        contenders: dict[str, Callable[[], Any]] = {
            OURS: bound.dispatch,
            "dmlops op by op": lambda p=p, ins=ins: p.op_by_op(ins),  # type: ignore[misc]
            "numpy": lambda p=p, ins=ins: [  # type: ignore[misc]
                np.ascontiguousarray(w) for w in p.reference(np, ins)
            ],
        }
        if have("onnxruntime"):
            import onnxruntime as ort

            sess = ort.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            )
            contenders["onnxruntime"] = lambda sess=sess, xs=xs: sess.run(None, xs)  # type: ignore[misc]
            cpus = _cpu_set_size()
            if cpus < (os.cpu_count() or cpus):
                # onnxruntime's default pool pins a worker to each of the machine's CPUs,
                # outside the process's CPU set: this one keeps to the set
                options = ort.SessionOptions()
                options.intra_op_num_threads = cpus
                kept = ort.InferenceSession(
                    model.SerializeToString(), options, providers=["CPUExecutionProvider"]
                )
                contenders[ORT_IN_SET] = lambda sess=kept, xs=xs: sess.run(None, xs)  # type: ignore[misc]
        found.append((p.name, sum(o.nbytes for o in outs), contenders))
    return found


def measure(calls: int, settle: float = 0.0) -> list[dict[str, Any]]:
    """Every case in this process: [{case, bytes, times: {name: [median, p99]}, throttled:
    {name: periods its calls' group was stopped in by a CPU quota}}], then {threads}.
    `settle`: seconds idle before each contender (under a quota: the one before it, such as
    onnxruntime's spinning pool, leaves the quota's period to roll over first)."""
    import dmlops

    from .cpu_quota import own_throttled

    cases = _graphs() if have("onnx") else []
    cases += _operators()
    rows = []
    for case, nbytes, contenders in cases:
        times, throttled = {}, {}
        for name, fn in contenders.items():
            time.sleep(settle)
            before = own_throttled()
            times[name] = list(percentiles(fn, calls))
            after = own_throttled()
            if before is not None and after is not None:
                throttled[name] = after - before
        rows.append({"case": case, "bytes": nbytes, "times": times, "throttled": throttled})
    rows.append({"threads": dmlops.get_num_threads()})
    return rows


def _spinners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(count)]


def quota_conditions(quotas: list[float]) -> tuple[str, ...]:
    """The conditions of CPU quotas of these many CPUs ("quota 1.5")."""
    return tuple(f"quota {q:g}" for q in quotas)


def _in_condition(condition: str, calls: int) -> list[dict[str, Any]]:
    """The cases measured in a fresh process under `condition` (a quota's condition adds
    the periods the kernel stopped that process in, over the whole run, to the threads
    row; each row holds those of each contender's calls)."""
    settle = 0.25 if condition.startswith("quota ") else 0.0
    code = (
        "import json; from dmlops.bench.contention import measure; "
        f"print(json.dumps(measure({calls}, {settle})))"
    )
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    group = None
    if condition.startswith("quota "):
        from .cpu_quota import make_quota_group

        group = make_quota_group(float(condition.split()[1]))
    spinners = _spinners({"1 busy": 1, "2 busy": 2}.get(condition, 0))

    def placed() -> None:
        if condition == "cpuset 4" and cpus:
            os.sched_setaffinity(0, cpus[:4])
        if group is not None:
            group.enter()

    try:
        time.sleep(0.2)  # (the spinners running)
        throttled = group.throttled() if group is not None else 0
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=placed if condition == "cpuset 4" or group is not None else None,
        )
        if done.returncode:
            raise RuntimeError(f"the {condition} measurement failed:\n{done.stderr}")
        throttled = group.throttled() - throttled if group is not None else 0
    finally:
        for s in spinners:
            s.kill()
            s.wait()
        if group is not None:
            group.remove()
    rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    if group is not None:
        rows[-1]["throttled"] = throttled
    return rows


def run(calls: int = 200, conditions: tuple[str, ...] = CONDITIONS) -> list[Result]:
    """Every case under every condition: medians as times, 99th percentiles as details (a
    quota's condition where this process may not make a control group is left out, said)."""
    results = []
    for condition in conditions:
        try:
            rows = _in_condition(condition, calls)
        except OSError as error:
            if not condition.startswith("quota "):
                raise
            print(f"  left out cpu: {condition} ({error})", file=sys.stderr, flush=True)
            continue
        threads = rows[-1]["threads"]
        throttled = rows[-1].get("throttled")
        for row in rows[:-1]:
            reference = "numpy"
            res = Result(
                SECTION, f"{row['case']} [{condition}, {threads} threads]", "cpu", row["bytes"],
                reference,
            )  # fmt: skip
            for name, (median, p99) in row["times"].items():
                res.times[name] = median
                res.times[f"{name} p99"] = p99
            if throttled is not None:
                for name, count in row.get("throttled", {}).items():
                    res.details[name] = f"stopped by the quota in {count} periods of 100 ms"
            results.append(res)
        print(f"  measured cpu: {condition}", file=sys.stderr, flush=True)
    return results
