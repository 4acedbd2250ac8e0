"""The WebGPU element-wise kernels at several workgroup targets: each layouts case whose
dispatches are element-wise, bound with the backend asking for at least N workgroups per
dispatch (0: eight elements a thread whatever the size), against a device copy of its
output bytes (torch where CUDA is present, else WebGPU's own buffer copy), same run.

    WORKGROUPS="0 8192" python benchmarks/webgpu_workgroups.py   (the targets to try)
"""

from __future__ import annotations

import math
import os

import numpy as np

import dmlops.webgpu as wg
from dmlops import Device
from dmlops.bench import layouts
from dmlops.bench.common import Result
from dmlops.bench.webgpu import _backend, _batched, _ceilings, _check, _warm_up

CHOICES = tuple(int(n) for n in os.environ.get("WORKGROUPS", "0 2048 8192 32768").split())


def main() -> None:
    backend = _backend()
    held = backend.workgroups_wanted
    _warm_up()
    for case in layouts.CASES:
        rng = np.random.default_rng(0)
        dtype = np.dtype(case.dtype)
        count = math.prod(case.shape)
        host = rng.integers(0, 255, count * dtype.itemsize, dtype=np.uint8).view(dtype)
        x = wg.asarray(host.reshape(case.shape))
        out = wg.empty(case.desc.output_fields()[0][1].sizes, dtype)
        ceiling = Result("workgroups", case.name, "webgpu", out.nbytes, "x")
        _ceilings(ceiling, out.nbytes, 15)
        copy = ceiling.times.get("torch d2d copy") or ceiling.times["webgpu buffer copy"]
        cells = []
        for wanted in CHOICES:
            backend.workgroups_wanted = wanted
            table = Device(backend="webgpu").create_operator(case.desc).bind([x], [out])
            table.dispatch()
            _check([out], [case.view(host.reshape(case.shape))], f"{case.name} {wanted}")
            t = _batched(table.dispatch, 15, backend.synchronize)
            cells.append(f"{wanted}: {t * 1e6:7.1f} us {copy / t:.2f}")
        print(f"{case.name[:48]:48s} | " + " | ".join(cells), flush=True)
    backend.workgroups_wanted = held


if __name__ == "__main__":
    main()
