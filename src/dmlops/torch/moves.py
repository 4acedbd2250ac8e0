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
a call is the operator's custom operator (`opaque`), whose gradient is the same."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from ..errors import DmlError
from .opaque import OPAQUE, Opaque, opaque_call

__all__ = ["moved", "moves_wanted", "transforming", "PLAIN_TENSORS"]

_PEEK = getattr(getattr(torch._C, "_functorch", None), "peek_interpreter_stack", None)


def transforming() -> bool:
    """Whether a torch.func transform (vmap, grad, jacrev, ...) sees the call."""
    return _PEEK is not None and _PEEK() is not None


# (a Parameter is a plain tensor to dispatch, its __torch_function__ torch's own, disabled;
# other subclasses are traced ones: FakeTensor, ...)
PLAIN_TENSORS = (Tensor, torch.nn.Parameter)


def moves_wanted(arrays: Sequence[Any]) -> bool:
    """Whether a call on these arrays goes through `moved`: a torch tensor among them needs
    a gradient, is traced (a tensor subclass) or is on the meta device, or dynamo is
    tracing the call, or a torch.func transform sees it."""
    first = None
    for t in arrays:
        if isinstance(t, Tensor):
            if (t.requires_grad and torch.is_grad_enabled()) or type(t) not in PLAIN_TENSORS:
                return True
            first = t if first is None else first
    if first is None:
        return False
    if torch.compiler.is_compiling() or transforming():
        return True
    # (a meta tensor: its custom operator's fake gives the outputs; asked after dynamo's
    # question, which it would otherwise answer with one more graph break)
    return bool(first.is_meta)


def moved(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Operator `op`'s functional call (its positional arguments and keywords) on torch
    tensors: traced (torch.compile, torch.export, make_fx), its custom operator
    (`opaque`; a call with `out=` or `device=` a graph break instead); eagerly, the
    kernels, with an autograd Function where a data input needs a gradient."""
    traced = torch.compiler.is_compiling() or any(
        isinstance(a, Tensor) and (type(a) not in PLAIN_TENSORS or a.is_meta) for a in args
    )
    if not traced:
        return _eagerly(op, args, kwargs)
    if kwargs.get("out") is None and kwargs.get("device") is None:
        return opaque_call(op, args, kwargs)
    return _between_graphs(op, args, kwargs)


def _eagerly(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`moved`'s call eagerly: where a data input needs a gradient, as an autograd Function
    (see the module)."""
    if transforming():
        raise DmlError(
            f"{op}: torch.func transforms (vmap, grad, jacrev, ...) do not reach this "
            "operator's kernels (the strided operators they do); call it outside the transform"
        )
    opaque = OPAQUE[op]
    tracked = torch.is_grad_enabled() and any(
        isinstance(args[k], Tensor) and args[k].requires_grad for k in opaque.data
    )
    if not tracked:
        plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
        return opaque.fn(*plain, **kwargs)
    if kwargs.get("out") is not None or kwargs.get("device") is not None:
        raise DmlError(
            f"{op}: a call with out= or device= takes no gradient, and an input needs one "
            "(detach it, or call under torch.no_grad())"
        )
    return _Moved.apply(opaque, *opaque.arguments(args, kwargs))


# (a call with `out=` under torch.compile: a graph break, dynamo never tracing dmlops' array
# code; the custom operators make new tensors). `torch.compiler.disable` imports dynamo (a
# second or more): this is the plain call until dynamo is imported, then `between_graphs`
# (torch_ops' hook on dynamo's import, which comes before anything is traced) wraps it.
_between_graphs: Callable[..., Any] = _eagerly


def between_graphs() -> None:
    """Make the eager call a graph break for dynamo (dynamo is imported)."""
    global _between_graphs
    _between_graphs = torch.compiler.disable(_eagerly)


class _Moved(torch.autograd.Function):  # type: ignore[misc]
    """An eager call (its custom operator's arguments) whose backward adds each output
    element's gradient to its source element, as the custom operator's does, without the
    custom operator's dispatch (100-150 µs of Python a call)."""

    @staticmethod
    def forward(ctx: Any, opaque: Opaque, *args: Any) -> Any:
        ctx.opaque = opaque
        opaque.keep(ctx, args)
        return opaque.call(*args)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Any:
        found = ctx.opaque.gradients(ctx, grad, ctx.opaque.call)
        wanted = ctx.needs_input_grad[1:]
        return (None, *(g if w else None for g, w in zip(found, wanted, strict=True)))
