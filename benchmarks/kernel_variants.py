"""Time kernel tuning variants on the GPU (one call of the device machine).

For each layout case, each variant patches the CUDA strategies' tuning
constants (per-thread work, transpose tile), recompiles and times the bound
dispatch in batches against the device copy of the same bytes.
Usage: python benchmarks/kernel_variants.py
"""

from __future__ import annotations

import itertools

from dmlops.backends.cuda import kernels, strategies
from dmlops.bench.layouts import CASES, bench_case

VARIANTS = {
    "strided": [{"PER_THREAD": {"strided": n}} for n in (2, 4, 8)],
    "rows": [{"PER_THREAD": {"rows": n}} for n in (2, 4, 8)],
    "transpose": [
        {"TRANSPOSE_BLOCK": {4: v4, 2: v2, 1: v1}} for v4, v2, v1 in ((2, 2, 4), (2, 4, 4))
    ],
}
WHICH = {
    "misaligned rows": "rows",
    "transposed": "transpose",
    "inner stride": "strided",
    "high-rank box": "strided",
    "reversed inner": "strided",
}


def main(defaults_only: bool = False) -> None:
    saved = {
        k: dict(v)
        for k, v in (
            ("PER_THREAD", strategies.PER_THREAD),
            ("TRANSPOSE_BLOCK", strategies.TRANSPOSE_BLOCK),
        )
    }
    for case in CASES:
        for variant in [{}] if defaults_only else VARIANTS[WHICH[case.layout_class]]:
            for name, values in itertools.chain(saved.items()):
                getattr(strategies, name).clear()
                getattr(strategies, name).update(values)
            for name, values in variant.items():
                getattr(strategies, name).update(values)
            kernels._handles.clear()  # (compiled anew: each variant's defines)
            r = bench_case(case, reps=15, compilers=False, peers=False)
            ours = r.times["dmlops (bound)"]
            ceiling = r.times["d2d copy ceiling"]
            print(
                f"{case.name:70s} {variant!s:40s} {ours * 1e6:8.1f} us "
                f"{ceiling / ours:.3f} of ceiling",
                flush=True,
            )


if __name__ == "__main__":
    import sys

    main(defaults_only="--defaults" in sys.argv)
