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
        size = self.size
        try:
            flats_in = {p.src: words(ins[p.src], size) for p in self.pairs}
            flats_out = {p.dst: words(outs[p.dst], size) for p in self.pairs}
        except ValueError:
            return False
        for p in self.pairs:
            src, dst = flats_in[p.src], flats_out[p.dst]
            if p.constant:
                dst[p.dst_index] = src[p.src_index[0]]
            elif p.run is not None:
                src.take(p.src_index, 0, dst[p.run[0] : p.run[1]])
            else:
                dst[p.dst_index] = src.take(p.src_index)
        return True
