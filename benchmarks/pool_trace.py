"""Where a short call's time goes in the CPU engine's pool, call by call: a copy of the
engine built with a trace of every job (the caller's wake-ups, its own share, its wait for
the last pieces, the pieces it took, the helpers it found asleep, the longest piece), then
the graphs section's chains and two operators, 400 calls each, idle and beside busy
processes. Prints each row's median and 99th percentile and, for the three slowest calls,
their jobs.

    python benchmarks/pool_trace.py [idle] ["1 busy"] ["2 busy"]   (needs a C compiler)

The trace is added to a copy of `src/dmlops/backends/cpu_engine/native/` (the package is
unchanged); `CALLS=n` sets the calls a row, `THREADS=n` the engine's thread count.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
NATIVE = ROOT / "src/dmlops/backends/cpu_engine/native"
FIELDS = 10  # int64s a job: t0, woken, own done, end, helpers, pieces, mine, slept, longest, cap

_POOL_EDITS = [
    (
        "static int64_t now_ns(void);\n\nstatic void learn",
        """static int64_t now_ns(void);

typedef struct { int64_t t0, woken, own, end, helpers, pieces, mine, slept, longest, cap; } trace_t;
static trace_t traces[65536];
static int64_t n_traces = 0;
static _Atomic int64_t longest = 0, n_slept = 0, n_mine = 0;
int64_t pool_trace(void *out, int64_t most) {
    int64_t n = n_traces < most ? n_traces : most;
    memcpy(out, traces, n * sizeof(trace_t));
    n_traces = 0;
    return n;
}

static void learn""",
    ),
    (
        "            pool.fn(pool.context, (int64_t)(own ? next : end - 1));\n",
        """            int64_t p0 = now_ns();
            pool.fn(pool.context, (int64_t)(own ? next : end - 1));
        int64_t took = now_ns() - p0;
        if (pthread_equal(pthread_self(), pool.owner)) atomic_fetch_add(&n_mine, 1);
        int64_t m = atomic_load(&longest);
        while (took > m && !atomic_compare_exchange_weak(&longest, &m, took)) {}
""",
    ),
    (
        "    _Atomic int caller_sleeping;\n",
        "    _Atomic int caller_sleeping;\n    pthread_t owner;\n",
    ),
    (
        "pthread_cond_signal(&w->wake);",
        "atomic_fetch_add(&n_slept, 1);\n        pthread_cond_signal(&w->wake);",
    ),
    (
        "    uint32_t epoch = pool.epoch;\n",
        """    uint32_t epoch = pool.epoch;
    int64_t t0 = now_ns();
    pool.owner = pthread_self();
    atomic_store(&longest, 0);
    atomic_store(&n_slept, 0);
    atomic_store(&n_mine, 0);
""",
    ),
    (
        "    atomic_store(&pool.last_joined, atomic_load(&pool.joined));\n",
        """    atomic_store(&pool.last_joined, atomic_load(&pool.joined));
    int64_t end = now_ns();
    if (n_traces < 65536) {
        trace_t t = {t0, started, own_done, end, helpers, pieces, atomic_load(&n_mine),
                     atomic_load(&n_slept), atomic_load(&longest), adapt.cap};
        traces[n_traces++] = t;
    }
""",
    ),
]

_MODULE_EDIT = (
    "static PyMethodDef methods[] = {",
    """int64_t pool_trace(void *out, int64_t most);
static PyObject *trace(PyObject *self, PyObject *args) {
    Py_buffer b;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*", &b)) return NULL;
    int64_t n = pool_trace(b.buf, b.len / 80);
    PyBuffer_Release(&b);
    return PyLong_FromLongLong(n);
}

static PyMethodDef methods[] = {
    {"trace", trace, METH_VARARGS, "The jobs traced since the last call, into a buffer."},""",
)


def _edit(text: str, old: str, new: str) -> str:
    if old not in text:
        raise SystemExit(f"the engine's source changed: {old.splitlines()[0]!r} not found")
    return text.replace(old, new)


def build(into: pathlib.Path) -> pathlib.Path:
    """A copy of the package under `into` whose engine traces its jobs; returns its src."""
    src = into / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    native = src / "dmlops/backends/cpu_engine/native"
    pool = (native / "pool.c").read_text()
    for old, new in _POOL_EDITS:
        pool = _edit(pool, old, new)
    (native / "pool.c").write_text(pool)
    module = (native / "module.c").read_text()
    (native / "module.c").write_text(_edit(module, *_MODULE_EDIT))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = native.parent / f"_native{suffix}"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    subprocess.run(
        [compiler, "-O3", "-std=c11", "-fno-strict-aliasing", "-shared", "-fPIC", "-pthread"]
        + [f"-I{sysconfig.get_paths()['include']}"]
        + [str(c) for c in sorted(native.glob("*.c"))]
        + ["-o", str(target)],
        check=True,
    )
    return src


def _cases() -> list[tuple[str, Any]]:
    import numpy as np

    import dmlops
    from dmlops.bench.graphs import PATTERNS, bound_on_cpu

    found: list[tuple[str, Any]] = []
    for p in PATTERNS:
        bound = bound_on_cpu(p, p.model(p.shapes(False)))
        found.append((p.name.split(" (")[0] + ", bound", bound.dispatch))
        if p.name.startswith("Focus"):
            found.append(("Focus stem, op by op", lambda p=p, ins=bound.ins: p.op_by_op(ins)))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 128, 128), dtype=np.float32)
    parts = [rng.standard_normal((64, 256, 64), dtype=np.float32) for _ in range(4)]
    found.append(
        ("reversed rows, 16 MiB", lambda: dmlops.slice1(x, [0, 0, 0], list(x.shape), [1, 1, -1]))
    )
    found.append(("join of 4 x 4 MiB", lambda: dmlops.join(parts, 1)))
    return found


def _measure(name: str, fn: Any, calls: int) -> None:
    import numpy as np

    from dmlops.backends import cpu_engine

    module = cpu_engine.native()
    table = np.zeros((65536, FIELDS), np.int64)
    until = time.perf_counter() + 0.1
    while time.perf_counter() < until:
        fn()
    module.trace(table)
    spans = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        spans.append((start, time.perf_counter_ns()))
    jobs = table[: module.trace(table)]
    took = np.array([b - a for a, b in spans]) / 1e3
    order = np.argsort(took)
    median, p99 = float(np.median(took)), float(took[order[int(calls * 0.99)]])
    line = f"{name:36s} median {median:7.1f} µs  p99 {p99:7.1f} ({p99 / median:4.2f}x)"
    if len(jobs):
        line += f"  helpers {np.median(jobs[:, 4]):.0f}  asleep a job {jobs[:, 7].mean():.1f}"
    print(line, flush=True)
    for k in order[-3:]:
        a, b = spans[k]
        inside = jobs[(jobs[:, 0] >= a) & (jobs[:, 3] <= b)]
        told = "; ".join(
            f"wake {(j[1] - j[0]) / 1e3:.0f} own {(j[2] - j[1]) / 1e3:.0f} "
            f"tail {(j[3] - j[2]) / 1e3:.0f} helpers {j[4]} pieces {j[5]} caller's {j[6]} "
            f"woken {j[7]} longest {j[8] / 1e3:.0f}"
            for j in inside[:3]
        )
        print(f"    slow call {took[k]:7.1f} µs: {len(inside)} jobs | {told}", flush=True)


def measure(conditions: list[str]) -> None:
    """Run inside the traced copy: every case under every condition."""
    import dmlops

    if os.environ.get("THREADS"):
        dmlops.set_num_threads(int(os.environ["THREADS"]))
    calls = int(os.environ.get("CALLS", 400))
    cases = _cases()
    for condition in conditions:
        busy = {"idle": 0, "1 busy": 1, "2 busy": 2}[condition]
        spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)
        ]
        time.sleep(0.2)
        try:
            print(f"== {condition}, {dmlops.get_num_threads()} threads", flush=True)
            for name, fn in cases:
                _measure(name, fn, calls)
        finally:
            for s in spinners:
                s.kill()
                s.wait()


def main() -> None:
    conditions = sys.argv[1:] or ["idle", "1 busy", "2 busy"]
    if os.environ.get("_DMLOPS_TRACED"):
        measure(conditions)
        return
    with tempfile.TemporaryDirectory() as folder:
        src = build(pathlib.Path(folder))
        env = {**os.environ, "_DMLOPS_TRACED": "1", "PYTHONPATH": str(src)}
        subprocess.run([sys.executable, __file__, *conditions], env=env, check=True)


if __name__ == "__main__":
    main()
