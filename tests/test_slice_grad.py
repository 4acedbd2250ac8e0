"""SLICE_GRAD: its page's worked example, every rule, and every backend, type and rank
against a naive element-by-element reference (zeros where SLICE1 read nothing)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import (
    Binding,
    DataType,
    Device,
    DmlError,
    FeatureLevel,
    SliceGradDesc,
    UnsupportedFeatureLevelError,
)
from reference import slice_grad_mapping
from strategies import DATA_TYPES, packed, shapes, tensor

F32 = DataType.FLOAT32


_t = packed


def test_page_example(backend: str) -> None:
    # SLICE1 took [[a, c], [i, k]] out of a 4x4 tensor with strides 2; SLICE_GRAD puts them back
    g = np.array([[1, 3], [9, 11]], np.float32)
    got = to_host(dmlops.slice_grad(to_device(backend, g), [4, 4], [0, 0], [4, 4], [2, 2]))
    want = np.array([[1, 0, 3, 0], [0, 0, 0, 0], [9, 0, 11, 0], [0, 0, 0, 0]], np.float32)
    np.testing.assert_array_equal(got, want)


def test_inverts_the_seed_slice1_with_negative_strides(backend: str) -> None:
    a = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    window = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])
    y = dmlops.slice1(a, *window)
    np.testing.assert_array_equal(y.reshape(2, 2), [[14, 16], [6, 8]])
    got = to_host(dmlops.slice_grad(to_device(backend, y), [1, 1, 4, 4], *window))
    want = np.zeros_like(a)
    want[0, 0, 1::2, 1::2] = [[6, 8], [14, 16]]
    np.testing.assert_array_equal(got, want)


RULES = [
    (
        SliceGradDesc(_t(2, 2), _t(4, 4), [0, 0], [4, 4], [2, 0]),
        r"InputWindowStrides\[1\] is 0: strides may not be 0",
    ),
    (
        SliceGradDesc(_t(2, 2), _t(4, 4), [0, 0], [4, 4], [2]),
        "DimensionCount is 2: InputWindowStrides has 1",
    ),
    (SliceGradDesc(_t(2, 2), _t(4, 4), [0, -1], [4, 4], [2, 2]), r"InputWindowOffsets\[1\] is -1"),
    (SliceGradDesc(_t(2, 2), _t(4, 4), [0, 0], [4, 0], [2, 2]), r"InputWindowSizes\[1\] is 0"),
    (
        SliceGradDesc(_t(2, 2), _t(4, 4), [1, 0], [4, 4], [2, 2]),
        r"InputWindowOffsets\[0\] is 1: .*exceeds OutputGradientTensor.Sizes\[0\] 4",
    ),
    (
        SliceGradDesc(_t(3, 2), _t(4, 4), [0, 0], [4, 4], [2, 2]),
        r"InputGradientTensor.Sizes\[0\] is 3: must be at most MaxCopiedElements\[0\]",
    ),
    (
        SliceGradDesc(_t(2, 2, dt=DataType.INT32), _t(4, 4), [0, 0], [4, 4], [2, 2]),
        "DataType is INT32: must equal",
    ),
    (
        SliceGradDesc(_t(2, 2), _t(1, 4, 4), [0, 0], [4, 4], [2, 2]),
        "InputGradientTensor.DimensionCount is 2: must equal OutputGradientTensor",
    ),
    (SliceGradDesc(_t(*[1] * 9), _t(*[1] * 9), [0] * 9, [1] * 9, [1] * 9), "DimensionCount is 9"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_each_rule_fires(desc: SliceGradDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message) as info:
        desc.validate(FeatureLevel.newest())
    assert str(info.value).startswith("SLICE_GRAD.")


def test_feature_levels() -> None:
    ok = SliceGradDesc(_t(2, 2), _t(4, 4), [0, 0], [4, 4], [2, 2])
    ok.validate("3_0")
    with pytest.raises(
        UnsupportedFeatureLevelError, match="SLICE_GRAD needs DML_FEATURE_LEVEL_3_0"
    ):
        ok.validate("2_1")
    wide = SliceGradDesc(
        _t(2, 2, dt=DataType.INT64), _t(4, 4, dt=DataType.INT64), [0, 0], [4, 4], [2, 2]
    )
    wide.validate("4_1")
    with pytest.raises(UnsupportedFeatureLevelError, match="INT64 need DML_FEATURE_LEVEL_4_1"):
        wide.validate("3_0")
    eight = SliceGradDesc(_t(*[1] * 8), _t(*[2] * 8), [0] * 8, [2] * 8, [-1] * 8)
    eight.validate("3_0")


def test_functional_checks_out_shape_and_leaves_a_bad_out_untouched() -> None:
    g = np.ones((2, 2), np.float32)
    out = np.full((4, 4), 7, np.float32)
    with pytest.raises(DmlError, match="output_sizes"):
        dmlops.slice_grad(g, [4, 5], [0, 0], [4, 4], [2, 2], out=out)
    with pytest.raises(DmlError, match="InputWindowStrides"):
        dmlops.slice_grad(g, [4, 4], [0, 0], [4, 4], [2, 0], out=out)
    assert (out == 7).all()
    dmlops.slice_grad(g, [4, 4], [0, 0], [4, 4], [2, 2], out=out)
    assert out.sum() == 4 and (out[::2, ::2] == 1).all()


def test_an_empty_window_gives_zeros(backend: str) -> None:
    # the gradient of a slice that took nothing (numpy's x[:, 1:1]): SLICE_GRAD of an empty
    # window, which DirectML's tensors cannot describe, is the output's zeros
    g = np.zeros((2, 0, 3), np.float16)
    got = to_host(
        dmlops.slice_grad(to_device(backend, g), [2, 4, 3], [0, 1, 0], [2, 0, 3], [1, 1, 1])
    )
    assert got.shape == (2, 4, 3) and got.dtype == np.float16
    assert (got.view(np.uint16) == 0).all()  # +0.0, every bit
    out = to_device(backend, np.full((2, 4, 3), 7, np.float16))
    dmlops.slice_grad(to_device(backend, g), [2, 4, 3], [0, 1, 0], [2, 0, 3], [1, 1, 1], out=out)
    assert (to_host(out).view(np.uint16) == 0).all()


@pytest.mark.parametrize(
    ("gradient", "sizes", "window", "message"),
    [
        ((2, 0), [2, 4], ([0], [2, 0], [1, 1]), r"InputWindowOffsets has 1 entries"),
        ((2, 0), [2, 4], ([0, 0], [2, 0], [1]), r"InputWindowStrides has 1 entries"),
        ((0,), [2, 4], ([0, 0], [2, 0], [1, 1]), r"InputGradientTensor has 1 dimensions"),
    ],
)
def test_an_empty_windows_fields_are_checked(gradient, sizes, window, message) -> None:  # type: ignore[no-untyped-def]
    out = np.full(sizes, 7, np.float32)
    with pytest.raises(DmlError, match=message):
        dmlops.slice_grad(np.zeros(gradient, np.float32), sizes, *window, out=out)
    assert (out == 7).all()


@st.composite
def slice_grad_case(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    out_sizes = draw(shapes())
    offs, wsizes, wstrides, in_sizes = [], [], [], []
    for n in out_sizes:
        off = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - off))
        stride = draw(st.integers(1, 4)) * draw(st.sampled_from([1, -1]))
        offs.append(off)
        wsizes.append(size)
        wstrides.append(stride)
        in_sizes.append(draw(st.integers(1, 1 + (size - 1) // abs(stride))))
    desc = SliceGradDesc(
        draw(tensor(dt, in_sizes)), draw(tensor(dt, out_sizes, output=True)), offs, wsizes, wstrides
    )
    return desc, slice_grad_mapping(offs, wsizes, wstrides, in_sizes, out_sizes)


@given(case=slice_grad_case(), seed=st.integers(0, 2**32 - 1))
def test_device_matches_reference(backend: str, case, seed: int) -> None:  # type: ignore[no-untyped-def]
    desc, (mapping, zeroed) = case
    rng = np.random.default_rng(seed)
    es = desc.data_type.element_size
    ig, og = desc.input_gradient_tensor, desc.output_gradient_tensor
    src = rng.integers(0, 256, ig.total_tensor_size_in_bytes, dtype=np.uint8)
    dst = rng.integers(0, 256, og.total_tensor_size_in_bytes + 8, dtype=np.uint8)
    want = bytearray(dst.tobytes())
    for _, oc, _, ic in mapping:
        s = sum(a * b for a, b in zip(ic, ig.effective_strides)) * es
        d = sum(a * b for a, b in zip(oc, og.effective_strides)) * es
        want[d : d + es] = src.tobytes()[s : s + es]
    for oc in zeroed:
        d = sum(a * b for a, b in zip(oc, og.effective_strides)) * es
        want[d : d + es] = bytes(es)
    op = Device(FeatureLevel.newest(), backend=backend).create_operator(desc)
    out = to_device(backend, dst)
    op.execute([Binding(to_device(backend, src))], [Binding(out)])
    assert to_host(out).tobytes() == bytes(want)


@given(case=slice_grad_case(), seed=st.integers(0, 2**32 - 1))
def test_functional_matches_reference(backend: str, case, seed: int) -> None:  # type: ignore[no-untyped-def]
    desc, (mapping, _zeroed) = case  # zeros: `want` starts as zeros
    dt = desc.data_type.numpy_dtype
    ig, og = desc.input_gradient_tensor, desc.output_gradient_tensor
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 256, int(np.prod(ig.sizes)) * dt.itemsize, dtype=np.uint8).view(dt)
    g = g.reshape(ig.sizes)
    got = to_host(
        dmlops.slice_grad(
            to_device(backend, g),
            og.sizes,
            desc.input_window_offsets,
            desc.input_window_sizes,
            desc.input_window_strides,
        )
    )
    want = np.zeros(og.sizes, dt)
    bits = want.view(f"u{dt.itemsize}")
    for _, oc, _, ic in mapping:
        bits[oc] = g.view(f"u{dt.itemsize}")[ic]
    assert got.shape == tuple(og.sizes)
    assert got.view(f"u{dt.itemsize}").tobytes() == bits.tobytes()


def test_long_zero_rows_and_large_strides(backend: str) -> None:
    """Zero runs longer than a backend's zeroed buffer, and strides wider than the copy."""
    g = np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1
    got = to_host(
        dmlops.slice_grad(to_device(backend, g), [70001, 5], [3, 0], [69990, 5], [-30000, 1])
    )
    want = np.zeros((70001, 5), np.float32)
    want[[69992, 39992, 9992]] = g  # CopyStart 3 + 69990 - 1, then back by 30000
    np.testing.assert_array_equal(got, want)


def test_plan_writes_every_output_element_once() -> None:
    desc = SliceGradDesc(_t(2, 3, 2), _t(5, 9, 4), [1, 0, 1], [4, 9, 3], [-2, 3, 2])
    desc.validate()
    plan = desc.lower()
    assert plan.bytes_written == 5 * 9 * 4 * 4  # zeros and gradient together, no element twice
    assert plan.writes_fills and plan.fills == (bytes(4),)


def test_dxdispatch_model_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from dmlops.cli import main

    model = Path(__file__).resolve().parent.parent / "examples" / "slice_grad.json"
    assert main(["run", str(model)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == "Resource 'backpropagated': 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0"
    args = ["explain", "slice_grad", "--input-sizes", "2,2", "--output-sizes", "4,4"]
    args += ["--window-offsets", "0,0", "--window-sizes", "4,4", "--window-strides=-2,2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "VALID at DML_FEATURE_LEVEL_6_4: DML_OPERATOR_SLICE_GRAD" in text
    assert "OutputGradient[3,0] = InputGradient[0,0]" in text
    assert "OutputGradient[1,1] = 0" in text
    assert main([*args[:-1], "--window-strides=0,2"]) != 0
