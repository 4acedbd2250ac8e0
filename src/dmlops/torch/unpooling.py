"""MAX_UNPOOLING's gradient for torch tensors: each input element's gradient is the output
gradient where it landed, or zero where a later element took its place (the forward's
winner rule). The backward runs the operator once more, on the input's positions counted
from 1 (0 marks an element no input reached), and gathers the gradient through them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from ..arrays import indexed as FI

__all__ = ["unpooled_with_gradient"]


class _Unpooling(torch.autograd.Function):  # type: ignore[misc]
    @staticmethod
    def forward(ctx: Any, x: Tensor, indices: Tensor, sizes: Sequence[int], level: Any) -> Tensor:
        ctx.save_for_backward(indices)
        ctx.shape, ctx.sizes, ctx.level = tuple(x.shape), tuple(sizes), level
        result: Tensor = FI.max_unpooling(x.detach(), indices, sizes, feature_level=level)
        return result

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        (indices,) = ctx.saved_tensors
        count = 1
        for n in ctx.shape:
            count *= n
        kind = torch.int32 if count < 2**31 - 1 else torch.int64
        positions = torch.arange(1, count + 1, dtype=kind, device=grad.device)
        landed = FI.max_unpooling(
            positions.reshape(ctx.shape), indices, ctx.sizes, feature_level=ctx.level
        ).reshape(-1)
        reached = landed > 0
        found = grad.new_zeros(count)
        found[landed[reached].long() - 1] = grad.reshape(-1)[reached]
        return found.reshape(ctx.shape), None, None, None


def unpooled_with_gradient(x: Tensor, indices: Any, sizes: Sequence[int], level: Any) -> Tensor:
    """MAX_UNPOOLING of x with its gradient recorded."""
    made: Tensor = _Unpooling.apply(x, indices, tuple(int(n) for n in sizes), level)
    return made
