"""The WebGPU element-wise kernels at several workgroup targets: each layouts case whose
dispatches are element-wise, bound with the backend asking for at least N workgroups per
dispatch (0: eight elements a thread whatever the size), against a device copy of its
output bytes (torch where CUDA is present, else WebGPU's own buffer copy), same run.

    WORKGROUPS="0 8192" python benchmarks/webgpu_workgroups.py   (the targets to try)
"""

from __future__ import annotations

import os

from dmlops.bench import layouts
from dmlops.bench.webgpu import _backend, _warm_up, bound_seconds, copy_seconds, layout_arrays

CHOICES = tuple(int(n) for n in os.environ.get("WORKGROUPS", "0 2048 8192 32768").split())


def main() -> None:
    backend = _backend()
    held = backend.workgroups_wanted
    _warm_up()
    for case in layouts.CASES:
        host, x, out = layout_arrays(case)
        copy = copy_seconds(out.nbytes, 15)
        cells = []
        for wanted in CHOICES:
            backend.workgroups_wanted = wanted
            t = bound_seconds(case, host, x, out, 15, f"{case.name} {wanted}")
            cells.append(f"{wanted}: {t * 1e6:7.1f} us {copy / t:.2f}")
        print(f"{case.name[:48]:48s} | " + " | ".join(cells), flush=True)
    backend.workgroups_wanted = held


if __name__ == "__main__":
    main()
