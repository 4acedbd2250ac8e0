import os, time, ctypes, numpy as np
from concurrent.futures import ThreadPoolExecutor

print("affinity", len(os.sched_getaffinity(0)), "numpy", np.__version__)
try:
    print("cpu.max", open("/sys/fs/cgroup/cpu.max").read().strip())
except Exception as e:
    print("cpu.max?", e)
pool = ThreadPoolExecutor(16)
for mb in (8, 64, 256):
    n = mb * 2**20 // 4
    a = np.empty(n, np.float32)
    b = np.ones(n, np.float32)
    a[:] = 0

    def t(fn, rep=20):
        fn()
        t0 = time.perf_counter()
        for _ in range(rep):
            fn()
        return (time.perf_counter() - t0) / rep * 1e6

    one = t(lambda: np.copyto(a, b))
    for k in (2, 4, 8, 16):
        bands = [(i * n // k, (i + 1) * n // k) for i in range(k)]
        cp = t(lambda: list(pool.map(lambda r: np.copyto(a[r[0] : r[1]], b[r[0] : r[1]]), bands)))
        mm = t(
            lambda: list(
                pool.map(
                    lambda r: ctypes.memmove(
                        a.ctypes.data + 4 * r[0], b.ctypes.data + 4 * r[0], 4 * (r[1] - r[0])
                    ),
                    bands,
                )
            )
        )
        print(
            f"{mb} MiB: 1 thread {one:.0f} us ({2 * mb * 1.048 / one * 1e3:.1f} GB/s); {k} threads copyto {cp:.0f} us, memmove {mm:.0f} us ({2 * mb * 1.048 / mm * 1e3:.1f} GB/s)"
        )
