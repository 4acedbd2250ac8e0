"""What runs on the host when a model is compiled: integer shape arithmetic (`Shape`,
`Size`, ...) evaluated with numpy, indexed nodes whose inputs are all constants, and any
array's values brought to the host."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError, ModelError
from .indexed import indexed_node
from .params import attributes, unsqueeze_axes

__all__ = ["HOST_OPS", "folded", "host_array", "host_eval"]


HOST_OPS = (
    "Constant",
    "Identity",
    "Shape",
    "Size",
    "Gather",
    "GatherElements",
    "Unsqueeze",
    "Squeeze",
    "Concat",
    "Slice",
    "Split",
    "Reshape",
    "Transpose",
    "Flatten",
    "Expand",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Mod",
    "Neg",
    "Abs",
    "Cast",
    "Equal",
    "Less",
    "Greater",
    "Not",
    "And",
    "Or",
    "Where",
    "ConstantOfShape",
    "Range",
    "Min",
    "Max",
    "Trilu",
    "EyeLike",
)


def host_eval(node: Any, a: dict[str, Any], ins: list[Any], opset: int) -> list[Any]:
    """An integer-only (shape arithmetic) node evaluated with numpy on the host."""
    import onnx

    op = node.op_type
    x: Any = ins[0] if ins else None

    def axes_of(k: int, attr: str = "axes") -> list[int] | None:
        if attr in a:
            return [int(v) for v in a[attr]]
        if len(ins) > k and ins[k] is not None:
            return [int(v) for v in np.asarray(ins[k]).ravel()]
        return None

    if op == "Constant":
        for key in ("value", "value_int", "value_ints", "value_float", "value_floats"):
            if key in a:
                v = a[key]
                return [onnx.numpy_helper.to_array(v) if key == "value" else np.asarray(v)]
        raise ModelError(f"Constant: {sorted(a)} are not supported values")
    if op == "Identity":
        return [x]
    if op in ("Shape", "Size"):
        dims = np.asarray(x).shape if not isinstance(x, tuple) else x
        if op == "Size":
            return [np.asarray(math.prod(dims), np.int64)]
        start, end = int(a.get("start", 0)), a.get("end")
        return [np.asarray(dims[start : None if end is None else int(end)], np.int64)]
    if op == "Gather":
        return [np.take(x, np.asarray(ins[1]), axis=int(a.get("axis", 0)))]
    if op == "GatherElements":
        return [np.take_along_axis(x, np.asarray(ins[1]), axis=int(a.get("axis", 0)))]
    if op == "Unsqueeze":
        added = axes_of(1)
        out = np.asarray(x)
        for ax in unsqueeze_axes(added, np.ndim(x)):
            out = np.expand_dims(out, ax)
        return [out]
    if op == "Squeeze":
        dropped = axes_of(1)
        return [np.squeeze(x, axis=None if dropped is None else tuple(dropped))]
    if op == "Concat":
        return [np.concatenate([np.atleast_1d(v) for v in ins], axis=int(a["axis"]))]
    if op == "Slice":
        if opset < 10:
            starts, ends, sl_axes, steps = a["starts"], a["ends"], a.get("axes"), None
        else:
            starts, ends = axes_of(1, "-"), axes_of(2, "-")
            sl_axes, steps = axes_of(3, "-"), axes_of(4, "-")
        index = [slice(None)] * np.ndim(x)
        for k, (s0, e0) in enumerate(zip(starts or [], ends or [], strict=True)):
            ax = (sl_axes[k] if sl_axes else k) % np.ndim(x)
            index[ax] = slice(int(s0), int(e0), int(steps[k]) if steps else 1)
        return [np.asarray(x)[tuple(index)]]
    if op == "Split":
        axis = int(a.get("axis", 0))
        sizes = a.get("split") if opset < 13 else axes_of(1, "-")
        n = len(node.output)
        if sizes is None:
            return list(np.array_split(x, n, axis=axis))
        return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))
    if op == "Reshape":
        target = [int(v) for v in np.asarray(ins[1]).ravel()]
        new_shape = [
            np.shape(x)[i] if t == 0 and not a.get("allowzero") else t for i, t in enumerate(target)
        ]
        return [np.reshape(x, new_shape)]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Flatten":
        axis = int(a.get("axis", 1)) % (np.ndim(x) + 1)
        return [np.reshape(x, (math.prod(np.shape(x)[:axis]), -1))]
    if op == "Expand":
        to = tuple(int(v) for v in np.asarray(ins[1]).ravel())
        return [np.broadcast_to(x, np.broadcast_shapes(np.shape(x), to)).copy()]
    if op in ("Add", "Sub", "Mul", "Equal", "Less", "Greater", "And", "Or"):
        fn = {
            "Add": np.add,
            "Sub": np.subtract,
            "Mul": np.multiply,
            "Equal": np.equal,
            "Less": np.less,
            "Greater": np.greater,
            "And": np.logical_and,
            "Or": np.logical_or,
        }[op]
        return [np.asarray(fn(x, ins[1]))]
    if op == "Div":
        q = np.asarray(x) / np.asarray(ins[1])
        kind = np.asarray(x).dtype.kind
        return [np.trunc(q).astype(np.asarray(x).dtype) if kind in "iu" else q]
    if op == "Mod":
        f = np.fmod if int(a.get("fmod", 0)) else np.mod
        return [np.asarray(f(x, ins[1]))]
    if op in ("Neg", "Abs", "Not"):
        return [np.asarray({"Neg": np.negative, "Abs": np.abs, "Not": np.logical_not}[op](x))]
    if op == "Cast":
        return [np.asarray(x).astype(onnx.helper.tensor_dtype_to_np_dtype(int(a["to"])))]
    if op == "Where":
        return [np.where(x, ins[1], ins[2])]
    if op == "ConstantOfShape":
        value = a.get("value")
        fill = (
            onnx.numpy_helper.to_array(value).ravel()
            if value is not None
            else np.zeros(1, np.float32)
        )
        return [np.full([int(v) for v in np.asarray(x).ravel()], fill[0], dtype=fill.dtype)]
    if op == "Range":
        return [
            np.arange(
                np.asarray(x).item(), np.asarray(ins[1]).item(), np.asarray(ins[2]).item()
            ).astype(np.asarray(x).dtype)
        ]
    if op in ("Min", "Max"):
        fn2 = np.minimum if op == "Min" else np.maximum
        out = np.asarray(x)
        for v in ins[1:]:
            out = fn2(out, v)
        return [np.asarray(out)]
    if op == "Trilu":  # a mask's triangle of a constant (torch.tril / triu of ones)
        k = int(np.asarray(ins[1]).item()) if len(ins) > 1 and ins[1] is not None else 0
        keep = np.triu if int(a.get("upper", 1)) else np.tril
        return [keep(np.asarray(x), k)]
    if op == "EyeLike":  # ones on a diagonal, of the input's shape (its values unread)
        shape = np.shape(x)
        if len(shape) != 2:
            raise ModelError(f"EyeLike: the input has {len(shape)} dimensions: it takes 2")
        dtype = (
            onnx.helper.tensor_dtype_to_np_dtype(int(a["dtype"]))
            if "dtype" in a
            else np.asarray(x).dtype
        )
        return [np.eye(shape[0], shape[1], int(a.get("k", 0)), dtype=dtype)]
    raise ModelError(f"{op} is not evaluated on the host")


def folded(node: Any, constants: Mapping[str, Any], device: Device) -> np.ndarray[Any, Any]:
    """An indexed node whose inputs are all constants, evaluated once (on the CPU)."""

    def type_of(name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
        c = np.asarray(constants[name])
        return tuple(c.shape), c.dtype

    found = indexed_node(
        node, attributes(node), type_of, lambda n: constants.get(n), device.feature_level
    )
    operands = [np.asarray(constants[n]) if n else None for n in node.input]
    try:
        return np.asarray(found.call(operands))
    except DmlError as e:
        raise ModelError(f"ONNX node '{node.name or node.op_type}': {e}") from None


def host_array(a: Any) -> np.ndarray[Any, Any]:
    """An array's values on the host: numpy as is, CuPy through get(), torch through cpu()."""
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)
    if get is not None:
        return np.asarray(get())
    if hasattr(a, "cpu"):
        return np.asarray(a.detach().cpu().numpy())
    return np.asarray(a)
