"""The operators that have no torch custom operator (GATHER, GATHER_ELEMENTS, GATHER_ND,
SCATTER_ELEMENTS, SCATTER_ND, ONE_HOT, REVERSE_SUBSEQUENCES, TILE, PADDING1) on torch
tensors that need a gradient, or under torch.compile.

Every output element of these operators is a copy of one input element (or a constant):
the gradient of a call adds each output element's gradient to the element it was copied
from. Which one that is, is found by running the operator itself on the inputs' positions
(int32 tensors, int64 past 2**31 elements, numbering the elements of every data input in
turn; a constant written as -1), so the backward follows DirectML's semantics exactly —
clamped or negative indices, batch dimensions, duplicate targets where the last update
wins, edge and reflected pads — with one `index_add_`, where elements read several times
(a tile, repeated indices) add up, as torch's own gathers do. The positions take memory as
the data inputs' elements do (4 bytes each). Under torch.compile a call is a graph break:
it runs eagerly, between the compiled graphs (`fullgraph=True` refuses it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .errors import DmlError

__all__ = ["moved", "moves_wanted", "transforming"]

_PEEK = getattr(getattr(torch._C, "_functorch", None), "peek_interpreter_stack", None)


def transforming() -> bool:
    """Whether a torch.func transform (vmap, grad, jacrev, ...) sees the call."""
    return _PEEK is not None and _PEEK() is not None


def moves_wanted(arrays: Sequence[Any]) -> bool:
    """Whether a call on these arrays goes through `moved`: a torch tensor among them needs
    a gradient, or dynamo is tracing the call, or a torch.func transform sees it."""
    found = False
    for t in arrays:
        if isinstance(t, Tensor):
            if t.requires_grad and torch.is_grad_enabled():
                return True
            found = True
    return found and (torch.compiler.is_compiling() or transforming())


def _moved(
    op: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    data: tuple[int, ...],
    constant: str | None = None,
) -> Any:
    """`fn(*args, **kwargs)` (operator `op`) on torch tensors, eagerly: where a data input
    (positions `data` of `args`) needs a gradient, as an autograd Function (see the module);
    `constant`: the keyword argument holding the constant the operator writes."""
    if transforming():
        raise DmlError(
            f"{op}: torch.func transforms (vmap, grad, jacrev, ...) do not reach this "
            "operator's kernels (the strided operators they do); call it outside the transform"
        )
    tracked = torch.is_grad_enabled() and any(
        isinstance(args[k], Tensor) and args[k].requires_grad for k in data
    )
    plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
    if not tracked:
        return fn(*plain, **kwargs)
    if kwargs.get("out") is not None or kwargs.get("device") is not None:
        raise DmlError(
            f"{op}: a call with out= or device= takes no gradient, and an input needs one "
            "(detach it, or call under torch.no_grad())"
        )
    return _Moved.apply(fn, kwargs, data, constant, *args)


# (under torch.compile a graph break: dynamo never traces dmlops' array code)
moved: Callable[..., Any] = torch.compiler.disable(_moved)


class _Moved(torch.autograd.Function):  # type: ignore[misc]
    """A call whose backward adds each output element's gradient to its source element."""

    @staticmethod
    def forward(
        ctx: Any,
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
        data: tuple[int, ...],
        constant: str | None,
        *args: Any,
    ) -> Any:
        ctx.fn, ctx.kwargs, ctx.data, ctx.constant = fn, kwargs, data, constant
        plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
        # the other arguments (indices, lengths) as they were; the data inputs' shapes
        ctx.others = tuple(None if k in data else a for k, a in enumerate(plain))
        ctx.shapes = {k: tuple(torch.as_tensor(plain[k]).shape) for k in data}
        return fn(*plain, **kwargs)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        args = list(ctx.others)
        counts = {k: math.prod(ctx.shapes[k]) for k in ctx.data}
        # positions as int32 where every one fits (half the memory and traffic of int64)
        kind = torch.int32 if sum(counts.values()) < 2**31 else torch.int64
        starts = {}
        at = 0
        for k in ctx.data:
            numbers = torch.arange(at, at + counts[k], dtype=kind, device=grad.device)
            args[k] = numbers.reshape(ctx.shapes[k])
            starts[k] = at
            at += counts[k]
        kwargs = dict(ctx.kwargs)
        if ctx.constant is not None:
            kwargs[ctx.constant] = -1
        sources = torch.as_tensor(ctx.fn(*args, **kwargs)).reshape(-1)
        flat = grad.reshape(-1)
        if ctx.constant is not None:  # (constants take no gradient)
            kept = sources >= 0
            sources, flat = sources[kept], flat[kept]
        total = grad.new_zeros(at).index_add_(0, sources, flat)
        grads: list[Any] = [None] * (4 + len(args))
        for k in ctx.data:
            if ctx.needs_input_grad[4 + k]:
                grads[4 + k] = total[starts[k] : starts[k] + counts[k]].view(ctx.shapes[k])
        return tuple(grads)
