"""The numba kernels of compiled_indexed.py (imported only when a plan first runs one, as
importing numba costs a fraction of a second). Module-level functions, so that numba's
cache on disk keeps them between processes (closures that call each other are not cached).
"""

# mypy: disable-error-code="no-untyped-def"

from __future__ import annotations

import numba
import numpy as np

__all__ = ["copy_run", "locate", "move", "run"]

# meta (built by compiled_indexed.CompiledIndexed): a head of _HEAD words, then per outer
# dimension (size, source and destination strides in elements, index stride in bytes), then
# per indexed axis (size, stride in elements on the indexed side), then the reversed
# dimension (-1 for none); offsets in elements, the index's in bytes
_RANK, _AXES, _ROW, _SCATTER, _INDEX_BYTES, _SIGNED, _NEGATIVE, _MODE = range(8)
_TUPLE, _SRC, _DST, _INDEX, _ROW_SRC, _ROW_DST = range(8, 14)
_HEAD = 14
# _MODE: 0 an index out of range is an error, 1 its row is skipped, 2 it is clamped (WebNN)
_SKIP = -(2**63)  # a place: the row is not written (an index out of range, skipped)
_FAIL = _SKIP + 1  # an index out of range that is an error


@numba.njit(nogil=True, cache=True, inline="always")
def read(idx, at, nbytes, signed):
    # the index at byte `at` (little-endian); a 64-bit unsigned one past int64's
    # top reads negative: the caller treats that as out of range. (Unsigned positions: no
    # wraparound test per byte, so the byte loads combine into one.)
    u = np.uint64(at)
    v = (
        np.int64(idx[u])
        | (np.int64(idx[u + np.uint64(1)]) << 8)
        | (np.int64(idx[u + np.uint64(2)]) << 16)
        | (np.int64(idx[u + np.uint64(3)]) << 24)
    )
    if nbytes == 8:
        v |= (
            (np.int64(idx[u + np.uint64(4)]) << 32)
            | (np.int64(idx[u + np.uint64(5)]) << 40)
            | (np.int64(idx[u + np.uint64(6)]) << 48)
            | (np.int64(idx[u + np.uint64(7)]) << 56)
        )
    elif signed and v >= 2**31:
        v -= 2**32
    return v


@numba.njit(nogil=True, cache=True, inline="always")
def place(idx, x, p, mode, signed, negative, scatter, reverse, size, stride, nbytes):
    # the shift along one indexed axis of the row whose index is at byte x (p: its
    # position along the reversed dimension): _SKIP for a skipped row, _FAIL for an
    # index out of range (shifts may be negative: negative strides)
    v = read(idx, x, nbytes, signed)
    huge = not signed and v < 0
    if reverse >= 0:  # a length L, clamped into [0, size]
        length = size if huge or v > size else max(v, 0)
        return (length - 1 - p if p < length else p) * stride
    if mode == 2:  # clamped first (WebNN)
        low = -size if negative else 0
        if huge or v >= size:
            v = size - 1
            huge = False
        elif v < low:
            v = low
    if negative and signed and v < 0:
        v += size
    if huge or v < 0 or v >= size:
        if mode != 1:
            return _FAIL
        if scatter:
            return _SKIP
        v = 0  # (a gather's skipped row reads the first)
    return v * stride


@numba.njit(nogil=True, cache=True)
def locate(meta, idx, places):
    # places[m]: the shift of row m on the indexed side, _SKIP for a skipped row;
    # returns False where an index is out of range (nothing written)
    rank = meta[_RANK]
    axes = meta[_AXES]
    nbytes = meta[_INDEX_BYTES]
    signed = meta[_SIGNED] != 0
    negative = meta[_NEGATIVE] != 0
    scatter = meta[_SCATTER] != 0
    mode = meta[_MODE]
    tuple_step = meta[_TUPLE]
    reverse = meta[meta.size - 1]
    base = _HEAD + 4 * rank
    size0 = meta[base]
    stride0 = meta[base + 1]
    last = _HEAD + 4 * (rank - 1)
    inner = meta[last]  # the last dimension: a plain loop, an odometer over the rest
    step = meta[last + 3]
    inner_reversed = reverse == rank - 1
    at = np.zeros(rank, np.int64)
    x = meta[_INDEX]
    m = 0
    count = places.size
    plain = axes == 1 and reverse < 0 and mode == 0  # the common case: a loop of its own
    wrap = negative and signed
    while m < count:
        if plain and nbytes == 8:  # (a loop per index size: each one's reads combine)
            for i in range(inner):
                v = read(idx, x + i * step, 8, signed)
                if wrap and v < 0:
                    v += size0
                if v < 0 or v >= size0:  # (a 64-bit unsigned one past int64's top reads < 0)
                    return False
                places[m + i] = v * stride0
            inner_done = True
        elif plain:
            for i in range(inner):
                v = read(idx, x + i * step, 4, signed)
                if wrap and v < 0:
                    v += size0
                if v < 0 or v >= size0:
                    return False
                places[m + i] = v * stride0
            inner_done = True
        else:
            inner_done = False
        p = at[reverse] if reverse >= 0 else 0
        for i in range(0 if inner_done else inner):
            xi = x + i * step
            q = i if inner_reversed else p
            found = place(idx, xi, q, mode, signed, negative, scatter, reverse, size0,
                          stride0, nbytes)  # fmt: skip
            t = 1
            while t < axes and found > _FAIL:
                more = place(idx, xi + t * tuple_step, q, mode, signed, negative,
                             scatter, reverse, meta[base + 2 * t],
                             meta[base + 2 * t + 1], nbytes)  # fmt: skip
                found = more if more <= _FAIL else found + more
                t += 1
            if found == _FAIL:
                return False
            places[m + i] = found
        m += inner
        k = rank - 2  # the next run of the last dimension
        while k >= 0:
            at[k] += 1
            x += meta[_HEAD + 4 * k + 3]
            if at[k] < meta[_HEAD + 4 * k]:
                break
            x -= at[k] * meta[_HEAD + 4 * k + 3]
            at[k] = 0
            k -= 1
    return True


@numba.njit(nogil=True, cache=True, inline="always")
def _row(src, dst, a, b, n, step_a, step_b):
    # n elements from src[a], step_a apart, to dst[b], step_b apart (unsigned positions:
    # no wraparound test per element; unit steps a loop of their own, which vectorises)
    if step_a == 1 and step_b == 1:
        for j in range(n):
            dst[np.uint64(b + j)] = src[np.uint64(a + j)]
    else:
        for j in range(n):
            dst[np.uint64(b + j * step_b)] = src[np.uint64(a + j * step_a)]


@numba.njit(nogil=True, cache=True)
def move(meta, src, dst, places):
    # every row, in index order (src and dst: arrays of the element's own size)
    rank = meta[_RANK]
    row = meta[_ROW]
    scatter = meta[_SCATTER] != 0
    rs = meta[_ROW_SRC]
    rd = meta[_ROW_DST]
    last = _HEAD + 4 * (rank - 1)
    inner = meta[last]
    step_s = meta[last + 1]
    step_d = meta[last + 2]
    at = np.zeros(rank, np.int64)
    s = meta[_SRC]
    d = meta[_DST]
    m = 0
    count = places.size
    while m < count:
        for i in range(inner):
            shift = places[np.uint64(m + i)]
            if shift == _SKIP:
                continue
            a = s + i * step_s
            b = d + i * step_d
            if scatter:
                b += shift
            else:
                a += shift
            if row == 1:
                dst[np.uint64(b)] = src[np.uint64(a)]
            else:
                _row(src, dst, a, b, row, rs, rd)
        m += inner
        k = rank - 2  # the next run of the last dimension
        while k >= 0:
            at[k] += 1
            s += meta[_HEAD + 4 * k + 1]
            d += meta[_HEAD + 4 * k + 2]
            if at[k] < meta[_HEAD + 4 * k]:
                break
            s -= at[k] * meta[_HEAD + 4 * k + 1]
            d -= at[k] * meta[_HEAD + 4 * k + 2]
            at[k] = 0
            k -= 1


@numba.njit(nogil=True, cache=True)
def run(meta, src, dst, idx, count):
    places = np.empty(count, np.int64)
    if not locate(meta, idx, places):
        return False
    move(meta, src, dst, places)
    return True


@numba.njit(nogil=True, cache=True)
def strided(copy, src, dst):
    # one strided copy: copy = [rank, source offset, destination offset, then per dimension
    # its size, source stride and destination stride], all in elements; the last dimension
    # a plain loop, an odometer over the rest
    rank = copy[0]
    s = copy[1]
    d = copy[2]
    last = 3 + 3 * (rank - 1)
    inner = copy[last]
    step_s = copy[last + 1]
    step_d = copy[last + 2]
    for k in range(rank):
        if copy[3 + 3 * k] == 0:
            return
    at = np.zeros(rank, np.int64)
    while True:
        _row(src, dst, s, d, inner, step_s, step_d)
        k = rank - 2
        while k >= 0:
            at[k] += 1
            s += copy[3 + 3 * k + 1]
            d += copy[3 + 3 * k + 2]
            if at[k] < copy[3 + 3 * k]:
                break
            s -= at[k] * copy[3 + 3 * k + 1]
            d -= at[k] * copy[3 + 3 * k + 2]
            at[k] = 0
            k -= 1
        if k < 0:
            return


@numba.njit(nogil=True, cache=True)
def copy_run(table, copy_src, src, dst, idx, count):
    # every index checked, then the plan's one strided copy (into the rows' output), then
    # the rows: False (nothing written) where an index is out of range. table = [n, the
    # copy's n words, then the meta table] (one array argument where two were)
    n = table[0]
    meta = table[1 + n :]
    places = np.empty(count, np.int64)
    if not locate(meta, idx, places):
        return False
    strided(table[1 : 1 + n], copy_src, dst)
    move(meta, src, dst, places)
    return True
