"""Every float32 bit pattern (2^32) converted to float16 by the CPU engine's `halves`, on
its F16C path and on its integer path, against numpy's astype with CAST's NaN rule
(0x7FFF): a check too long for the test suite (minutes), run where the conversion changes.

    python benchmarks/verify_halves.py [CHUNK_BITS]
"""

import sys
import time

import numpy as np

from dmlops.backends import cpu_engine


def main() -> None:
    engine = cpu_engine.native()
    if engine is None:
        sys.exit("the CPU engine is not built")
    bits = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    chunk = 1 << bits
    start = time.perf_counter()
    wrong = 0
    made = np.empty(chunk, np.uint16)
    for first in range(0, 1 << 32, chunk):
        pattern = np.arange(first, first + chunk, dtype=np.uint64).astype(np.uint32)
        values = pattern.view(np.float32)
        with np.errstate(all="ignore"):
            want = values.astype(np.float16).view(np.uint16)
        want[np.isnan(values)] = 0x7FFF
        for hardware in (True, False):
            engine.halves(values, made, hardware)
            wrong += int(np.count_nonzero(made != want))
    seconds = time.perf_counter() - start
    print(
        f"F16C here: {engine.hardware_halves()}; 2^32 patterns, both paths: {wrong} differ "
        f"({seconds:.0f} s)"
    )
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
