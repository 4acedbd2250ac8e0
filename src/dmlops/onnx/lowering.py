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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..device import CompiledOperator, Device
from ..elements import element_of, encode, numpy_dtype, unsigned_dtype, word_element
from ..errors import DmlError, ModelError
from ..graph import Graph, GraphTensor
from ..ops.depth_space import block_axes
from ..ops.diagonal import triangle_span
from ..tensor import BufferTensorDesc, FeatureLevel, packed_strides
from .host import HOST_OPS, folded, host_array, host_eval
from .params import attributes, axis_of, slice_window, split_sizes, unsqueeze_axes
from .resize import directml_fields, index_maps, nearest_scales, resized_shape

__all__ = [
    "CompiledModel",
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


@dataclass(frozen=True)
class _Empty:
    """An ONNX tensor with a zero-sized dimension: a shape and a dtype, no data."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class _Scalar:
    """A 0-D ONNX tensor: its one element, as a graph tensor of sizes [1]."""

    tensor: GraphTensor


Value = GraphTensor | _Empty | _Scalar


def _shape(v: Value) -> tuple[int, ...]:
    if isinstance(v, _Empty):
        return v.shape
    return () if isinstance(v, _Scalar) else v.sizes


def _tensor(v: Value) -> GraphTensor:
    """The graph tensor holding a value's elements."""
    assert not isinstance(v, _Empty)
    return v.tensor if isinstance(v, _Scalar) else v


def array_dtype(a: Any) -> np.dtype[Any]:
    """An array's element type as a numpy dtype (numpy, CuPy or torch; bfloat16 and float8
    through ml_dtypes; a type numpy has no dtype for as unsigned words of its size)."""
    element = element_of(a.dtype)
    found = numpy_dtype(element)
    return found if found is not None else unsigned_dtype(min(element.size, 8))


def graph_value(g: Graph, shape: tuple[int, ...], dtype: np.dtype[Any], name: str) -> Value:
    """A value of this shape and type entering graph g: empty (no input), a scalar (an input
    of sizes [1]) or an input of its shape."""
    if 0 in shape:
        return _Empty(shape, dtype)
    try:
        element = word_element(dtype, "an ONNX graph")
    except DmlError as e:
        raise ModelError(f"'{name}': {e}") from None
    desc = BufferTensorDesc(element.described_as, shape or (1,))
    t = g.input(desc, name=name)
    return _Scalar(t) if not shape else t


class CompiledModel:
    """A model compiled for given input shapes: `run(inputs)` executes it in one plan."""

    def __init__(
        self,
        operator: CompiledOperator | None,
        data_inputs: list[str],
        outputs: list[tuple[str, Any]],
        device: Device,
        constant_inputs: Mapping[str, np.ndarray[Any, Any]] | None = None,
        scalar_inputs: Sequence[str] = (),
    ) -> None:
        self.operator = operator
        self.data_inputs = data_inputs
        # (name, ("graph", k, shape, dtype) | ("const", value) | ("empty", shape, dtype))
        self.outputs = outputs
        self.device = device
        self._feeds = Feeds(device, data_inputs, constant_inputs or {}, scalar_inputs)
        # (output index, shape, dtype) of each output the plan writes, in the plan's order
        self._written = [
            (k, spec[2], spec[3]) for k, (_, spec) in enumerate(outputs) if spec[0] == "graph"
        ]
        # every output written by the plan, on the host: a run is its inputs, new outputs
        # and the plan (the commonest call, in few steps)
        self._host_only = (
            operator is not None
            and device.backend.name == "numpy"
            and len(self._written) == len(outputs)
        )

    @property
    def plan(self) -> Any:
        """The compiled plan (None when every output is empty)."""
        return None if self.operator is None else self.operator.plan

    def run(self, values: Mapping[str, Any], into: Mapping[int, Any] | None = None) -> list[Any]:
        """Outputs for these input arrays (on the device's backend); output k is written into
        `into[k]` where given (C-contiguous, of the output's shape and dtype)."""
        if not into and self._host_only:
            assert self.operator is not None
            made = [np.empty(shape, dtype) for _, shape, dtype in self._written]
            self.operator._run_fresh(self._feeds.arrays(values), made)
            return made
        backend = self.device.backend
        given = {k: self._checked_output(k, array) for k, array in (into or {}).items()}
        # an array in the other byte order takes its output by value, after the run
        by_value = {k: a for k, a in given.items() if not getattr(a.dtype, "isnative", True)}
        arrays: dict[int, Any] = {}
        if self.operator is not None:
            ins = self._feeds.arrays(values)
            host = backend.name == "numpy"  # new host arrays are bound whole, as they are
            for k, shape, dtype in self._written:
                if k in given and k not in by_value:
                    arrays[k] = given[k]
                elif host:
                    arrays[k] = np.empty(shape, dtype)
                else:
                    arrays[k] = new_array(backend, ins, shape, dtype)
            flats = list(arrays.values()) if host else [_flat(a) for a in arrays.values()]
            if given:  # the caller's arrays: checked above, and apart from the inputs
                _check_apart(backend, ins, list(given.values()))
            # inputs placed whole and contiguous, outputs made for the graph or checked
            self.operator._run_fresh(ins, flats)
            for k, target in by_value.items():
                target[...] = arrays[k]
                arrays[k] = target
        if len(arrays) == len(self.outputs):
            return list(arrays.values())
        result = []
        for k, (_, spec) in enumerate(self.outputs):
            if spec[0] == "graph":
                result.append(arrays[k])
            elif k in given:  # a constant or empty output written into the caller's array
                if spec[0] == "const":
                    given[k][...] = _constant(self.device, spec[1])
                result.append(given[k])
            elif spec[0] == "const":
                result.append(_constant(self.device, spec[1]))
            else:
                result.append(_empty(self.device, spec[1], spec[2]))
        return result

    def output_type(self, k: int) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """The shape and dtype output k has for this compiled signature."""
        spec = self.outputs[k][1]
        if spec[0] == "graph":
            return spec[2], spec[3]
        if spec[0] == "const":
            return tuple(np.shape(spec[1])), np.asarray(spec[1]).dtype
        return tuple(spec[1]), np.dtype(spec[2])

    def _checked_output(self, k: int, array: Any) -> Any:
        """A caller's output array, if it can take output k in place."""
        name = self.outputs[k][0]
        view = self.device.backend.describe(array)
        shape, dtype = self.output_type(k)
        if tuple(view.shape) != shape or array_dtype(view) != dtype:
            raise ModelError(
                f"output '{name}' is {list(shape)} {dtype}: the bound array is "
                f"{list(view.shape)} {np.dtype(view.dtype)}"
            )
        if not view.flags.c_contiguous:
            raise ModelError(f"output '{name}': a bound output array must be C-contiguous")
        return array


def _flat(a: Any) -> Any:
    return a.reshape(-1)


def _check_apart(backend: Any, ins: Sequence[Any], outs: Sequence[Any]) -> None:
    """ModelError where a caller's output array shares memory with an input."""
    spans = []
    for a in ins:
        flat, length = backend.byte_view(a, False)
        start = backend.address(flat)
        spans.append((start, start + length))
    for o in outs:
        flat, length = backend.byte_view(o, True)
        start = backend.address(flat)
        if any(start < end and lo < start + length for lo, end in spans):
            raise ModelError("a bound output array shares memory with an input")


class Feeds:
    """A compiled graph's input arrays for one run: the model's arrays (0-D ones as their
    1-element view) and the constants it reads as data, placed on the device once."""

    def __init__(
        self,
        device: Device,
        names: Sequence[str],
        constants: Mapping[str, np.ndarray[Any, Any]],
        scalars: Sequence[str],
    ) -> None:
        self.device = device
        self.names = list(names)
        self.constants = dict(constants)
        self.scalars = set(scalars)
        self._placed: dict[tuple[str, str], Any] = {}
        # on the host each constant is read as it is (its flat view, made once)
        self._host_constants = (
            {n: c.reshape(-1) for n, c in self.constants.items()}
            if device.backend.name == "numpy"
            else None
        )

    def arrays(self, values: Mapping[str, Any]) -> list[Any]:
        """The graph's inputs in order, for these run-time values."""
        if not self.constants and not self.scalars:
            return [values[n] for n in self.names]
        host = self._host_constants
        if host is not None and not self.scalars:
            return [host[n] if n in host else values[n] for n in self.names]
        given = next((values[n] for n in self.names if n in values), None)
        out = []
        for n in self.names:
            if n in self.constants:
                out.append(self._constant(n, given))
            else:
                out.append(values[n].reshape(1) if n in self.scalars else values[n])
        return out

    def _constant(self, name: str, template: Any) -> Any:
        backend = self.device.backend
        host = self.constants[name]
        if backend.name == "numpy":
            return host.reshape(-1)
        where = str(getattr(template, "device", ""))
        key = (name, where)
        placed = self._placed.get(key)
        if placed is None:
            placed = backend.upload(np.ascontiguousarray(host.reshape(-1)))
            self._placed[key] = placed
        return placed


def new_array(backend: Any, ins: Sequence[Any], shape: tuple[int, ...], dtype: Any) -> Any:
    """A new array of `shape` and `dtype` beside the inputs `ins` (in the library and on the
    device of the first input of that type)."""
    wanted = np.dtype(dtype)
    for a in ins:
        if array_dtype(a) == wanted:
            return backend.new_like(a, shape)
    return backend.new_like(ins[0], shape, wanted)


def _empty(device: Device, shape: tuple[int, ...], dtype: Any) -> Any:
    if device.backend.name == "cuda":
        import cupy

        return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)


def _constant(device: Device, value: np.ndarray[Any, Any]) -> Any:
    if device.backend.name == "cuda":
        import cupy

        return cupy.asarray(value)
    return value.copy()


def _tensor_type(dtype: Any) -> str:
    import onnx

    dtype = np.dtype(dtype)
    if dtype.type.__module__ == "ml_dtypes":  # bfloat16, float8_e4m3fn, ...: ONNX's names
        return str(dtype.name).replace("float8_", "float8")
    name = onnx.helper.tensor_dtype_to_string(onnx.helper.np_dtype_to_tensor_dtype(dtype))
    return name.removeprefix("TensorProto.").lower()


def _dtypes(
    node: Any, constants: Mapping[str, Any], dtypes: Mapping[str, np.dtype[Any]]
) -> dict[str, np.dtype[Any]]:
    """The dtype of each of the node's inputs known so far."""
    found: dict[str, np.dtype[Any]] = {}
    for name in node.input:
        if name in constants:
            found[name] = np.asarray(constants[name]).dtype
        elif name in dtypes:
            found[name] = dtypes[name]
    return found


def _check_schema(node: Any, opset: int, dtypes: Mapping[str, np.dtype[Any]]) -> None:
    """The node as ONNX's schema for its opset has it: input and output counts, required
    inputs, attribute names, types and presence, and the types of inputs already known."""
    import onnx
    from onnx import defs

    where = f"ONNX node '{node.name or node.op_type}'"
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        raise ModelError(f"{where}: {node.op_type} does not exist at opset {opset}") from None
    n_in, n_out = len(node.input), len(node.output)
    if not schema.min_input <= n_in <= schema.max_input:
        raise ModelError(
            f"{where}: {n_in} inputs; {node.op_type}-{schema.since_version} takes "
            f"{schema.min_input} to {schema.max_input}"
        )
    if not schema.min_output <= n_out <= schema.max_output:
        raise ModelError(
            f"{where}: {n_out} outputs; {node.op_type}-{schema.since_version} has "
            f"{schema.min_output} to {schema.max_output}"
        )
    single = defs.OpSchema.FormalParameterOption.Single
    constraints = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    for k, name in enumerate(node.input):
        formal = schema.inputs[min(k, len(schema.inputs) - 1)]
        if not name:
            if formal.option == single:
                raise ModelError(f"{where}: required input {k} ({formal.name}) is empty")
            continue
        dtype = dtypes.get(name)
        allowed = constraints.get(formal.type_str, [formal.type_str])
        if dtype is not None and f"tensor({_tensor_type(dtype)})" not in allowed:
            raise ModelError(
                f"{where}: input '{name}' ({formal.name}) is {dtype}: "
                f"{node.op_type} allows {', '.join(allowed)}"
            )
    for attribute in node.attribute:
        spec = schema.attributes.get(attribute.name)
        if spec is None:
            raise ModelError(
                f"{where}: '{attribute.name}' is not an attribute of "
                f"{node.op_type}-{schema.since_version}"
            )
        kind = onnx.AttributeProto.AttributeType.Name(attribute.type)
        if str(spec.type).rsplit(".", 1)[-1] != kind:
            raise ModelError(
                f"{where}: attribute '{attribute.name}' is {kind}: {node.op_type} takes "
                f"{str(spec.type).rsplit('.', 1)[-1]}"
            )
    given = {a.name for a in node.attribute}
    for name, spec in schema.attributes.items():
        if spec.required and name not in given:
            raise ModelError(f"{where}: required attribute '{name}' is missing")


_PAD_MODES = {"constant": "CONSTANT", "reflect": "REFLECTION", "edge": "EDGE", "wrap": "WRAP"}


def _pad(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    opset: int,
    ints: Any,
    number: Any,
    dtype: np.dtype[Any],
) -> Value:
    """ONNX Pad onto PADDING1: negative pads crop first (a SLICE1), then the rest pads."""
    rank = len(shape)
    mode = a.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in _PAD_MODES or (mode == "wrap" and opset < 19):
        raise ModelError(f"Pad: mode '{mode}' is not one of constant, reflect, edge, wrap (19)")
    if opset < 11:
        pads, value, axes = list(a["pads"]), float(a.get("value", 0.0)), None
    else:
        pads = ints(node, 1)
        value = 0
        if len(node.input) > 2 and node.input[2]:
            value = number(node, 2)
        axes = ints(node, 3)
    if pads is None:
        raise ModelError("Pad: the pads input is missing")
    axes = list(range(rank)) if axes is None else [axis_of(int(d), rank, "Pad") for d in axes]
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        raise ModelError(f"Pad: {len(pads)} pads for {len(axes)} axes")
    start, end = [0] * rank, [0] * rank
    for k, d in enumerate(axes):
        start[d], end[d] = int(pads[k]), int(pads[k + len(axes)])
    out = tuple(n + b + e for n, b, e in zip(shape, start, end, strict=True))
    crop_lo = [max(0, -b) for b in start]
    crop_hi = [max(0, -e) for e in end]
    kept = [n - lo - hi for n, lo, hi in zip(shape, crop_lo, crop_hi, strict=True)]
    if min(kept, default=1) < 0:
        raise ModelError(f"Pad: pads {pads} crop more than the input's {list(shape)}")
    grow_lo, grow_hi = [max(0, b) for b in start], [max(0, e) for e in end]
    for d, (n, lo, hi) in enumerate(zip(kept, grow_lo, grow_hi, strict=True)):
        if (lo or hi) and mode != "constant" and n == 0:
            raise ModelError(f"Pad: mode '{mode}' pads axis {d}, which is empty")
        if mode == "reflect" and max(lo, hi) > n - 1 and n > 0:
            raise ModelError(
                f"Pad: reflect pads {lo} and {hi} on axis {d} of size {n}: each must be at "
                f"most {n - 1} (the size less one)"
            )
    if 0 in out:
        return _Empty(out, dtype)
    if isinstance(x, _Empty) or 0 in kept:  # only the constant is left (mode constant)
        element = word_element(dtype, "Pad")
        fill = encode(value, element_of(dtype), "Pad.constant_value")
        return g.filled(BufferTensorDesc(element.described_as, out), fill, node.name or None)
    if isinstance(x, _Scalar):
        return x
    if any(crop_lo) or any(crop_hi):
        x = g.slice1(x, crop_lo, kept, [1] * rank, kept, name=None)
    if not any(grow_lo) and not any(grow_hi):
        return x
    return g.padding(
        x, grow_lo, grow_hi, _PAD_MODES[mode], _fill_value(value, dtype), name=node.name or None
    )


def _resized(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    opset: int,
    ints: Any,
    number: Any,
    dtype: np.dtype[Any],
) -> Value:
    """ONNX Resize or Upsample, nearest, onto UPSAMPLE_2D (the leading axes merged into its
    batch: any rank from 2)."""
    op = node.op_type
    if op == "Upsample":
        scales, sizes = (a.get("scales") if opset < 9 else number(node, 1, every=True)), None
    elif opset < 11:
        scales, sizes = number(node, 1, every=True), None
    else:
        scales, sizes = number(node, 2, every=True), ints(node, 3)
    if 0 in shape or isinstance(x, _Empty):  # empty in, empty out: the sizes alone
        return _Empty(resized_shape(op, a, opset, shape, scales, sizes), dtype)
    try:
        height, width = nearest_scales(op, a, opset, shape, scales, sizes)
        if dtype.itemsize == 1:  # UPSAMPLE_2D's table has no one-byte type to carry them
            raise ModelError("one-byte elements")
    except ModelError:  # not a whole-factor upsample of the last two axes: RESAMPLE2
        return _resampled(g, node, a, x, shape, opset, scales, sizes, dtype)
    *lead, h, w = shape
    four = _reshaped(g, x, [math.prod(lead), 1, h, w], dtype)
    grown = g.upsample_2d(_tensor(four), (height, width), name=node.name or None)
    return _reshaped(g, grown, [*lead, h * height, w * width], dtype)


def _resampled(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    opset: int,
    scales: Any,
    sizes: Any,
    dtype: np.dtype[Any],
) -> Value:
    """A nearest Resize as RESAMPLE2 moving onnxruntime's indices; its leading axes that
    keep their elements merged into one (RESAMPLE2 takes 1 to 4 dimensions)."""
    maps, out, (coordinates, rounding, factors) = index_maps(
        node.op_type, a, opset, shape, scales, sizes
    )
    if 0 in out:
        return _Empty(out, dtype)
    kept = 0
    while kept < len(shape) and np.array_equal(maps[kept], np.arange(shape[kept])):
        kept += 1
    if kept > 1:  # one batch axis for them
        batch = math.prod(shape[:kept])
        maps = [np.arange(batch), *maps[kept:]]
        factors = [1.0, *factors[kept:]]
        inner, outer = (batch, *shape[kept:]), (batch, *out[kept:])
    else:
        inner, outer = shape, out
    if len(inner) > 4:
        raise ModelError(
            f"{node.op_type}: {len(inner)} axes are resampled or lead resampled ones "
            "(RESAMPLE2 takes 1 to 4 dimensions)"
        )
    fields = directml_fields(coordinates, rounding, factors, inner, outer)
    flat = _reshaped(g, x, list(inner), dtype)
    moved = g.resample2(_tensor(flat), outer, *fields, maps=maps, name=node.name or None)
    return _reshaped(g, moved, list(out), dtype)


def _triangle(
    g: Graph,
    node: Any,
    a: dict[str, Any],
    x: Value,
    shape: tuple[int, ...],
    ints: Any,
    dtype: np.dtype[Any],
) -> Value:
    """ONNX Trilu of data: one DIAGONAL_MATRIX1 writing zeros on the dropped side (the
    leading axes merged into one batch: any rank from 2)."""
    if len(shape) < 2:
        raise ModelError(f"Trilu: the input has {len(shape)} dimensions: it takes 2 or more")
    if 0 in shape or isinstance(x, _Empty):
        return _Empty(shape, dtype)
    *lead, height, width = shape
    k = (ints(node, 1) or [0])[0]
    begin, end = triangle_span(bool(int(a.get("upper", 1))), k, height, width)
    three = _reshaped(g, x, [math.prod(lead), height, width], dtype)
    kept = g.diagonal_matrix1(_tensor(three), begin, end, 0, name=node.name or None)
    return _reshaped(g, kept, list(shape), dtype)


def _fill_value(value: Any, dtype: np.dtype[Any]) -> float | int:
    """Pad's constant as the graph's PADDING1 takes it: a number of the data's DirectML
    type, or, for a type carried by an unsigned one (bool, bfloat16, float8, complex64),
    the bits of the value in the data's own type."""
    element = element_of(dtype)
    if element.data_type is None:
        return int.from_bytes(encode(value, element, "Pad.constant_value"), "little")
    return int(value) if dtype.kind in "iub" else float(value)


def _reshaped(g: Graph, x: Value, shape: Sequence[int], dtype: np.dtype[Any]) -> Value:
    shape = tuple(int(s) for s in shape)
    if isinstance(x, _Empty) or 0 in shape:
        return _Empty(shape, dtype)
    base = _tensor(x)
    if not shape:  # a scalar: its one element
        return _Scalar(base if base.sizes == (1,) else g.reinterpret(base, (1,), (1,)))
    return g.reinterpret(base, shape, packed_strides(shape))


def _depth_space_views(
    g: Graph, op: str, x: Value, b: int, mode: str, dtype: np.dtype[Any]
) -> Value:
    """DepthToSpace / SpaceToDepth as ONNX defines them: a reshape, a transpose, a reshape."""
    shape = _shape(x)
    if len(shape) != 4:
        raise ModelError(f"{op}: input of rank {len(shape)}; {op} takes rank 4")
    _, c, h, w = shape
    to_space = op == "DepthToSpace"
    if to_space and c % (b * b):
        raise ModelError(f"DepthToSpace: {c} channels are not a multiple of {b}x{b}")
    if not to_space and (h % b or w % b):
        raise ModelError(f"SpaceToDepth: {h}x{w} is not a multiple of {b}x{b}")
    split, perm, out = block_axes(shape, b, mode != "CRD", to_space)
    if isinstance(x, _Empty) or 0 in out:
        return _Empty(out, dtype)
    packed = packed_strides(split)
    moved = g.reinterpret(
        _tensor(_reshaped(g, x, split, dtype)),
        tuple(split[p] for p in perm),
        [packed[p] for p in perm],
    )
    return _reshaped(g, moved, out, dtype)


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
