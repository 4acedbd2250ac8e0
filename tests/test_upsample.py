"""UPSAMPLE_2D (nearest neighbour): every rule, the table, every backend and rank against a
naive element-by-element loop, DxDispatch files, graphs, ONNX Resize / Upsample against
onnxruntime, torch's interpolate and its gradient."""

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
    InvalidDescriptorError,
    UnsupportedFeatureLevelError,
    Upsample2dDesc,
)

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _t(dt: DataType, *sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


def naive(x: np.ndarray, sh: int, sw: int) -> np.ndarray:
    """Output[..., h, w] = Input[..., h // sh, w // sw], one element at a time."""
    *lead, h, w = x.shape
    out = np.empty((*lead, h * sh, w * sw), x.dtype)
    for pos in itertools.product(*(range(n) for n in out.shape)):
        out[pos] = x[(*pos[:-2], pos[-2] // sh, pos[-1] // sw)]
    return out


RULES = [
    (
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 5), [2, 2]),
        r"OutputTensor\.Sizes\[3\] is 5: must be 4",
    ),
    (Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 2, 4), [0, 2]), r"ScaleSize\.Height is 0"),
    (
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 2, 4), [2, 2]),
        r"OutputTensor\.DimensionCount is 3",
    ),
    (
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F16, 1, 1, 4, 4), [2, 2]),
        r"DataType is FLOAT16: must equal",
    ),
    (
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [2, 2], "LINEAR"),
        r"LINEAR: bilinear interpolation is arithmetic",
    ),
    (
        Upsample2dDesc(_t(F16, 1, 1, 2**30, 1), _t(F16, 1, 1, 8, 1), [8, 1]),
        r"ScaleSize\.Height is 8: must be at most UINT_MAX / InputHeight = 3",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc: Upsample2dDesc, message: str) -> None:
    with pytest.raises(DmlError, match=message):
        desc.validate()


def test_bad_fields_are_refused_when_built() -> None:
    with pytest.raises(InvalidDescriptorError, match=r"ScaleSize has 3 entries"):
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [2, 2, 2])
    with pytest.raises(InvalidDescriptorError, match=r"InterpolationMode is 'CUBIC'"):
        Upsample2dDesc(_t(F32, 1, 1, 2, 2), _t(F32, 1, 1, 4, 4), [2, 2], "CUBIC")


def test_the_table() -> None:
    Upsample2dDesc(_t(F16, 1, 1, 1, 2, 2), _t(F16, 1, 1, 1, 4, 6), [2, 3]).validate("1_0")
    for dt, sizes in ((DataType.INT32, (1, 1, 2, 2)), (F32, (1, 2, 2)), (F32, (1, 1, 1, 1, 2, 2))):
        grown = Upsample2dDesc.output_sizes_for(sizes, (2, 2))
        with pytest.raises(UnsupportedFeatureLevelError):
            Upsample2dDesc(_t(dt, *sizes), _t(dt, *grown), [2, 2]).validate()


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=6),
    sh=st.integers(1, 3),
    sw=st.integers(1, 3),
    dtype=st.sampled_from([np.float32, np.float16, np.int32, np.int64, np.uint16, np.float64]),
)
def test_every_backend_rank_and_type_against_a_naive_loop(
    backend: str, sizes: list[int], sh: int, sw: int, dtype: Any
) -> None:
    """The functional call (any rank from 2 through an array's own strides; other types
    move as their bits above the Device API) equals the naive loop bit for bit."""
    x = np.arange(int(np.prod(sizes))).astype(dtype).reshape(sizes)
    if np.dtype(dtype).kind == "f":
        x.reshape(-1)[0] = -0.0
    view = x[..., ::-1]  # a negative stride
    if len(sizes) in (4, 5):
        got = to_host(dmlops.upsample_2d(to_device(backend, view), [sh, sw]))
        assert got.tobytes() == naive(view, sh, sw).tobytes()
    else:
        with pytest.raises(UnsupportedFeatureLevelError, match=r"supports 4 to 5 dimensions"):
            dmlops.upsample_2d(to_device(backend, view), [sh, sw])


def test_one_byte_elements_have_no_carrier_in_the_table() -> None:
    with pytest.raises(UnsupportedFeatureLevelError, match=r"INT8"):
        dmlops.upsample_2d(np.zeros((1, 1, 2, 2), np.int8), [2, 2])


def test_dxdispatch_and_device_api(tmp_path: Path) -> None:
    from dmlops.dxdispatch import load_model, run_model

    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
            "y": {
                "initialValuesDataType": "FLOAT32",
                "initialValues": {"valueCount": 12, "value": 0},
            },
        },
        "dispatchables": {
            "up": {
                "type": "DML_OPERATOR_UPSAMPLE_2D",
                "desc": {
                    "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
                    "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 6]},
                    "ScaleSize": {"Width": 3, "Height": 1},
                    "InterpolationMode": "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR",
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "up",
                "bindings": {"InputTensor": "x", "OutputTensor": "y"},
            },
            {"type": "print", "resource": "y"},
        ],
    }
    path = tmp_path / "up.json"
    path.write_text(json.dumps(model))
    lines: list[str] = []
    run_model(load_model(path), Device("1_0"), lines.append)
    assert lines == ["Resource 'y': 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4"]
    model["dispatchables"]["up"]["desc"]["InterpolationMode"] = 1
    path.write_text(json.dumps(model))
    with pytest.raises(DmlError, match="LINEAR"):
        run_model(load_model(path), Device(), lines.append)


def test_a_graph_fuses_it_with_what_reads_it() -> None:
    """A YOLO neck: upsample then concatenate, one plan; a strided input, a carried type."""
    for dtype in (np.float32, np.int64):
        g = dmlops.Graph(carry_types=True)
        small = np.arange(2 * 3 * 4 * 5).astype(dtype).reshape(2, 3, 4, 5)
        big = np.arange(2 * 2 * 8 * 10).astype(dtype).reshape(2, 2, 8, 10)
        a, b = g.input(small), g.input(big)
        y = g.join([g.upsample_2d(a, [2, 2]), b], 1)
        op = g.compile([y])
        out = np.empty((2, 5, 8, 10), dtype)
        op.execute([small, big], [out.reshape(-1)])
        assert out.tobytes() == np.concatenate([naive(small, 2, 2), big], 1).tobytes()
    with pytest.raises(DmlError, match=r"node 0 \(UPSAMPLE_2D\)\.InputTensor\.DataType is INT64"):
        strict = dmlops.Graph()
        strict.upsample_2d(strict.input(np.zeros((1, 1, 2, 2), np.int64)), [2, 2])


# -- ONNX -----------------------------------------------------------------------------------


def _resize_model(
    attrs: dict[str, Any], scales: list[float] | None, sizes: list[int] | None, opset: int
) -> Any:
    from onnx import TensorProto as T
    from onnx import helper as h

    inits = []
    names = ["x", ""]
    if scales is not None:
        inits.append(h.make_tensor("s", T.FLOAT, [len(scales)], scales))
        names.append("s")
    else:
        names.append("")
    if sizes is not None:
        inits.append(h.make_tensor("z", T.INT64, [len(sizes)], sizes))
        names.append("z")
    node = h.make_node("Resize", names, ["y"], **attrs)
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        inits,
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8  # (what onnxruntime releases of a year ago still read)
    return model


COORDINATES = [
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "align_corners",
    "tf_half_pixel_for_nn",
]
ROUNDINGS = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 3, 2], [1, 1, 1.5, 2], [1, 2, 2, 2]])
def test_onnx_resize_runs_exactly_or_is_refused_by_name(
    coordinates: str, rounding: str, scales: list[float]
) -> None:
    """Every nearest Resize either equals onnxruntime's bit for bit or is refused naming the
    axis (never a wrong answer); the whole-factor upsamples of nn.Upsample run."""
    ort = pytest.importorskip("onnxruntime")
    import dmlops.onnx

    model = _resize_model(
        {
            "mode": "nearest",
            "coordinate_transformation_mode": coordinates,
            "nearest_mode": rounding,
        },
        scales,
        None,
        13,
    )
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    whole = all(float(s).is_integer() for s in scales) and scales[:2] == [1, 1]
    floor_like = (coordinates, rounding) in (
        ("asymmetric", "floor"),
        ("half_pixel", "round_prefer_floor"),
        ("half_pixel", "round_prefer_ceil"),
        ("pytorch_half_pixel", "round_prefer_floor"),
        ("pytorch_half_pixel", "round_prefer_ceil"),
    )
    try:
        got = dmlops.onnx.run(model, {"x": x})
    except dmlops.ModelError as e:
        assert not (whole and floor_like), str(e)
        assert "axis" in str(e) or "axes" in str(e)
        return
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.tobytes() == want.tobytes()


def test_onnx_resize_of_sizes_and_axes_and_upsample_and_linear() -> None:
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T
    from onnx import helper as h

    import dmlops.onnx

    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    model = _resize_model({"mode": "nearest", "axes": [2, 3]}, None, [8, 15], 18)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    got = dmlops.onnx.run(model, {"x": x})
    assert (got[0] if isinstance(got, (list, tuple)) else got).tobytes() == want.tobytes()
    x3 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)  # rank 3, a carried type
    graph = h.make_graph(
        [h.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")],
        "g",
        [h.make_tensor_value_info("x", T.INT32, [2, 3, 4])],
        [h.make_tensor_value_info("y", T.INT32, None)],
        [h.make_tensor("s", T.FLOAT, [3], [1, 2, 2])],
    )
    upsample = h.make_model(graph, opset_imports=[h.make_opsetid("", 9)])
    upsample.ir_version = 8
    want = ort.InferenceSession(upsample.SerializeToString()).run(None, {"x": x3})[0]
    got = dmlops.onnx.run(upsample, {"x": x3})
    assert (got[0] if isinstance(got, (list, tuple)) else got).tobytes() == want.tobytes()
    with pytest.raises(dmlops.ModelError, match=r"mode 'linear' interpolates"):
        dmlops.onnx.run(_resize_model({"mode": "linear"}, [1, 1, 2, 2], None, 13), {"x": x})


# -- torch ----------------------------------------------------------------------------------


def test_torch_interpolate_nearest_and_its_gradient() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    y = dmlops.upsample_2d(x, [2, 3])
    want = torch.nn.functional.interpolate(x.detach(), scale_factor=(2, 3), mode="nearest")
    assert torch.equal(y.detach(), want)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad, torch.full_like(x, 6.0))
    compiled = torch.compile(lambda a: dmlops.upsample_2d(a, [2, 2]) + 1)
    assert torch.equal(compiled(x.detach()), naive_t(x.detach(), torch) + 1)


def naive_t(x: Any, torch: Any) -> Any:
    return torch.from_numpy(naive(x.numpy(), 2, 2))


@pytest.mark.parametrize("dynamo", [False, True])
def test_an_exported_yolo_neck_runs_as_onnxruntime_runs_it(dynamo: bool, backend: str) -> None:
    """nn.Upsample(scale_factor=2, mode="nearest") + torch.cat, exported by each of torch's
    ONNX exporters, through dmlops.onnx.run bit for bit."""
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    if dynamo:
        pytest.importorskip("onnxscript")
    import io
    import warnings

    import dmlops.onnx

    class Neck(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")

        def forward(self, a: Any, b: Any) -> Any:
            return torch.cat([self.up(a), b], 1)

    a, b = torch.randn(1, 8, 10, 12), torch.randn(1, 4, 20, 24)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Neck(), (a, b), buffer, dynamo=dynamo, input_names=["a", "b"])
    model = onnx.load_from_string(buffer.getvalue())
    assert "Resize" in [n.op_type for n in model.graph.node]
    feeds = {i.name: t.numpy() for i, t in zip(model.graph.input, (a, b), strict=True)}
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    got = dmlops.onnx.run(model, {k: to_device(backend, v) for k, v in feeds.items()})
    got = to_host(got[0] if isinstance(got, (list, tuple)) else got)
    assert got.tobytes() == want.tobytes() == Neck()(a, b).numpy().tobytes()
