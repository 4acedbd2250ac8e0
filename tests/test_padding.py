"""PADDING1: its page's four examples, WRAP from 6_4, every rule, and every backend, type,
rank and mode against np.pad (element by element through the tensors' strides)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import (
    Binding,
    DataType,
    Device,
    DmlError,
    FeatureLevel,
    Padding1Desc,
    UnsupportedFeatureLevelError,
)
from dmlops.ops.padding import PaddingMode
from strategies import DATA_TYPES, packed, shapes, tensor, unary_model

F32 = DataType.FLOAT32
PAGE = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
EXPECTED = {
    "CONSTANT": [[9] * 10] + [[9, 9, *r, 9, 9, 9, 9] for r in PAGE.tolist()] + [[9] * 10] * 3,
    "EDGE": [
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        *[[5, 5, 5, 6, 7, 8, 8, 8, 8, 8]] * 4,
    ],
    "REFLECTION": [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4,
    "SYMMETRIC": [
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
    ],
}


_t = packed


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_page_examples(backend: str, mode: str) -> None:
    x = to_device(backend, PAGE.reshape(1, 1, 4, 4))
    got = to_host(dmlops.padding(x, [0, 0, 1, 2], [0, 0, 3, 4], mode, 9))
    np.testing.assert_array_equal(got[0, 0], np.array(EXPECTED[mode], np.float32))


def test_wrap_needs_6_4() -> None:
    x = PAGE.reshape(1, 1, 4, 4)
    got = dmlops.padding(x, [0, 0, 1, 2], [0, 0, 3, 4], "WRAP", feature_level="6_4")
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (0, 0), (1, 3), (2, 4)], "wrap"))
    with pytest.raises(
        UnsupportedFeatureLevelError, match="DML_PADDING_MODE_WRAP needs DML_FEATURE_LEVEL_6_4"
    ):
        dmlops.padding(x, [0, 0, 1, 2], [0, 0, 3, 4], "WRAP", feature_level="6_3")
    # before PADDING1 (5_0) the call is the first PADDING, which has no WRAP
    edge = dmlops.padding(x, [0, 0, 1, 2], [0, 0, 3, 4], "EDGE", feature_level="4_1")
    np.testing.assert_array_equal(edge, np.pad(x, [(0, 0), (0, 0), (1, 3), (2, 4)], "edge"))
    with pytest.raises(DmlError, match=r"PADDING\.PaddingMode is WRAP: PADDING takes CONSTANT"):
        dmlops.padding(x, [0, 0, 1, 2], [0, 0, 3, 4], "WRAP", feature_level="4_1")


RULES = [
    (
        Padding1Desc(_t(2, 3), _t(3, 3), 0, F32, 0, [1, 0], [1, 0]),
        r"OutputTensor.Sizes\[0\] is 3: must be InputTensor.Sizes\[0\] \+ StartPadding\[0\] \+ EndPadding\[0\] = 2 \+ 1 \+ 1 = 4",
    ),
    (
        Padding1Desc(_t(2, 3), _t(4, 3), 0, DataType.INT32, 0, [1, 0], [1, 0]),
        "PaddingValueDataType is INT32: must equal OutputTensor.DataType FLOAT32",
    ),
    (
        Padding1Desc(_t(2, dt=DataType.UINT8), _t(4, dt=DataType.UINT8), 0, None, 300, [1], [1]),
        "PaddingValue is 300: not a UINT8",
    ),
    (
        Padding1Desc(_t(2, 3), _t(4, 3), 0, F32, 0, [1, 0], [1]),
        "DimensionCount is 2: EndPadding has 1",
    ),
    (Padding1Desc(_t(2, 3), _t(4, 3), 0, F32, 0, [1, -1], [1, 1]), r"StartPadding\[1\] is -1"),
    (
        Padding1Desc(_t(2, 3), _t(4, 3, dt=DataType.INT32), 0, F32, 0, [1, 0], [1, 0]),
        "OutputTensor.DataType is INT32: must equal",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_each_rule_fires(desc: Padding1Desc, message: str) -> None:
    with pytest.raises(DmlError, match=message) as info:
        desc.validate(FeatureLevel.newest())
    assert str(info.value).startswith("PADDING1.")


def test_modes_parse_and_bad_ones_are_named() -> None:
    with pytest.raises(DmlError, match="PaddingMode is 'mirror': not a DML_PADDING_MODE"):
        Padding1Desc(_t(2), _t(4), "mirror", None, 0, [1], [1])
    assert (
        Padding1Desc(_t(2), _t(4), "reflect", None, 0, [1], [1]).padding_mode.name == "REFLECTION"
    )


NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}


@st.composite
def padding_case(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    sizes = draw(shapes(max_size=4))
    mode = draw(st.sampled_from(["CONSTANT", *NP_MODES]))
    start = [draw(st.integers(0, 5)) for _ in sizes]
    end = [draw(st.integers(0, 5)) for _ in sizes]
    out = Padding1Desc.output_sizes_for(sizes, start, end)
    assume(math.prod(out) <= 1500)  # wide pads on few dimensions, small tensors
    info = np.iinfo(dt.numpy_dtype) if np.dtype(dt.numpy_dtype).kind in "iu" else None
    value = draw(st.integers(info.min, info.max)) if info else draw(st.floats(-1e4, 1e4, width=16))
    desc = Padding1Desc(
        draw(tensor(dt, sizes)), draw(tensor(dt, out, output=True)), mode, None, value, start, end
    )
    return desc


@given(desc=padding_case(), seed=st.integers(0, 2**32 - 1))
def test_device_matches_np_pad(backend: str, desc: Padding1Desc, seed: int) -> None:
    rng = np.random.default_rng(seed)
    es = desc.data_type.element_size
    inp, out = desc.input_tensor, desc.output_tensor
    src = rng.integers(0, 256, inp.total_tensor_size_in_bytes, dtype=np.uint8)
    dst = rng.integers(0, 256, out.total_tensor_size_in_bytes, dtype=np.uint8)
    unsigned = np.dtype(f"u{es}")
    logical = np.lib.stride_tricks.as_strided(
        src[: src.size // es * es].view(unsigned),
        inp.sizes,
        [s * es for s in inp.effective_strides],
    )
    widths = list(zip(desc.start_padding, desc.end_padding))
    mode = desc.padding_mode.name
    if mode == "CONSTANT":
        fill = np.frombuffer(desc.value_bytes(), unsigned)[0]
        padded = np.pad(logical, widths, "constant", constant_values=fill)
    else:
        padded = np.pad(logical, widths, NP_MODES[mode])
    want = dst.copy()
    view = np.lib.stride_tricks.as_strided(
        want[: want.size // es * es].view(unsigned),
        out.sizes,
        [s * es for s in out.effective_strides],
    )
    view[...] = padded
    buffer = to_device(backend, dst)
    Device(FeatureLevel.newest(), backend=backend).create_operator(desc).execute(
        [Binding(to_device(backend, src))], [Binding(buffer)]
    )
    assert to_host(buffer).tobytes() == want.tobytes()


def test_dxdispatch_and_explain(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from dmlops.cli import main

    desc = {
        "InputTensor": {"DataType": "INT32", "Sizes": [3]},
        "OutputTensor": {"DataType": "INT32", "Sizes": [7]},
        "PaddingMode": "DML_PADDING_MODE_CONSTANT",
        "PaddingValueDataType": "INT32",
        "PaddingValue": -4,
        "DimensionCount": 1,
        "StartPadding": [1],
        "EndPadding": [3],
    }
    model = unary_model("DML_OPERATOR_PADDING1", desc, "INT32", 3, 7)
    path = tmp_path / "pad.json"
    path.write_text(json.dumps(model))
    assert main(["run", str(path), "--feature-level", "5_0"]) == 0
    assert capsys.readouterr().out.strip() == "Resource 'out': -4, 1, 2, 3, -4, -4, -4"
    args = [
        "explain",
        "padding1",
        "--feature-level",
        "5_0",
        "--input-sizes",
        "3",
        "--start-padding",
        "1",
    ]
    assert main([*args, "--end-padding", "2", "--padding-value", "7"]) == 0
    text = capsys.readouterr().out
    assert "Output[0] = 7" in text and "Output[1] = Input[0]" in text


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(list(PaddingMode)),
    size=st.integers(1, 40),
    start=st.integers(0, 90),
    end=st.integers(0, 90),
)
def test_padding_runs_read_what_each_position_reads(
    mode: PaddingMode, size: int, start: int, end: int
) -> None:
    """A dimension's runs (the input's middle taken as one, the padding walked) give every
    output position the input index the mode names, in order, with nothing left over."""
    from dmlops.ops.padding import padding_runs

    spelled: list[int | None] = []
    for first, count, at, step in padding_runs(mode, size, start, end):
        assert first == len(spelled) and count >= 1
        spelled += [None if at is None else at + step * k for k in range(count)]
    n = size
    for o, got in enumerate(spelled):
        i = o - start
        if 0 <= i < n:
            want: int | None = i
        elif mode is PaddingMode.CONSTANT:
            want = None
        elif mode is PaddingMode.EDGE or n == 1:
            want = min(max(i, 0), n - 1)
        elif mode is PaddingMode.REFLECTION:
            j = i % (2 * (n - 1))
            want = j if j < n else 2 * (n - 1) - j
        elif mode is PaddingMode.SYMMETRIC:
            j = i % (2 * n)
            want = j if j < n else 2 * n - 1 - j
        else:
            want = i % n
        assert got == want, (o, got, want)
    assert len(spelled) == start + size + end
