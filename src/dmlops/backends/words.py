"""Bound buffers as rows of unsigned words: how the numpy and compiled engines move elements
without interpreting their bits (NaN payloads and -0.0 stay as they are)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["UNSIGNED", "words"]

UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def words(buffer: Any, size: int) -> np.ndarray[Any, Any]:
    """A bound buffer (a C- or Fortran-contiguous array, or an object exposing one) as one
    row of `size`-byte unsigned words in memory order (trailing bytes that make no whole
    word left out); ValueError where it is not one contiguous buffer."""
    raw = buffer if isinstance(buffer, np.ndarray) else np.asarray(buffer)
    flat = raw.ravel("K")  # memory order: a view of a contiguous array
    if flat is not raw and flat.base is None:
        raise ValueError("not one contiguous buffer")  # ravel copied it
    target = UNSIGNED[size]
    if flat.dtype == target:
        return flat
    if flat.dtype.itemsize == size:
        return flat.view(target)
    flat = flat.view(np.uint8)
    return flat[: flat.size - flat.size % size].view(target)
