"""Per-node helpers of the lowering: ONNX's schema checks, dtypes known so far, and the
parts of Pad, Resize, Trilu, Reshape and DepthToSpace that become graph nodes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..elements import element_of, encode, word_element
from ..errors import ModelError
from ..graph import Graph
from ..ops.depth_space import block_axes
from ..ops.diagonal import triangle_span
from ..tensor import BufferTensorDesc, packed_strides
from .params import axis_of
from .resize import directml_fields, index_maps, nearest_scales, resized_shape
from .values import Value, _Empty, _Scalar, _shape, _tensor


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
