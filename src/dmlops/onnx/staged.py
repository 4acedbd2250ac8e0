"""ONNX models whose data flow needs values at run time: Gather with run-time indices,
GatherElements, GatherND, Scatter(Elements), ScatterND, OneHot, ReverseSequence, and the
integer arithmetic exporters put on index tensors (Add, Sub, Mul, Div, Mod, Neg, Equal, Less,
Greater, Where, Cast, ...). Such a model runs as steps in node order: each run of consecutive
data-movement nodes one compiled plan (writing only what later steps read), each indexed
node one indexed call, each arithmetic node evaluated by the
library of the arrays it reads (numpy on the CPU, CuPy on the GPU: no host round trip).
Arithmetic on floating-point data is refused: dmlops moves data, it does not compute it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..arrays import indexed as fi
from ..device import Device
from ..errors import DmlError, ModelError
from ..graph import Graph, GraphTensor
from ..ops import GatherNd1Desc, GatherNdDesc, OneHotDesc, ScatterNdDesc
from ..tensor import BufferTensorDesc, packed_strides
from .compiled import CompiledModel, Feeds, array_dtype, new_array
from .host import HOST_OPS, folded, host_array, host_eval
from .indexed import indexed_node
from .lowering import (
    _PARAMETERS,
    GRAPH_OPS,
    INDEXED_OPS,
    NeedsRunTime,
    _lower,
    compile_model,
    opset_of,
    parameter_readers,
)
from .nodes import _reshaped
from .params import attributes, axis_of
from .values import Value, _Empty, _shape, _tensor, graph_value

__all__ = ["StagedModel", "compile_any", "compile_staged", "INDEXED_OPS", "ARITHMETIC_OPS"]

ARITHMETIC_OPS = (
    "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Equal", "Less", "Greater", "Not", "And",
    "Or", "Where", "Cast", "Min", "Max",
)  # fmt: skip

Step = Callable[[dict[str, Any]], None]


class StagedModel:
    """A model compiled for given input shapes as steps in node order: `run(inputs)`."""

    def __init__(
        self,
        steps: list[tuple[str, Step]],
        data_inputs: list[str],
        outputs: list[str],
        types: dict[str, tuple[tuple[int, ...], np.dtype[Any]]],
        constants: dict[str, np.ndarray[Any, Any]],
        device: Device,
    ) -> None:
        self.steps = steps
        self.data_inputs = data_inputs
        self.outputs = [(name, ("staged",)) for name in outputs]
        self._names = outputs
        self._types = types
        self._constants = constants
        self.device = device

    @property
    def plan(self) -> None:
        """No single plan: the model runs in steps (see `describe`)."""
        return None

    def describe(self) -> str:
        """One line per step."""
        count = f"{len(self.steps)} step{'s' if len(self.steps) != 1 else ''}"
        return "\n".join([f"{count}:", *(f"  {d}" for d, _ in self.steps)])

    def output_type(self, k: int) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """The shape and dtype output k has for this compiled signature."""
        return self._types[self._names[k]]

    def run(self, values: Mapping[str, Any], into: Mapping[int, Any] | None = None) -> list[Any]:
        """Outputs for these input arrays; output k is copied into `into[k]` where given."""
        env: dict[str, Any] = {n: values[n] for n in self.data_inputs}
        template = env[self.data_inputs[0]] if self.data_inputs else None
        for _, step in self.steps:
            step(env)
        if not into:
            try:  # (the commonest run: every output made by a step)
                return [env[name] for name in self._names]
            except KeyError:  # a constant output: made below
                pass
        results = []
        for k, name in enumerate(self._names):
            if name in env:
                value = env[name]
            else:
                value = _on_device(self.device, self._constants[name], template)
            if into and k in into:
                target = into[k]
                target[...] = value
                value = target
            results.append(value)
        return results


def _on_device(device: Device, host: np.ndarray[Any, Any], template: Any) -> Any:
    backend = device.backend
    host = np.asarray(host)
    host = host if host.flags.c_contiguous else host.copy()  # (0-D arrays stay 0-D)
    if template is None or backend.name == "numpy":
        return host
    return backend.in_library_of(backend.upload(host), template)


def _xp(array: Any) -> Any:
    """The array module of `array`: numpy or CuPy (torch tensors are seen through CuPy)."""
    if isinstance(array, np.ndarray):
        return np
    import cupy

    return cupy


def _as_xp(array: Any) -> Any:
    if _on_webgpu(array):  # small index tensors: evaluated on the host
        return array.numpy()
    refusal = f"integer arithmetic on {type(array).__name__} arrays is not evaluated here"
    return fi.numpy_or_cupy(array, refusal)


def _on_webgpu(array: Any) -> bool:
    return getattr(type(array), "__dmlops_backend__", None) == "webgpu"


_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Equal": "equal", "Less": "less",
    "Greater": "greater", "And": "logical_and", "Or": "logical_or",
}  # fmt: skip


def _arith(xp: Any, node: Any, a: dict[str, Any], ins: list[Any]) -> Any:
    """One integer (or boolean) elementwise node, on the arrays' own device."""
    op = node.op_type
    x = ins[0]
    binary = _BINARY.get(op)
    if binary is not None:
        return getattr(xp, binary)(x, ins[1])
    if op == "Div":  # ONNX integer division truncates toward zero
        q = xp.abs(x) // xp.abs(ins[1])
        return xp.where((x < 0) != (ins[1] < 0), -q, q).astype(x.dtype)
    if op == "Mod":
        return (xp.fmod if int(a.get("fmod", 0)) else xp.mod)(x, ins[1])
    if op == "Neg":
        return xp.negative(x)
    if op == "Abs":
        return xp.abs(x)
    if op == "Not":
        return xp.logical_not(x)
    if op == "Where":
        return xp.where(x, ins[1], ins[2])
    if op == "Cast":
        import onnx

        return x.astype(onnx.helper.tensor_dtype_to_np_dtype(int(a["to"])))
    if op in ("Min", "Max"):
        out = x
        for v in ins[1:]:
            out = (xp.minimum if op == "Min" else xp.maximum)(out, v)
        return out
    raise ModelError(f"{op} is not evaluated at run time")


def compile_any(
    model: Any, arrays: Mapping[str, Any], device: Device | None = None
) -> CompiledModel | StagedModel:
    """The model as one plan where its data flow allows, else as steps."""
    device = device or Device()
    try:
        return compile_model(model, arrays, device)
    except NeedsRunTime:
        return compile_staged(model, arrays, device, opset_of(model))


def compile_staged(
    model: Any, arrays: Mapping[str, Any], device: Device, opset: int
) -> StagedModel:
    """Compile `model` into steps for the shapes and dtypes of `arrays`."""
    from onnx import numpy_helper

    graph = model.graph
    constants: dict[str, np.ndarray[Any, Any]] = {
        i.name: numpy_helper.to_array(i) for i in graph.initializer
    }
    for name in {
        n.input[k] for n in graph.node for k in _PARAMETERS.get(n.op_type, ()) if k < len(n.input)
    }:
        if name and name not in constants and name in arrays:
            constants[name] = host_array(arrays[name])
    types: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = {}
    data_inputs: list[str] = []
    for i in graph.input:
        if i.name in constants:
            continue
        if i.name not in arrays:
            raise ModelError(f"ONNX model input '{i.name}' was not given")
        a = arrays[i.name]
        types[i.name] = (tuple(int(n) for n in a.shape), array_dtype(a))
        data_inputs.append(i.name)

    ints, number = parameter_readers(constants)

    steps: list[tuple[str, Step]] = []
    nodes = list(graph.node)
    outputs_wanted = {o.name for o in graph.output}
    later: list[set[str]] = [set() for _ in nodes]  # names read by the nodes after node i
    seen: set[str] = set()
    for i in range(len(nodes) - 1, -1, -1):
        later[i] = set(seen)
        seen.update(n for n in nodes[i].input if n)
    group: _GraphGroup | None = None

    def flush(i: int) -> None:
        """Close the open group before node i: its plan writes what later nodes read."""
        nonlocal group
        if group is not None:
            needed = (later[i - 1] if i > 0 else set()) | outputs_wanted
            made = group.view_step(needed, outputs_wanted, types) or group.step(needed, types)
            if made is not None:
                steps.append(made)
            group = None

    for i, node in enumerate(nodes):
        where = f"ONNX node '{node.name or node.op_type}'"
        a = attributes(node)
        names = list(node.input)
        if node.domain not in ("", "ai.onnx"):
            raise ModelError(f"{where}: domain '{node.domain}' is not ONNX's")
        for name in names:
            if name and name not in constants and name not in types:
                raise ModelError(f"{where}: input '{name}' is no input, initializer or output")
        runtime = [n for n in names if n and n not in constants]
        op = node.op_type
        try:
            if op in ("Shape", "Size", "EyeLike") and names[0] in types:
                shape, dtype = types[names[0]][0], types[names[0]][1]
                first = np.empty(shape, dtype) if op == "EyeLike" else shape  # (values unread)
                ins: list[Any] = [first, *(constants.get(n) for n in names[1:])]
                constants.update(zip(node.output, host_eval(node, a, ins, opset), strict=False))
            elif op == "Identity" and runtime and group is not None and group.makes(names[0]):
                group.local[node.output[0]] = group.local[names[0]]  # an alias in the plan
                group.dtypes[node.output[0]] = group.dtypes[names[0]]
                group.produced.append(node.output[0])
                types[node.output[0]] = types[names[0]]
            elif op == "Identity" and runtime:
                flush(i)
                steps.append(_identity_step(node, names, types))
            elif not runtime and op in INDEXED_OPS:  # on constants: evaluated once, here
                constants[node.output[0]] = folded(node, constants, device)
            elif not runtime and op in HOST_OPS:
                host = [None if not n else constants[n] for n in names]
                constants.update(zip(node.output, host_eval(node, a, host, opset), strict=False))
            elif op in INDEXED_OPS:
                if group is None:
                    group = _GraphGroup(device, opset, ints, number)
                if not group.add_indexed(node, a, names, constants, types):
                    flush(i)
                    steps.append(_indexed_step(node, a, names, constants, types, device))
            elif op == "Cast" and _converts_floats(a, names[0], types):
                flush(i)
                steps.append(_cast_step(node, a, names, types, device))
            elif op in ARITHMETIC_OPS:
                flush(i)
                steps.append(_arith_step(node, a, names, constants, types, device, opset))
            elif op in GRAPH_OPS:
                if group is None:
                    group = _GraphGroup(device, opset, ints, number)
                group.add(node, a, names, constants, types)
            else:
                raise ModelError(
                    f"{op} is not data movement, indexed data movement or integer arithmetic"
                )
        except ModelError as e:
            raise ModelError(f"{where}: {e}") from None
        except DmlError as e:
            raise ModelError(f"{where}: {e}") from None
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise ModelError(f"{where}: malformed node ({type(e).__name__}: {e})") from None
    try:
        flush(len(nodes))
    except DmlError as e:
        raise ModelError(f"ONNX model: {e}") from None
    outputs = []
    for o in graph.output:
        if o.name not in constants and o.name not in types:
            raise ModelError(f"ONNX graph output '{o.name}' is produced by no node or input")
        if o.name in constants:
            types[o.name] = (
                tuple(np.shape(constants[o.name])),
                np.asarray(constants[o.name]).dtype,
            )
        outputs.append(o.name)
    return StagedModel(steps, data_inputs, outputs, types, constants, device)


def _operand(
    name: str, constants: dict[str, Any], env: dict[str, Any], template: Any, device: Device
) -> Any:
    """A node input at run time: the step's array, or a constant placed beside `template`."""
    if name in env:
        return env[name]
    return _on_device(device, np.asarray(constants[name]), template)


def _indexed_step(
    node: Any,
    a: dict[str, Any],
    names: list[str],
    constants: dict[str, Any],
    types: dict[str, Any],
    device: Device,
) -> tuple[str, Step]:
    found = indexed_node(
        node,
        a,
        lambda n: _type_of(n, constants, types),
        lambda n: constants.get(n),
        device.feature_level,
    )
    output = node.output[0]
    types[output] = (found.shape, found.dtype)
    if 0 in found.shape:  # an empty result: no call

        def empty(env: dict[str, Any]) -> None:
            env[output] = new_array(device.backend, [_any(env)], found.shape, found.dtype)

        return f"{node.op_type} -> {output} (empty)", empty
    call = found.call

    def step(env: dict[str, Any]) -> None:
        template = _any(env)
        env[output] = call(
            [_operand(n, constants, env, template, device) if n else None for n in names]
        )

    return f"{node.op_type} -> {output} ({found.operator})", step


def _cast_target(a: dict[str, Any]) -> np.dtype[Any]:
    import onnx

    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(a["to"])))


def _converts_floats(a: dict[str, Any], name: str, types: dict[str, Any]) -> bool:
    """Whether a Cast of run-time data reads or writes a float type (DirectML's CAST; a Cast
    between integer or boolean types stays index arithmetic)."""
    source = types.get(name, (None, None))[1]
    if source is None or "to" not in a:
        return False
    target = _cast_target(a)
    return (source.kind == "f" or target.kind == "f") and "b" not in (source.kind, target.kind)


def _cast_step(
    node: Any, a: dict[str, Any], names: list[str], types: dict[str, Any], device: Device
) -> tuple[str, Step]:
    """A Cast of run-time data to or from a float type: DirectML's CAST (its rules where
    ONNX leaves a value undefined: floats to integers truncate and saturate)."""
    from ..arrays.family import cast

    target = _cast_target(a)
    shape = types[names[0]][0]
    output = node.output[0]
    types[output] = (shape, target)
    level = device.feature_level

    def step(env: dict[str, Any]) -> None:
        env[output] = cast(env[names[0]], target, feature_level=level)

    return f"Cast -> {output} (CAST)", step


def _identity_step(node: Any, names: list[str], types: dict[str, Any]) -> tuple[str, Step]:
    types[node.output[0]] = types[names[0]]

    def step(env: dict[str, Any]) -> None:
        env[node.output[0]] = env[names[0]]

    return f"Identity -> {node.output[0]}", step


def _any(env: dict[str, Any]) -> Any:
    return next(iter(env.values())) if env else None


def _type_of(
    name: str, constants: dict[str, Any], types: dict[str, Any]
) -> tuple[tuple[int, ...], np.dtype[Any]]:
    if name in types:
        return types[name]  # type: ignore[no-any-return]
    c = np.asarray(constants[name])
    return tuple(c.shape), c.dtype


def _arith_step(
    node: Any,
    a: dict[str, Any],
    names: list[str],
    constants: dict[str, Any],
    types: dict[str, Any],
    device: Device,
    opset: int,
) -> tuple[str, Step]:
    for n in names:
        if n and n in types and types[n][1].kind == "f":
            raise ModelError(
                f"{node.op_type} on floating-point data '{n}': dmlops moves data and evaluates "
                "only integer and boolean (index) arithmetic"
            )
    dummies = [
        None if not n else np.zeros(*_type_of(n, constants, types)) if n in types else constants[n]
        for n in names
    ]
    (probe,) = host_eval(node, a, dummies, opset)[:1]
    probe = np.asarray(probe)
    types[node.output[0]] = (tuple(probe.shape), probe.dtype)

    # the constants as host arrays, made once (a host run reads them as they are)
    host = {n: np.asarray(constants[n]) for n in names if n and n not in types}
    ndarray = np.ndarray

    def step(env: dict[str, Any]) -> None:
        first = next(env[n] for n in names if n in env)
        if type(first) is ndarray:  # a host run: numpy on the arrays as they are
            values = [None if not n else env[n] if n in env else host[n] for n in names]
            env[node.output[0]] = _arith(np, node, a, values)
            return
        xp = _xp(_as_xp(first))
        ins = [
            None if not n else _as_xp(env[n]) if n in env else xp.asarray(constants[n])
            for n in names
        ]
        result = _arith(xp, node, a, ins)
        backend = device.backend
        if xp is not np:
            result = backend.in_library_of(result, first)
        elif _on_webgpu(first):
            result = backend.upload(np.asarray(result))
        env[node.output[0]] = result

    return f"{node.op_type} -> {node.output[0]} (integer arithmetic on the arrays' device)", step


# nodes that only give a value another shape (a group of these alone can be a view)
_RESHAPES = frozenset({"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"})

FUSED_OPS = (
    "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "OneHot",
)  # fmt: skip
_MAX_RANK = 8

Form = Callable[[Graph, list[GraphTensor]], GraphTensor]


def _indexed_form(
    op: str, a: dict[str, Any], shapes: list[tuple[int, ...]], shape: tuple[int, ...]
) -> Form | None:
    """How an indexed node of these operand shapes (ONNX's checks passed) becomes graph
    nodes: operands right-aligned to one rank, DirectML's operator, its result; None where
    the form does not fit a graph node."""
    x, i = shapes[0], shapes[1]
    r, q = len(x), len(i)

    def padded(g: Graph, t: GraphTensor, rank: int) -> GraphTensor:
        sizes = (1,) * (rank - len(t.sizes)) + t.sizes
        return t if sizes == t.sizes else g.reinterpret(t, sizes, packed_strides(sizes))

    def out_desc(t: GraphTensor, sizes: tuple[int, ...], rank: int) -> BufferTensorDesc:
        return BufferTensorDesc(t.desc.data_type, (1,) * (rank - len(sizes)) + sizes)

    if op == "OneHot":  # shapes: the indices', the values' ([off, on])
        rank = len(shape)
        ax = axis_of(int(a.get("axis", -1)), rank, op)
        if rank > _MAX_RANK:
            return None

        def hot(g: Graph, t: list[GraphTensor]) -> GraphTensor:
            picks = tuple(1 if d == ax else n for d, n in enumerate(shape))
            index = g.reinterpret(t[0], picks, packed_strides(picks))
            pair = padded(g, t[1], rank)
            out = BufferTensorDesc(t[1].desc.data_type, shape)
            return g.operator(OneHotDesc(index.desc, pair.desc, out, ax), [index, pair])[0]

        return hot
    if op == "Gather":
        ax = axis_of(int(a.get("axis", 0)), r, op)
        rank = r + q - 1
        if rank > _MAX_RANK:
            return None
        return lambda g, t: g.gather(padded(g, t[0], rank), padded(g, t[1], rank), ax + rank - r, q)
    if op == "GatherElements":
        ax = axis_of(int(a.get("axis", 0)), r, op)
        window = tuple(x[d] if d == ax else n for d, n in enumerate(i))

        def elements(g: Graph, t: list[GraphTensor]) -> GraphTensor:
            data = t[0] if window == x else g.slice(t[0], [0] * r, window, [1] * r)
            return g.gather_elements(data, t[1], ax)

        return elements
    if op == "GatherND":
        b = int(a.get("batch_dims", 0))
        rank = max(r, q, len(shape))
        if rank > _MAX_RANK:
            return None

        def nd(g: Graph, t: list[GraphTensor]) -> GraphTensor:
            xs = [padded(g, t[0], rank), padded(g, t[1], rank)]
            o = out_desc(t[0], shape, rank)
            desc = (
                GatherNd1Desc(xs[0].desc, xs[1].desc, o, r, q, b)
                if b
                else GatherNdDesc(xs[0].desc, xs[1].desc, o, r, q)
            )
            return g.operator(desc, xs)[0]

        return nd
    if op in ("Scatter", "ScatterElements"):
        ax = axis_of(int(a.get("axis", 0)), r, op)
        window = tuple(x[d] if d == ax else n for d, n in enumerate(i))
        if len(i) != r or any(w > n for w, n in zip(window, x, strict=True)):
            return None

        def scatter(g: Graph, t: list[GraphTensor]) -> GraphTensor:
            if window == x:
                return g.scatter_elements(t[0], t[1], t[2], ax)
            # fewer indices than data: the scattered window at the origin, then the rest of
            # the data joined on, one dimension at a time from the last
            whole = g.scatter_elements(g.slice(t[0], [0] * r, window, [1] * r), t[1], t[2], ax)
            for d in reversed(range(r)):
                if window[d] < x[d]:
                    at = [0] * r
                    at[d] = window[d]
                    sizes = [*window[:d], x[d] - window[d], *x[d + 1 :]]
                    whole = g.join([whole, g.slice(t[0], at, sizes, [1] * r)], d)
            return whole

        return scatter
    u = len(shapes[2])
    rank = max(r, q, u)
    if rank > _MAX_RANK:
        return None

    def scatter_nd(g: Graph, t: list[GraphTensor]) -> GraphTensor:
        xs = [padded(g, v, rank) for v in t]
        o = out_desc(t[0], x, rank)
        return g.operator(ScatterNdDesc(xs[0].desc, xs[1].desc, xs[2].desc, o, r, q), xs)[0]

    return scatter_nd


def _fits(
    form: Form, operands: list[tuple[tuple[int, ...], np.dtype[Any]]], device: Device
) -> bool:
    """Whether the form's nodes validate for operands of these types at the device's level
    (an operator's table may lack a type its array-layer call carries in another)."""
    scratch = Graph(device.feature_level, carry_types=True)
    try:
        tensors = [_tensor(graph_value(scratch, shape, dtype, "x")) for shape, dtype in operands]
        form(scratch, tensors)
    except (DmlError, ModelError):
        return False
    return True


class _GraphGroup:
    """Consecutive data-movement nodes lowered into one Graph, compiled into one plan when a
    step that needs run-time values (or the end) comes: the values later steps read are its
    outputs, with no intermediate copies between its nodes."""

    def __init__(self, device: Device, opset: int, ints: Any, number: Any) -> None:
        self.device = device
        self.opset = opset
        self.ints = ints
        self.number = number
        self.g = Graph(device.feature_level, carry_types=True)
        self.local: dict[str, Value] = {}
        self.dtypes: dict[str, np.dtype[Any]] = {}
        self.feeds: list[str] = []
        self.constants: dict[str, np.ndarray[Any, Any]] = {}  # constants read as data
        self.produced: list[str] = []
        self.ops: list[str] = []
        # Concat outputs of the group: their inputs and (non-negative) axis
        self.concats: dict[str, tuple[list[str], int]] = {}

    def makes(self, name: str) -> bool:
        """Whether the group's plan writes this value (not one of its inputs)."""
        return name in self.local and name not in self.feeds

    def _enter(
        self, data_names: list[str], constants: dict[str, Any], types: dict[str, Any]
    ) -> None:
        """Values read by the group's nodes that no node of it made: inputs of its graph."""
        for n in data_names:
            if n in self.local:
                continue
            if n in constants:
                host = np.asarray(constants[n])
                shape, dtype = tuple(host.shape), host.dtype
                if 0 not in shape:
                    self.constants[n] = host
            else:
                shape, dtype = types[n]
            self.local[n] = graph_value(self.g, shape, dtype, n)
            self.dtypes[n] = dtype
            if not isinstance(self.local[n], _Empty):
                self.feeds.append(n)

    def add(
        self, node: Any, a: dict[str, Any], names: list[str], constants: dict[str, Any],
        types: dict[str, Any],
    ) -> None:  # fmt: skip
        data_names = [
            n for k, n in enumerate(names) if n and k not in _PARAMETERS.get(node.op_type, ())
        ]
        self._enter(data_names, constants, types)
        x = self.local[names[0]]
        dtype = self.dtypes[names[0]]
        lowered = _lower(
            self.g, node, a, x, _shape(x), self.opset, self.ints, self.number, self.local, dtype
        )
        for name, v in zip(node.output, lowered, strict=True):
            types[name] = (_shape(v), dtype)
            self.local[name] = v
            self.dtypes[name] = dtype
            self.produced.append(name)
        self.ops.append(node.op_type)
        if node.op_type == "Concat":
            rank = len(_shape(lowered[0]))
            self.concats[node.output[0]] = (names, int(a.get("axis", 0)) % max(rank, 1))

    def _batch_column(
        self, names: list[str], a: dict[str, Any], constants: dict[str, Any], types: Any
    ) -> tuple[list[str], dict[str, Any]] | None:
        """A GatherND whose index tuples are a Concat, along their last axis, of a constant
        column that counts along the index's first non-batch axis and one other value (the
        exporters' x[arange(n), i]): the same gather as one more batch dimension over that
        other value alone (its operands and attributes), so the Concat need not be written
        and read back; None for any other."""
        b = int(a.get("batch_dims", 0))
        made = self.concats.get(names[1])
        if made is None or len(made[0]) != 2:
            return None
        (column, rest), axis = made
        index_shape = _shape(self.local[names[1]])
        if axis != len(index_shape) - 1 or column not in constants or rest not in self.local:
            return None
        counts = np.asarray(constants[column])
        data_shape = _shape(self.local[names[0]]) if names[0] in self.local else types[names[0]][0]
        q = len(index_shape)
        if (
            b + 2 > q
            or b + 1 >= len(data_shape)
            or counts.shape != (*index_shape[:-1], 1)
            or tuple(data_shape[: b + 1]) != tuple(index_shape[: b + 1])
            or index_shape[-1] > len(data_shape) - b
            or counts.dtype.kind not in "iu"
        ):
            return None
        along = np.arange(index_shape[b]).reshape([-1 if d == b else 1 for d in range(q - 1)])
        if not np.array_equal(counts[..., 0], np.broadcast_to(along, index_shape[:-1])):
            return None
        return [names[0], rest], {**a, "batch_dims": b + 1}

    def add_indexed(
        self, node: Any, a: dict[str, Any], names: list[str], constants: dict[str, Any],
        types: dict[str, Any],
    ) -> bool:  # fmt: skip
        """A Gather, GatherElements, GatherND, ScatterElements, ScatterND or OneHot node lowered
        into the group's graph, its indices read only where the plan runs (True); False where its
        form stays a step of its own (0-D or empty operands, more than 8 dimensions, a type
        its operator's table lacks), with nothing added."""
        op = node.op_type
        if op not in FUSED_OPS:
            return False
        batched = self._batch_column(names, a, constants, types) if op == "GatherND" else None
        if batched is not None:
            named = SimpleNamespace(
                op_type=op, input=batched[0], output=list(node.output), name=node.name
            )
            if self._add_indexed(named, batched[1], batched[0], constants, types):
                return True
        return self._add_indexed(node, a, names, constants, types)

    def _add_indexed(
        self, node: Any, a: dict[str, Any], names: list[str], constants: dict[str, Any],
        types: dict[str, Any],
    ) -> bool:  # fmt: skip
        op = node.op_type

        def type_of(n: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
            if n in self.local:
                return _shape(self.local[n]), self.dtypes[n]
            if n in constants:
                host = np.asarray(constants[n])
                return tuple(host.shape), host.dtype
            return types[n]  # type: ignore[no-any-return]

        spec = indexed_node(node, a, type_of, constants.get, self.device.feature_level)
        # the data the plan reads (OneHot's depth is a constant of the form, not data)
        data = [names[0], names[2]] if op == "OneHot" else [n for n in names if n]
        operands = [type_of(n) for n in data]
        shapes = [shape for shape, _ in operands]
        if any(not shape or 0 in shape for shape in [*shapes, spec.shape]):
            return False
        index_type = operands[0 if op == "OneHot" else 1][1]
        if index_type not in (np.dtype(np.int32), np.dtype(np.int64)):
            return False
        form = _indexed_form(op, a, shapes, spec.shape)
        if form is None or not _fits(form, operands, self.device):
            return False
        self._enter(data, constants, types)
        made = form(self.g, [_tensor(self.local[n]) for n in data])
        out = _reshaped(self.g, made, spec.shape, spec.dtype)
        name = node.output[0]
        types[name] = (spec.shape, spec.dtype)
        self.local[name] = out
        self.dtypes[name] = spec.dtype
        self.produced.append(name)
        self.ops.append(op)
        return True

    def view_step(
        self, needed: set[str], final: set[str], types: dict[str, Any]
    ) -> tuple[str, Step] | None:
        """A group that only reshapes a step's value into one that only later steps read
        (no model output): the array's own reshape, a view where its library can make one
        (a copy otherwise), no plan run; None for any other group."""
        names = [n for n in self.produced if n in needed]
        if (
            len(names) != 1
            or names[0] in final
            or len(self.feeds) != 1
            or self.constants
            or not set(self.ops) <= _RESHAPES
        ):
            return None
        name, feed = names[0], self.feeds[0]
        shape = types[name][0]
        if np.dtype(types[feed][1]) != np.dtype(types[name][1]):
            return None

        plan = self.step(needed, types)
        assert plan is not None
        copied = plan[1]

        def run(env: dict[str, Any]) -> None:
            reshape = getattr(env[feed], "reshape", None)
            if reshape is None:  # (an array type without one: the group's plan)
                copied(env)
                return
            env[name] = reshape(shape)

        return f"{' + '.join(self.ops)} -> {name} (a view)", run

    def step(self, needed: set[str], types: dict[str, Any]) -> tuple[str, Step] | None:
        """The group's one plan, writing the values in `needed` (None if it writes none)."""
        names = [n for n in self.produced if n in needed]
        if not names:
            return None
        tensors: list[Any] = []
        where: list[int] = []  # per name: its output's index, or -1 for an empty value
        for n in names:  # one output per distinct tensor (Identity aliases)
            v = self.local[n]
            if isinstance(v, _Empty):
                where.append(-1)
                continue
            t = _tensor(v)
            if t in tensors:
                where.append(tensors.index(t))
            else:
                where.append(len(tensors))
                tensors.append(t)
        fed = [_tensor(self.local[f]) for f in self.feeds]
        # a step's input passed through unchanged (an Expand to its own shape, a Tile by ones)
        # is written as a copy: a step's outputs are its own
        tensors = [self.g.identity(t) if any(t is f for f in fed) else t for t in tensors]
        op = self.g.compile(tensors, self.device) if tensors else None
        kinds = [types[n] for n in names]
        outs = [next(kinds[j] for j, w in enumerate(where) if w == k) for k in range(len(tensors))]
        scalars = [f for f in self.feeds if not _shape(self.local[f])]
        feeds = Feeds(self.device, self.feeds, self.constants, scalars)
        backend = self.device.backend

        host = backend.name == "numpy"
        host_outs = [(shape, np.dtype(dtype)) for shape, dtype in outs]

        written = [(n, k) for n, k in zip(names, where, strict=True) if k >= 0]
        made = [(n, kind) for n, k, kind in zip(names, where, kinds, strict=True) if k < 0]

        def run(env: dict[str, Any]) -> None:
            ins = feeds.arrays(env)
            if host:  # numpy binds any contiguous array whole, as it is
                results = [np.empty(shape, dtype) for shape, dtype in host_outs]
                if op is not None:
                    op._run_fresh(ins, results)
            else:
                template = ins or ([next(iter(env.values()))] if env else [])
                results = [new_array(backend, template, sh, dt) for sh, dt in outs]
                if op is not None:
                    op._run_fresh(ins, [r.reshape(-1) for r in results])  # all placed whole
            for n, k in written:
                env[n] = results[k]
            if made:  # (empty outputs: new arrays beside the step's inputs)
                template = [next(iter(env.values()))]
                for n, (shape, dtype) in made:
                    env[n] = new_array(backend, template, shape, dtype)

        what = " + ".join(self.ops)
        mids = len(self.g.intermediates(tensors)) if tensors else 0
        passes = "one pass" if not mids else f"one plan of {mids + 1} passes"
        return f"{what} -> {', '.join(names)} ({passes})", run
