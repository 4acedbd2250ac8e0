"""Benchmark section "startup": what a fresh process pays before its first answers.

In a new process each time: `import dmlops` (alone, and after `import torch` where torch is
there), then the first call of each operator on a 16 MiB array, with the default CPU engine
and with DMLOPS_CPU_ENGINE=numpy (the numpy engine: no compiled code to load). Short-lived
processes (the CLI, a test run, a serverless handler, each DataLoader worker) pay this every
time. Medians over a few fresh processes. dmlops' bytecode is compiled first, as `pip
install` compiles it (where PYTHONDONTWRITEBYTECODE is set, an editable checkout would
otherwise compile every module again in every process: 0.1 s of `import dmlops` on the VM).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from .common import Result, have

__all__ = ["run"]

SECTION = "startup"

_IMPORT = """
import json, time
{before}
t0 = time.perf_counter()
import dmlops
print(json.dumps({{"import": time.perf_counter() - t0}}))
"""

_FIRST_CALLS = """
import json, time
import numpy as np
import dmlops
x = np.arange(1 << 22, dtype=np.float32).reshape(64, 256, 256)  # 16 MiB
rows = np.arange(0, 64, 3)
calls = {
    "slice1": lambda: dmlops.slice1(x, [0, 0, 0], [64, 256, 256], [1, -1, 2]),
    "split": lambda: dmlops.split(x, 1, [128, 128]),
    "join": lambda: dmlops.join([x, x], 0),
    "depth_to_space": lambda: dmlops.depth_to_space(x.reshape(1, 64, 256, 256), 2),
    "padding": lambda: dmlops.padding(x, [0, 2, 2], [0, 2, 2], "REFLECTION"),
    "tile": lambda: dmlops.tile(x[:8], [2, 1, 1]),
    "gather": lambda: dmlops.gather(x, rows, 0),
}
found = {}
for name, call in calls.items():
    t0 = time.perf_counter()
    call()
    found[name] = time.perf_counter() - t0
print(json.dumps(found))
"""


def _fresh(code: str, environ: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ
    )
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _medians(code: str, environ: dict[str, str], runs: int) -> dict[str, float]:
    seen = [_fresh(code, environ) for _ in range(runs)]
    return {k: statistics.median(s[k] for s in seen) for k in seen[0]}


def run(runs: int = 5) -> list[Result]:
    """Import times and first calls, each the median of `runs` fresh processes."""
    import compileall
    from pathlib import Path

    import dmlops

    compileall.compile_dir(str(Path(dmlops.__file__).parent), quiet=1)
    base = dict(os.environ)
    numpy_engine = {**base, "DMLOPS_CPU_ENGINE": "numpy"}
    results = []
    imports = Result(SECTION, "import dmlops", "cpu", 0, "import dmlops")
    imports.times["import dmlops"] = _medians(_IMPORT.format(before=""), base, runs)["import"]
    if have("torch"):
        after = _medians(_IMPORT.format(before="import torch"), base, runs)["import"]
        imports.times["import dmlops after import torch"] = after
    results.append(imports)
    ours = _medians(_FIRST_CALLS, base, runs)
    plain = _medians(_FIRST_CALLS, numpy_engine, runs)
    for name in ours:
        res = Result(SECTION, f"first {name}, 16 MiB", "cpu", 16 << 20, "numpy engine")
        res.times["default engine"] = ours[name]
        res.times["numpy engine"] = plain[name]
        results.append(res)
    return results
