"""Small plans of many copies as element maps: one numpy.take per (source, destination) pair.

A tile, a reflect pad or a crop of a few hundred elements lowers to several small strided
copies; numpy pays a view per side of each one, more than the elements cost. Where such a
plan reads few bindings, each output element's source element is tabulated once, and a call
is one take (and at most one fancy assignment) per pair of bindings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..plan import Plan
from .numpy_indexed import affine
from .words import UNSIGNED, words

__all__ = ["ElementMap"]

MOST_ELEMENTS = 1 << 14  # larger plans keep their strided views: the table would cost more
FEWEST_COPIES = 3


class _Pair:
    """The elements one source binding gives one output binding."""

    def __init__(self, src: int, dst: int, src_index: Any, dst_index: Any) -> None:
        self.src = src
        self.dst = dst
        self.src_index = src_index
        self.constant = bool((src_index == src_index[0]).all())
        self.dst_index = dst_index
        # sorted, and no element written twice: a run of the output where first and last
        # lie len - 1 apart
        first, last = int(dst_index[0]), int(dst_index[-1])
        self.run = (first, last + 1) if last - first == len(dst_index) - 1 else None


class ElementMap:
    """A plan's copies as (source, destination) pairs of element index tables."""

    def __init__(self, pairs: list[_Pair], size: int) -> None:
        self.pairs = pairs
        self.size = size  # bytes a word
        self.kind = UNSIGNED[size]
        # the bindings read and written, each viewed once a run; per pair (how, the
        # positions of its source and destination among them, its tables)
        self.sources = list(dict.fromkeys(p.src for p in pairs))
        self.targets = list(dict.fromkeys(p.dst for p in pairs))
        self.steps = [
            (
                _CONSTANT if p.constant else _RUN if p.run is not None else _SCATTERED,
                self.sources.index(p.src),
                self.targets.index(p.dst),
                p.src_index[0] if p.constant else p.src_index,
                p.dst_index if p.run is None else slice(*p.run),
            )
            for p in pairs
        ]

    @classmethod
    def of(cls, plan: Plan, best_only: bool = True) -> ElementMap | None:
        """The map of a plan of many small strided copies, or None where views serve better
        (`best_only=False`: wherever a map can run the plan)."""
        size = plan.element_size
        copies = plan.copies
        total = sum(c.element_count for c in copies)
        if (
            (best_only and (len(copies) < FEWEST_COPIES or total > MOST_ELEMENTS))
            or not copies
            or plan.indexed
            or size not in UNSIGNED
            or any(c.src_offset % size or c.dst_offset % size for c in copies)
        ):
            return None
        groups: dict[tuple[int, int], list[tuple[Any, Any]]] = {}
        for c in copies:
            src = affine(c.shape, c.src_strides, c.src_offset // size)
            dst = affine(c.shape, c.dst_strides, c.dst_offset // size)
            src, dst = np.broadcast_to(src, c.shape), np.broadcast_to(dst, c.shape)
            groups.setdefault((c.src, c.dst), []).append((src.reshape(-1), dst.reshape(-1)))
        pairs = []
        for (src, dst), parts in groups.items():
            src_index = np.concatenate([s for s, _ in parts])
            dst_index = np.concatenate([d for _, d in parts])
            order = np.argsort(dst_index, kind="stable")
            pairs.append(_Pair(src, dst, src_index[order], dst_index[order]))
        # nanoseconds, as measured on the development VM: a strided view pair per copy, or
        # a take (into a run of the output, or then scattered) per pair of bindings
        views = 900 * len(copies) + 0.5 * total
        mapped = sum(700 + len(p.dst_index) * (0.9 if p.run else 1.9) for p in pairs)
        if best_only and mapped > 0.8 * views:
            return None
        return cls(pairs, size)

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """Run; False, with nothing written, where a bound buffer cannot be viewed as words."""
        try:  # (numpy.frombuffer first: a small call's cost is its few steps)
            return self._run(_frombuffer, ins, outs)
        except (ValueError, TypeError, BufferError):
            pass
        size = self.size
        try:
            return self._run(lambda buffer, _: words(buffer, size), ins, outs)
        except ValueError:
            return False

    def _run(self, flat: Any, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """`__call__` with each bound buffer viewed by `flat` (every view made before any
        write). The tables hold only elements of the buffers, so `take` and `put` need no
        range check ("clip": numpy then neither checks nor buffers)."""
        kind = self.kind
        srcs = [flat(ins[k], kind) for k in self.sources]
        dsts = [flat(outs[k], kind) for k in self.targets]
        for how, a, b, src_index, dst_index in self.steps:
            if how is _RUN:
                srcs[a].take(src_index, 0, dsts[b][dst_index], "clip")
            elif how is _CONSTANT:
                dsts[b][dst_index] = srcs[a][src_index]
            else:
                dsts[b].put(dst_index, srcs[a].take(src_index, 0, None, "clip"), "clip")
        return True


_RUN, _CONSTANT, _SCATTERED = "run", "constant", "scattered"


def _frombuffer(buffer: Any, kind: Any) -> np.ndarray[Any, Any]:
    """A C-contiguous array's buffer as one row of `kind` (ValueError or BufferError where it
    is not one, or its length is no multiple of the word)."""
    if type(buffer) is not np.ndarray:
        raise TypeError("not a numpy array")
    return np.frombuffer(buffer, kind)
