"""A plan's dispatches laid out once for every binding tuple whose arrays lie in the same
buffers at offsets of the same low bits (`ALIGN`). A call at new offsets (each call's new
output, carved from an arena at a new place) moves each piece table row's source and
destination offsets, and each indexed copy's meta table's offsets, by its arrays' moves,
and writes each table into the next buffer of a ring kept for it, ahead of the open
compute pass: no planning, upload or binding, the first binding's pipelines and headers.
A row's units come from planning the first binding twice, the second time with every
array one `ALIGN` further on: its offset columns move by `ALIGN` over its unit and nothing
else moves (a plan where anything else does is planned anew at each binding)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _forking
from ...plan import Plan
from .indexed import indexed_parts
from .memory import ALIGN, Flat
from .native import MAX_PENDING, NativeEncoder
from .strategies import Group

__all__ = ["Layout", "layout_key"]

_SRC, _DST = 3, 4  # a table row's source and destination offsets (in its kernel's units)
# table buffers a group's ring holds: a slot is rewritten only after more than MAX_PENDING
# dispatches of its group were recorded since it was bound, so the pass that read it was
# submitted (the native encoder submits every MAX_PENDING dispatches)
RING = 2 * MAX_PENDING


def layout_key(ins: Sequence[Flat], outs: Sequence[Flat]) -> tuple[int, ...]:
    """What a binding tuple's layout depends on: each array's buffer and low offset bits."""
    return tuple(x for f in (*ins, *outs) for x in (f.base, f.offset % ALIGN))


class _Ring:
    """Buffers a table is written into in turn, each with the dispatches that read it
    (made when a slot is first used)."""

    def __init__(self) -> None:
        self.slots: list[tuple[Any, list[Any]] | None] = [None] * RING
        self.turn = 0

    def next(self, nbytes: int, made: Callable[[Any], list[Any]], backend: Any) -> Any:
        """The next slot (buffer, dispatches): `made(buffer)` gives a new one's."""
        k = self.turn
        self.turn = (k + 1) % len(self.slots)
        slot = self.slots[k]
        if slot is None:
            buffer = backend.table_buffer(nbytes)
            slot = self.slots[k] = (buffer, made(buffer))
        return slot


class _Rows:
    """One group's table less its arrays' offsets, how far each row's offsets move for an
    array moved by one ALIGN, and its ring."""

    def __init__(self, group: Group, moved: Group, header: Any) -> None:
        self.group = group
        self.header = header
        self.table = group.table.astype(np.int64)
        offsets = [_SRC, _DST]
        self.per_align = moved.table[:, offsets].astype(np.int64) - self.table[:, offsets]
        self.ends = np.array(group.ends, np.int64).reshape(-1, 2)
        self.ring = _Ring()

    def table_at(self, in_moves: np.ndarray[Any, Any], out_moves: np.ndarray[Any, Any]) -> Any:
        """The table with each row's arrays moved by these many bytes (multiples of ALIGN)."""
        table = self.table.copy()
        table[:, _SRC] += in_moves[self.ends[:, 0]] // ALIGN * self.per_align[:, 0]
        table[:, _DST] += out_moves[self.ends[:, 1]] // ALIGN * self.per_align[:, 1]
        return table.astype(np.uint32)


class Layout:
    """A plan's groups, pipelines and headers, and its indexed copies' dispatches, for one
    `layout_key`; `dispatches` and `run_at` give those of any binding tuple of that key."""

    def __init__(self, backend: Any, plan: Plan, ins: Sequence[Flat], outs: Sequence[Flat]):
        self.backend = backend
        self.plan, bound, self.held = backend.with_fills(plan, ins)
        self.fills = list(bound[len(ins) :])
        self.buffers, groups = backend.groups(self.plan, bound, outs)
        _, moved = backend.groups(self.plan, bound, outs, ALIGN)
        self.dispatches_here = [
            backend.dispatch_of(g, self.buffers, g.table, None, self.held) for g in groups
        ]
        self.rows: list[_Rows] | None = (
            [
                _Rows(g, m, d[4][1])
                for g, m, d in zip(groups, moved, self.dispatches_here, strict=True)
            ]
            if _only_offsets_move(groups, moved)
            else None
        )
        size = self.plan.element_size
        self.parts = indexed_parts(backend, self.plan.indexed, size, bound, outs)
        self.part_rings = [_Ring() for _ in self.parts]
        for part in self.parts:
            self.dispatches_here += part.dispatches(self._uploaded(part.meta))
        self.in_offsets = np.array([f.offset for f in bound], np.int64)
        self.out_offsets = np.array([f.offset for f in outs], np.int64)
        self.lock = _forking.lock()

    def _uploaded(self, data: np.ndarray[Any, Any]) -> Any:
        usage = self.backend.wgpu.BufferUsage.STORAGE
        return self.backend.device.create_buffer_with_data(data=data, usage=usage)

    @property
    def movable(self) -> bool:
        """Whether other offsets of its key can be laid out by shifting (`dispatches`)."""
        return self.rows is not None

    def _moves(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> tuple[Any, Any]:
        """How many bytes each input (fills after them) and each output moved from the
        first binding's (multiples of ALIGN: the key keeps the low bits)."""
        in_at = np.array([f.offset for f in (*ins, *self.fills)], np.int64)
        out_at = np.array([f.offset for f in outs], np.int64)
        return in_at - self.in_offsets, out_at - self.out_offsets

    def dispatches(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> list[Any]:
        """The dispatches of a binding tuple of this layout's key, their tables their own
        (a bound dispatch's, run again later)."""
        assert self.rows is not None
        in_moves, out_moves = self._moves(ins, outs)
        made = self.backend.dispatch_of
        found = [
            made(r.group, self.buffers, r.table_at(in_moves, out_moves), r.header, self.held)
            for r in self.rows
        ]
        for part in self.parts:
            found += part.dispatches(self._uploaded(part.meta_at(in_moves, out_moves)))
        return found

    def run_at(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> None:
        """Run a binding tuple of this layout's key: each group's table and each indexed
        copy's meta table written into the next buffer of its ring, ahead of the open pass
        (the slot was last bound RING calls ago, more than MAX_PENDING dispatches: that
        pass was submitted), and dispatched."""
        assert self.rows is not None
        backend = self.backend
        in_moves, out_moves = self._moves(ins, outs)
        with self.lock:  # (a slot is written and its dispatch recorded before the next turn)
            dispatches: list[Any] = []
            for r in self.rows:
                table = r.table_at(in_moves, out_moves)
                slot = r.ring.next(table.nbytes, functools.partial(self._row, r), backend)
                backend.write_ahead(slot[0], table)
                dispatches += slot[1]
            for part, ring in zip(self.parts, self.part_rings, strict=True):
                meta = part.meta_at(in_moves, out_moves)
                slot = ring.next(meta.nbytes, part.dispatches, backend)
                backend.write_ahead(slot[0], meta)
                dispatches += slot[1]
            steps = NativeEncoder.steps(dispatches) if backend.native is not None else None
            backend.run(dispatches, steps)

    def _row(self, r: _Rows, table_buffer: Any) -> list[Any]:
        """A group's dispatch reading its table from `table_buffer`."""
        return [self.backend.dispatch_of(r.group, self.buffers, table_buffer, r.header, self.held)]


def _only_offsets_move(groups: list[Group], moved: list[Group]) -> bool:
    """Whether the two plannings differ in the tables' offset columns only."""
    if len(groups) != len(moved):
        return False
    for g, m in zip(groups, moved, strict=True):
        same = (g.kernel, g.dims, g.src, g.dst, g.tiles, g.pieces, g.per_thread, g.ends) == (
            m.kernel, m.dims, m.src, m.dst, m.tiles, m.pieces, m.per_thread, m.ends
        )  # fmt: skip
        if not same or g.table.shape != m.table.shape:
            return False
        others = np.ones(g.table.shape[1], bool)
        others[[_SRC, _DST]] = False
        if not np.array_equal(g.table[:, others], m.table[:, others]):
            return False
        moves = m.table[:, [_SRC, _DST]].astype(np.int64) - g.table[:, [_SRC, _DST]]
        if not (moves > 0).all():  # (each row's offsets follow its arrays)
            return False
    return True
