"""Random ONNX test cases for the data-movement operators dmlops lowers: one node or a short
chain of nodes, valid or breaking one rule ONNX states, with dmlops' answer.

A case is made from a `Recipe` (seed, operators, opset, data type, caps on rank and
dimension size, and the rule an invalid case breaks): the same recipe gives the same model
and inputs on every machine, and a recipe with smaller caps or fewer operators gives a
smaller case of the same kind, which is how `differential.shrink` reduces a disagreement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = [
    "OPERATORS",
    "CHAINABLE",
    "INVALID_RULES",
    "DATA_RULES",
    "DATA_TYPES",
    "Recipe",
    "OnnxCase",
    "make_case",
    "drawn",
    "generate",
    "recipes",
]

DATA_TYPES = (
    "float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "bool",
)  # fmt: skip
_MAX_OPSET = 21  # the newest opset every operator below is drawn at (onnxruntime >= 1.16 runs 21)
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


@dataclass(frozen=True)
class Recipe:
    """What a case is made from: the same recipe gives the same case."""

    seed: int
    operators: tuple[str, ...]  # ONNX op types, applied in order (a chain when more than one)
    opset: int
    dtype: str
    max_rank: int = 4
    max_dim: int = 5
    invalid: str | None = None  # the rule (a key of INVALID_RULES) the case breaks

    @property
    def label(self) -> str:
        ops = "_".join(o.lower() for o in self.operators)
        bad = f"_invalid_{self.invalid}" if self.invalid else ""
        return f"{ops}_opset{self.opset}_{self.dtype}{bad}_s{self.seed}"


@dataclass
class OnnxCase:
    """One ONNX model with its inputs and dmlops' answer: `outputs` where dmlops ran it,
    `error` (dmlops' message) where it refused."""

    recipe: Recipe
    model: Any  # onnx.ModelProto
    inputs: dict[str, np.ndarray[Any, Any]]
    outputs: list[np.ndarray[Any, Any]] | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return f"test_{self.recipe.label}"

    @property
    def valid(self) -> bool:
        """Whether ONNX allows the model and its inputs."""
        return self.recipe.invalid is None

    @property
    def size(self) -> int:
        """How big the case is (elements of every input, plus nodes): what shrinking lowers."""
        return sum(int(a.size) for a in self.inputs.values()) + len(self.model.graph.node)


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


@dataclass
class _Builder:
    """The model under construction."""

    rng: np.random.Generator
    recipe: Recipe
    nodes: list[Any] = field(default_factory=list)
    initializers: list[Any] = field(default_factory=list)
    feeds: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    outputs: list[_Value] = field(default_factory=list)
    counter: int = 0

    @property
    def opset(self) -> int:
        return self.recipe.opset

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def feed(self, stem: str, array: np.ndarray[Any, Any]) -> _Value:
        name = self.fresh(stem)
        self.feeds[name] = array
        return _Value(name, tuple(array.shape), array.dtype)

    def constant(self, stem: str, array: np.ndarray[Any, Any]) -> str:
        from onnx import numpy_helper

        name = self.fresh(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, stem: str, values: Sequence[int], kind: Any = np.int64) -> str:
        """A 1-D integer initializer."""
        return self.constant(stem, np.array(values, kind).reshape(-1))

    def indices(self, stem: str, values: np.ndarray[Any, Any], kinds: Sequence[str]) -> str:
        """Index values as a graph input (read at run time) or an initializer."""
        array = np.asarray(values).astype(self.rng.choice(list(kinds)))
        if self.rng.random() < 0.6:
            return self.feed(stem, array).name
        return self.constant(stem, array)

    def node(self, op: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        from onnx import helper

        outs = [self.fresh(op.lower() + "_out") for _ in range(n_out)]
        kept = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op, list(inputs), outs, **kept))
        return outs

    def draw_axis(self, rank: int, since_negative: int = 11) -> int:
        axis = int(self.rng.integers(0, rank))
        if self.opset >= since_negative and self.rng.random() < 0.4:
            axis -= rank
        return axis

    def dim(self) -> int:
        return int(self.rng.integers(1, self.recipe.max_dim + 1))


def _data(rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype[Any]) -> Any:
    """Distinct-looking values of `dtype`; floats carry -0.0 and a NaN with a payload."""
    n = math.prod(shape)
    if dtype == np.bool_:
        return (rng.random(n) < 0.5).reshape(shape)
    if dtype.kind == "f":
        values = (rng.integers(-400, 400, n) / 4).astype(dtype)
        if n >= 3:
            values[rng.integers(0, n)] = -0.0
            nan = np.array(
                [0x7E01, 0x7FC00001, 0x7FF8000000000101][dtype.itemsize // 4], f"u{dtype.itemsize}"
            )
            values[rng.integers(0, n)] = nan.view(dtype)
        return values.reshape(shape)
    info = np.iinfo(dtype)
    low, high = max(info.min, -120), min(info.max, 120)
    return rng.integers(low, high + 1, n).astype(dtype).reshape(shape)


# ---- the operators: each takes the value it applies to and returns its result values ----


def _slice_length(start: int, end: int, step: int, d: int) -> int:
    """The length ONNX's Slice gives an axis of size d: negative starts and ends count from
    the end, then clamp to [0, d] (positive steps) or start to [0, d - 1] and end to
    [-1, d - 1] (negative steps; Python's slices clamp a start before the axis to -1)."""
    start, end = start + d if start < 0 else start, end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
    else:
        start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return max(0, -(-(end - start) // step))


def _slice(b: _Builder, x: _Value) -> list[_Value]:
    rank = len(x.shape)
    axes = [int(a) for a in b.rng.permutation(rank)[: int(b.rng.integers(1, rank + 1))]]
    starts, ends, steps, shape = [], [], [], list(x.shape)
    for a in axes:
        d = x.shape[a]
        step = 1 if b.opset < 10 else int(b.rng.choice([1, 1, 2, -1, -2, 3]))
        start = int(b.rng.integers(-d - 1, d + 2))
        end = int(b.rng.integers(-d - 1, d + 2))
        if b.rng.random() < 0.15:
            end = _INT64_MAX if step > 0 else _INT64_MIN
        if b.rng.random() < 0.3:  # keep most windows non-empty
            start, end = (0, d) if step > 0 else (d - 1, -d - 1)
        starts.append(start)
        ends.append(end)
        steps.append(step)
        shape[a] = _slice_length(start, end, step, d)
    named = [a - rank if b.opset >= 10 and b.rng.random() < 0.3 else a for a in axes]
    if b.opset < 10:
        out = b.node("Slice", [x.name], starts=starts, ends=ends, axes=named)
    else:
        wide = max(abs(v) for v in starts + ends) > np.iinfo(np.int32).max
        kind = np.int32 if not wide and b.rng.random() < 0.2 else np.int64  # one Tind

        def ints(stem: str, values: list[int]) -> str:
            return b.ints(stem, values, kind)

        ins = [x.name, ints("starts", starts), ints("ends", ends)]
        if any(s != 1 for s in steps) or b.rng.random() < 0.5 or named != list(range(rank)):
            ins.append(ints("axes", named))
            if any(s != 1 for s in steps) or b.rng.random() < 0.5:
                ins.append(ints("steps", steps))
        out = b.node("Slice", ins)
    return [_Value(out[0], tuple(shape), x.dtype)]


def _split(b: _Builder, x: _Value) -> list[_Value] | None:
    axis = b.draw_axis(len(x.shape))
    d = x.shape[axis]
    if d < 1:
        return None
    form = b.rng.choice(["even", "sizes", "num_outputs"] if b.opset >= 18 else ["even", "sizes"])
    if form == "even":
        parts = [n for n in range(1, min(d, 4) + 1) if d % n == 0]
        n = int(b.rng.choice(parts))
        sizes = [d // n] * n
    elif form == "num_outputs":
        n = int(b.rng.integers(1, min(d, 4) + 1))
        chunk = -(-d // n)
        sizes = [chunk] * (d // chunk) + ([d % chunk] if d % chunk else [])
        if len(sizes) != n:  # ONNX's uneven split must give exactly n outputs
            return None
    else:
        cuts = (
            sorted(
                int(c)
                for c in b.rng.choice(
                    np.arange(1, d), min(d - 1, int(b.rng.integers(0, 3))), replace=False
                )
            )
            if d > 1
            else []
        )
        edges = [0, *cuts, d]
        sizes = [edges[i + 1] - edges[i] for i in range(len(edges) - 1)]
    ins, attrs = [x.name], dict[str, Any](axis=axis)
    if form == "sizes":
        if b.opset >= 13:
            ins.append(b.ints("split", sizes))
        else:
            attrs["split"] = sizes
    elif form == "num_outputs" or b.opset >= 18:  # from opset 18 an even split names its count
        attrs["num_outputs"] = len(sizes)
    outs = b.node("Split", ins, len(sizes), **attrs)
    a = axis % len(x.shape)
    return [
        _Value(o, (*x.shape[:a], s, *x.shape[a + 1 :]), x.dtype)
        for o, s in zip(outs, sizes, strict=True)
    ]


def _concat(b: _Builder, x: _Value) -> list[_Value]:
    axis = b.draw_axis(len(x.shape))
    a = axis % len(x.shape)
    values = [x]
    for _ in range(int(b.rng.integers(1, 3))):
        shape = list(x.shape)
        shape[a] = int(b.rng.integers(0 if b.rng.random() < 0.1 else 1, b.recipe.max_dim + 1))
        values.append(b.feed("concat_in", _data(b.rng, shape, x.dtype)))
    order = [values[int(i)] for i in b.rng.permutation(len(values))]
    out = b.node("Concat", [v.name for v in order], axis=axis)
    total = sum(v.shape[a] for v in values)
    return [_Value(out[0], (*x.shape[:a], total, *x.shape[a + 1 :]), x.dtype)]


def _transpose(b: _Builder, x: _Value) -> list[_Value]:
    rank = len(x.shape)
    if b.rng.random() < 0.2:
        perm = list(range(rank))[::-1]
        out = b.node("Transpose", [x.name])
    else:
        perm = [int(p) for p in b.rng.permutation(rank)]
        out = b.node("Transpose", [x.name], perm=perm)
    return [_Value(out[0], tuple(x.shape[p] for p in perm), x.dtype)]


def _factors(rng: np.random.Generator, n: int, k: int) -> list[int]:
    dims = [1] * k
    m, p = n, 2
    while m > 1:
        while m % p == 0:
            dims[int(rng.integers(0, k))] *= p
            m //= p
        p += 1
    return dims


def _reshape(b: _Builder, x: _Value) -> list[_Value] | None:
    n = math.prod(x.shape)
    if n == 0:
        return None
    target = _factors(b.rng, n, int(b.rng.integers(1, b.recipe.max_rank + 1)))
    given = list(target)
    if b.rng.random() < 0.5:
        given[int(b.rng.integers(0, len(given)))] = -1
    for i in range(min(len(given), len(x.shape))):
        if given[i] == x.shape[i] and b.rng.random() < 0.5:
            given[i] = 0  # copy the input's size (allowzero 0)
    attrs = {"allowzero": 0} if b.opset >= 14 and b.rng.random() < 0.3 else {}
    out = b.node("Reshape", [x.name, b.ints("shape", given)], **attrs)
    return [_Value(out[0], tuple(target), x.dtype)]


def _blocks(b: _Builder, x: _Value, op: str) -> list[_Value] | None:
    if len(x.shape) != 4:
        return None
    n, c, h, w = x.shape
    if op == "DepthToSpace":
        sizes = [s for s in (2, 3) if c % (s * s) == 0]
    else:
        sizes = [s for s in (2, 3) if h % s == 0 and w % s == 0 and h and w]
    if not sizes:
        return None
    s = int(b.rng.choice(sizes))
    attrs: dict[str, Any] = {"blocksize": s}
    if op == "DepthToSpace" and b.opset >= 11 and b.rng.random() < 0.6:
        attrs["mode"] = str(b.rng.choice(["DCR", "CRD"]))
    out = b.node(op, [x.name], **attrs)
    shape = (
        (n, c // (s * s), h * s, w * s) if op == "DepthToSpace" else (n, c * s * s, h // s, w // s)
    )
    return [_Value(out[0], shape, x.dtype)]


def _pad(b: _Builder, x: _Value) -> list[_Value] | None:
    rank = len(x.shape)
    modes = ["constant", "constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else [])
    mode = str(b.rng.choice(modes))
    if mode != "constant" and min(x.shape) < 2:
        mode = "constant"
    axes = list(range(rank))
    if b.opset >= 18 and b.rng.random() < 0.4:
        axes = sorted(int(a) for a in b.rng.permutation(rank)[: int(b.rng.integers(1, rank + 1))])
    begin, end = [], []
    for a in axes:
        d = x.shape[a]
        low = -1 if mode == "constant" and d > 2 else 0
        high = min(3, d - 1) if mode in ("reflect", "wrap") else 3
        begin.append(int(b.rng.integers(low, high + 1)))
        end.append(int(b.rng.integers(low, high + 1)))
    value = float(b.rng.integers(-9, 10)) if mode == "constant" and b.rng.random() < 0.7 else None
    if b.opset < 11:
        full_b = [0] * rank
        full_e = [0] * rank
        for a, p, q in zip(axes, begin, end, strict=True):
            full_b[a], full_e[a] = p, q
        out = b.node("Pad", [x.name], pads=full_b + full_e, mode=mode, value=value)
    else:
        ins = [x.name, b.ints("pads", begin + end)]
        if value is not None or axes != list(range(rank)):
            fill = np.array(value or 0).astype(x.dtype)
            ins.append(b.constant("value", fill.reshape(())) if value is not None else "")
        if axes != list(range(rank)):
            ins.append(b.ints("axes", [a - rank if b.rng.random() < 0.3 else a for a in axes]))
        out = b.node("Pad", ins, mode=mode)
    shape = list(x.shape)
    for a, p, q in zip(axes, begin, end, strict=True):
        shape[a] += p + q
    return [_Value(out[0], tuple(shape), x.dtype)]


def _tile(b: _Builder, x: _Value) -> list[_Value]:
    repeats = [int(b.rng.integers(1, 4)) for _ in x.shape]
    out = b.node("Tile", [x.name, b.ints("repeats", repeats)])
    return [
        _Value(
            out[0],
            tuple(d * r for d, r in zip(x.shape, repeats, strict=True)),
            x.dtype,
        )
    ]


def _expand(b: _Builder, x: _Value) -> list[_Value]:
    target = [int(b.rng.integers(1, 4)) if d == 1 else int(b.rng.choice([d, 1])) for d in x.shape]
    lead = [
        b.dim() for _ in range(int(b.rng.integers(0, max(1, b.recipe.max_rank - len(x.shape) + 1))))
    ]
    given = lead + target
    out = b.node("Expand", [x.name, b.ints("shape", given)])
    # numpy's broadcast: a 1 takes the other side's size (an empty axis stays empty)
    shape = tuple(lead) + tuple(t if d == 1 else d for d, t in zip(x.shape, target, strict=True))
    return [_Value(out[0], shape, x.dtype)]


def _index_values(b: _Builder, shape: Sequence[int], d: int, negative: bool) -> Any:
    values = b.rng.integers(0, d, math.prod(shape)).reshape(shape)
    if negative:
        flip = b.rng.random(values.shape) < 0.3
        values = np.where(flip, values - d, values)
    return values


def _gather(b: _Builder, x: _Value) -> list[_Value] | None:
    axis = b.draw_axis(len(x.shape))
    a = axis % len(x.shape)
    d = x.shape[a]
    if d == 0:
        return None
    ishape = [b.dim() for _ in range(int(b.rng.integers(0, 3)))]
    ids = b.indices("indices", _index_values(b, ishape, d, b.opset >= 11), ["int64", "int32"])
    out = b.node("Gather", [x.name, ids], axis=axis)
    return [_Value(out[0], x.shape[:a] + tuple(ishape) + x.shape[a + 1 :], x.dtype)]


def _gather_elements(b: _Builder, x: _Value) -> list[_Value] | None:
    axis = b.draw_axis(len(x.shape))
    a = axis % len(x.shape)
    if 0 in x.shape:
        return None
    ishape = [int(b.rng.integers(1, d + 1)) for d in x.shape]
    ishape[a] = b.dim()
    ids = b.indices("indices", _index_values(b, ishape, x.shape[a], True), ["int64", "int32"])
    out = b.node("GatherElements", [x.name, ids], axis=axis)
    return [_Value(out[0], tuple(ishape), x.dtype)]


def _gather_nd(b: _Builder, x: _Value) -> list[_Value] | None:
    rank = len(x.shape)
    if 0 in x.shape:
        return None
    batch = int(b.rng.integers(0, rank)) if b.opset >= 12 and b.rng.random() < 0.4 else 0
    k = int(b.rng.integers(1, rank - batch + 1))
    middle = [b.dim() for _ in range(int(b.rng.integers(0, 2)))]
    coords = [
        _index_values(b, [*x.shape[:batch], *middle, 1], x.shape[batch + j], True) for j in range(k)
    ]
    ids = b.indices("indices", np.concatenate(coords, axis=-1), ["int64"])
    out = b.node("GatherND", [x.name, ids], batch_dims=batch if batch else None)
    shape = tuple(x.shape[:batch]) + tuple(middle) + tuple(x.shape[batch + k :])
    return [_Value(out[0], shape, x.dtype)]


def _scatter_elements(b: _Builder, x: _Value, op: str = "ScatterElements") -> list[_Value] | None:
    rank = len(x.shape)
    axis = b.draw_axis(rank)
    a = axis % rank
    if 0 in x.shape:
        return None
    ishape = [int(b.rng.integers(1, d + 1)) for d in x.shape]
    lines = np.moveaxis(np.empty(ishape, np.int64), a, -1)
    flat = lines.reshape(-1, ishape[a])
    for row in flat:  # each line's targets distinct: the result does not depend on order
        row[:] = b.rng.permutation(x.shape[a])[: ishape[a]]
    values = np.moveaxis(flat.reshape(lines.shape), -1, a)
    if b.opset >= 11:
        values = np.where(b.rng.random(values.shape) < 0.3, values - x.shape[a], values)
    ids = b.indices("indices", values, ["int64", "int32"])
    updates = b.feed("updates", _data(b.rng, ishape, x.dtype))
    out = b.node(op, [x.name, ids, updates.name], axis=axis)
    return [_Value(out[0], x.shape, x.dtype)]


def _scatter_nd(b: _Builder, x: _Value) -> list[_Value] | None:
    rank = len(x.shape)
    if 0 in x.shape:
        return None
    k = int(b.rng.integers(1, rank + 1))
    cells = math.prod(x.shape[:k])
    m = int(b.rng.integers(1, min(cells, 6) + 1))
    picked = b.rng.permutation(cells)[:m]
    coords = np.stack(np.unravel_index(picked, x.shape[:k]), axis=-1).astype(np.int64)
    coords = np.where(b.rng.random(coords.shape) < 0.3, coords - np.array(x.shape[:k]), coords)
    ids = b.indices("indices", coords, ["int64"])
    updates = b.feed("updates", _data(b.rng, [m, *x.shape[k:]], x.dtype))
    out = b.node("ScatterND", [x.name, ids, updates.name])
    return [_Value(out[0], x.shape, x.dtype)]


def _one_hot(b: _Builder, x: _Value) -> list[_Value] | None:
    if x.dtype.kind not in "iu":
        return None
    depth = int(b.rng.integers(1, b.recipe.max_dim + 2))
    rank = len(x.shape)
    axis = int(b.rng.integers(-rank - 1, rank + 1)) if b.rng.random() < 0.5 else None
    kinds = [t for t in ("float32", "int64", "float16", "int32", "uint8") if t]
    values = np.array([0, 1], dtype=str(b.rng.choice(kinds)))
    if b.rng.random() < 0.5:
        values = (
            np.array([-1, 7]).astype(values.dtype)
            if values.dtype.kind != "u"
            else np.array([3, 7], values.dtype)
        )
    depth_name = b.constant(
        "depth",
        np.array([depth], np.int64) if b.rng.random() < 0.5 else np.array(depth, np.float32),
    )
    out = b.node("OneHot", [x.name, depth_name, b.constant("values", values)], axis=axis)
    a = rank if axis is None else axis % (rank + 1)
    return [_Value(out[0], (*x.shape[:a], depth, *x.shape[a:]), values.dtype)]


def _reverse_sequence(b: _Builder, x: _Value) -> list[_Value] | None:
    if len(x.shape) < 2 or 0 in x.shape[:2]:
        return None
    batch_axis = int(b.rng.integers(0, 2))
    time_axis = 1 - batch_axis
    lens = b.rng.integers(1, x.shape[time_axis] + 1, x.shape[batch_axis]).astype(np.int64)
    out = b.node(
        "ReverseSequence", [x.name, b.indices("lens", lens, ["int64"])],
        batch_axis=batch_axis, time_axis=time_axis,
    )  # fmt: skip
    return [_Value(out[0], x.shape, x.dtype)]


def _squeeze(b: _Builder, x: _Value) -> list[_Value] | None:
    ones = [a for a, d in enumerate(x.shape) if d == 1]
    if not ones:
        return None
    rank = len(x.shape)
    axes = sorted(int(a) for a in b.rng.permutation(ones)[: int(b.rng.integers(1, len(ones) + 1))])
    attrs: dict[str, Any]
    if b.rng.random() < 0.3:  # no axes: every 1 goes
        axes, ins, attrs = ones, [x.name], dict[str, Any]()
    else:
        named = [a - rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in axes]
        ins = [x.name, b.ints("axes", named)] if b.opset >= 13 else [x.name]
        attrs = {} if b.opset >= 13 else {"axes": named}
    out = b.node("Squeeze", ins, **attrs)
    return [_Value(out[0], tuple(d for a, d in enumerate(x.shape) if a not in axes), x.dtype)]


def _unsqueeze(b: _Builder, x: _Value) -> list[_Value]:
    new_rank = len(x.shape) + int(b.rng.integers(1, 3))
    axes = sorted(int(a) for a in b.rng.permutation(new_rank)[: new_rank - len(x.shape)])
    named = [a - new_rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in axes]
    if b.opset >= 13:
        out = b.node("Unsqueeze", [x.name, b.ints("axes", named)])
    else:
        out = b.node("Unsqueeze", [x.name], axes=named)
    rest = iter(x.shape)
    shape = tuple(1 if a in axes else next(rest) for a in range(new_rank))
    return [_Value(out[0], shape, x.dtype)]


def _flatten(b: _Builder, x: _Value) -> list[_Value]:
    rank = len(x.shape)
    axis = int(b.rng.integers(0, rank + 1))
    named = axis - rank if b.opset >= 11 and axis < rank and b.rng.random() < 0.4 else axis
    out = b.node("Flatten", [x.name], axis=named)
    return [_Value(out[0], (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])), x.dtype)]


_COORDINATES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners",
                "tf_half_pixel_for_nn")  # fmt: skip
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize(b: _Builder, x: _Value) -> list[_Value] | None:
    """A nearest Resize of any axes by whole, fractional or shrinking scales, every
    coordinate transformation and nearest mode from opset 11 (UPSAMPLE_2D's copies or
    RESAMPLE2's), on the types onnxruntime's kernel takes."""
    if x.dtype not in (np.float32, np.int32, np.uint8, np.int8):
        return None
    rank = len(x.shape)
    choices = [1.0, 1.0, 0.5, 0.75, 1.5, 2.0, 3.0]
    factors = [float(b.rng.choice(choices)) for _ in range(rank)]
    shape = tuple(int(np.float32(f) * np.float32(d)) for d, f in zip(x.shape, factors, strict=True))
    if 0 in shape:
        return None
    attrs: dict[str, Any] = {}
    if b.opset >= 11 and b.rng.random() < 0.8:
        attrs = {
            "coordinate_transformation_mode": str(b.rng.choice(_COORDINATES)),
            "nearest_mode": str(b.rng.choice(_NEAREST)),
        }
    scales = b.constant("scales", np.array(factors, np.float32))
    ins = [x.name, scales] if b.opset < 11 else [x.name, "", scales]
    out = b.node("Resize", ins, mode="nearest", **attrs)
    return [_Value(out[0], shape, x.dtype)]


def _trilu(b: _Builder, x: _Value) -> list[_Value] | None:
    """A triangle of each matrix of the last two axes, by a constant diagonal."""
    if len(x.shape) < 2:
        return None
    k = int(b.rng.integers(-x.shape[-2] - 1, x.shape[-1] + 2))
    upper = int(b.rng.integers(0, 2))
    out = b.node("Trilu", [x.name, b.constant("k", np.array(k, np.int64))], upper=upper)
    return [_Value(out[0], x.shape, x.dtype)]


def _cast(b: _Builder, x: _Value) -> list[_Value] | None:
    """A Cast of integer data to a float type: CAST's (rounded to nearest even), defined
    for every value. (A float source carries a NaN with a payload, which CAST makes its one
    NaN and onnxruntime on x86 keeps; out of an integer type's range onnxruntime's answer
    is undefined behaviour: neither is drawn.)"""
    from onnx import helper

    if x.dtype.kind not in "iu":
        return None
    target = np.dtype(b.rng.choice(["float16", "float32", "float64"]))
    out = b.node("Cast", [x.name], to=helper.np_dtype_to_tensor_dtype(target))
    return [_Value(out[0], x.shape, target)]


def _identity(b: _Builder, x: _Value) -> list[_Value]:
    out = b.node("Identity", [x.name])
    return [_Value(out[0], x.shape, x.dtype)]


_Apply = Callable[[_Builder, _Value], "list[_Value] | None"]
OPERATORS: dict[str, tuple[_Apply, tuple[int, ...]]] = {
    # op type: (how it applies, the opsets cases are drawn at)
    "Slice": (_slice, (1, 10, 11, 13)),
    "Split": (_split, (2, 11, 13, 18)),
    "Concat": (_concat, (4, 11, 13)),
    "Transpose": (_transpose, (1, 13, 21)),
    "Reshape": (_reshape, (5, 13, 14, 21)),
    "DepthToSpace": (lambda b, x: _blocks(b, x, "DepthToSpace"), (1, 11, 13)),
    "SpaceToDepth": (lambda b, x: _blocks(b, x, "SpaceToDepth"), (1, 13)),
    "Pad": (_pad, (2, 11, 13, 18, 19, 21)),
    "Tile": (_tile, (6, 13)),
    "Expand": (_expand, (8, 13)),
    "Gather": (_gather, (1, 11, 13)),
    "GatherElements": (_gather_elements, (11, 13)),
    "GatherND": (_gather_nd, (11, 12, 13)),
    "ScatterElements": (_scatter_elements, (11, 13, 16, 18)),
    "ScatterND": (_scatter_nd, (11, 13, 16, 18)),
    "OneHot": (_one_hot, (9, 11)),
    "ReverseSequence": (_reverse_sequence, (10,)),
    "Squeeze": (_squeeze, (1, 11, 13, 21)),
    "Unsqueeze": (_unsqueeze, (1, 11, 13, 21)),
    "Flatten": (_flatten, (1, 9, 11, 13, 21)),
    "Identity": (_identity, (1, 13, 16, 21)),
    "Resize": (_resize, (10, 11, 13, 19)),
    "Trilu": (_trilu, (14,)),
    "Cast": (_cast, (13, 19)),
}
# operators a chain may apply to a value it made (OneHot starts from integers; it stays single)
CHAINABLE = tuple(op for op in OPERATORS if op != "OneHot")


def _input_shape(b: _Builder, op: str) -> list[int]:
    """A first input the operator applies to: DEPTH/SPACE get 4-D shapes that fit a block."""
    r = b.recipe
    if op in ("DepthToSpace", "SpaceToDepth"):
        s = int(b.rng.choice([2, 3])) if r.max_dim >= 3 else 2
        if op == "DepthToSpace":
            return [b.dim(), s * s * int(b.rng.integers(1, 3)), b.dim(), b.dim()]
        return [b.dim(), b.dim(), s * int(b.rng.integers(1, 3)), s * int(b.rng.integers(1, 3))]
    low = 2 if op == "ReverseSequence" else 1
    rank = int(b.rng.integers(low, max(low, r.max_rank) + 1))
    return [b.dim() for _ in range(rank)]


def _allowed(op: str, opset: int) -> set[str]:
    """The data types ONNX's schema allows for the operator's data input at this opset."""
    from onnx import defs

    schema = defs.get_schema(op, opset, "")
    constraint = next(
        c for c in schema.type_constraints if c.type_param_str == schema.inputs[0].type_str
    )
    return {t[len("tensor(") : -1] for t in constraint.allowed_type_strs}


# ---- invalid cases: one rule ONNX states, broken ----


def _invalid(b: _Builder, rule: str, x: _Value) -> list[_Value]:
    rank = len(x.shape)
    if rule == "transpose_perm_repeats":
        perm = [0] * rank
        out = b.node("Transpose", [x.name], perm=perm)
    elif rule == "concat_axis_out_of_range":
        other = b.feed("concat_in", _data(b.rng, x.shape, x.dtype))
        out = b.node("Concat", [x.name, other.name], axis=rank + int(b.rng.integers(0, 2)))
    elif rule == "concat_sizes_differ":
        shape = list(x.shape)
        shape[-1] += 1
        other = b.feed("concat_in", _data(b.rng, shape, x.dtype))
        out = b.node("Concat", [x.name, other.name], axis=0)
    elif rule == "split_sizes_do_not_sum":
        out = b.node("Split", [x.name, b.ints("split", [x.shape[0], 1])], 2, axis=0)
    elif rule == "slice_step_zero":
        out = b.node(
            "Slice",
            [x.name, b.ints("s", [0]), b.ints("e", [1]), b.ints("a", [0]), b.ints("t", [0])],
        )
    elif rule == "gather_index_out_of_range":
        d = x.shape[0]
        bad = np.array([0, d + int(b.rng.integers(0, 3))])
        out = b.node("Gather", [x.name, b.indices("indices", bad, ["int64"])], axis=0)
    elif rule == "gather_axis_out_of_range":
        out = b.node("Gather", [x.name, b.indices("indices", np.array([0]), ["int64"])], axis=rank)
    elif rule == "gather_elements_rank_differs":
        ids = np.zeros([1] * (rank + 1), np.int64)
        out = b.node("GatherElements", [x.name, b.indices("indices", ids, ["int64"])], axis=0)
    elif rule == "reshape_two_inferred":
        out = b.node("Reshape", [x.name, b.ints("shape", [-1, -1])])
    elif rule == "reshape_count_differs":
        out = b.node("Reshape", [x.name, b.ints("shape", [math.prod(x.shape) + 1])])
    elif rule == "expand_incompatible":
        out = b.node("Expand", [x.name, b.ints("shape", [d + 1 for d in x.shape])])
    elif rule == "tile_repeats_length":
        out = b.node("Tile", [x.name, b.ints("repeats", [1] * (rank + 1))])
    elif rule == "depth_to_space_channels":
        out = b.node("DepthToSpace", [x.name], blocksize=2)
    elif rule == "scatter_nd_index_out_of_range":
        ids = np.array([[x.shape[0]]], np.int64)
        updates = b.feed("updates", _data(b.rng, [1, *x.shape[1:]], x.dtype))
        out = b.node("ScatterND", [x.name, b.indices("indices", ids, ["int64"]), updates.name])
    else:
        raise KeyError(rule)
    return [_Value(out[0], (), x.dtype)]


# rule: (the operator named, an input shape maker)
INVALID_RULES: dict[str, tuple[str, Callable[[_Builder], list[int]]]] = {
    "transpose_perm_repeats": ("Transpose", lambda b: [b.dim() + 1, b.dim()]),
    "concat_axis_out_of_range": ("Concat", lambda b: [b.dim(), b.dim()]),
    "concat_sizes_differ": ("Concat", lambda b: [b.dim(), b.dim()]),
    "split_sizes_do_not_sum": ("Split", lambda b: [b.dim(), b.dim()]),
    "slice_step_zero": ("Slice", lambda b: [b.dim(), b.dim()]),
    "gather_index_out_of_range": ("Gather", lambda b: [b.dim(), b.dim()]),
    "gather_axis_out_of_range": ("Gather", lambda b: [b.dim(), b.dim()]),
    "gather_elements_rank_differs": ("GatherElements", lambda b: [b.dim(), b.dim()]),
    "reshape_two_inferred": ("Reshape", lambda b: [b.dim(), 2]),
    "reshape_count_differs": ("Reshape", lambda b: [b.dim(), b.dim()]),
    "expand_incompatible": ("Expand", lambda b: [b.dim() + 1, b.dim() + 1]),
    "tile_repeats_length": ("Tile", lambda b: [b.dim(), b.dim()]),
    "depth_to_space_channels": ("DepthToSpace", lambda b: [1, 3, b.dim(), b.dim()]),
    "scatter_nd_index_out_of_range": ("ScatterND", lambda b: [b.dim(), b.dim()]),
}


# rules broken only by index values: the CPU refuses them; a GPU, unless asked to validate
# indices, clamps the reads and drops the writes (DirectML leaves them undefined)
DATA_RULES = frozenset({"gather_index_out_of_range", "scatter_nd_index_out_of_range"})


def _model(b: _Builder, inputs: list[_Value], outputs: list[_Value], valid: bool) -> Any:
    from onnx import helper

    def info(v: _Value, known: bool) -> Any:
        kind = helper.np_dtype_to_tensor_dtype(v.dtype)
        return helper.make_tensor_value_info(v.name, kind, list(v.shape) if known else None)

    graph = helper.make_graph(
        b.nodes,
        b.recipe.label,
        [info(v, True) for v in inputs],
        [info(v, valid) for v in outputs],
        b.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", b.opset)], producer_name="dmlops"
    )
    model.ir_version = min(model.ir_version, 8 if b.opset <= 17 else 9)
    return model


def _answer(case: OnnxCase) -> OnnxCase:
    """dmlops' outputs for the case, or its refusal."""
    from .. import onnx as dml_onnx
    from ..device import Device
    from ..errors import DmlError

    try:
        outs = dml_onnx.run(case.model, case.inputs, device=Device(backend="numpy"))
        case.outputs = [np.asarray(o) for o in outs]
    except DmlError as e:
        case.error = f"{type(e).__name__}: {e}"
    return case


def make_case(recipe: Recipe, answer: bool = True) -> OnnxCase | None:
    """The case a recipe describes (with dmlops' answer unless `answer` is False), or None
    where its operators cannot apply in a row to the shapes its seed draws."""
    rng = np.random.default_rng(recipe.seed)
    b = _Builder(rng, recipe)
    dtype = np.dtype(recipe.dtype)
    if recipe.invalid is not None:
        op, shape_of = INVALID_RULES[recipe.invalid]
        x = b.feed("x", _data(rng, shape_of(b), dtype))
        outs = _invalid(b, recipe.invalid, x)
        model = _model(b, [_Value(n, a.shape, a.dtype) for n, a in b.feeds.items()], outs, False)
        case = OnnxCase(recipe, model, dict(b.feeds))
        return _answer(case) if answer else case
    first = recipe.operators[0]
    if first == "OneHot":
        x = b.feed(
            "x", b.rng.integers(-3, recipe.max_dim + 1, _input_shape(b, first)).astype(dtype)
        )
    else:
        x = b.feed("x", _data(rng, _input_shape(b, first), dtype))
    current, results = x, []
    for k, op in enumerate(recipe.operators):
        made = OPERATORS[op][0](b, current) if current.shape else None
        if made is None:
            return None
        pick = int(rng.integers(0, len(made)))
        if k + 1 < len(recipe.operators):
            results += [v for i, v in enumerate(made) if i != pick]
            current = made[pick]
        else:
            results += made
    model = _model(b, [_Value(n, a.shape, a.dtype) for n, a in b.feeds.items()], results, True)
    case = OnnxCase(recipe, model, dict(b.feeds))
    return _answer(case) if answer else case


def recipes(
    seed: int,
    count: int,
    operators: Sequence[str] | None = None,
    invalid_fraction: float = 0.1,
    chain_fraction: float = 0.2,
    dtypes: Sequence[str] = DATA_TYPES,
) -> list[Recipe]:
    """`count` recipes, deterministic for a seed: operators in turn, each at the opsets its
    schema changed, data types its schema allows, and some chains and invalid cases."""
    rng = np.random.default_rng(seed)
    ops = list(operators or OPERATORS)
    unknown = [o for o in ops if o not in OPERATORS]
    if unknown:
        raise KeyError(f"not an operator the generator knows: {', '.join(unknown)}")
    rules = [r for r, (op, _) in INVALID_RULES.items() if op in ops]
    found: list[Recipe] = []
    for k in range(count):
        case_seed = int(rng.integers(0, 2**31))
        op = ops[k % len(ops)]
        if rules and rng.random() < invalid_fraction:
            rule = str(rng.choice(rules))
            found.append(
                Recipe(
                    case_seed,
                    (INVALID_RULES[rule][0],),
                    13,
                    str(rng.choice(["float32", "int64", "uint8"])),
                    invalid=rule,
                )
            )
            continue
        chain: tuple[str, ...] = (op,)
        opset = int(rng.choice(OPERATORS[op][1]))
        if op in CHAINABLE and rng.random() < chain_fraction:
            others = [o for o in CHAINABLE if o in ops] or [op]
            chain = (op, *(str(o) for o in rng.choice(others, int(rng.integers(1, 3)))))
            opset = max(max(min(OPERATORS[o][1]) for o in chain), int(rng.choice([13, 18, 21])))
        kinds = set(dtypes)
        for o in chain:
            kinds &= _allowed(o, opset)
        if op == "OneHot":
            kinds = {t for t in dtypes if t.startswith(("int", "uint"))}
        if not kinds:
            continue
        dtype = str(rng.choice(sorted(kinds)))
        rank, dim = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        if case_seed % 20 == 0:  # one case in 20 large: the engines' paths for many rows
            rank, dim = 1 + case_seed // 20 % 3, 16 + case_seed // 60 % 33
        found.append(Recipe(case_seed, chain, opset, dtype, rank, dim))
    return found


def generate(
    seed: int,
    count: int,
    operators: Sequence[str] | None = None,
    invalid_fraction: float = 0.1,
    chain_fraction: float = 0.2,
) -> list[OnnxCase]:
    """Up to `count` cases with dmlops' answers, deterministic for a seed (a recipe whose
    operators cannot apply in a row to the shapes it drew is redrawn with the next seed)."""
    made = (drawn(r) for r in recipes(seed, count, operators, invalid_fraction, chain_fraction))
    return [case for case in made if case is not None]


def drawn(recipe: Recipe, tries: int = 8) -> OnnxCase | None:
    """The recipe's case, or, where its operators cannot apply in a row to the shapes its
    seed draws, the first of the next seeds' that can (None after `tries` seeds)."""
    for bump in range(tries):
        case = make_case(replace(recipe, seed=recipe.seed + bump))
        if case is not None:
            return case
    return None
