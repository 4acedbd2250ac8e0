"""The CPU engine (C, on its own worker pool) moves the same bits as the numpy engine and as
element-by-element loops: every element size, strides of any sign, padded and permuted
layouts, long rows cut across the threads, constant fills, many copies in one job."""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dmlops
from dmlops import BufferTensorDesc, DataType
from dmlops.backends import cpu_engine
from dmlops.backends import numpy_backend as nb
from dmlops.backends.words import UNSIGNED
from dmlops.ops import JoinDesc, Padding1Desc, Slice1Desc
from reference import apply_to_buffers, slice1_mapping
from strategies import layouts

SIZES = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.INT64}


@pytest.fixture(autouse=True, params=["cached stores", "streaming stores"])
def every_plan_on_the_engine(  # type: ignore[no-untyped-def]
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
):
    """Every plan runs on the engine, however small, cut into pieces of a few bytes spread
    over every thread asked for (the engine's sizes and its load estimate are speed, not
    correctness); once with
    plain stores, once with every job's contiguous runs streamed past the caches."""
    if not cpu_engine.available():
        pytest.skip("the CPU engine is not built")
    monkeypatch.setattr(nb, "_ENGINE_BYTES", 0)
    streaming = 1 if request.param == "streaming stores" else 1 << 62
    cpu_engine.configure(
        least_bytes_a_thread=1,
        least_grain=8,
        most_grain=64,
        streaming_bytes=streaming,
        load_aware=0,  # (every thread asked for, however busy the machine or its quota)
        quota_millicpus=0,
    )
    yield
    cpu_engine.configure(**cpu_engine.DEFAULTS)


def _run(
    desc: Any, ins: list[np.ndarray[Any, Any]], threads: int, engine: bool = True
) -> list[np.ndarray[Any, Any]]:
    """Execute the desc's plan on byte buffers on the engine with `threads` threads, or
    (engine=False) as numpy views."""
    backend = nb.NumpyBackend(threads=threads)
    cpu_engine.set_enabled(engine)
    try:
        executor = backend.executor(desc.lower())
    finally:
        cpu_engine.set_enabled(True)
    assert (executor.engine is not None) == engine
    outs = [np.full(t.total_tensor_size_in_bytes, 0xAB, np.uint8) for _, t in desc.output_fields()]
    executor(ins, outs)
    return outs


def _inputs(desc: Any, seed: int) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [
        rng.integers(0, 256, t.total_tensor_size_in_bytes, dtype=np.uint8)
        for _, t in desc.input_fields()
    ]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_engine_slice1_matches_numpy_and_element_loops(data: st.DataObject) -> None:
    size = data.draw(st.sampled_from(sorted(SIZES)))
    dt = SIZES[size]
    rank = data.draw(st.integers(1, 4))
    sizes = [data.draw(st.integers(1, 6)) for _ in range(rank)]
    offsets = [data.draw(st.integers(0, n - 1)) for n in sizes]
    windows = [data.draw(st.integers(1, n - o)) for n, o in zip(sizes, offsets, strict=True)]
    steps = [data.draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in sizes]
    out_sizes = [-(-w // abs(s)) for w, s in zip(windows, steps, strict=True)]
    in_desc = BufferTensorDesc(dt, sizes, data.draw(layouts(sizes, False)))
    out_desc = BufferTensorDesc(dt, out_sizes, data.draw(layouts(out_sizes, True)))
    desc = Slice1Desc(in_desc, out_desc, offsets, windows, steps)
    desc.validate()
    ins = _inputs(desc, data.draw(st.integers(0, 99)))
    fast = _run(desc, ins, 4)
    slow = _run(desc, ins, 1, engine=False)
    assert fast[0].tobytes() == slow[0].tobytes()
    assert _run(desc, ins, 1)[0].tobytes() == slow[0].tobytes()
    want = [np.full_like(slow[0], 0xAB)]
    mapping = slice1_mapping(offsets, windows, steps, out_sizes)
    apply_to_buffers(
        mapping,
        size,
        [bytearray(ins[0])],
        [in_desc.effective_strides],
        want,
        [out_desc.effective_strides],
    )
    assert fast[0].tobytes() == bytes(want[0])


@pytest.mark.parametrize("size", sorted(SIZES))
def test_long_rows_cut_across_threads_and_joins(size: int) -> None:
    """A KV-cache append: few rows, each long (cut into pieces), and short rows beside."""
    dt = SIZES[size]
    past = BufferTensorDesc(dt, (1, 3, 37, 16))
    new = BufferTensorDesc(dt, (1, 3, 1, 16))
    desc = JoinDesc([past, new], BufferTensorDesc(dt, (1, 3, 38, 16)), 2)
    ins = _inputs(desc, size)
    fast, slow = _run(desc, ins, 3), _run(desc, ins, 1, engine=False)
    assert fast[0].tobytes() == slow[0].tobytes()
    p = ins[0].view(f"u{size}").reshape(1, 3, 37, 16)
    n = ins[1].view(f"u{size}").reshape(1, 3, 1, 16)
    assert fast[0].tobytes() == np.concatenate([p, n], 2).tobytes()


def test_constant_padding_fills_from_the_engine() -> None:
    x = BufferTensorDesc(DataType.FLOAT32, (5, 7))
    desc = Padding1Desc(
        x, BufferTensorDesc(DataType.FLOAT32, (8, 12)), "CONSTANT", None, -1.5, (1, 2), (2, 3)
    )
    ins = _inputs(desc, 3)
    fast, slow = _run(desc, ins, 2), _run(desc, ins, 1, engine=False)
    assert fast[0].tobytes() == slow[0].tobytes()
    got = fast[0].view(np.float32).reshape(8, 12)
    assert (got[0] == -1.5).all() and (got[:, -1] == -1.5).all()
    assert got[1:6, 2:9].tobytes() == ins[0].tobytes()


FILL_TYPES = {
    1: (DataType.INT8, [0, -1, 7]),
    2: (DataType.FLOAT16, [0.0, -0.0, 1.5, 65504.0]),
    4: (DataType.FLOAT32, [0.0, -0.0, 1.5, float("nan")]),
    8: (DataType.INT64, [0, -1, 0x0102030405060708, 2**40 + 1]),
}


@pytest.mark.parametrize("size", sorted(FILL_TYPES))
@pytest.mark.parametrize("threads", [1, 3])
def test_constant_runs_of_every_element_size_and_pattern(size: int, threads: int) -> None:
    """A constant's runs (a source stride of 0) filled from the engine: a byte pattern's by
    memset (zeros, all-ones), any other element's stored one by one; runs of 1 to 300
    elements at every start, bit for bit against the numpy engine."""
    dt, values = FILL_TYPES[size]
    for value in values:
        for width, start in [(1, 0), (3, 1), (37, 0), (300, 5)]:
            x = BufferTensorDesc(dt, (4, width))
            desc = Padding1Desc(
                x,
                BufferTensorDesc(dt, (7, width + start + 2)),
                "CONSTANT",
                None,
                value,
                (1, start),
                (2, 2),
            )
            ins = _inputs(desc, width + start)
            fast, slow = _run(desc, ins, threads), _run(desc, ins, 1, engine=False)
            assert fast[0].tobytes() == slow[0].tobytes(), (value, width, start)


def test_engine_switch_and_serial_backends() -> None:
    """DMLOPS_CPU_ENGINE=numpy (or set_enabled) turns it off; a serial backend runs it on
    the calling thread alone."""
    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT32, (4, 4))] * 2,
        BufferTensorDesc(DataType.FLOAT32, (8, 4)),
        0,
    )
    assert nb.NumpyBackend(threads=2).executor(desc.lower()).engine
    assert nb.NumpyBackend.serial().threads == 1
    cpu_engine.set_enabled(False)
    try:
        assert not cpu_engine.available()
        assert not nb.NumpyBackend(threads=2).executor(desc.lower()).engine
    finally:
        cpu_engine.set_enabled(True)


def test_small_calls_never_import_numba() -> None:
    """Importing numba costs a fraction of a second: only a plan with a large copy does, or
    one whose small indexed copies have run often enough to be compiled."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, dmlops\n"
        "dmlops.slice1(np.arange(16.).reshape(1, 1, 4, 4), [0, 0, 0, 1], [1, 1, 4, 3],"
        " [1, 1, -2, 2])\n"
        "dmlops.join([np.zeros((64, 64))] * 3, 0)\n"
        "x = np.arange(16.).reshape(4, 4)\n"
        "dmlops.gather_elements(x, np.zeros((4, 2), np.int64), 1)\n"
        "dmlops.scatter_elements(x, np.zeros((4, 1), np.int64), np.ones((4, 1)), 1, out=x)\n"
        "dmlops.one_hot(np.array([1, 2]), 3, np.array([0., 1.]))\n"
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_schedulers_tasks_keep_to_one_thread_numpys_memory_and_no_compiler() -> None:
    """Inside scheduler_task (dask's chunk tasks): repeated small indexed copies never load
    numba (~100 MiB), large outputs are numpy's own memory, and calls use one thread;
    outside it, the same calls take the engine's paths again (its C indexed kernel, or
    numba's where the engine is not built)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, dmlops\n"
        "from dmlops.backends import cpu_engine\n"
        "from dmlops.backends.numpy_backend import NumpyBackend\n"
        "ids = np.arange(256) * 7 % 4096\n"
        "with cpu_engine.scheduler_task():\n"
        "    for _ in range(6):\n"
        "        y = dmlops.one_hot(ids, 4096, np.array([0., 1.], np.float32))\n"
        "    assert y.base is None or type(y.base) is np.ndarray, type(y.base)\n"
        "    assert NumpyBackend.instance().threads == 1\n"
        "    assert (y.argmax(1) == ids).all() and y.sum() == 256\n"
        "print('numba' in sys.modules, end=' ')\n"
        "for _ in range(6):\n"
        "    y = dmlops.one_hot(ids, 4096, np.array([0., 1.], np.float32))\n"
        "print('numba' in sys.modules, type(y.base).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    from dmlops.backends import compiled_indexed

    # (outside it: the engine's own indexed kernel where it is built, numba's otherwise)
    compiled = str(compiled_indexed.available() and cpu_engine.native() is None)
    block = "Block" if cpu_engine.available() else "NoneType"
    assert out.stdout.split() == ["False", compiled, block]


@pytest.mark.parametrize("engine", [True, False])
def test_the_bench_all_cores_copy_ceiling_copies(engine: bool) -> None:
    from dmlops.bench.common import all_cores_copy

    src = np.arange(3 << 18, dtype=np.uint32)  # 3 MiB
    dst = np.zeros_like(src)
    cpu_engine.set_enabled(engine)
    try:
        all_cores_copy(dst, src)()
    finally:
        cpu_engine.set_enabled(True)
    assert np.array_equal(dst, src)


@pytest.mark.parametrize("threads", [1, 2])
def test_fortran_ordered_arrays_in_and_out_of_engine_copies(threads: int) -> None:
    """A Fortran-ordered array is one contiguous buffer in its own memory order: engine
    copies read and write it there (a row-major flattening would copy it, and writes into
    the copy would be lost)."""
    rng = np.random.default_rng(5)
    x = np.asfortranarray(rng.standard_normal((600, 500)))
    parts = [rng.standard_normal((512, 300)), rng.standard_normal((512, 300))]
    backend = nb.NumpyBackend(threads=threads)
    before = nb.NumpyBackend._instance
    nb.NumpyBackend._instance = backend
    try:
        dmlops.functional.clear_cache()
        out = np.asfortranarray(np.zeros((1024, 300)))
        dmlops.join(parts, 0, out=out)
        assert np.array_equal(out, np.concatenate(parts))
        assert np.array_equal(dmlops.slice1(x, [0, 0], [600, 500], [1, -1]), x[:, ::-1])
        into = np.asfortranarray(np.zeros((600, 500)))
        dmlops.slice1(np.ascontiguousarray(x), [0, 0], [600, 500], [1, 1], out=into)
        assert np.array_equal(into, x)
    finally:
        nb.NumpyBackend._instance = before
        dmlops.functional.clear_cache()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_element_copies_of_a_plan_in_one_job(data: st.DataObject) -> None:
    """A JOIN of inputs laid out with strides (transposed, padded): its element copies run
    in one engine job on one or more threads, and as numpy copies: the same bits."""
    size = data.draw(st.sampled_from(sorted(SIZES)))
    dt = SIZES[size]
    rank = data.draw(st.integers(1, 3))
    axis = data.draw(st.integers(0, rank - 1))
    base = [data.draw(st.integers(1, 5)) for _ in range(rank)]
    ins_desc = []
    for _ in range(data.draw(st.integers(2, 4))):
        sizes = list(base)
        sizes[axis] = data.draw(st.integers(1, 4))
        ins_desc.append(BufferTensorDesc(dt, sizes, data.draw(layouts(sizes, False))))
    out_sizes = list(base)
    out_sizes[axis] = sum(d.sizes[axis] for d in ins_desc)
    out_desc = BufferTensorDesc(dt, out_sizes, data.draw(layouts(out_sizes, True)))
    desc = JoinDesc(ins_desc, out_desc, axis)
    desc.validate()
    ins = _inputs(desc, data.draw(st.integers(0, 99)))
    slow = _run(desc, ins, 1, engine=False)
    assert _run(desc, ins, 4)[0].tobytes() == slow[0].tobytes()
    assert _run(desc, ins, 2)[0].tobytes() == slow[0].tobytes()


def test_a_focus_stem_runs_as_one_job() -> None:
    """Four stride-2 slices joined (YOLOv5's Focus): four element copies, one job."""
    x = np.arange(2 * 3 * 8 * 8, dtype=np.float32).reshape(2, 3, 8, 8)
    g = dmlops.Graph()
    t = g.input(BufferTensorDesc(DataType.FLOAT32, x.shape))
    parts = [
        g.slice(t, [0, 0, r, c], [2, 3, 4, 4], [1, 1, 2, 2])
        for r, c in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]
    y = g.join(parts, 1)
    plan = g.compile([y], dmlops.Device(backend="numpy")).plan
    executor = nb.NumpyBackend(threads=4).executor(plan)
    assert executor.engine is not None
    out = np.empty((2, 12, 4, 4), np.float32)
    executor([x.reshape(-1).view(np.uint8)], [out.reshape(-1).view(np.uint8)])
    want = np.concatenate(
        [x[..., 0::2, 0::2], x[..., 1::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 1::2]], 1
    )
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("dtype", "parts"), [(DataType.FLOAT32, [8, 8, 8]), (DataType.UINT8, [3, 4, 2])]
)
def test_splits_of_many_rows_run_as_one_job(dtype: DataType, parts: list[int]) -> None:
    """A split along the last axis of many rows: its parts go as one job."""
    from dmlops.ops import SplitDesc

    rows = 5000
    desc = SplitDesc(
        BufferTensorDesc(dtype, (rows, sum(parts))),
        [BufferTensorDesc(dtype, (rows, p)) for p in parts],
        1,
    )
    executor = nb.NumpyBackend(threads=3).executor(desc.lower())
    assert executor.engine is not None
    ins = _inputs(desc, 7)
    fast, slow = _run(desc, ins, 3), _run(desc, ins, 1, engine=False)
    assert [f.tobytes() for f in fast] == [s.tobytes() for s in slow]
    size = 4 if dtype == DataType.FLOAT32 else 1
    whole = ins[0].view(f"u{size}").reshape(rows, sum(parts))
    cuts = np.cumsum(parts)[:-1]
    for got, want in zip(fast, np.split(whole, cuts, axis=1), strict=True):
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("parts", [3, 70, 256])
def test_many_way_splits_in_one_job(parts: int) -> None:
    """More copies than the engine keeps on its stack, each cut into pieces."""
    from dmlops.ops import SplitDesc

    desc = SplitDesc(
        BufferTensorDesc(DataType.UINT8, (4, parts * 9)),
        [BufferTensorDesc(DataType.UINT8, (4, 9))] * parts,
        1,
    )
    ins = _inputs(desc, parts)
    fast = _run(desc, ins, 4)
    whole = ins[0].reshape(4, parts * 9)
    for k, got in enumerate(fast):
        assert got.tobytes() == np.ascontiguousarray(whole[:, 9 * k : 9 * k + 9]).tobytes()


def test_an_output_overlapping_an_input_is_left_to_the_ordered_path() -> None:
    """The engine declines, writing nothing, where an output's bytes overlap an input's:
    the numpy engine's path then runs, with the same result as without the engine."""
    desc = Slice1Desc(
        BufferTensorDesc(DataType.UINT8, (64,)),
        BufferTensorDesc(DataType.UINT8, (32,)),
        [0],
        [64],
        [2],
    )
    made = cpu_engine.EnginePlan.of(desc.lower())
    assert made is not None
    memory = np.arange(64, dtype=np.uint8)
    assert made.run([memory], [memory[16:48]], 2) is False
    assert np.array_equal(memory, np.arange(64, dtype=np.uint8))
    executor = nb.NumpyBackend(threads=2).executor(desc.lower())
    assert executor.engine is not None
    executor([memory], [memory[16:48]])
    want = np.arange(64, dtype=np.uint8)
    cpu_engine.set_enabled(False)
    try:
        nb.NumpyBackend(threads=2).executor(desc.lower())([want], [want[16:48]])
    finally:
        cpu_engine.set_enabled(True)
    assert np.array_equal(memory, want)


def test_buffers_shorter_than_the_plan_needs_are_refused() -> None:
    made = cpu_engine.EnginePlan.contiguous(100)
    with pytest.raises(ValueError, match="input buffer 0 holds 99 bytes"):
        made.run([np.zeros(99, np.uint8)], [np.zeros(100, np.uint8)], 2)
    with pytest.raises(ValueError, match="not contiguous"):
        made.run([np.zeros(100, np.uint8)], [np.zeros(100, np.uint8)[::-1]], 2)
    readonly = np.zeros(100, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        made.run([np.zeros(100, np.uint8)], [readonly], 2)


def test_sixteen_threads_calling_at_once() -> None:
    """One job holds the pool; the others run on their own threads: every answer right
    (strided copies and gathers)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((64, 3, 40, 41)).astype(np.float32) for _ in range(16)]

    def call(k: int) -> bool:
        x = arrays[k]
        got = dmlops.slice1(x, [0, 0, 1, 0], [64, 3, 39, 41], [1, 1, 2, -3])
        parts = dmlops.split(x, 1, [1, 1, 1])
        joined = dmlops.join(parts, 1)
        at = [40, k, 0, -1, 3, 7, 20, 33]  # (245 KB: the indexed kernel on the pool)
        picked = dmlops.gather(x, np.array(at), 3)
        return bool(
            np.array_equal(got, x[:, :, 1:40:2, ::-3])
            and np.array_equal(joined, x)
            and all(np.array_equal(p, x[:, i : i + 1]) for i, p in enumerate(parts))
            and np.array_equal(picked, x[..., at])
        )

    dmlops.functional.clear_cache()
    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(call, [k % 16 for k in range(160)]))


def test_sleeping_workers_are_all_woken() -> None:
    """Workers asleep (a pause far longer than their spin), an 8-thread job of a few
    hundred thousand pieces is taken up by all 7 of its helpers: each woken by the caller
    or by the worker above it in the wake tree (a tree that stops short leaves some asleep,
    and the others do their pieces)."""
    import time

    x = np.random.default_rng(2).standard_normal((1024, 16384), dtype=np.float32)  # 64 MiB
    out = np.empty_like(x)
    held = dmlops.get_num_threads()
    dmlops.set_num_threads(8)
    cpu_engine.configure(quota_millicpus=0)  # (a CI machine's quota set aside)
    joined = []
    try:
        for _ in range(3):
            time.sleep(0.02)
            dmlops.slice1(x, [0, 0], list(x.shape), [1, -1], out=out)
            joined.append(cpu_engine.native().joined())
    finally:
        dmlops.set_num_threads(held)
        cpu_engine.configure(**cpu_engine.DEFAULTS)
    assert np.array_equal(out, x[:, ::-1])
    assert max(joined) == 7, joined


# a child process's work: the parent used the engine on every thread first
_CHILD = """
import numpy as np, dmlops
x = np.arange(1 << 22, dtype=np.float32).reshape(256, 128, 128)  # 16 MiB
table = x.reshape(-1, 64)
columns = (np.arange(40) * 7 % 64).astype(np.int32)
spots = (np.arange(table.shape[0] * 8) % 64).reshape(-1, 8).astype(np.int64)
def call(k):
    # (a reversed window, a gather on the engine's pool and a scatter over its slices)
    got = dmlops.slice1(x, [k, 0, 0], [256 - k, 128, 128], [1, 1, -1])
    picked = dmlops.gather(table, (columns + k) % 64, 1)
    put = dmlops.scatter_elements(table, spots, -table[:, :8], 1)
    want = table.copy()
    np.put_along_axis(want, spots, -table[:, :8], 1)
    return (bool(np.array_equal(got, x[k:, :, ::-1]))
            and bool(np.array_equal(picked, np.take(table, (columns + k) % 64, 1)))
            and bool(np.array_equal(put, want)))
"""


def _script(body: str) -> str:
    return _CHILD + "assert call(0)\n" + body


def _run_script(body: str, timeout: float = 120) -> str:
    """Run the child script from a file (spawned children import its __main__ by path)."""
    import os
    import subprocess
    import sys
    import tempfile

    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "child.py")
    with open(path, "w") as file:
        file.write(_script(body))
    done = subprocess.run(
        [sys.executable, path],
        capture_output=True,
        text=True,
        timeout=timeout,
        # (four threads, every one asked for however many CPUs the machine has free)
        env={
            **__import__("os").environ,
            "DMLOPS_NUM_THREADS": "4",
            "DMLOPS_LOAD_AWARE": "0",
            "DMLOPS_QUOTA_AWARE": "0",  # (nor a CI machine's CPU quota)
        },
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_forked_child_calls_the_engine() -> None:
    out = _run_script(
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if call(3) and call(5) else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    assert out.strip() == "0"


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_process_pool_after_the_parent_used_the_engine(method: str) -> None:
    """fork, spawn and forkserver pools finish with the right answers."""
    out = _run_script(
        "import multiprocessing as mp\n"
        "if __name__ == '__main__':\n"
        f"    with mp.get_context({method!r}).Pool(2) as pool:\n"
        "        print(all(pool.map(call, range(6), chunksize=1)))\n"
    )
    assert out.strip() == "True"


def test_a_torch_dataloader_with_workers_after_the_parent_used_the_engine() -> None:
    pytest.importorskip("torch")
    out = _run_script(
        "import torch\n"
        "class Data(torch.utils.data.Dataset):\n"
        "    def __len__(self):\n"
        "        return 6\n"
        "    def __getitem__(self, k):\n"
        "        return torch.tensor(call(k))\n"
        "if __name__ == '__main__':\n"
        "    loader = torch.utils.data.DataLoader(Data(), batch_size=2, num_workers=2)\n"
        "    print(all(bool(b.all()) for b in loader))\n",
        timeout=240,
    )
    assert out.strip() == "True"


def test_the_pool_starts_anew_in_a_forked_child() -> None:
    out = _run_script(
        "import os\n"
        "from dmlops.backends import cpu_engine\n"
        "before = cpu_engine.native().workers()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    fresh = cpu_engine.native().workers()\n"
        "    ok = call(1)\n"
        "    os._exit(0 if fresh == 0 and ok and cpu_engine.native().workers() == 3 else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(before, os.waitstatus_to_exitcode(status))\n"
    )
    assert out.split() == ["3", "0"]


def test_new_outputs_reuse_the_memory_of_dropped_ones() -> None:
    """A large new output takes the memory of a dropped one of its size; a view keeps its
    block from the cache; the limit and empty_cache bound what is kept."""
    module = cpu_engine.native()
    cpu_engine.empty_cache()
    try:
        first = cpu_engine.empty((256, 1024), np.float32)
        assert type(first.base) is module.Block and nb.NumpyBackend().owner(first) is first.base
        address = first.ctypes.data
        view = first[3:]
        del first
        second = cpu_engine.empty((256, 1024), np.float32)
        assert second.ctypes.data != address  # (its block is still seen through the view)
        second[...] = 1.0
        view[...] = 2.0
        assert (second == 1.0).all() and (view == 2.0).all()
        del view
        assert module.cached() == 1 << 20
        third = cpu_engine.empty((1024, 256), np.int32)
        assert third.ctypes.data == address and module.cached() == 0
        del second, third
        cpu_engine.set_cache_limit(1 << 20)
        assert module.cached() == 1 << 20
        cpu_engine.empty_cache()
        assert module.cached() == 0
        assert type(cpu_engine.empty((4, 4), np.float32).base) is not module.Block  # small
    finally:
        cpu_engine.set_cache_limit(256 << 20)


def _vm_flags(address: int) -> list[str]:
    """The kernel's flags of the mapping that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            first = line.split()[0]
            if "-" in first and not first.endswith(":"):
                low, high = (int(v, 16) for v in first.split("-"))
                inside = low <= address < high
            elif inside and first == "VmFlags:":
                return line.split()[1:]
    return []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages asked on Linux")
def test_outputs_of_4_mib_and_more_ask_for_huge_pages() -> None:
    """A new output's block of 4 MiB or more starts at a huge page's boundary and its
    mapping asks for huge pages (as numpy's own arrays of that size do); a smaller one at a
    cache line's, not asking."""
    cpu_engine.empty_cache()
    large = cpu_engine.empty((4 << 20,), np.uint8, 991)
    small = cpu_engine.empty((1 << 20,), np.uint8, 992)
    assert large.ctypes.data % (2 << 20) == 0 and small.ctypes.data % 64 == 0
    assert "hg" in _vm_flags(large.ctypes.data)
    large[...] = 7
    assert (large == 7).all()


def test_a_tagged_output_takes_the_memory_its_tag_had() -> None:
    """Of dropped blocks of one size, a tagged output takes the newest its own tag gave
    back, else the newest; untagged ones the newest."""
    cpu_engine.empty_cache()
    shape = (256, 1024)
    a, b, c = (cpu_engine.empty(shape, np.float32, tag) for tag in (7, 8, 0))
    where = {"a": a.ctypes.data, "b": b.ctypes.data, "c": c.ctypes.data}
    del a, b, c  # (given back a, b, c: c the newest)
    assert cpu_engine.empty(shape, np.float32, 7).ctypes.data == where["a"]  # (dropped again)
    b_again = cpu_engine.empty(shape, np.float32, 8)
    newest = cpu_engine.empty(shape, np.float32, 9)  # (a tag with none: the newest)
    untagged = cpu_engine.empty(shape, np.float32)
    assert b_again.ctypes.data == where["b"]
    assert newest.ctypes.data == where["a"] and untagged.ctypes.data == where["c"]


def test_two_calls_with_outputs_of_one_size_keep_their_own_memory_round_after_round() -> None:
    """A split and the head transposes after it (QKV): every output of one size; round after
    round each of the split's parts lies where it lay the round before, and the heads (three
    calls of one signature, whose outputs the pool's threads cut alike) on the memory the
    heads had (the threads then write the parts of it they wrote before); the values are
    numpy's."""
    x = np.random.default_rng(2).standard_normal((1, 256, 3 * 1024), dtype=np.float32)

    def chain() -> tuple[list[int], list[np.ndarray]]:
        parts = dmlops.split(x, 2, [1024] * 3)
        heads = [p.reshape(1, 256, 16, 64).transpose(0, 2, 1, 3) for p in parts]
        outs = [dmlops.slice1(v, [0] * 4, list(v.shape), [1] * 4) for v in heads]
        return [p.ctypes.data for p in parts + outs], outs

    cpu_engine.empty_cache()
    chain()  # (the calls compiled, their outputs given back)
    places = chain()[0]
    for _ in range(3):
        again, outs = chain()
        assert again[:3] == places[:3] and sorted(again[3:]) == sorted(places[3:])
        for k, out in enumerate(outs):
            want = x[..., 1024 * k : 1024 * (k + 1)].reshape(1, 256, 16, 64).transpose(0, 2, 1, 3)
            assert np.array_equal(out, want)
        del outs, out  # (the round's outputs given back before the next)


def test_results_on_cached_memory_are_independent_arrays() -> None:
    """Two calls' results never share memory, and a result outlives the call's caches."""
    x = np.arange(1 << 18, dtype=np.float32).reshape(512, 512)
    a = dmlops.slice1(x, [0, 0], [512, 512], [1, -1])
    b = dmlops.slice1(x, [0, 0], [512, 512], [1, -1])
    assert not np.shares_memory(a, b)
    del b
    c = dmlops.slice1(x, [0, 0], [512, 512], [-1, 1])
    assert np.array_equal(a, x[:, ::-1]) and np.array_equal(c, x[::-1])
    parts = dmlops.split(x, 0, [256, 256])
    assert np.array_equal(np.concatenate(parts), x)
    assert not np.shares_memory(parts[0], parts[1])


def test_a_many_way_splits_parts_are_made_in_one_pass_as_independent_arrays() -> None:
    """A split's new parts (small ones numpy's own, large ones on the engine's cached
    memory; a big-endian type kept) are separate, writable arrays holding their bytes."""
    x = np.arange(3 * (1 << 17), dtype=">f4")
    sizes = [1] * 64 + [1 << 17, (1 << 17) - 64, 1 << 17]  # 4-byte parts and 512 KiB ones
    parts = dmlops.split(x, 0, sizes)
    assert [p.dtype for p in parts] == [np.dtype(">f4")] * len(sizes)
    ends = np.cumsum([0, *sizes])
    for p, a, b in zip(parts, ends[:-1], ends[1:], strict=True):
        assert p.tobytes() == x[a:b].tobytes()
    for k, p in enumerate(parts):
        assert p.flags.writeable and p.flags.c_contiguous
        p[...] = -k
    for k, p in enumerate(parts):
        assert (p == -k).all()
        for q in parts[k + 1 : k + 3]:
            assert not np.shares_memory(p, q)


def test_rows_that_interleave_in_the_source_move_in_its_memory_order() -> None:
    """A Focus stem's merged copy walks its outer dimensions in the source's memory order
    (rows sharing source lines one after another); a copy without such rows keeps the plan's
    order (by destination)."""
    order = cpu_engine._rows_sharing_lines_last
    focus = order(
        (2, 2, 2, 960, 320), (1228800, 1, 640, 1280, 2), (1228800, 614400, 307200, 320, 1)
    )
    assert focus == (
        (2, 960, 2, 2, 320),
        (1228800, 1280, 640, 1, 2),
        (1228800, 320, 307200, 614400, 1),
    )
    qkv = ((16, 1024, 64), (64, 3072, 1), (65536, 64, 1))
    assert order(*qkv) == qkv
    # heads of 64-byte rows side by side in the source: walked token by token
    short = ((16, 4096, 16), (16, 256, 1), (65536, 16, 1))
    assert order(*short, 4) == ((4096, 16, 16), (256, 16, 1), (16, 65536, 1))
    assert order(*short, 16) == short  # (256-byte rows: the plan's order)
    x = np.arange(4096 * 256, dtype=np.float32).reshape(4096, 16, 16).transpose(1, 0, 2)
    assert np.array_equal(dmlops.slice1(x, [0, 0, 0], [16, 4096, 16], [1, 1, 1]), x)


def test_rows_a_page_apart_in_the_source_are_walked_in_tiles() -> None:
    """QKV's head transpose (rows of 256 bytes 12 KiB apart in the source): the row
    dimension cut into tiles of 16 walked inside the heads; other copies keep their walk."""
    tiled = cpu_engine._tiled_across_pages
    assert tiled((16, 1024, 64), (64, 3072, 1), (65536, 64, 1), 4) == (
        (64, 16, 16, 64),
        (49152, 64, 3072, 1),
        (1024, 65536, 64, 1),
    )
    plain = ((8, 1000, 64), (64, 3072, 1), (64000, 64, 1))  # 1000 rows: no whole tiles
    assert tiled(*plain, 4) == plain
    rows = ((1024, 64), (3072, 1), (64, 1))
    assert tiled(*rows, 4) == rows
    x = np.arange(3 * 1024 * 16 * 64, dtype=np.float32).reshape(1024, 3 * 16 * 64)
    q = dmlops.split(x, 1, [1024] * 3)[0]
    heads = q.reshape(1024, 16, 64).transpose(1, 0, 2)
    assert np.array_equal(dmlops.slice1(heads, [0, 0, 0], [16, 1024, 64], [1, 1, 1]), heads)


def test_element_transposes_are_walked_in_square_tiles() -> None:
    """A copy whose destination rows are contiguous and whose elements are a line or more
    apart in the source, where an outer dimension is the source's unit axis (a slice of x.T,
    NCHW <-> NHWC), becomes its whole square tiles of a line's worth of elements a side and
    the strips left over, where the plain walk would lose its lines: a source step of whole
    pages, or over 256 KiB read between two uses of a line; others keep their walk."""
    tiled = cpu_engine._tiled_transpose
    assert tiled((2048, 2048), (1, 2048), (2048, 1), 4) == [
        ((128, 128, 16, 16), (16, 32768, 1, 2048), (32768, 16, 2048, 1), 0, 0, "tiles")
    ]
    # NCHW -> NHWC of [8, 64, 128, 128]: W the source's unit axis, tiled against C (whose
    # elements are 64 KiB apart in the source)
    nhwc = ((8, 128, 128, 64), (1048576, 128, 1, 16384), (1048576, 8192, 64, 1))
    assert [p[0] for p in tiled(*nhwc, 4)] == [(8, 128, 8, 4, 16, 16)]
    # NHWC -> NCHW of [8, 128, 128, 64]: a channel's whole image (1 MiB of lines) between
    # two uses of a source line
    nchw = ((8, 64, 128, 128), (1048576, 1, 8192, 64), (1048576, 16384, 128, 1))
    assert [p[0] for p in tiled(*nchw, 4)] == [(8, 128, 4, 8, 16, 16)]
    # page-long source rows, 1000 x 1001: 62 x 62 tiles, then the last 8 rows whole and
    # the last 9 columns of the others, each shifted to where it starts
    bulk, last_rows, last_columns = tiled((1000, 1001), (1, 1024), (1001, 1), 4)
    assert bulk[0] == (62, 62, 16, 16) and bulk[3:] == (0, 0, "tiles")
    assert last_rows == ((8, 1001), (1, 1024), (1001, 1), 992, 992 * 1001, "own")
    assert last_columns == ((992, 9), (1, 1024), (1001, 1), 992 * 1024, 992, "own")
    kept = [
        ((2000, 2000), (1, 2000), (2000, 1)),  # 125 KiB between uses, rows not whole pages
        ((1024, 1024), (1, 1026), (1024, 1)),  # the same
        ((8, 2048), (1, 1024), (2048, 1)),  # fewer rows than a tile's side
        ((64, 64), (1, 8), (64, 1)),  # elements 32 bytes apart in the source: under a line
        ((64, 64), (1, 1024), (1, 64)),  # destination rows not contiguous
        ((64, 64), (128, 1024), (64, 1)),  # no source unit axis
    ]
    for shape, src, dst in kept:
        assert tiled(shape, src, dst, 4) == [(shape, src, dst, 0, 0, "")], shape
    # tiles moved as 16-byte blocks in registers: every transpose whose sides hold a tile
    for shape, src, dst in kept[:2]:
        assert tiled(shape, src, dst, 4, True)[0][5] == "tiles", shape
    for shape, src, dst in kept[2:]:
        assert tiled(shape, src, dst, 4, True) == [(shape, src, dst, 0, 0, "")], shape


def test_block_tiles_follow_the_setting() -> None:
    """Plans made after configure(tile_blocks=0) walk transposes as before (tiles only where
    the plain walk loses its lines); with 1, where the engine has the blocks, in tiles."""
    module = cpu_engine.native()
    if module is None or not module.TILE_BLOCKS:
        pytest.skip("no 16-byte block tiles here (the engine not built, or not an SSE2 CPU)")
    square = ((2000, 2000), (1, 2000), (2000, 1), 4)
    try:
        for on in (0, 1):
            cpu_engine.configure(tile_blocks=on)
            assert cpu_engine.block_tiles() is bool(on)
            walks = cpu_engine._tiled_transpose(*square, cpu_engine.block_tiles())
            assert (walks[0][5] == "tiles") is bool(on)
    finally:
        cpu_engine.configure(tile_blocks=1)


@pytest.mark.parametrize("blocks", [1, 0])
@pytest.mark.parametrize("size", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("threads", [1, 3])
def test_each_element_size_transposes_through_its_tiles(
    size: int, threads: int, blocks: int
) -> None:
    """[131, 193] windows of the transposes of [193, n] arrays whose rows are a page long,
    each element size (sides 64, 32, 16, 8 and 4; 16-byte elements by the walk alone): the
    whole tiles, cut into pieces of whole tiles across threads, and the strips left over
    along both axes hold numpy's bytes."""
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}[size]
    n = 4096 // size
    raw = np.random.default_rng(size).integers(0, 256, 193 * n * size, dtype=np.uint8)
    view = raw.view(dtype).reshape(193, n)[:, :131].T
    parts = cpu_engine._tiled_transpose((131, 193), (1, n), (193, 1), size)
    assert [p[5] for p in parts] == ["tiles", "own", "own"]
    held = dmlops.get_num_threads()
    dmlops.set_num_threads(threads)
    cpu_engine.configure(tile_blocks=blocks)
    try:
        got = dmlops.slice1(view, [0, 0], [131, 193], [1, 1])
        # a source with rows backwards and apart, into an output of rows apart (out=)
        back = raw.view(dtype).reshape(193, n)[::-2, :131].T
        held_out = np.zeros((131, 2 * 97), dtype)
        dmlops.slice1(back, [0, 0], [131, 97], [1, 1], out=held_out[:, :97])
    finally:
        dmlops.set_num_threads(held)
        cpu_engine.configure(tile_blocks=1)
    assert got.tobytes() == np.ascontiguousarray(view).tobytes()
    assert held_out[:, :97].tobytes() == np.ascontiguousarray(back).tobytes()
    assert not held_out[:, 97:].view(np.uint8).any()


@settings(max_examples=80, deadline=None)
@given(
    size=st.sampled_from([1, 2, 4, 8, 16]),
    sides=st.lists(
        st.sampled_from([4, 8, 12, 16, 64, 66, 100, 256, 1023, 1024]), min_size=2, max_size=4
    ),
    data=st.data(),
    threads=st.sampled_from([1, 3]),
)
def test_tiled_transposes_move_numpys_bits(
    size: int, sides: list[int], data: st.DataObject, threads: int
) -> None:
    """Permuted views of every element size (16 bytes: no tile kernel, the walk alone), whole
    tiles and sides no tile divides, reversed axes, on one and several threads: the bytes of
    numpy's copy of the same view."""
    assume(int(np.prod(sides)) * size <= 4 << 20)
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}[size]
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.integers(0, 256, int(np.prod(sides)) * size, dtype=np.uint8).view(dtype)
    x = x.reshape(sides)
    perm = data.draw(st.permutations(range(len(sides))))
    view = x.transpose(perm)
    if data.draw(st.booleans()):
        view = view[..., ::-1, :]
    held = dmlops.get_num_threads()
    dmlops.set_num_threads(threads)
    try:
        got = dmlops.slice1(view, [0] * view.ndim, list(view.shape), [1] * view.ndim)
    finally:
        dmlops.set_num_threads(held)
    assert got.tobytes() == np.ascontiguousarray(view).tobytes()


def test_the_parts_of_a_join_walk_their_rows_together() -> None:
    """A join's (or a split's) parts of short contiguous rows are one group: a row of each
    in turn, the output swept once in memory order; right on any thread count."""
    from dmlops.ops import SplitDesc

    f32 = DataType.FLOAT32
    parts = [BufferTensorDesc(f32, (300, n)) for n in (5, 64, 7)]
    join = JoinDesc(parts, BufferTensorDesc(f32, (300, 76)), 1)
    made = cpu_engine.EnginePlan.of(join.lower())
    assert made is not None
    record = int(cpu_engine.native().RECORD)
    members = made.table[4 + 3 + 1 :].reshape(-1, record)[:, 9]
    assert members.tolist() == [3, 0, 0]
    ins = _inputs(join, 4)
    for threads in (1, 2, 5):
        got = _run(join, ins, threads)[0].view(np.float32).reshape(300, 76)
        whole = np.concatenate([i.view(np.float32).reshape(300, -1) for i in ins], axis=1)
        assert got.tobytes() == whole.tobytes()
    split = SplitDesc(BufferTensorDesc(f32, (300, 76)), parts, 1)
    ins = _inputs(split, 5)
    whole = ins[0].view(np.float32).reshape(300, 76)
    for got, (a, b) in zip(_run(split, ins, 3), ((0, 5), (5, 69), (69, 76)), strict=True):
        assert got.tobytes() == np.ascontiguousarray(whole[:, a:b]).tobytes()


@pytest.mark.parametrize(
    "dtype", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64]
)
@pytest.mark.parametrize("block", [2, 3, 4])
def test_phases_side_by_side_are_woven_into_each_destination_row(
    dtype: DataType, block: int
) -> None:
    """A copy whose innermost dimension is a few phases side by side in the destination (an
    upsampling's repeats, a depth-to-space's columns) runs as one record a phase, grouped
    and woven: each destination row written once, in order; right on any thread count, and
    a table whose woven group would write elsewhere is refused."""
    from dmlops.ops import DepthToSpace1Desc, Upsample2dDesc

    d2s = DepthToSpace1Desc(
        BufferTensorDesc(dtype, (2, 4 * block * block, 9, 33)),
        BufferTensorDesc(dtype, (2, 4, 9 * block, 33 * block)),
        block,
        "DCR",
    )
    descs = [d2s]
    if dtype in (DataType.FLOAT16, DataType.FLOAT32):
        descs.append(
            Upsample2dDesc(
                BufferTensorDesc(dtype, (2, 3, 9, 33)),
                BufferTensorDesc(dtype, (2, 3, 9 * block, 33 * 2)),
                [block, 2],
            )
        )
    record = int(cpu_engine.native().RECORD)
    for desc in descs:
        plan = desc.lower()
        made = cpu_engine.EnginePlan.of(plan)
        assert made is not None
        header = 4 + len(plan.input_spans) + len(plan.fills) + len(plan.output_spans)
        rows = made.table[header:].reshape(-1, record)
        assert rows[0, 9] >= 2 and rows[0, -1] == 1  # a woven group leads the table
        ins = _inputs(desc, block)
        x = ins[0].view(UNSIGNED[dtype.element_size]).reshape(desc.input_tensor.sizes)
        n, c, h, w = np.indices(desc.output_tensor.sizes)  # each output element's source:
        if isinstance(desc, DepthToSpace1Desc):  # out[n, c, h b + i, w b + j] =
            channels = desc.output_tensor.sizes[1]  # in[n, (i b + j) C + c, h, w]
            phase = (h % block) * block + w % block
            want = x[n, phase * channels + c, h // block, w // block]
        else:  # out[n, c, h s + i, w 2 + j] = in[n, c, h, w]
            want = x[n, c, h // block, w // 2]
        for threads in (1, 3):
            (got,) = _run(desc, ins, threads)
            assert got.tobytes() == want.tobytes()
        bad = made.table.copy()
        bad[header + record + 3] += dtype.element_size  # a member off its place in the row
        outs = [np.zeros(hi, np.uint8) for _, hi in plan.output_spans]
        with pytest.raises(ValueError, match="out of range"):
            cpu_engine.EnginePlan(bad).run(ins, outs, 2)


def test_a_torch_dataloader_worker_runs_the_engine_on_one_thread() -> None:
    """As torch runs its own ops on one thread in its workers (they share the cores among
    themselves); the parent keeps its count, and DMLOPS_NUM_THREADS still decides."""
    pytest.importorskip("torch")
    out = _run_script(
        "import torch\n"
        "class Counts(torch.utils.data.Dataset):\n"
        "    def __len__(self):\n"
        "        return 4\n"
        "    def __getitem__(self, k):\n"
        "        assert call(k)\n"
        "        return torch.tensor([dmlops.get_num_threads(), torch.get_num_threads()])\n"
        "if __name__ == '__main__':\n"
        "    loader = torch.utils.data.DataLoader(Counts(), batch_size=4, num_workers=2)\n"
        "    import os\n"
        "    os.environ.pop('DMLOPS_NUM_THREADS')\n"
        "    print(sorted({tuple(r) for b in loader for r in b.tolist()}), dmlops.get_num_threads())\n",
        timeout=240,
    )
    assert out.split("]")[0] + "]" == "[(1, 1)]"
    assert out.split()[-1] == "4"  # (the parent's count, chosen before the workers)


_NATIVE = pytest.mark.skipif(cpu_engine.native() is None, reason="the C engine is not built")


@_NATIVE
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64, np.complex128])
def test_scatters_write_in_index_order_through_the_engine(
    monkeypatch: pytest.MonkeyPatch, dtype: Any
) -> None:
    """A scatter is written by the engine in index order (no search for repeated
    destinations; native/indexed.c, or for 16-byte elements the rows' scatter after numpy
    found their places): of updates to one place the later stays, as DirectML's rule says, against
    a naive loop; updates of any strides (a column slice, reversed, Fortran-ordered: read in
    the index order, not their memory's); rows of several elements too."""
    module = cpu_engine.native()
    used: list[int] = []

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(module, name)

        def scatter(self, *args: Any) -> None:
            used.append(len(args[1]))
            module.scatter(*args)

        def indexed(self, *args: Any) -> Any:  # (the kernel of elements of 1 to 8 bytes)
            used.append(len(args[0]))
            return module.indexed(*args)

    monkeypatch.setitem(cpu_engine._STATE, "native", Spy())
    dmlops.functional.clear_cache()  # (calls compiled before hold the module itself)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 40)).astype(dtype)
    index = rng.integers(-40, 40, (16, 90))  # (repeats in every row; negative indices)
    updates = rng.standard_normal((16, 90)).astype(dtype)
    want = x.copy()
    for r in range(16):
        for k in range(90):
            want[r, index[r, k]] = updates[r, k]
    got = dmlops.scatter_elements(x, index, updates, 1)
    assert got.tobytes() == want.tobytes() and used
    wide = rng.standard_normal((16, 400)).astype(dtype)
    for strided in (wide[:, 7:97], wide[::-1, ::-3][:, :90], np.asfortranarray(updates)):
        want = x.copy()
        for r in range(16):
            for k in range(90):
                want[r, index[r, k]] = strided[r, k]
        used.clear()
        got = dmlops.scatter_elements(x, index, strided, 1)
        assert got.tobytes() == want.tobytes() and used
    rows = rng.integers(0, 16, (30, 1))  # scatter_nd of whole rows, repeated
    fresh = rng.standard_normal((30, 40)).astype(dtype)
    want = x.copy()
    for k in range(30):
        want[rows[k, 0]] = fresh[k]
    assert dmlops.scatter_nd(x, rows, fresh).tobytes() == want.tobytes()
    assert dmlops.scatter_nd(x, rows, np.asfortranarray(fresh)).tobytes() == want.tobytes()


@_NATIVE
def test_the_engines_scatter_checks_every_target_before_writing() -> None:
    module = cpu_engine.native()
    dst = np.zeros(8, np.uint32)
    rows = np.arange(1, 4, dtype=np.uint32)
    with pytest.raises(ValueError, match="outside"):
        module.scatter(dst, np.array([0, 3, 8], np.intp), rows, 4, 1, 1)
    with pytest.raises(ValueError, match="outside"):
        module.scatter(dst, np.array([0, 3, 6], np.intp), np.arange(6, dtype=np.uint32), 4, 2, 2)
    assert not dst.any()  # nothing written
    module.scatter(dst, np.array([5, 5, 2], np.intp), rows, 4, 1, 1)
    assert dst.tolist() == [0, 0, 3, 0, 0, 2, 0, 0]


@pytest.mark.parametrize("threads", [1, 3])
def test_streamed_runs_at_every_alignment_and_length(threads: int) -> None:
    """Runs written with streaming stores (every job here streams): whole lines past the
    caches, partial lines at either end plainly, at every destination alignment; rows of
    64-512 bytes (whole lines a row) and longer runs, against the numpy engine's bytes."""
    cpu_engine.configure(streaming_bytes=1)
    rng = np.random.default_rng(11)
    for row in (64, 100, 128, 256, 512, 4096 + 24):
        for shift in (0, 1, 16, 63):
            rows = 9
            desc = Slice1Desc(
                BufferTensorDesc(DataType.UINT8, (rows, row + 40), None),
                BufferTensorDesc(DataType.UINT8, (rows, row), (row + shift, 1)),
                [0, 5],
                [rows, row],
                [1, 1],
            )
            desc.validate()
            ins = [rng.integers(0, 256, rows * (row + 40), dtype=np.uint8)]
            size = desc.output_fields()[0][1].total_tensor_size_in_bytes
            for pad in (0, 8, 33):  # the output's own address moved too
                backend = nb.NumpyBackend(threads=threads)
                executor = backend.executor(desc.lower())
                assert executor.engine is not None
                held = np.full(size + 128, 0xAB, np.uint8)
                start = (-held.ctypes.data) % 64 + pad
                out = held[start : start + size]
                executor(ins, [out])
                want = np.full(size, 0xAB, np.uint8)
                view = np.lib.stride_tricks.as_strided(want, (rows, row), (row + shift, 1))
                view[...] = ins[0].reshape(rows, row + 40)[:, 5 : 5 + row]
                assert out.tobytes() == want.tobytes(), (row, shift, pad)
                assert (held[:start] == 0xAB).all() and (held[start + size :] == 0xAB).all()


def _at_a_page_end(nbytes: int) -> np.ndarray[Any, Any]:
    """`nbytes` of memory ending where an unreadable page begins (a read past the end of an
    array there kills the process; the mapping goes when its last array does)."""
    page = mmap.PAGESIZE
    pages = -(-nbytes // page)
    held = np.frombuffer(mmap.mmap(-1, (pages + 1) * page), np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(held.ctypes.data + pages * page, page, 0) == 0  # PROT_NONE
    return held[pages * page - nbytes : pages * page]


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes: Linux here")
@pytest.mark.parametrize("wide", [1, 0])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_every_second_element_at_every_length(wide: int, dtype: Any) -> None:
    """A stride-2 window of every element size, in 32-byte vectors (where the CPU has AVX2)
    or the portable loop: every row length about a vector's, at odd offsets, its last
    element the last readable byte of memory; numpy's bytes."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(13)
    try:
        cpu_engine.configure(wide_vectors=wide, least_grain=1 << 14, most_grain=1 << 16)
        for n in (*range(1, 24), 31, 32, 33, 63, 64, 65):
            for skip in (0, 1, 3):
                width = skip + 2 * n - 1  # (no element after the row's last one read)
                memory = _at_a_page_end(3 * width * size)
                memory[...] = rng.integers(0, 256, memory.size, dtype=np.uint8)
                x = memory.view(dtype).reshape(3, width)
                out = np.empty((3, n), dtype)
                dmlops.slice1(x, [0, skip], [3, 2 * n - 1], [1, 2], out=out)
                assert out.tobytes() == np.ascontiguousarray(x[:, skip::2]).tobytes(), n
    finally:
        cpu_engine.configure(wide_vectors=1)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_slice_grad_writes_its_zeros_between_the_rows_elements(dtype: Any) -> None:
    """SLICE_GRAD of strides 2 and 3: each written row's zeros woven between its elements in
    one sweep (a row and a constant interleaved), the rows between them filled; the
    element-by-element loop's bytes (every other element zero)."""
    rng = np.random.default_rng(16)
    g = rng.integers(0, 256, 9 * 20 * 33 * np.dtype(dtype).itemsize, dtype=np.uint8)
    g = g.view(dtype).reshape(9, 20, 33)
    for step, extra in ((2, 0), (2, 1), (3, 2)):
        sizes = [9, step * 19 + 1 + extra, step * 32 + 1 + extra]
        got = dmlops.slice_grad(g, sizes, [0, 0, 0], [9, sizes[1] - extra, sizes[2] - extra],
                                [1, step, step])  # fmt: skip
        want = np.zeros(sizes, dtype)
        for a in range(9):
            for b in range(20):
                for c in range(33):
                    want[a, step * b, step * c] = g[a, b, c]
        assert got.tobytes() == want.tobytes(), (step, extra)


def test_a_plan_that_scatters_into_its_copies_keeps_them_cached() -> None:
    """A plan whose scatter writes its output again right after the copies of its data asks
    for stores through the cache (KEEP_CACHED), where the cache holds the output; a gather's
    plan does not; and the scatter's answer is the naive loop's either way."""
    module = cpu_engine.native()
    dmlops.functional.clear_cache()  # (each call's own plan last in the cache)
    data = np.arange(4000 * 16, dtype=np.int64).reshape(4000, 16)
    rows = np.array([[3], [0], [3], [3999]])
    updates = -np.arange(4 * 16, dtype=np.int64).reshape(4, 16)
    got = dmlops.scatter_nd(data, rows, updates)
    (entry,) = list(dmlops.calls._CACHE.items.values())[-1:]
    assert entry[0].run.engine.table[3] == module.KEEP_CACHED
    want = data.copy()
    for k in range(4):
        want[rows[k, 0]] = updates[k]
    assert got.tobytes() == want.tobytes()
    dmlops.functional.clear_cache()
    dmlops.slice1(data, [0, 0], [4000, 16], [1, -1])
    (entry,) = list(dmlops.calls._CACHE.items.values())[-1:]
    assert entry[0].run.engine.table[3] == 0


@pytest.mark.parametrize("mode", ["EDGE", "REFLECTION", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_edge_and_mirror_pads_of_short_and_long_edges(dtype: Any, mode: str) -> None:
    """Pads whose edges are rows of one repeated element (EDGE) or rows read backwards
    (REFLECTION, SYMMETRIC): short edges (a loop for all a piece's rows) and long ones (the
    vector loops); numpy.pad's bytes."""
    rng = np.random.default_rng(15)
    x = rng.integers(0, 256, 30 * 41 * 4 * np.dtype(dtype).itemsize, dtype=np.uint8)
    x = x.view(dtype).reshape(30, 41, 4)
    numpy_mode = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric"}[mode]
    for before, after in ((1, 3), (16, 2), (17, 29)):
        got = dmlops.padding(x, [0, 0, before], [0, 0, after], mode)
        want = np.pad(x, ((0, 0), (0, 0), (before, after)), numpy_mode)
        got_t = dmlops.padding(x.transpose(0, 2, 1), [0, 0, before], [0, 0, after], mode)
        want_t = np.pad(x.transpose(0, 2, 1), ((0, 0), (0, 0), (before, after)), numpy_mode)
        assert got.tobytes() == want.tobytes() and got_t.tobytes() == want_t.tobytes()


@pytest.mark.parametrize("step", [2, 3, 4, -2, -3, -4, 5])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_rows_of_stepped_elements_in_one_loop_a_step(dtype: Any, step: int) -> None:
    """Rows that read every k-th source element into contiguous outputs (strides 2, 3 and 4,
    backwards 2, 3 and 4: a loop per step for all a piece's rows; 5, the general one), many
    rows a piece and rows cut in parts; the element-by-element loop's bytes."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(14)
    x = rng.integers(0, 256, 40 * 97 * size, dtype=np.uint8).view(dtype).reshape(40, 97)
    start = 0 if step > 0 else 96
    n = len(range(start, -1 if step < 0 else 97, step))
    for grain in (1 << 14, 16):
        cpu_engine.configure(least_grain=grain, most_grain=max(grain, 64))
        width = abs(step) * (n - 1) + 1  # (a backward window's offset is its low end)
        low = start if step > 0 else start - width + 1
        got = dmlops.slice1(x, [0, low], [40, width], [1, step])
        want = np.empty((40, n), dtype)
        for r in range(40):
            for j in range(n):
                want[r, j] = x[r, start + step * j]
        assert got.tobytes() == want.tobytes(), grain


def _between_unreadable_pages(nbytes: int) -> np.ndarray[Any, Any]:
    """Memory with an unreadable page just before it and `nbytes` later (a read outside it
    kills the process)."""
    page = mmap.PAGESIZE
    pages = -(-nbytes // page)
    held = np.frombuffer(mmap.mmap(-1, (pages + 2) * page), np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(held.ctypes.data, page, 0) == 0  # PROT_NONE
    assert libc.mprotect(held.ctypes.data + (pages + 1) * page, page, 0) == 0
    return held[page : page + pages * page]


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes: Linux here")
@pytest.mark.parametrize("setting", ["shuffles", "every shuffle", "loops", "portable"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_stepped_rows_by_byte_shuffles_at_every_length(dtype: Any, setting: str) -> None:
    """Rows reading every second to fourth element forwards and backwards, by byte shuffles
    of 16-byte vectors (where the CPU has AVX2: where chosen, and every size and step they
    can move), the loops they replace (backwards from the row's lowest address up), and the
    portable ones: every row length about a block's, one row and many (a piece's rows in one loop),
    the row's first and last elements each the last readable byte before or after memory
    that cannot be read; the element-by-element bytes."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(22)
    wide, shuffles = {"shuffles": (1, 1), "every shuffle": (1, 2), "loops": (1, 0),
                      "portable": (0, 0)}[setting]  # fmt: skip
    try:
        cpu_engine.configure(wide_vectors=wide, step_shuffles=shuffles, least_grain=1 << 14,
                             most_grain=1 << 16)  # fmt: skip
        for step in (2, 3, 4, -2, -3, -4):
            for n in (*range(1, 36), 47, 48, 49, 64, 65, 100):
                width = abs(step) * (n - 1) + 1
                for rows in (1, 4):
                    memory = _between_unreadable_pages(rows * width * size)
                    memory[...] = rng.integers(0, 256, memory.size, dtype=np.uint8)
                    for x in (  # (the first row at memory's start, the last at its end)
                        memory[: rows * width * size].view(dtype).reshape(rows, width),
                        memory[memory.size - rows * width * size :].view(dtype).reshape(rows, width),
                    ):  # fmt: skip
                        got = dmlops.slice1(x, [0, 0], [rows, width], [1, step])
                        first = 0 if step > 0 else width - 1
                        want = np.empty((rows, n), dtype)
                        for r in range(rows):
                            for j in range(n):
                                want[r, j] = x[r, first + step * j]
                        assert got.tobytes() == want.tobytes(), (step, n, rows)
    finally:
        cpu_engine.configure(wide_vectors=1, step_shuffles=1,
                             least_grain=cpu_engine.DEFAULTS["least_grain"],
                             most_grain=cpu_engine.DEFAULTS["most_grain"])  # fmt: skip


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes: Linux here")
@pytest.mark.parametrize("wide", [1, 0])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_whole_rows_in_vector_moves_at_every_length(dtype: Any, wide: int) -> None:
    """Windows of whole contiguous rows, in 32-byte moves (where the CPU has AVX2: rows of
    32 bytes up to the longest moved so; under the fixture's streaming stores every job
    streams its rows instead) or memcpy a row: every length about a vector's and
    about the longest, the first row's first byte and the last row's last byte each beside
    memory that cannot be read, the output at odd offsets with nothing written around it;
    the element-by-element bytes."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(23)
    lengths = sorted({b // size for b in (*range(24, 70), 95, 96, 97, 127, 128, 129, 160, 200,
                                          300, 511, 513, 760, 767, 768, 769, 800, 1000)})  # fmt: skip
    try:
        cpu_engine.configure(wide_vectors=wide, least_grain=1 << 14, most_grain=1 << 16)
        for n in lengths:
            for skip in (0, 1):
                width, rows = n + skip + 1, 5
                memory = _between_unreadable_pages(rows * width * size)
                memory[...] = rng.integers(0, 256, memory.size, dtype=np.uint8)
                for x, low in (  # (the first row's first element at memory's start; the last
                    # row's last element at its end)
                    (memory[: rows * width * size].view(dtype).reshape(rows, width), 0),
                    (memory[memory.size - rows * width * size :].view(dtype).reshape(rows, width),
                     width - n),
                ):  # fmt: skip
                    held = np.full((rows * n + 3) * size, 0xAB, np.uint8)
                    out = held[size : size + rows * n * size].view(dtype).reshape(rows, n)
                    dmlops.slice1(x, [0, low], [rows, n], [1, 1], out=out)
                    want = np.empty((rows, n), dtype)
                    for r in range(rows):
                        for j in range(n):
                            want[r, j] = x[r, low + j]
                    assert out.tobytes() == want.tobytes(), (n, skip, low)
                    assert (held[:size] == 0xAB).all() and (held[size + out.nbytes :] == 0xAB).all()
    finally:
        cpu_engine.configure(wide_vectors=1, least_grain=cpu_engine.DEFAULTS["least_grain"],
                             most_grain=cpu_engine.DEFAULTS["most_grain"])  # fmt: skip


@pytest.mark.parametrize("grain", ["rows cut in parts", "whole rows"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_rows_read_backwards_streamed_into_one_run(dtype: Any, grain: str) -> None:
    """Reversed rows into one contiguous output, streamed past the caches (every job streams
    here) from a buffer a few KiB at a time: rows shorter and longer than the buffer, rows
    split at its edges, pieces of parts of rows or of whole rows, the output at odd offsets;
    numpy's bytes, and nothing written around the output."""
    size = np.dtype(dtype).itemsize
    rng = np.random.default_rng(12)
    cpu_engine.configure(streaming_bytes=1)
    if grain == "whole rows":
        cpu_engine.configure(least_grain=1 << 14, most_grain=1 << 16)
    for length in (3, 40, 100, 1000, 2500):
        rows = 7
        raw = rng.integers(0, 256, rows * (length + 5) * size).astype(np.uint8)
        x = raw.view(dtype).reshape(rows, length + 5)[:, 2 : 2 + length]
        for offset in (0, size, 24 + 3 * size):
            nbytes = rows * length * size
            held = np.full(nbytes + 128, 0xAB, np.uint8)
            start = (-held.ctypes.data) % 64 + offset
            out = held[start : start + nbytes].view(dtype).reshape(rows, length)
            dmlops.slice1(x, [0, 0], [rows, length], [1, -1], out=out)
            assert out.tobytes() == x[:, ::-1].tobytes(), (length, offset)
            assert (held[:start] == 0xAB).all() and (held[start + nbytes :] == 0xAB).all()


@pytest.mark.parametrize("wide", [1, 0])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_rows_read_backwards_at_every_length_and_alignment(wide: int, dtype: Any) -> None:
    """Reversed rows (a source step of -1 element) of every element size, in 32-byte vectors
    (where the CPU has AVX2) or the portable loop: rows shorter than a vector, a vector and
    a tail, many vectors, at odd source and destination offsets; numpy's bytes."""
    rng = np.random.default_rng(11)
    try:
        cpu_engine.configure(wide_vectors=wide, least_grain=1 << 14, most_grain=1 << 16)
        for length in (1, 7, 31, 32, 33, 64, 100, 257):
            for skip in (0, 1, 3):
                raw = rng.integers(0, 256, 5 * (length + 8) * np.dtype(dtype).itemsize)
                x = raw.astype(np.uint8).view(dtype).reshape(5, length + 8)[:, skip : skip + length]
                out = np.empty((5, length + 1), dtype)[:, 1:]  # (an odd destination too)
                dmlops.slice1(x, [0, 0], [5, length], [1, -1], out=out)
                assert out.tobytes() == x[:, ::-1].tobytes(), (length, skip)
    finally:
        cpu_engine.configure(wide_vectors=1)


@pytest.mark.parametrize("dtype", [DataType.FLOAT32, DataType.INT64, DataType.FLOAT16])
@pytest.mark.parametrize("width", [8, 16, 18, 20, 34, 66, 260])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("deal_most", [cpu_engine.DEFAULTS["deal_most_bytes"], 0])
def test_column_phases_read_from_one_run_are_dealt_to_their_rows(
    dtype: DataType, width: int, threads: int, deal_most: int
) -> None:
    """SPACE_TO_DEPTH1 of block 2 (a pixel unshuffle): each source row's even and odd
    elements go to two destination rows, read once and dealt in vectors (4- and 8-byte
    elements, rows of one vector (32 bytes) up to `deal_most_bytes`, the rows' tails element
    by element; 2-byte ones, shorter or longer rows and `deal_most_bytes=0` by the step
    loop, a pass a row): every bit where numpy's reshape and transpose put it."""
    cpu_engine.configure(deal_most_bytes=deal_most)
    try:
        _check_column_phases(dtype, width, threads)
    finally:
        cpu_engine.configure(deal_most_bytes=cpu_engine.DEFAULTS["deal_most_bytes"])


def _check_column_phases(dtype: DataType, width: int, threads: int) -> None:
    from dmlops.ops import SpaceToDepth1Desc

    n, c, h = 2, 3, 6
    desc = SpaceToDepth1Desc(
        BufferTensorDesc(dtype, (n, c, h, width)),
        BufferTensorDesc(dtype, (n, 4 * c, h // 2, width // 2)),
        2,
        "DCR",
    )
    ins = _inputs(desc, width)
    x = ins[0].view(UNSIGNED[dtype.element_size]).reshape(n, c, h, width)
    want = (
        x.reshape(n, c, h // 2, 2, width // 2, 2)
        .transpose(0, 3, 5, 1, 2, 4)
        .reshape(n, 4 * c, h // 2, width // 2)
    )
    (got,) = _run(desc, ins, threads)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()
