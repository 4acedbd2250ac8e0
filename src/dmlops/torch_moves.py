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
the data inputs' elements do (4 bytes each). Traced (torch.compile, torch.export, make_fx)
a call is the operator's custom operator (`torch_opaque`), whose gradient is the same."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from .errors import DmlError
from .torch_opaque import keep_others, kept_others, opaque_call, source_gradients

__all__ = ["moved", "moves_wanted", "transforming"]

_PEEK = getattr(getattr(torch._C, "_functorch", None), "peek_interpreter_stack", None)


def transforming() -> bool:
    """Whether a torch.func transform (vmap, grad, jacrev, ...) sees the call."""
    return _PEEK is not None and _PEEK() is not None


# (a Parameter is a plain tensor here; other subclasses are traced ones: FakeTensor, ...)
_PLAIN_TENSORS = (Tensor, torch.nn.Parameter)


def moves_wanted(arrays: Sequence[Any]) -> bool:
    """Whether a call on these arrays goes through `moved`: a torch tensor among them needs
    a gradient or is traced (a tensor subclass), or dynamo is tracing the call, or a
    torch.func transform sees it."""
    found = False
    for t in arrays:
        if isinstance(t, Tensor):
            if (t.requires_grad and torch.is_grad_enabled()) or type(t) not in _PLAIN_TENSORS:
                return True
            found = True
    return found and (torch.compiler.is_compiling() or transforming())


def moved(
    op: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    data: tuple[int, ...],
    constant: str | None = None,
) -> Any:
    """`fn(*args, **kwargs)` (operator `op`) on torch tensors: traced (torch.compile,
    torch.export, make_fx), its custom operator (`torch_opaque`; a call with `out=` or
    `device=` a graph break instead); eagerly, the kernels, with an autograd Function where
    a data input (positions `data` of `args`) needs a gradient; `constant`: the keyword
    argument holding the constant the operator writes."""
    traced = torch.compiler.is_compiling() or any(
        isinstance(a, Tensor) and type(a) not in _PLAIN_TENSORS for a in args
    )
    call = (op, fn, args, kwargs, data, constant)
    if not traced:
        return _eagerly(*call)
    if kwargs.get("out") is None and kwargs.get("device") is None:
        return opaque_call(op, args, kwargs)
    return _between_graphs(*call)


def _eagerly(*call: Any) -> Any:
    """`moved`'s call eagerly: where a data input needs a gradient, as an autograd Function
    (see the module)."""
    op, fn, args, kwargs, data, constant = call
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


# (a call with `out=` under torch.compile: a graph break, dynamo never tracing dmlops' array
# code; the custom operators make new tensors)
_between_graphs: Callable[..., Any] = torch.compiler.disable(_eagerly)


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
        keep_others(ctx, plain, data)
        ctx.shapes = {k: tuple(torch.as_tensor(plain[k]).shape) for k in data}
        return fn(*plain, **kwargs)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        def run(positions: dict[int, Tensor]) -> Any:
            args = kept_others(ctx)
            for k, p in positions.items():
                args[k] = p
            kwargs = dict(ctx.kwargs)
            if ctx.constant is not None:
                kwargs[ctx.constant] = -1
            return ctx.fn(*args, **kwargs)

        found = source_gradients(grad, ctx.shapes, run, ctx.constant is not None)
        grads: list[Any] = [None] * (4 + len(ctx.others))
        for k, g in found.items():
            if ctx.needs_input_grad[4 + k]:
                grads[4 + k] = g
        return tuple(grads)
