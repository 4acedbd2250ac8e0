"""RESAMPLE, RESAMPLE1, RESAMPLE2 (nearest): every rule, the tables, every backend, rank and
type against a naive element-by-element loop of the pages' coordinate equation, the axis
maps' segments, DxDispatch files, graphs, torch's gradient and compile, and ONNX Resize of
every nearest mode, coordinate transformation, scale and size against onnxruntime."""

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
    DmlError,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    UnsupportedFeatureLevelError,
)
from dmlops.ops.resample import nearest_map, progressions, segments

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def naive(
    x: np.ndarray,
    out_sizes: tuple[int, ...],
    scales: list[float],
    input_offsets: list[float],
    output_offsets: list[float],
    up: bool,
) -> np.ndarray:
    """RESAMPLE2's equation, one element at a time: input x = (output x - OutputPixelOffset)
    / Scale - InputPixelOffset in float32, rounded up or down, clamped."""
    out = np.empty(out_sizes, x.dtype)
    f = np.float32
    for pos in itertools.product(*(range(n) for n in out_sizes)):
        source = []
        for d, o in enumerate(pos):
            v = (f(o) - f(output_offsets[d])) / f(scales[d]) - f(input_offsets[d])
            i = int(np.ceil(v) if up else np.floor(v))
            source.append(min(max(i, 0), x.shape[d] - 1))
        out[pos] = x[tuple(source)]
    return out


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


RULES = [
    (ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F16, 1, 1, 4, 4), [1, 1, 2, 2]), r"DataType is FLOAT16"),
    (ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 4, 4), [1, 1, 2]), r"DimensionCount is 3"),
    (ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 2, 2]), r"ScaleCount is 3: must"),
    (
        ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, 2, 2], scale_count=3),
        r"ScaleCount is 3: must equal the tensors' DimensionCount 4",
    ),
    (ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, 0, 2]), r"Scales\[2\] is 0\.0"),
    (
        ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, -2, 2]),
        r"Scales\[2\] is -2\.0: must be greater than 0",
    ),
    (
        ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, float("nan"), 2]),
        r"Scales\[2\] is nan: must be a finite FLOAT",
    ),
    (
        ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, 1e39, 2]),
        r"Scales\[2\] is 1e\+39: must be a finite FLOAT",
    ),
    (
        ResampleDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [1, 1, 2, 2], "LINEAR"),
        r"RESAMPLE\.InterpolationMode is DML_INTERPOLATION_MODE_LINEAR: interpolation",
    ),
    (
        Resample1Desc(_t(F32, 2, 2), _t(F32, 4, 4), [2, 2], [0.5], [-0.5, -0.5]),
        r"RESAMPLE1\.InputPixelOffsets has 1 entries: DimensionCount is 2",
    ),
    (
        Resample1Desc(_t(F32, 2, 2), _t(F32, 4, 4), [2, 2], [0.5, 0.5], [-0.5, float("inf")]),
        r"OutputPixelOffsets\[1\] is inf",
    ),
    (
        Resample2Desc(_t(F32, 2, 2), _t(F32, 4, 4), [2, 2], [0, 0], [0, 0], 0, "LINEAR"),
        r"RESAMPLE2\.InterpolationMode is DML_INTERPOLATION_MODE_LINEAR",
    ),
    (
        Resample2Desc(_t(F32, 2, 2), _t(F32, 4, 4), [2, 2], [0, 0], [0, 0], 0, 0, 3),
        r"RESAMPLE2\.DimensionCount is 3",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: Any, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_fields_are_refused_when_built() -> None:
    with pytest.raises(DmlError, match=r"RoundingDirection is 2: must be DML_AXIS_DIRECTION"):
        Resample2Desc(_t(F32, 2), _t(F32, 4), [2], [0], [0], 2)
    with pytest.raises(DmlError, match=r"InterpolationMode is 'CUBIC'"):
        ResampleDesc(_t(F32, 2), _t(F32, 4), [2], "CUBIC")
    with pytest.raises(DmlError, match=r"Scales is \['a'\]: not an array of FLOATs"):
        ResampleDesc(_t(F32, 2), _t(F32, 4), ["a"])  # type: ignore[list-item]


def test_the_tables() -> None:
    four, one = (_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 3, 3)), (_t(F32, 2), _t(F32, 3))
    ResampleDesc(*four, [1, 1, 1.5, 1.5]).validate("2_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"supports 4 dimensions"):
        ResampleDesc(*one, [1.5]).validate("5_0")
    ResampleDesc(*one, [1.5]).validate("5_1")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_2_1"):
        Resample1Desc(*four, [1, 1, 1.5, 1.5], [0.5] * 4, [-0.5] * 4).validate("2_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"needs DML_FEATURE_LEVEL_5_1"):
        Resample2Desc(*one, [1.5], [0.5], [-0.5]).validate("5_0")
    u8 = (_t(DataType.UINT8, 2), _t(DataType.UINT8, 3))
    with pytest.raises(UnsupportedFeatureLevelError, match=r"UINT8 need DML_FEATURE_LEVEL_6_2"):
        ResampleDesc(*u8, [1.5]).validate("6_1")
    ResampleDesc(*u8, [1.5]).validate("6_2")
    Resample1Desc(*u8, [1.5], [0.5], [-0.5]).validate("6_2")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"UINT8"):
        Resample2Desc(*u8, [1.5], [0.5], [-0.5]).validate()
    with pytest.raises(UnsupportedFeatureLevelError, match=r"supports 1 to 4 dimensions"):
        Resample2Desc(
            _t(F32, 1, 1, 1, 1, 2), _t(F32, 1, 1, 1, 1, 3), [1] * 5, [0] * 5, [0] * 5
        ).validate()


@pytest.mark.parametrize(
    ("size_in", "size_out"),
    [(4, 8), (3, 7), (224, 300), (300, 224), (1000, 1337), (7, 1), (1, 5), (5, 5), (9, 2)],
)
@pytest.mark.parametrize("offsets", [(0.0, -0.5), (0.5, -0.5), (1.0, -0.5), (0.25, 0.5)])
def test_segments_and_progressions_cover_each_map_once(
    size_in: int, size_out: int, offsets: tuple[float, float]
) -> None:
    """A map cut into periodic segments, and their phases, give every position its index
    once (and few pieces: a scale of p/q never needs more than the map's own runs)."""
    for direction in (0, 1):
        index_map = nearest_map(size_in, size_out, size_out / size_in, *offsets, direction)  # type: ignore[arg-type]
        got = np.full(size_out, -1)
        for start, step, src, src_step, count in progressions(index_map):
            positions = start + step * np.arange(count)
            assert (got[positions] == -1).all()
            got[positions] = src + src_step * np.arange(count)
        assert (got == index_map).all()
        assert sum(len(s.sources) for s in segments(index_map)) <= max(size_out // 8, 16) + 64


def _functional(backend: str, version: int, x: Any, out: tuple[int, ...], scales: list[float],
                ins: list[float], outs: list[float], up: bool) -> Any:  # fmt: skip
    if version == 0:
        return dmlops.resample(x, scales, sizes=out)
    if version == 1:
        return dmlops.resample(
            x, scales, sizes=out, input_pixel_offsets=ins, output_pixel_offsets=outs
        )
    direction = "INCREASING" if up else "DECREASING"
    return dmlops.resample(
        x,
        scales,
        sizes=out,
        input_pixel_offsets=ins,
        output_pixel_offsets=outs,
        rounding_direction=direction,
    )


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    version=st.sampled_from([0, 1, 2]),
    dtype=st.sampled_from([np.float32, np.float16, np.int64, np.uint8, np.int32]),
)
def test_every_backend_rank_and_type_against_a_naive_loop(
    backend: str, data: st.DataObject, version: int, dtype: Any
) -> None:
    rank = data.draw(st.integers(1, 4))
    sizes = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    out = tuple(data.draw(st.integers(1, 9)) for _ in sizes)
    scales = [data.draw(st.sampled_from([0.4, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])) for _ in sizes]
    shifts = st.sampled_from([0.0, 0.5, -0.5, 0.25])
    ins = [data.draw(shifts) for _ in sizes]
    outs = [data.draw(shifts) for _ in sizes]
    up = data.draw(st.booleans())
    x = np.arange(int(np.prod(sizes)) * 2).astype(dtype).reshape(*sizes[:-1], 2 * sizes[-1])
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[:2] = [-0.0, np.nan]
    view = x[..., ::-2]
    if version == 0:
        want = naive(view, out, scales, [0.0] * rank, [-0.5] * rank, False)
    elif version == 1:
        want = naive(view, out, scales, [np.float32(a) - np.float32(0.5) for a in ins], outs, False)
    else:
        want = naive(view, out, scales, ins, outs, up)
    if version == 2 and np.dtype(dtype).itemsize == 1:  # RESAMPLE2's table: no one-byte type
        with pytest.raises(UnsupportedFeatureLevelError, match=r"RESAMPLE2\.InputTensor"):
            _functional(backend, version, to_device(backend, view), out, scales, ins, outs, up)
        return
    got = to_host(
        _functional(backend, version, to_device(backend, view), out, scales, ins, outs, up)
    )
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_device_api_and_a_graph_agree_with_the_loop() -> None:
    x = np.arange(2 * 3 * 5 * 7, dtype=np.float32).reshape(2, 3, 5, 7)
    out, scales = (2, 4, 9, 4), [1.0, 1.5, 1.8, 0.6]
    desc = Resample2Desc(_t(F32, *x.shape), _t(F32, *out), scales, [0.5] * 4, [-0.5] * 4, 0)
    y = np.zeros(out, np.float32)
    Device("5_1").create_operator(desc).execute([x], [y])
    want = naive(x, out, scales, [0.5] * 4, [-0.5] * 4, True)
    assert y.tobytes() == want.tobytes()
    g = dmlops.Graph()
    a = g.input(x)
    r = g.resample2(a, out, scales, [0.5] * 4, [-0.5] * 4, "INCREASING")
    joined = g.join([r, g.slice1(r, [0, 1, 0, 0], [2, 3, 9, 4], [1, -1, 1, 1], [2, 3, 9, 4])], 1)
    op = g.compile([joined])
    z = np.zeros((2, 7, 9, 4), np.float32)
    op.execute([x], [z.reshape(-1)])
    assert z.tobytes() == np.concatenate([want, want[:, 3:0:-1]], 1).tobytes()
    assert len(op.plan.copies) <= 2 * 4 * 3 * 4  # one pass: no intermediate


def test_torch_gradient_and_compile() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 3, 5, 7, requires_grad=True)
    y = dmlops.resample(x, [1, 1, 1.5, 0.5])
    want = torch.from_numpy(dmlops.resample(x.detach().numpy(), [1, 1, 1.5, 0.5]))
    assert torch.equal(y.detach(), want)
    y.backward(torch.ones_like(y))
    assert float(x.grad.sum()) == y.numel()
    for size in [(9, 15), (4, 7), (12, 20)]:  # torch's "nearest" is RESAMPLE2 at offsets 0, down
        z = torch.randn(1, 1, 6, 10)
        want = torch.nn.functional.interpolate(z, size=size, mode="nearest")
        got = dmlops.resample(
            z,
            [1, 1, size[0] / 6, size[1] / 10],
            sizes=[1, 1, *size],
            input_pixel_offsets=[0] * 4,
            output_pixel_offsets=[0] * 4,
            rounding_direction="DECREASING",
        )
        assert torch.equal(got, want)
    compiled = torch.compile(lambda a: dmlops.resample(a, [1, 1, 2, 2], rounding_direction=1) + 1)
    assert compiled(x.detach()).shape == (2, 3, 10, 14)


def test_dxdispatch(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model: dict[str, Any] = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3]},
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 5, "value": 0},
            },
        },
        "dispatchables": {
            "r": {
                "type": "DML_OPERATOR_RESAMPLE2",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [3]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [5]},
                    "InterpolationMode": "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR",
                    "RoundingDirection": "DML_AXIS_DIRECTION_DECREASING",
                    "DimensionCount": 1,
                    "Scales": [1.6666666],
                    "InputPixelOffsets": [0.5],
                    "OutputPixelOffsets": [-0.5],
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "r",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("5_1"), lines.append)
    assert lines == ["Resource 'y': 1, 1, 2, 2, 3"]
    model["dispatchables"]["r"]["type"] = "DML_OPERATOR_RESAMPLE"
    desc = model["dispatchables"]["r"]["desc"]
    for key in ("RoundingDirection", "InputPixelOffsets", "OutputPixelOffsets", "DimensionCount"):
        del desc[key]
    path.write_text(json.dumps(model))
    with pytest.raises(DmlError, match=r"needs DML_FEATURE_LEVEL_5_1|supports 4 dimensions"):
        run_model(load_model(path), Device("5_0"), lines.append)
    run_model(load_model(path), Device("5_1"), lines.append)
    assert lines[-1] == "Resource 'y': 1, 1, 2, 3, 3"


# -- ONNX -----------------------------------------------------------------------------------


def _resize_model(
    attrs: dict[str, Any], scales: Any, sizes: Any, shape: list[int], elem: int
) -> Any:
    from onnx import TensorProto as T
    from onnx import helper as h

    inits, names = [], ["x", ""]
    if scales is not None:
        inits.append(h.make_tensor("s", T.FLOAT, [len(scales)], scales))
    names.append("s" if scales is not None else "")
    if sizes is not None:
        inits.append(h.make_tensor("z", T.INT64, [len(sizes)], sizes))
        names.append("z")
    nodes = [
        h.make_node("Resize", names, ["r"], **attrs),
        h.make_node("Identity", ["r"], ["y"]),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", elem, shape)],
        [h.make_tensor_value_info("y", elem, None)],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)])
    model.ir_version = 8
    return model


COORDINATES = [
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "align_corners",
    "tf_half_pixel_for_nn",
]
ROUNDINGS = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
RESIZES = [
    ([1, 1, 1.5, 2], None),
    ([1, 1, 0.5, 0.75], None),
    ([1, 2, 1.7, 0.6], None),
    (None, [2, 3, 7, 3]),
    (None, [1, 3, 4, 11]),
    ([1, 1, 3, 3], None),
]


@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_onnx_resize_nearest_as_onnxruntime(coordinates: str, rounding: str) -> None:
    """Every nearest mode and coordinate transformation onnxruntime implements, fractional,
    shrinking and whole scales and sizes, float32, uint8 and int32: bit for bit."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T

    import dmlops.onnx

    attrs = {
        "mode": "nearest",
        "coordinate_transformation_mode": coordinates,
        "nearest_mode": rounding,
    }
    for scales, sizes in RESIZES:
        for dtype, elem in ((np.float32, T.FLOAT), (np.uint8, T.UINT8), (np.int32, T.INT32)):
            model = _resize_model(attrs, scales, sizes, [2, 3, 4, 5], elem)
            x = (np.arange(120) % 251).astype(dtype).reshape(2, 3, 4, 5)
            want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
            got = dmlops.onnx.run(model, {"x": x})
            got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
            assert got.shape == want.shape and got.tobytes() == want.tobytes(), (scales, sizes)


def test_onnx_resize_of_five_axes_merges_the_kept_ones_and_refuses_five_resampled() -> None:
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T

    import dmlops.onnx

    attrs = {"mode": "nearest"}
    model = _resize_model(attrs, [1, 1, 1.5, 2, 0.5], None, [2, 2, 3, 4, 6], T.FLOAT)
    x = np.arange(2 * 2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 2, 3, 4, 6)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    got = dmlops.onnx.run(model, {"x": x})
    assert np.asarray(got[0] if isinstance(got, (list, tuple)) else got).tobytes() == want.tobytes()
    five = _resize_model(attrs, [2, 1.5, 1.5, 2, 0.5], None, [2, 2, 3, 4, 6], T.FLOAT)
    with pytest.raises(dmlops.ModelError, match=r"5 axes are resampled"):
        dmlops.onnx.run(five, {"x": x})


@pytest.mark.parametrize("scales", [[1, 1, 1.5, 0.6], [1, 1, 0.5, 0.75], [1, 2, 3, 1.7]])
def test_onnx_resize_10_uses_onnxruntimes_simple_nearest(scales: list[float]) -> None:
    """Resize-10 (and Upsample): asymmetric coordinates, rounded down where an axis grows
    and up where it shrinks, as onnxruntime's "simple" nearest mode."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T
    from onnx import helper as h

    import dmlops.onnx

    graph = h.make_graph(
        [h.make_node("Resize", ["x", "s"], ["y"], mode="nearest")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 5, 7])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [h.make_tensor("s", T.FLOAT, [4], scales)],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 10)])
    model.ir_version = 8
    x = np.arange(2 * 3 * 5 * 7, dtype=np.float32).reshape(2, 3, 5, 7)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    got = dmlops.onnx.run(model, {"x": x})
    got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()
