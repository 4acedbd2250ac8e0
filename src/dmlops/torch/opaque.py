"""The operators that have no views-and-copies form (GATHER, GATHER_ELEMENTS, GATHER_ND,
SCATTER_ELEMENTS, SCATTER_ND, ONE_HOT, REVERSE_SUBSEQUENCES, TILE, PADDING1) as torch
custom operators (`torch.ops.dmlops.gather`, ...): what torch.compile, torch.export and
make_fx see of a functional call. Inductor runs them as extern kernels (dmlops' own); their
fake implementations give the output's sizes and type; their gradient is `moves`'
(the operator run on the inputs' positions, the output gradient added there)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..arrays import family
from ..arrays import indexed as FI
from ..arrays import strided as F
from ..arrays.indexed import _axis
from ..errors import DmlError
from ..ops import AxisDirection, InterpolationMode, PaddingMode, ResampleDesc
from ..tensor import FeatureLevel

__all__ = ["OPAQUE", "Opaque", "opaque_call"]


def _gather_shape(x: Any, indices: Any, axis: int, *_: Any) -> tuple[Any, ...]:
    a = _axis(axis, max(x.dim(), 1), "GATHER")
    return (*x.shape[:a], *indices.shape, *x.shape[a + 1 :])


def _gather_nd_shape(x: Any, indices: Any, batch_dims: int, *_: Any) -> tuple[Any, ...]:
    if indices.dim() == 0:
        raise DmlError("GATHER_ND: indices need at least one dimension (the index tuple)")
    b, n = batch_dims, indices.shape[-1]
    return (*x.shape[:b], *indices.shape[b:-1], *x.shape[b + n :])


def _one_hot_shape(indices: Any, depth: int, values: Any, axis: int, *_: Any) -> tuple[Any, ...]:
    a = _axis(axis, indices.dim() + 1, "ONE_HOT")
    return (*indices.shape[:a], depth, *indices.shape[a:])


def _tile_shape(x: Any, repeats: Sequence[int], *_: Any) -> tuple[Any, ...]:
    if len(repeats) != x.dim():
        raise DmlError(
            f"TILE.Repeats has {len(repeats)} entries: the input has {x.dim()} dimensions"
        )
    return tuple(n * r for n, r in zip(x.shape, repeats, strict=True))


def _padding_shape(x: Any, start: Sequence[int], end: Sequence[int], *_: Any) -> tuple[Any, ...]:
    if len(start) != x.dim() or len(end) != x.dim():
        raise DmlError(
            f"PADDING1.StartPadding and EndPadding have {len(start)} and {len(end)} "
            f"entries: the input has {x.dim()} dimensions"
        )
    return tuple(n + s + e for n, s, e in zip(x.shape, start, end, strict=True))


def _upsample_shape(x: Any, scale: Sequence[int], *_: Any) -> tuple[Any, ...]:
    if x.dim() < 2 or len(scale) != 2:
        raise DmlError(
            f"UPSAMPLE_2D: ScaleSize has {len(scale)} entries for an input of {x.dim()} "
            "dimensions (two scales, of the last two dimensions)"
        )
    return (*x.shape[:-2], x.shape[-2] * scale[0], x.shape[-1] * scale[1])


def _resample_shape(
    x: Any, scales: Sequence[float], sizes: Sequence[int] | None, *_: Any
) -> tuple[Any, ...]:
    if sizes is not None:
        return tuple(sizes)
    return ResampleDesc.output_sizes_for(tuple(x.shape), scales)


def _same_shape(x: Any, *_: Any) -> tuple[Any, ...]:
    return tuple(x.shape)


# each argument's type in the custom operators' schemas, by its functional name
_SCHEMA_TYPES = {
    **dict.fromkeys(("input", "indices", "updates", "values", "lengths", "x"), "Tensor"),
    **dict.fromkeys(
        ("axis", "batch_dims", "depth", "batch_axis", "diagonal_fill_begin", "diagonal_fill_end"),
        "int",
    ),
    **dict.fromkeys(("repeats", "start_padding", "end_padding", "scale_size"), "int[]"),
    "mode": "str",
    "interpolation_mode": "str",
    "scales": "float[]",
    "sizes": "int[]?",
    "input_pixel_offsets": "float[]?",
    "output_pixel_offsets": "float[]?",
    "rounding_direction": "str?",
    "value": "float",
    "feature_level": "str?",
    "clamp_indices": "bool",
    "validate_indices": "bool",
}


class Opaque:
    """One operator as a custom operator: its functional call's argument order (positional
    names, then keyword names), its data inputs (positions among the tensors' arguments),
    the keyword of the constant it writes, and the input its output is made like."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        shape: Callable[..., tuple[Any, ...]],
        positional: tuple[str, ...],
        keywords: tuple[str, ...],
        data: tuple[int, ...],
        constant: str | None = None,
        like: int = 0,
    ) -> None:
        """`fn`: the array layer's call, which the custom operator runs on detached tensors;
        `shape`: its output's sizes from the custom operator's arguments."""
        self.name, self.fn, self.positional, self.keywords = name, fn, positional, keywords
        self.data, self.constant, self.like = data, constant, like
        names = (*positional, *keywords)
        schema = ", ".join(f"{_SCHEMA_TYPES[n]} {n}" for n in names)
        self.op: Any = torch.library.custom_op(
            f"dmlops::{name}", self.call, mutates_args=(), schema=f"({schema}) -> Tensor"
        )
        self.overload: Any = self.op._opoverload  # (what dynamo traces into a graph)

        def fake(*args: Any) -> Tensor:
            template = args[like]
            return template.new_empty(shape(*args))

        self.op.register_fake(fake)
        self.op.register_autograd(self._backward, setup_context=self._setup)

    def arguments(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The custom operator's arguments from the functional call's (a feature level as
        its name, PADDING1's mode as its name and value as a float, ONE_HOT's values as a
        tensor beside the indices)."""
        found = [*args, *(kwargs[k] for k in self.keywords)]
        at = len(self.positional)
        for k, name in enumerate(self.keywords):
            value = found[at + k]
            if name == "feature_level" and value is not None and not isinstance(value, str):
                found[at + k] = FeatureLevel.parse(value).name
            elif name == "value":
                found[at + k] = float(value)
        if self.name == "padding" and not isinstance(found[3], str):
            found[3] = PaddingMode.parse(found[3]).name
        if self.name == "upsample_2d" and not isinstance(found[2], str):
            found[2] = InterpolationMode.parse(found[2], "UPSAMPLE_2D.InterpolationMode").name
        if self.name == "resample":
            found[1] = [float(v) for v in found[1]]
            for k, name in enumerate(self.keywords):
                value = found[at + k]
                if name == "interpolation_mode" and not isinstance(value, str):
                    found[at + k] = InterpolationMode.parse(
                        value, "RESAMPLE.InterpolationMode"
                    ).name
                elif (
                    name == "rounding_direction"
                    and value is not None
                    and not isinstance(value, str)
                ):
                    found[at + k] = AxisDirection.parse(value, "RESAMPLE2.RoundingDirection").name
                elif name in ("input_pixel_offsets", "output_pixel_offsets") and value is not None:
                    found[at + k] = [float(v) for v in value]
                elif name == "sizes" and value is not None:
                    found[at + k] = [int(v) for v in value]
        if self.name == "one_hot" and not isinstance(found[2], Tensor):
            found[2] = torch.as_tensor(found[2], device=found[0].device)
        return found

    def call(self, *args: Any) -> Tensor:
        """The array layer's call on the custom operator's arguments (tensors detached)."""
        plain = [a.detach() if isinstance(a, Tensor) else a for a in args]
        count = len(self.positional)
        keywords = dict(zip(self.keywords, plain[count:], strict=True))
        result: Tensor = self.fn(*plain[:count], **keywords)
        return result

    def keep(self, ctx: Any, args: Sequence[Any]) -> None:
        """What the backward needs of a call on these custom-operator arguments: the data
        inputs' shapes, and the other arguments — tensors (indices, lengths) through
        `save_for_backward`, so that one changed in place before the backward is refused."""
        ctx.shapes = {k: tuple(args[k].shape) for k in self.data}
        others = [None if k in self.data else a for k, a in enumerate(args)]
        ctx.tensors_at = [k for k, a in enumerate(others) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(others[k] for k in ctx.tensors_at))
        ctx.others = [None if k in ctx.tensors_at else a for k, a in enumerate(others)]

    def gradients(self, ctx: Any, grad: Tensor, run: Callable[..., Any]) -> list[Any]:
        """Each argument's gradient (None but for the data inputs), given the output's
        gradient: `run` (the operator, on custom-operator arguments) on the data inputs'
        positions (integers numbering their elements in turn; int32 where every one fits)
        says where each output element came from (-1: the operator's constant, which takes
        none), and each output element's gradient is added to its source."""
        args = list(ctx.others)
        for k, t in zip(ctx.tensors_at, ctx.saved_tensors, strict=True):
            args[k] = t
        counts = {k: math.prod(shape) for k, shape in ctx.shapes.items()}
        kind = torch.int32 if sum(counts.values()) < 2**31 else torch.int64
        starts, at = {}, 0
        for k, shape in ctx.shapes.items():
            numbers = torch.arange(at, at + counts[k], dtype=kind, device=grad.device)
            args[k], starts[k] = numbers.reshape(shape), at
            at += counts[k]
        if self.constant is not None:
            args[len(self.positional) + self.keywords.index(self.constant)] = -1.0
        sources = torch.as_tensor(run(*args)).reshape(-1)
        flat = grad.reshape(-1)
        if self.constant is not None:
            kept = sources >= 0
            sources, flat = sources[kept], flat[kept]
        total = grad.new_zeros(at).index_add(0, sources, flat)
        found: list[Any] = [None] * len(args)
        for k in self.data:
            found[k] = total[starts[k] : starts[k] + counts[k]].view(ctx.shapes[k])
        return found

    def _setup(self, ctx: Any, inputs: Sequence[Any], output: Any) -> None:
        self.keep(ctx, inputs)

    def _backward(self, ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        return tuple(self.gradients(ctx, grad, self.op))


_INDEXED = ("feature_level", "clamp_indices", "validate_indices")
_LEVEL = ("feature_level",)
OPAQUE = {
    "GATHER": Opaque(
        "gather", FI.gather, _gather_shape, ("input", "indices", "axis"), _INDEXED, (0,)
    ),
    "GATHER_ELEMENTS": Opaque(
        "gather_elements",
        FI.gather_elements,
        lambda x, indices, *_: tuple(indices.shape),
        ("input", "indices", "axis"),
        _INDEXED,
        (0,),
    ),
    "GATHER_ND": Opaque(
        "gather_nd",
        FI.gather_nd,
        _gather_nd_shape,
        ("input", "indices", "batch_dims"),
        _INDEXED,
        (0,),
    ),
    "SCATTER_ELEMENTS": Opaque(
        "scatter_elements",
        FI.scatter_elements,
        _same_shape,
        ("input", "indices", "updates", "axis"),
        _INDEXED,
        (0, 2),
    ),
    "SCATTER_ND": Opaque(
        "scatter_nd", FI.scatter_nd, _same_shape, ("input", "indices", "updates"), _INDEXED, (0, 2)
    ),
    "ONE_HOT": Opaque(
        "one_hot",
        FI.one_hot,
        _one_hot_shape,
        ("indices", "depth", "values", "axis"),
        _LEVEL,
        (2,),
        like=2,
    ),
    "REVERSE_SUBSEQUENCES": Opaque(
        "reverse_subsequences",
        FI.reverse_subsequences,
        _same_shape,
        ("input", "lengths", "axis", "batch_axis"),
        _LEVEL,
        (0,),
    ),
    "TILE": Opaque("tile", F.tile, _tile_shape, ("x", "repeats"), _LEVEL, (0,)),
    "ELEMENT_WISE_IDENTITY": Opaque(
        "element_wise_identity", F.element_wise_identity, _same_shape, ("x",), _LEVEL, (0,)
    ),
    "UPSAMPLE_2D": Opaque(
        "upsample_2d",
        F.upsample_2d,
        _upsample_shape,
        ("x", "scale_size", "interpolation_mode"),
        _LEVEL,
        (0,),
    ),
    "DIAGONAL_MATRIX1": Opaque(
        "diagonal_matrix1",
        family.diagonal_matrix1,
        _same_shape,
        ("x", "diagonal_fill_begin", "diagonal_fill_end"),
        ("value", "feature_level"),
        (0,),
        constant="value",
    ),
    "RESAMPLE": Opaque(
        "resample",
        family.resample,
        _resample_shape,
        ("x", "scales"),
        (
            "sizes",
            "input_pixel_offsets",
            "output_pixel_offsets",
            "rounding_direction",
            "interpolation_mode",
            "feature_level",
        ),
        (0,),
    ),
    "PADDING1": Opaque(
        "padding",
        F.padding,
        _padding_shape,
        ("x", "start_padding", "end_padding", "mode"),
        ("value", "feature_level"),
        (0,),
        constant="value",
    ),
}


def opaque_call(op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """Operator `op`'s functional call (its positional arguments and keywords) as its custom
    operator."""
    opaque = OPAQUE[op]
    return opaque.overload(*opaque.arguments(args, kwargs))
