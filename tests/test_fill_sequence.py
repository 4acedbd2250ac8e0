"""FILL_VALUE_SEQUENCE: the page's examples, every rule, the table, every backend and type
against a naive loop of exact arithmetic (integer types modulo 2^bits, float types rounded
once), sequences longer than a GPU's fill buffer, `arange` as numpy's and torch's, empty
outputs, DxDispatch files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import HAS_CUDA, to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    Device,
    DmlError,
    FillValueSequenceDesc,
    UnsupportedFeatureLevelError,
)
from dmlops.plan import ValueSequence


def naive(count: int, start: Any, delta: Any, dtype: Any) -> np.ndarray:
    """Element i = start + delta * i, one at a time: Python integers wrapped into the type's
    bits, or Python floats (exact enough here) rounded once."""
    kind = np.dtype(dtype)
    out = np.empty(count, kind)
    for i in range(count):
        if kind.kind in "iu":
            bits = 8 * kind.itemsize
            wrapped = (int(start) + int(delta) * i) % 2**bits
            out[i] = (
                np.array(wrapped, np.uint64).astype(kind)
                if bits == 64
                else np.array(wrapped, f"u{kind.itemsize}").view(kind)
            )
        else:
            out[i] = kind.type(float(start) + float(delta) * i)
    return out


@pytest.mark.parametrize(
    ("dt", "sizes", "start", "delta", "want"),
    [
        (DataType.FLOAT32, (1, 1, 1, 3), 3, 2, [3, 5, 7]),
        (DataType.UINT8, (1, 1, 2, 2), 10, -2, [10, 8, 6, 4]),  # the page: a UINT8 delta of -2
    ],
)
def test_page_examples(dt: DataType, sizes: Any, start: int, delta: int, want: list[int]) -> None:
    desc = FillValueSequenceDesc(BufferTensorDesc(dt, sizes), dt, start, delta)
    out = np.full(sizes, 99, dt.numpy_dtype)
    Device("2_1").create_operator(desc).execute([], [out])
    assert out.reshape(-1).tolist() == want


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


RULES = [
    (FillValueSequenceDesc(_t(DataType.INT32, 4), "UINT32", 0, 1), r"ValueDataType is UINT32"),
    (FillValueSequenceDesc(_t(DataType.INT8, 4), None, 200, 1), r"ValueStart is 200: not an INT8"),
    (FillValueSequenceDesc(_t(DataType.UINT8, 4), None, 0, -129), r"ValueDelta is -129"),
    (FillValueSequenceDesc(_t(DataType.INT16, 4), None, 0, 0.5), r"ValueDelta is 0\.5"),
    (FillValueSequenceDesc(_t(DataType.FLOAT32, 4), None, "a", 1), r"ValueStart is 'a'"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: FillValueSequenceDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_the_table() -> None:
    FillValueSequenceDesc(_t(DataType.INT8, 1, 1, 2, 2), None, 0, 1).validate("2_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_2_1"):
        FillValueSequenceDesc(_t(DataType.INT8, 1, 1, 2, 2), None, 0, 1).validate("2_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_4_0"):
        FillValueSequenceDesc(_t(DataType.INT8, 4), None, 0, 1).validate("3_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"need DML_FEATURE_LEVEL_5_0"):
        FillValueSequenceDesc(_t(DataType.INT64, 4), None, 0, 1).validate("4_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"no feature level supports"):
        FillValueSequenceDesc(_t(DataType.FLOAT64, 4), None, 0, 1).validate()
    with pytest.raises(UnsupportedFeatureLevelError, match=r"FLOAT64"):  # no carrier: arithmetic
        dmlops.fill_value_sequence([3], 0, 1, np.float64)


TYPES = [np.float32, np.float16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
         np.int64, np.uint64]  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8).filter(
        lambda s: int(np.prod(s)) <= 512
    ),
    dtype=st.sampled_from(TYPES),
)
def test_every_backend_rank_and_type_against_a_naive_loop(
    backend: str, data: st.DataObject, sizes: list[int], dtype: Any
) -> None:
    kind = np.dtype(dtype)
    if kind.kind == "f":
        start = data.draw(st.sampled_from([0.0, -1.5, 100.25, 3.0]))
        delta = data.draw(st.sampled_from([0.5, -0.1, 3.0, 1e-3]))
        start, delta = kind.type(start), kind.type(delta)  # values of the type
    else:
        info = np.iinfo(kind)
        start = data.draw(st.integers(int(info.min), int(info.max)))
        low = -(2 ** (8 * kind.itemsize - 1)) if kind.kind == "u" else int(info.min)
        delta = data.draw(st.integers(low, int(info.max)))
    want = naive(int(np.prod(sizes)), start, delta, kind).reshape(sizes)
    device = None if backend == "numpy" else backend
    got = to_host(dmlops.fill_value_sequence(sizes, start, delta, kind, device=device))
    assert got.dtype == kind and got.tobytes() == want.tobytes()
    out = to_device(backend, np.zeros((*sizes[:-1], 2 * sizes[-1]), kind))[..., ::2]
    assert dmlops.fill_value_sequence(sizes, start, delta, out=out) is out
    assert to_host(out).tobytes() == want.tobytes()


def test_a_sequence_longer_than_a_gpu_fill_buffer(backend: str) -> None:
    count = 300_000  # 1.2 MB of int32: past the 64 KiB fill buffers of the GPU backends
    device = None if backend == "numpy" else backend
    made = dmlops.fill_value_sequence([3, count // 3], -7, 3, np.int32, device=device)
    assert isinstance(made, np.ndarray) == (device is None)  # made on the device named
    assert to_host(made).tobytes() == (np.arange(count, dtype=np.int32) * 3 - 7).tobytes()
    for generated in (
        dmlops.arange(5, device=device),
        dmlops.diagonal_matrix([2, 2], device=device),
    ):
        assert isinstance(generated, np.ndarray) == (device is None)


@pytest.mark.parametrize(
    ("dtype", "start", "delta"),
    [("float32", 0.1, 3.3e-3), ("float16", -2.0, 1.5e-2), ("float16", 60000.0, 7.0),
     ("int8", 120, 3), ("uint16", 65530, 1), ("int64", -(2**62), 2**40), ("uint64", 5, -1),
     ("int32", 2**31 - 9, 4), ("uint8", 3, 250)],
)  # fmt: skip
def test_a_plan_carries_the_sequences_rule(dtype: str, start: Any, delta: Any) -> None:
    """The plan's tensor fill is the rule (plan.ValueSequence), not 16 MiB of host bytes;
    its values, made in pieces, are the page's arithmetic element by element (float types:
    the product and the sum in float64, rounded once to the type; integer types modulo
    2^bits), past a piece's end too, and infinity past float16's range."""
    count = (1 << 16) + 37
    dt = DataType.parse(dtype.upper(), "test")
    desc = FillValueSequenceDesc(BufferTensorDesc(dt, (count,)), dt, start, delta)
    (fill,) = desc.lower().fills
    assert isinstance(fill, ValueSequence) and len(fill) == count * np.dtype(dtype).itemsize
    got = fill.values()
    kind = np.dtype(dtype)
    for i in (0, 1, 2, (1 << 16) - 1, 1 << 16, count - 1):
        if kind.kind == "f":  # (ValueStart and ValueDelta are elements of the type)
            first, step = (float(np.array(v, kind)) for v in (start, delta))
            want = np.array(first + step * i).astype(kind)
        else:
            bits = 8 * kind.itemsize
            want = np.array((int(start) + int(delta) * i) % 2**bits, f"u{kind.itemsize}")
            want = want.view(kind)
        assert got[i].tobytes() == want.tobytes(), i
    assert fill.tobytes() == got.tobytes()
    assert fill.values(5, 9).tobytes() == got[5:9].tobytes()


def test_sequences_apart_by_the_sign_of_a_zero(backend: str) -> None:
    """Rules that differ only in a zero's sign are different fills (a GPU keeps fills by
    their rule): 0 * -1 + -0.0 is -0.0, 0 * -1 + 0.0 is 0.0."""
    assert ValueSequence("<f4", -0.0, -1.0, 5, 20) != ValueSequence("<f4", 0.0, -1.0, 5, 20)
    same = ValueSequence("<f4", -0.0, -1.0, 5, 20)
    assert hash(same) == hash(ValueSequence("<f4", -0.0, -1.0, 5, 20))
    device = None if backend == "numpy" else backend
    for start in (0.0, -0.0, 0.0):
        got = to_host(dmlops.fill_value_sequence([40], start, -1.0, np.float32, device=device))
        want = np.float64(start) + np.arange(40) * -1.0
        assert got.tobytes() == want.astype(np.float32).tobytes(), start


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint16", "int32", "uint64"])
def test_cuda_makes_a_sequence_on_the_device(dtype: str, monkeypatch: Any) -> None:
    """On CUDA a sequence is made by a kernel, not on the host (its host bytes made to
    fail), bit for bit the host's values; a NaN start (whose payload the host's arithmetic
    gives) is made on the host."""
    from dmlops.plan import ValueSequence as Rule

    want = {}
    cases = [(3, 7), (100, -3)] if np.dtype(dtype).kind in "iu" else [(0.1, 3.3e-3), (-2.0, 1.5)]
    for start, delta in cases:
        want[start] = np.asarray(dmlops.fill_value_sequence([5, 40_000], start, delta, dtype))
    monkeypatch.setattr(Rule, "tobytes", lambda self: pytest.fail("host bytes made"))
    for start, delta in cases:
        made = dmlops.fill_value_sequence([5, 40_000], start, delta, dtype, device="cuda")
        assert to_host(made).tobytes() == want[start].tobytes()
    if np.dtype(dtype).kind == "f":
        monkeypatch.undo()
        made = dmlops.fill_value_sequence([3], float("nan"), 1.0, dtype, device="cuda")
        host = dmlops.fill_value_sequence([3], float("nan"), 1.0, dtype)
        assert to_host(made).tobytes() == np.asarray(host).tobytes()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_sequence_first_made_while_a_stream_is_captured() -> None:
    """The first call of a new sequence inside torch's CUDA-graph capture on a side stream:
    made on the backend's own stream (waited for), the replayed graph writes it."""
    torch = pytest.importorskip("torch")
    out = torch.zeros(70_001, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.stream(side), torch.cuda.graph(graph, stream=side):
        dmlops.fill_value_sequence([70_001], 0.5, 0.75, out=out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    want = np.asarray(dmlops.fill_value_sequence([70_001], 0.5, 0.75))
    assert out.cpu().numpy().tobytes() == want.tobytes()


def test_a_gpu_keeps_a_bounded_set_of_sequences(backend: str, monkeypatch: Any) -> None:
    """Sequences of many lengths (an ONNX Range of a growing length makes one a step) keep
    at most the budget of tensor fills on the GPU, the least recently used let go (on CUDA,
    freed once no prepared launch holds them), each result right; an operator bound before
    its sequence was let go still dispatches it right."""
    if backend == "numpy":
        pytest.skip("tensor fills are read in place on the host")
    from dmlops.backends import get_backend

    module = __import__(f"dmlops.backends.{backend}", fromlist=["TENSOR_FILLS_KEPT"])
    monkeypatch.setattr(module, "TENSOR_FILLS_KEPT", 1 << 20)
    gpu = get_backend(backend)
    desc = FillValueSequenceDesc(BufferTensorDesc(DataType.INT32, (300_000,)), DataType.INT32, 5, 3)
    bound_out = to_device(backend, np.zeros(300_000, np.int32))
    table = dmlops.Device(backend=backend).create_operator(desc).bind([], [bound_out])
    table.dispatch()
    for n in range(10_000, 400_000, 39_000):  # (40 KB to 1.6 MB each)
        made = dmlops.arange(n, dtype=np.int32, device=backend)
        assert to_host(made).tobytes() == np.arange(n, dtype=np.int32).tobytes(), n
    state = gpu.state(0) if backend == "cuda" else gpu
    assert 1 <= len(state._tensor_fills) <= 2 and state._tensor_fill_bytes <= 2 << 20
    dmlops.fill_value_constant([300_000], 0, np.int32, out=bound_out)
    assert not to_host(bound_out).any()
    table.dispatch()
    assert to_host(bound_out).tobytes() == (np.arange(300_000, dtype=np.int32) * 3 + 5).tobytes()
    if backend == "cuda":
        dmlops.arange(7, device=backend)  # (a preparation frees what no one holds)
        assert state.dropped == []


@pytest.mark.parametrize(
    "args", [(5,), (2, 11, 3), (0,), (3, 1), (-4, 4, 3), (0.0, 1.0, 0.125), (1, 2.5, 0.5)]
)
def test_arange_as_numpy_and_torch(args: tuple[Any, ...]) -> None:
    got = dmlops.arange(*args)
    whole = all(isinstance(a, int) for a in args)
    want = np.arange(*args, dtype=np.int64 if whole else np.float32)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    torch = pytest.importorskip("torch")
    if len(got):  # (torch refuses a stop before the start)
        assert torch.equal(torch.from_numpy(got), torch.arange(*args))
    with pytest.raises(DmlError, match=r"arange: step is 0"):
        dmlops.arange(0, 3, 0)


def test_generators_make_empty_arrays_and_fill_torch_outputs() -> None:
    assert dmlops.fill_value_sequence([0, 3], 1, 1, np.int16).shape == (0, 3)
    assert dmlops.fill_value_constant([2, 0], 1.0).shape == (2, 0)
    assert dmlops.diagonal_matrix([0, 4]).shape == (0, 4)
    torch = pytest.importorskip("torch")
    out = torch.empty(2, 3)
    assert dmlops.fill_value_sequence([2, 3], 1, 2, out=out) is out
    assert out.tolist() == [[1, 3, 5], [7, 9, 11]]


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "y": {"initialValuesDataType": "INT16", "initialValues": {"valueCount": 6, "value": 0}}
        },
        "dispatchables": {
            "seq": {
                "type": "DML_OPERATOR_FILL_VALUE_SEQUENCE",
                "desc": {
                    "OutputTensor": {"DataType": "INT16", "Sizes": [6]},
                    "ValueDataType": "INT16",
                    "ValueStart": 32766,
                    "ValueDelta": 1,
                },
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "seq", "bindings": {"OutputTensor": "y"}},
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "seq.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("4_0"), lines.append)
    assert lines == ["Resource 'y': 32766, 32767, -32768, -32767, -32766, -32765"]
