"""The WebGPU tiled transposes at several tile sizes: the layouts section's transposed cases
(and the 2x2-strided float16 slice) per tile choice, each against a device copy of its
output bytes (torch where CUDA is present, else WebGPU's own buffer copy), same run.

    python benchmarks/webgpu_tiles.py
"""

from __future__ import annotations

import math

import numpy as np

import dmlops.webgpu as wg
from dmlops import Device
from dmlops.backends.webgpu import strategies
from dmlops.bench import layouts
from dmlops.bench.common import Result
from dmlops.bench.webgpu import _backend, _batched, _ceilings, _check

CHOICES = [(32, 32), (64, 32), (32, 64), (64, 64)]


def main() -> None:
    backend = _backend()
    saved = dict(strategies.TRANSPOSE_TILES)
    cases = [c for c in layouts.CASES if c.layout_class == "transposed"]
    for case in cases:
        rng = np.random.default_rng(0)
        dtype = np.dtype(case.dtype)
        count = math.prod(case.shape)
        host = rng.integers(0, 255, count * dtype.itemsize, dtype=np.uint8).view(dtype)
        x = wg.asarray(host.reshape(case.shape))
        out = wg.empty(case.desc.output_fields()[0][1].sizes, dtype)
        ceiling = Result("tiles", case.name, "webgpu", out.nbytes, "x")
        _ceilings(ceiling, out.nbytes, 15)
        copy = ceiling.times.get("torch d2d copy") or ceiling.times["webgpu buffer copy"]
        for tile in CHOICES:
            strategies.TRANSPOSE_TILES.update({k: tile for k in saved})
            backend._pipelines.clear()
            table = Device(backend="webgpu").create_operator(case.desc).bind([x], [out])
            table.dispatch()
            _check([out], [case.view(host.reshape(case.shape))], f"{case.name} {tile}")
            t = _batched(table.dispatch, 15, backend.synchronize)
            print(f"{case.name:58s} tile {tile!s:9s} {t * 1e6:8.1f} us  {copy / t:.2f} of copy",
                  flush=True)  # fmt: skip
    strategies.TRANSPOSE_TILES.update(saved)


if __name__ == "__main__":
    main()
