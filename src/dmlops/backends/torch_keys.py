"""Cache keys of torch tensors, on any device (CPU tensors' keys name device -1): the
numpy backend's (CPU tensors, bound through numpy views) and the CUDA backend's. torch is
never imported here."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["MANY_TORCH", "array_keys", "many_array_keys"]

MANY_TORCH = "torch tensors, a field a tuple"  # the tag of many tensors' keys


def _torch_key(t: Any) -> Hashable:
    return (t.dtype, t.shape, t.stride(), t.get_device())


def array_keys() -> dict[type, Callable[[Any], Hashable]]:
    """torch.Tensor's key function (type, sizes, strides, device), where torch is imported."""
    torch = sys.modules.get("torch")
    return {} if torch is None else {torch.Tensor: _torch_key}


def many_array_keys() -> dict[type, Callable[[Sequence[Any]], list[Hashable] | None]]:
    """Keys of many torch tensors at once (a tag, then their types, sizes, strides and
    devices, each field a tuple): four passes of C calls instead of a Python call per
    tensor."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    tensor = torch.Tensor
    dtype, shape = operator.attrgetter("dtype"), operator.attrgetter("shape")

    def torch_keys(ts: Sequence[Any]) -> list[Hashable]:
        # (a column a field: four flat tuples, not a tuple an array, to make and hash)
        fields = (tuple(map(dtype, ts)), tuple(map(shape, ts)), tuple(map(tensor.stride, ts)))
        return [MANY_TORCH, *fields, tuple(map(tensor.get_device, ts))]

    return {tensor: torch_keys}
