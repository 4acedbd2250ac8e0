"""The CPU engine's compiled copies (numba, where installed) move the same bits as the numpy
engine and as element-by-element loops: every element size, strides of any sign, padded
and permuted layouts, long rows cut across the threads, constant fills."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from dmlops import BufferTensorDesc, DataType
from dmlops.backends import compiled
from dmlops.backends import numpy_backend as nb
from dmlops.ops import JoinDesc, Padding1Desc, Slice1Desc
from reference import apply_to_buffers, slice1_mapping
from strategies import layouts

SIZES = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.INT64}


@pytest.fixture(autouse=True)
def every_copy_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every copy runs compiled, however small (the engine's size threshold is speed, not
    correctness)."""
    if not compiled.available():
        pytest.skip("the compiled engine is off")
    monkeypatch.setattr(nb, "_COMPILED_BYTES", 0)
    monkeypatch.setattr(compiled, "_PIECE", 64)  # cut rows into pieces even when small


def _run(
    desc: Any, ins: list[np.ndarray[Any, Any]], threads: int, table: bool = True
) -> list[np.ndarray[Any, Any]]:
    """Execute the desc's plan on byte buffers with an engine of `threads` threads (1: numpy)."""
    backend = nb.NumpyBackend(threads=threads)
    executor = backend.executor(desc.lower())
    assert bool(executor.compiled) == (threads > 1)
    if not table:
        executor.runs = None  # each copy its own kernel call
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
def test_compiled_slice1_matches_numpy_and_element_loops(data: st.DataObject) -> None:
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
    slow = _run(desc, ins, 1)
    assert fast[0].tobytes() == slow[0].tobytes()
    assert _run(desc, ins, 2, table=False)[0].tobytes() == slow[0].tobytes()
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
    fast, slow = _run(desc, ins, 3), _run(desc, ins, 1)
    assert fast[0].tobytes() == slow[0].tobytes()
    # the runs of both copies went as one table (one parallel region)
    assert nb.NumpyBackend(threads=3).executor(desc.lower()).runs is not None
    p = ins[0].view(f"u{size}").reshape(1, 3, 37, 16)
    n = ins[1].view(f"u{size}").reshape(1, 3, 1, 16)
    assert fast[0].tobytes() == np.concatenate([p, n], 2).tobytes()


def test_constant_padding_fills_from_the_compiled_engine() -> None:
    x = BufferTensorDesc(DataType.FLOAT32, (5, 7))
    desc = Padding1Desc(
        x, BufferTensorDesc(DataType.FLOAT32, (8, 12)), "CONSTANT", None, -1.5, (1, 2), (2, 3)
    )
    ins = _inputs(desc, 3)
    fast, slow = _run(desc, ins, 2), _run(desc, ins, 1)
    assert fast[0].tobytes() == slow[0].tobytes()
    got = fast[0].view(np.float32).reshape(8, 12)
    assert (got[0] == -1.5).all() and (got[:, -1] == -1.5).all()
    assert got[1:6, 2:9].tobytes() == ins[0].tobytes()


def test_engine_switch_and_serial_backends() -> None:
    """DMLOPS_CPU_ENGINE=numpy (or set_enabled) turns it off; a serial backend never uses it."""
    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT32, (4, 4))] * 2,
        BufferTensorDesc(DataType.FLOAT32, (8, 4)),
        0,
    )
    assert nb.NumpyBackend(threads=2).executor(desc.lower()).compiled
    assert not nb.NumpyBackend.serial().executor(desc.lower()).compiled
    compiled.set_enabled(False)
    try:
        assert not compiled.available()
        assert not nb.NumpyBackend(threads=2).executor(desc.lower()).compiled
    finally:
        compiled.set_enabled(True)


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


@pytest.mark.parametrize("engine", [True, False])
def test_the_bench_all_cores_copy_ceiling_copies(engine: bool) -> None:
    from dmlops.bench.common import all_cores_copy

    src = np.arange(3 << 18, dtype=np.uint32)  # 3 MiB
    dst = np.zeros_like(src)
    compiled.set_enabled(engine)
    try:
        all_cores_copy(dst, src)()
    finally:
        compiled.set_enabled(True)
    assert np.array_equal(dst, src)


@pytest.mark.parametrize("threads", [1, 2])
def test_fortran_ordered_arrays_in_and_out_of_compiled_copies(threads: int) -> None:
    """A Fortran-ordered array is one contiguous buffer in its own memory order: compiled
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
def test_element_copies_of_a_plan_as_one_table(data: st.DataObject) -> None:
    """A JOIN of inputs laid out with strides (transposed, padded): its element copies run
    as one strided table, as one kernel call each, and as numpy copies: the same bits."""
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
    slow = _run(desc, ins, 1)
    assert _run(desc, ins, 4)[0].tobytes() == slow[0].tobytes()
    assert _run(desc, ins, 2, table=False)[0].tobytes() == slow[0].tobytes()


def test_a_focus_stem_runs_as_one_strided_table() -> None:
    """Four stride-2 slices joined (YOLOv5's Focus): four element copies, one region."""
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
    assert isinstance(executor.runs, compiled.StridedTable)
    out = np.empty((2, 12, 4, 4), np.float32)
    executor([x.reshape(-1).view(np.uint8)], [out.reshape(-1).view(np.uint8)])
    want = np.concatenate(
        [x[..., 0::2, 0::2], x[..., 1::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 1::2]], 1
    )
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("dtype", "parts"), [(DataType.FLOAT32, [8, 8, 8]), (DataType.UINT8, [3, 4, 2])]
)
def test_splits_of_many_rows_run_as_one_rows_table(dtype: DataType, parts: list[int]) -> None:
    """A split along the last axis of more rows than a table of runs takes: its parts share
    one outer shape and go as one region (8-byte words, or bytes where rows are odd)."""
    from dmlops.ops import SplitDesc

    rows = 5000
    desc = SplitDesc(
        BufferTensorDesc(dtype, (rows, sum(parts))),
        [BufferTensorDesc(dtype, (rows, p)) for p in parts],
        1,
    )
    executor = nb.NumpyBackend(threads=3).executor(desc.lower())
    assert isinstance(executor.runs, compiled.RowsTable)
    assert executor.runs.wide == (dtype == DataType.FLOAT32)
    ins = _inputs(desc, 7)
    fast, slow = _run(desc, ins, 3), _run(desc, ins, 1)
    assert [f.tobytes() for f in fast] == [s.tobytes() for s in slow]
    size = 4 if dtype == DataType.FLOAT32 else 1
    whole = ins[0].view(f"u{size}").reshape(rows, sum(parts))
    cuts = np.cumsum(parts)[:-1]
    for got, want in zip(fast, np.split(whole, cuts, axis=1), strict=True):
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
