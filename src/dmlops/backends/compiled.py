"""The CPU engine's compiled copies: numba kernels that run one strided copy across every
core with numba's own thread pool (no Python per band), where numba is installed.

Why numba: on the 16-core host of the H100 machine a band started from Python threads
costs tens of microseconds, so numpy with a thread pool moved an 8.4 MB KV-cache append in
650 to 800 µs whatever the thread count, against onnxruntime's 64 µs; the same plan as numba
`prange` loops took 50 µs on 16 threads, and a QKV head transpose 451 µs against numpy's
3.6 ms (`benchmarks/numba_probe.py`). A C extension would need a compiler on every
machine that installs dmlops; numba ships as binary wheels. Without numba the numpy engine
runs every copy (the fallback, and the reference the tests hold this one to).

Two kernels are parallel over the outer dimensions of one copy: `rows` moves contiguous
runs of bytes (a copy whose innermost dimension is contiguous on both sides), `elements`
moves elements of 1, 2, 4 or 8 bytes at any strides. A copy with too few outer rows to
share has its rows cut into pieces first, so one long row still spreads over the cores. A
third, `runs`, moves the runs of all of a plan's row copies (up to _MOST_RUNS) by address in
one parallel region (`run_table`); `strided` does the same for the rows of a plan's element
copies of one element size (`strided_table`: a Focus stem's four stride-2 slices are one
region, not four), through pointers, so no index wraps around and the loop vectorises;
`rows_multi` moves row copies that share one outer shape (a split's or a join's parts, too
many rows for a table of runs) in one region, each input row read once for all of them.
Calls are serialised (numba's default thread pool takes one parallel region at a time).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from .words import UNSIGNED, words

__all__ = ["available", "CompiledCopy", "plan_copy", "run_copy", "set_enabled"]

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "kernels": (rows, elements), "failed": bool, "enabled": bool
_PIECE = 256 << 10  # a long row is cut into pieces of about this many bytes


def set_enabled(enabled: bool) -> None:
    """Turn the compiled engine on or off for this process (tests compare the two)."""
    _STATE["enabled"] = enabled


def available() -> bool:
    """Whether numba is installed and the engine is on (DMLOPS_CPU_ENGINE=numpy turns it
    off)."""
    if not _STATE.get("enabled", os.environ.get("DMLOPS_CPU_ENGINE", "") != "numpy"):
        return False
    return _kernels() is not None


def _kernels() -> tuple[Any, Any] | None:
    found = _STATE.get("kernels")
    if found is not None or _STATE.get("failed"):
        return found
    try:
        import numba
    except ImportError:
        _STATE["failed"] = True
        return None

    @numba.njit(parallel=True, nogil=True, cache=True)
    def rows(dst, src, dst0, src0, shape, dst_strides, src_strides, length):  # type: ignore[no-untyped-def]
        total = 1
        for n in shape:
            total *= n
        for i in numba.prange(total):
            rest = i * 1  # a copy: the loop index itself is never written
            d = dst0
            s = src0
            for k in range(shape.size - 1, -1, -1):
                c = rest % shape[k]
                rest //= shape[k]
                d += c * dst_strides[k]
                s += c * src_strides[k]
            dst[d : d + length] = src[s : s + length]

    @numba.njit(parallel=True, nogil=True, cache=True)
    def elements(dst, src, dst0, src0, shape, dst_strides, src_strides):  # type: ignore[no-untyped-def]
        last = shape.size - 1
        n = shape[last]
        ds = dst_strides[last]
        ss = src_strides[last]
        total = 1
        for k in range(last):
            total *= shape[k]
        for i in numba.prange(total):
            rest = i * 1  # a copy: the loop index itself is never written
            d = dst0
            s = src0
            for k in range(last - 1, -1, -1):
                c = rest % shape[k]
                rest //= shape[k]
                d += c * dst_strides[k]
                s += c * src_strides[k]
            for j in range(n):
                dst[d + j * ds] = src[s + j * ss]

    from numba.core import types
    from numba.extending import intrinsic

    def pointer(kind: Any) -> Any:
        @intrinsic
        def at(typingctx, address):  # type: ignore[no-untyped-def]
            sig = types.CPointer(kind)(types.int64)

            def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
                return builder.inttoptr(args[0], context.get_value_type(types.CPointer(kind)))

            return sig, codegen

        return at

    word_at, byte_at = pointer(types.uint64), pointer(types.uint8)

    @numba.njit(parallel=True, nogil=True, cache=True)
    def runs(dst, src, count, wide):  # type: ignore[no-untyped-def]
        # run i: count[i] words (8 bytes, or 1 where not `wide`) from address src[i] to dst[i]
        for i in numba.prange(dst.size):
            n = count[i]
            if wide:
                to = numba.carray(word_at(dst[i]), (n,))
                fro = numba.carray(word_at(src[i]), (n,))
                for j in range(n):
                    to[j] = fro[j]
            else:
                tb = numba.carray(byte_at(dst[i]), (n,))
                fb = numba.carray(byte_at(src[i]), (n,))
                for j in range(n):
                    tb[j] = fb[j]

    def strided_rows(at: Any) -> Any:
        @numba.njit(parallel=True, nogil=True, cache=True)
        def strided(  # type: ignore[no-untyped-def]
            dst_base, src_base, dst, dst_offset, src, src_offset, count, dst_step, src_step
        ):
            # row i: count[i] elements from binding src[i] at byte src_offset[i] (every
            # src_step[i]-th element) to binding dst[i] at dst_offset[i] (every
            # dst_step[i]-th); steps may be negative; addresses by pointer (no wraparound)
            for i in numba.prange(dst.size):
                to = at(dst_base[dst[i]] + dst_offset[i])
                fro = at(src_base[src[i]] + src_offset[i])
                a = dst_step[i]
                b = src_step[i]
                for j in range(count[i]):
                    to[j * a] = fro[j * b]

        return strided

    @numba.njit(parallel=True, nogil=True, cache=True)
    def rows_multi(dst, src, shape, dst_strides, src_strides, count, wide):  # type: ignore[no-untyped-def]
        # every copy c moves count[c] words (8 bytes, or 1 where not `wide`) per row of the
        # shared outer `shape`, from src[c] + row . src_strides[c] to dst[c] + row .
        # dst_strides[c]: one parallel region, each input row read once for all copies
        total = 1
        for n in shape:
            total *= n
        for i in numba.prange(total):
            for c in range(dst.size):
                rest = i * 1
                d = dst[c]
                s = src[c]
                for k in range(shape.size - 1, -1, -1):
                    q = rest % shape[k]
                    rest //= shape[k]
                    d += q * dst_strides[c, k]
                    s += q * src_strides[c, k]
                n = count[c]
                if wide:
                    to = word_at(d)
                    fro = word_at(s)
                    for j in range(n):
                        to[j] = fro[j]
                else:
                    tb = byte_at(d)
                    fb = byte_at(s)
                    for j in range(n):
                        tb[j] = fb[j]

    _STATE["rows_multi"] = rows_multi
    _STATE["strided"] = {
        1: strided_rows(byte_at),
        2: strided_rows(pointer(types.uint16)),
        4: strided_rows(pointer(types.uint32)),
        8: strided_rows(word_at),
    }
    _STATE["kernels"] = (rows, elements)
    _STATE["runs"] = runs
    return rows, elements


@dataclass(frozen=True)
class CompiledCopy:
    """One copy as a compiled kernel runs it: `rows` (bytes) or `elements` (of `size`
    bytes), offsets and strides in those units."""

    rows: bool
    size: int  # element bytes (elements), or the run's bytes (rows)
    src: int
    dst: int
    src_offset: int
    dst_offset: int
    shape: np.ndarray[Any, Any]
    src_strides: np.ndarray[Any, Any]
    dst_strides: np.ndarray[Any, Any]


def _pieces(count: int, unit: int) -> int:
    """How many equal pieces of about _PIECE bytes to cut `count` units into (a divisor of
    count near count * unit / _PIECE; 1 where none is near or a piece would be one unit)."""
    pieces = -(-count * unit // _PIECE)
    most = 2 * pieces + 64
    while count % pieces and pieces < most:
        pieces += 1
    if count % pieces or count // pieces == 1:
        return 1
    return pieces


def _spread(
    shape: list[int], dst: list[int], src: list[int], run: int, unit: int, threads: int
) -> tuple[list[int], list[int], list[int], int]:
    """Cut the innermost run into pieces where the outer dimensions give too few to share
    (pieces of about _PIECE bytes, a whole number of `unit`s each)."""
    outer = int(np.prod(shape)) if shape else 1
    if outer >= 4 * threads or run * unit < 2 * _PIECE:
        return shape, dst, src, run
    pieces = _pieces(run, unit)
    if pieces == 1:
        return shape, dst, src, run
    piece = run // pieces
    return [*shape, pieces], [*dst, piece * unit], [*src, piece * unit], piece


def plan_copy(
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    src: int,
    src_offset: int,
    src_strides: tuple[int, ...],
    dst: int,
    dst_offset: int,
    dst_strides: tuple[int, ...],
    threads: int,
) -> CompiledCopy | None:
    """The compiled form of a numpy copy (byte offsets and byte strides; `dtype` an
    unsigned element or one void run per innermost row), or None where it has none."""
    size = dtype.itemsize
    if dtype.kind != "V" and shape and src_strides[-1] == size and dst_strides[-1] == size:
        # a contiguous innermost run on both sides: rows of bytes (one memcpy each)
        shape, size = shape[:-1], shape[-1] * size
        src_strides, dst_strides = src_strides[:-1], dst_strides[:-1]
        dtype = np.dtype(f"V{size}")
    if dtype.kind == "V":  # rows of `size` bytes over `shape`
        spread = _spread(list(shape), list(dst_strides), list(src_strides), size, 1, threads)
        sh, ds, ss, run = spread
        return CompiledCopy(
            rows=True, size=run, src=src, dst=dst, src_offset=src_offset,
            dst_offset=dst_offset, shape=np.array(sh or [1], np.int64),
            src_strides=np.array(ss or [0], np.int64), dst_strides=np.array(ds or [0], np.int64),
        )  # fmt: skip
    if size not in UNSIGNED or not shape:
        return None
    moved = [src_offset, dst_offset, *src_strides, *dst_strides]
    if any(v % size for v in moved):
        return None
    ds = [t // size for t in dst_strides]
    ss = [t // size for t in src_strides]
    sh = list(shape)
    outer = int(np.prod(sh[:-1])) if len(sh) > 1 else 1
    if outer < 4 * threads and sh[-1] * size >= 2 * _PIECE:
        # too few rows to share (a reversed whole array merges into one): cut the innermost
        # dimension into pieces of about _PIECE bytes, a divisor of it
        pieces = _pieces(sh[-1], size)
        if pieces > 1:
            piece = sh[-1] // pieces
            sh = [*sh[:-1], pieces, piece]
            ds = [*ds[:-1], piece * ds[-1], ds[-1]]
            ss = [*ss[:-1], piece * ss[-1], ss[-1]]
    return CompiledCopy(
        rows=False, size=size, src=src, dst=dst, src_offset=src_offset // size,
        dst_offset=dst_offset // size, shape=np.array(sh, np.int64),
        src_strides=np.array(ss, np.int64), dst_strides=np.array(ds, np.int64),
    )  # fmt: skip


def run_copy(copy: CompiledCopy, ins: Any, outs: Any) -> None:
    """Run one compiled copy between the bound buffers."""
    found = _kernels()
    assert found is not None
    rows, elements = found
    unit = 1 if copy.rows else copy.size
    src, dst = words(ins[copy.src], unit), words(outs[copy.dst], unit)
    with _LOCK:
        if copy.rows:
            rows(dst, src, copy.dst_offset, copy.src_offset, copy.shape, copy.dst_strides,
                 copy.src_strides, copy.size)  # fmt: skip
        else:
            elements(dst, src, copy.dst_offset, copy.src_offset, copy.shape, copy.dst_strides,
                     copy.src_strides)  # fmt: skip


_MOST_RUNS = 4096  # plans of up to this many contiguous runs go as one table: one region
# runs this long on average go as their copies' own kernels instead: the KV-cache append's
# 32 runs of 256 KiB took 83-103 µs as a table against 64 µs so on the 16-core host
# (onnxruntime 69-71 µs), 163-201 against 140-160 on the VM (benchmarks/kv_cpu_probe.py)
_LONG_RUN = 64 << 10


@dataclass(frozen=True)
class RunTable:
    """Contiguous runs of several copies (bytes), moved in one parallel region by address:
    per run its source and destination binding and byte offset, and its length."""

    src: np.ndarray[Any, Any]
    src_offset: np.ndarray[Any, Any]
    dst: np.ndarray[Any, Any]
    dst_offset: np.ndarray[Any, Any]
    count: np.ndarray[Any, Any]  # words (8 bytes where `wide`, else bytes)
    wide: bool


def run_table(copies: list[CompiledCopy]) -> RunTable | None:
    """The runs of these row copies as one table, or None where they are too many, or so
    long on average (_LONG_RUN) that each copy's own kernel moves them faster."""
    total = sum(int(np.prod(c.shape)) for c in copies)
    if not copies or any(not c.rows for c in copies) or total > _MOST_RUNS:
        return None
    if sum(int(np.prod(c.shape)) * c.size for c in copies) >= _LONG_RUN * total:
        return None
    src, src_off, dst, dst_off, count = [], [], [], [], []
    for c in copies:
        grid = np.indices(tuple(int(n) for n in c.shape)).reshape(len(c.shape), -1).T
        src_off.append(c.src_offset + grid @ c.src_strides)
        dst_off.append(c.dst_offset + grid @ c.dst_strides)
        n = len(grid)
        src.append(np.full(n, c.src, np.int64))
        dst.append(np.full(n, c.dst, np.int64))
        count.append(np.full(n, c.size, np.int64))
    table = [np.concatenate(v).astype(np.int64) for v in (src, src_off, dst, dst_off, count)]
    wide = all(int((v % 8).max(initial=0)) == 0 for v in table[1::2] + table[4:])
    if wide:
        table[4] = table[4] // 8
    return RunTable(table[0], table[1], table[2], table[3], table[4], wide)


@dataclass(frozen=True)
class RowsTable:
    """Row copies that share one outer shape (a split's or a join's parts), moved in one
    parallel region: per copy its bindings, byte offsets, byte strides and row length."""

    src: np.ndarray[Any, Any]
    src_offset: np.ndarray[Any, Any]
    dst: np.ndarray[Any, Any]
    dst_offset: np.ndarray[Any, Any]
    shape: np.ndarray[Any, Any]
    src_strides: np.ndarray[Any, Any]  # (copies, dimensions)
    dst_strides: np.ndarray[Any, Any]
    count: np.ndarray[Any, Any]  # words per row (8 bytes where `wide`, else bytes)
    wide: bool


def rows_table(copies: list[CompiledCopy]) -> RowsTable | None:
    """These row copies as one table, or None where they are fewer than two, not all rows,
    or their outer shapes differ."""
    if len(copies) < 2 or any(not c.rows for c in copies):
        return None
    shape = copies[0].shape
    if any(c.shape.shape != shape.shape or (c.shape != shape).any() for c in copies):
        return None
    arrays = [
        np.array([getattr(c, f) for c in copies], np.int64)
        for f in ("src", "src_offset", "dst", "dst_offset", "size")
    ]
    src_strides = np.stack([c.src_strides for c in copies]).astype(np.int64)
    dst_strides = np.stack([c.dst_strides for c in copies]).astype(np.int64)
    moved = [arrays[1], arrays[3], arrays[4], src_strides, dst_strides]
    wide = all(int((v % 8).max(initial=0)) == 0 for v in moved)
    count = arrays[4] // 8 if wide else arrays[4]
    return RowsTable(arrays[0], arrays[1], arrays[2], arrays[3], shape.astype(np.int64),
                     src_strides, dst_strides, count, wide)  # fmt: skip


_MOST_ROWS = 1 << 16  # element copies of up to this many rows in all go as one table


@dataclass(frozen=True)
class StridedTable:
    """The rows (innermost dimensions) of several element copies of one element size, moved
    in one parallel region by address: per row its source and destination binding and byte
    offset, its element count and its steps in elements."""

    size: int
    src: np.ndarray[Any, Any]
    src_offset: np.ndarray[Any, Any]
    dst: np.ndarray[Any, Any]
    dst_offset: np.ndarray[Any, Any]
    count: np.ndarray[Any, Any]
    src_step: np.ndarray[Any, Any]
    dst_step: np.ndarray[Any, Any]


def strided_table(copies: list[CompiledCopy]) -> StridedTable | None:
    """The rows of these element copies as one table, or None where some copy moves rows
    of bytes, their element sizes differ, or the rows are too many."""
    if not copies or any(c.rows for c in copies) or len({c.size for c in copies}) != 1:
        return None
    total = sum(int(np.prod(c.shape[:-1])) for c in copies)
    if total > _MOST_ROWS:
        return None
    size = copies[0].size
    parts: list[list[np.ndarray[Any, Any]]] = [[] for _ in range(7)]
    for c in copies:
        outer = tuple(int(n) for n in c.shape[:-1]) or (1,)
        grid = np.indices(outer).reshape(len(outer), -1).T
        src_strides = c.src_strides[:-1] if len(c.shape) > 1 else np.zeros(1, np.int64)
        dst_strides = c.dst_strides[:-1] if len(c.shape) > 1 else np.zeros(1, np.int64)
        n = len(grid)
        for k, v in enumerate(
            (
                np.full(n, c.src),
                (c.src_offset + grid @ src_strides) * size,
                np.full(n, c.dst),
                (c.dst_offset + grid @ dst_strides) * size,
                np.full(n, c.shape[-1]),
                np.full(n, c.src_strides[-1]),
                np.full(n, c.dst_strides[-1]),
            )
        ):
            parts[k].append(np.asarray(v, np.int64))
    return StridedTable(size, *(np.concatenate(p) for p in parts))


def run_runs(table: RunTable | RowsTable | StridedTable, ins: Any, outs: Any) -> bool:
    """Move the table's runs (rows, strided rows) between the bound buffers (their base
    addresses read now); False, with nothing moved, where a wide table meets a buffer not
    8-byte aligned."""
    _kernels()
    src_base = np.array([np.asarray(b).ctypes.data for b in ins], np.int64)
    dst_base = np.array([np.asarray(b).ctypes.data for b in outs], np.int64)
    if isinstance(table, StridedTable):
        with _LOCK:
            _STATE["strided"][table.size](
                dst_base, src_base, table.dst, table.dst_offset, table.src, table.src_offset,
                table.count, table.dst_step, table.src_step,
            )  # fmt: skip
        return True
    src = src_base[table.src] + table.src_offset
    dst = dst_base[table.dst] + table.dst_offset
    if table.wide and ((src_base % 8).any() or (dst_base % 8).any()):
        return False
    if isinstance(table, RowsTable):
        with _LOCK:
            _STATE["rows_multi"](
                dst, src, table.shape, table.dst_strides, table.src_strides, table.count,
                table.wide,
            )  # fmt: skip
        return True
    with _LOCK:
        _STATE["runs"](dst, src, table.count, table.wide)
    return True
