"""Random chains of ONNX data-movement nodes (Slice at any step, Transpose, Concat, Split,
Reshape, Unsqueeze, Squeeze, Gather, GatherElements, Pad in three modes, Tile, Expand,
Flatten, Identity, DepthToSpace, SpaceToDepth, ReverseSequence) over eight element types:
`dmlops.onnx.run` gives onnxruntime's answer bit for bit on every backend (WebGPU where an
adapter is found, CUDA where a GPU is). The graph compiler fuses each chain into one plan,
so these check the fusion of node kinds that no hand-written case pairs."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BACKENDS, to_device, to_host

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from onnx_oracle import bits, held_to  # noqa: E402

LARGEST = 4  # an input's longest axis (larger runs reach the GPUs' vector and tile kernels)
DTYPES = [np.float32, np.float16, np.int64, np.uint8, np.int32, np.float64, np.int8, np.bool_]
KINDS = [
    "Slice", "Transpose", "Concat", "Split", "Reshape", "Unsqueeze", "Squeeze", "Gather",
    "GatherElements", "Pad", "Tile", "Expand", "Flatten", "Identity", "DepthToSpace",
    "SpaceToDepth", "ReverseSequence",
]  # fmt: skip


class _Chain:
    """A model being built: its nodes, constants and the shape of the last node's output."""

    def __init__(self, shape: list[int]) -> None:
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self.shape = shape
        self.last = "X"

    def constant(self, values: Any, dtype: Any = np.int64) -> str:
        name = f"c{len(self.constants)}"
        self.constants.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def add(self, kind: str, inputs: list[str], shape: list[int], **attributes: Any) -> None:
        out = f"t{len(self.nodes)}"
        outs = [out, out + "_rest"] if kind == "Split" else [out]
        self.nodes.append(helper.make_node(kind, [self.last, *inputs], outs, **attributes))
        self.last, self.shape = out, shape


def _node(rng: random.Random, chain: _Chain, kind: str, dtype: Any) -> None:
    """Appends one node of `kind` that fits the chain's shape (or nothing where none does)."""
    shape = chain.shape
    rank = len(shape)
    axis = rng.randrange(rank)
    if kind == "Slice":
        axes = rng.sample(range(rank), rng.randint(1, rank))
        window = [slice(None)] * rank
        starts, ends, steps = [], [], []
        for a in axes:
            n = shape[a]
            start = rng.randint(-n - 1, n + 1)
            end = rng.choice([rng.randint(-n - 1, n + 1), 2**62, -(2**62)])
            step = rng.choice([1, -1, 2, -2, 3])
            starts.append(start)
            ends.append(end)
            steps.append(step)
            window[a] = slice(start, end, step)
        sliced = list(np.empty(shape)[tuple(window)].shape)
        ins = [chain.constant(v) for v in (starts, ends, axes, steps)]
        chain.add("Slice", ins, sliced)
    elif kind == "Transpose":
        perm = rng.sample(range(rank), rank)
        chain.add("Transpose", [], [shape[p] for p in perm], perm=perm)
    elif kind == "Concat":  # the chain's output with itself
        joined = list(shape)
        joined[axis] *= 2
        chain.add("Concat", [chain.last], joined, axis=axis - rank)
    elif kind == "Split" and shape[axis] >= 2:
        cut = rng.randint(1, shape[axis] - 1)
        first = list(shape)
        first[axis] = cut
        chain.add("Split", [chain.constant([cut, shape[axis] - cut])], first, axis=axis)
    elif kind == "Reshape":
        total = int(np.prod(shape))
        dims, rest = [-1], total
        for factor in (2, 3, 2):
            if rest % factor == 0 and rng.random() < 0.5:
                dims.append(factor)
                rest //= factor
        rng.shuffle(dims)
        chain.add("Reshape", [chain.constant(dims)], list(np.empty(total).reshape(dims).shape))
    elif kind == "Unsqueeze" and rank < 6:
        at = rng.randint(-rank - 1, rank)
        wider = list(np.expand_dims(np.empty(shape), at).shape)
        chain.add("Unsqueeze", [chain.constant([at])], wider)
    elif kind == "Squeeze" and rank > 1 and 1 in shape:
        at = shape.index(1)
        chain.add("Squeeze", [chain.constant([at])], shape[:at] + shape[at + 1 :])
    elif kind == "Gather":
        n = shape[axis]
        picked = [rng.randint(-n, n - 1) for _ in range(rng.randint(1, 4))]
        index = np.array(picked if rng.random() < 0.7 else picked[0])
        taken = list(np.take(np.empty(shape), index, axis).shape)
        ins = [chain.constant(index, rng.choice([np.int64, np.int32]))]
        chain.add("Gather", ins, taken, axis=axis)
    elif kind == "GatherElements":
        n = shape[axis]
        sizes = [rng.randint(1, m) for m in shape]
        index = np.array([rng.randint(-n, n - 1) for _ in range(int(np.prod(sizes)))])
        chain.add("GatherElements", [chain.constant(index.reshape(sizes))], sizes, axis=axis)
    elif kind == "Pad":
        mode = rng.choice(["constant", "edge", "reflect"])
        pads = [rng.randint(0, 2) for _ in range(2 * rank)]
        if mode == "reflect" and any(p >= n for p, n in zip(pads, shape + shape, strict=True)):
            return
        if dtype == np.bool_ and mode == "constant":
            return
        padded = [n + pads[i] + pads[i + rank] for i, n in enumerate(shape)]
        chain.add("Pad", [chain.constant(pads)], padded, mode=mode)
    elif kind == "Tile":
        repeats = [rng.randint(1, 2) for _ in range(rank)]
        tiled = [n * r for n, r in zip(shape, repeats, strict=True)]
        chain.add("Tile", [chain.constant(repeats)], tiled)
    elif kind == "Expand":
        target = [rng.choice([1, 3]) if n == 1 else n for n in shape]
        if rng.random() < 0.3:
            target = [2, *target]
        expanded = list(np.broadcast_shapes(tuple(shape), tuple(target)))
        chain.add("Expand", [chain.constant(target)], expanded)
    elif kind == "Flatten":
        at = rng.randint(0, rank)
        flat = [int(np.prod(shape[:at])), int(np.prod(shape[at:]))]
        chain.add("Flatten", [], flat, axis=at)
    elif kind == "Identity":
        chain.add("Identity", [], shape)
    elif kind == "DepthToSpace" and rank == 4 and shape[1] % 4 == 0:
        wider = [shape[0], shape[1] // 4, shape[2] * 2, shape[3] * 2]
        chain.add(kind, [], wider, blocksize=2, mode=rng.choice(["DCR", "CRD"]))
    elif kind == "SpaceToDepth" and rank == 4 and shape[2] % 2 == 0 and shape[3] % 2 == 0:
        deeper = [shape[0], shape[1] * 4, shape[2] // 2, shape[3] // 2]
        chain.add(kind, [], deeper, blocksize=2)
    elif kind == "ReverseSequence" and rank >= 2:
        batch, time = rng.choice([(0, 1), (1, 0)])
        lengths = [rng.randint(0, shape[time]) for _ in range(shape[batch])]
        chain.add(kind, [chain.constant(lengths)], shape, batch_axis=batch, time_axis=time)


def _model(rng: random.Random) -> tuple[Any, dict[str, np.ndarray]] | None:
    """A model of one to four nodes, each reading the one before, and its feed; None where
    no node fitted."""
    shape = [rng.randint(1, LARGEST) for _ in range(rng.randint(1, 4))]
    dtype = rng.choice(DTYPES)
    x: np.ndarray[Any, Any] = (np.arange(int(np.prod(shape))) * 7 % 23 - 11).astype(dtype)
    x = x.reshape(shape)
    if dtype == np.float32:
        x.reshape(-1)[0] = -0.0  # (its sign bit must survive)
    chain = _Chain(shape)
    for _ in range(rng.randint(1, 4)):
        if not chain.shape or 0 in chain.shape:
            break
        _node(rng, chain, rng.choice(KINDS), dtype)
    if not chain.nodes:
        return None
    element = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        chain.nodes,
        "chain",
        [helper.make_tensor_value_info("X", element, shape)],
        [helper.make_tensor_value_info(chain.last, element, None)],
        chain.constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, {"X": x}


def _check(seed: int, backend: str) -> None:
    import dmlops.onnx

    case = _model(random.Random(seed))
    if case is None:
        return
    model, feeds = case
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        want = session.run(None, feeds)
    except Exception:  # noqa: BLE001 - a chain onnxruntime refuses: nothing to compare
        return
    placed = {name: to_device(backend, x) for name, x in feeds.items()}
    got = [
        to_host(a) for a in dmlops.onnx.run(model, placed, device=dmlops.Device(backend=backend))
    ]
    kinds = [n.op_type for n in model.graph.node]
    want = held_to(model, feeds, got, want)
    assert [bits(a) for a in got] == [bits(b) for b in want], (kinds, feeds["X"].dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_chains_give_onnxruntimes_bits(backend: str, seed: int) -> None:
    _check(seed, backend)


def test_the_chains_reach_every_kind_of_node() -> None:
    """(The generator itself: over a few hundred seeds every node kind appears.)"""
    seen: set[str] = set()
    for seed in range(400):
        case = _model(random.Random(seed))
        if case is not None:
            seen |= {n.op_type for n in case[0].graph.node}
    assert seen == set(KINDS), set(KINDS) - seen
