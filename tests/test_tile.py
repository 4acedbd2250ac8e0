"""TILE: the page's example, every rule, the feature-level table, and every backend, type
and rank against np.tile (element by element through the tensors' strides)."""

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
    TileDesc,
    UnsupportedFeatureLevelError,
)
from strategies import DATA_TYPES, packed, shapes, tensor, unary_model

F32 = DataType.FLOAT32


_t = packed


def test_page_example(backend: str) -> None:
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 2, 3)
    got = to_host(dmlops.tile(to_device(backend, x), [1, 1, 3, 3]))
    np.testing.assert_array_equal(got, np.tile(x, (1, 1, 3, 3)))
    assert got[0, 0, 0].tolist() == [1, 2, 3, 1, 2, 3, 1, 2, 3]


RULES = [
    (TileDesc(_t(1, 2), _t(1, 2), [1, 0]), r"TILE.Repeats\[1\] is 0: must be larger than 0"),
    (
        TileDesc(_t(1, 2), _t(1, 4), [1, 2], repeats_count=3),
        "TILE.RepeatsCount is 3: Repeats has 2",
    ),
    (
        TileDesc(_t(1, 2), _t(1, 2), [1]),
        "TILE.RepeatsCount is 1: must equal InputTensor.DimensionCount 2",
    ),
    (
        TileDesc(_t(2, 2), _t(2, 5), [1, 2]),
        r"TILE.OutputTensor.Sizes\[1\] is 5: must be InputTensor.Sizes\[1\] \* Repeats\[1\] = 2 \* 2 = 4",
    ),
    (
        TileDesc(_t(2, 2), _t(2, 4, dt=DataType.INT32), [1, 2]),
        "TILE.OutputTensor.DataType is INT32: must equal",
    ),
    (TileDesc(_t(2, 2), _t(2, 4), [1, -2]), r"TILE.Repeats\[1\] is -2"),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_each_rule_fires(desc: TileDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate(FeatureLevel.newest())


def test_feature_level_table() -> None:
    four = TileDesc(_t(1, 1, 2, 3), _t(1, 1, 4, 3), [1, 1, 2, 1])
    four.validate("1_0")
    ints = TileDesc(
        _t(1, 1, 2, 3, dt=DataType.INT8), _t(1, 1, 4, 3, dt=DataType.INT8), [1, 1, 2, 1]
    )
    with pytest.raises(UnsupportedFeatureLevelError, match="INT8 need DML_FEATURE_LEVEL_2_1"):
        ints.validate("1_0")
    ints.validate("2_1")
    six = TileDesc(_t(1, 1, 1, 1, 2, 3), _t(1, 1, 1, 1, 4, 3), [1, 1, 1, 1, 2, 1])
    with pytest.raises(
        UnsupportedFeatureLevelError, match="6 dimensions of FLOAT32 need DML_FEATURE_LEVEL_3_1"
    ):
        six.validate("3_0")
    six.validate("3_1")
    wide = TileDesc(_t(2, dt=DataType.INT64), _t(4, dt=DataType.INT64), [2])
    wide.validate("4_1")
    double = TileDesc(_t(2, dt=DataType.FLOAT64), _t(4, dt=DataType.FLOAT64), [2])
    with pytest.raises(
        UnsupportedFeatureLevelError, match="no feature level supports 1 dimensions of FLOAT64"
    ):
        double.validate("6_4")


def test_any_number_of_repeats_is_one_copy_and_eight_dimensions_at_most() -> None:
    plan = TileDesc(_t(3, 4), _t(3000, 8), [1000, 2]).lower()
    assert len(plan.copies) == 1 and plan.bytes_written == 3000 * 8 * 4
    i16 = DataType.INT16
    many = TileDesc(_t(*[2] * 8, dt=i16), _t(*[4] * 8, dt=i16), [2] * 8)
    many.validate()
    plan = many.lower()
    assert all(len(c.shape) <= 8 for c in plan.copies)
    x = np.arange(256, dtype=np.int16).reshape([2] * 8)
    out = np.empty([4] * 8, np.int16)
    Device().create_operator(many).execute([x], [out])
    np.testing.assert_array_equal(out, np.tile(x, [2] * 8))


@st.composite
def tile_case(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from([d for d in DATA_TYPES if d is not DataType.FLOAT64]))
    sizes = draw(shapes(max_size=3))
    repeats = [draw(st.integers(1, 3)) for _ in sizes]
    out = TileDesc.output_sizes_for(sizes, repeats)
    return TileDesc(draw(tensor(dt, sizes)), draw(tensor(dt, out, output=True)), repeats)


@given(desc=tile_case(), seed=st.integers(0, 2**32 - 1))
def test_device_matches_np_tile(backend: str, desc: TileDesc, seed: int) -> None:
    rng = np.random.default_rng(seed)
    es = desc.data_type.element_size
    inp, out = desc.input_tensor, desc.output_tensor
    src = rng.integers(0, 256, inp.total_tensor_size_in_bytes, dtype=np.uint8)
    dst = rng.integers(0, 256, out.total_tensor_size_in_bytes, dtype=np.uint8)
    unsigned = f"u{es}"
    logical = np.lib.stride_tricks.as_strided(
        src[: src.size // es * es].view(unsigned),
        inp.sizes,
        [s * es for s in inp.effective_strides],
    )
    want_logical = np.tile(logical, desc.repeats)
    want = dst.copy()
    view = np.lib.stride_tricks.as_strided(
        want[: want.size // es * es].view(unsigned),
        out.sizes,
        [s * es for s in out.effective_strides],
    )
    view[...] = want_logical
    buffer = to_device(backend, dst)
    Device(backend=backend).create_operator(desc).execute(
        [Binding(to_device(backend, src))], [Binding(buffer)]
    )
    assert to_host(buffer).tobytes() == want.tobytes()


def test_functional_and_dxdispatch(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from dmlops.cli import main

    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    np.testing.assert_array_equal(dmlops.tile(x.T, [2, 1]), np.tile(x.T, (2, 1)))
    out = np.zeros((4, 6), np.uint8)
    dmlops.tile(x, [2, 2], out=out)
    np.testing.assert_array_equal(out, np.tile(x, (2, 2)))
    assert dmlops.tile(x, [2, 0]).shape == (4, 0)  # numpy's empty result above the Device API
    with pytest.raises(DmlError, match=r"TILE\.Repeats"):
        dmlops.tile(x, [2, -1])
    desc = {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 3]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 6]},
        "RepeatsCount": 4,
        "Repeats": [1, 1, 1, 2],
    }
    model = unary_model("DML_OPERATOR_TILE", desc, "FLOAT32", 6, 12)
    path = tmp_path / "tile.json"
    path.write_text(json.dumps(model))
    assert main(["run", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "Resource 'out': 1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6"


def test_a_0d_array_with_no_repeats_is_itself_copied(backend: str) -> None:
    """numpy.tile and torch.tile answer a 0-D array for a 0-D array and no repeats."""
    x = to_device(backend, np.array(-2.5, np.float32))
    host = to_host(dmlops.tile(x, []))
    assert host.shape == () and host.tobytes() == to_host(x).tobytes()
    out = to_device(backend, np.array(1.0, np.float32))
    assert dmlops.tile(x, [], out=out) is out
    assert to_host(out).tobytes() == to_host(x).tobytes()
    with pytest.raises(DmlError, match="TILE"):
        dmlops.tile(to_device(backend, np.ones(3, np.float32)), [])
