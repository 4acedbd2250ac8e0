"""Windows of [64, 256, 256] reading every k-th element of the last axis (k = ±2, ±3, ±4;
1-, 2-, 4- and 8-byte elements): the engine's byte shuffles as chosen (`step_shuffles=1`),
every shuffle they can move (2), and none (0: the loops they replace), numpy beside; bit
for bit first, medians of 9 rounds of 7 calls, interleaved in one process, ms.

    python benchmarks/step_shuffles.py        (DMLOPS_NUM_THREADS=1 for one thread)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import dmlops
from dmlops.backends import cpu_engine
from dmlops.bench.common import median_cpu, medians_in_turn

LEVELS = {"chosen": 1, "every shuffle": 2, "loops": 0}


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"threads {dmlops.get_num_threads()}")
    print("| element | step | chosen | every shuffle | loops | numpy | chosen / numpy |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for dt in ("uint8", "float16", "float32", "float64"):
            x = rng.integers(0, 100, (64, 256, 256)).astype(dt)
            for step in (2, 3, 4, -2, -3, -4):

                def ours(x: Any = x, step: int = step) -> Any:
                    return dmlops.slice1(x, [0, 0, 0], list(x.shape), [1, 1, step])

                def theirs(x: Any = x, step: int = step) -> Any:
                    return np.ascontiguousarray(x[:, :, ::step])

                def at(level: int) -> float:
                    cpu_engine.configure(step_shuffles=level)
                    return median_cpu(ours, 7)

                for level in LEVELS.values():
                    cpu_engine.configure(step_shuffles=level)
                    assert ours().tobytes() == theirs().tobytes(), (dt, step, level)
                timers = [lambda level=level: at(level) for level in LEVELS.values()]
                found = medians_in_turn([*timers, lambda: median_cpu(theirs, 7)], 9)
                ms = " | ".join(f"{t * 1e3:.3f}" for t in found)
                print(f"| {dt} | {step} | {ms} | {found[0] / found[-1]:.2f} |", flush=True)
    finally:
        cpu_engine.configure(step_shuffles=1)


if __name__ == "__main__":
    main()
