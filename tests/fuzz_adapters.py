"""Hypothesis strategies and oracles for fuzzing the ONNX and DxDispatch adapters.

Every outcome must be a correct result (checked against onnx's numpy reference
evaluator, or the naive element-by-element reference) or a DmlError: never another
exception, never a hang. Used by tests/test_fuzz_adapters.py (short) and
benchmarks/fuzz_adapters.py (long runs).
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator
from typing import Any

import numpy as np
from hypothesis import strategies as st

OPS = (
    "Slice", "Split", "Concat", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten",
    "Identity", "DepthToSpace", "SpaceToDepth", "Gather", "Pad", "Tile", "Expand",
)  # fmt: skip
DATA_DTYPES = ("float32", "float16", "float64", "int8", "uint16", "int32", "int64", "uint8")
INDEX_DTYPES = ("int64", "int64", "int64", "int32", "float32", "int8", "uint64", "float64")
ATTRIBUTES = ("axis", "axes", "perm", "split", "blocksize", "mode", "num_outputs", "starts",
              "ends", "allowzero", "keepdims", "pads", "value")  # fmt: skip


class CaseTimeout(Exception):
    """A fuzz case ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise CaseTimeout after `seconds` (Unix; no limit elsewhere)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"case ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _attribute_value(draw: Any, name: str) -> Any:
    kind = draw(st.sampled_from(["int", "ints", "float", "string", "ints", "int"]))
    if kind == "int":
        return draw(st.integers(-5, 5))
    if kind == "ints":
        return draw(st.lists(st.integers(-5, 5), min_size=1, max_size=5))
    if kind == "float":
        return draw(st.floats(-5, 5, allow_nan=False))
    return draw(st.sampled_from(["DCR", "CRD", "x", "", "constant", "reflect", "edge", "wrap"]))


@st.composite
def onnx_cases(draw: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """(ModelProto, feeds): one node of a data-movement op with random everything."""
    from onnx import TensorProto, helper, numpy_helper

    op = draw(st.sampled_from(OPS))
    opset = draw(st.sampled_from([9, 11, 13, 17, 18, 21]))
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    dtype = np.dtype(draw(st.sampled_from(DATA_DTYPES)))
    x = (np.arange(int(np.prod(shape))) % 100 - 50).astype(dtype).reshape(shape)
    feeds = {"X": x}
    inputs = ["X"]
    initializers = []
    if op == "Concat":
        for k in range(draw(st.integers(0, 2))):
            other = list(shape)
            if draw(st.booleans()):
                other[draw(st.integers(0, rank - 1))] = draw(st.integers(1, 3))
            feeds[f"Y{k}"] = np.ones(other, dtype)
            inputs.append(f"Y{k}")
    else:
        typical = {"Slice": [2, 3, 4], "Split": [0, 1], "Reshape": [1], "Squeeze": [0, 1],
                   "Unsqueeze": [1], "Gather": [1], "Pad": [1, 2, 3], "Tile": [1],
                   "Expand": [1]}.get(op, [0])  # fmt: skip
        count = draw(st.sampled_from(typical) | st.integers(0, 4))
        for k in range(count):
            idt = np.dtype(draw(st.sampled_from(INDEX_DTYPES)))
            values = draw(st.lists(st.integers(-6, 6), max_size=5))
            name = f"c{k}"
            if draw(st.integers(0, 9)) == 0:
                name = ""  # an omitted optional input
            else:
                tensor = np.array(values, dtype=np.int64).astype(idt)
                if draw(st.integers(0, 5)) == 0 and tensor.size == 1:
                    tensor = tensor.reshape(())
                initializers.append(numpy_helper.from_array(tensor, name))
            inputs.append(name)
    attributes = {}
    names = st.lists(st.sampled_from(ATTRIBUTES), max_size=3, unique=True)
    for name in draw(st.just([]) | names):
        attributes[name] = _attribute_value(draw, name)
    n_out = draw(st.integers(1, 3)) if op == "Split" else 1
    outputs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op, inputs, outputs, name="n0", **attributes)
    graph = helper.make_graph(
        [node],
        "fuzz",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(feeds[n].dtype), list(feeds[n].shape)
            )
            for n in feeds
        ],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feeds


def bits(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    a = np.ascontiguousarray(np.asarray(a))
    return (a.dtype.str, a.shape, a.tobytes())


def check_onnx_case(model: Any, feeds: dict[str, np.ndarray]) -> str:
    """'ok' (matches the reference), 'rejected' (a DmlError) or raises AssertionError."""
    from onnx.reference import ReferenceEvaluator

    import dmlops
    import dmlops.onnx

    try:
        ours = dmlops.onnx.run(model, feeds)
    except dmlops.DmlError:
        return "rejected"
    try:
        ref = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:  # noqa: BLE001 - the reference's own rejection
        raise AssertionError(
            f"dmlops ran a model the ONNX reference rejects ({type(e).__name__}: {e})"
        ) from None
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref, strict=True):
        assert bits(a) == bits(b), (np.asarray(a), np.asarray(b))
    return "ok"


def _json_values(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=12,
    )


JSON_LEAVES = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.integers(-3, 9) | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["FLOAT32", "DML_TENSOR_DATA_TYPE_INT8", "NaN", "inf", "UINT64", "out0"])
)  # fmt: skip


@st.composite
def dxdispatch_cases(draw: Any, bases: list[dict[str, Any]]) -> dict[str, Any]:
    """A base model with 1-4 random replacements, insertions or deletions along JSON paths."""
    doc = json.loads(json.dumps(draw(st.sampled_from(bases))))
    for _ in range(draw(st.integers(1, 4))):
        node: Any = doc
        while True:
            if isinstance(node, dict) and node:
                key = draw(st.sampled_from(sorted(node)))
            elif isinstance(node, list) and node:
                key = draw(st.integers(0, len(node) - 1))
            else:
                break
            child = node[key]
            if not isinstance(child, (dict, list)) or draw(st.integers(0, 3)) == 0:
                action = draw(st.sampled_from(["replace", "replace", "delete", "insert"]))
                if action == "replace":
                    node[key] = draw(_json_values(JSON_LEAVES))
                elif action == "delete":
                    del node[key]
                elif isinstance(node, dict):
                    node[draw(st.text(max_size=12))] = draw(_json_values(JSON_LEAVES))
                else:
                    node.insert(key, draw(_json_values(JSON_LEAVES)))
                break
            node = child
    return doc  # type: ignore[no-any-return]


def _naive_dispatch(desc: Any, ins: list[bytearray], outs: list[bytearray]) -> bool:
    """Apply desc element by element to whole buffers; False where no naive mapping exists."""
    from dmlops.ops import JoinDesc, Slice1Desc, SliceDesc, SplitDesc
    from dmlops.tensor import packed_strides
    from reference import (
        apply_to_buffers,
        join_mapping,
        slice1_mapping,
        slice_mapping,
        split_mapping,
    )

    if isinstance(desc, SliceDesc):
        mapping = slice_mapping(desc.offsets, desc.strides, desc.output_tensor.sizes)
    elif isinstance(desc, Slice1Desc):
        mapping = slice1_mapping(
            desc.input_window_offsets,
            desc.input_window_sizes,
            desc.input_window_strides,
            desc.output_tensor.sizes,
        )
    elif isinstance(desc, SplitDesc):
        mapping = split_mapping([t.sizes for t in desc.output_tensors], desc.axis)
    elif isinstance(desc, JoinDesc):
        mapping = join_mapping([t.sizes for t in desc.input_tensors], desc.axis)
    else:
        return False

    def strides(fields: Any) -> list[Any]:
        return [t.strides or packed_strides(t.sizes) for _, t in fields]

    size = desc.input_fields()[0][1].data_type.element_size
    apply_to_buffers(
        mapping, size, ins, strides(desc.input_fields()), outs, strides(desc.output_fields())
    )
    return True


def check_dxdispatch_case(doc: dict[str, Any]) -> str:
    """'ok' (ran; matches the naive reference where it applies), 'rejected' (a DmlError)."""
    import io

    import dmlops
    from dmlops.dxdispatch import load_model, run_model

    try:
        model = load_model(doc, max_bytes=1 << 20)
        finals = run_model(model, echo=io.StringIO().write)
    except dmlops.DmlError:
        return "rejected"
    buffers = {n: bytearray(r.data.tobytes()) for n, r in model.resources.items()}
    for c in model.commands:
        if c["type"] != "dispatch":
            continue
        desc = model.dispatchables[c["dispatchable"]]
        names = []
        for _, value in sorted(c["bindings"].items(), key=lambda kv: _role(desc, kv[0])):
            names += value if isinstance(value, list) else [value]
        if any(not isinstance(n, str) for n in names) or len(set(names)) != len(names):
            return "ok"  # sub-range or aliased bindings: no naive model of them here
        n_in = len(desc.input_fields())
        ins = [buffers[n] for n in names[:n_in]]
        outs = [buffers[n] for n in names[n_in:]]
        if not _naive_dispatch(desc, ins, outs):
            return "ok"
    for name, data in finals.items():
        assert bytes(np.asarray(data).tobytes()) == bytes(buffers[name]), name
    return "ok"


def _role(desc: Any, key: str) -> int:
    inputs = [name.split("[")[0] for name, _ in desc.input_fields()]
    return 0 if key in inputs else 1
