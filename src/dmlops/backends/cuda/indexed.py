"""Indexed copies (indexed.py) on the GPU: one launch per copy (a scatter whose targets may
meet: of more than SHARED_SCAN_ROWS rows, or slots past an int, two, a winner pass picking
the last row in index order first), on the call's stream.

Each launch carries its copy's meta table as a kernel parameter (the kernel reads it from
the constant bank), so nothing is uploaded and a CUDA graph captures it with the launch. A
first call made while its stream is captured prepares in relaxed capture mode; a winner
table it needs lies in memory that is never freed (the graph may replay at any time) and
that no later call shares."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _forking
from ...indexed import IndexedCopy, rows_of
from . import kernels
from .launch import (
    DeviceTable,
    Graphed,
    RawMemory,
    is_capturing,
    launch_kernel,
    pack_arguments,
    relaxed_capture,
)

__all__ = ["IndexedLaunch"]

_TYPES = {"INT32": 0, "INT64": 1, "UINT32": 2, "UINT64": 3}
META_WORDS = 112  # the kernel's Meta parameter: int64 words (kernels/indexed.cu)
_LANES_WORD = META_WORDS - 1  # its last word: the lanes that move a row
_THREADS = 256
_SEGMENT = 128  # 16-byte chunks a warp moves per unit of a long row (kernels/indexed.cu)
_ELEMENTS_PER = 2  # elements a thread of the elements kernel moves (kernels/elements.cu)
_ELEMENT_COLS = 32  # walk rows at least this long take the elements kernel
_PREPARED = 16  # address tuples whose launches each copy keeps packed
_WARM = 64  # device, stream and alignment tuples whose launches each copy keeps
_ALIGNED = 255  # the low bits of an address that pick its warm launches (`IndexedLaunch.warm`)
# a winner table's clearing and the two launches after it replayed as one CUDA graph (one
# driver call a warm call instead of three); off: launched one by one
GRAPHED_WINNERS = True
# A scatter whose targets may meet finds which row writes each slot (`winners_by`): in its
# one launch, each row looking for a later one to its slot, or with a winner table, its
# clearing and a winner pass first. Slots past an int: rows that locate every other row, up
# to this many
SCAN_ROWS = 1024
# ... else rows reading every row's slot and order, found once per block into shared memory
# (kernels/indexed.cu: SHARED_SCAN_ROWS), up to this many
SHARED_SCAN_ROWS = 4096
_SHARED_SCAN_BLOCKS = 264  # at most this many blocks in that launch
# ... where its blocks locate at most this many rows in all (each block locates every row)
# and a row's look reads at most this many slots a lane (a warp per long row, a thread per
# short one). On the H100 (scatters onto 65,536 targets, kernel time per call): rows of
# 2 KiB, 256 / 1,024 rows 3.7 / 7.3 µs (the scan that locates every other row 7.0 / 21.1,
# a winner table 6.5 µs at 1,500 rows); rows of 16 bytes, 256 / 1,024 rows 18.9 / 68 µs
# against 114 / 466 for that scan and 5.5 µs for a winner table at any count
SHARED_SCAN_LOCATES = 1 << 16
# Rows shorter than a warp's 32 chunks take a team of lanes (the power of two at or over
# their chunks) where that asks for at most this many threads; more rows fill the GPU with
# a thread each. GPU time on the H200, a team against a thread a row (torch beside): 32 rows
# of 256 bytes, gather 1.95 against 3.01 µs (torch 1.15), scatter 2.78 against 5.63 (2.72);
# 256 rows 1.98 / 3.74 against 7.94 / 9.63; 4,096 rows of 64 bytes 2.08 / 4.10 against
# 2.85 / 5.15; but 65,536 rows of 32 bytes (131,072 threads) scatter 7.91 against 7.10
TEAM_THREADS = 1 << 16
SHARED_SCAN_LOOK = 32


def _named(cp: Any, entry: str) -> int:
    """The handle of one of indexed.cu's kernels on the current device."""
    return kernels.handle(cp.cuda.runtime, "indexed", entry=entry)


def _shared_scan_blocks(rows: int, lanes: int) -> int:
    """The blocks of a shared-memory scan's launch of `rows` rows, `lanes` lanes a row."""
    return min(_SHARED_SCAN_BLOCKS, -(-rows * lanes // _THREADS))


def row_lanes(chunks: int, rows: int) -> int:
    """The lanes that move each of `rows` rows of `chunks` chunks: a warp for long rows, a
    team (the power of two at or over `chunks`) where few rows would leave the GPU idle, else
    a thread."""
    if chunks >= 32:
        return 32
    team = 1 << (chunks - 1).bit_length()
    return team if rows * team <= TEAM_THREADS else 1


def winners_by(meets: bool, rows: int, lanes: int, slot_count: int) -> str:
    """How a launch of `rows` rows (`lanes` lanes a row) finds which row writes each of
    `slot_count` slots, where its targets may meet: "shared" (a scan over every row's slot
    kept in shared memory), "scan" (each row locates every other one: slots past an int),
    "table" (a winner table, its clearing and a winner pass first), or "none"."""
    if not meets:
        return "none"
    blocks = _shared_scan_blocks(rows, lanes)
    if (
        rows <= SHARED_SCAN_ROWS
        and slot_count < 2**31
        and blocks * rows <= SHARED_SCAN_LOCATES
        and -(-rows // lanes) <= SHARED_SCAN_LOOK
    ):
        return "shared"
    if slot_count >= 2**31 and rows <= SCAN_ROWS:
        return "scan"  # (a winner table would hold an int per slot)
    return "table"


class IndexedLaunch:
    """One indexed copy's meta table (per device) and launch."""

    def __init__(self, copy: IndexedCopy, element_size: int) -> None:
        self.copy = copy
        self.size = element_size
        walk = rows_of(copy)
        self.row = walk.length
        outer = walk.outer
        cut = len(outer)
        self.rows = walk.count
        self.row_strides = walk.strides
        self.one_row_an_index = walk.one_row_an_index
        slots = copy.slot_strides if copy.slot_strides else (0,) * len(copy.shape)
        isize = copy.index_element_size
        head = [
            cut,
            len(copy.axes),
            self.row,
            0,  # chunk bytes: per call (alignment of the bound addresses)
            0,  # chunks per row
            int(copy.scatter),
            _TYPES[copy.index_type.name],
            int(copy.negative_indices),
            2 if copy.clamp else int(copy.skip_out_of_range),
            element_size,
            copy.tuple_stride,
            copy.src_offset // element_size,
            copy.dst_offset // element_size,
            copy.index_offset // isize,
            self.row_strides[0],
            self.row_strides[1],
            copy.reverse_dim,
        ]
        order = walk.order
        for d in range(cut):
            head += [
                outer[d],
                copy.src_strides[d],
                copy.dst_strides[d],
                copy.index_strides[d],
                slots[d],
                order[d],
            ]
        for axis in copy.axes:
            head += [axis.size, axis.stride, axis.slot_stride]
        # every element offset of the launch fits an int: the lean kernel's 32-bit arithmetic
        reach = [
            copy.src_offset // element_size,
            copy.dst_offset // element_size,
            copy.index_offset // isize,
        ]
        for n, *strides in zip(
            copy.shape, copy.src_strides, copy.dst_strides, copy.index_strides, strict=True
        ):
            reach = [r + (n - 1) * abs(t) for r, t in zip(reach, strides, strict=True)]
        side = 0 if not copy.scatter else 1
        reach[side] += sum((a.size - 1) * abs(a.stride) for a in copy.axes)
        reach[2] += (len(copy.axes) - 1) * abs(copy.tuple_stride)
        self.lean_reach = max(reach) < 2**31 - 1 and walk.count < 2**31 - 1
        self.walk = self._element_walk(outer, cut) if self.lean_reach else None
        if len(head) > _LANES_WORD:
            raise ValueError(f"an indexed copy of {cut} dimensions does not fit a launch")
        self.meta = np.zeros(META_WORDS, dtype=np.int64)
        self.meta[: len(head)] = head
        # (winner table, launches, what they keep alive, whether each call clears the table)
        # per address tuple; an entry without a winner table is what a warm call finds and
        # launches at once (held while it launches, it keeps its parameters alive)
        self.prepared: dict[tuple[int, ...], Any] = {}
        # the graphs of prepared entries with a winner table (GRAPHED_WINNERS)
        self.graphs: dict[tuple[int, ...], Graphed] = {}
        # launches without a winner table, per device, stream and alignment of the source
        # and destination: the same at any addresses so aligned, which a call writes into
        # the arrays their parameters point at (under the lock: the driver reads them as it
        # launches); a call whose output is a new array prepares nothing
        self.warm: dict[tuple[int, ...], tuple[list[Any], list[np.ndarray[Any, Any]], Any]] = {}
        self._warm_lock = _forking.lock()
        self.captured: list[Any] = []  # preparations a CUDA graph replays: kept for good

    def _element_walk(self, outer: tuple[int, ...], cut: int) -> np.ndarray[Any, Any] | None:
        """The `elements` kernel's walk (kernels/elements.cu) for a gather of single elements
        along one axis over at most two outer dimensions whose rows are long enough to fill
        a warp; None otherwise (the general kernel)."""
        c = self.copy
        if (
            c.scatter
            or self.row != 1
            or len(c.axes) != 1
            or c.reverse_dim >= 0
            or c.skip_out_of_range
            or cut > 2
            or self.size not in (1, 2, 4, 8)
            or (outer[-1] if outer else 0) < _ELEMENT_COLS
        ):
            return None
        isize = c.index_element_size
        lead = 2 - cut  # a walk of one dimension: one row
        rows = (1,) * lead + tuple(outer)
        strides = [(0,) * lead + tuple(s[:cut]) for s in (c.src_strides, c.dst_strides)]
        index = (0,) * lead + tuple(c.index_strides[:cut])
        axis = c.axes[0]
        flags = int(c.negative_indices) | (2 if c.clamp else 0)
        walk = [
            rows[0],
            rows[1],
            strides[0][0],
            strides[0][1],
            strides[1][0],
            strides[1][1],
            index[0],
            index[1],
            axis.size,
            axis.stride,
            c.src_offset // self.size,
            c.dst_offset // self.size,
            c.index_offset // isize,
            flags,
        ]
        return np.array(walk + [0] * (16 - len(walk)), np.int32)

    def _chunk(self, src: int, dst: int) -> int:
        """The widest move (bytes) that every row start and the row length allow."""
        if self.row == 1 or self.row_strides != (1, 1):
            return self.size
        c = self.copy
        size = self.size
        moving = [src + c.src_offset, dst + c.dst_offset, self.row * size]
        moving += [s * size for s in c.src_strides[:-1]] + [s * size for s in c.dst_strides[:-1]]
        moving += [a.stride * size for a in c.axes]
        for chunk in (16, 8, 4, 2):
            if chunk > size and all(v % chunk == 0 for v in moving):
                return chunk
        return size

    def launch(
        self, cp: Any, device: int, ins: Sequence[int], outs: Sequence[int], stream: int
    ) -> None:
        """Run on `device` (current), on `stream` (launches prepared once per addresses)."""
        if self.rows == 0:
            return
        c = self.copy
        key = (device, stream, ins[c.src], outs[c.dst], ins[c.index])
        if self.launch_warm(*key):
            return
        prepared = self.prepared.get(key)
        captured = False
        # a prepared launch that owns no device memory is the same under graph capture (its
        # meta table travels in its parameters): only the others ask whether it is one
        if prepared is None or prepared[0] is not None:
            if is_capturing(cp, stream):  # a launch of its own: a graph may replay it any time
                with relaxed_capture():
                    prepared = self._prepare(cp, *key, captured=True)
                self.captured.append(prepared)
                captured = True
            elif prepared is None:
                prepared = self._prepare(cp, *key)
                if prepared[0] is None:  # (no winner table: for every address so aligned)
                    if len(self.warm) >= _WARM:
                        del self.warm[next(iter(self.warm))]
                    # (launches, the addresses' arrays, and all the parameters point at)
                    self.warm[(device, stream, key[2] & _ALIGNED, key[3] & _ALIGNED)] = (
                        prepared[1],
                        prepared[2][-1],
                        prepared[2],
                    )
                    self.launch_warm(*key)
                    return
                if len(self.prepared) >= _PREPARED:
                    self._forget(next(iter(self.prepared)))
                self.prepared[key] = prepared
                if prepared[0] is not None and GRAPHED_WINNERS:
                    found = prepared
                    # (a driver that will not capture: launched one by one, as without)
                    with contextlib.suppress(RuntimeError):
                        self.graphs[key] = Graphed(cp, lambda s: self._enqueue(cp, found, s), found)
        winner = prepared[0]
        graph = None if winner is None or captured else self.graphs.get(key)
        if graph is not None:
            graph.launch(stream)
            return
        try:
            self._enqueue(cp, prepared, stream)
        except BaseException:
            # (an interrupt between a winner pass and its copy would leave a table the copy
            # did not free: the next call makes a new, cleared one)
            if winner is not None and not captured:
                self._forget(key)
            raise

    def launch_warm(self, device: int, stream: int, src: int, dst: int, index: int) -> bool:
        """Launch at these addresses where launches without a winner table were prepared for
        addresses so aligned on this device and stream (`warm`); False where none were."""
        found = self.warm.get((device, stream, src & _ALIGNED, dst & _ALIGNED))
        if found is None:
            return False
        launches, where, _ = found
        go = launch_kernel
        with self._warm_lock:
            where[0][0], where[1][0], where[2][0] = src, dst, index
            for function, grid, threads, params in launches:
                go(function, grid[0], grid[1], 1, threads, 1, 1, 0, stream, params, 0)
        return True

    def _forget(self, key: tuple[int, ...]) -> None:
        """Drop the prepared entry (and graph) of these addresses."""
        self.graphs.pop(key, None)
        self.prepared.pop(key, None)

    @staticmethod
    def _enqueue(cp: Any, prepared: Any, stream: int) -> None:
        """A prepared entry's work on `stream`: its winner table cleared (where its copy
        does not free the slots itself), its launches."""
        winner, launches = prepared[0], prepared[1]
        if winner is not None and prepared[3]:
            _clear(cp, winner, stream)
        launch = launch_kernel
        for function, grid, threads, params in launches:
            launch(function, grid[0], grid[1], 1, threads, 1, 1, 0, stream, params, 0)

    def _prepare(
        self,
        cp: Any,
        device: int,
        stream: int,
        src: int,
        dst: int,
        index: int,
        captured: bool = False,
    ) -> tuple[Any, list[tuple[int, tuple[int, int], int, int]], list[Any], bool]:
        """The winner table, packed kernel parameters (the meta table among them) for these
        addresses and whether each call clears the table (`captured`: for a stream being
        captured into a graph, the winner table in memory of its own)."""
        c = self.copy
        if self.walk is not None and src % self.size == 0 and dst % self.size == 0:
            launch, kept = self._elements_launch(cp, src, dst, index)
            return None, [launch], kept, False
        chunk = self._chunk(src, dst)
        chunks = self.row * self.size // chunk if chunk != self.size else self.row
        meta = self.meta.copy()
        meta[3], meta[4] = chunk, chunks
        lanes = row_lanes(chunks, self.rows)
        meta[_LANES_WORD] = lanes
        way = winners_by(bool(c.scatter and c.slot_count), self.rows, lanes, c.slot_count)
        shared_scan, scan, wants_winner = way == "shared", way == "scan", way == "table"
        if captured:
            winner: Any = RawMemory(cp, 4 * c.slot_count) if wants_winner else None
        else:
            winner = DeviceTable(cp, c.slot_count, np.int32, stream) if wants_winner else None
        keep: list[Any] = [meta, winner]
        launches = []

        winner_ptr = np.uint64(0 if winner is None else winner.data.ptr)
        rows = np.int64(self.rows)
        if winner is not None:
            fn = _named(cp, "dmlops_indexed_winner")
            grid = max(1, min(65535 * 8, -(-self.rows // _THREADS)))
            launches.append(
                (
                    fn,
                    (grid, 1),
                    _THREADS,
                    pack_arguments(keep, meta, np.uint64(index), winner_ptr, rows),
                )
            )
        warps = self.rows
        segments = 1
        if lanes == 32 and chunk == 16 and chunk != self.size and not scan:
            segments = -(-chunks // _SEGMENT)
            warps = self.rows * segments  # a warp per segment of a row
        # one warp or thread moves each whole row, and no other row comes from its index
        # position: the copy frees its winning slots, so the table is cleared once here, not
        # by every call (kernels/indexed.cu: free_slot)
        clears_itself = winner is not None and segments == 1 and self.one_row_an_index
        if clears_itself:
            _clear(cp, winner, stream)
        grid = max(1, min(65535 * 8, -(-warps * lanes // _THREADS)))
        # the addresses, each in an array of its own that the parameters point at: a warm call
        # at other addresses writes its own there (`launch_warm`)
        where = [np.array([v], np.uint64) for v in (src, dst, index)]
        ends = (meta, *where)
        if shared_scan:
            fn = _named(cp, "dmlops_indexed_scan_shared")
            params = pack_arguments(keep, *ends, rows)
            grid = _shared_scan_blocks(self.rows, lanes)
        elif scan:
            fn = _named(cp, "dmlops_indexed_scan")
            params = pack_arguments(keep, *ends, rows)
        elif winner is None and self.lean_reach and not (c.scatter and c.slot_count):
            fn = _named(cp, "dmlops_indexed_lean")
            params = pack_arguments(keep, *ends, np.int32(self.rows))
        else:
            fn = _named(cp, "dmlops_indexed")
            params = pack_arguments(keep, *ends, winner_ptr, rows, np.int32(clears_itself))
        launches.append((fn, (grid, 1), _THREADS, params))
        keep.append(where)  # (last: the addresses' arrays)
        return winner, launches, keep, winner is not None and not clears_itself

    def _elements_launch(
        self, cp: Any, src: int, dst: int, index: int
    ) -> tuple[tuple[int, tuple[int, int], int, int], list[Any]]:
        """The `elements` kernel's launch: a block of up to _THREADS threads spans
        ELEMENTS_PER times its width of a walk row; rows along the grid's y."""
        assert self.walk is not None
        rows, cols = int(self.walk[0]), int(self.walk[1])
        per = _ELEMENTS_PER
        threads = min(_THREADS, (-(-cols // per) + 31) // 32 * 32)
        grid = (-(-cols // (threads * per)), min(rows, 65535))
        defines = (
            ("INDEX", _TYPES[self.copy.index_type.name]),
            ("ELEMENT", self.size),
            ("ELEMENTS_PER", per),
        )
        fn = kernels.handle(cp.cuda.runtime, "elements", defines)
        pointers = [np.array([v], np.uint64) for v in (src, dst, index)]
        params = np.array([self.walk.ctypes.data] + [a.ctypes.data for a in pointers], np.uint64)
        launch = (fn, grid, threads, int(params.ctypes.data))
        return launch, [self.walk, params, pointers]  # (kept alive; the addresses' arrays last)


def _clear(cp: Any, winner: Any, stream: int) -> None:
    """Every slot of a winner table free (-1), on `stream`."""
    cp.cuda.runtime.memsetAsync(int(winner.data.ptr), 0xFF, winner.nbytes, stream)
