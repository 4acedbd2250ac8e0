"""The KV-cache append's bound plan beside BUSY spinning processes (argv[1], default 1),
400 calls a setting, median and 99th percentile, against onnxruntime's session: the pool
as it is, without the load estimate, without the learnt helper cap, and without both with
workers that sleep at once after a job (no spin) — what asking a CPU that another process
keeps busy buys in the median and costs in the tail.

    python benchmarks/busy_helper_tradeoff.py [BUSY]
"""

import subprocess
import sys
import time

import onnxruntime as ort

from dmlops.backends import cpu_engine
from dmlops.bench import contention
from dmlops.bench.graphs import PATTERNS, bound_on_cpu

SETTINGS = {
    "as it is": {},
    "no load estimate": {"load_aware": 0},
    "no estimate, no cap": {"load_aware": 0, "straggle_us": 10**9},
    "estimate, no cap": {"straggle_us": 10**9},
    "no estimate, no cap, no spin": {
        "load_aware": 0,
        "straggle_us": 10**9,
        "spin_us": 0,
        "idle_spin_us": 0,
    },
}


def latencies(fn, calls: int = 400) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(median, 99th percentile) in ms of `calls` calls (the contention section's timing)."""
    times = contention.latencies(fn, calls)
    return times[calls // 2] * 1e3, times[int(calls * 0.99)] * 1e3


def main() -> None:
    busy = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    append = next(p for p in PATTERNS if p.name.startswith("KV"))
    model = append.model(append.shapes(False))
    bound = bound_on_cpu(append, model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    time.sleep(0.5)
    try:
        rows = []
        for label, settings in SETTINGS.items():
            cpu_engine.configure(**{**cpu_engine.DEFAULTS, **settings})
            rows.append((f"dmlops, {label}", *latencies(bound.dispatch)))
        cpu_engine.configure(**cpu_engine.DEFAULTS)
        rows.append(("onnxruntime", *latencies(lambda: session.run(None, bound.xs))))
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    print(f"KV-cache append beside {busy} busy process(es): median / p99 ms (ratio)")
    for label, median, p99 in rows:
        print(f"{label:30s} {median:7.3f} {p99:7.3f} ({p99 / median:.2f})")


if __name__ == "__main__":
    main()
