"""ONNX models with a node whose output's shape depends on data values: NonZero (the
boolean-mask indexing torch exports as NonZero, Transpose, GatherND) and Range of run-time
bounds (position ids). Such a model runs in three parts at the first such node: the nodes
before it, compiled once for the model's input signature; the node itself, run when its
inputs are known (NONZERO_COORDINATES with the count read back, or the sequence from its
three scalars); the nodes after it, compiled for the shapes that node gave (a cache of
signatures, as sessions keep one), which may split again at the next such node."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from ..arrays import family as array_family
from ..calls import backend_of
from ..device import Device
from ..errors import DmlError, ModelError
from .compiled import CompiledModel, array_dtype
from .host import host_array
from .staged import StagedModel, compile_any

__all__ = ["DynamicModel", "DATA_SHAPED_OPS", "compile_dynamic", "data_shaped_node"]

DATA_SHAPED_OPS = ("NonZero", "Range")
"""The nodes whose output's shape depends on their inputs' values, not only their shapes."""

SUFFIX_SIGNATURES = 16  # the compiled rests kept per model part, newest used last
_SHAPE_ONLY = ("Shape", "Size", "EyeLike")  # read their input's shape, never its values


def data_shaped_node(model: Any) -> int | None:
    """The index of the first node of DATA_SHAPED_OPS that reads values of the model's
    inputs (through any nodes but Shape, Size and EyeLike), or None."""
    graph = model.graph
    constant = {i.name for i in graph.initializer}
    from_data = {i.name for i in graph.input if i.name not in constant}
    for k, node in enumerate(graph.node):
        reads = any(n in from_data for n in node.input if n)
        if reads and node.op_type in DATA_SHAPED_OPS and node.domain in ("", "ai.onnx"):
            return k
        if reads and node.op_type not in _SHAPE_ONLY:
            from_data.update(o for o in node.output if o)
    return None


def _submodel(
    model: Any,
    nodes: Sequence[Any],
    inputs: Sequence[tuple[str, np.dtype[Any]]],
    outputs: Sequence[str],
) -> Any:
    """A model of `nodes` with the whole model's initializers and opsets."""
    import onnx
    from onnx import helper

    graph = helper.make_graph(
        list(nodes),
        model.graph.name or "part",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(t), None)
            for n, t in inputs
        ],
        [onnx.ValueInfoProto(name=n) for n in outputs],
        list(model.graph.initializer),
    )
    return helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )


def _signature(values: Mapping[str, Any]) -> Hashable:
    """Shapes, dtypes and the values of small integer arrays (a part's parameters)."""
    parts: list[Any] = []
    for name, v in values.items():
        parts += [name, tuple(v.shape), str(v.dtype)]
        if math.prod(v.shape) <= 64 and np.dtype(array_dtype(v)).kind in "iub":
            parts.append(tuple(host_array(v).ravel().tolist()))
    return tuple(parts)


class DynamicModel:
    """A model compiled for its input signature up to its first data-shaped node; the rest
    compiled at run time for the shapes that node gives: `run(inputs)`."""

    def __init__(self, model: Any, arrays: Mapping[str, Any], device: Device, at: int) -> None:
        graph = model.graph
        nodes = list(graph.node)
        self.device = device
        self.node = nodes[at]
        self._model = model
        self._outputs = [o.name for o in graph.output]
        constant = {i.name for i in graph.initializer}
        self.data_inputs = [i.name for i in graph.input if i.name not in constant]
        read_after = {n for node in nodes[at:] for n in node.input if n} | set(self._outputs)
        made_before = [o for node in nodes[:at] for o in node.output if o]
        self._carried = [n for n in made_before if n in read_after]  # the prefix's outputs
        self._prefix: CompiledModel | StagedModel | DynamicModel | None = None
        if nodes[:at] and self._carried:
            prefix = _submodel(
                model,
                nodes[:at],
                [(n, array_dtype(arrays[n])) for n in self.data_inputs],
                self._carried,
            )
            self._prefix = compile_dynamic(prefix, arrays, device)
        self._rest = nodes[at + 1 :]
        self._compiled: OrderedDict[Hashable, CompiledModel | StagedModel | DynamicModel] = (
            OrderedDict()
        )
        self.outputs = [(name, ("dynamic",)) for name in self._outputs]

    @property
    def plan(self) -> None:
        """No single plan: the model runs in parts (see `describe`)."""
        return None

    def describe(self) -> str:
        """The parts, in order."""
        node = self.node
        return (
            f"in parts at {node.op_type} '{node.name or node.output[0]}' (its output's shape "
            "depends on values): the nodes before it compiled once, the node run when its "
            "inputs are known, the nodes after it compiled for the shapes it gives"
        )

    def output_type(self, k: int) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """Not known before a run: the output's shape depends on data values."""
        raise ModelError(
            f"ONNX output '{self._outputs[k]}': its shape depends on the values "
            f"{self.node.op_type} reads; run the model to know it"
        )

    def run(self, values: Mapping[str, Any], into: Mapping[int, Any] | None = None) -> list[Any]:
        """Outputs for these input arrays; output k is copied into `into[k]` where given."""
        env: dict[str, Any] = {n: values[n] for n in self.data_inputs}
        constants = _initializers(self._model)
        if self._prefix is not None:
            made = self._prefix.run(env)
            env.update(zip(self._carried, made, strict=True))
        template = next(iter(env.values()), None)
        operands = [env.get(n, constants.get(n)) if n else None for n in self.node.input]
        env[self.node.output[0]] = self._data_shaped(operands, template)
        wanted = [o for o in self._outputs if o not in env]
        if wanted:
            read = {n for node in self._rest for n in node.input if n}
            given = {n: env[n] for n in env if n in read}
            rest = self._rest_for(given, wanted)
            env.update(zip(wanted, rest.run(given), strict=True))
        results = []
        for k, name in enumerate(self._outputs):
            value = env[name] if name in env else constants[name]
            if into and k in into:
                into[k][...] = value
                value = into[k]
            results.append(value)
        return results

    def _rest_for(
        self, given: Mapping[str, Any], wanted: list[str]
    ) -> CompiledModel | StagedModel | DynamicModel:
        key = _signature(given)
        compiled = self._compiled.get(key)
        if compiled is None:
            part = _submodel(
                self._model, self._rest, [(n, array_dtype(v)) for n, v in given.items()], wanted
            )
            compiled = compile_dynamic(part, given, self.device)
            self._compiled[key] = compiled
            while len(self._compiled) > SUFFIX_SIGNATURES:
                self._compiled.popitem(last=False)
        return compiled

    def _nonzero(self, x: Any, where: str) -> Any:
        """ONNX NonZero: the [rank, count] int64 coordinates of x's nonzero elements in
        ascending order. Ranks 1 to 5 are one NONZERO_COORDINATES; others read the flat
        positions (x as one dimension) and divide them into coordinates in x's library; a
        0-D x gives [1, count] (onnxruntime's shape)."""
        shape = tuple(int(n) for n in x.shape)
        backend = backend_of([x])
        if math.prod(shape) == 0:  # nothing to find (DirectML has no empty tensors)
            return backend.new_like(x, (len(shape), 0), np.dtype(np.int64))
        level = self.device.feature_level
        try:
            if 1 <= len(shape) <= 5:
                found = array_family.nonzero(x, feature_level=level)
                return backend.copy_of(found.T)  # ONNX's [rank, count]
            flat = array_family.nonzero(x.reshape(-1), feature_level=level)[:, 0]
        except DmlError as e:
            raise ModelError(f"{where}: {e}") from None
        if not shape:
            return backend.copy_of((flat * 0).reshape(1, -1))
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        rows = [(flat // s) % n for s, n in zip(strides, shape, strict=True)]
        joined = backend.new_like(x, (len(shape), int(flat.shape[0])), np.dtype(np.int64))
        for d, row in enumerate(rows):
            joined[d] = row
        return joined

    def _data_shaped(self, operands: list[Any], template: Any) -> Any:
        node = self.node
        where = f"ONNX node '{node.name or node.op_type}'"
        if node.op_type == "NonZero":
            return self._nonzero(operands[0], where)
        start, limit, delta = (host_array(v).reshape(-1)[0] for v in operands[:3])
        sequence = _range(start, limit, delta, where)
        if template is None:
            return sequence
        backend = backend_of([template])
        placed = backend.new_like(template, sequence.shape, sequence.dtype)
        return _placed(backend, sequence, placed)


def _placed(backend: Any, host: np.ndarray[Any, Any], target: Any) -> Any:
    """`host`'s values in `target` (an array of the backend's library)."""
    if isinstance(target, np.ndarray):
        target[...] = host
        return target
    made = backend.upload(host)
    return backend.in_library_of(made, target)


def _range(start: Any, limit: Any, delta: Any, where: str) -> np.ndarray[Any, Any]:
    """ONNX Range: start, start + delta, ... below limit (above it for a negative delta),
    max(ceil((limit - start) / delta), 0) elements, each the previous plus delta in the
    inputs' type (onnxruntime's order of additions)."""
    dtype = np.asarray(start).dtype
    if delta == 0:
        raise ModelError(f"{where}: Range's delta is 0")
    if dtype.kind in "iu":
        count = max(-(-(int(limit) - int(start)) // int(delta)), 0)
        return (np.arange(count, dtype=np.int64) * int(delta) + int(start)).astype(dtype)
    span = dtype.type(dtype.type(limit) - dtype.type(start))  # (in the type, then divided)
    count = max(math.ceil(float(span) / float(delta)), 0)
    out = np.empty(count, dtype)
    value = dtype.type(start)
    step = dtype.type(delta)
    for i in range(count):
        out[i] = value
        value = dtype.type(value + step)
    return out


def _initializers(model: Any) -> dict[str, np.ndarray[Any, Any]]:
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def compile_dynamic(
    model: Any, arrays: Mapping[str, Any], device: Device
) -> CompiledModel | StagedModel | DynamicModel:
    """The model as one plan, as steps, or in parts at its first data-shaped node."""
    at = data_shaped_node(model)
    if at is None:
        return compile_any(model, arrays, device)
    return DynamicModel(model, arrays, device, at)
