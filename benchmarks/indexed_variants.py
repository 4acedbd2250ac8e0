"""Kernel variants of the indexed copy, timed on the bench's GPU workloads (8 calls back to
back per sample): each variant rewrites kernels/indexed.cu's launch bounds in a scratch copy
of the package, in a process of its own.

    python benchmarks/indexed_variants.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VARIANTS = {
    "as is (80 registers)": "",
    "launch bounds 256, 4 (64 registers)": "__launch_bounds__(256, 4) ",
    "launch bounds 256, 6 (40 registers)": "__launch_bounds__(256, 6) ",
    "launch bounds 256, 8 (32 registers)": "__launch_bounds__(256, 8) ",
}
ENTRY = 'extern "C" __global__ void dmlops_indexed('

CHILD = r"""
import sys, torch
from dmlops.bench.indexed import _gpu_cases
from dmlops.bench.common import median_gpu
for case, make, ours, theirs in _gpu_cases(torch):
    if "take_along" in case:
        continue
    inputs = make()
    t = median_gpu(lambda: ours(*inputs), 30, batch=8) * 1e6
    print(f"  {case:60s} {t:8.1f} us", flush=True)
    del inputs
    torch.cuda.empty_cache()
"""


def main() -> None:
    src = Path(__file__).resolve().parents[1] / "src"
    for name, bounds in VARIANTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(src / "dmlops", Path(tmp) / "dmlops")
            cu = Path(tmp) / "dmlops/backends/cuda/kernels/indexed.cu"
            text = cu.read_text()
            assert ENTRY in text
            cu.write_text(text.replace(ENTRY, ENTRY.replace("__global__ ", "__global__ " + bounds)))
            print(name, flush=True)
            subprocess.run([sys.executable, "-c", CHILD], env={"PYTHONPATH": tmp, **_env()})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


if __name__ == "__main__":
    main()
