"""Benchmark section "startup": what a fresh process pays before its first answers.

In a new process each time: `import dmlops` (alone, and after `import torch` where torch is
there), then the first call of one operator on a 16 MiB array (every operator, each in
processes of its own), with the default CPU engine and with DMLOPS_CPU_ENGINE=numpy (the
numpy engine: no compiled code to load). Short-lived processes (the CLI, a test run, a
serverless handler, each DataLoader worker) pay this every time. Medians over a few fresh
processes. dmlops' bytecode is compiled first, as `pip install` compiles it (where
PYTHONDONTWRITEBYTECODE is set, an editable checkout would otherwise compile every module
again in every process: 0.1 s of `import dmlops` on the VM).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from .common import Result, have

__all__ = ["FIRST_CALL_NAMES", "FIRST_CALL_SETUP", "run"]

SECTION = "startup"

_IMPORT = """
import json, time
{before}
t0 = time.perf_counter()
import dmlops
print(json.dumps({{"import": time.perf_counter() - t0}}))
"""

# Each operator's first call on a 16 MiB float32 array (index and update arrays beside it):
# `T` places a numpy array where the calls run (numpy as is; the GPU script's CUDA tensors)
FIRST_CALL_SETUP = """
import numpy as np
rng = np.random.default_rng(0)
x = T(np.arange(1 << 22, dtype=np.float32).reshape(64, 256, 256))
rows = T(np.arange(0, 64, 3))
ie = T(rng.integers(0, 64, (64, 8, 256)))
nd = T(rng.integers(0, 64, (32, 1)))
upd = T(rng.standard_normal((32, 256, 256), dtype=np.float32))
upd_e = T(rng.standard_normal((64, 8, 256), dtype=np.float32))
oh = T(rng.integers(0, 64, 4096))
hot = T(np.array([0.0, 1.0], np.float32))
lens = T(np.full(256, 3, dtype=np.int64))
# every other column of each row: a max pool's indices into the whole [1, 64, 256, 512]
pool = T((np.arange(1 << 21, dtype=np.int64) * 2).reshape(1, 64, 128, 256))
blank = T(np.empty((64, 256, 256), np.float32))
image = x.reshape(1, 64, 256, 256)
calls = {
 "slice1": lambda: dmlops.slice1(x, [0, 0, 0], [64, 256, 256], [1, -1, 2]),
 "slice": lambda: dmlops.slice(x, [0, 0, 0], [32, 128, 128], [2, 2, 2]),
 "split": lambda: dmlops.split(x, 1, [128, 128]),
 "join": lambda: dmlops.join([x, x], 0),
 "depth_to_space": lambda: dmlops.depth_to_space(image, 2),
 "space_to_depth": lambda: dmlops.space_to_depth(image, 2),
 "padding": lambda: dmlops.padding(x, [0, 2, 2], [0, 2, 2], "REFLECTION"),
 "tile": lambda: dmlops.tile(x[:8], [2, 1, 1]),
 "slice_grad": lambda: dmlops.slice_grad(x, [64, 512, 256], [0, 0, 0], [64, 512, 256], [1, 2, 1]),
 "gather": lambda: dmlops.gather(x, rows, 0),
 "gather_elements": lambda: dmlops.gather_elements(x, ie, 1),
 "gather_nd": lambda: dmlops.gather_nd(x, nd),
 "scatter_elements": lambda: dmlops.scatter_elements(x, ie, upd_e, 1),
 "scatter_nd": lambda: dmlops.scatter_nd(x, nd, upd),
 "one_hot": lambda: dmlops.one_hot(oh, 64, hot),
 "reverse_subsequences": lambda: dmlops.reverse_subsequences(x, lens, 0, 1),
 "cast": lambda: dmlops.cast(x, "float16"),
 "nonzero": lambda: dmlops.nonzero(x[:4]),
 "tril": lambda: dmlops.tril(x),
 "triu": lambda: dmlops.triu(x, 1),
 "resample": lambda: dmlops.resample(image[:, :16], [1, 1, 2, 2]),
 "upsample_2d": lambda: dmlops.upsample_2d(image[:, :16], [2, 2]),
 "max_unpooling": lambda: dmlops.max_unpooling(image[:, :, :128], pool, [1, 64, 256, 512]),
 "element_wise_identity": lambda: dmlops.element_wise_identity(x, scale_bias=[2.0, 1.0]),
 "diagonal_matrix1": lambda: dmlops.diagonal_matrix1(x, 0, 2, 7.0),
 "nonzero_coordinates": lambda: dmlops.nonzero_coordinates(image[:, :4]),
 "fill_value_constant": lambda: dmlops.fill_value_constant([64, 256, 256], 7.0, out=blank),
 "fill_value_sequence": lambda: dmlops.fill_value_sequence([64, 256, 256], 0, 2, out=blank),
 "diagonal_matrix": lambda: dmlops.diagonal_matrix([64, 256, 256], 1, out=blank),
}
"""
FIRST_CALL_NAMES = [
    line.split('"')[1] for line in FIRST_CALL_SETUP.splitlines() if line.startswith(' "')
]

_FIRST_CALL = (
    """
import json, time
import dmlops
T = lambda a: a
"""
    + FIRST_CALL_SETUP
    + """
t0 = time.perf_counter()
calls[NAME]()
print(json.dumps({NAME: time.perf_counter() - t0}))
"""
)


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
    for name in FIRST_CALL_NAMES:  # (each operator's first call in processes of its own)
        code = _FIRST_CALL.replace("NAME", repr(name))
        res = Result(SECTION, f"first {name}, 16 MiB", "cpu", 16 << 20, "numpy engine")
        res.times["default engine"] = _medians(code, base, runs)[name]
        res.times["numpy engine"] = _medians(code, numpy_engine, runs)[name]
        results.append(res)
        print(f"  measured startup: {name}", file=sys.stderr, flush=True)
    return results
