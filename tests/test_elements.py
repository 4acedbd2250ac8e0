"""Every element moves above the Device API: types DirectML has no name for (bool, bfloat16,
float8, complex), 64-bit data where an operator's table has no 64-bit row, 16-byte elements,
mixed types in one graph, empty and 0-D arrays, and the newest feature level by default.
References are naive element-by-element loops; comparisons are of bytes."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import BACKENDS, HAS_CUDA, to_device, to_host
from dmlops import Device, FeatureLevel, Graph
from dmlops.elements import element_of, encode
from dmlops.errors import DmlError, InvalidDescriptorError, UnsupportedFeatureLevelError
from dmlops.ops import GatherElementsDesc
from dmlops.tensor import BufferTensorDesc, DataType

# one dtype per element size and kind, the ones DirectML lacks included
DTYPES = [
    np.dtype(np.bool_),
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(np.int8),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.int64),
    np.dtype(np.float64),
    np.dtype(np.complex64),
    np.dtype(np.complex128),
]


def _random(shape: tuple[int, ...], dtype: np.dtype, seed: int) -> np.ndarray:
    """Random bits of every element (NaN payloads, -0.0 and all)."""
    raw = np.random.default_rng(seed).integers(
        0, 256, size=(*shape, dtype.itemsize), dtype=np.uint8
    )
    if dtype == np.bool_:
        raw &= 1
    return raw.view(dtype).reshape(shape)


def _same(got, expected: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    got = to_host(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def _naive_tile(x: np.ndarray, repeats: tuple[int, ...]) -> np.ndarray:
    out = np.empty(tuple(n * r for n, r in zip(x.shape, repeats)), x.dtype)
    for c in itertools.product(*map(range, out.shape)):
        out[c] = x[tuple(i % n for i, n in zip(c, x.shape))]
    return out


def _naive_gather_elements(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    out = np.empty(idx.shape, x.dtype)
    for c in itertools.product(*map(range, idx.shape)):
        src = list(c)
        src[axis] = int(idx[c]) % x.shape[axis]
        out[c] = x[tuple(src)]
    return out


def _naive_pad(
    x: np.ndarray, start: tuple[int, ...], end: tuple[int, ...], fill: np.ndarray
) -> np.ndarray:
    out = np.empty(tuple(n + a + b for n, a, b in zip(x.shape, start, end)), x.dtype)
    for c in itertools.product(*map(range, out.shape)):
        src = tuple(i - a for i, a in zip(c, start))
        inside = all(0 <= s < n for s, n in zip(src, x.shape))
        out[c] = x[src] if inside else fill
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=6, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    seed=st.integers(0, 2**16),
)
def test_every_element_type_moves_bit_exactly(backend: str, dtype: np.dtype, shape, seed) -> None:  # type: ignore[no-untyped-def]
    if backend == "webgpu" and dtype.itemsize == 16:
        pytest.skip("the WebGPU backend moves up to 8-byte words; 16-byte elements refused")
    x = _random(shape, dtype, seed)
    try:
        d = to_device(backend, x)
    except (TypeError, ValueError):  # CuPy has no float8 arrays (torch's are tested below)
        pytest.skip(f"{backend} arrays of {dtype} cannot be made")
    rank = len(shape)
    # SLICE1 reversed and strided on every dimension
    strides = [-1 if k % 2 else 2 for k in range(rank)]
    got = dmlops.slice1(d, [0] * rank, list(shape), strides)
    window = tuple(slice(None, None, s) for s in strides)
    _same(got, np.array(x[window]))
    # TILE (no 64-bit FLOAT64 row in DirectML's table)
    repeats = tuple(2 if k == 0 else 1 for k in range(rank))
    _same(dmlops.tile(d, repeats), _naive_tile(x, repeats))
    # JOIN
    _same(dmlops.join([d, d], rank - 1), np.concatenate([x, x], rank - 1))
    # GATHER_ELEMENTS (no 64-bit row in DirectML's table)
    idx = np.random.default_rng(seed).integers(-shape[0], shape[0], size=shape)
    _same(dmlops.gather_elements(d, to_device(backend, idx), 0), _naive_gather_elements(x, idx, 0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.dtype(np.float64), 1.5),
        (np.dtype(np.int64), -(2**40)),
        (np.dtype(ml_dtypes.bfloat16), -2.5),
        (np.dtype(np.bool_), 1),
        (np.dtype(np.complex64), 2 - 1j),
    ],
    ids=str,
)
def test_padding_writes_the_value_as_the_data_type(backend: str, dtype: np.dtype, value) -> None:  # type: ignore[no-untyped-def]
    x = _random((2, 3), dtype, 7)
    got = dmlops.padding(to_device(backend, x), [1, 0], [0, 2], value=value)
    _same(got, _naive_pad(x, (1, 0), (0, 2), np.array(value).astype(dtype)))


def test_padding_value_must_fit_the_data_type() -> None:
    with pytest.raises(DmlError, match=r"PADDING1\.PaddingValue is 300: not an INT8"):
        dmlops.padding(np.zeros(2, np.int8), [1], [1], value=300)
    with pytest.raises(DmlError, match=r"PaddingValue is 1.5: not an (int64|INT64)"):
        dmlops.padding(np.zeros(2, np.int64), [1], [1], value=1.5, feature_level="5_0")
    with pytest.raises(DmlError, match=r"not a float64"):
        encode(1j, element_of(np.float64))


def test_the_device_api_keeps_directml_types() -> None:
    """Only the layers above the Device API carry types DirectML's tables lack."""
    t = BufferTensorDesc(DataType.INT64, [2, 2])
    i = BufferTensorDesc(DataType.INT32, [2, 2])
    with pytest.raises(
        UnsupportedFeatureLevelError, match=r"GATHER_ELEMENTS\.InputTensor\.DataType is INT64"
    ):
        Device().create_operator(GatherElementsDesc(t, i, t, 0))
    with pytest.raises(InvalidDescriptorError, match=r"numpy dtype bool has no DirectML data type"):
        DataType.from_numpy(np.bool_)


def test_data_tensors_of_one_call_share_one_element_type() -> None:
    x = np.zeros(2, np.float16)
    with pytest.raises(
        DmlError,
        match=r"JOIN\.InputTensors\[1\]\.DataType is bfloat16: must equal InputTensors\[0\]\.DataType FLOAT16",
    ):
        dmlops.join([x, x.view(ml_dtypes.bfloat16)], 0)
    with pytest.raises(DmlError, match=r"numpy dtype object is not moved"):
        dmlops.slice1(np.zeros(2, object), [0], [2], [1])
    with pytest.raises(DmlError, match=r"GATHER\.IndicesTensor\.DataType is FLOAT32"):
        dmlops.gather(np.zeros(4, np.int64), np.zeros(2, np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graph_moves_a_mix_of_types(backend: str) -> None:
    g = Graph()
    a = g.input(BufferTensorDesc(DataType.FLOAT32, [2, 3]))
    b = g.input(BufferTensorDesc(DataType.INT64, [4]))
    c = g.input(BufferTensorDesc(DataType.UINT8, [4]))
    outs = [
        g.slice1(a, [0, 0], [2, 3], [1, -1]),
        g.slice1(b, [0], [4], [-2]),
        g.padding(c, [1], [3], "CONSTANT", 5),
        g.join([g.slice1(b, [1], [2], [1]), b], 0),
    ]
    op = g.compile(outs, Device(backend=backend))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1, 2**40 + 1, -3, -(2**50)], np.int64)
    z = np.array([7, 8, 9, 10], np.uint8)
    results = [
        np.empty((2, 3), np.float32),
        np.empty(2, np.int64),
        np.empty(8, np.uint8),
        np.empty(6, np.int64),
    ]
    bound = [to_device(backend, r) for r in results]
    op.execute([to_device(backend, v) for v in (x, y, z)], bound)
    _same(bound[0], x[:, ::-1])
    _same(bound[1], y[::-2])
    _same(bound[2], np.array([5, 7, 8, 9, 10, 5, 5, 5], np.uint8))
    _same(bound[3], np.concatenate([y[1:3], y]))


# -- empty and 0-D arrays, as numpy answers them --------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_arrays_give_empty_results(backend: str) -> None:
    e = to_device(backend, np.zeros((0, 3), np.float32))
    x = to_device(backend, np.arange(12, dtype=np.float32).reshape(4, 3))
    assert dmlops.slice1(e, [0, 0], [0, 3], [1, 1]).shape == (0, 3)
    assert dmlops.slice(x, [0, 0], [0, 3], [1, 1]).shape == (0, 3)
    assert dmlops.tile(x, [0, 2]).shape == (0, 6)
    assert dmlops.tile(e, [2, 2]).shape == (0, 6)
    assert dmlops.padding(e, [0, 1], [0, 1], value=0).shape == (0, 5)
    assert dmlops.depth_to_space(
        to_device(backend, np.zeros((0, 4, 2, 2), np.float32)), 2
    ).shape == (0, 1, 4, 4)
    assert dmlops.space_to_depth(
        to_device(backend, np.zeros((0, 1, 4, 4), np.float32)), 2
    ).shape == (0, 4, 2, 2)
    assert dmlops.gather(x, to_device(backend, np.zeros(0, np.int64))).shape == (0, 3)
    assert dmlops.gather_elements(x, to_device(backend, np.zeros((0, 3), np.int64))).shape == (0, 3)
    assert dmlops.gather_nd(x, to_device(backend, np.zeros((0, 1), np.int64))).shape == (0, 3)
    assert dmlops.one_hot(
        to_device(backend, np.zeros(0, np.int64)),
        3,
        to_device(backend, np.array([0, 1], np.float32)),
    ).shape == (0, 3)
    pieces = dmlops.split(x, 0, [0, 4, 0])
    assert [p.shape for p in pieces] == [(0, 3), (4, 3), (0, 3)]
    _same(pieces[1], np.arange(12, dtype=np.float32).reshape(4, 3))
    _same(dmlops.join([e, x, e], 0), np.arange(12, dtype=np.float32).reshape(4, 3))
    none = to_device(backend, np.zeros((0, 1), np.int64))
    _same(dmlops.scatter_nd(x, none, to_device(backend, np.zeros((0, 3), np.float32))), to_host(x))
    assert dmlops.scatter_nd(x, none, to_device(backend, np.zeros((0, 3), np.float32)), out=x) is x
    with pytest.raises(DmlError, match=r"GATHER\.InputTensor is empty"):
        dmlops.gather(e, to_device(backend, np.zeros(2, np.int64)))
    with pytest.raises(DmlError, match=r"SLICE1\.InputWindowStrides\[1\] is 0"):
        dmlops.slice1(e, [0, 0], [0, 3], [1, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_0d_arrays_are_their_one_element_view(backend: str) -> None:
    s = to_device(backend, np.array(2.5, np.float64))
    _same(dmlops.tile(s, [3]), np.full(3, 2.5))
    _same(dmlops.slice1(s, [0], [1], [1]), np.array([2.5]))
    _same(dmlops.padding(s, [1], [0], value=-1), np.array([-1, 2.5]))
    x = to_device(backend, np.arange(10.0).reshape(5, 2))
    _same(dmlops.gather(x, to_device(backend, np.array(3, np.int64)), 0), np.array([6.0, 7.0]))
    _same(dmlops.gather(x, 3, 0), np.array([6.0, 7.0]))  # a Python int index: 0-D, axis dropped


def test_feature_level_defaults_to_the_newest() -> None:
    assert Device().feature_level is FeatureLevel.newest()
    assert Graph().feature_level is FeatureLevel.newest()
    assert FeatureLevel.parse(None) is FeatureLevel.newest()
    x = np.zeros((2, 2), np.float32)
    # PADDING1 arrived at 5_0: refused only where an older level is named
    Device().create_operator(
        dmlops.Padding1Desc(
            BufferTensorDesc(DataType.FLOAT32, [2, 2]), BufferTensorDesc(DataType.FLOAT32, [2, 4]),
            "CONSTANT", None, 0, [0, 1], [0, 1],
        )
    )  # fmt: skip
    with pytest.raises(UnsupportedFeatureLevelError, match=r"PADDING1 needs DML_FEATURE_LEVEL_5_0"):
        Device("4_1").create_operator(
            dmlops.Padding1Desc(
                BufferTensorDesc(DataType.FLOAT32, [2, 2]), BufferTensorDesc(DataType.FLOAT32, [2, 4]),
                "CONSTANT", None, 0, [0, 1], [0, 1],
            )
        )  # fmt: skip
    # (a functional call at 4_1 is DML PADDING, the first version; at 2_1 it has 4 to 5 dims)
    assert dmlops.padding(x, [0, 1], [0, 1], feature_level="4_1").shape == (2, 4)
    with pytest.raises(UnsupportedFeatureLevelError, match=r"PADDING\.InputTensor"):
        dmlops.padding(x, [0, 1], [0, 1], feature_level="2_1")


@pytest.mark.parametrize(
    "place",
    [
        "cpu",
        pytest.param(
            "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]
        ),
    ],
)
def test_torch_tensors_of_any_type(place: str) -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32, device=place).reshape(3, 4)
    for dtype in (
        torch.bfloat16,
        torch.float8_e4m3fn,
        torch.bool,
        torch.complex64,
        torch.int64,
        torch.float64,
    ):
        t = x.to(dtype)
        got = dmlops.slice1(t, [0, 0], [3, 4], [-1, 2])
        assert got.dtype == dtype
        assert torch.equal(got.view(torch.uint8), t.flip(0)[:, ::2].contiguous().view(torch.uint8))
        tiled = dmlops.tile(t, [1, 2])
        assert tiled.dtype == dtype and torch.equal(
            tiled.view(torch.uint8), t.repeat(1, 2).view(torch.uint8)
        )
        picked = dmlops.gather(t, torch.tensor([2, 0], device=place), 0)
        assert torch.equal(picked.view(torch.uint8), t[[2, 0]].view(torch.uint8))
    padded = dmlops.padding(x.to(torch.bfloat16), [0, 1], [0, 0], value=-0.5)
    assert padded[:, 0].tolist() == [-0.5] * 3


def test_graphs_and_dask_refuse_16_byte_elements_by_name() -> None:
    x = np.arange(6, dtype=np.complex128).reshape(2, 3)
    with pytest.raises(DmlError, match="complex128 has 16-byte elements"):
        dmlops.Graph().input(x)
    da = pytest.importorskip("dask.array")
    import dmlops.dask as dd

    with pytest.raises(DmlError, match="complex128 has 16"):
        dd.slice1(da.from_array(x), [0, 0], [2, 3], [1, 1])
    _same(dmlops.slice1(x, [0, 0], [2, 3], [1, -1]), x[:, ::-1])  # the functional API moves them


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_empty_and_0d_calls_answer_as_numpy(shape: tuple[int, ...], data) -> None:  # type: ignore[no-untyped-def]
    """Every functional operator on arrays with a zero-sized dimension (or 0-D), against
    numpy's own answer for the same call."""
    x = np.arange(math.prod(shape), dtype=np.int16).reshape(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    reps = data.draw(st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape)))
    _same(dmlops.tile(x, reps), np.tile(x, reps))
    cut = data.draw(st.integers(0, shape[axis]))
    pieces = dmlops.split(x, axis, [cut, shape[axis] - cut])
    for got, want in zip(pieces, np.split(x, [cut], axis=axis), strict=True):
        _same(got, want)
    _same(
        dmlops.join([x, x[:0] if axis == 0 else x], axis),
        np.concatenate([x, x[:0] if axis == 0 else x], axis),
    )
    idx = np.arange(shape[axis])[::-1].copy()
    if 0 not in shape:
        _same(dmlops.gather(x, idx, axis), np.take(x, idx, axis))
        _same(dmlops.gather(x, np.array(0), axis), np.take(x, 0, axis))  # 0-D index
    _same(dmlops.gather(x, idx[:0], axis), np.take(x, idx[:0], axis))
    starts = [0] * len(shape)
    _same(dmlops.slice1(x, starts, list(shape), [1] * len(shape)) if 0 not in shape else x, x)
    lo = data.draw(st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape)))
    if 0 in shape:
        want = np.pad(x, [(a, 0) for a in lo], constant_values=7)
        _same(dmlops.padding(x, lo, [0] * len(shape), value=7), want)
    s = np.array(x.size, np.int16)  # 0-D
    _same(dmlops.tile(s, [2]), np.tile(s, 2))
