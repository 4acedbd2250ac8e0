"""Large indexed copies on the CPU engine (`cpu_engine/native/indexed.c`): GATHER,
GATHER_ELEMENTS, GATHER_ND and REVERSE_SUBSEQUENCES' reads in pieces the pool's threads take,
SCATTER_ELEMENTS' and SCATTER_ND's rows in index order on the calling thread (of two rows to
one place the later stays); every index checked before anything is written, each element read
or written at its place with no table of offsets made first.

Why: numpy's vectorised path (numpy_indexed.py) makes every element's offset as an array
before it moves anything (for an inner axis or GATHER_ELEMENTS, eight bytes of offsets per
element moved) and runs on one thread; `numpy.take` along an inner axis reads no such table,
and was up to 4x faster than that path on one thread; a scatter's fancy assignment cost more
than the rows it wrote.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..indexed import IndexedCopy, rows_of
from . import cpu_engine
from .compiled_indexed import indexed_meta
from .numpy_indexed import _elements

__all__ = ["NativeIndexed", "set_enabled"]

_MOST_RANK = 16  # (native/indexed.h: MOST_INDEXED_RANK)
_MOST_AXES = 8  # (MOST_INDEXED_AXES)
_STATE = {"enabled": True}


def set_enabled(enabled: bool) -> None:
    """Whether plans compiled from now on run their indexed copies on this kernel (tests
    turn it off to reach numba's kernels, which run them where the engine is not built)."""
    _STATE["enabled"] = enabled


class NativeIndexed:
    """One indexed copy as the engine's native kernel runs it."""

    def __init__(self, copy: IndexedCopy, element_size: int, module: Any) -> None:
        self.meta = indexed_meta(copy, element_size)
        self.size = element_size
        self.scatter = copy.scatter
        self.src, self.dst, self.index = copy.src, copy.dst, copy.index
        self.kernel = module.indexed
        self.move_only, self.check_only = module.INDEXED_MOVE, module.INDEXED_CHECK

    @classmethod
    def of(cls, copy: IndexedCopy, element_size: int) -> NativeIndexed | None:
        """The native form of a copy from an input (not a fill) whose offsets are whole
        elements of 1, 2, 4 or 8 bytes, where the engine is built and on; None otherwise."""
        if copy.src < 0 or element_size not in (1, 2, 4, 8) or not copy.axes:
            return None
        if copy.src_offset % element_size or copy.dst_offset % element_size:
            return None
        if len(copy.axes) > _MOST_AXES or any(a.size < 1 for a in copy.axes):
            return None
        if len(rows_of(copy).outer) > _MOST_RANK or not cpu_engine.available():
            return None
        if not _STATE["enabled"]:
            return None
        module = cpu_engine.native()
        return None if module is None else cls(copy, element_size, module)

    def run(self, ins: Any, outs: Any, threads: int, check_first: bool = True) -> bool | None:
        """Check every index, then move the rows (a gather on up to `threads` threads): True
        where it ran, False (nothing written) where an index is out of range, None (nothing
        written) where the output meets the source or the index (the ordered path's case).
        Without `check_first` (a new output no one sees yet, or indices checked already)
        each index is checked as its row moves: False then says that rows moved before the
        bad one was found."""
        how = 0 if check_first else self.move_only
        done: bool | None = self.kernel(
            self.meta, ins[self.src], outs[self.dst], ins[self.index], self.size, threads, how
        )
        return done

    def check(self, ins: Any, outs: Any, threads: int) -> bool | None:
        """Check every index, writing nothing: True where all are in range (or out of range
        where that is no error), False where one is not, None where the output meets the
        source or the index."""
        done: bool | None = self.kernel(
            self.meta, ins[self.src], outs[self.dst], ins[self.index], self.size, threads,
            self.check_only,
        )  # fmt: skip
        return done

    def meets(self, ins: Any, outs: Any) -> bool:
        """Whether the output's buffer may share memory with the source's or the index's."""
        dst = _elements(outs[self.dst], np.uint8)
        return bool(
            np.may_share_memory(dst, _elements(ins[self.src], np.uint8))
            or np.may_share_memory(dst, _elements(ins[self.index], np.uint8))
        )
