"""Indexed copies (indexed.py) on numpy: the index values read through a strided view,
checked and turned into element offsets before anything is written, then rows moved with
numpy.take (gathers) or fancy assignment (scatters)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import IndexOutOfRangeError
from ..indexed import IndexedCopy, rows_of
from .words import UNSIGNED


def _elements(buffer: Any, dtype: Any) -> np.ndarray[Any, Any]:
    """A bound buffer (an array of any dtype, or bytes) as a flat array of `dtype`."""
    nbytes = buffer.nbytes if isinstance(buffer, np.ndarray) else len(buffer)
    flat: np.ndarray[Any, Any] = np.ndarray((nbytes // np.dtype(dtype).itemsize,), dtype, buffer)
    return flat


_FEW = 64  # scattered row counts checked as a Python list


def _view(
    buffer: Any, shape: tuple[int, ...], dtype: Any, offset: int, strides: tuple[int, ...]
) -> np.ndarray[Any, Any]:
    """A strided view of a bound buffer: the array itself where it already is that view."""
    if not offset and type(buffer) is np.ndarray and buffer.dtype == dtype:
        if buffer.shape == shape and buffer.strides == strides:
            same: np.ndarray[Any, Any] = buffer
            return same
        # a whole C-ordered buffer seen in another shape: a reshape, where its strides agree
        if buffer.flags.c_contiguous and buffer.size == math.prod(shape):
            reshaped: np.ndarray[Any, Any] = buffer.reshape(shape)
            if reshaped.strides == strides:
                return reshaped
    view: np.ndarray[Any, Any] = np.ndarray(
        shape, dtype, _elements(buffer, np.uint8), offset, strides
    )
    return view


def _kind(src: Any, dst: Any, size: int) -> Any:
    """The dtype to move elements of `size` bytes between two buffers with: their own where
    they share one of that size (no views to make), else unsigned words."""
    dtype = getattr(src, "dtype", None)
    if dtype is not None and dtype == getattr(dst, "dtype", None) and dtype.itemsize == size:
        return dtype
    return UNSIGNED[size]


def affine(shape: tuple[int, ...], strides: tuple[int, ...], base: int) -> Any:
    """base + sum(c * strides) over `shape`, as a broadcastable array (not materialised)."""
    out: Any = np.int64(base)
    for d, (n, s) in enumerate(zip(shape, strides, strict=True)):
        if s and n > 1:
            axis = [1] * len(shape)
            axis[d] = n
            out = out + (np.arange(n, dtype=np.int64) * s).reshape(axis)
    return out


_SET = 256  # offsets up to which repeats are found by a Python set
_STAMPED = 1 << 16  # destinations up to which repeats are found by flags, not by sorting
_FLAGS_A_ROW = 64  # ... or up to this many a row (a byte a flag)
_MOST_FLAGS = 1 << 26  # ... and at most this many in all (64 MiB)


_SCRATCH = threading.local()
_SCRATCH_MOST = 1 << 20  # elements of a thread's reused buffers (8 MiB of offsets at most)


def _scratch(name: str, count: int, dtype: Any) -> np.ndarray[Any, Any] | None:
    """`count` elements of this thread's reused buffer `name` (None past _SCRATCH_MOST).
    Where the allocator returns freed memory at once (dask's workers set
    MALLOC_TRIM_THRESHOLD_), a new temporary of a megabyte costs its page faults on every
    call: a [256, 512] gather_elements chunk 1.5 ms in a worker against 0.26 outside one."""
    if count > _SCRATCH_MOST:
        return None
    buffer: np.ndarray[Any, Any] | None = getattr(_SCRATCH, name, None)
    if buffer is None or buffer.size < count:
        buffer = np.empty(max(count, 1 << 12), dtype)
        setattr(_SCRATCH, name, buffer)
    return buffer[:count]


def _distinct(starts: np.ndarray[Any, Any]) -> bool:
    """Whether no two of these element offsets are equal."""
    if len(starts) <= _SET:
        return len(set(starts.tolist())) == len(starts)
    if bool((starts[1:] > starts[:-1]).all()):
        return True  # (rising, as a scatter's rows in order mostly are: one pass)
    low, high = int(starts.min()), int(starts.max())
    if high - low >= max(_STAMPED, min(_FLAGS_A_ROW * len(starts), _MOST_FLAGS)):
        ordered = np.sort(starts)  # (numpy's hashing unique: 6 x slower on 2**17 offsets)
        return not bool((ordered[1:] == ordered[:-1]).any())
    # each offset raises its own flag: a repeat raises one flag fewer (a byte a position:
    # 2**17 offsets over a range of 2**20 in 0.23 ms, where stamping them as intp took 2)
    span = high - low + 1
    positions = starts  # (flags from 0 where that at most doubles them: no shifted copy)
    if low > span:
        room = _scratch("shifted", len(starts), np.intp)
        positions = starts - low if room is None else np.subtract(starts, low, out=room)
        high -= low
    flags = _scratch("flags", high + 1, np.bool_)
    if flags is None:
        flags = np.zeros(high + 1, np.bool_)
    else:
        flags[...] = False
    flags[positions] = True
    return int(np.count_nonzero(flags)) == len(starts)


class _OffsetTable:
    """An indexed copy's index values turned into element offsets along its one indexed
    axis by one numpy.take of a table: an index in range, counted from the end where it is
    negative and may be, finds its offset; one outside finds the clamped one (WebNN),
    `MISSING` (a skipped row) or, where neither, makes the lookup decline so that `prepare`'s
    full path names it."""

    MISSING = np.iinfo(np.intp).min
    # the longest axis given a table (2n + 2 offsets: 4 MiB here); a longer one, as
    # MAX_UNPOOLING's whole output, computes its offsets (a table of its 8.4M positions took
    # 0.8 s and 134 MB to build on a fresh signature)
    LONGEST = 1 << 18

    def __init__(self, copy: IndexedCopy) -> None:
        axis = copy.axes[0]
        n, stride = axis.size, axis.stride
        signed = copy.index_type.numpy_dtype.kind == "i"
        along = np.arange(n, dtype=np.intp) * stride
        strict = not (copy.clamp or copy.skip_out_of_range)
        # strict, with negatives counted from the end: numpy.take(mode="raise") is the check
        self.direct = along if strict and (copy.negative_indices or not signed) else None
        if self.direct is not None and not signed:
            self.direct = None if copy.index_type.name == "UINT64" else along
        # else values shifted by n + 1 and clipped: [below -n, -n .. -1, 0 .. n-1, n and up]
        low = along[0] if copy.clamp else self.MISSING
        high = along[-1] if copy.clamp else self.MISSING
        negatives = along if copy.negative_indices and signed else np.full(n, low, np.intp)
        self.table = np.concatenate([[low], negatives, along, [high]]).astype(np.intp)
        self.shift = n + 1
        self.size = n
        self.clamp = copy.clamp
        self.skip = copy.skip_out_of_range and not copy.clamp

    @classmethod
    def of(cls, copy: IndexedCopy) -> _OffsetTable | None:
        """The table of a copy indexed along one axis of at most LONGEST positions by an index
        type numpy reads exactly (clamped 64-bit unsigned values would wrap: they keep the
        full path); None else."""
        if len(copy.axes) != 1 or copy.reverse_dim >= 0 or copy.axes[0].size == 0:
            return None
        if copy.axes[0].size > cls.LONGEST:
            return None
        if copy.clamp and copy.index_type.name == "UINT64":
            return None
        return cls(copy)

    def look_up(self, raw: np.ndarray[Any, Any], into: Any = None) -> tuple[Any, Any] | None:
        """(element offsets, rows kept or None for all) of these index values; None where
        an index is out of range and must be named. `into`: a flat intp buffer of raw's
        size the offsets may be written to."""
        if self.direct is not None:
            if into is not None and raw.size:
                if int(raw.min()) < -self.size or int(raw.max()) >= self.size:
                    return None
                found = into.reshape(raw.shape)
                np.take(self.direct, raw, out=found, mode="wrap")  # (checked: no buffering)
                return found, None
            try:
                return self.direct.take(raw), None
            except IndexError:
                return None
        wide = raw.astype(np.intp) if raw.dtype != np.intp else raw
        if self.clamp:  # (a value near the type's top would wrap past the shift)
            wide = np.minimum(wide, self.size)
        found = self.table.take(wide + self.shift, mode="clip")
        if self.clamp:
            return found, None  # every row written
        missing = found == self.MISSING
        if not missing.any():
            return found, None
        if not self.skip:
            return None
        return np.where(missing, 0, found), ~missing


class _Reversal:
    """A reversing copy's offsets along its reversed axis by one numpy.take of a table whose
    row L holds, per position p, where p reads from for length L (mode "clip" clamps L into
    [0, size]), for axes short enough that the (size + 1) x size table stays small."""

    LARGEST = 256

    def __init__(self, copy: IndexedCopy, outer: tuple[int, ...], index_strides: Any) -> None:
        axis = copy.axes[0]
        n, dim = axis.size, copy.reverse_dim
        length = np.arange(n + 1, dtype=np.intp)[:, None]
        p = np.arange(n, dtype=np.intp)
        self.table = np.where(p < length, length - 1 - p, p) * axis.stride
        lengths = list(outer)
        lengths[dim] = 1  # (the index does not move along the reversed dimension)
        self.view = (tuple(lengths), copy.index_type.numpy_dtype, copy.index_offset,
                     tuple(index_strides))  # fmt: skip
        self.wide = copy.index_type.name == "UINT64"  # (numpy takes no uint64 positions)
        self.dim = dim
        self.size = n

    @classmethod
    def of(cls, copy: IndexedCopy, outer: tuple[int, ...], index_strides: Any) -> _Reversal | None:
        if copy.reverse_dim < 0 or copy.axes[0].size > cls.LARGEST:
            return None
        return cls(copy, outer, index_strides)

    def along(self, index: Any) -> Any:
        """The offsets along the reversed axis, shaped as the outer rows."""
        shape, dtype, offset, strides = self.view
        raw = _view(index, shape, dtype, offset, strides)
        if self.wide:
            raw = np.minimum(raw, self.size).astype(np.intp)
        found = self.table.take(raw, 0, mode="clip")  # (..., 1 at dim, ..., n)
        return found.swapaxes(self.dim, -1)[..., 0]


class _LongReversal:
    """A reversal along a dimension longer than _Reversal's tables: each line along it moved
    as two numpy views (its first L positions reversed, the rest as they are), a few
    microseconds a line where an offset a position cost about ten nanoseconds each (a
    [256, 4096] float32 REVERSE_SUBSEQUENCES on the VM: 9 ms of offsets and a take)."""

    def __init__(self, step: IndexedStep) -> None:
        c = step.copy
        size = step.size
        self.dim = c.reverse_dim
        self.size = c.axes[0].size
        shape, offset, strides = step.plain_view
        src_strides = [s * size for s in c.src_strides[: step.cut]]
        src_strides[self.dim] += c.axes[0].stride * size
        src_strides.append(step.row_strides[0] * size)
        self.views = (shape, c.src_offset, tuple(src_strides), offset, strides)
        lengths = list(step.outer)
        lengths[self.dim] = 1
        self.lengths = (tuple(lengths), c.index_type.numpy_dtype, c.index_offset,
                        step.index_strides)  # fmt: skip
        self.kind = UNSIGNED[size]
        self.copy = c

    def run(self, ins: Any, outs: Any) -> None:
        """Move every line."""
        c = self.copy
        shape, src_offset, src_strides, dst_offset, dst_strides = self.views
        src = np.ndarray(shape, self.kind, _elements(ins[c.src], np.uint8), src_offset,
                         src_strides)  # fmt: skip
        dst = np.ndarray(shape, self.kind, _elements(outs[c.dst], np.uint8), dst_offset,
                         dst_strides)  # fmt: skip
        raw = _view(ins[c.index], *self.lengths)
        if raw.dtype.kind == "u":
            lengths = np.minimum(raw, self.size).astype(np.intp)
        else:
            lengths = np.clip(raw.astype(np.intp), 0, self.size)
        lengths = np.moveaxis(lengths, self.dim, -1)[..., 0]
        src, dst = np.moveaxis(src, self.dim, -2), np.moveaxis(dst, self.dim, -2)
        n = self.size
        for line in np.ndindex(lengths.shape):
            length = int(lengths[line])
            s, d = src[line], dst[line]
            if length:
                d[:length] = s[length - 1 :: -1] if length > 1 else s[:1]
            if length < n:
                d[length:] = s[length:]


class IndexedStep:
    """One indexed copy, ready to run on bound buffers: `prepare` reads the indices and
    checks them (raising before any write), `run` moves the elements."""

    def __init__(self, copy: IndexedCopy, element_size: int) -> None:
        self.copy = copy
        self.size = element_size
        rows = rows_of(copy)
        self.row = rows.length
        self.outer = rows.outer
        cut = len(self.outer)
        self.cut = cut
        self.row_strides = rows.strides
        plain_strides = copy.dst_strides if not copy.scatter else copy.src_strides
        plain_offset = copy.dst_offset if not copy.scatter else copy.src_offset
        # the side the index does not move, as a strided view of (outer..., row)
        row_stride = self.row_strides[1] if not copy.scatter else self.row_strides[0]
        self.plain_view = (
            (*self.outer, self.row),
            plain_offset,
            (*(s * element_size for s in plain_strides[:cut]), row_stride * element_size),
        )
        self._ordered: Any = None  # the C engine's ordered scatter, or False: asked once
        moving_strides = copy.src_strides if not copy.scatter else copy.dst_strides
        moving_offset = copy.src_offset if not copy.scatter else copy.dst_offset
        self.moving = affine(self.outer, moving_strides[:cut], moving_offset // element_size)
        # a gather whose every row starts at a multiple of the row length, rows contiguous
        starts = [copy.src_offset // element_size, *copy.src_strides[:cut]]
        starts += [a.stride for a in copy.axes]
        self.tiled = (
            not copy.scatter
            and self.row > 1
            and self.row_strides[0] == 1
            and all(v % self.row == 0 for v in starts)
        )
        isize = copy.index_element_size
        self.index_strides = tuple(s * isize for s in copy.index_strides[:cut])
        self.take_recipe = self._take_recipe()
        self.put_recipe = self._put_recipe()
        self.offsets = _OffsetTable.of(copy)
        # the plan's one indexed step: its offsets may live in the thread's reused buffer
        # between prepare and run (set by the executor)
        self.solo = False
        # a reversal's positions along its reversed dimension, shaped to broadcast
        self.positions: Any = None
        self.reversal = _Reversal.of(copy, self.outer, self.index_strides)
        self.long_reversal = (
            _LongReversal(self)
            if copy.reverse_dim >= 0 and self.reversal is None and not copy.scatter
            else None
        )
        if copy.reverse_dim >= 0:
            at = [1] * len(self.outer)
            at[copy.reverse_dim] = self.outer[copy.reverse_dim]
            self.positions = np.arange(at[copy.reverse_dim], dtype=np.intp).reshape(at)

    def _table(self, scatter: bool) -> tuple[tuple[int, ...], int, tuple[int, ...]] | None:
        """For a gather (or scatter) of whole rows along one axis whose indexed side moves by
        the index alone, with DirectML's negative indices and an index type numpy reads
        exactly: that side as a (axis size, row) table view; else None."""
        c = self.copy
        moving = c.dst_strides if scatter else c.src_strides
        if (
            c.scatter != scatter
            or len(c.axes) != 1
            or c.reverse_dim >= 0
            or c.clamp
            or c.skip_out_of_range
            or not c.negative_indices
            or c.index_type.name == "UINT64"
            or any(moving[: self.cut])
            or c.src < 0
        ):
            return None
        axis = c.axes[0]
        offset = c.dst_offset if scatter else c.src_offset
        row_stride = self.row_strides[1] if scatter else self.row_strides[0]
        return (axis.size, self.row), offset, (axis.stride * self.size, row_stride * self.size)

    def _put_recipe(self) -> tuple[Any, ...] | None:
        """A scatter's destination table, index type, offset and axis size (or None)."""
        table = self._table(scatter=True)
        if table is None:
            return None
        c = self.copy
        return table, c.index_type.numpy_dtype, c.index_offset, c.axes[0].size

    def put_index(self, ins: Any) -> Any:
        """The scatter's row numbers where every index is in range and no two rows meet (the
        check, before anything is written); None otherwise."""
        assert self.put_recipe is not None
        _, itype, ioffset, size = self.put_recipe
        index = _view(ins[self.copy.index], self.outer, itype, ioffset, self.index_strides)
        index = index.ravel()
        if index.size == 0:
            return index
        if index.size <= _FEW:  # as Python ints: cheaper than arrays
            values = index.tolist()
            low = min(values)
            if low < -size or max(values) >= size:
                return None
            if low < 0:
                values = [v + size if v < 0 else v for v in values]
                index = np.array(values, np.int64)
            return index if len(set(values)) == len(values) else None
        low, high = int(index.min()), int(index.max())
        if low < -size or high >= size:
            return None
        if low < 0:
            index = np.where(index < 0, index + size, index)
        return index if _distinct(index) else None

    def put_rows(self, ins: Any, outs: Any, index: Any) -> None:
        """The fancy assignment of `put_index`'s rows."""
        if index.size == 0:
            return
        assert self.put_recipe is not None
        (shape, offset, strides), _, _, _ = self.put_recipe
        c = self.copy
        src, dst = ins[c.src], outs[c.dst]
        kind = _kind(src, dst, self.size)
        u_shape, u_offset, u_strides = self.plain_view
        rows = _view(src, u_shape, kind, u_offset, u_strides)
        if len(u_shape) != 2:
            rows = rows.reshape(-1, self.row)
        _view(dst, shape, kind, offset, strides)[index] = rows

    def _take_recipe(self) -> tuple[Any, ...] | None:
        """A gather's source table, index type and offset (or None)."""
        table = self._table(scatter=False)
        if table is None:
            return None
        return table, self.copy.index_type.numpy_dtype, self.copy.index_offset

    def take(self, ins: Any, outs: Any) -> bool:
        """Run a gather as one numpy.take, its indices checked by numpy before it writes;
        False (nothing written) where an index is out of range: `prepare` then says which."""
        assert self.take_recipe is not None
        (shape, offset, strides), itype, ioffset = self.take_recipe
        c = self.copy
        src, dst = ins[c.src], outs[c.dst]
        kind = _kind(src, dst, self.size)
        o_shape, o_offset, o_strides = self.plain_view
        try:  # out is buffered where mode is "raise": an IndexError leaves it untouched
            _view(src, shape, kind, offset, strides).take(
                _view(ins[c.index], self.outer, itype, ioffset, self.index_strides),
                0,
                _view(dst, o_shape, kind, o_offset, o_strides),
                "raise",
            )
        except IndexError:
            return False
        return True

    def taker(
        self, dtype: np.dtype[Any], output_span: tuple[int, int]
    ) -> Callable[[Any], np.ndarray[Any, Any]] | None:
        """The gather as a new (outer..., row) array of `dtype` (numpy's own type of the
        element's size), where the plain side is the whole output row-major: one numpy.take
        of the source's table view (whole rows) or of its elements at the prepared offsets
        (single elements); None otherwise. An out-of-range index raises before anything is
        made."""
        c = self.copy
        if c.scatter or dtype.itemsize != self.size or self.long_reversal is not None:
            return None
        o_shape, o_offset, o_strides = self.plain_view
        packed, step = [], self.size
        for n in reversed(o_shape):
            packed.append(step)
            step *= n
        if o_offset or tuple(reversed(packed)) != o_strides or output_span != (0, step):
            return None
        src, index, outer, index_strides = c.src, c.index, self.outer, self.index_strides
        if self.take_recipe is None:
            if self.row != 1 and not self.tiled:
                return None
            prepare, row = self.prepare, self.row

            def elements(ins: Any) -> np.ndarray[Any, Any]:
                moved, _ = prepare(ins)  # (a bad index raises here, named)
                made: np.ndarray[Any, Any] = _elements(ins[src], dtype).take(moved)
                return made

            def rows(ins: Any) -> np.ndarray[Any, Any]:
                moved, _ = prepare(ins)  # (a bad index raises here, named)
                flat = _elements(ins[src], dtype)
                table = flat[: len(flat) // row * row].reshape(-1, row)
                made: np.ndarray[Any, Any] = table.take(moved // row, 0)
                return made

            return elements if row == 1 else rows
        (shape, offset, strides), itype, ioffset = self.take_recipe

        def make(ins: Any) -> np.ndarray[Any, Any]:
            table = _view(ins[src], shape, dtype, offset, strides)
            made: np.ndarray[Any, Any] = table.take(
                _view(ins[index], outer, itype, ioffset, index_strides), 0
            )
            return made

        return make

    def _index_values(self, ins: Any, t: int) -> np.ndarray[Any, Any]:
        c = self.copy
        dtype = c.index_type.numpy_dtype
        flat = _elements(ins[c.index], np.uint8)
        offset = c.index_offset + t * c.tuple_stride * dtype.itemsize
        view: np.ndarray[Any, Any] = np.ndarray(self.outer, dtype, flat, offset, self.index_strides)
        return view

    def prepare(self, ins: Any) -> tuple[Any, Any]:
        """(element offsets on the indexed side, rows kept) of every row written."""
        c = self.copy
        if self.offsets is not None:
            raw = _view(ins[c.index], self.outer, c.index_type.numpy_dtype, c.index_offset,
                        self.index_strides)  # fmt: skip
            into = _scratch("offsets", raw.size, np.intp) if self.solo else None
            looked = self.offsets.look_up(raw, into)
            if looked is not None:
                along, keep = looked
                if along.shape == self.outer and along.dtype == self.moving.dtype:
                    # (in place: a new array of offsets costs its page faults where the
                    # allocator returns freed memory at once, as in dask's workers)
                    moved = np.add(along, self.moving, out=along)
                else:
                    moved = self.moving + along
                if not c.scatter:
                    return moved, None
                return self._winners(moved, None if keep is None else np.flatnonzero(keep))
        if self.reversal is not None:
            return self.moving + self.reversal.along(ins[c.index]), None
        if self.long_reversal is not None:
            return None, None  # (lengths are clamped: nothing to check; run reads them)
        moved = self.moving
        keep = None
        for t, axis in enumerate(c.axes):
            raw = self._index_values(ins, t)
            if raw.size == 0:
                continue
            if c.reverse_dim >= 0:  # a length: position p reads L - 1 - p below it
                if raw.dtype.kind == "u":  # (numpy's ufuncs: np.clip's checks cost more)
                    length = np.minimum(raw, axis.size).astype(np.intp)
                else:
                    length = np.minimum(np.maximum(raw.astype(np.intp), 0), axis.size)
                p = self.positions
                moved = moved + np.where(p < length, length - 1 - p, p) * axis.stride
                continue
            if c.clamp and raw.dtype.kind == "u":  # (as int64 a 64-bit one could wrap)
                raw = np.minimum(raw, axis.size - 1).astype(np.int64)
            elif c.clamp:
                low_bound = -axis.size if c.negative_indices else 0
                raw = np.clip(raw.astype(np.int64), low_bound, axis.size - 1)
            low, high = raw.min(), raw.max()
            if low >= 0 and high < axis.size:  # the common case: every index in range
                moved = moved + raw.astype(np.int64, copy=False) * axis.stride
                continue
            if raw.dtype.kind == "u":
                bad = raw >= axis.size
                k = np.minimum(raw, axis.size).astype(np.int64)
            else:
                k = raw.astype(np.int64)
                if c.negative_indices:
                    k[k < 0] += axis.size
                bad = (k < 0) | (k >= axis.size)
            if bad.any():
                if not c.skip_out_of_range:
                    first = np.unravel_index(int(np.argmax(bad)), bad.shape)
                    at = sum(i * s for i, s in zip(first, c.index_strides, strict=False))
                    low = -axis.size if c.negative_indices else 0
                    raise IndexOutOfRangeError(
                        f"{c.label}: the index at element {at + t * c.tuple_stride} is "
                        f"{int(raw[first])}, outside [{low}, {axis.size}) (nothing was written)"
                    )
                keep = ~bad if keep is None else keep & ~bad
                k = np.where(bad, 0, k)
            moved = moved + k * axis.stride
        if not c.axes or np.ndim(moved) != len(self.outer):
            moved = np.broadcast_to(moved, self.outer)
        if not c.scatter:
            return moved, None
        return self._winners(moved, None if keep is None else np.flatnonzero(keep))

    def _ordered_scatter(self) -> Any:
        """The C engine's scatter in index order (where it is built and a row's destination
        steps forwards), else None: rows written in order need no search for repeated
        destinations, since the later row simply writes last. The updates are read in the
        copy's row-major order, which is the index order (`rows_of`), whatever their strides
        (a column slice of a chunk, as dask hands a task, is copied into one run first)."""
        found = self._ordered
        if found is None:
            from .cpu_engine import native

            module = native()
            usable = self.row == 1 or self.row_strides[1] >= 0
            found = module.scatter if module is not None and usable else False
            self._ordered = found
        return found or None

    def _winners(self, moved: Any, chosen: Any) -> tuple[Any, Any]:
        """A scatter's rows kept: of rows to one destination, the later in index order."""
        if not self.copy.slot_count or self._ordered_scatter() is not None:
            return moved, chosen
        starts = moved.reshape(-1)
        if chosen is not None:
            starts = starts[chosen]
        if len(starts) <= 1 or _distinct(starts):
            return moved, chosen
        _, last = np.unique(starts[::-1], return_index=True)
        winners = np.sort(len(starts) - 1 - last)
        return moved, winners if chosen is None else chosen[winners]

    def run(self, ins: Any, outs: Any, prepared: tuple[Any, Any]) -> None:
        """Move the prepared rows."""
        c = self.copy
        if self.long_reversal is not None:
            self.long_reversal.run(ins, outs)
            return
        kind = UNSIGNED[self.size]
        moved, chosen = prepared
        shape, offset, strides = self.plain_view
        if not c.scatter:
            s = _elements(ins[c.src], kind)
            out = np.ndarray(shape, kind, _elements(outs[c.dst], np.uint8), offset, strides)
            if self.row == 1:
                np.take(s, moved, out=out[..., 0], mode="clip")
            elif self.tiled:  # rows of the source tile it: a 2-D table, row numbers
                table = s[: len(s) // self.row * self.row].reshape(-1, self.row)
                np.take(table, moved // self.row, axis=0, out=out, mode="clip")
            else:
                rows = as_strided(
                    s,
                    (len(s), self.row),
                    (self.size, self.row_strides[0] * self.size),
                    writeable=False,
                )
                out[...] = rows[moved]
            return
        d = _elements(outs[c.dst], kind)
        src = np.ndarray(shape, kind, _elements(ins[c.src], np.uint8), offset, strides)
        src = src.reshape(-1, self.row)
        targets = moved.reshape(-1)
        if chosen is not None:
            src, targets = src[chosen], targets[chosen]
        ordered = self._ordered_scatter()
        if ordered is not None:
            step = self.row_strides[1] if self.row > 1 else 1
            at = np.ascontiguousarray(targets, np.intp)
            ordered(d, at, np.ascontiguousarray(src), self.size, self.row, step)
            return
        if self.row == 1:
            d[targets] = src[:, 0]
        else:
            rows = as_strided(d, (len(d), self.row), (self.size, self.row_strides[1] * self.size))
            rows[targets] = src
