"""DIAGONAL_MATRIX1: the page's examples, every rule, the table, every backend, rank and
type against a naive element-by-element loop (spans either way round, with and without an
input), tril / triu against numpy and torch (gradient, torch.compile), ONNX Trilu of data
against onnxruntime in one plan, WebNN triangular, DxDispatch files."""

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
from conftest import to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    Device,
    DiagonalMatrix1Desc,
    DmlError,
    UnsupportedFeatureLevelError,
)

F32 = DataType.FLOAT32
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
PAGE_INPUT = np.array(
    [[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]], np.float32
)


def naive(
    x: np.ndarray | None, sizes: tuple[int, ...], dtype: Any, value: Any, begin: int, end: int
) -> np.ndarray:
    """The page's pseudocode, one element at a time."""
    out = np.empty(sizes, dtype)
    for pos in itertools.product(*(range(n) for n in sizes)):
        top = pos[-1] - pos[-2]
        use = (end >= begin) ^ (top >= begin) ^ (top < end)
        out[pos] = value if use else (x[pos] if x is not None else 0)
    return out


def _run(desc: DiagonalMatrix1Desc, ins: list[np.ndarray], sizes: tuple[int, ...]) -> np.ndarray:
    out = np.full(sizes, -1, desc.output_tensor.data_type.numpy_dtype)
    Device("5_1").create_operator(desc).execute(ins, [out])
    return out


@pytest.mark.parametrize(
    ("source", "value", "begin", "end", "want"),
    [
        (None, 7, 0, 1, np.eye(4, 5) * 7),  # (the page prints ones: an erratum)
        (None, 7, 0, 3, sum(np.eye(4, 5, k) for k in range(3)) * 7),
        (PAGE_INPUT, 0, INT_MIN, 1, np.triu(PAGE_INPUT, 1)),
        (PAGE_INPUT, 0, 1, 0, PAGE_INPUT * np.eye(4, 5)),
    ],
)
def test_page_examples(
    source: np.ndarray | None, value: int, begin: int, end: int, want: np.ndarray
) -> None:
    t = BufferTensorDesc(F32, (4, 5))
    desc = DiagonalMatrix1Desc(None if source is None else t, t, "FLOAT32", value, begin, end)
    got = _run(desc, [] if source is None else [source], (4, 5))
    assert got.tobytes() == want.astype(np.float32).tobytes()


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


RULES = [
    (DiagonalMatrix1Desc(None, _t(F32, 2, 2), None, 1, INT_MAX + 1, 0), r"DiagonalFillBegin is"),
    (DiagonalMatrix1Desc(None, _t(F32, 2, 2), None, 1, 0, INT_MIN - 1), r"DiagonalFillEnd is"),
    (DiagonalMatrix1Desc(None, _t(F32, 2, 2), None, 1, 0.5, 1), r"Begin is 0\.5: not an INT"),  # type: ignore[arg-type]
    (DiagonalMatrix1Desc(None, _t(F32, 2, 2), "INT32", 1), r"ValueDataType is INT32: must equal"),
    (DiagonalMatrix1Desc(None, _t(DataType.UINT8, 2, 2), None, 300), r"Value is 300: not a UINT8"),
    (DiagonalMatrix1Desc(None, _t(DataType.INT8, 2, 2), None, 1.5), r"Value is 1\.5: not an INT8"),
    (
        DiagonalMatrix1Desc(_t(DataType.INT32, 2, 2), _t(F32, 2, 2)),
        r"InputTensor\.DataType is INT32: must equal OutputTensor",
    ),
    (
        DiagonalMatrix1Desc(_t(F32, 1, 2, 2), _t(F32, 2, 2)),
        r"InputTensor\.DimensionCount is 3: must equal",
    ),
    (DiagonalMatrix1Desc(_t(F32, 2, 3), _t(F32, 2, 2)), r"InputTensor\.Sizes is \[2, 3\]"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: DiagonalMatrix1Desc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_the_table() -> None:
    desc = DiagonalMatrix1Desc(None, _t(DataType.FLOAT64, 2, 3, 4, 5))
    desc.validate("5_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_5_1"):
        desc.validate("5_0")
    for sizes in ((5,), (1, 1, 1, 2, 2)):
        with pytest.raises(UnsupportedFeatureLevelError, match=r"supports 2 to 4 dimensions"):
            DiagonalMatrix1Desc(None, _t(F32, *sizes)).validate()


def test_a_failed_call_writes_nothing() -> None:
    out = np.full((2, 2), 5, np.uint8)
    with pytest.raises(DmlError, match=r"Value is 256"):
        dmlops.diagonal_matrix1(None, 0, 1, 256, out=out)
    assert (out == 5).all()


TYPES = [np.float32, np.float16, np.float64, np.int8, np.uint16, np.int64, np.bool_]


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=2, max_size=4),
    begin=st.integers(-7, 7),
    end=st.integers(-7, 7),
    with_input=st.booleans(),
    dtype=st.sampled_from(TYPES),
)
def test_every_backend_rank_and_type_against_a_naive_loop(
    backend: str, sizes: list[int], begin: int, end: int, with_input: bool, dtype: Any
) -> None:
    """The functional call (an input read through a negative stride; a new array or out=
    through its own strides) equals the naive loop bit for bit; -0.0 and NaN payloads kept."""
    shape = tuple(sizes)
    x = np.arange(int(np.prod(shape)) * 2).astype(dtype).reshape(*shape[:-1], 2 * shape[-1])
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[:2] = [-0.0, np.nan]
        x.view(np.uint8)[-1] ^= 1 if np.dtype(dtype) == np.float16 else 0
    view = x[..., ::-2]
    value = True if dtype is np.bool_ else 3
    want = naive(view if with_input else None, shape, dtype, value, begin, end)
    source = to_device(backend, view) if with_input else None
    kwargs: dict[str, Any] = {} if with_input else {"sizes": shape, "dtype": dtype}
    device = None if backend == "numpy" or with_input else backend
    got = to_host(dmlops.diagonal_matrix1(source, begin, end, value, device=device, **kwargs))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    out = to_device(backend, np.full(shape, 1, dtype))
    assert dmlops.diagonal_matrix1(source, begin, end, value, out=out) is out
    assert to_host(out).tobytes() == want.tobytes()


def _vectorised_naive(x: np.ndarray, value: Any, begin: int, end: int) -> np.ndarray:
    """The page's rule over whole index grids (the naive loop's, for matrices too large for
    it; checked against it on a small one)."""
    rows, cols = np.indices(x.shape[-2:])
    top = cols - rows
    use = (end >= begin) ^ (top >= begin) ^ (top < end)
    return np.where(use, np.asarray(value, x.dtype), x)


def _matrix_and_span(most: int, reach: int) -> dict[str, st.SearchStrategy[int]]:
    """Draws of a matrix's height and width (1 to `most`) and a diagonal span's ends (within
    `reach` either side)."""
    side, end = st.integers(1, most), st.integers(-reach, reach)
    return {"height": side, "width": side, "begin": end, "end": end}


@settings(max_examples=25, deadline=None)
@given(
    **_matrix_and_span(100, 110),
    dtype=st.sampled_from([np.float16, np.float32, np.int8, np.float64]),
)
def test_blocks_of_rows_on_every_backend(
    backend: str, height: int, width: int, begin: int, end: int, dtype: Any
) -> None:
    """Matrices of many rows (lowered in blocks of rows: shared columns one box, each row's
    remainder its own), every span and alignment, against the page's rule."""
    x = np.arange(2 * height * width).astype(dtype).reshape(2, height, width)
    want = _vectorised_naive(x, 3, begin, end)
    got = to_host(dmlops.diagonal_matrix1(to_device(backend, x), begin, end, 3))
    assert got.tobytes() == want.tobytes()


def test_the_vectorised_rule_is_the_naive_loop() -> None:
    x = np.arange(2 * 6 * 7, dtype=np.int32).reshape(2, 6, 7)
    for begin, end in itertools.product(range(-8, 9, 3), repeat=2):
        want = naive(x, x.shape, np.int32, 3, begin, end)
        assert _vectorised_naive(x, 3, begin, end).tobytes() == want.tobytes()


def _painted(desc: Any) -> np.ndarray:
    """Each element's source as the descriptor's boxes write it (-1 Value, 0 the input, -2
    zeros), counting the writes: a second write of an element fails."""
    height, width = desc.output_tensor.sizes[-2:]
    painted = np.full((height, width), 9, np.int32)
    for c in desc.logical_copies():
        (y, x), (rows, cols) = c.dst_start[-2:], c.shape[-2:]
        assert (painted[y : y + rows, x : x + cols] == 9).all(), "an element written twice"
        painted[y : y + rows, x : x + cols] = c.src
        if c.src >= 0:
            assert c.src_start == c.dst_start and set(c.src_step) == {1}
    return painted


@settings(max_examples=60, deadline=None)
@given(**_matrix_and_span(300, 320), with_input=st.booleans())
def test_the_boxes_write_each_element_once_from_its_source(
    height: int, width: int, begin: int, end: int, with_input: bool
) -> None:
    """The plain boxes (what graphs, Dask and torch read) cover each element once, from the
    source the page's rule gives; the compact form composes to the same element pairs."""
    t = BufferTensorDesc(F32, [height, width])
    desc = DiagonalMatrix1Desc(t if with_input else None, t, F32, 5, begin, end)
    rows, cols = np.indices((height, width))
    top = cols - rows
    use = (end >= begin) ^ (top >= begin) ^ (top < end)
    want = np.where(use, -1, 0 if with_input else -2)
    np.testing.assert_array_equal(_painted(desc), want)


def test_a_triangle_is_few_copies_mostly_aligned_to_16_bytes() -> None:
    """tril of 1024 x 1024 float16: its plan has n / 32 + 32 copies a side (a box or more a
    row before: each block's remainders of a row repeat down the diagonal), and over 95 %
    of the elements move in boxes whose columns start and end on 16-byte boundaries."""
    t = BufferTensorDesc(DataType.FLOAT16, [1024, 1024])
    desc = DiagonalMatrix1Desc(t, t, DataType.FLOAT16, 0, 1, 2**31 - 1)
    assert len(desc.lower().copies) <= 3 * 10 * 10
    assert len(desc.compact_copies()) < len(desc.logical_copies()) // 4
    aligned = sum(
        c.shape[0] * c.shape[1]
        for c in desc.logical_copies()
        if c.dst_start[1] % 8 == 0 and c.shape[1] % 8 == 0
    )
    assert aligned > 0.95 * 1024 * 1024
    _painted(desc)


@pytest.mark.parametrize(
    ("sizes", "begin", "end"),
    [([1024, 1024], 1, INT_MAX), ([1000, 1000], INT_MIN, 3), ([300, 77], 5, -4),
     ([77, 300], -3, 9), ([5, 4000, 37], 0, 2)],
)  # fmt: skip
def test_no_narrow_column_strips(sizes: list[int], begin: int, end: int) -> None:
    """No box narrower than 16 bytes spans more than 8 rows: a strip of columns down many
    rows reads and writes a 32-byte sector an element (a block's shared columns that would
    leave one at the rows' ends leave each row its own run instead)."""
    t = BufferTensorDesc(DataType.FLOAT16, sizes)
    desc = DiagonalMatrix1Desc(t, t, DataType.FLOAT16, 0, begin, end)
    strips = [c for c in desc.logical_copies() if c.shape[-1] < 8 and c.shape[-2] > 8]
    assert not strips


def test_a_tall_or_wide_stack_plans_in_milliseconds() -> None:
    """A matrix of 4096 rows was a box or more a row (12,000 copies, a third of a second of
    planning); now a few hundred, the rows' remainders repeated boxes."""
    for sizes in ([4096, 4096], [3, 4000, 37], [2, 37, 4000]):
        t = BufferTensorDesc(F32, sizes)
        plan = DiagonalMatrix1Desc(t, t, F32, 7, 0, 2).lower()
        assert len(plan.copies) <= 400


@pytest.mark.parametrize("k", [-9, -2, -1, 0, 1, 3, 9])
def test_tril_and_triu_as_numpy(backend: str, k: int) -> None:
    x = np.arange(2 * 3 * 2 * 4 * 5, dtype=np.int32).reshape(2, 3, 2, 4, 5)  # rank 5: merged
    for fn, want in ((dmlops.tril, np.tril), (dmlops.triu, np.triu)):
        for a in (x, x[0, 0], x[0, :, :, ::-1, :]):
            got = to_host(fn(to_device(backend, a), k))
            assert got.tobytes() == np.ascontiguousarray(want(a, k)).tobytes()
    mask = np.ones((6, 6), bool)
    assert to_host(dmlops.tril(to_device(backend, mask))).tobytes() == np.tril(mask).tobytes()
    with pytest.raises(DmlError, match=r"tril: x has 1 dimensions"):
        dmlops.tril(np.ones(3))
    with pytest.raises(DmlError, match=r"out= with 5 dimensions"):
        dmlops.tril(x, out=np.empty_like(x))


def test_torch_gradient_and_compile() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 4, 5, requires_grad=True)
    y = dmlops.tril(x, 1)
    assert torch.equal(y.detach(), torch.tril(x.detach(), 1))
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad, torch.tril(torch.ones(3, 4, 5), 1))
    compiled = torch.compile(lambda a: dmlops.triu(a, -1) * 2)
    assert torch.equal(compiled(x.detach()), torch.triu(x.detach(), -1) * 2)
    with pytest.raises(DmlError, match=r"sizes and dtype are the input's"):
        dmlops.diagonal_matrix1(x, 0, 1, sizes=[3, 4, 5])


def test_a_generator_without_input_or_sizes_is_refused() -> None:
    with pytest.raises(DmlError, match=r"give an input, sizes or out"):
        dmlops.diagonal_matrix1()
    out = np.zeros((2, 3), np.int16)
    dmlops.diagonal_matrix1(None, -1, 0, 4, out=out)
    assert out.tolist() == [[0, 0, 0], [4, 0, 0]]


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "INT32", "initialValues": list(range(1, 7))},
            "y": {
                "initialValuesDataType": "INT32",
                "initialValues": {"valueCount": 6, "value": 0},
            },
        },
        "dispatchables": {
            "tri": {
                "type": "DML_OPERATOR_DIAGONAL_MATRIX1",
                "desc": {
                    "InputTensor": {"DataType": "INT32", "Sizes": [2, 3]},
                    "OutputTensor": {"DataType": "INT32", "Sizes": [2, 3]},
                    "ValueDataType": "INT32",
                    "Value": 9,
                    "DiagonalFillBegin": 1,
                    "DiagonalFillEnd": 2147483647,
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "tri",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "tri.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("5_1"), lines.append)
    assert lines == ["Resource 'y': 1, 9, 9, 4, 5, 9"]
    with pytest.raises(DmlError, match=r"needs DML_FEATURE_LEVEL_5_1"):
        run_model(load_model(path), Device("5_0"), lines.append)


# -- ONNX and WebNN -------------------------------------------------------------------------


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-4, -1, 0, 2, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_onnx_trilu_of_data_is_one_plan_as_onnxruntime(upper: int, k: int, dtype: Any) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper as h

    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes = [
        h.make_node("Transpose", ["x"], ["xt"], perm=[0, 1, 2, 4, 3]),
        h.make_node("Trilu", ["xt", "k"], ["tri"], upper=upper),
        h.make_node("Concat", ["tri", "xt"], ["y"], axis=1),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", elem, [2, 2, 3, 5, 4])],
        [h.make_tensor_value_info("y", elem, None)],
        [h.make_tensor("k", onnx.TensorProto.INT64, [], [k])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    x = (np.arange(2 * 2 * 3 * 5 * 4) % 7).astype(dtype).reshape(2, 2, 3, 5, 4)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    import dmlops.onnx
    from dmlops.onnx.compiled import CompiledModel

    compiled = dmlops.onnx.compile(model, {"x": x})
    assert isinstance(compiled, CompiledModel)  # one graph: one plan
    got = dmlops.onnx.run(model, {"x": x})
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert np.asarray(got).tobytes() == want.tobytes()


def test_webnn_triangular() -> None:
    from dmlops import webnn

    x = np.arange(2 * 3 * 4 * 5 * 6, dtype=np.float32).reshape(2, 3, 4, 5, 6)
    assert np.array_equal(webnn.triangular(x), np.triu(x))
    assert np.array_equal(webnn.triangular(x, {"upper": False, "diagonal": -2}), np.tril(x, -2))
    with pytest.raises(DmlError, match=r"webnn\.triangular: input has rank 1"):
        webnn.triangular(np.ones(3, np.float32))
    with pytest.raises(DmlError, match=r"options\.upper 1 is not a boolean"):
        webnn.triangular(x, {"upper": 1})
