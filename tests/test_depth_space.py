"""DEPTH_TO_SPACE1 and SPACE_TO_DEPTH1: the reference pages' examples, every rule, any layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import (
    BufferTensorDesc,
    DataType,
    DepthToSpace1Desc,
    Device,
    FeatureLevel,
    InvalidDescriptorError,
    SpaceToDepth1Desc,
    UnsupportedFeatureLevelError,
)
from strategies import DATA_TYPES

U32 = DataType.UINT32
# the pages' input: channel k holds 9k + (0..5)
DEEP = (
    np.arange(8, dtype=np.uint32)[:, None, None] * 9 + np.arange(6, dtype=np.uint32).reshape(2, 3)
)[None]
DCR = np.array(
    [[[[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
      [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]]]],
    np.uint32,
)  # fmt: skip
CRD = np.array(
    [[[[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
      [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]]]],
    np.uint32,
)  # fmt: skip


@pytest.mark.parametrize(
    "order, space",
    [
        ("DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW", DCR),
        ("DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH", CRD),
    ],
)
def test_the_reference_pages_examples(backend: str, order: str, space: np.ndarray) -> None:
    got = to_host(dmlops.depth_to_space(to_device(backend, DEEP), 2, order))
    np.testing.assert_array_equal(got, space)
    back = to_host(dmlops.space_to_depth(to_device(backend, space), 2, order))
    np.testing.assert_array_equal(back, DEEP)
    # and through the device API with DirectML's own descriptors
    for cls, x, want in ((DepthToSpace1Desc, DEEP, space), (SpaceToDepth1Desc, space, DEEP)):
        desc = cls(BufferTensorDesc(U32, x.shape), BufferTensorDesc(U32, want.shape), 2, order)
        out = to_device(backend, np.zeros(want.size, np.uint32))
        Device(FeatureLevel.FL_2_1, backend=backend).create_operator(desc).execute(
            [to_device(backend, x)], [out]
        )
        np.testing.assert_array_equal(to_host(out).reshape(want.shape), want)


def _d(*sizes: int, dt: DataType = U32) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


@pytest.mark.parametrize(
    "desc, match, level, kind",
    [
        (
            DepthToSpace1Desc(_d(1, 8, 2, 3), _d(1, 2, 4, 6), 0),
            r"^DEPTH_TO_SPACE1\.BlockSize is 0: must be at least 1$",
            "4_1",
            InvalidDescriptorError,
        ),
        (
            DepthToSpace1Desc(_d(1, 6, 2, 3), _d(1, 1, 4, 6), 2),
            r"^DEPTH_TO_SPACE1\.InputTensor\.Sizes\[1\] is 6: InputChannelCount must be a multiple of BlockSize \* BlockSize = 4$",
            "4_1",
            InvalidDescriptorError,
        ),
        (
            DepthToSpace1Desc(_d(1, 8, 2, 3), _d(1, 2, 4, 5), 2),
            r"^DEPTH_TO_SPACE1\.OutputTensor\.Sizes\[3\] is 5: must be 6",
            "4_1",
            InvalidDescriptorError,
        ),
        (
            SpaceToDepth1Desc(_d(1, 2, 4, 5), _d(1, 8, 2, 2), 2),
            r"^SPACE_TO_DEPTH1\.InputTensor\.Sizes\[3\] is 5: must be a multiple of BlockSize 2$",
            "4_1",
            InvalidDescriptorError,
        ),
        (
            SpaceToDepth1Desc(_d(1, 2, 4, 6), _d(1, 8, 2, 3, dt=DataType.INT32), 2),
            r"^SPACE_TO_DEPTH1\.OutputTensor\.DataType is INT32: must equal InputTensor\.DataType UINT32$",
            "4_1",
            InvalidDescriptorError,
        ),
        (
            DepthToSpace1Desc(_d(1, 8, 2, 3), _d(1, 2, 4, 6), 2),
            r"^DEPTH_TO_SPACE1 needs DML_FEATURE_LEVEL_2_1: the feature level is DML_FEATURE_LEVEL_2_0$",
            "2_0",
            UnsupportedFeatureLevelError,
        ),
        (
            DepthToSpace1Desc(_d(8, 2, 3), _d(2, 4, 6), 2),
            r"DimensionCount is 3: DML_FEATURE_LEVEL_2_1 and above supports 4 dimensions",
            "4_1",
            UnsupportedFeatureLevelError,
        ),
        (
            DepthToSpace1Desc(
                _d(1, 8, 2, 3, dt=DataType.FLOAT64), _d(1, 2, 4, 6, dt=DataType.FLOAT64), 2
            ),
            r"DataType is FLOAT64: .*; no feature level supports 4 dimensions of FLOAT64",
            "6_4",
            UnsupportedFeatureLevelError,
        ),
    ],
)
def test_every_rule_fires(desc, match: str, level: str, kind) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(kind, match=match):
        desc.validate(level)


def test_order_and_block_size_fields() -> None:
    with pytest.raises(
        InvalidDescriptorError,
        match=r"^DEPTH_TO_SPACE1\.Order is 2: must be DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW \(0\)",
    ):
        DepthToSpace1Desc(_d(1, 8, 2, 3), _d(1, 2, 4, 6), 2, 2)
    with pytest.raises(
        InvalidDescriptorError,
        match=r"^SPACE_TO_DEPTH1\.BlockSize\[0\] is 2\.0: expected an integer",
    ):
        dmlops.space_to_depth(DCR, 2.0)  # type: ignore[arg-type]


@given(
    dt=st.sampled_from([t for t in DATA_TYPES if t.element_size < 8]),
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    b=st.integers(1, 3),
    order=st.sampled_from(["DCR", "CRD"]),
    view=st.sampled_from(["packed", "transposed", "reversed"]),
    seed=st.integers(0, 2**31),
)
def test_any_layout_matches_numpy(backend: str, dt, n, c, h, w, b, order, view, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    deep = (
        rng.integers(0, 256, n * c * b * b * h * w * dt.element_size, dtype=np.uint8)
        .view(dt.numpy_dtype)
        .reshape(n, c * b * b, h, w)
    )
    if view == "transposed":
        deep = np.ascontiguousarray(deep.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    elif view == "reversed":
        deep = np.ascontiguousarray(deep[:, :, ::-1])[:, :, ::-1]
    if order == "DCR":
        want = (
            deep.reshape(n, b, b, c, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c, h * b, w * b)
        )
    else:
        want = (
            deep.reshape(n, c, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, h * b, w * b)
        )
    got = to_host(dmlops.depth_to_space(to_device(backend, deep), b, order))
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    back = to_host(dmlops.space_to_depth(to_device(backend, np.ascontiguousarray(want)), b, order))
    assert back.tobytes() == np.ascontiguousarray(deep).tobytes()


def test_dxdispatch_model_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from dmlops.cli import main

    model = Path(__file__).resolve().parent.parent / "examples" / "depth_to_space1_dcr.json"
    assert main(["run", str(model)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == "Resource 'output': " + ", ".join(map(str, DCR.ravel()))
    assert main(["explain", "space_to_depth1", "--input-sizes", "1,2,4,6", "--order", "CRD"]) == 0
    out = capsys.readouterr().out
    assert "VALID at DML_FEATURE_LEVEL_6_4: DML_OPERATOR_SPACE_TO_DEPTH1" in out
    assert "Output[0,1,0,0] = Input[0,0,0,1]" in out  # CRD: channel 1 is column 1 of block (0, 0)


@pytest.mark.parametrize("order", ["DCR", "CRD"])
def test_in_a_graph_and_from_onnx(order: str) -> None:
    x = np.random.default_rng(3).standard_normal((2, 12, 3, 5), dtype=np.float32)
    g = dmlops.Graph()
    xi = g.input(x)
    y = g.depth_to_space(
        g.slice1(xi, [0, 0, 0, 0], [2, 12, 3, 5], [1, 1, -1, 1]), 2, order, name="up"
    )
    op = g.compile([y])
    out = np.empty((2, 3, 6, 10), np.float32)
    op.execute([x], [out.reshape(-1)])
    np.testing.assert_array_equal(
        out, dmlops.depth_to_space(np.ascontiguousarray(x[:, :, ::-1]), 2, order)
    )
    assert op.plan.bytes_written == out.nbytes
    z = g.space_to_depth(xi, 1, order)  # block size 1: a copy
    with pytest.raises(
        dmlops.DmlError,
        match=r"node 3 \(SPACE_TO_DEPTH1\)\.InputTensor\.Sizes\[2\] is 3: must be a multiple of BlockSize 2",
    ):
        g.space_to_depth(xi, 2, order)
    assert z.sizes == x.shape


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64])
def test_a_graph_that_carries_types_takes_what_the_table_lacks(dtype) -> None:  # type: ignore[no-untyped-def]
    """DEPTH_TO_SPACE1's table has no 8-byte types: a default graph refuses them as DirectML
    would, naming the type; a graph built with carry_types (as the ONNX lowering builds
    its graphs) validates the node with a carrier and moves whole elements, bit for bit."""
    x = (np.arange(2 * 8 * 3 * 2) - 7).astype(dtype).reshape(2, 8, 3, 2)
    x.view(np.uint64)[0, 0, 0, 0] = 0x7FF0000000000001  # a NaN payload
    refusing = dmlops.Graph()
    with pytest.raises(dmlops.DmlError, match=x.dtype.name.upper()):
        refusing.depth_to_space(refusing.input(x), 2, "CRD")
    g = dmlops.Graph(carry_types=True)
    xi = g.input(x)
    y = g.space_to_depth(g.depth_to_space(xi, 2, "CRD"), 2, "DCR")
    op = g.compile([y])
    out = np.empty((2, 8, 3, 2), dtype)
    op.execute([x], [out.reshape(-1)])
    n, c, h, w = x.shape
    want = (
        x.reshape(n, c // 4, 2, 2, h, w)
        .transpose(0, 1, 4, 2, 5, 3)
        .reshape(n, c // 4, h * 2, w * 2)
    )
    want = want.reshape(n, c // 4, h, 2, w, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c, h, w)
    assert out.view(np.uint64).tolist() == want.view(np.uint64).tolist()
