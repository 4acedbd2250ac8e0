"""Torch tensors described without CuPy: shape, byte strides, dtype and contiguity read
straight from the tensor, so describing one never synchronises a stream (CuPy's
`__cuda_array_interface__` import waits for the producer's stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...elements import torch_dtype_as_numpy

__all__ = ["TorchView", "contiguity"]


def contiguity(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[bool, bool]:
    """(C-contiguous, Fortran-contiguous) by numpy's rules (size-1 dims ignored)."""
    if any(n == 0 for n in shape):
        return True, True

    def packed(order: Sequence[int]) -> bool:
        step = itemsize
        for d in order:
            if shape[d] != 1:
                if strides[d] != step:
                    return False
                step *= shape[d]
        return True

    dims = range(len(shape))
    return packed(list(reversed(dims))), packed(list(dims))


class _Flags:
    def __init__(self, c: bool, f: bool) -> None:
        self.c_contiguous = c
        self.f_contiguous = f
        self.writeable = True


class TorchView:
    """The array attributes dmlops reads, of a CUDA torch tensor."""

    def __init__(self, tensor: Any) -> None:
        name = str(tensor.dtype).removeprefix("torch.")
        try:
            self.dtype: Any = np.dtype(name)
        except TypeError:  # bfloat16, float8 (ml_dtypes), or the torch dtype itself
            self.dtype = torch_dtype_as_numpy(tensor.dtype) or tensor.dtype
        self.itemsize = int(tensor.element_size())
        self.shape = tuple(tensor.shape)
        self.ndim = len(self.shape)
        self.strides = tuple(s * self.itemsize for s in tensor.stride())
        self.flags = _Flags(*contiguity(self.shape, self.strides, self.itemsize))
        self.nbytes = int(tensor.numel()) * self.itemsize
        self.pointer = int(tensor.data_ptr())
        self.tensor = tensor  # (alive while its address is: a conjugate view's values)
