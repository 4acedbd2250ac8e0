"""NONZERO_COORDINATES, the stream compaction: the page's example, every rule, the table,
every backend, type and layout against a naive element-by-element loop (-0.0 is zero, a NaN
is not; N from the effective rank to the dimension count), `nonzero` as numpy's argwhere and
torch's nonzero, DxDispatch files, the caller's CUDA stream."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import HAS_CUDA, HAS_WEBGPU, to_device, to_host
from dmlops import BufferTensorDesc, DataType, Device, DmlError, NonzeroCoordinatesDesc
from dmlops import UnsupportedFeatureLevelError as Unsupported

U32 = DataType.UINT32


def naive(x: np.ndarray, columns: int) -> tuple[int, list[list[int]]]:
    """The count and the rows, one element at a time in row-major order."""
    rows = []
    for pos in itertools.product(*(range(n) for n in x.shape)):
        v = x[pos]
        zero = v == 0 and not (isinstance(v, np.floating) and np.isnan(v))
        if not zero:
            full = [0] * max(0, columns - len(pos)) + list(pos)
            rows.append(full[len(full) - columns :])
    return len(rows), rows


def test_the_pages_example() -> None:
    x = np.array([[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]], np.float32).reshape(1, 1, 2, 4)
    desc = NonzeroCoordinatesDesc(
        BufferTensorDesc(DataType.FLOAT32, (1, 1, 2, 4)),
        BufferTensorDesc(U32, (1, 1, 1, 1)),
        BufferTensorDesc(U32, (1, 1, 8, 3)),
    )
    count = np.zeros((1, 1, 1, 1), np.uint32)
    coords = np.full((1, 1, 8, 3), 7, np.uint32)
    Device("3_0").create_operator(desc).execute([x], [count, coords])
    assert int(count.reshape(-1)[0]) == 4
    assert coords[0, 0, :4].tolist() == [[0, 0, 0], [0, 0, 3], [0, 1, 1], [0, 1, 3]]
    assert (coords[0, 0, 4:] == 7).all()  # rows past the count: left as they were


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


F32 = DataType.FLOAT32
RULES = [
    (
        NonzeroCoordinatesDesc(_t(F32, 1, 1, 2, 4), _t(U32, 1, 1, 1, 2), _t(U32, 1, 1, 8, 2)),
        r"OutputCountTensor\.Sizes is \[1, 1, 1, 2\]: a scalar",
    ),
    (
        NonzeroCoordinatesDesc(_t(F32, 1, 1, 2, 4), _t(U32, 1, 1, 1), _t(U32, 1, 1, 8, 2)),
        r"OutputCountTensor\.DimensionCount is 3: must equal InputTensor",
    ),
    (
        NonzeroCoordinatesDesc(_t(F32, 1, 1, 2, 4), _t(U32, 1, 1, 1, 1), _t(U32, 1, 1, 7, 2)),
        r"OutputCoordinatesTensor\.Sizes is \[1, 1, 7, 2\]: must be \[1, 1, 8, 'N'\]",
    ),
    (
        NonzeroCoordinatesDesc(_t(F32, 1, 1, 2, 4), _t(U32, 1, 1, 1, 1), _t(U32, 1, 1, 8, 1)),
        r"Sizes\[3\] is 1: N must be from the input's effective rank 2 to its DimensionCount 4",
    ),
    (
        NonzeroCoordinatesDesc(_t(F32, 1, 1, 2, 4), _t(U32, 1, 1, 1, 1), _t(U32, 1, 1, 8, 5)),
        r"Sizes\[3\] is 5: N must be",
    ),
    (
        NonzeroCoordinatesDesc(
            _t(F32, 1, 1, 2, 4), _t(DataType.INT32, 1, 1, 1, 1), _t(U32, 1, 1, 8, 2)
        ),
        r"OutputCountTensor\.DataType is INT32",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: NonzeroCoordinatesDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_the_table() -> None:
    desc = NonzeroCoordinatesDesc(_t(F32, 1, 2, 2), _t(U32, 1, 1, 1), _t(U32, 1, 4, 2))
    with pytest.raises(Unsupported, match=r"supports 4 to 5 dimensions"):
        desc.validate()
    five = NonzeroCoordinatesDesc(
        _t(DataType.UINT8, 1, 1, 2, 3, 4), _t(U32, 1, 1, 1, 1, 1), _t(U32, 1, 1, 1, 24, 3)
    )
    five.validate("3_0")
    with pytest.raises(Unsupported, match=r"needs DML_FEATURE_LEVEL_3_0"):
        five.validate("2_1")
    with pytest.raises(Unsupported, match=r"INT64"):  # (no carrier: the zero test reads values)
        dmlops.nonzero_coordinates(np.zeros((1, 1, 2, 2), np.int64))


TYPES = [np.float32, np.float16, np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8]


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(TYPES))
def test_every_backend_type_and_layout_against_a_naive_loop(
    backend: str, data: st.DataObject, dtype: Any
) -> None:
    rank = data.draw(st.sampled_from([4, 5]))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    lead = next((d for d, n in enumerate(shape) if n != 1), rank)
    columns = data.draw(st.integers(max(1, rank - lead), rank))  # (a size is at least 1)
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.integers(0, 3, (*shape[:-1], 2 * shape[-1])).astype(dtype)
    if np.dtype(dtype).kind == "f":
        special = np.array([-0.0, np.nan, 0.0], dtype)
        x.reshape(-1)[: len(special)] = special[: x.size]
    view = x[..., ::-2]
    count, rows = naive(view, columns)
    got_count, got = dmlops.nonzero_coordinates(to_device(backend, view), columns)
    got = to_host(got).reshape(-1, columns)
    assert int(to_host(got_count).reshape(-1)[0]) == count
    assert got[:count].tolist() == rows and not got[count:].any()  # (new rows past: zeros)
    m = int(np.prod(shape))
    out = (
        to_device(backend, np.full((1,) * rank, 9, np.uint32)),
        to_device(backend, np.full((*(1,) * (rank - 2), m, 2 * columns), 9, np.uint32))[..., ::2],
    )
    dmlops.nonzero_coordinates(to_device(backend, view), columns, out=out)
    assert int(to_host(out[0]).reshape(-1)[0]) == count
    assert to_host(out[1]).reshape(-1, columns)[:count].tolist() == rows


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (1, 2, 1, 3, 2)])
def test_nonzero_as_numpy_and_torch(backend: str, shape: tuple[int, ...]) -> None:
    x = (np.random.default_rng(1).integers(0, 2, shape) * 5).astype(np.int16)
    got = to_host(dmlops.nonzero(to_device(backend, x)))
    assert got.dtype == np.int64 and got.tolist() == np.argwhere(x).tolist()
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x.astype(np.float32))
    assert torch.equal(dmlops.nonzero(t), torch.nonzero(t))
    with pytest.raises(DmlError, match=r"nonzero: x has 6 dimensions"):
        dmlops.nonzero(np.zeros((1,) * 6))


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "INT32", "initialValues": [0, 5, 0, 7]},
            "n": {
                "initialValuesDataType": "UINT32",
                "initialValues": {"valueCount": 1, "value": 9},
            },
            "c": {
                "initialValuesDataType": "UINT32",
                "initialValues": {"valueCount": 4, "value": 9},
            },
        },
        "dispatchables": {
            "nz": {
                "type": "DML_OPERATOR_NONZERO_COORDINATES",
                "desc": {
                    "InputTensor": {"DataType": "INT32", "Sizes": [1, 1, 1, 4]},
                    "OutputCountTensor": {"DataType": "UINT32", "Sizes": [1, 1, 1, 1]},
                    "OutputCoordinatesTensor": {"DataType": "UINT32", "Sizes": [1, 1, 4, 1]},
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "nz",
                "bindings": {
                    "InputTensor": "x",
                    "OutputCountTensor": "n",
                    "OutputCoordinatesTensor": "c",
                },
            },
            {"type": "print", "resource": "n"},
            {"type": "print", "resource": "c"},
        ],
    }
    path = tmp_path / "nz.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("3_0"), lines.append)
    assert lines == ["Resource 'n': 2", "Resource 'c': 1, 3, 9, 9"]


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_cuda_runs_on_the_callers_stream_without_a_sync() -> None:
    cp = pytest.importorskip("cupy")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = (cp.arange(1 << 20, dtype=cp.int32) % 3).reshape(1, 1, 1024, 1024)
        count, coords = dmlops.nonzero_coordinates(x)
    stream.synchronize()
    host = cp.asnumpy(x)
    assert int(cp.asnumpy(count).reshape(-1)[0]) == int(np.count_nonzero(host))
    want = np.argwhere(host[0, 0])
    assert (cp.asnumpy(coords)[0, 0, : len(want)] == want).all()


def _many_blocks(backend: str, dtype: Any) -> tuple[Any, Any, np.ndarray[Any, Any]]:
    """NONZERO_COORDINATES of a strided box of 360,000 elements (many blocks of either
    backend's compaction) into outputs holding other values: (count, coords, the answer)."""
    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    values = rng.integers(-3, 3, (1, 3, 300, 800)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[values == 1] = -0.0  # zero
        values[values == 2] = np.nan  # nonzero
    view = values[..., ::-2]
    assert view.shape == (1, 3, 300, 400)
    want = np.argwhere((view != 0) | (np.isnan(view) if view.dtype.kind == "f" else False))
    count = to_device(backend, np.full((1, 1, 1, 1), 5, np.uint32))
    coords = to_device(backend, np.full((1, 1, view.size, 4), 9, np.uint32))
    dmlops.nonzero_coordinates(to_device(backend, view), 4, out=(count, coords))
    return count, coords, want


def _check_many_blocks(count: Any, coords: Any, want: np.ndarray[Any, Any]) -> None:
    got_count, got = to_host(count), to_host(coords)
    assert int(got_count.reshape(-1)[0]) == len(want)
    rows = got.reshape(-1, 4)
    assert np.array_equal(rows[: len(want)], want)
    assert (rows[len(want) :] == 9).all()  # rows past the count left as they were


@pytest.mark.webgpu
@pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.uint32])
def test_webgpu_compacts_on_the_device_across_many_blocks(
    dispatches: list[Any], dtype: Any
) -> None:
    """compact.wgsl's passes: more blocks than one scan workgroup's threads (each thread then
    sums several), a strided box, rows past the count left as they were."""
    dispatches.clear()
    count, coords, want = _many_blocks("webgpu", dtype)
    assert "compact write_rows" in dispatches
    _check_many_blocks(count, coords, want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.uint32])
def test_cuda_compacts_across_many_blocks(dtype: Any) -> None:
    """compact.cu's launches over 44 blocks (the last one partial), a reversed box, a leading
    dimension of size 1 among the four columns."""
    _check_many_blocks(*_many_blocks("cuda", dtype))


def test_nonzero_of_64_bit_elements_reads_a_mask() -> None:
    """NONZERO_COORDINATES' table has no 64-bit types: dmlops.nonzero compares them with zero
    in the array's library first (-0.0 is zero, NaN and the smallest subnormal are not)."""
    x = np.array([[0.0, -0.0, np.nan], [5e-324, 0.0, -2.0]])
    assert dmlops.nonzero(x).tolist() == [[0, 2], [1, 0], [1, 2]]
    ints = np.array([0, 2**40, 0, -1], np.int64)
    assert dmlops.nonzero(ints).tolist() == [[1], [3]]
    torch = pytest.importorskip("torch")
    got = dmlops.nonzero(torch.tensor(x))
    assert isinstance(got, torch.Tensor) and got.tolist() == [[0, 2], [1, 0], [1, 2]]
    with pytest.raises(DmlError, match="FLOAT64"):
        dmlops.nonzero_coordinates(x.reshape(1, 1, 2, 3))  # the operator itself refuses


@pytest.mark.parametrize("dtype", [*TYPES, np.bool_, np.float64, np.int64])
def test_the_engines_compaction_agrees_with_numpys(dtype: Any, monkeypatch: Any) -> None:
    """On the CPU engine (numpy's compaction left out: it would fail here) a box of every
    type, reversed and strided, ranks 1 to 5, gives numpy's rows (64-bit types as nonzero's
    mask); an output that shares the input's memory is read whole first (numpy's path)."""
    from dmlops.backends import compacting, cpu_engine

    if not cpu_engine.available():
        pytest.skip("the CPU engine is not built")
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (2, 3, 37, 82)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[:4] = np.array([-0.0, np.nan, 0.0, -np.nan], dtype)
    views = [x[..., ::-2], x[1, ::2], x[0, 0, 5], x[None, :, :, 3:40:3]]

    def refused(*args: Any) -> Any:
        raise AssertionError("numpy's compaction ran")

    monkeypatch.setattr(compacting, "compacted", refused)
    for view in views:
        want = np.argwhere((view != 0) | np.isnan(view) if view.dtype.kind == "f" else view)
        assert np.array_equal(dmlops.nonzero(view), want)
    monkeypatch.undo()
    buffer = np.zeros(64, np.uint32)
    buffer[[3, 5, 6, 15]] = [1, 7, 2, 9]
    inside = buffer[:16].reshape(1, 1, 4, 4)
    want = np.argwhere(inside.copy())
    count = np.zeros((1, 1, 1, 1), np.uint32)
    dmlops.nonzero_coordinates(inside, 4, out=(count, buffer.reshape(1, 1, 16, 4)))
    assert int(count.reshape(-1)[0]) == 4
    assert np.array_equal(buffer.reshape(16, 4)[:4], want)


def test_a_large_compaction_cut_over_threads_keeps_element_order() -> None:
    """A box of a million elements or more on several threads (ranges of rows counted, then
    written from the rows the ranges before them fill): numpy's argwhere, in order, for
    ranges that do not divide the rows evenly, a reversed view and a lone long row."""
    from dmlops.backends import cpu_engine

    if not cpu_engine.available():
        pytest.skip("the CPU engine is not built")
    rng = np.random.default_rng(9)
    held = dmlops.get_num_threads()
    dmlops.set_num_threads(4)
    try:
        for shape in [(1, 3, 701, 523), (2, 3, 5, 7, 3001), (1, 1, 1, 1 << 20)]:
            x = rng.standard_normal(shape).astype(np.float32) * (rng.random(shape) < 0.3)
            x.reshape(-1)[:3] = [-0.0, np.nan, 0.0]
            view = x[..., ::-1]
            want = np.argwhere((view != 0) | np.isnan(view))
            assert np.array_equal(dmlops.nonzero(view), want), shape
    finally:
        dmlops.set_num_threads(held)
