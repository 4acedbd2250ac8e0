"""Whole ONNX models as one dmlops Graph: one plan from the model's inputs to its outputs.

Slice, Split, Concat, Identity, Transpose, Reshape, Squeeze, Unsqueeze and
Flatten are lowered onto SLICE1, SPLIT, JOIN and Reinterpret nodes. Their
integer parameters (starts, ends, axes, steps, split, shape) must be known
when the model is compiled: initializers, or model inputs whose values are
given. ONNX allows empty tensors where DirectML forbids size 0: those are
carried as shapes and produced empty, without a dispatch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError, ModelError
from ..graph import Graph, GraphTensor
from ..tensor import FeatureLevel, packed_strides
from .compiled import CompiledModel, array_dtype
from .host import HOST_OPS, folded, host_array, host_eval
from .nodes import (
    _check_schema,
    _depth_space_views,
    _dtypes,
    _pad,
    _reshaped,
    _resized,
    _triangle,
)
from .params import attributes, axis_of, slice_window, split_sizes, unsqueeze_axes
from .values import Value, _Empty, _Scalar, _shape, _tensor, graph_value

__all__ = [
    "NeedsRunTime",
    "compile_model",
    "lower_model",
    "Lowered",
    "GRAPH_OPS",
    "INDEXED_OPS",
    "RUNTIME_OPS",
]

GRAPH_OPS = (
    "Slice",
    "Split",
    "Concat",
    "Identity",
    "Transpose",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "DepthToSpace",
    "SpaceToDepth",
    "Pad",
    "Tile",
    "Expand",
    "Resize",
    "Upsample",
    "Trilu",
)
# which node inputs are integer parameters (1-D tensors, read at compile time), by position
_PARAMETERS = {
    "Slice": {1, 2, 3, 4},
    "Split": {1},
    "Reshape": {1},
    "Squeeze": {1},
    "Unsqueeze": {1},
    "Pad": {1, 2, 3},
    "Tile": {1},
    "Expand": {1},
    "OneHot": {1},
    "Resize": {1, 2, 3},
    "MaxUnpool": {2},
    "Upsample": {1},
    "Trilu": {1},
}
INDEXED_OPS = (
    "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "OneHot",
    "ReverseSequence", "MaxUnpool",
)  # fmt: skip
# which always read data at run time (a Gather at a few constant indices lowers to slices)
RUNTIME_OPS = tuple(op for op in INDEXED_OPS if op != "Gather")
_SLICED_GATHER = 8  # a Gather at up to this many constant indices fuses as slices; more: GATHER
_SCALAR_PARAMETERS = {
    ("Pad", 2),
    ("OneHot", 1),
    ("Trilu", 1),
}  # Pad's constant_value: a scalar (or one element)


class NeedsRunTime(ModelError):
    """The model's data flow needs values at run time (indices, index arithmetic): it runs in
    steps (staged.py) rather than as one plan."""


def compile_model(
    model: Any,
    arrays: Mapping[str, Any],
    device: Device | None = None,
) -> CompiledModel:
    """Lower `model` into one Graph for the shapes and dtypes of `arrays` (all its inputs);
    NeedsRunTime where its data flow needs values at run time (staged.py runs those)."""
    device = device or Device(FeatureLevel.newest())
    return _compile_graph(model, arrays, device, opset_of(model))


def parameter_readers(constants: Mapping[str, Any]) -> tuple[Any, Any]:
    """(ints, number): a node input's integer list, and a one-element input's value (Pad's
    constant_value), read from `constants` (an error names the node where one is unknown)."""

    def known(node: Any, k: int) -> Any:
        name = node.input[k]
        if name not in constants:
            raise ModelError(
                f"ONNX node '{node.name or node.op_type}': input '{name}' must be known when "
                "the model is compiled (an initializer or a given input)"
            )
        return np.asarray(constants[name])

    def ints(node: Any, k: int) -> list[int] | None:
        if k >= len(node.input) or not node.input[k]:
            return None
        return [int(v) for v in known(node, k).ravel()]

    def number(node: Any, k: int, every: bool = False) -> Any:
        """The input's one value; with `every`, all its values as floats (None if absent)."""
        if every:
            if k >= len(node.input) or not node.input[k]:
                return None
            return [float(v) for v in known(node, k).ravel()]
        return known(node, k).reshape(-1)[0].item()

    return ints, number


def opset_of(model: Any) -> int:
    """The model's ONNX (default domain) opset version."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


@dataclass
class Lowered:
    """A model's nodes applied to a graph builder: each value by name (graph tensors, empty
    and scalar values), its ONNX element type, the constants (initializers and what was
    folded), the data inputs entered in order, and the constants read as data."""

    values: dict[str, Value]
    dtypes: dict[str, np.dtype[Any]]
    constants: dict[str, Any]
    data_inputs: list[str]
    constant_inputs: dict[str, np.ndarray[Any, Any]]


# (node, attributes, the lowering so far) -> each output's value and type
RunTime = Callable[[Any, dict[str, Any], Lowered], list[tuple[Value, np.dtype[Any]]]]


def _compile_graph(
    model: Any, arrays: Mapping[str, Any], device: Device, opset: int
) -> CompiledModel:
    """The whole model as one Graph (NeedsRunTime where it cannot be)."""
    g = Graph(device.feature_level, carry_types=True)
    low = lower_model(model, arrays, g, opset, device)
    graph, values, constants, dtypes = model.graph, low.values, low.constants, low.dtypes
    data_inputs, constant_inputs = low.data_inputs, low.constant_inputs
    outputs: list[tuple[str, Any]] = []
    graph_tensors: list[GraphTensor] = []
    for o in graph.output:
        if o.name not in constants and o.name not in values:
            raise ModelError(f"ONNX graph output '{o.name}' is produced by no node or input")
        if o.name in constants:
            outputs.append((o.name, ("const", np.asarray(constants[o.name]))))
            continue
        v = values[o.name]
        if isinstance(v, _Empty):
            outputs.append((o.name, ("empty", v.shape, v.dtype)))
        else:
            outputs.append((o.name, ("graph", len(graph_tensors), _shape(v), dtypes[o.name])))
            graph_tensors.append(_tensor(v))
    operator = g.compile(graph_tensors, device) if graph_tensors else None
    scalars = [n for n in data_inputs if isinstance(values[n], _Scalar)]
    return CompiledModel(operator, data_inputs, outputs, device, constant_inputs, scalars)


def lower_model(
    model: Any,
    arrays: Mapping[str, Any],
    g: Any,
    opset: int,
    device: Device,
    *,
    constants: dict[str, Any] | None = None,
    run_time: RunTime | None = None,
) -> Lowered:
    """Apply `model`'s nodes to the graph builder `g` (a Graph, or any object with its
    builder methods) for the shapes and dtypes of `arrays`. `constants` (filled here: the
    initializers, folded values and given parameters) lets the builder see the constants it
    is asked to enter as data; `run_time(node, attributes, lowered)` makes the nodes that
    would need values at run time (NeedsRunTime without it)."""
    from onnx import numpy_helper

    graph = model.graph
    constants = {} if constants is None else constants
    for i in graph.initializer:
        try:
            constants[i.name] = numpy_helper.to_array(i)
        except Exception as e:  # noqa: BLE001 - onnx raises ValueError, TypeError, ... on bad data
            raise ModelError(
                f"ONNX initializer '{i.name}': unreadable ({type(e).__name__}: {e})"
            ) from None
    parameter_names = {
        n.input[k]
        for n in graph.node
        for k in _PARAMETERS.get(n.op_type, ())
        if k < len(n.input) and n.input[k]
    }
    for name in parameter_names:
        if name not in constants and name in arrays:
            constants[name] = host_array(arrays[name])
    values: dict[str, Value] = {}
    dtypes: dict[str, np.dtype[Any]] = {}  # each value's element type, as ONNX has it
    data_inputs: list[str] = []
    constant_inputs: dict[str, np.ndarray[Any, Any]] = {}  # constants the graph reads as data

    def enter(name: str, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        value = graph_value(g, shape, dtype, name)
        values[name], dtypes[name] = value, dtype
        if not isinstance(value, _Empty):
            data_inputs.append(name)

    for i in graph.input:
        if i.name in constants or i.name in parameter_names:
            continue
        if i.name not in arrays:
            raise ModelError(f"ONNX model input '{i.name}' was not given")
        a = arrays[i.name]
        enter(i.name, tuple(int(n) for n in a.shape), array_dtype(a))

    ints, number = parameter_readers(constants)
    low = Lowered(values, dtypes, constants, data_inputs, constant_inputs)

    def made(node: Any, outs: list[tuple[Value, np.dtype[Any]]]) -> None:
        for name, (value, dtype) in zip(node.output, outs, strict=True):
            values[name], dtypes[name] = value, dtype

    for node in graph.node:
        where = f"ONNX node '{node.name or node.op_type}'"
        if node.op_type in RUNTIME_OPS and any(n and n not in constants for n in node.input):
            if run_time is None:
                raise NeedsRunTime(f"{where}: {node.op_type} reads data at run time")
            made(node, run_time(node, attributes(node), low))
            continue
        if node.op_type in RUNTIME_OPS and node.domain in ("", "ai.onnx"):
            constants[node.output[0]] = folded(node, constants, device)
            continue
        if node.domain not in ("", "ai.onnx") or node.op_type not in GRAPH_OPS + HOST_OPS:
            raise ModelError(
                f"{where}: {node.op_type} is neither data movement ("
                + ", ".join(GRAPH_OPS)
                + ") nor shape arithmetic evaluated when the model is compiled"
            )
        for name in node.input:
            if name and name not in constants and name not in values:
                raise ModelError(
                    f"{where}: input '{name}' is no graph input, initializer or earlier output"
                )
        _check_schema(node, opset, _dtypes(node, constants, dtypes))
        for k in _PARAMETERS.get(node.op_type, ()):
            if k < len(node.input) and node.input[k] in constants:
                dims = np.ndim(constants[node.input[k]])
                if (node.op_type, k) in _SCALAR_PARAMETERS:
                    if np.size(constants[node.input[k]]) != 1:
                        raise ModelError(f"{where}: input '{node.input[k]}' must hold one value")
                elif dims != 1:
                    raise ModelError(
                        f"{where}: input '{node.input[k]}' has {dims} dimensions: "
                        f"{node.op_type} takes a 1-D tensor there"
                    )
        a = attributes(node)
        names = list(node.input)
        host_inputs = all(not n or n in constants for n in names)
        shape_of_data = (
            node.op_type in ("Shape", "Size", "EyeLike") and names and names[0] in values
        )
        if node.op_type in HOST_OPS and (host_inputs or shape_of_data):
            ins: list[Any] = [
                None if not n else (_shape(values[n]) if shape_of_data and k == 0 else constants[n])
                for k, n in enumerate(names)
            ]
            if shape_of_data and node.op_type == "EyeLike":  # its shape and type, no values
                ins[0] = np.empty(_shape(values[names[0]]), dtypes[names[0]])
            try:
                outs_host = host_eval(node, a, ins, opset)
            except (ValueError, IndexError, TypeError, KeyError) as e:
                raise ModelError(f"{where}: shape arithmetic failed: {e}") from None
            except ModelError as e:
                raise ModelError(f"{where}: {e}") from None
            constants.update(zip(node.output, outs_host, strict=False))
            continue
        if (
            node.op_type == "Gather"
            and names[0] in values
            and names[1] in constants
            and (np.size(constants[names[1]]) <= _SLICED_GATHER)
            and np.ndim(constants[names[1]]) <= 1
        ):
            try:
                outs = [
                    _gathered(g, node, a, values[names[0]], constants[names[1]], dtypes[names[0]])
                ]
            except DmlError as e:
                raise ModelError(f"{where}: {e}") from None
            except (IndexError, TypeError, ValueError, OverflowError) as e:
                raise ModelError(f"{where}: malformed node ({type(e).__name__}: {e})") from None
            values.update(zip(node.output, outs, strict=True))
            dtypes.update((o, dtypes[names[0]]) for o in node.output)
            continue
        if node.op_type not in GRAPH_OPS and run_time is not None:
            made(node, run_time(node, a, low))
            continue
        if node.op_type not in GRAPH_OPS:
            raise NeedsRunTime(
                f"{where}: {node.op_type} would need the values of data tensors at run time "
                "(only shapes are known when the model is compiled)"
            )
        parameters = _PARAMETERS.get(node.op_type, ())
        for k, name in enumerate(names):  # a constant read as data: an input placed once
            if name and k not in parameters and name not in values:
                host = np.asarray(constants[name])
                enter(name, tuple(host.shape), host.dtype)
                constant_inputs[name] = host
        x = values[names[0]]
        shape = _shape(x)
        try:
            outs = _lower(g, node, a, x, shape, opset, ints, number, values, dtypes[names[0]])
        except DmlError as e:
            raise ModelError(f"{where}: {e}") from None
        except KeyError as e:
            raise ModelError(f"{where}: required attribute {e} is missing") from None
        except (IndexError, TypeError, ValueError, OverflowError) as e:
            raise ModelError(f"{where}: malformed node ({type(e).__name__}: {e})") from None
        values.update(zip(node.output, outs, strict=True))
        dtypes.update((o, dtypes[names[0]]) for o in node.output)

    return low


def _gathered(
    g: Graph, node: Any, a: dict[str, Any], x: Value, indices: Any, dtype: np.dtype[Any]
) -> Value:
    """Gather of a data tensor at constant indices: slices (joined) and a reshape."""
    shape = _shape(x)
    axis = axis_of(int(a.get("axis", 0)), len(shape), "Gather")
    idx = np.asarray(indices)
    if idx.ndim > 1:
        raise ModelError("Gather: indices of rank > 1 on data are not supported")
    n = shape[axis]
    picks = [int(i) + n if int(i) < 0 else int(i) for i in idx.ravel()]
    if any(not 0 <= i < n for i in picks):
        raise ModelError(f"Gather: indices {idx.ravel().tolist()} are outside [-{n}, {n - 1}]")
    out_shape = list(shape[:axis]) + list(idx.shape) + list(shape[axis + 1 :])
    if isinstance(x, _Empty) or not picks or 0 in out_shape:
        return _Empty(tuple(out_shape), dtype)
    if isinstance(x, _Scalar):
        raise ModelError("Gather: the data is a scalar (rank 0)")
    parts = []
    for i in picks:
        offsets = [i if d == axis else 0 for d in range(len(shape))]
        sizes = [1 if d == axis else s for d, s in enumerate(shape)]
        parts.append(g.slice1(x, offsets, sizes, [1] * len(shape), name=node.name or None))
    joined = parts[0] if len(parts) == 1 else g.join(parts, axis, name=node.name or None)
    return _reshaped(g, joined, out_shape, dtype)


def _lower(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    opset: int,
    ints: Any,
    number: Any,
    values: dict[str, Value],
    dtype: np.dtype[Any],
) -> list[Value]:
    op = node.op_type
    rank = len(shape)
    if op == "Identity":
        return [x]
    if isinstance(x, _Scalar) and op not in ("Reshape", "Squeeze", "Unsqueeze", "Expand", "Pad"):
        if op in ("Transpose", "Tile") and not (a.get("perm") or ints(node, 1)):
            return [x]  # no axes to move or repeat
        raise ModelError(f"{op}: its input is a scalar (rank 0); {op} takes rank >= 1")
    if op == "Slice":
        if opset < 10:
            starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
        else:
            starts, ends, axes, steps = ints(node, 1), ints(node, 2), ints(node, 3), ints(node, 4)
        offsets, sizes, strides, out = slice_window(shape, starts, ends, axes, steps)
        if 0 in out or isinstance(x, _Empty):
            return [_Empty(tuple(out), dtype)]
        return [g.slice1(_tensor(x), offsets, sizes, strides, out, name=node.name or None)]
    if op == "Split":
        axis = axis_of(int(a.get("axis", 0)), rank, "Split")
        split = a.get("split") if opset < 13 else ints(node, 1)
        sizes = split_sizes(shape[axis], len(node.output), split, a.get("num_outputs"))
        shapes = [tuple(s if d == axis else n for d, n in enumerate(shape)) for s in sizes]
        nonempty = [s for s in sizes if s > 0]
        if isinstance(x, _Empty) or not nonempty:
            return [_Empty(sh, dtype) for sh in shapes]
        pieces = iter(g.split(_tensor(x), axis, nonempty, name=node.name or None))
        return [
            next(pieces) if s > 0 else _Empty(sh, dtype)
            for s, sh in zip(sizes, shapes, strict=True)
        ]
    if op == "Pad":
        return [_pad(g, node, a, x, shape, opset, ints, number, dtype)]
    if op == "Tile":
        repeats = ints(node, 1)
        if repeats is None or len(repeats) != rank or min(repeats, default=0) < 0:
            raise ModelError(f"Tile: repeats {repeats} must be {rank} counts of at least 0")
        tiled = tuple(n * r for n, r in zip(shape, repeats, strict=True))
        if 0 in tiled or isinstance(x, _Empty):
            return [_Empty(tiled, dtype)]
        return [g.tile(_tensor(x), repeats, name=node.name or None)]
    if op == "Expand":
        target = ints(node, 1)
        if target is None:
            raise ModelError("Expand: the shape input is missing")
        try:
            wide = tuple(int(v) for v in np.broadcast_shapes(shape, tuple(target)))
        except ValueError:
            raise ModelError(f"Expand: {list(shape)} does not broadcast with {target}") from None
        if 0 in wide or isinstance(x, _Empty):
            return [_Empty(wide, dtype)]
        padded = (1,) * (len(wide) - rank) + tuple(shape)
        y = x if padded == tuple(shape) else _reshaped(g, x, padded, dtype)
        if wide == padded or isinstance(y, _Empty):
            return [y]
        return [g.broadcast(_tensor(y), wide, name=node.name or None)]
    if op == "Concat":
        parts = [values[n] for n in node.input]
        axis = axis_of(int(a["axis"]), rank, "Concat")
        out_shape = list(shape)
        out_shape[axis] = sum(_shape(p)[axis] for p in parts)
        live = [p for p in parts if isinstance(p, GraphTensor)]
        if not live or 0 in out_shape:
            return [_Empty(tuple(out_shape), dtype)]
        return [g.join(live, axis, name=node.name or None)]
    if op == "Transpose":
        perm = [int(p) for p in a.get("perm", list(range(rank))[::-1])]
        if sorted(perm) != list(range(rank)):
            raise ModelError(f"Transpose: perm {perm} is not a permutation of {rank} axes")
        new_shape = tuple(shape[p] for p in perm)
        if isinstance(x, _Empty):
            return [_Empty(new_shape, dtype)]
        packed = packed_strides(shape)
        return [
            g.reinterpret(_tensor(x), new_shape, [packed[p] for p in perm], name=node.name or None)
        ]
    if op == "Reshape":
        target = ints(node, 1)
        allowzero = int(a.get("allowzero", 0))
        new = [(shape[i] if (t == 0 and not allowzero) else t) for i, t in enumerate(target)]
        if new.count(-1) > 1:
            raise ModelError("Reshape: more than one -1 in the shape")
        if -1 in new:
            known = math.prod(t for t in new if t != -1)
            if known == 0:
                raise ModelError("Reshape: -1 with a zero-sized dimension")
            new[new.index(-1)] = math.prod(shape) // known
        if math.prod(new) != math.prod(shape):
            raise ModelError(
                f"Reshape: {shape} has {math.prod(shape)} elements, not {math.prod(new)}"
            )
        return [_reshaped(g, x, new, dtype)]
    if op == "Squeeze":
        axes = a.get("axes") if opset < 13 else ints(node, 1)
        if axes is None:
            drop = {d for d, n in enumerate(shape) if n == 1}
        else:
            drop = {axis_of(int(d), rank, "Squeeze") for d in axes}
            if any(shape[d] != 1 for d in drop):
                raise ModelError(f"Squeeze: axes {sorted(drop)} of {shape} are not all of size 1")
        return [_reshaped(g, x, [n for d, n in enumerate(shape) if d not in drop], dtype)]
    if op == "Unsqueeze":
        axes = a.get("axes") if opset < 13 else ints(node, 1)
        at = unsqueeze_axes(axes, rank)
        out_rank = rank + len(at)
        it = iter(shape)
        return [_reshaped(g, x, [1 if d in at else next(it) for d in range(out_rank)], dtype)]
    if op in ("Resize", "Upsample"):
        return [_resized(g, node, a, x, shape, opset, ints, number, dtype)]
    if op == "Trilu":
        return [_triangle(g, node, a, x, shape, ints, dtype)]
    if op in ("DepthToSpace", "SpaceToDepth"):
        b = int(a["blocksize"])
        mode = str(
            a.get("mode", b"DCR").decode()
            if isinstance(a.get("mode"), bytes)
            else a.get("mode", "DCR")
        )
        if isinstance(x, _Empty):  # DirectML has no empty tensors
            return [_depth_space_views(g, op, x, b, mode, dtype)]
        if op == "DepthToSpace":
            return [g.depth_to_space(_tensor(x), b, mode, name=node.name or None)]
        return [g.space_to_depth(_tensor(x), b, mode, name=node.name or None)]
    # Flatten
    axis = int(a.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise ModelError(f"Flatten: axis {a.get('axis', 1)} is outside [-{rank}, {rank}]")
    return [_reshaped(g, x, [math.prod(shape[:axis]), math.prod(shape[axis:])], dtype)]
