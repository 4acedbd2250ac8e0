"""dmlops' functional operators as torch custom operators (namespace `dmlops`).

`torch.ops.dmlops.slice`, `slice1`, `slice_grad`, `split`, `join`, `depth_to_space` and
`space_to_depth` run dmlops' kernels on CUDA tensors (the cuda backend, on torch's current
stream) and its numpy backend on CPU tensors (zero copy, through `Tensor.numpy()`). Each
has a fake implementation that computes output shapes by DirectML's rules and validates the
descriptor, so `torch.compile(fullgraph=True)` and `torch.export` keep them as calls and a
bad descriptor raises `DmlError` when the program is traced. Autograd follows DirectML's
backward pairs: SLICE and SLICE1 -> SLICE_GRAD -> SLICE1; SPLIT <-> JOIN;
DEPTH_TO_SPACE1 <-> SPACE_TO_DEPTH1.

`dmlops.slice1(t, ...)` and the other functional calls route torch tensors here whenever
autograd, tracing or a CPU tensor needs it (`wanted`); the eager implementations call them
back with what never routes again (numpy views, detached CUDA tensors). Under
`torch.compile` (`torch.compiler.substitute_in_graph`) a functional call is validated once,
when dynamo traces it, and becomes the aten views and copies of its logical copies: the
graph is what torch code would give, so AOTAutograd derives its backward and inductor fuses
it as torch's own (`torch.export` keeps the operators; inductor decomposes them where a graph
holds them).
Importing this module registers everything; dmlops imports it as soon as torch is there (at
`import dmlops`, or right after `import torch` completes: `_after_import`). The operators
without a custom operator go through `moves`; under a torch.func transform the seven
here run as their views and copies (`_Operator._views_and_copies`).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .. import calls
from .. import functional as F
from .._after_import import after_import
from ..arrays import strided as A
from ..elements import element_of, numpy_to_torch, torch_to_numpy
from ..errors import DmlError, seen_by_tracer
from ..ops import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    JoinDesc,
    OperatorDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SplitDesc,
)
from ..tensor import BufferTensorDesc, FeatureLevel, packed_strides
from . import chains
from .decompositions import (
    Recipe,
    build,
    decompositions_available,
    depth_space_recipe,
    recipe_of,
    register,
)
from .moves import PLAIN_TENSORS, between_graphs, moved, moves_wanted, transforming

__all__ = ["wanted", "level_name", "order_name", "moved", "moves_wanted"]

_LIB = "dmlops"
_MANY = 8  # tensors in a call from which `wanted` reads each field in one pass
_IS_CPU, _NEEDS_GRAD = operator.attrgetter("is_cpu"), operator.attrgetter("requires_grad")


def wanted(tensors: Sequence[Any]) -> bool:
    """Whether a functional call on these arrays goes through the torch operators: some
    is a torch tensor that is traced (not a plain tensor or Parameter), needs a gradient or
    is on the meta device, dynamo or a torch.func transform sees the call, or a CPU tensor
    is watched (a jit trace, a dispatch or function mode: the operators record it as they
    did; on CUDA such calls run directly, as before). Plain CPU tensors otherwise take the
    functional path, whose calls are keyed and cached."""
    if len(tensors) >= _MANY and set(map(type, tensors)) == {Tensor}:  # (C passes, no loop)
        if torch.is_grad_enabled() and any(map(_NEEDS_GRAD, tensors)):
            return True
        if torch.compiler.is_compiling() or transforming() or tensors[0].is_meta:
            return True
        return _watched() and any(map(_IS_CPU, tensors))  # (a pass only where watched)
    first, cpu = None, False
    for t in tensors:
        if isinstance(t, Tensor):
            if type(t) not in PLAIN_TENSORS or (t.requires_grad and torch.is_grad_enabled()):
                return True
            cpu = cpu or t.is_cpu
            first = t if first is None else first
    if first is None:
        return False
    if torch.compiler.is_compiling() or transforming():
        return True
    # (a meta tensor: its operator's fake gives outputs of the right sizes; asked after
    # dynamo's question, as `moves_wanted` does)
    return _watched() if cpu else bool(first.is_meta)


def level_name(feature_level: FeatureLevel | int | str | None) -> str | None:
    """A feature level as the string the operators take (None: the newest)."""
    return None if feature_level is None else FeatureLevel.parse(feature_level).name


def order_name(order: Any) -> str:
    """A DEPTH_TO_SPACE1 order as the string the operators take."""
    return DepthSpaceOrder.parse(order, "Order").name


# -- eager implementations: the functional API on plain tensors --------------------------


def _host(t: Tensor) -> Any:
    return torch_to_numpy(t) if t.is_cpu else t.detach()


def _back(result: Any, dtype: Any) -> Tensor:
    return numpy_to_torch(result, dtype) if not isinstance(result, Tensor) else result


def _run(call: Any, *tensors: Tensor) -> Any:
    """`call(*arrays)` on the tensors' memory: numpy views of CPU tensors, CUDA tensors
    themselves; results back as tensors of the data's type (CPU results share the numpy
    arrays' memory)."""
    result = call(*(_host(t) for t in tensors))
    dtype = tensors[0].dtype
    if isinstance(result, list):
        return [_back(r, dtype) for r in result]
    return _back(result, dtype)


def _slice(
    x: Tensor, offsets: list[int], sizes: list[int], strides: list[int], feature_level: str | None
) -> Tensor:
    """DML SLICE (see dmlops.slice)."""
    return _run(lambda a: A.slice(a, offsets, sizes, strides, feature_level=feature_level), x)


def _slice1(
    x: Tensor,
    window_offsets: list[int],
    window_sizes: list[int],
    window_strides: list[int],
    output_sizes: list[int] | None,
    feature_level: str | None,
) -> Tensor:
    """DML SLICE1 (see dmlops.slice1)."""
    window = (window_offsets, window_sizes, window_strides)
    return _run(lambda a: A.slice1(a, *window, output_sizes, feature_level=feature_level), x)


def _slice_grad(
    input_gradient: Tensor,
    output_sizes: list[int],
    window_offsets: list[int],
    window_sizes: list[int],
    window_strides: list[int],
    feature_level: str | None,
) -> Tensor:
    """DML SLICE_GRAD (see dmlops.slice_grad)."""
    window = (window_offsets, window_sizes, window_strides)
    return _run(
        lambda a: A.slice_grad(a, output_sizes, *window, feature_level=feature_level),
        input_gradient,
    )


def _split(x: Tensor, axis: int, sizes: list[int], feature_level: str | None) -> list[Tensor]:
    """DML SPLIT (see dmlops.split)."""
    parts: list[Tensor] = _run(lambda a: A.split(a, axis, sizes, feature_level=feature_level), x)
    return parts


def _join(xs: list[Tensor], axis: int, feature_level: str | None) -> Tensor:
    """DML JOIN (see dmlops.join)."""
    joined: Tensor = _run(lambda *a: A.join(list(a), axis, feature_level=feature_level), *xs)
    return joined


def _depth_to_space(x: Tensor, block_size: int, order: str, feature_level: str | None) -> Tensor:
    """DML DEPTH_TO_SPACE1 (see dmlops.depth_to_space)."""
    return _run(lambda a: A.depth_to_space(a, block_size, order, feature_level=feature_level), x)


def _space_to_depth(x: Tensor, block_size: int, order: str, feature_level: str | None) -> Tensor:
    """DML SPACE_TO_DEPTH1 (see dmlops.space_to_depth)."""
    return _run(lambda a: A.space_to_depth(a, block_size, order, feature_level=feature_level), x)


def _custom_op(name: str, impl: Any) -> Any:
    """`impl` as the torch custom operator dmlops::<name> (its schema from its signature)."""
    return torch.library.custom_op(f"{_LIB}::{name}", mutates_args=())(impl)


slice_op = _custom_op("slice", _slice)
slice1_op = _custom_op("slice1", _slice1)
slice_grad_op = _custom_op("slice_grad", _slice_grad)
split_op = _custom_op("split", _split)
join_op = _custom_op("join", _join)
depth_to_space_op = _custom_op("depth_to_space", _depth_to_space)
space_to_depth_op = _custom_op("space_to_depth", _space_to_depth)


# -- fake implementations: DirectML's shape rules and validation, no data ---------------


@dataclasses.dataclass(frozen=True)
class _Meta:
    """What the descriptor builders and recipes read of a tensor: its sizes, data type and
    element strides."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    strides: tuple[int, ...]

    def dim(self) -> int:
        return len(self.shape)

    def stride(self) -> tuple[int, ...]:
        return self.strides


class _Packed(BufferTensorDesc):
    """A packed tensor desc that makes packed descs of its data type in other sizes."""

    def resized(self, sizes: Sequence[int]) -> BufferTensorDesc:
        return BufferTensorDesc(self.data_type, tuple(sizes))


def _desc(t: Tensor | _Meta) -> _Packed:
    return _Packed(element_of(t.dtype).described_as, tuple(t.shape))


def _like(t: Tensor, sizes: Sequence[int]) -> Tensor:
    return t.new_empty(tuple(int(n) for n in sizes))


# each operator's descriptor on its arguments (tensors or their `_Meta`, then the custom
# operator's other arguments, level last), not yet validated (`_valid`)


def _slice_desc(x, offsets, sizes, strides, feature_level):  # type: ignore[no-untyped-def]
    d = _desc(x)
    return SliceDesc(d, d.resized(sizes), offsets, sizes, strides)


def _slice1_desc(x, window_offsets, window_sizes, window_strides, output_sizes, feature_level):  # type: ignore[no-untyped-def]
    d = _desc(x)
    window = (window_offsets, window_sizes, window_strides)
    sizes = A.slice1_sizes(Slice1Desc(d, d, *window)) if output_sizes is None else output_sizes
    return Slice1Desc(d, d.resized(sizes), *window)


def _slice_grad_desc(g, output_sizes, window_offsets, window_sizes, window_strides, feature_level):  # type: ignore[no-untyped-def]
    d = _desc(g)
    window = (window_offsets, window_sizes, window_strides)
    return SliceGradDesc(d, d.resized(output_sizes), *window)


def _split_sizes(x: Tensor | _Meta, axis: int, sizes: Sequence[int]) -> list[list[int]]:
    return [[p if d == axis else n for d, n in enumerate(x.shape)] for p in sizes]


def _split_desc(
    x: Tensor | _Meta, axis: int, sizes: Sequence[int], feature_level: str | None
) -> SplitDesc:
    d = _desc(x)
    return SplitDesc(d, [d.resized(s) for s in _split_sizes(x, axis, sizes)], axis)


def _join_desc(xs: Sequence[Tensor | _Meta], axis: int, feature_level: str | None) -> JoinDesc:
    descs = [_desc(x) for x in xs]
    return JoinDesc(descs, A.joined_desc(descs, axis), axis)


def _depth_space_desc(
    cls: Any, x: Tensor | _Meta, block_size: int, order: str, level: str | None
) -> Any:
    d = _desc(x)
    sizes = cls.output_sizes_for(d, block_size, order)
    return cls(d, d.resized(sizes), block_size, order)


def _d2s_desc(x, block_size, order, feature_level):  # type: ignore[no-untyped-def]
    return _depth_space_desc(DepthToSpace1Desc, x, block_size, order, feature_level)


def _s2d_desc(x, block_size, order, feature_level):  # type: ignore[no-untyped-def]
    return _depth_space_desc(SpaceToDepth1Desc, x, block_size, order, feature_level)


def _outputs(desc: OperatorDesc) -> list[tuple[int, ...]]:
    """The sizes of each output tensor of a descriptor."""
    return [tuple(t.sizes) for _, t in desc.output_fields()]


def _tensor_inputs(args: Sequence[Any]) -> list[Tensor]:
    """An operator's tensor inputs: its first argument, or the list that is (JOIN)."""
    return list(args[0]) if isinstance(args[0], (list, tuple)) else [args[0]]


def _has_empty(desc: OperatorDesc) -> bool:
    """Whether one of the descriptor's tensors is empty (a size 0)."""
    return any(0 in t.sizes for _, t in desc.input_fields() + desc.output_fields())


def _nonempty_part(name: str, args: Sequence[Any]) -> tuple[OperatorDesc, list[int]] | None:
    """Where a SPLIT of a non-empty tensor has empty pieces, or a JOIN empty and non-empty
    inputs: the descriptor of the non-empty pieces (what the eager call runs; the empty ones
    are only allocated) and their positions; None elsewhere."""
    if name == "split":
        x, axis, sizes, level = args
        kept = [k for k, n in enumerate(sizes) if n]
        if 0 in x.shape or not kept or len(kept) == len(sizes):
            return None
        return _split_desc(x, axis, [sizes[k] for k in kept], level), kept
    if name == "join":
        xs, axis, level = args
        kept = [k for k, x in enumerate(xs) if 0 not in x.shape]
        if not kept or len(kept) == len(xs):
            return None
        return _join_desc([xs[k] for k in kept], axis, level), kept
    return None


def _valid(name: str, args: Sequence[Any]) -> OperatorDesc:
    """Operator `name`'s descriptor on `args`, validated as the eager call validates it: by
    DirectML's rules, or where a tensor is empty by the rules of empty arrays (those of the
    non-empty pieces of a split or join; an empty window's SLICE_GRAD is zeros)."""
    desc: OperatorDesc = _BUILDERS[name][1](*args)
    level = calls._level(args[-1])
    if not _has_empty(desc):
        desc.validate(level)
        return desc
    part = _nonempty_part(name, args)
    if part is not None:  # (the empty pieces still fit the others)
        desc.check_empty_rules()
        part[0].validate(level)
    elif name == "slice_grad" and 0 not in args[1]:
        calls.check_empty_gradient(tuple(args[0].shape), args[1], args[2:5])
    else:
        calls.check_empty(desc)
    return desc


def _fake(name: str) -> Any:
    """Operator `name`'s fake implementation: its outputs' empty tensors."""
    many = _BUILDERS[name][2]

    def fake(*args):  # type: ignore[no-untyped-def]
        first = _tensor_inputs(args)[0]
        shapes = _outputs(_valid(name, args))
        return [_like(first, s) for s in shapes] if many else _like(first, shapes[0])

    return fake


_BUILDERS: dict[str, tuple[Any, Any, bool]] = {  # name: operator, descriptor builder, many
    "slice": (slice_op, _slice_desc, False),
    "slice1": (slice1_op, _slice1_desc, False),
    "slice_grad": (slice_grad_op, _slice_grad_desc, False),
    "split": (split_op, _split_desc, True),
    "join": (join_op, _join_desc, False),
    "depth_to_space": (depth_to_space_op, _d2s_desc, False),
    "space_to_depth": (space_to_depth_op, _s2d_desc, False),
}
for _name, (_op, _, _) in _BUILDERS.items():
    _op.register_fake(_fake(_name))


_WINDOWS = ("slice", "slice1")


def _recipes(name: str, args: Sequence[Any], pointwise_joins: bool) -> tuple[Recipe, ...]:
    """How each output of operator `name` on `args` (tensors, or their `_Meta`) is made of
    views and copies, its descriptor validated first (`pointwise_joins`: see `recipe_of`)."""
    desc = _valid(name, args)
    tensors = _tensor_inputs(args)
    in_shapes = [tuple(t.shape) for t in tensors]
    shapes = _outputs(desc)
    if _has_empty(desc):
        return _empty_recipes(name, args, in_shapes, shapes, pointwise_joins)
    # (a window of a permuted view is read in its memory order, so its gradient is laid out
    # as its base; SPLIT's parts, whose gradients autograd adds, keep torch's own graph:
    # read so, a QKV head split's backward took 1.6x as long on the H100)
    in_strides = [tuple(t.stride()) if name in _WINDOWS else None for t in tensors]
    if isinstance(desc, (DepthToSpace1Desc, SpaceToDepth1Desc)):
        column_row = desc.order is DepthSpaceOrder.DEPTH_COLUMN_ROW
        return (depth_space_recipe(in_shapes[0], desc.block_size, column_row, name[0] == "d"),)
    copies = desc.logical_copies()
    return tuple(
        recipe_of(in_shapes, copies, k, s, pointwise_joins, in_strides)
        for k, s in enumerate(shapes)
    )


def _empty_recipes(
    name: str,
    args: Sequence[Any],
    in_shapes: list[tuple[int, ...]],
    shapes: list[tuple[int, ...]],
    pointwise_joins: bool,
) -> tuple[Recipe, ...]:
    """The recipes of a call with an empty tensor, as the eager call runs it: empty outputs
    are empty, an empty window's SLICE_GRAD zeros; a split's or join's non-empty pieces are
    the copies of the descriptor of those pieces alone."""
    part = _nonempty_part(name, args)
    copies = []
    if part is not None:
        desc, kept = part
        for c in desc.logical_copies():
            renumbered = {"dst": kept[c.dst]} if name == "split" else {"src": kept[c.src]}
            copies.append(dataclasses.replace(c, **renumbered))  # type: ignore[arg-type]
    recipes: list[Recipe] = []
    for k, shape in enumerate(shapes):
        if 0 in shape:
            recipes.append(("empty", shape))
        elif part is not None:
            recipes.append(recipe_of(in_shapes, copies, k, shape, pointwise_joins))
        else:  # SLICE_GRAD's zeros: the empty gradient padded to the output's sizes
            pads: list[int] = []  # (torch's order: the last dimension first)
            for n, g in zip(reversed(shape), reversed(in_shapes[0]), strict=True):
                pads += [0, n - g]
            recipes.append(("padded", tuple(pads)))
    return tuple(recipes)


def _decomposed(name: str) -> Any:
    """The inductor decomposition of operator `name` (in graphs that hold the operator: an
    exported program, make_fx's traces; its gradient is an operator of its own, so joins
    may be pointwise)."""
    many = _BUILDERS[name][2]

    def decomposition(*args):  # type: ignore[no-untyped-def]
        outs = [build(_tensor_inputs(args), r) for r in _recipes(name, args, True)]
        return outs if many else outs[0]

    return decomposition


def _register_decompositions() -> None:
    register({op._opoverload: _decomposed(name) for name, (op, _, _) in _BUILDERS.items()})


# whether inductor's table takes the decompositions (put there when inductor loads it:
# importing inductor costs a second or more, which a torch program that never compiles
# should not pay for importing dmlops)
FUSES = decompositions_available()


def _fields(values: Sequence[int] | None) -> list[int] | None:
    return None if values is None else [int(v) for v in values]


# each operator's functional arguments after its tensors, as its custom operator takes them
_NORMALISED: dict[str, Any] = {
    "slice": lambda o, n, s, level: (_fields(o), _fields(n), _fields(s), level_name(level)),
    "slice1": lambda o, n, s, out, level: (
        *(_fields(o), _fields(n), _fields(s), _fields(out)),
        level_name(level),
    ),
    "slice_grad": lambda out, o, n, s, level: (
        *(_fields(out), _fields(o), _fields(n), _fields(s)),
        level_name(level),
    ),
    "split": lambda axis, sizes, level: (int(axis), _fields(sizes), level_name(level)),
    "join": lambda axis, level: (int(axis), level_name(level)),
    "depth_to_space": lambda b, order, level: (int(b), order_name(order), level_name(level)),
    "space_to_depth": lambda b, order, level: (int(b), order_name(order), level_name(level)),
}


def _frozen(value: Any) -> Any:
    """A functional argument made hashable (sequences as tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@functools.lru_cache(maxsize=1024)
def _known_recipes(
    name: str, metas: tuple[_Meta, ...], rest: tuple[Any, ...]
) -> tuple[Recipe, ...]:
    tensors: Any = list(metas) if name == "join" else metas[0]
    return _recipes(name, [tensors, *_NORMALISED[name](*rest)], False)


def _constant_recipes(name: str, shapes: Any, rest: Any) -> tuple[Recipe, ...]:
    """Recipes from the sizes, types and strides alone: dynamo calls this once, when it traces the
    call, and keeps the result as a constant (a bad descriptor raises then)."""
    metas = tuple(
        _Meta(tuple(int(n) for n in s), t, tuple(int(n) for n in st)) for s, t, st in shapes
    )
    try:
        return _known_recipes(name, metas, _frozen(rest))
    except DmlError as e:  # (reaching the caller as a DmlError, not dynamo's wrapper)
        raise seen_by_tracer(e) from e


def _specialised(shape: Any) -> list[int]:
    return [operator.index(n) for n in shape]


class _NeverExporting:
    _is_exporting_flag = False  # (a torch without the flag: no export to tell apart)


# read by the traced call as a global of its own (dynamo guards each global it reads)
_compiler: Any = (
    torch.compiler if hasattr(torch.compiler, "_is_exporting_flag") else _NeverExporting
)


def _traced(name: str, tensors: list[Tensor], rest: tuple[Any, ...]) -> Any:
    """A functional call (its tensors, then its other arguments as given) as dynamo traces
    it: unless an export keeps the operators, the views and copies themselves (so the graph
    holds torch's own aten ops, whose backward AOTAutograd derives as for torch code: joins
    are `cat`, whose gradient is views). DirectML's descriptors have whole sizes: symbolic
    ones (dynamic shapes) are specialised to their values (`operator.index`, which dynamo
    evaluates under a guard). Kept short: dynamo traces every line of it."""
    # (the flag itself: dynamo before torch 2.13 answers is_exporting() True when compiling)
    if _compiler._is_exporting_flag:
        return _BUILDERS[name][0](
            tensors if name == "join" else tensors[0], *_NORMALISED[name](*rest)
        )
    # (loops, not comprehensions: before Python 3.12 dynamo enters each as a frame of its own)
    shapes = []
    for t in tensors:
        if t.numel().__class__ is not int:  # (dynamo calls a symbolic size an int)
            shapes.append((_specialised(t.shape), t.dtype, _specialised(t.stride())))
        else:
            shapes.append((t.shape, t.dtype, t.stride()))
    recipes = _constant_recipes(name, shapes, rest)
    if name != "split":
        return build(tensors, recipes[0])
    outs = []
    for r in recipes:
        outs.append(build(tensors, r))
    return outs


# -- autograd: DirectML's backward pairs -------------------------------------------------


def _backward_level(feature_level: str | None, desc: type[OperatorDesc]) -> str | None:
    """The forward's feature level where the backward operator exists there, else the newest."""
    if feature_level is None or FeatureLevel.parse(feature_level) < desc.SUPPORT[0].level:
        return None
    return feature_level


def _permuted_layout(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether strides lay the elements out densely, each once, in another order than
    row-major (a permutation of a contiguous layout: x.T, x.permute(...))."""
    dims = sorted((s, n) for s, n in zip(strides, shape, strict=True) if n != 1)
    step = 1
    for s, n in dims:
        if s != step:
            return False
        step *= n
    packed = [s for s, n in zip(strides, shape, strict=True) if n != 1]
    return packed != sorted(packed, reverse=True)


def _setup_window(ctx, inputs, output):  # type: ignore[no-untyped-def]
    x, a, b, c, *_, level = inputs
    ctx.shape = list(x.shape)
    ctx.fields = (list(a), list(b), list(c))
    ctx.level = level
    ctx.strides = x.stride()  # a permuted view's gradient is laid out as it (_window_gradient)


def _eager_cuda(grad: Tensor) -> bool:
    """A backward of plain eager code on a CUDA gradient, with no graph to record (no
    create_graph): its gradients may be laid out as the consumer wants them."""
    return grad.is_cuda and not torch.is_grad_enabled() and _plain_eager([grad])


def _in_input_layout(ctx: Any, grad: Tensor, write: Any) -> Tensor | None:
    """Where the forward read a permuted view (`ctx.shape`, `ctx.strides`) and the backward
    runs eagerly on CUDA: the input's gradient in that view's own layout, written by
    `write(out)` (autograd's view backward then hands the base a contiguous gradient, which
    AccumulateGrad keeps instead of copying it); None elsewhere."""
    if not (_eager_cuda(grad) and _permuted_layout(ctx.shape, ctx.strides)):
        return None
    out = torch.empty_strided(ctx.shape, ctx.strides, dtype=grad.dtype, device=grad.device)
    write(out)
    return out


def _window_gradient(ctx: Any, grad: Tensor, window: Sequence[list[int]], level: Any) -> Any:
    """SLICE_GRAD of a SLICE / SLICE1's output gradient. Where the forward read a permuted
    view (x.transpose(1, 2)) of a CUDA tensor, in plain eager code with no graph to record,
    the gradient is written in the view's own layout: autograd's view backward then hands
    the base a contiguous gradient, which AccumulateGrad keeps instead of copying it."""
    laid_out = _in_input_layout(
        ctx,
        grad,
        lambda out: A.slice_grad(grad.detach(), ctx.shape, *window, feature_level=level, out=out),
    )
    return slice_grad_call(grad, ctx.shape, *window, level) if laid_out is None else laid_out


def _slice_backward(ctx, grad):  # type: ignore[no-untyped-def]
    offsets, sizes, strides = ctx.fields
    window_sizes = [(n - 1) * s + 1 for n, s in zip(sizes, strides, strict=True)]
    level = _backward_level(ctx.level, SliceGradDesc)
    g = _window_gradient(ctx, grad, (offsets, window_sizes, strides), level)
    return g, None, None, None, None


def _slice1_backward(ctx, grad):  # type: ignore[no-untyped-def]
    level = _backward_level(ctx.level, SliceGradDesc)
    return _window_gradient(ctx, grad, ctx.fields, level), None, None, None, None, None


def _setup_slice_grad(ctx, inputs, output):  # type: ignore[no-untyped-def]
    g, _, offsets, sizes, strides, level = inputs
    ctx.shape = list(g.shape)
    ctx.fields = (list(offsets), list(sizes), list(strides))
    ctx.level = level


def _slice_grad_backward(ctx, grad):  # type: ignore[no-untyped-def]
    level = _backward_level(ctx.level, Slice1Desc)
    return slice1_call(grad, *ctx.fields, ctx.shape, level), None, None, None, None, None


def _setup_split(ctx, inputs, output):  # type: ignore[no-untyped-def]
    x, axis, _, level = inputs
    ctx.axis, ctx.level = axis, level
    ctx.like = [(o.shape, o.dtype, o.device) for o in output]
    ctx.shape, ctx.strides = list(x.shape), x.stride()


def _split_backward(ctx: Any, grads: Sequence[Any]) -> tuple[Any, ...]:
    """JOIN of the parts' gradients. Where the forward split a permuted view of a CUDA
    tensor (a QKV head split of x.view(...).permute(...)), eagerly, the join writes the
    gradient in the view's own layout, so the base's gradient arrives contiguous and
    AccumulateGrad keeps it instead of copying it (as for a window's, `_window_gradient`)."""
    parts = [
        torch.zeros(shape, dtype=dtype, device=device) if g is None else g
        for g, (shape, dtype, device) in zip(grads, ctx.like, strict=True)
    ]
    level = _backward_level(ctx.level, JoinDesc)
    laid_out = _in_input_layout(
        ctx,
        parts[0],
        lambda out: A.join([p.detach() for p in parts], ctx.axis, feature_level=level, out=out),
    )
    joined = join_call(parts, ctx.axis, level) if laid_out is None else laid_out
    return joined, None, None, None


def _setup_join(ctx: Any, inputs: Sequence[Any], output: Any) -> None:
    xs, axis, level = inputs
    ctx.axis, ctx.level = axis, level
    ctx.sizes = [x.shape[axis] for x in xs]
    # every input a leaf that takes a gradient: AccumulateGrad keeps only dense gradients
    ctx.leaves = all(x.is_leaf and x.requires_grad for x in xs)


def _join_backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
    """SPLIT's pieces of the gradient, as views of it (as torch's cat gives them): no copy
    where the consumer takes a view, no kernel to compile under torch.compile. Eagerly on
    CUDA, where every input is a leaf and some piece is no dense view (a KV-cache append's
    past), one SPLIT writes them all: AccumulateGrad would copy each such view anyway, at
    a lower fraction of the copy ceiling than the split."""
    views = list(torch.split(grad, ctx.sizes, ctx.axis))
    if ctx.leaves and _eager_cuda(grad) and not all(v.is_contiguous() for v in views):
        level = _backward_level(ctx.level, SplitDesc)
        return A.split(grad.detach(), ctx.axis, ctx.sizes, feature_level=level), None, None
    return views, None, None


def _setup_depth_space(ctx, inputs, output):  # type: ignore[no-untyped-def]
    _, ctx.block_size, ctx.order, ctx.level = inputs


def _depth_to_space_backward(ctx, grad):  # type: ignore[no-untyped-def]
    level = _backward_level(ctx.level, SpaceToDepth1Desc)
    return space_to_depth_call(grad, ctx.block_size, ctx.order, level), None, None, None


def _space_to_depth_backward(ctx, grad):  # type: ignore[no-untyped-def]
    level = _backward_level(ctx.level, DepthToSpace1Desc)
    return depth_to_space_call(grad, ctx.block_size, ctx.order, level), None, None, None


# each operator's implementation, autograd context setup and backward: registered on the
# custom operator here, and the same pair run by its eager autograd Function (_Operator)
_AUTOGRAD: dict[Any, tuple[Any, Any, Any]] = {
    slice_op: (_slice, _setup_window, _slice_backward),
    slice1_op: (_slice1, _setup_window, _slice1_backward),
    slice_grad_op: (_slice_grad, _setup_slice_grad, _slice_grad_backward),
    split_op: (_split, _setup_split, _split_backward),
    join_op: (_join, _setup_join, _join_backward),
    depth_to_space_op: (_depth_to_space, _setup_depth_space, _depth_to_space_backward),
    space_to_depth_op: (_space_to_depth, _setup_depth_space, _space_to_depth_backward),
}
for _op, (_, _setup, _backward) in _AUTOGRAD.items():
    _op.register_autograd(_backward, setup_context=_setup)


# -- eager calls: a plain autograd Function, not the custom operator's dispatch ----------
#
# Eagerly, torch.library's custom operator costs 100-150 µs of Python per call (dispatch,
# schema defaults, pytree, its dynamo guard): more than the kernels of a small step. On
# plain tensors outside torch.compile the calls below take an autograd Function with the
# same backward (or, with no gradient to track, the implementation itself); traced and
# compiled code keeps the custom operator, which torch.compile and torch.export see.


def _context_checks() -> list[Any] | None:
    """Calls that say "something is watching" (a jit trace, a dispatch or function mode such
    as make_fx's, a functorch transform), or None where this torch lacks one of them."""
    C = torch._C
    functorch = getattr(C, "_functorch", None)
    found = [
        getattr(C, "_is_tracing", None),
        getattr(C, "_len_torch_dispatch_stack", None),
        getattr(C, "_len_torch_function_stack", None),
        getattr(functorch, "peek_interpreter_stack", None),
    ]
    return None if None in found else found


_WATCHING = _context_checks()


def _watched() -> bool:
    """Whether a jit trace, a dispatch or function mode or a transform sees the call (True
    where this torch cannot say)."""
    if _WATCHING is None:
        return True
    tracing, dispatch_modes, function_modes, transforms = _WATCHING
    return bool(tracing() or dispatch_modes() or function_modes() or transforms() is not None)


def _plain_eager(tensors: Sequence[Any]) -> bool:
    """Plain tensors in plain eager code: no compiler, tracer, mode or transform sees the
    call, and no tensor is on the meta device (then it may bypass the custom operator)."""
    if torch.compiler.is_compiling() or _watched():
        return False
    return all(type(t) in PLAIN_TENSORS and not t.is_meta for t in tensors)


class _Operator:
    """One operator three ways: its custom operator (traced or compiled code, tensor
    subclasses), an autograd Function running the operator's own implementation, context
    setup and backward (plain tensors that need a gradient), and the implementation alone
    (plain tensors that need none). `listed`: the operator's first argument is a tensor
    list (JOIN's), which the Function takes as its last arguments, after the others."""

    def __init__(self, op: Any, name: str, chain: str | None, listed: bool = False) -> None:
        """`chain`: the operator's name in the chains it may join (`chains`)."""
        impl, setup, backward = _AUTOGRAD[op]
        self.op, self.impl, self.listed, self.chain = op, impl, listed, chain
        self.kind = next(k for k, (o, _, _) in _BUILDERS.items() if o is op)  # its recipes

        def unspread(args: tuple[Any, ...]) -> tuple[Any, ...]:
            return (list(args[2:]), *args[:2]) if listed else args

        def forward(ctx: Any, *args: Any) -> Any:
            args = unspread(args)
            result = impl(*args)
            setup(ctx, args, result)
            ctx.many = isinstance(result, list)
            return tuple(result) if ctx.many else result

        def backward_(ctx: Any, *grads: Any) -> Any:
            found = backward(ctx, grads if ctx.many else grads[0])
            return (None, None, *found[0]) if listed else found

        # (a Function with a separate setup_context binds its arguments through
        # inspect.signature on every call: 50 µs)
        methods = {"forward": staticmethod(forward), "backward": staticmethod(backward_)}
        self.function: Any = type(f"{name}Function", (torch.autograd.Function,), methods)
        # its apply without torch's Python wrapper, which binds default arguments for a
        # separate setup_context (this Function has none) and hands functorch transforms
        # their own path (`_plain_eager` has made sure none is active): 1.5 µs a call on
        # the development VM
        self.apply = _raw_apply(self.function)

    def __call__(self, *args: Any) -> Any:
        tensors = _tensor_inputs(args)
        if not _plain_eager(tensors):
            if transforming() and not torch.compiler.is_compiling():
                return self._views_and_copies(args)
            return self.op(*args)
        if not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return self.impl(*args)
        if self.chain is None:
            return self._function(args)
        rest = tuple([tuple(a) if isinstance(a, list) else a for a in args[1:]])
        return chains.run(self.chain, tensors, rest, lambda: self._function(args))

    def _views_and_copies(self, args: tuple[Any, ...]) -> Any:
        """The call as the aten views and copies of its recipes (as torch.compile sees it),
        which torch.func transforms carry through: the custom operator's autograd does not
        support them, and its vmap is a per-example loop."""
        tensors = _tensor_inputs(args)
        metas = tuple(_Meta(tuple(t.shape), t.dtype, packed_strides(t.shape)) for t in tensors)
        recipes = _known_recipes(self.kind, metas, _frozen(args[1:]))
        outs = [build(tensors, r) for r in recipes]
        return outs if self.kind == "split" else outs[0]

    def _function(self, args: tuple[Any, ...]) -> Any:
        """The call as this operator's autograd Function."""
        if self.listed:
            return self.apply(*args[1:], *map(_unwrap_if_dead, args[0]))
        result = self.apply(_unwrap_if_dead(args[0]), *args[1:])
        return list(result) if isinstance(result, tuple) else result


def _raw_apply(function: Any) -> Any:
    """`function.apply` as autograd's C entry point, where this torch has one, else as is."""
    base = getattr(torch._C, "_FunctionBase", None)
    entry = vars(base).get("apply") if base is not None else None
    if entry is None or not hasattr(entry, "__get__"):
        return function.apply
    return entry.__get__(None, function)


# a tensor of a finished functorch transform as the plain tensor it wraps (what torch's
# Function.apply does to every argument before its C entry point)
_unwrap_if_dead: Any = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", lambda t: t)


slice_call = _Operator(slice_op, "Slice", "slice")
slice1_call = _Operator(slice1_op, "Slice1", "slice1")
slice_grad_call = _Operator(slice_grad_op, "SliceGrad", None)
split_call = _Operator(split_op, "Split", "split")
join_call = _Operator(join_op, "Join", "join", listed=True)
depth_to_space_call = _Operator(depth_to_space_op, "DepthToSpace", "depth_to_space")
space_to_depth_call = _Operator(space_to_depth_op, "SpaceToDepth", "space_to_depth")


# -- torch.compile: the functional calls seen as the operators ---------------------------


def _polyfills() -> None:
    substitute = getattr(torch.compiler, "substitute_in_graph", None)
    if substitute is None:
        return

    @substitute(F.slice, skip_signature_check=True)
    def _slice(x, offsets, sizes, strides, *, feature_level=None, out=None, device=None):  # type: ignore[no-untyped-def]
        return _traced("slice", [x], (offsets, sizes, strides, feature_level))

    @substitute(F.slice1, skip_signature_check=True)
    def _slice1(  # type: ignore[no-untyped-def]
        x, offsets, sizes, strides, output_sizes=None, *, feature_level=None, out=None, device=None
    ):
        return _traced("slice1", [x], (offsets, sizes, strides, output_sizes, feature_level))

    @substitute(F.slice_grad, skip_signature_check=True)
    def _slice_grad(  # type: ignore[no-untyped-def]
        g, output_sizes, offsets, sizes, strides, *, feature_level=None, out=None, device=None
    ):
        return _traced("slice_grad", [g], (output_sizes, offsets, sizes, strides, feature_level))

    @substitute(F.split, skip_signature_check=True)
    def _split(x, axis, sizes, *, feature_level=None, outs=None, device=None):  # type: ignore[no-untyped-def]
        return _traced("split", [x], (axis, sizes, feature_level))

    @substitute(F.join, skip_signature_check=True)
    def _join(xs, axis, *, feature_level=None, out=None, device=None):  # type: ignore[no-untyped-def]
        return _traced("join", [*xs], (axis, feature_level))

    @substitute(F.depth_to_space, skip_signature_check=True)
    def _d2s(x, block_size, order="DCR", *, feature_level=None, out=None, device=None):  # type: ignore[no-untyped-def]
        return _traced("depth_to_space", [x], (block_size, order, feature_level))

    @substitute(F.space_to_depth, skip_signature_check=True)
    def _s2d(x, block_size, order="DCR", *, feature_level=None, out=None, device=None):  # type: ignore[no-untyped-def]
        return _traced("space_to_depth", [x], (block_size, order, feature_level))


def _when_dynamo_loads() -> None:
    """What needs torch._dynamo, done when it is imported (before it traces anything):
    the functional calls' substitutes, the recipes as a traced constant, eager calls with
    out= as graph breaks."""
    global _constant_recipes
    _constant_recipes = torch.compiler.assume_constant_result(_constant_recipes)
    _polyfills()
    between_graphs()


after_import("torch._dynamo", _when_dynamo_loads)
after_import("torch._inductor.decomposition", _register_decompositions)
