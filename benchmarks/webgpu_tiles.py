"""The WebGPU tiled transposes at several tile sizes: the layouts section's transposed cases
(and the 2x2-strided float16 slice) per tile choice, each against a device copy of its
output bytes (torch where CUDA is present, else WebGPU's own buffer copy), same run.

    python benchmarks/webgpu_tiles.py
"""

from __future__ import annotations

from dmlops.backends.webgpu import strategies
from dmlops.bench import layouts
from dmlops.bench.webgpu import _backend, bound_seconds, copy_seconds, layout_arrays

CHOICES = [(32, 32), (64, 32), (32, 64), (64, 64)]


def main() -> None:
    backend = _backend()
    saved = dict(strategies.TRANSPOSE_TILES)
    cases = [c for c in layouts.CASES if c.layout_class == "transposed"]
    for case in cases:
        host, x, out = layout_arrays(case)
        copy = copy_seconds(out.nbytes, 15)
        for tile in CHOICES:
            strategies.TRANSPOSE_TILES.update({k: tile for k in saved})
            backend._pipelines.clear()
            t = bound_seconds(case, host, x, out, 15, f"{case.name} {tile}")
            print(f"{case.name:58s} tile {tile!s:9s} {t * 1e6:8.1f} us  {copy / t:.2f} of copy",
                  flush=True)  # fmt: skip
    strategies.TRANSPOSE_TILES.update(saved)


if __name__ == "__main__":
    main()
