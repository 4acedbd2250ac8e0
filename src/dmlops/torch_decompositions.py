"""dmlops' torch operators as views and copies that torch.compile's inductor fuses.

Eager calls of `torch.ops.dmlops.*` run dmlops' own kernels. Under `torch.compile` (the
inductor backend) each operator is instead decomposed into aten views, `clone`, `cat` and
`slice_scatter`, built from the operator's own lowering (its descriptor's
`logical_copies()`), so inductor fuses them with the neighbouring slices, concatenations
and pointwise work as it fuses torch's own; the descriptor is validated first, as the fake
implementations do, so a bad one still raises `DmlError` when the program is traced. The
backward operators (SLICE_GRAD, and SPLIT / JOIN / DEPTH / SPACE as each other's
gradients) are decomposed the same way. Registered through inductor's decomposition
table; where this torch has none (`available()` is False) the operators stay extern
kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .ops.depth_space import block_axes
from .plan import ZERO, LogicalCopy

__all__ = ["available", "register", "source_view", "assemble", "depth_space"]

_REGISTERED: list[Any] = []


def available() -> bool:
    """Whether inductor's decomposition table can be reached in this torch."""
    try:
        from torch._inductor.decomposition import register_decomposition  # noqa: F401
    except ImportError:  # pragma: no cover - a torch without inductor
        return False
    return True


def source_view(
    x: Tensor, start: Sequence[int], step: Sequence[int], shape: Sequence[int]
) -> Tensor:
    """x[start + step * c] for c over `shape`, as views of x (negative steps flipped, zero
    steps broadcast)."""
    view = x
    flipped = []
    for d, (s, t, n) in enumerate(zip(start, step, shape, strict=True)):
        if n == 0:
            view = view.narrow(d, 0, 0)
        elif t > 0:
            view = view.narrow(d, s, t * (n - 1) + 1)[(slice(None),) * d + (slice(None, None, t),)]
        elif t < 0:
            low = s + t * (n - 1)
            view = view.narrow(d, low, s - low + 1)[(slice(None),) * d + (slice(None, None, -t),)]
            flipped.append(d)
        else:
            view = view.narrow(d, s, 1)
            view = view.expand(*view.shape[:d], n, *view.shape[d + 1 :])
    return view.flip(flipped) if flipped else view


def _box_scatter(
    out: Tensor, box: Tensor, start: Sequence[int], step: Sequence[int], d: int = 0
) -> Tensor:
    """`out` with the box at start + step * c (steps >= 1) replaced by `box`."""
    if d == out.dim():
        return box
    n = box.shape[d]
    s, t = start[d], step[d]
    end = s + t * (n - 1) + 1
    inner = out[(slice(None),) * d + (slice(s, end, t),)]
    return torch.slice_scatter(out, _box_scatter(inner, box, start, step, d + 1), d, s, end, t)


def assemble(
    inputs: Sequence[Tensor], copies: Sequence[LogicalCopy], dst: int, shape: Sequence[int]
) -> Tensor:
    """Output `dst` of an operator from its logical copies: one copy that fills the output
    is its source view, copied; copies that tile the output along one axis in order are one
    `cat`; others are written box by box into zeros (ZERO copies are the zeros)."""
    mine = [c for c in copies if c.dst == dst and 0 not in c.shape]
    written = [c for c in mine if c.src != ZERO]
    like = inputs[0]
    if len(written) == 1 and len(mine) == 1 and tuple(written[0].shape) == tuple(shape):
        c = written[0]
        if _forwards(c):
            return source_view(inputs[c.src], c.src_start, c.src_step, c.shape).clone(
                memory_format=torch.contiguous_format
            )
    axis = _tiling_axis(written, shape) if len(written) == len(mine) else None
    if axis is not None:
        parts = [source_view(inputs[c.src], c.src_start, c.src_step, c.shape) for c in written]
        if len(parts) <= _POINTWISE_PARTS:
            return _pointwise_join(parts, axis)
        return torch.cat(parts, axis)
    out = like.new_zeros(tuple(shape))
    for c in written:
        box = source_view(inputs[c.src], c.src_start, c.src_step, c.shape)
        start, step = list(c.dst_start), list(c.dst_step or (1,) * len(shape))
        backwards = [d for d, t in enumerate(step) if t < 0]
        for d in backwards:  # written backwards: the box flipped, written forwards
            start[d] += step[d] * (c.shape[d] - 1)
            step[d] = -step[d]
        out = _box_scatter(out, box.flip(backwards) if backwards else box, start, step)
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
    if not copies or any(
        c.dst_step is not None and any(s != 1 for s in c.dst_step) for c in copies
    ):
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


def depth_space(x: Tensor, block: int, column_row: bool, to_space: bool) -> Tensor:
    """DEPTH_TO_SPACE1 (`to_space`) or SPACE_TO_DEPTH1 of a 4-D tensor as a reshape, a
    permutation and one copy (what inductor handles best; the logical copies of these
    operators interleave). `column_row`: DCR order (depth, column, row), else CRD."""
    six, order, shape = block_axes(tuple(x.shape), block, column_row, to_space)
    moved = x.reshape(six).permute(order).clone(memory_format=torch.contiguous_format)
    return moved.reshape(shape)


def register(decompose: dict[Any, Callable[..., Any]]) -> bool:
    """Put each operator's decomposition into inductor's table; False where it has none."""
    if not available():
        return False
    from torch._inductor.decomposition import register_decomposition

    for op, fn in decompose.items():
        if op not in _REGISTERED:
            register_decomposition([op])(fn)
            _REGISTERED.append(op)
    return True
