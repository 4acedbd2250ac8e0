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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .device import CompiledOperator, Device
from .errors import DmlError, ModelError
from .graph import Graph, GraphTensor
from .tensor import packed_strides

__all__ = ["CompiledModel", "compile_model", "GRAPH_OPS"]

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
)
# which node inputs are integer parameters (read at compile time), by position
_PARAMETERS = {
    "Slice": {1, 2, 3, 4},
    "Split": {1},
    "Reshape": {1},
    "Squeeze": {1},
    "Unsqueeze": {1},
}


@dataclass(frozen=True)
class _Empty:
    """An ONNX tensor with a zero-sized dimension: a shape and a dtype, no data."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]


Value = GraphTensor | _Empty


def _shape(v: Value) -> tuple[int, ...]:
    return v.shape if isinstance(v, _Empty) else v.sizes


class CompiledModel:
    """A model compiled for given input shapes: `run(inputs)` executes it in one plan."""

    def __init__(
        self,
        operator: CompiledOperator | None,
        data_inputs: list[str],
        outputs: list[tuple[str, Any]],
        device: Device,
    ) -> None:
        self.operator = operator
        self.data_inputs = data_inputs
        self.outputs = outputs  # (name, ("graph", k) | ("empty", shape, dtype))
        self.device = device

    @property
    def plan(self) -> Any:
        """The compiled plan (None when every output is empty)."""
        return None if self.operator is None else self.operator.plan

    def run(self, values: Mapping[str, Any]) -> list[Any]:
        """Outputs for these input arrays (on the device's backend)."""
        backend = self.device.backend
        graph_outs = [o for o in self.outputs if o[1][0] == "graph"]
        arrays: list[Any] = []
        if self.operator is not None:
            template = values[self.data_inputs[0]]
            arrays = [
                backend.new_like(template, tuple(self.operator.desc.output_fields()[k][1].sizes))
                for _, (_, k) in graph_outs
            ]
            ins = [values[n] for n in self.data_inputs]
            self.operator.execute(ins, [_flat(a) for a in arrays])
        produced = iter(arrays)
        result = []
        for _, spec in self.outputs:
            if spec[0] == "graph":
                result.append(next(produced))
            else:
                result.append(_empty(self.device, spec[1], spec[2]))
        return result


def _flat(a: Any) -> Any:
    return a.reshape(-1)


def _empty(device: Device, shape: tuple[int, ...], dtype: Any) -> Any:
    if device.backend.name == "cuda":
        import cupy

        return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)


def _attrs(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _axis(axis: int, rank: int, op: str) -> int:
    if not -rank <= axis < rank:
        raise ModelError(f"{op}: axis {axis} is outside [-{rank}, {rank - 1}]")
    return axis + rank if axis < 0 else axis


def _reshaped(g: Graph, x: Value, shape: Sequence[int]) -> Value:
    shape = tuple(int(s) for s in shape)
    if isinstance(x, _Empty) or 0 in shape:
        dtype = x.dtype if isinstance(x, _Empty) else x.desc.data_type.numpy_dtype
        return _Empty(shape, np.dtype(dtype))
    if not shape:
        raise ModelError("a tensor of rank 0 has no DirectML tensor (DimensionCount >= 1)")
    return g.reinterpret(x, shape, packed_strides(shape))


def compile_model(
    model: Any,
    arrays: Mapping[str, Any],
    device: Device | None = None,
) -> CompiledModel:
    """Lower `model` into one Graph for the shapes and dtypes of `arrays` (all its inputs)."""
    from onnx import numpy_helper

    from .onnx import slice_window, split_sizes

    device = device or Device()
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    graph = model.graph
    constants: dict[str, np.ndarray[Any, Any]] = {
        i.name: numpy_helper.to_array(i) for i in graph.initializer
    }
    parameter_names = {
        n.input[k]
        for n in graph.node
        for k in _PARAMETERS.get(n.op_type, ())
        if k < len(n.input) and n.input[k]
    }
    for name in parameter_names:
        if name not in constants and name in arrays:
            constants[name] = _host(arrays[name])
    g = Graph(device.feature_level)
    values: dict[str, Value] = {}
    data_inputs: list[str] = []
    for i in graph.input:
        if i.name in constants or i.name in parameter_names:
            continue
        if i.name not in arrays:
            raise ModelError(f"ONNX model input '{i.name}' was not given")
        a = arrays[i.name]
        if 0 in tuple(a.shape):
            values[i.name] = _Empty(tuple(a.shape), np.dtype(str(a.dtype).replace("torch.", "")))
            continue
        if len(a.shape) == 0:
            raise ModelError(f"ONNX model input '{i.name}' is a scalar: DirectML needs rank >= 1")
        values[i.name] = g.input(a, name=i.name)
        data_inputs.append(i.name)
    for name in constants:
        if name not in parameter_names and name not in values:
            raise ModelError(
                f"ONNX initializer '{name}' feeds data, not a parameter: constant data tensors "
                "are not graph inputs in this release"
            )

    def ints(node: Any, k: int) -> list[int] | None:
        if k >= len(node.input) or not node.input[k]:
            return None
        name = node.input[k]
        if name not in constants:
            raise ModelError(
                f"ONNX node '{node.name or node.op_type}': input '{name}' must be known when "
                "the model is compiled (an initializer or a given input)"
            )
        return [int(v) for v in np.asarray(constants[name]).ravel()]

    for node in graph.node:
        where = f"ONNX node '{node.name or node.op_type}'"
        if node.domain not in ("", "ai.onnx") or node.op_type not in GRAPH_OPS:
            raise ModelError(f"{where}: {node.op_type} is not one of " + ", ".join(GRAPH_OPS))
        a = _attrs(node)
        x = values[node.input[0]]
        shape = _shape(x)
        try:
            outs = _lower(g, node, a, x, shape, opset, ints, slice_window, split_sizes, values)
        except DmlError as e:
            raise ModelError(f"{where}: {e}") from None
        values.update(zip(node.output, outs, strict=True))

    outputs: list[tuple[str, Any]] = []
    graph_tensors: list[GraphTensor] = []
    for o in graph.output:
        v = values[o.name]
        if isinstance(v, _Empty):
            outputs.append((o.name, ("empty", v.shape, v.dtype)))
        else:
            outputs.append((o.name, ("graph", len(graph_tensors))))
            graph_tensors.append(v)
    operator = g.compile(graph_tensors, device) if graph_tensors else None
    return CompiledModel(operator, data_inputs, outputs, device)


def _host(a: Any) -> np.ndarray[Any, Any]:
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)
    if get is not None:
        return np.asarray(get())
    return np.asarray(a)


def _lower(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    opset: int,
    ints: Any,
    slice_window: Any,
    split_sizes: Any,
    values: dict[str, Value],
) -> list[Value]:
    op = node.op_type
    rank = len(shape)
    dtype = x.dtype if isinstance(x, _Empty) else np.dtype(x.desc.data_type.numpy_dtype)
    if op == "Identity":
        return [x]
    if op == "Slice":
        if opset < 10:
            starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
        else:
            starts, ends, axes, steps = ints(node, 1), ints(node, 2), ints(node, 3), ints(node, 4)
        offsets, sizes, strides, out = slice_window(shape, starts, ends, axes, steps)
        if 0 in out or isinstance(x, _Empty):
            return [_Empty(tuple(out), dtype)]
        return [g.slice1(x, offsets, sizes, strides, out, name=node.name or None)]
    if op == "Split":
        axis = _axis(int(a.get("axis", 0)), rank, "Split")
        split = a.get("split") if opset < 13 else ints(node, 1)
        sizes = split_sizes(shape[axis], len(node.output), split, a.get("num_outputs"))
        shapes = [tuple(s if d == axis else n for d, n in enumerate(shape)) for s in sizes]
        nonempty = [s for s in sizes if s > 0]
        if isinstance(x, _Empty) or not nonempty:
            return [_Empty(sh, dtype) for sh in shapes]
        pieces = iter(g.split(x, axis, nonempty, name=node.name or None))
        return [
            next(pieces) if s > 0 else _Empty(sh, dtype)
            for s, sh in zip(sizes, shapes, strict=True)
        ]
    if op == "Concat":
        parts = [values[n] for n in node.input]
        axis = _axis(int(a["axis"]), rank, "Concat")
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
        return [g.reinterpret(x, new_shape, [packed[p] for p in perm], name=node.name or None)]
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
        return [_reshaped(g, x, new)]
    if op == "Squeeze":
        axes = a.get("axes") if opset < 13 else ints(node, 1)
        if axes is None:
            drop = {d for d, n in enumerate(shape) if n == 1}
        else:
            drop = {_axis(int(d), rank, "Squeeze") for d in axes}
            if any(shape[d] != 1 for d in drop):
                raise ModelError(f"Squeeze: axes {sorted(drop)} of {shape} are not all of size 1")
        return [_reshaped(g, x, [n for d, n in enumerate(shape) if d not in drop])]
    if op == "Unsqueeze":
        axes = a.get("axes") if opset < 13 else ints(node, 1)
        out_rank = rank + len(axes or [])
        at = sorted(_axis(int(d), out_rank, "Unsqueeze") for d in axes or [])
        it = iter(shape)
        return [_reshaped(g, x, [1 if d in at else next(it) for d in range(out_rank)])]
    # Flatten
    axis = int(a.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise ModelError(f"Flatten: axis {a.get('axis', 1)} is outside [-{rank}, {rank}]")
    return [_reshaped(g, x, [math.prod(shape[:axis]), math.prod(shape[axis:])])]
