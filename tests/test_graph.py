"""Graphs: real-model patterns compile to one plan with no intermediates; random graphs match
the same nodes run one by one through the single-operator API, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import BufferTensorDesc, DataType, Device, DmlError, Graph
from dmlops.tensor import packed_strides
from strategies import DATA_TYPES

F32 = DataType.FLOAT32


def _run(graph: Graph, outputs, inputs, backend: str = "numpy"):  # type: ignore[no-untyped-def]
    """Compile and execute on buffers of each tensor's TotalTensorSizeInBytes; outputs start as
    0xAB bytes, so an element left unwritten shows."""
    op = graph.compile(outputs, Device(backend=backend))
    in_bufs = []
    for (_, desc), x in zip(op.desc.input_fields(), inputs):
        buf = np.zeros(desc.total_tensor_size_in_bytes, np.uint8)
        buf[: x.nbytes] = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        in_bufs.append(to_device(backend, buf))
    out_bufs = [
        to_device(backend, np.full(desc.total_tensor_size_in_bytes, 0xAB, np.uint8))
        for _, desc in op.desc.output_fields()
    ]
    op.execute(in_bufs, out_bufs)
    results = []
    for t, buf in zip(outputs, out_bufs):
        nbytes = math.prod(t.sizes) * t.desc.data_type.element_size
        results.append(to_host(buf)[:nbytes].view(t.desc.data_type.numpy_dtype).reshape(t.sizes))
    return op, results


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.itemsize}")


def test_focus_stem_is_one_copy_and_no_intermediate(backend: str) -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 16, 16), dtype=np.float32)
    g = Graph()
    xi = g.input(x)
    parts = [
        g.slice(xi, [0, 0, a, b], [2, 3, 8, 8], [1, 1, 2, 2], name=f"s{a}{b}")
        for a, b in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]
    y = g.join(parts, 1, name="cat")
    op, (out,) = _run(g, [y], [x], backend)
    want = np.concatenate(
        [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
    )
    np.testing.assert_array_equal(out, want)
    assert len(op.plan.copies) == 1  # the four slices' offsets lie on a lattice: one copy
    assert op.plan.bytes_written == out.nbytes  # every byte written once, straight from x


def test_qkv_split_and_head_transpose(backend: str) -> None:
    b, t, h, d = 2, 7, 3, 8
    x = np.random.default_rng(1).standard_normal((b, t, 3 * h * d), dtype=np.float32)
    g = Graph()
    xi = g.input(x)
    q, k, v = g.split(xi, 2, [h * d] * 3, name="qkv")
    heads = [g.reinterpret(z, [b, h, t, d], [t * h * d, d, h * d, 1]) for z in (q, k, v)]
    op, outs = _run(g, heads, [x], backend)
    ref = x.reshape(b, t, 3, h, d).transpose(2, 0, 3, 1, 4)
    for o, r in zip(outs, ref):
        np.testing.assert_array_equal(o, r)
    assert op.plan.bytes_written == x.nbytes


def test_pixel_unshuffle_and_kv_cache_append(backend: str) -> None:
    n, c, h, w, r = 2, 3, 4, 5, 2
    x = np.random.default_rng(2).standard_normal((n, c, h * r, w * r), dtype=np.float32)
    g = Graph()
    xi = g.input(x)
    v = g.reinterpret(
        xi, [n, c, r, r, h, w], [c * h * r * w * r, h * r * w * r, w * r, 1, r * w * r, r]
    )
    y = g.identity(v, name="unshuffle")
    _, (out,) = _run(g, [y], [x], backend)
    np.testing.assert_array_equal(out, x.reshape(n, c, h, r, w, r).transpose(0, 1, 3, 5, 2, 4))

    cache = np.random.default_rng(3).standard_normal((2, 4, 9, 16), dtype=np.float32)
    new = np.random.default_rng(4).standard_normal((2, 4, 1, 16), dtype=np.float32)
    g = Graph()
    y = g.join([g.input(cache), g.input(new)], 2)
    op, (out,) = _run(g, [y], [cache, new], backend)
    np.testing.assert_array_equal(out, np.concatenate([cache, new], 2))
    assert len(op.plan.copies) == 2


def test_errors_name_the_node() -> None:
    g = Graph(feature_level="3_0")
    x = g.input(BufferTensorDesc(F32, [1, 1, 6, 8]))
    r = g.slice1(x, [0, 0, 0, 0], [1, 1, 6, 8], [1, 1, 1, -1])
    with pytest.raises(
        DmlError,
        match=r"^node 1 \(SLICE1 'crop'\)\.InputWindowStrides\[2\] is 0: strides may not be 0$",
    ):
        g.slice1(r, [0, 0, 0, 0], [1, 1, 6, 8], [1, 1, 0, 1], name="crop")
    with pytest.raises(
        DmlError,
        match=r"^node 1 \(JOIN\)\.InputTensors\[0\]\.DimensionCount is 3: .* need DML_FEATURE_LEVEL_3_1$",
    ):
        y = g.input(BufferTensorDesc(F32, [2, 3, 4]))
        g.join([y, y], 0)
    t = g.reinterpret(r, [1, 1, 8, 6], [48, 48, 1, 8])
    odd = g.reinterpret(t, [24], [2], name="odd")  # no box of the pieces: t is copied first
    flat = g.reinterpret(t, [48], [1], name="flat")  # a reshape: deferred
    assert not g.composes(flat)
    again = g.identity(flat)  # feeding a node: flat is copied to an intermediate first
    x_in = np.arange(48, dtype=np.float32).reshape(1, 1, 6, 8)
    op, (out, o_odd, o_again) = _run(g, [flat, odd, again], [x_in, np.zeros((2, 3, 4), np.float32)])
    transposed = np.arange(48).reshape(6, 8)[:, ::-1].T.ravel()
    np.testing.assert_array_equal(out, transposed)
    np.testing.assert_array_equal(o_odd, transposed[::2])
    np.testing.assert_array_equal(o_again, transposed)
    assert len(op.passes) == 3
    assert "node 2 reads the output of node 1 through a view of sizes [24]" in op.notes[0]
    assert "node 4 reads the output of node 3 through a reshape to [48]" in op.notes[1]
    assert "pass writing intermediate 0" in op.describe()
    with pytest.raises(DmlError, match=r"reach 388 bytes: the tensor holds 192"):
        g.reinterpret(r, [97], [1])
    with pytest.raises(DmlError, match=r"must be a tensor of this graph"):
        Graph().identity(r)


# --- random graphs against node-by-node execution ------------------------------------------


@st.composite
def random_graph(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    seed = draw(st.integers(0, 2**31))
    host = np.random.default_rng(seed).integers(
        0, 256, math.prod(shape) * dt.element_size, dtype=np.uint8
    )
    x = host.view(dt.numpy_dtype).reshape(shape)
    g = Graph()
    cur = g.input(x)
    ref = x
    outputs, refs = [], []
    for _ in range(draw(st.integers(2, 8))):
        kind = draw(
            st.sampled_from(
                [
                    "slice1",
                    "slice",
                    "split",
                    "join",
                    "identity",
                    "transpose",
                    "reshape",
                    "merge",
                    "flatten",
                ]
            )
        )
        sizes = list(cur.sizes)
        n = len(sizes)
        if kind == "slice1":
            offs = [draw(st.integers(0, s - 1)) for s in sizes]
            win = [draw(st.integers(1, s - o)) for s, o in zip(sizes, offs)]
            steps = [draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in sizes]
            cur = g.slice1(cur, offs, win, steps)
            ref = dmlops.slice1(ref, offs, win, steps)
        elif kind == "slice":
            steps = [draw(st.integers(1, 2)) for _ in sizes]
            offs = [draw(st.integers(0, s - 1)) for s in sizes]
            out = [
                draw(st.integers(1, 1 + (s - 1 - o) // t)) for s, o, t in zip(sizes, offs, steps)
            ]
            cur = g.slice(cur, offs, out, steps)
            ref = dmlops.slice(ref, offs, out, steps)
        elif kind == "split":
            axis = draw(st.integers(0, n - 1))
            if sizes[axis] < 2:
                continue
            cut = draw(st.integers(1, sizes[axis] - 1))
            parts = g.split(cur, axis, [cut, sizes[axis] - cut])
            ref_parts = dmlops.split(ref, axis, [cut, sizes[axis] - cut])
            keep = draw(st.integers(0, 1))
            outputs.append(parts[1 - keep])
            refs.append(ref_parts[1 - keep])
            cur, ref = parts[keep], ref_parts[keep]
        elif kind == "join":
            axis = draw(st.integers(0, n - 1))
            flip = [1] * n
            flip[axis] = -1
            other = g.slice1(cur, [0] * n, sizes, flip)
            ref_other = dmlops.slice1(ref, [0] * n, sizes, flip)
            cur = g.join([cur, other], axis)
            ref = dmlops.join([ref, ref_other], axis)
        elif kind == "identity":
            cur = g.identity(cur)
        elif kind == "transpose":
            perm = draw(st.permutations(range(n)))
            packed = packed_strides(sizes)
            cur = g.reinterpret(cur, [sizes[p] for p in perm], [packed[p] for p in perm])
            ref = np.ascontiguousarray(ref).transpose(perm).copy()
        elif kind == "reshape":  # split one dimension into two factors
            dims = [d for d, s in enumerate(sizes) if s >= 4 and s % 2 == 0]
            if not dims or n >= 8:
                continue
            d = draw(st.sampled_from(dims))
            new = [*sizes[:d], 2, sizes[d] // 2, *sizes[d + 1 :]]
            cur = g.reinterpret(cur, new, packed_strides(new))
            ref = np.ascontiguousarray(ref).reshape(new).copy()
        elif kind == "merge":  # merge two neighbours: across piece boundaries after a join
            if n < 2:
                continue
            d = draw(st.integers(0, n - 2))
            new = [*sizes[:d], sizes[d] * sizes[d + 1], *sizes[d + 2 :]]
            cur = g.reinterpret(cur, new, packed_strides(new))
            ref = np.ascontiguousarray(ref).reshape(new).copy()
        else:  # flatten: merge every dimension (a copy to an intermediate where not contiguous)
            cur = g.reinterpret(cur, [math.prod(sizes)], [1])
            ref = np.ascontiguousarray(ref).reshape(-1).copy()
    outputs.append(cur)
    refs.append(ref)
    return g, [x], outputs, refs


@settings(max_examples=80)
@given(case=random_graph())
def test_random_graphs_match_node_by_node(backend: str, case) -> None:  # type: ignore[no-untyped-def]
    g, inputs, outputs, refs = case
    op, got = _run(g, outputs, inputs, backend)
    assert op.plan.bytes_written == sum(o.nbytes for o in got)  # the last pass: outputs only
    for o, r in zip(got, refs):
        assert o.shape == r.shape
        np.testing.assert_array_equal(_bits(o), _bits(np.asarray(r)))


def _focus_model(opset: int = 13):  # type: ignore[no-untyped-def]
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    inits, nodes = [], []
    for k, (a, b) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
        for name, v in (("starts", [a, b]), ("ends", [8, 8]), ("axes", [2, 3]), ("steps", [2, 2])):
            inits.append(helper.make_tensor(f"{name}{k}", TensorProto.INT64, [2], v))
        nodes.append(
            helper.make_node(
                "Slice", ["x", *(f"{n}{k}" for n in ("starts", "ends", "axes", "steps"))], [f"s{k}"]
            )
        )
    nodes.append(helper.make_node("Concat", [f"s{k}" for k in range(4)], ["c"], axis=1))
    nodes.append(helper.make_node("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1]))
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(
        helper.make_graph(nodes, "focus", [x], [out], inits),
        opset_imports=[helper.make_opsetid("", opset)],
    )
    model.ir_version = 8
    return model


def test_an_onnx_model_compiles_to_one_plan(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnx")
    import onnx

    from dmlops import onnx as dml_onnx
    from dmlops.cli import main

    model = _focus_model()
    x = np.random.default_rng(5).standard_normal((1, 3, 8, 8), dtype=np.float32)
    compiled = dml_onnx.compile(model, {"x": x})
    assert len(compiled.plan.copies) == 1 and compiled.plan.bytes_written == x.nbytes
    (y,) = dml_onnx.run(model, {"x": x})
    want = np.concatenate(
        [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
    )
    np.testing.assert_array_equal(y, want.transpose(0, 2, 3, 1))
    path = tmp_path / "focus.onnx"
    onnx.save(model, str(path))
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "as one graph" in out and "plan: 1 strided copy" in out


@pytest.mark.parametrize("block", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
def test_pixel_unshuffle_in_a_graph_keeps_every_phase(backend: str, block: int, dtype) -> None:  # type: ignore[no-untyped-def]
    """A graph's SPACE_TO_DEPTH1 is one copy whose inner axis reads every block-th element
    and whose column phase is an axis of its own (the CUDA kernel writes every phase of
    each block it loads); bit for bit against the descriptor's own lowering."""
    rng = np.random.default_rng(block)
    w = 16 * block * 3
    x = rng.integers(0, 255, (2, 3, 4 * block, w), dtype=np.uint8).view(np.int8).astype(dtype)
    if dtype == np.float32:
        x.view(np.uint32)[0, 0, 0, :2] = [0x7FC00001, 0x80000000]  # a NaN payload, -0.0
    g = Graph(carry_types=True)  # (float64: the table's carrier)
    y = g.space_to_depth(g.input(x), block, "CRD")
    _, (got,) = _run(g, [y], [x], backend)
    assert _bits(got).tolist() == _bits(dmlops.space_to_depth(x, block, "CRD")).tolist()
    g = Graph(carry_types=True)
    y = g.space_to_depth(g.slice1(g.input(x), [0, 0, 0, 0], list(x.shape), [1, 1, 1, 1]), block)
    _, (got,) = _run(g, [y], [x], backend)
    assert _bits(got).tolist() == _bits(dmlops.space_to_depth(x, block)).tolist()


@pytest.mark.parametrize("block", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
@pytest.mark.parametrize("order", ["DCR", "CRD"])
def test_depth_to_space_in_a_graph_interleaves_its_phases(
    backend: str, block, dtype, order
) -> None:  # type: ignore[no-untyped-def]
    """A graph's DEPTH_TO_SPACE1 is one copy whose destination's inner axis is the column
    phase, read from block rows apart (the CUDA kernel loads a vector of each and stores them
    interleaved); bit for bit against the descriptor's own lowering."""
    rng = np.random.default_rng(block)
    x = (
        rng.integers(0, 255, (2, 2 * block * block, 3, 16 * 3), dtype=np.uint8)
        .view(np.int8)
        .astype(dtype)
    )
    if dtype == np.float16:
        x.view(np.uint16)[0, 0, 0, :2] = [0x7E01, 0x8000]  # a NaN payload, -0.0
    g = Graph(carry_types=True)
    y = g.depth_to_space(g.input(x), block, order)
    _, (got,) = _run(g, [y], [x], backend)
    assert _bits(got).tolist() == _bits(dmlops.depth_to_space(x, block, order)).tolist()
