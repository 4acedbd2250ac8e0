"""Large gathers (GATHER, GATHER_ELEMENTS, GATHER_ND, REVERSE_SUBSEQUENCES' reads) on the
CPU engine's pool (`cpu_engine/native/gather.c`): every index checked first (nothing written
where one is out of range), then the rows moved in pieces the threads take, each element read
at its place with no table of offsets made first.

Why: numpy's vectorised path (numpy_indexed.py) makes every element's offset as an array
before it moves anything (for an inner axis or GATHER_ELEMENTS, eight bytes of offsets per
element moved) and runs on one thread; `numpy.take` along an inner axis reads no such table,
and was up to 4x faster than that path on one thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..indexed import IndexedCopy, rows_of
from . import cpu_engine
from .compiled_indexed import indexed_meta

__all__ = ["NativeGather"]

_MOST_RANK = 16  # (native/gather.h: MOST_GATHER_RANK)
_MOST_AXES = 8  # (MOST_GATHER_AXES)


class NativeGather:
    """One gather as the engine's native kernel runs it."""

    def __init__(self, copy: IndexedCopy, element_size: int, module: Any) -> None:
        self.meta = indexed_meta(copy, element_size)
        self.size = element_size
        self.src, self.dst, self.index = copy.src, copy.dst, copy.index
        self.gather = module.gather

    @classmethod
    def of(cls, copy: IndexedCopy, element_size: int) -> NativeGather | None:
        """The native form of a gather from an input (not a fill) whose offsets are whole
        elements of 1, 2, 4 or 8 bytes, where the engine is built and on; None otherwise."""
        if copy.scatter or copy.src < 0 or element_size not in (1, 2, 4, 8) or not copy.axes:
            return None
        if copy.src_offset % element_size or copy.dst_offset % element_size:
            return None
        if len(copy.axes) > _MOST_AXES or any(a.size < 1 for a in copy.axes):
            return None
        if len(rows_of(copy).outer) > _MOST_RANK or not cpu_engine.available():
            return None
        module = cpu_engine.native()
        return None if module is None else cls(copy, element_size, module)

    def run(self, ins: Any, outs: Any, threads: int, check_first: bool = True) -> bool | None:
        """Check every index, then move the rows on up to `threads` threads: True where it
        ran, False (nothing written) where an index is out of range, None (nothing written)
        where the output meets the source or the index (the ordered path's case). Without
        `check_first` (a new output that no one sees yet) each index is checked as its row
        moves: False then says that rows moved before the bad one was found."""
        done: bool | None = self.gather(
            self.meta, ins[self.src], outs[self.dst], ins[self.index], self.size, threads,
            check_first,
        )  # fmt: skip
        return done

    def meets(self, ins: Any, outs: Any) -> bool:
        """Whether the output's buffer may share memory with the source's or the index's."""
        dst = _bytes_of(outs[self.dst])
        return bool(
            np.may_share_memory(dst, _bytes_of(ins[self.src]))
            or np.may_share_memory(dst, _bytes_of(ins[self.index]))
        )


def _bytes_of(buffer: Any) -> np.ndarray[Any, Any]:
    """A bound buffer (an array of any type, contiguous in either order, or bytes) as flat
    bytes."""
    nbytes = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
    flat: np.ndarray[Any, Any] = np.ndarray((nbytes,), np.uint8, buffer)
    return flat
