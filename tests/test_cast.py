"""CAST: every rule, the table, every pair of DirectML's 11 types on every backend against a
naive element-by-element conversion (special values: halves, infinities, NaN, the types'
limits and past them), strided and in-place operands, torch tensors, DxDispatch files, and
ONNX Cast of float data against onnxruntime."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dmlops
from conftest import CUDA, HAS_WEBGPU, to_device, to_host
from dmlops import BufferTensorDesc, CastDesc, DataType, Device, DmlError
from dmlops import UnsupportedFeatureLevelError as Unsupported

TYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
         np.uint64, np.uint32, np.uint16, np.uint8]  # fmt: skip


def naive(value: Any, target: np.dtype[Any]) -> Any:
    """One element converted: floats to integers truncated toward zero and saturated (NaN:
    0), integers wrapped into the target's bits, anything to a float rounded (C's cast)."""
    if target.kind in "iu":
        info = np.iinfo(target)
        if isinstance(value, (float, np.floating)):
            if math.isnan(value):
                return target.type(0)
            if math.isinf(value):
                return target.type(info.max if value > 0 else info.min)
            whole = math.trunc(float(value))
            return target.type(min(max(whole, int(info.min)), int(info.max)))
        bits = 8 * target.itemsize
        wrapped = int(value) % 2**bits
        if target.kind == "i" and wrapped >= 2 ** (bits - 1):
            wrapped -= 2**bits
        return target.type(wrapped)
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return np.array(0x7FFFFFFFFFFFFFFF, np.uint64).view(np.float64).astype(target)[()]
    with np.errstate(over="ignore"):
        return target.type(value)


NAN_PAYLOADS = {  # signs, payloads and a signalling NaN: each becomes the one NaN
    np.float16: [0x7E00, 0xFE00, 0x7C01, 0x7FFF],
    np.float32: [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC12345],
    np.float64: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8123456789ABC],
}


def samples(dtype: Any) -> np.ndarray:
    """Values of `dtype` that test every rule: halves, the limits of every type, beyond."""
    kind = np.dtype(dtype)
    if kind.kind == "f":
        values = [0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 0.49, -0.99, 127.9, -128.9, 255.5, 256.0,
                  32767.5, -32768.9, 65535.9, 65536.0, 2.0**31, -(2.0**31) - 1e3, 2.0**32,
                  2.0**63, -(2.0**63) * 2, 2.0**64, 1e30, -1e30, np.inf, -np.inf, np.nan,
                  65519.0, 65520.0, 1e-8]  # fmt: skip
        with np.errstate(over="ignore"):
            made = np.array(values, np.float64).astype(kind)
        bits = np.array(NAN_PAYLOADS[dtype], f"u{kind.itemsize}").view(kind)
        return np.concatenate([made, bits])
    info = np.iinfo(kind)
    values = [0, 1, -1, 127, 128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 2**31,
              2**31 - 1, -(2**31) - 1, 2**32 + 5, 2**53 + 1, 2**62, -(2**62), 2**63 - 1,
              -(2**63), 2**64 - 1, 16777217]  # fmt: skip
    return np.array([v for v in values if info.min <= v <= info.max], kind)


@pytest.mark.parametrize(("source", "target"), list(itertools.product(TYPES, TYPES)))
def test_every_type_pair_on_every_backend(backend: str, source: Any, target: Any) -> None:
    x = samples(source)
    want = np.array([naive(v, np.dtype(target)) for v in x.tolist()], target)
    got = to_host(dmlops.cast(to_device(backend, x), target))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (x, got, want)


@pytest.mark.parametrize(("source", "target"), list(itertools.product(TYPES, TYPES)))
def test_rows_at_every_alignment(backend: str, source: Any, target: Any) -> None:
    """Rows of 4 k and 4 k + 2 elements starting 0 to 3 elements into their buffer (on CUDA,
    a view of the device buffer), two rows in a pitch of 4 k + 4."""
    values = samples(source)
    for inner, offset in itertools.product((8, 10), range(4)):
        flat = np.resize(values, 2 * (inner + 4) + 4)
        # (on CUDA, the view taken of the buffer on the device)
        placed = to_device(backend, flat) if backend == "cuda" else flat
        x = placed[offset : offset + 2 * (inner + 4)].reshape(2, inner + 4)[:, :inner]
        host = flat[offset : offset + 2 * (inner + 4)].reshape(2, inner + 4)[:, :inner]
        want = np.array([naive(v, np.dtype(target)) for v in host.reshape(-1).tolist()], target)
        got = to_host(dmlops.cast(x if backend == "cuda" else to_device(backend, x), target))
        assert got.tobytes() == want.tobytes(), (inner, offset)


@pytest.mark.parametrize(("source", "target"), [(np.float32, np.int16), (np.int64, np.float16),
                                                (np.uint8, np.float64), (np.float64, np.uint32)])  # fmt: skip
def test_strided_operands_ranks_and_out(backend: str, source: Any, target: Any) -> None:
    rng = np.random.default_rng(3)
    for rank in range(1, 9):
        shape = tuple(int(n) for n in rng.integers(1, 4, rank))
        x = (rng.standard_normal((*shape[:-1], 2 * shape[-1])) * 300).astype(source)
        view = x[..., ::-2]
        want = np.array([naive(v, np.dtype(target)) for v in view.reshape(-1).tolist()], target)
        got = to_host(dmlops.cast(to_device(backend, view), target))
        assert got.tobytes() == want.tobytes()
        out = to_device(backend, np.zeros((*shape[:-1], 3 * shape[-1]), target))[..., ::3]
        assert dmlops.cast(to_device(backend, view), target, out=out) is out
        assert to_host(out).tobytes() == want.reshape(shape).tobytes()


@pytest.mark.parametrize("backend", ["numpy", CUDA])
def test_in_place_over_the_same_bytes(backend: str) -> None:
    """The output over the input's own bytes (CUDA: converted into scratch memory first,
    then moved back), and over a reversed view of them."""
    host = np.arange(4096, dtype=np.float32) * 1.5e6 - 3.5e9  # (saturating at both ends)
    want = np.array([naive(v, np.dtype(np.int32)) for v in host.tolist()], np.int32)
    x = to_device(backend, host.copy())
    dmlops.cast(x, np.int32, out=x.view(np.int32))
    assert to_host(x.view(np.int32)).tobytes() == want.tobytes()
    x = to_device(backend, host.copy())
    dmlops.cast(x, np.int32, out=x.view(np.int32)[::-1])
    assert to_host(x.view(np.int32)).tobytes() == want[::-1].tobytes()


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


def test_rules_and_table() -> None:
    F32, I32 = DataType.FLOAT32, DataType.INT32
    with pytest.raises(DmlError, match=r"OutputTensor\.Sizes is \[1, 1, 2, 3\]: must equal"):
        CastDesc(_t(F32, 1, 1, 2, 2), _t(I32, 1, 1, 2, 3)).validate()
    with pytest.raises(DmlError, match=r"OutputTensor\.DimensionCount is 3: must equal"):
        CastDesc(_t(F32, 1, 1, 2, 2), _t(I32, 1, 4, 1)).validate()
    CastDesc(_t(F32, 1, 1, 2, 2), _t(DataType.UINT8, 1, 1, 2, 2)).validate("1_0")
    with pytest.raises(Unsupported, match=r"INT32: DML_FEATURE_LEVEL_1_0 and above supports"):
        CastDesc(_t(F32, 1, 1, 2, 2), _t(I32, 1, 1, 2, 2)).validate("2_1")
    CastDesc(_t(F32, 1, 1, 2, 2), _t(I32, 1, 1, 2, 2)).validate("3_0")
    with pytest.raises(Unsupported, match=r"need DML_FEATURE_LEVEL_3_1"):
        CastDesc(_t(F32, 2, 2), _t(I32, 2, 2)).validate("3_0")
    with pytest.raises(Unsupported, match=r"FLOAT64 need DML_FEATURE_LEVEL_4_1"):
        CastDesc(_t(DataType.FLOAT64, 2), _t(I32, 2)).validate("4_0")
    with pytest.raises(DmlError, match=r"CAST\.InputTensor\.DataType is bool: not one of"):
        dmlops.cast(np.ones(3, bool), np.int8)
    with pytest.raises(DmlError, match=r"CAST\.OutputTensor\.DataType is bool: not one of"):
        dmlops.cast(np.ones(3, np.float32), bool)


def test_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1.7, -2.5], [300.0, float("nan")]])
    got = dmlops.cast(t.T, torch.int8)
    assert got.dtype == torch.int8 and got.tolist() == [[1, 127], [-2, 0]]
    with pytest.raises(DmlError, match=r"needs a gradient"):
        dmlops.cast(t.requires_grad_(), torch.float16)
    with torch.no_grad():
        assert dmlops.cast(t, torch.float16).dtype == torch.float16


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1.5, -1.5, 1e9, -7.9]},
            "y": {"initialValuesDataType": "INT16", "initialValues": {"valueCount": 4, "value": 0}},
        },
        "dispatchables": {
            "c": {
                "type": "DML_OPERATOR_CAST",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
                    "OutputTensor": {"DataType": "INT16", "Sizes": [1, 1, 2, 2]},
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "c",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("1_0"), lines.append)
    assert lines == ["Resource 'y': 1, -1, 32767, -7"]


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (np.float32, np.float16),
        (np.float32, np.int32),
        (np.int64, np.float32),
        (np.float16, np.float32),
        (np.float64, np.float32),
        (np.float32, np.uint8),
    ],
)
def test_onnx_cast_of_float_data_as_onnxruntime(source: Any, target: Any) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T
    from onnx import helper as h

    import dmlops.onnx

    src = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(source))
    dst = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(target))
    nodes = [
        h.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        h.make_node("Cast", ["t"], ["c"], to=dst),
        h.make_node("Slice", ["c", "s", "e"], ["y"]),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", src, [4, 6])],
        [h.make_tensor_value_info("y", dst, None)],
        [h.make_tensor("s", T.INT64, [1], [1]), h.make_tensor("e", T.INT64, [1], [5])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    x = (np.random.default_rng(0).standard_normal((4, 6)) * 50).astype(source)
    if np.dtype(target).kind == "u":
        x = np.abs(x)  # (onnxruntime's out-of-range conversions are undefined behaviour)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    got = dmlops.onnx.run(model, {"x": x})
    got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.gpu
def test_cuda_runs_on_the_callers_stream() -> None:
    """A cast on a CuPy side stream and on a torch side stream: ordered after the work
    queued there (the input is written on that stream just before)."""
    from conftest import HAS_CUDA

    if not HAS_CUDA:
        pytest.skip("no CUDA GPU")
    cp = pytest.importorskip("cupy")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.arange(1 << 20, dtype=cp.float32) * 0.5
        y = dmlops.cast(x, np.int32)
    stream.synchronize()
    assert (cp.asnumpy(y) == (np.arange(1 << 20) // 2)).all()
    torch = pytest.importorskip("torch")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.arange(1 << 20, device="cuda", dtype=torch.float32) - 3.5
        u = dmlops.cast(t, torch.int16)
    side.synchronize()
    want = np.array([naive(v, np.dtype(np.int16)) for v in (np.arange(1 << 20) - 3.5)[:4096]])
    assert u.dtype == torch.int16 and (u[:4096].cpu().numpy() == want).all()


WEBGPU_TYPES = [np.float32, np.float16, np.int32, np.uint32, np.int16, np.uint16, np.int8,
                np.uint8]  # fmt: skip


@pytest.mark.webgpu
@pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter")
def test_webgpu_converts_32_bit_and_narrower_types_on_the_device(dispatches: list[Any]) -> None:
    """convert.wgsl: every pair of the types WGSL can hold in 32 bits, from random bits
    (every float32 and float16 class: subnormals, halves, NaN payloads) and every integer,
    gathered from strided views and scattered into strided outputs."""
    rng = np.random.default_rng(11)
    for source, target in itertools.product(WEBGPU_TYPES, WEBGPU_TYPES):
        size = np.dtype(source).itemsize
        bits = rng.integers(0, 2 ** (8 * size), 1003, dtype=np.uint64).astype(f"u{size}")
        x = np.concatenate([bits.view(source), samples(source)])[::-1]
        view = np.stack([x, x])[:, ::2]  # (a strided read of 2 rows)
        want = np.array([naive(v, np.dtype(target)) for v in view.reshape(-1).tolist()], target)
        out = to_device("webgpu", np.zeros((2, 2 * view.shape[1]), target))[:, 1::2]
        dispatches.clear()
        dmlops.cast(to_device("webgpu", view), target, out=out)
        got = to_host(out)
        assert got.tobytes() == want.reshape(view.shape).tobytes(), (source, target)
        assert f"convert {np.dtype(source).name} -> {np.dtype(target).name}" in dispatches


def _half_patterns() -> np.ndarray:
    """float32 bit patterns around every rounding of float16: every exponent and sign with
    the mantissas at and beside each tie (the 13 dropped bits' half, the kept bit odd and
    even), the overflow and subnormal edges, NaN payloads, and random ones."""
    rng = np.random.default_rng(11)
    edges = [0, 1, 2, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2001, 0x3000, 0x3FFF,
             0x400000, 0x7FFFFF, 0x7FF000, 0x7FEFFF, 0x7FE000, 0x7FDFFF, 0x401000, 0x403000]  # fmt: skip
    mantissas = np.array([*edges, *rng.integers(0, 1 << 23, 200)], np.uint32)
    # subnormal results: the dropped bits' half at every shift of 14 .. 24
    mantissas = np.concatenate([mantissas, (1 << np.arange(13, 24, dtype=np.uint32)) - 1,
                                1 << np.arange(12, 23, dtype=np.uint32)])  # fmt: skip
    exponents = np.arange(256, dtype=np.uint32)
    bits = ((exponents[:, None] << 23) | mantissas[None, :]).ravel()
    randoms = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits, bits | 0x80000000, randoms])


@pytest.mark.parametrize("hardware", [True, False])
def test_the_engines_float_to_half_gives_numpys_rounding(hardware: bool) -> None:
    """The CPU engine's float32 -> float16 (F16C where the CPU has it, integer arithmetic
    else; `benchmarks/verify_halves.py` checks all 2^32 patterns) against numpy's astype:
    round to nearest even, overflow to infinity, exact subnormals, NaN 0x7FFF."""
    from dmlops.backends import cpu_engine

    engine = cpu_engine.native()
    if engine is None:
        pytest.skip("the CPU engine is not built")
    values = _half_patterns().view(np.float32)
    with np.errstate(all="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    want[np.isnan(values)] = 0x7FFF
    for threads in (1, 4):  # (pieces of 64K elements: several here, on the pool)
        made = np.empty(len(values), np.uint16)
        engine.halves(values, made, hardware, threads)
        assert np.array_equal(made, want), (threads, np.flatnonzero(made != want)[:10])
    with pytest.raises(ValueError, match="2 bytes for each 4"):
        engine.halves(values, made[:-1], hardware)


def test_the_engines_double_to_half_rounds_once_as_numpy() -> None:
    """float64 -> float16 on the engine (integer arithmetic, one rounding from the double):
    every exponent with the mantissas at and beside each tie of the 42 dropped bits and of
    every subnormal shift, and random patterns, against numpy's astype (NaN 0x7FFF)."""
    from dmlops.backends import cpu_engine

    engine = cpu_engine.native()
    if engine is None:
        pytest.skip("the CPU engine is not built")
    rng = np.random.default_rng(12)
    ties = [(1 << 41) - 1, 1 << 41, (1 << 41) + 1, 3 << 41, (1 << 42) - 1, 1 << 42]
    ends = [0, 1, 2, (1 << 52) - 1, 1 << 51, 0xFFDFFFFFFFFFF, 0xFFE0000000000]
    shifts = [(1 << k) + d for k in range(40, 53) for d in (-1, 0, 1 << (k - 1) if k > 40 else 0)]
    mantissas = np.array([*ties, *ends, *[m % (1 << 52) for m in shifts]], np.uint64)
    mantissas = np.concatenate([mantissas, rng.integers(0, 1 << 52, 200, dtype=np.uint64)])
    exponents = np.arange(2048, dtype=np.uint64)
    bits = ((exponents[:, None] << np.uint64(52)) | mantissas[None, :]).ravel()
    bits = np.concatenate(
        [bits, bits | np.uint64(1 << 63), rng.integers(0, 1 << 63, 1 << 17, dtype=np.uint64)]
    )
    values = bits.view(np.float64)
    with np.errstate(all="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    want[np.isnan(values)] = 0x7FFF
    for threads in (1, 4):
        made = np.empty(len(values), np.uint16)
        engine.halves_of_doubles(values, made, True, threads)
        assert np.array_equal(made, want), (threads, np.flatnonzero(made != want)[:10])


@pytest.mark.parametrize("hardware", [True, False])
def test_the_engines_half_to_float_is_exact_on_every_pattern(hardware: bool) -> None:
    """The CPU engine's float16 -> float32 on all 65,536 float16 patterns, on one thread and
    on four: numpy's exact widening, every NaN 0x7FFFFFFF."""
    from dmlops.backends import cpu_engine

    engine = cpu_engine.native()
    if engine is None:
        pytest.skip("the CPU engine is not built")
    patterns = np.tile(np.arange(1 << 16, dtype=np.uint16), 3)  # (several pieces)
    halves = patterns.view(np.float16)
    want = halves.astype(np.float32).view(np.uint32).copy()
    want[np.isnan(halves)] = 0x7FFFFFFF
    for threads in (1, 4):
        made = np.empty(len(patterns), np.uint32)
        engine.floats(patterns, made, hardware, threads)
        assert np.array_equal(made, want), (threads, np.flatnonzero(made != want)[:10])
    with pytest.raises(ValueError, match="4 bytes for each 2"):
        engine.floats(patterns, made[:-1], hardware)


def test_cast_to_half_on_the_engine_and_on_numpy_agree(monkeypatch: Any) -> None:
    """dmlops.cast float32 -> float16 and float16 -> float32 of contiguous and strided arrays
    (small, subnormal, overflowing and NaN values) gives the same bits with the engine
    (numpy's conversion left out: it would fail here) and without it."""
    from dmlops.backends import converting, cpu_engine

    if not cpu_engine.available():
        pytest.skip("the CPU engine is not built")
    values = _half_patterns().view(np.float32)[: 1 << 16].reshape(256, 256)
    arrays = [values, values[::2, ::-3], values.T]
    numpys = converting.convert_into

    def not_to_half(source: Any, target: Any) -> None:
        assert np.dtype(np.float16) not in (source.dtype, target.dtype), "numpy converted"
        numpys(source, target)

    halves = [a.astype(np.float16) for a in arrays]
    doubles = [a.astype(np.float64) * 1.0000001 for a in arrays]
    monkeypatch.setattr(converting, "convert_into", not_to_half)
    engine = [dmlops.cast(a, np.float16).tobytes() for a in arrays]
    engine += [dmlops.cast(h[::-1], np.float32).tobytes() for h in halves]
    engine += [dmlops.cast(d[::2], np.float16).tobytes() for d in doubles]
    monkeypatch.setattr(converting, "convert_into", numpys)
    cpu_engine.set_enabled(False)
    try:
        plain = [dmlops.cast(a, np.float16).tobytes() for a in arrays]
        plain += [dmlops.cast(h[::-1], np.float32).tobytes() for h in halves]
        plain += [dmlops.cast(d[::2], np.float16).tobytes() for d in doubles]
    finally:
        cpu_engine.set_enabled(True)
    assert engine == plain
    out = np.zeros((256, 512), np.float16)[:, ::2]  # a strided output
    dmlops.cast(values, np.float16, out=out)
    assert out.tobytes() == plain[0]


def test_the_engines_float16_conversions_ignore_flush_to_zero() -> None:
    """With the calling thread's floating-point unit flushing denormals (torch's
    set_flush_denormal, as some libraries leave it), the engine's conversions still give
    float16's subnormals exactly, both ways."""
    torch = pytest.importorskip("torch")
    from dmlops.backends import cpu_engine

    engine = cpu_engine.native()
    if engine is None:
        pytest.skip("the CPU engine is not built")
    values = np.array([1e-5, 3e-6, 6e-8, -4e-7, 1e-40, 1.0], np.float32)
    with np.errstate(all="ignore"):
        narrowed = values.astype(np.float16).view(np.uint16)
    patterns = np.arange(1 << 16, dtype=np.uint16)
    widened = patterns.view(np.float16).astype(np.float32).view(np.uint32).copy()
    widened[np.isnan(patterns.view(np.float16))] = 0x7FFFFFFF
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no flush-to-zero mode torch sets")
    try:
        for hardware in (True, False):  # (one thread: the caller's, whose mode is set)
            made = np.empty(len(values), np.uint16)
            engine.halves(values, made, hardware, 1)
            assert made.tolist() == narrowed.tolist()
            wide = np.empty(1 << 16, np.uint32)
            engine.floats(patterns, wide, hardware, 1)
            assert np.array_equal(wide, widened)
    finally:
        torch.set_flush_denormal(False)


@pytest.mark.parametrize("shape", [(1, 0), (0,), (3, 0, 2)])
def test_an_empty_cast_is_of_the_type_asked_for(shape: tuple[int, ...]) -> None:
    """CAST of an empty numpy array: an empty array of the target type (not the input's)."""
    for source, target in [(np.uint32, np.int64), (np.float32, np.float16), (np.int8, np.float64)]:
        made = dmlops.cast(np.empty(shape, source), target)
        assert made.dtype == np.dtype(target) and made.shape == shape
