"""Variants of the indexed kernels, timed on the bench's GPU indexed workloads (8 calls back
to back per sample, median of 30): each variant rewrites text in a scratch copy of the
package and runs in a process of its own, so every variant compiles its own kernels.

    python benchmarks/indexed_variants.py [variant ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_INDEXED = "dmlops/backends/cuda/kernels/indexed.cu"
_PY = "dmlops/backends/cuda/indexed.py"

# name: [(file under src/, old text, new text), ...]
VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "as is": [],
    "elements: 4 per thread": [(_PY, "_ELEMENTS_PER = 2", "_ELEMENTS_PER = 4")],
    "rows: segments of 512 chunks": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 512"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 512"),
    ],
    "rows: segments of 256 chunks": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 256"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 256"),
    ],
}

CHILD = r"""
import torch
from dmlops.bench.indexed import _gpu_cases
from dmlops.bench.common import median_gpu
for case, make, ours, theirs in _gpu_cases(torch):
    if "KV write" in case:
        continue
    inputs = make()
    t = median_gpu(lambda: ours(*inputs), 30, batch=8) * 1e6
    r = median_gpu(lambda: theirs(*inputs), 30, batch=8) * 1e6
    print(f"  {case:60s} {t:8.1f} us   torch {r:8.1f} us", flush=True)
    del inputs
    torch.cuda.empty_cache()
"""


def main() -> None:
    src = Path(__file__).resolve().parents[1] / "src"
    chosen = sys.argv[1:] or list(VARIANTS)
    for name in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(src / "dmlops", Path(tmp) / "dmlops")
            for file, old, new in VARIANTS[name]:
                path = Path(tmp) / file
                text = path.read_text()
                assert old in text, (name, file)
                path.write_text(text.replace(old, new))
            print(name, flush=True)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            subprocess.run([sys.executable, "-c", CHILD], env={"PYTHONPATH": tmp, **env})


if __name__ == "__main__":
    main()
