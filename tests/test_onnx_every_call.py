"""Valid ONNX models that DirectML's own rules would refuse, run as onnxruntime runs them:
0-D indices and scalar tensors, constant data, indexed nodes on constants, GatherElements and
ScatterElements with fewer indices than data, mixed element types in one graph, bool and
bfloat16 tensors, empty tensors in steps; and bad input refused as onnxruntime refuses it.
Every answer is compared bit for bit with onnxruntime's on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BACKENDS, to_host

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import onnx  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

import dmlops  # noqa: E402
import dmlops.onnx as dml_onnx  # noqa: E402
from dmlops.errors import ModelError  # noqa: E402
from onnx_oracle import OLD_ONNXRUNTIME, held_to  # noqa: E402

# one dtype per element size, as numpy and ONNX name them
SIZES = {1: (np.int8, T.INT8), 2: (np.float16, T.FLOAT16), 4: (np.float32, T.FLOAT),
         8: (np.int64, T.INT64)}  # fmt: skip
SLOW = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def model(nodes: list[Any], inputs: list[Any], outputs: list[str], inits: Any = (), opset=18):  # type: ignore[no-untyped-def]
    graph = h.make_graph(
        nodes, "m", inputs, [h.make_empty_tensor_value_info(o) for o in outputs],
        list(inits),
    )  # fmt: skip
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def vi(name: str, kind: int, shape: Any) -> Any:
    return h.make_tensor_value_info(name, kind, shape)


def ints(name: str, values: list[int], shape: Any = None) -> Any:
    return h.make_tensor(name, T.INT64, [len(values)] if shape is None else shape, values)


def values(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray[Any, Any]:
    """Distinct bits per element (so a misplaced element shows)."""
    rng = np.random.default_rng(seed)
    size = np.dtype(dtype).itemsize
    words = rng.integers(0, 2 ** (8 * size) - 1, size=shape, dtype=f"u{size}", endpoint=True)
    out = words.view(dtype)
    if np.dtype(dtype).kind == "f":  # NaNs compare by bits, but onnxruntime may quiet them
        out = np.where(np.isfinite(out), out, np.zeros((), dtype)).astype(dtype)
    return out


def on(backend: str) -> dmlops.Device:
    return dmlops.Device(backend=backend)


def feed(backend: str, inputs: dict[str, Any]) -> dict[str, Any]:
    from conftest import to_device

    return {k: to_device(backend, np.asarray(v)) for k, v in inputs.items()}


def agree(m: Any, inputs: dict[str, Any], backend: str) -> list[np.ndarray[Any, Any]]:
    """dmlops' outputs equal onnxruntime's (or, where an installed onnxruntime stands alone,
    onnx's reference evaluator's: `onnx_oracle`): shape, dtype and bits."""
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    got = [to_host(g) for g in dml_onnx.run(m, feed(backend, inputs), on(backend))]
    expected = held_to(m, inputs, got, expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        assert g.dtype == e.dtype
        assert g.tobytes() == e.tobytes()
    return got


def refused(m: Any, inputs: dict[str, Any], backend: str, match: str) -> None:
    """onnxruntime refuses the model's input (before 1.30 it may run it: `onnx_oracle`), and
    dmlops names why."""
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    if not OLD_ONNXRUNTIME:
        with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own failure types
            session.run(None, inputs)
    with pytest.raises(ModelError, match=match):
        dml_onnx.run(m, feed(backend, inputs), on(backend))


@pytest.mark.parametrize("backend", BACKENDS)
@SLOW
@given(
    size=st.sampled_from(sorted(SIZES)),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    data=st.data(),
    constant=st.booleans(),
)
def test_gather_at_a_0d_index_drops_the_axis(
    backend: str, size: int, shape: tuple[int, ...], data: Any, constant: bool
) -> None:
    dtype, kind = SIZES[size]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = data.draw(st.integers(-shape[axis], shape[axis] - 1))
    x = values(dtype, shape)
    node = h.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    if constant:
        m = model([node], [vi("x", kind, shape)], ["y"], [ints("i", [index], [])])
        got = agree(m, {"x": x}, backend)
    else:
        m = model([node], [vi("x", kind, shape), vi("i", T.INT64, [])], ["y"])
        got = agree(m, {"x": x, "i": np.array(index)}, backend)
    assert got[0].ndim == len(shape) - 1


@pytest.mark.parametrize("backend", BACKENDS)
@SLOW
@given(
    size=st.sampled_from(sorted(SIZES)),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    data=st.data(),
    scatter=st.booleans(),
)
def test_elements_operators_take_fewer_indices_than_data(
    backend: str, size: int, shape: tuple[int, ...], data: Any, scatter: bool
) -> None:
    dtype, kind = SIZES[size]
    axis = data.draw(st.integers(0, len(shape) - 1))
    ishape = tuple(
        data.draw(st.integers(1, 4)) if d == axis else data.draw(st.integers(1, n))
        for d, n in enumerate(shape)
    )
    x = values(dtype, shape)
    if scatter:  # distinct positions along the axis per line (ONNX leaves duplicates open)
        ishape = tuple(min(m, shape[axis]) if d == axis else m for d, m in enumerate(ishape))
        rng = np.random.default_rng(size)
        lines = rng.random((*ishape[:axis], shape[axis], *ishape[axis + 1 :])).argsort(axis)
        index = np.take(lines, np.arange(ishape[axis]), axis=axis).astype(np.int64)
        updates = values(dtype, ishape, seed=1)
        node = h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis)
        inputs = [vi("x", kind, shape), vi("i", T.INT64, ishape), vi("u", kind, ishape)]
        agree(model([node], inputs, ["y"]), {"x": x, "i": index, "u": updates}, backend)
    else:
        index = np.random.default_rng(size).integers(-shape[axis], shape[axis], ishape)
        node = h.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)
        inputs = [vi("x", kind, shape), vi("i", T.INT64, ishape)]
        agree(model([node], inputs, ["y"]), {"x": x, "i": index}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", sorted(SIZES))
def test_fewer_indices_in_the_functional_api_as_torch(backend: str, size: int) -> None:
    from conftest import to_device

    torch = pytest.importorskip("torch")
    dtype = SIZES[size][0]
    x = values(dtype, (4, 6))
    index = np.array([[5, 0], [2, 3], [1, 4]])
    src = values(dtype, (3, 2), seed=2)
    tx, ti, ts = (torch.from_numpy(a) for a in (x, index, src))
    dx, di, ds = (to_device(backend, a) for a in (x, index, src))
    gathered = to_host(dmlops.gather_elements(dx, di, 1))
    assert gathered.tobytes() == torch.gather(tx, 1, ti).numpy().tobytes()
    expected = tx.scatter(1, ti, ts).numpy()
    assert to_host(dmlops.scatter_elements(dx, di, ds, 1)).tobytes() == expected.tobytes()
    inplace = to_device(backend, x.copy())
    assert dmlops.scatter_elements(inplace, di, ds, 1, out=inplace) is inplace
    assert to_host(inplace).tobytes() == expected.tobytes()
    host = x.copy()  # host arrays computed on the device, in place
    dmlops.scatter_elements(host, index, src, 1, out=host, device=backend)
    assert host.tobytes() == expected.tobytes()
    with pytest.raises(dmlops.DmlError, match=r"GATHER_ELEMENTS: indices have shape \[5, 2\]"):
        dmlops.gather_elements(dx, to_device(backend, np.zeros((5, 2), np.int64)), 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", sorted(SIZES))
def test_scalars_in_and_out(backend: str, size: int) -> None:
    dtype, kind = SIZES[size]
    nodes = [
        h.make_node("Unsqueeze", ["s", "a0"], ["s1"]),  # a 0-D input made [1]
        h.make_node("Gather", ["v", "k"], ["e"], axis=0),  # a 0-D result
        h.make_node("Expand", ["e", "shape"], ["wide"]),  # a 0-D value broadcast
        h.make_node("Reshape", ["s1", "none"], ["back"]),  # [1] reshaped to 0-D
    ]
    m = model(
        nodes,
        [vi("s", kind, []), vi("v", kind, [5])],
        ["s1", "e", "wide", "back"],
        [ints("a0", [0]), ints("k", [3], []), ints("shape", [2, 3]), ints("none", [])],
    )
    got = agree(m, {"s": values(dtype, ()), "v": values(dtype, (5,), 3)}, backend)
    assert [g.shape for g in got] == [(1,), (), (2, 3), ()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_data_tensors_in_one_plan_and_in_steps(backend: str) -> None:
    x = values(np.float32, (2, 3))
    c = h.make_tensor("c", T.FLOAT, [1, 3], [7, 8, 9])
    one_plan = model(
        [
            h.make_node("Tile", ["c", "r"], ["t"]),
            h.make_node("Pad", ["c", "p"], ["pc"], mode="edge"),
            h.make_node("Concat", ["x", "t", "c"], ["y"], axis=0),
        ],
        [vi("x", T.FLOAT, [2, 3])],
        ["y", "pc"],
        [c, ints("r", [2, 1]), ints("p", [1, 0, 0, 2])],
    )
    agree(one_plan, {"x": x}, backend)
    compiled = dml_onnx.compile(one_plan, {"x": x})
    assert compiled.plan is not None  # one plan: the constant is one of its inputs
    # x[arange(B), lengths - 1]: a constant arange joined with run-time indices
    b, t, d = 3, 5, 2
    steps = model(
        [
            h.make_node("Sub", ["L", "one"], ["Lm"]),
            h.make_node("Unsqueeze", ["Lm", "ax"], ["Lu"]),
            h.make_node("Unsqueeze", ["ar", "ax"], ["au"]),
            h.make_node("Concat", ["au", "Lu"], ["idx"], axis=1),
            h.make_node("GatherND", ["x", "idx"], ["y"]),
        ],
        [vi("x", T.FLOAT, [b, t, d]), vi("L", T.INT64, [b])],
        ["y"],
        [ints("one", [1], []), ints("ax", [1]), ints("ar", [0, 1, 2])],
    )
    agree(steps, {"x": values(np.float32, (b, t, d)), "L": np.array([5, 2, 1])}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "op", ["ScatterElements", "ScatterND", "GatherElements", "GatherND", "OneHot"]
)
def test_indexed_nodes_on_constants_are_evaluated_once(backend: str, op: str) -> None:
    data = h.make_tensor("d", T.FLOAT, [1, 3], [7, 8, 9])
    found = {
        "ScatterElements": ([ints("i", [0], [1, 1]), h.make_tensor("u", T.FLOAT, [1, 1], [5])],
                            ["d", "i", "u"]),
        "ScatterND": ([ints("i", [0, 1], [1, 2]), h.make_tensor("u", T.FLOAT, [1], [5])],
                      ["d", "i", "u"]),
        "GatherElements": ([ints("i", [0, 0, 0], [1, 3])], ["d", "i"]),
        "GatherND": ([ints("i", [0, 2], [1, 2])], ["d", "i"]),
        "OneHot": ([ints("i", [2, 0, 1], [1, 3]), ints("n", [3], []),
                    h.make_tensor("u", T.FLOAT, [2], [0, 1])], ["i", "n", "u"]),
    }[op]  # fmt: skip
    inits, inputs = found
    folded = h.make_node(op, inputs, ["k"])
    flat = h.make_node("Reshape", ["k", "minus1"], ["kf"])
    m = model(
        [folded, flat, h.make_node("Concat", ["x", "kf"], ["y"], axis=0)],
        [vi("x", T.FLOAT, [2])],
        ["y"],
        [data, *inits, ints("minus1", [-1])],
    )
    agree(m, {"x": values(np.float32, (2,))}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_element_types_in_one_plan_and_in_steps(backend: str) -> None:
    data = values(np.float16, (4, 3))
    order = np.array([2, 0, 3, 1])
    codes = values(np.int8, (3, 4), 4)
    one_plan = model(
        [
            h.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
            h.make_node("Slice", ["k", "s", "e"], ["ks"]),
            h.make_node("Identity", ["codes"], ["same"]),
        ],
        [vi("x", T.FLOAT16, [4, 3]), vi("k", T.INT64, [4]), vi("codes", T.INT8, [3, 4])],
        ["xt", "ks", "same"],
        [ints("s", [1]), ints("e", [3])],
    )
    agree(one_plan, {"x": data, "k": order, "codes": codes}, backend)
    steps = model(  # an MoE un-permute: the rows in order, the order passed on beside them
        [
            h.make_node("Gather", ["x", "k"], ["rows"], axis=0),
            h.make_node("Transpose", ["k2"], ["order"], perm=[1, 0]),
        ],
        [vi("x", T.FLOAT16, [4, 3]), vi("k", T.INT64, [4]), vi("k2", T.INT64, [4, 1])],
        ["rows", "order"],
    )
    agree(steps, {"x": data, "k": order, "k2": order.reshape(4, 1)}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bool_tensors(backend: str) -> None:
    mask = values(np.uint8, (3, 5)) > 127
    m = model(
        [
            h.make_node("Slice", ["m", "s", "e"], ["cut"]),
            h.make_node("Transpose", ["cut"], ["t"], perm=[1, 0]),
        ],
        [vi("m", T.BOOL, [3, 5])],
        ["t"],
        [ints("s", [1]), ints("e", [4])],
    )
    agree(m, {"m": mask}, backend)
    padded = model(  # onnxruntime has no bool Pad: numpy's pad is the reference
        [h.make_node("Pad", ["m", "p", "v"], ["y"])],
        [vi("m", T.BOOL, [3, 5])],
        ["y"],
        [ints("p", [1, 0, 0, 2]), h.make_tensor("v", T.BOOL, [], [True])],
    )
    (got,) = dml_onnx.run(padded, feed(backend, {"m": mask}), on(backend))
    expected = np.pad(mask, ((1, 0), (0, 2)), constant_values=True)
    assert to_host(got).dtype == np.bool_
    assert to_host(got).tobytes() == expected.tobytes()
    gathered = model(
        [h.make_node("Gather", ["m", "i"], ["y"], axis=1)],
        [vi("m", T.BOOL, [3, 5]), vi("i", T.INT64, [2])],
        ["y"],
    )
    agree(gathered, {"m": mask, "i": np.array([4, 0])}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bfloat16_tensors_move_their_bits(backend: str) -> None:
    """onnxruntime's Python API takes no bfloat16 arrays: numpy's moves of the same 2-byte
    words are the reference."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    words = values(np.uint16, (4, 6))
    m = model(
        [
            h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"]),
            h.make_node("Pad", ["x", "p", "c"], ["z"]),
            h.make_node("Gather", ["x", "i"], ["g"], axis=1),
        ],
        [vi("x", T.BFLOAT16, [4, 6]), vi("i", T.INT64, [3])],
        ["y", "z", "g"],
        [ints("s", [3]), ints("e", [0]), ints("a", [1]), ints("st", [-2]),
         ints("p", [0, 1, 1, 0]), h.make_tensor("c", T.BFLOAT16, [], [0x3F80], raw=False)],
    )  # fmt: skip
    constant = m.graph.initializer[-1]  # Pad's constant: 1.0 in bfloat16 (bits 0x3F80)
    del constant.int32_data[:]
    constant.int32_data.append(0x3F80)
    index = np.array([5, 0, 2])
    expected = [
        words[:, 3:0:-2],
        np.pad(words, ((0, 1), (1, 0)), constant_values=0x3F80),
        words[:, index],
    ]
    x = words.view(ml_dtypes.bfloat16)
    got = dml_onnx.run(m, feed(backend, {"x": x, "i": index}), on(backend))
    for g, e in zip(got, expected, strict=True):
        g = to_host(g)
        assert g.dtype == ml_dtypes.bfloat16
        assert g.shape == e.shape
        assert g.view(np.uint16).tobytes() == np.ascontiguousarray(e).tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_tensors_in_steps(backend: str) -> None:
    m = model(
        [
            h.make_node("Gather", ["x", "i"], ["g"], axis=0),
            h.make_node("Slice", ["g", "s", "e"], ["cut"]),
            h.make_node("Concat", ["g", "x"], ["both"], axis=0),
        ],
        [vi("x", T.FLOAT, ["n", 4]), vi("i", T.INT64, ["k"])],
        ["g", "cut", "both"],
        [ints("s", [1]), ints("e", [3])],
    )
    x = values(np.float32, (3, 4))
    agree(m, {"x": x, "i": np.zeros(0, np.int64)}, backend)  # no indices (an idle expert)
    agree(m, {"x": x, "i": np.array([2, 0])}, backend)
    agree(m, {"x": np.zeros((0, 4), np.float32), "i": np.zeros(0, np.int64)}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_input_is_refused_as_onnxruntime_refuses_it(backend: str) -> None:
    x = values(np.float32, (3, 4))
    lengths = model(
        [h.make_node("ReverseSequence", ["x", "l"], ["y"], time_axis=0, batch_axis=1)],
        [vi("x", T.FLOAT, [3, 4]), vi("l", T.INT64, [4])],
        ["y"],
    )
    if backend == "numpy":  # on a GPU the lengths stay there: DirectML's meaning applies
        refused(lengths, {"x": x, "l": np.array([1, 2, 3, 5])}, backend, r"length 5 .* \[0, 3\]")
    agree(lengths, {"x": x, "l": np.array([1, 0, 3, 2])}, backend)

    def pad(pads: list[int], mode: str) -> Any:
        node = h.make_node("Pad", ["x", "p"], ["y"], mode=mode)
        return model([node], [vi("x", T.FLOAT, [3, 4])], ["y"], [ints("p", pads)])

    refused(pad([3, 0, 0, 0], "reflect"), {"x": x}, backend, "reflect pads 3 and 0 on axis 0")
    refused(pad([-1, 0, 2, 0], "reflect"), {"x": x}, backend, "axis 0 of size 2")
    refused(pad([-2, 0, -2, 0], "edge"), {"x": x}, backend, "crop more than")
    agree(pad([1, 1, -1, 3], "reflect"), {"x": x}, backend)
    agree(pad([-1, 0, -2, 0], "constant"), {"x": x}, backend)  # cropped to nothing
    # cropped to nothing, then padded: every element is the constant (onnxruntime before 1.30
    # read elements from outside the input there)
    for pads, shape in (([0, -4, 0, 2], (3, 2)), ([-3, 1, 2, 0], (2, 5))):
        m = pad(pads, "constant")
        if OLD_ONNXRUNTIME:
            got = [to_host(g) for g in dml_onnx.run(m, feed(backend, {"x": x}), on(backend))]
        else:
            got = agree(m, {"x": x}, backend)
        assert got[0].tobytes() == np.zeros(shape, np.float32).tobytes() and got[0].shape == shape
    refused(pad([0, -4, 0, 2], "edge"), {"x": x}, backend, "pads axis 1, which is empty")


# ---- found by `dmlops conform onnxruntime` (the differential fuzzer), one test each ----


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("runtime_indices", [False, True])
def test_expand_of_a_gathered_value_keeps_its_index_reads(
    backend: str, runtime_indices: bool
) -> None:
    """GatherElements then Expand: the broadcast of a gathered piece read its data at
    index 0 (its index reads were dropped)."""
    nodes = [
        h.make_node("GatherElements", ["x", "i"], ["g"], axis=-1),
        h.make_node("Expand", ["g", "s"], ["e"]),
    ]
    i = np.array([[2], [0], [3]], np.int64)
    inputs = [vi("x", T.FLOAT, [3, 5])]
    inits = [ints("s", [2, 3, 4])]
    feeds = {"x": values(np.float32, (3, 5))}
    if runtime_indices:
        inputs.append(vi("i", T.INT64, [3, 1]))
        feeds["i"] = i
    else:
        inits.append(h.make_tensor("i", T.INT64, [3, 1], i.ravel().tolist()))
    agree(model(nodes, inputs, ["e"], inits), feeds, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("kind", [(np.int64, T.INT64), (np.float64, T.DOUBLE)])
def test_depth_space_of_8_byte_elements(backend: str, op: str, mode: str, kind: Any) -> None:
    """DirectML's DEPTH_TO_SPACE1 tables stop at 4-byte elements; ONNX allows every type."""
    dtype, onnx_type = kind
    shape = (2, 8, 2, 3) if op == "DepthToSpace" else (2, 3, 4, 6)
    attrs = {"blocksize": 2, **({"mode": mode} if op == "DepthToSpace" else {})}
    if op == "SpaceToDepth" and mode == "CRD":
        pytest.skip("SpaceToDepth has no mode")
    from onnx.reference import ReferenceEvaluator  # onnxruntime has no int64 kernels here

    node = h.make_node(op, ["x"], ["y"], **attrs)
    m = model([node], [vi("x", onnx_type, list(shape))], ["y"])
    x = values(dtype, shape)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    (got,) = dml_onnx.run(m, feed(backend, {"x": x}), on(backend))
    assert to_host(got).dtype == want.dtype and to_host(got).tobytes() == want.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_depth_to_space_of_an_empty_tensor(backend: str) -> None:
    node = h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)
    m = model([node], [vi("x", T.FLOAT, [0, 4, 2, 2])], ["y"])
    (y,) = dml_onnx.run(m, feed(backend, {"x": np.zeros((0, 4, 2, 2), np.float32)}), on(backend))
    assert to_host(y).shape == (0, 1, 4, 4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [(np.int8, T.INT8), (np.uint16, T.UINT16), (np.int16, T.INT16)])
def test_one_hot_with_narrow_integer_indices(backend: str, kind: Any) -> None:
    """ONNX takes indices of any numeric type; ONE_HOT's table takes 32- and 64-bit ones.
    (onnxruntime has no kernel for these: checked against int64 indices.)"""
    dtype, onnx_type = kind
    idx = np.array([[0, 3], [2, 1]], dtype)
    nodes = [h.make_node("OneHot", ["i", "d", "v"], ["y"], axis=1)]
    inits = [ints("d", [4]), h.make_tensor("v", T.FLOAT, [2], [-1.0, 5.0])]
    m = model(nodes, [vi("i", onnx_type, [2, 2])], ["y"], inits)
    (got,) = dml_onnx.run(m, feed(backend, {"i": idx}), on(backend))
    wide = model(nodes, [vi("i", T.INT64, [2, 2])], ["y"], inits)
    assert to_host(got).tobytes() == agree(wide, {"i": idx.astype(np.int64)}, backend)[0].tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_at_constant_2d_indices(backend: str) -> None:
    node = h.make_node("Gather", ["x", "i"], ["y"], axis=1)
    inits = [h.make_tensor("i", T.INT64, [2, 2], [3, 0, 1, 3])]
    m = model([node], [vi("x", T.FLOAT, [2, 4])], ["y"], inits, opset=1)
    m.ir_version = 3
    agree(m, {"x": values(np.float32, (2, 4))}, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_input_passed_through_unchanged(backend: str) -> None:
    """ScatterElements (a run-time step), then an Expand to the same shape: the step's
    output was its own input."""
    nodes = [
        h.make_node("ScatterElements", ["x", "i", "u"], ["s"], axis=0),
        h.make_node("Expand", ["s", "shape"], ["y"]),
    ]
    inputs = [vi("x", T.FLOAT, [3, 2]), vi("i", T.INT64, [1, 2]), vi("u", T.FLOAT, [1, 2])]
    feeds = {
        "x": values(np.float32, (3, 2)),
        "i": np.array([[2, 0]], np.int64),
        "u": values(np.float32, (1, 2), 1),
    }
    agree(model(nodes, inputs, ["y"], [ints("shape", [3, 2])]), feeds, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [(np.int64, T.INT64), (np.float16, T.FLOAT16), (np.bool_, T.BOOL)])
def test_constant_pad_of_an_empty_tensor_is_the_constant(backend: str, kind: Any) -> None:
    """A Slice that keeps nothing, then a constant Pad: the output was left unwritten."""
    dtype, onnx_type = kind
    nodes = [
        h.make_node("Slice", ["x", "st", "en"], ["s"]),
        h.make_node("Pad", ["s", "p", "v"], ["y"], mode="constant"),
    ]
    value = np.array(1 if dtype == np.bool_ else 5, dtype)
    inits = [
        ints("st", [1, 0]),
        ints("en", [1, 2]),
        ints("p", [1, 2, 2, 0]),
        h.make_tensor(
            "v", onnx_type, [], value.reshape(1).tolist() if dtype != np.float16 else [5.0]
        ),
    ]
    if dtype == np.float16:
        inits[-1] = onnx.numpy_helper.from_array(value, "v")
    m = model(nodes, [vi("x", onnx_type, [3, 2])], ["y"], inits)
    (y,) = agree(
        m, {"x": values(dtype, (3, 2)) if dtype != np.bool_ else np.ones((3, 2), bool)}, backend
    )
    assert y.shape == (3, 4) and (y == value).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_identity_of_a_gathered_value_then_more_movement(backend: str) -> None:
    """Gather at run-time indices, Identity, Squeeze: the Identity's alias had no element
    type in the plan (refused as a malformed node)."""
    nodes = [
        h.make_node("Gather", ["x", "i"], ["g"], axis=-1),
        h.make_node("Identity", ["g"], ["d"]),
        h.make_node("Squeeze", ["d", "ax"], ["y"]),
    ]
    inputs = [vi("x", T.UINT8, [3, 2]), vi("i", T.INT64, [1])]
    feeds = {"x": values(np.uint8, (3, 2)), "i": np.array([1], np.int64)}
    agree(model(nodes, inputs, ["y"], [ints("ax", [1])]), feeds, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rank", [6, 7])
def test_reverse_sequence_of_any_rank(backend: str, rank: int) -> None:
    """ONNX takes any rank from 2; REVERSE_SUBSEQUENCES at most 5 dimensions."""
    shape = (3, 2, *([2] * (rank - 2)))
    node = h.make_node("ReverseSequence", ["x", "n"], ["y"], batch_axis=1, time_axis=0)
    m = model([node], [vi("x", T.FLOAT, list(shape)), vi("n", T.INT64, [2])], ["y"], opset=10)
    m.ir_version = 5
    agree(m, {"x": values(np.float32, shape), "n": np.array([3, 1], np.int64)}, backend)
