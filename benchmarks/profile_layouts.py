"""Run each layout case's dmlops kernel a few times, for `ncu` to read its counters.

Usage: ncu --clock-control none --kernel-name regex:dmlops_ --metrics ... \
    python benchmarks/profile_layouts.py [SUBSTRING ...]
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from dmlops import Device
from dmlops.bench.layouts import CASES


def main(selected: list[str]) -> None:
    for case in CASES:
        if selected and not any(s in case.name for s in selected):
            continue
        dtype = np.dtype(case.dtype)
        x = cupy.zeros(case.shape, dtype)
        out = cupy.empty(case.desc.output_fields()[0][1].sizes, dtype)
        table = Device(backend="cuda").create_operator(case.desc).bind([x], [out])
        for _ in range(3):
            table.dispatch()
        cupy.cuda.Device().synchronize()
        print(f"ran {case.name}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
