"""ONNX's indexed operators (Gather, GatherElements, GatherND, Scatter, ScatterElements,
ScatterND, OneHot, ReverseSequence) as calls of dmlops' array layer: the output's shape and type
known when the model is compiled, and the call on the node's operand arrays. Steps run the
call at run time (staged.py); a node whose operands are all constants is evaluated once
when the model is compiled (lowering.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arrays import indexed as array_layer
from ..errors import ModelError
from ..tensor import FeatureLevel
from .params import axis_of

__all__ = ["IndexedNode", "indexed_node"]

TypeOf = Callable[[str], tuple[tuple[int, ...], np.dtype[Any]]]


@dataclass(frozen=True)
class IndexedNode:
    """One indexed ONNX node compiled for its operands' shapes: its output's shape and dtype,
    DirectML's operator for it, and `call(operands)` (the node's inputs in order, as arrays
    of one library; None for an omitted input)."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    operator: str
    call: Callable[[Sequence[Any]], Any]


def indexed_node(
    node: Any,
    attrs: dict[str, Any],
    type_of: TypeOf,
    constant: Callable[[str], np.ndarray[Any, Any] | None],
    level: FeatureLevel,
    library: Any = array_layer,
) -> IndexedNode:
    """The node as a call of the array layer; ModelError where ONNX's rules (or dmlops'
    scope) refuse it. `type_of(name)` gives an input's shape and dtype, `constant(name)` its
    value where it is known when the model is compiled. `library`: the module whose calls
    the node makes (the array layer's `arrays.indexed`, or one of the same signatures, as
    dmlops.dask's operators)."""
    fi = library
    op = node.op_type
    names = list(node.input)
    if op == "OneHot":
        return _one_hot(names, attrs, type_of, constant, level, fi)
    if op == "MaxUnpool":
        return _max_unpool(names, attrs, type_of, constant, level, fi)
    xshape, xtype = type_of(names[0])
    ishape, _ = type_of(names[1])
    rank = len(xshape)
    if op == "ReverseSequence":
        t = axis_of(int(attrs.get("time_axis", 0)), rank, "ReverseSequence")
        b = axis_of(int(attrs.get("batch_axis", 1)), rank, "ReverseSequence")
        if rank < 2 or {t, b} != {0, 1}:
            raise ModelError(
                f"ReverseSequence: time_axis {t} and batch_axis {b} must be 0 and 1 in some "
                f"order, of an input of rank >= 2 (its shape is {list(xshape)})"
            )
        steps = xshape[t]
        # the axes after time and batch move together: one axis (REVERSE_SUBSEQUENCES takes
        # at most 5 dimensions; ONNX any rank from 2)
        folded = (*xshape[:2], int(np.prod(xshape[2:]))) if rank > 3 else xshape

        def reverse(ops: Sequence[Any]) -> Any:
            _check_lengths(ops[1], steps)
            x = ops[0].reshape(folded) if folded != xshape else ops[0]
            out = fi.reverse_subsequences(x, ops[1], t, b, feature_level=level)
            return out.reshape(xshape) if folded != xshape else out

        return IndexedNode(xshape, xtype, "REVERSE_SUBSEQUENCES", reverse)
    if op == "Gather":
        ax = axis_of(int(attrs.get("axis", 0)), rank, "Gather")
        shape = xshape[:ax] + ishape + xshape[ax + 1 :]
        return IndexedNode(
            shape, xtype, "GATHER", lambda o: fi.gather(o[0], o[1], ax, feature_level=level)
        )
    if op == "GatherElements":
        ax = axis_of(int(attrs.get("axis", 0)), rank, "GatherElements")
        _check_elements(op, xshape, ishape, ax)
        return IndexedNode(
            ishape,
            xtype,
            "GATHER_ELEMENTS",
            lambda o: fi.gather_elements(o[0], o[1], ax, feature_level=level),
        )
    if op == "GatherND":
        bd = int(attrs.get("batch_dims", 0))
        if not ishape or not 0 <= bd < min(rank, len(ishape)) or ishape[-1] > rank - bd:
            raise ModelError(
                f"GatherND: indices {list(ishape)} with batch_dims {bd} do not index data "
                f"{list(xshape)}"
            )
        shape = xshape[:bd] + ishape[bd:-1] + xshape[bd + ishape[-1] :]
        return IndexedNode(
            shape,
            xtype,
            "GATHER_ND1" if bd else "GATHER_ND",
            lambda o: fi.gather_nd(o[0], o[1], bd, feature_level=level),
        )
    reduction = attrs.get("reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
    if reduction != "none":
        raise ModelError(
            f"{op}: reduction '{reduction}' computes (adds, multiplies, ...): dmlops only "
            "moves data (reduction 'none')"
        )
    if op in ("ScatterElements", "Scatter"):  # Scatter: its name before opset 11
        ax = axis_of(int(attrs.get("axis", 0)), rank, op)
        _check_elements(op, xshape, ishape, ax)
        return IndexedNode(
            xshape,
            xtype,
            "SCATTER_ELEMENTS",
            lambda o: fi.scatter_elements(o[0], o[1], o[2], ax, feature_level=level),
        )
    return IndexedNode(
        xshape,
        xtype,
        "SCATTER_ND",
        lambda o: fi.scatter_nd(o[0], o[1], o[2], feature_level=level),
    )


_ONE_HOT_INDICES = ("int32", "int64", "uint32", "uint64")  # ONE_HOT's own index types


def _one_hot(
    names: list[str],
    attrs: dict[str, Any],
    type_of: TypeOf,
    constant: Callable[[str], np.ndarray[Any, Any] | None],
    level: FeatureLevel,
    fi: Any,
) -> IndexedNode:
    known = constant(names[1])
    if known is None:
        raise ModelError("OneHot: depth must be known when the model is compiled")
    depth = int(np.asarray(known).reshape(-1)[0])
    if depth < 1:
        raise ModelError(f"OneHot: depth is {depth}: must be at least 1")
    ishape, _ = type_of(names[0])
    _, vtype = type_of(names[2])
    ax = axis_of(int(attrs.get("axis", -1)), len(ishape) + 1, "OneHot")

    def one_hot(ops: Sequence[Any]) -> Any:
        indices = ops[0]
        if str(indices.dtype).replace("torch.", "") not in _ONE_HOT_INDICES:
            indices = fi.cast_in_library(indices, "int64")  # ONNX casts them
        return fi.one_hot(indices, depth, ops[2], ax, feature_level=level)

    return IndexedNode((*ishape[:ax], depth, *ishape[ax:]), vtype, "ONE_HOT", one_hot)


def _max_unpool(
    names: list[str],
    attrs: dict[str, Any],
    type_of: TypeOf,
    constant: Callable[[str], np.ndarray[Any, Any] | None],
    level: FeatureLevel,
    fi: Any,
) -> IndexedNode:
    """ONNX MaxUnpool of an [N, C, H, W] input onto MAX_UNPOOLING: the output's sizes from
    kernel_shape, strides and pads; the indices (MaxPool's, flattening that whole output) as
    they are. An output_shape input (known when the model is compiled) gives the output's
    sizes instead, the indices naming its positions (onnxruntime's meaning and DirectML's;
    onnx's reference evaluator places the default-shaped result in its corner instead)."""
    xshape, xtype = type_of(names[0])
    if len(xshape) != 4:
        raise ModelError(
            f"MaxUnpool: the input has {len(xshape)} dimensions: dmlops lowers 2-D unpooling "
            "([N, C, H, W], DirectML's MAX_UNPOOLING)"
        )
    kernel = [int(k) for k in attrs["kernel_shape"]]
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    if len(kernel) != 2 or len(strides) != 2 or len(pads) != 4:
        raise ModelError(f"MaxUnpool: kernel_shape {kernel}, strides {strides}, pads {pads}")
    shape = (
        *xshape[:2],
        *(
            (n - 1) * s + k - pads[d] - pads[d + 2]
            for d, (n, s, k) in enumerate(zip(xshape[2:], strides, kernel, strict=True))
        ),
    )
    final = shape
    if len(names) > 2 and names[2]:
        given = constant(names[2])
        if given is None:
            raise ModelError("MaxUnpool: output_shape must be known when the model is compiled")
        final = tuple(int(v) for v in np.asarray(given).ravel())
        if len(final) != 4 or final[:2] != xshape[:2]:
            raise ModelError(
                f"MaxUnpool: output_shape {list(final)} for an input {list(xshape)}: the same "
                "batch and channels"
            )

    def unpool(ops: Sequence[Any]) -> Any:
        return fi.max_unpooling(ops[0], ops[1], final, feature_level=level)

    return IndexedNode(final, xtype, "MAX_UNPOOLING", unpool)


def _check_elements(op: str, data: tuple[int, ...], indices: tuple[int, ...], axis: int) -> None:
    """ONNX's rule for GatherElements / ScatterElements: indices of the data's rank."""
    if len(indices) != len(data):
        raise ModelError(
            f"{op}: indices have rank {len(indices)}: the data's is {len(data)} ({list(data)})"
        )


def _check_lengths(lengths: Any, steps: int) -> None:
    """ReverseSequence's sequence_lens must lie in [0, steps], as onnxruntime checks; checked
    where they are host memory (on a GPU the check would wait for the device: DirectML's
    meaning, the whole axis reversed, applies there)."""
    host = lengths
    if type(lengths).__module__.startswith("torch") and not lengths.is_cuda:
        host = lengths.numpy()
    if not isinstance(host, np.ndarray) or host.size == 0:
        return
    bad = (host < 0) | (host > steps)
    if bad.any():
        value = int(host[bad.nonzero()][0])
        raise ModelError(
            f"ReverseSequence: sequence length {value} is outside [0, {steps}] "
            "(the time axis' size)"
        )
