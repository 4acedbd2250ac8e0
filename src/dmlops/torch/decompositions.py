"""dmlops' torch operators as views and copies that torch.compile's inductor fuses.

Each operator's descriptor, validated, is turned into *recipes* (`recipe_of`,
`depth_space_recipe`): plain values saying how each output is made of views of the inputs
(one indexing by slices, flips, broadcasts), copied, joined or written into zeros; `build`
makes an output from its recipe with aten views, `clone`, `cat` and `slice_scatter`. The
recipes come from the operator's own lowering (its descriptor's `logical_copies()`), so
the decompositions cannot drift from the kernels. Two users: dynamo, which traces a
functional call into the built ops (the recipe computed once, as a constant, from the
sizes alone), and inductor's decomposition table, which decomposes `torch.ops.dmlops.*`
where a graph holds them (exported programs, make_fx traces). Where this torch has no
decomposition table (`decompositions_available()` is False) the operators stay extern kernels there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..ops.depth_space import block_axes
from ..plan import ZERO, LogicalCopy

__all__ = [
    "decompositions_available",
    "register",
    "recipe_of",
    "depth_space_recipe",
    "build",
]

_REGISTERED: list[Any] = []
# what `build` reads, as globals of their own: dynamo guards each global a traced call reads
# (a module's attribute read through the module is a guard on the module too)
_CONTIGUOUS = torch.contiguous_format
_cat = torch.cat


def decompositions_available() -> bool:
    """Whether this torch has inductor's decomposition table (looked up, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch._inductor") is not None
    except (ImportError, ValueError):  # pragma: no cover - a torch without inductor
        return False


# A view of an input: (input, its dimensions in memory order or None, index by slices and
# dimensions then flipped (both in that order), the permutation back or None, shape then
# expanded to or None), all plain values, so dynamo can take a recipe as a constant.
View = tuple[
    int,
    "tuple[int, ...] | None",
    tuple[slice, ...],
    tuple[int, ...],
    "tuple[int, ...] | None",
    "tuple[int, ...] | None",
]
# How one output is made: ("copy", view) a view copied; ("slice", input, index) the
# commonest copy, a plain indexing (no permutation, flip or broadcast) copied; ("cat", axis,
# views, pointwise) views joined; ("join", axis, inputs, pointwise) whole inputs joined;
# ("boxes", shape, ((view, start, step), ...)) boxes written into zeros at start + step * c;
# ("blocks", six-dimensional shape, permutation, shape) DEPTH / SPACE; ("empty", shape) an
# output of no element, ("padded", pads) zeros padded around an empty input (SLICE_GRAD of
# an empty window), both made from input 0 so that they take part in autograd. (The plain
# kinds are what dynamo traces fastest: it traces `build` at every call it compiles.)
Recipe = tuple[Any, ...]


def memory_order(strides: Sequence[int] | None) -> tuple[int, ...] | None:
    """A tensor's dimensions from the largest stride to the smallest, or None where they are
    in that order already (or the strides are unknown)."""
    if strides is None:
        return None
    order = tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))
    return None if order == tuple(range(len(strides))) else order


def view_of(
    x_shape: Sequence[int],
    src: int,
    start: Sequence[int],
    step: Sequence[int],
    shape: Sequence[int],
    x_strides: Sequence[int] | None = None,
) -> View:
    """The view x[start + step * c] for c over `shape` of input `src` (sizes `x_shape`), as
    torch code writes it: one indexing by slices, negative steps then flipped, zero steps
    then broadcast. Where x is a permuted view (`x_strides` out of order), it is indexed in
    its memory order and permuted back, so a gradient that autograd makes of it (zeros, then
    the slice) is laid out as x's memory: the base's gradient arrives contiguous."""
    order = memory_order(x_strides)
    dims = order or tuple(range(len(shape)))
    index: list[Any] = []
    flipped, repeated = [], False
    for at, d in enumerate(dims):
        s, t, n = start[d], step[d], shape[d]
        if n == 0:
            index.append(slice(0, 0))
        elif t == 0:
            index.append(slice(s, s + 1))
            repeated = True
        elif t > 0:  # (bounds left out where they are the axis' own, as torch code does)
            first = None if s == 0 else s
            end = None if s + t * n >= x_shape[d] else s + t * (n - 1) + 1
            index.append(slice(first, end, None if t == 1 else t))
        else:
            index.append(slice(s + t * (n - 1), s + 1, -t))
            flipped.append(at)
    lead = 0
    while lead < len(index) and index[lead] == slice(None):
        lead += 1
    if 1 < lead < len(index) and index[-1] != slice(None):
        index[:lead] = [Ellipsis]  # x[..., a:b] (dynamo traces fewer slices faster)
    while index and index[-1] == slice(None):
        index.pop()
    back = tuple(sorted(range(len(dims)), key=lambda k: dims[k])) if order else None
    if order and not index and not flipped:
        order = back = None  # (a permutation there and back)
    return (src, order, tuple(index), tuple(flipped), back, tuple(shape) if repeated else None)


def _box_scatter(
    out: Tensor, box: Tensor, start: Sequence[int], step: Sequence[int], d: int = 0
) -> Tensor:
    """`out` with the box at start + step * c (steps >= 1) replaced by `box` (dimensions the
    box spans whole are not sliced)."""
    while d < out.dim() and start[d] == 0 and step[d] == 1 and box.shape[d] == out.shape[d]:
        d += 1
    if d == out.dim():
        return box
    n = box.shape[d]
    s, t = start[d], step[d]
    end = s + t * (n - 1) + 1
    inner = out[(slice(None),) * d + (slice(s, end, t),)]
    return torch.slice_scatter(out, _box_scatter(inner, box, start, step, d + 1), d, s, end, t)


def recipe_of(
    in_shapes: Sequence[Sequence[int]],
    copies: Sequence[LogicalCopy],
    dst: int,
    shape: Sequence[int],
    pointwise_joins: bool = True,
    in_strides: Sequence[Sequence[int] | None] | None = None,
) -> Recipe:
    """How output `dst` is made from an operator's logical copies: one copy that fills the
    output is its source view, copied; copies that tile the output along one axis in order
    are one `cat` (or, `pointwise_joins`, one pointwise expression of up to eight parts: for
    inductor, where the gradient is an operator of its own; `cat`'s is views); others are
    boxes written into zeros (ZERO copies are the zeros). `in_strides`: see `view_of`."""
    mine = [c for c in copies if c.dst == dst and 0 not in c.shape]
    written = [c for c in mine if c.src != ZERO]

    def view(c: LogicalCopy) -> View:
        strides = in_strides[c.src] if in_strides is not None else None
        return view_of(in_shapes[c.src], c.src, c.src_start, c.src_step, c.shape, strides)

    whole = len(written) == 1 and len(mine) == 1 and tuple(written[0].shape) == tuple(shape)
    if whole and _forwards(written[0]):
        v = view(written[0])
        return ("slice", v[0], v[2]) if _plain(v) else ("copy", v)
    axis = _tiling_axis(written, shape) if len(written) == len(mine) else None
    if axis is not None:
        pointwise = pointwise_joins and len(written) <= _POINTWISE_PARTS
        views = tuple(view(c) for c in written)
        if all(_plain(v) and not v[2] for v in views):
            return ("join", axis, tuple(v[0] for v in views), pointwise)
        return ("cat", axis, views, pointwise)
    boxes = []
    for c in written:
        src, order, index, flipped, back, expanded = view(c)
        start, step = list(c.dst_start), list(c.dst_step or (1,) * len(shape))
        for d, t in enumerate(step):
            if t < 0:  # written backwards: the box flipped, written forwards
                start[d] += t * (c.shape[d] - 1)
                step[d] = -t
                at = order.index(d) if order else d  # (flips come before the way back)
                flipped = tuple(sorted(set(flipped) ^ {at}))
        boxes.append(((src, order, index, flipped, back, expanded), tuple(start), tuple(step)))
    return ("boxes", tuple(shape), tuple(boxes))


def _plain(v: View) -> bool:
    """Whether a view is an indexing alone (no permutation, flip or broadcast)."""
    return v[1] is None and not v[3] and v[4] is None and v[5] is None


def build(inputs: Sequence[Tensor], recipe: Recipe) -> Tensor:
    """An output's tensor from its recipe, as aten views and copies. (One function, views
    taken inline: dynamo traces it whenever it traces a call, and each function it enters
    costs it milliseconds; the plain kinds first, in few instructions.)"""
    kind = recipe[0]
    if kind == "slice":
        return inputs[recipe[1]][recipe[2]].clone(memory_format=_CONTIGUOUS)
    if kind == "join":
        parts = []
        for src in recipe[2]:
            parts.append(inputs[src])
        return _pointwise_join(parts, recipe[1]) if recipe[3] else _cat(parts, recipe[1])
    if kind == "empty":
        return inputs[0].reshape(-1)[:0].reshape(recipe[1]).clone()
    if kind == "padded":
        return torch.nn.functional.pad(inputs[0], recipe[1])
    if kind == "blocks":
        # (a reshape of the permuted view copies, and its result is no view of an
        # intermediate, which AOTAutograd would regenerate on every call)
        _, six, order, shape = recipe
        return inputs[0].reshape(six).permute(order).reshape(shape)
    views = (recipe[1],) if kind == "copy" else recipe[2]
    parts = []
    for src, order, index, flipped, back, expanded in (
        views if kind != "boxes" else (v[0] for v in views)
    ):
        x = inputs[src]
        if order is not None:
            x = x.permute(order)
        if index:
            x = x[index]
        if flipped:
            x = x.flip(flipped)
        if back is not None:
            x = x.permute(back)
        parts.append(x.expand(expanded) if expanded is not None else x)
    if kind == "copy":
        return parts[0].clone(memory_format=_CONTIGUOUS)
    if kind == "cat":
        axis, pointwise = recipe[1], recipe[3]
        return _pointwise_join(parts, axis) if pointwise else _cat(parts, axis)
    out = inputs[0].new_zeros(recipe[1])
    for box, (_, start, step) in zip(parts, views, strict=True):
        out = _box_scatter(out, box, start, step)
    return out


_POINTWISE_PARTS = 8  # joins of up to this many parts are one pointwise expression


def _pointwise_join(parts: Sequence[Tensor], axis: int) -> Tensor:
    """`torch.cat(parts, axis)` as one pointwise expression: each part padded to the whole
    along `axis` and picked by position (a selection: the bits kept). Inductor fuses it with
    what reads it; a `cat` is a buffer of its own, so a split's gradient read through a
    permutation (a QKV head split's) was written twice."""
    rank = parts[0].dim()
    total = sum(int(p.shape[axis]) for p in parts)
    where = [1] * rank
    where[axis] = total
    position = torch.arange(total, device=parts[0].device).view(where)
    out: Tensor | None = None
    at = 0
    for p in parts:
        n = int(p.shape[axis])
        pad = [0] * (2 * rank)  # F.pad's order: the last dimension first
        pad[2 * (rank - 1 - axis)] = at
        pad[2 * (rank - 1 - axis) + 1] = total - at - n
        padded = torch.nn.functional.pad(p, pad)
        out = padded if out is None else torch.where(position >= at, padded, out)
        at += n
    assert out is not None
    return out


def _forwards(copy: LogicalCopy) -> bool:
    """Whether a copy writes a plain box (every destination step 1)."""
    return copy.dst_step is None or all(s == 1 for s in copy.dst_step)


def _tiling_axis(copies: Sequence[LogicalCopy], shape: Sequence[int]) -> int | None:
    """The axis along which these copies, in order, lay whole slabs of `shape` end to end."""
    if not copies or not all(_forwards(c) for c in copies):
        return None
    for axis in range(len(shape)):
        at = 0
        for c in copies:
            others = all(
                c.dst_start[d] == 0 and c.shape[d] == shape[d]
                for d in range(len(shape))
                if d != axis
            )
            if not others or c.dst_start[axis] != at:
                break
            at += c.shape[axis]
        else:
            if at == shape[axis]:
                return axis
    return None


def depth_space_recipe(
    x_shape: Sequence[int], block: int, column_row: bool, to_space: bool
) -> Recipe:
    """DEPTH_TO_SPACE1 (`to_space`) or SPACE_TO_DEPTH1 of a 4-D tensor as a reshape, a
    permutation and one copy (what inductor handles best; the logical copies of these
    operators interleave). `column_row`: DCR order (depth, column, row), else CRD."""
    six, order, shape = block_axes(tuple(x_shape), block, column_row, to_space)
    return ("blocks", tuple(six), tuple(order), tuple(shape))


def register(decompose: dict[Any, Callable[..., Any]]) -> bool:
    """Put each operator's decomposition into inductor's table; False where it has none."""
    if not decompositions_available():
        return False
    from torch._inductor.decomposition import register_decomposition

    for op, fn in decompose.items():
        if op not in _REGISTERED:
            register_decomposition([op])(fn)
            _REGISTERED.append(op)
    return True
