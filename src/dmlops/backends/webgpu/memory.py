"""WebGPU memory: arrays suballocated from large arena buffers, and host transfers.

An arena is one storage buffer; arrays up to a quarter of its size are first-fit blocks
in it (256-byte aligned), larger ones get a buffer of their own, which goes back to a
bounded pool when the array is dropped, so the next array of its (rounded) size takes it
instead of a new buffer (a new buffer costs its allocation and WebGPU's zeroing of every
byte). Many arrays thus share a buffer, which lets one dispatch read or write all of them
(WGSL has no pointers, and a dispatch binds a handful of buffers). Each buffer carries a
synthetic base address, far from every other buffer's, so the overlap checks can compare
byte ranges. Arrays are not zeroed: `empty` holds whatever its memory held.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from ... import _forking
from ...errors import DmlError

__all__ = ["Memory", "WebGpuArray", "Flat", "Block"]

ALIGN = 256
POOL_BYTES = 1 << 30  # dropped buffers of their own kept for reuse, at most this many bytes
_ADDRESS_SPACING = 1 << 40
_bases = itertools.count(1)


@dataclass(frozen=True)
class Flat:
    """A byte range of a GPU buffer: what the webgpu backend binds."""

    buffer: Any  # wgpu.GPUBuffer
    base: int  # synthetic address of the buffer's byte 0
    offset: int  # bytes from the buffer's start
    size: int


class Block:
    """`nbytes` bytes at `offset` in `buffer`, returned to its memory when dropped."""

    __slots__ = ("base", "buffer", "memory", "nbytes", "offset")

    def __init__(self, memory: Memory, buffer: Any, base: int, offset: int, nbytes: int) -> None:
        self.memory = memory
        self.buffer = buffer
        self.base = base
        self.offset = offset
        self.nbytes = nbytes

    def __del__(self) -> None:
        try:  # noqa: SIM105 - a try costs less than contextlib.suppress on this path
            self.memory.release(self.buffer, self.offset, self.nbytes, self.base)
        except Exception:  # noqa: BLE001 - at interpreter exit the device may be gone
            pass


class _Arena:
    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.base = next(_bases) * _ADDRESS_SPACING
        self.free: list[tuple[int, int]] = [(0, int(buffer.size))]  # (offset, size), sorted

    def take(self, nbytes: int) -> int | None:
        for i, (offset, size) in enumerate(self.free):
            if size >= nbytes:
                rest = size - nbytes
                if rest:
                    self.free[i] = (offset + nbytes, rest)
                else:
                    del self.free[i]
                return offset
        return None

    def give(self, offset: int, nbytes: int) -> None:
        i = bisect.bisect(self.free, (offset, 0))
        self.free.insert(i, (offset, nbytes))
        if i + 1 < len(self.free) and offset + nbytes == self.free[i + 1][0]:
            self.free[i] = (offset, nbytes + self.free.pop(i + 1)[1])
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == offset:
            prev = self.free.pop(i - 1)
            self.free[i - 1] = (prev[0], prev[1] + self.free[i - 1][1])


class Memory:
    """Allocates arrays on one wgpu device."""

    def __init__(self, device: Any, usage: int, arena_bytes: int, max_binding: int) -> None:
        self.device = device
        self.usage = usage
        self.arena_bytes = arena_bytes
        self.max_binding = max_binding
        self.arenas: dict[int, _Arena] = {}
        self.lock = _forking.lock()
        # buffers of their own, dropped, by size: (buffer, base), oldest first
        self.pool: dict[int, list[tuple[Any, int]]] = {}
        self.pooled_bytes = 0
        # called before buffers are destroyed (the backend submits work that may use them)
        self.before_destroy: Callable[[], None] | None = None

    def allocate(self, nbytes: int) -> Block:
        """A block of at least `nbytes` bytes (a multiple of 4, at least 4)."""
        size = max(4, -(-nbytes // ALIGN) * ALIGN)
        if size > self.max_binding:
            raise DmlError(
                f"webgpu: an array of {nbytes} bytes exceeds the adapter's largest storage "
                f"binding ({self.max_binding} bytes)"
            )
        if size > self.arena_bytes // 4:
            size = min(_rounded(size), self.max_binding)
            with self.lock:
                kept = self.pool.get(size)
                if kept:
                    buffer, base = kept.pop(0)
                    self.pooled_bytes -= size
                    return Block(self, buffer, base, 0, size)
            buffer = self.device.create_buffer(size=size, usage=self.usage)
            return Block(self, buffer, next(_bases) * _ADDRESS_SPACING, 0, size)
        with self.lock:
            for arena in self.arenas.values():
                offset = arena.take(size)
                if offset is not None:
                    return Block(self, arena.buffer, arena.base, offset, size)
            arena = _Arena(self.device.create_buffer(size=self.arena_bytes, usage=self.usage))
            self.arenas[id(arena.buffer)] = arena
            offset = arena.take(size)
            assert offset is not None
            return Block(self, arena.buffer, arena.base, offset, size)

    def release(self, buffer: Any, offset: int, nbytes: int, base: int = 0) -> None:
        """Return a block: into its arena, or its own buffer into the pool (the pool's
        oldest buffers destroyed to keep it under POOL_BYTES)."""
        doomed = []
        with self.lock:
            arena = self.arenas.get(id(buffer))
            if arena is not None and arena.buffer is buffer:
                arena.give(offset, nbytes)
                return
            if nbytes <= POOL_BYTES:
                self.pool.setdefault(nbytes, []).append((buffer, base))
                self.pooled_bytes += nbytes
                while self.pooled_bytes > POOL_BYTES:
                    size = next(k for k, v in self.pool.items() if v)
                    doomed.append(self.pool[size].pop(0)[0])
                    self.pooled_bytes -= size
            else:
                doomed.append(buffer)
        self._destroy(doomed)

    def trim(self) -> None:
        """Destroy every pooled buffer."""
        with self.lock:
            doomed = [b for kept in self.pool.values() for b, _ in kept]
            self.pool.clear()
            self.pooled_bytes = 0
        self._destroy(doomed)

    def _destroy(self, doomed: list[Any]) -> None:
        if doomed and self.before_destroy is not None:
            self.before_destroy()
        for gone in doomed:
            gone.destroy()


def _rounded(nbytes: int) -> int:
    """A size of its own buffer: up to the next eighth of a power of two (at most 12.5 %
    more), so arrays of nearby sizes share pooled buffers."""
    step = max(ALIGN, (1 << max(0, nbytes.bit_length() - 1)) // 8)
    return -(-nbytes // step) * step


def _packed(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(1, n)
    return tuple(reversed(strides))


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """numpy's C-contiguity: packed strides wherever a dimension has more than one element."""
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 0:
            return True
        if n != 1 and s != step:
            return False
        step *= n
    return True


_BASIC = (int, np.integer, slice, type(Ellipsis), type(None))


class WebGpuArray:
    """An array in WebGPU memory (`dmlops.webgpu.asarray`, `.numpy()`).

    Basic indexing (integers, slices with any step, `...`, `None`) gives views that share
    the memory, as numpy's do; the operators read and write such views in place.
    """

    __dmlops_backend__ = "webgpu"

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: Any,
        block: Block,
        backend: Any,
        offset: int = 0,
        strides: tuple[int, ...] | None = None,
    ) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.block = block
        self.offset = offset  # bytes from the block's start to index 0
        self.strides = _packed(self.shape, self.dtype.itemsize) if strides is None else strides
        self._backend = backend

    ndim = property(lambda self: len(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    size = property(lambda self: math.prod(self.shape))
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    @property
    def flags(self) -> SimpleNamespace:
        item = self.itemsize
        c = _contiguous(self.shape, self.strides, item)
        f = _contiguous(self.shape[::-1], self.strides[::-1], item)
        return SimpleNamespace(c_contiguous=c, f_contiguous=f, writeable=True)

    def __getitem__(self, key: Any) -> WebGpuArray:
        keys = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, _BASIC) and not isinstance(k, bool) for k in keys):
            raise TypeError("WebGpuArray takes basic indexing only: integers, slices, ..., None")
        # index a zero-copy stand-in of the same layout; only its address arithmetic is used
        stand_in = np.lib.stride_tricks.as_strided(
            np.zeros(1, self.dtype), self.shape, self.strides, writeable=False
        )
        view = stand_in[key]
        if not isinstance(view, np.ndarray):  # an element: numpy gives a scalar, not a view
            whole = (*keys, Ellipsis)
            view = stand_in[whole]
        moved = view.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
        return WebGpuArray(
            view.shape, self.dtype, self.block, self._backend, self.offset + moved, view.strides
        )

    @property
    def T(self) -> WebGpuArray:
        """The transposed view (dimensions reversed)."""
        return WebGpuArray(
            self.shape[::-1], self.dtype, self.block, self._backend, self.offset, self.strides[::-1]
        )

    def transpose(self, *axes: Any) -> WebGpuArray:
        """The view with dimensions permuted by `axes` (reversed when none are given)."""
        order = list(axes[0]) if len(axes) == 1 and not isinstance(axes[0], int) else list(axes)
        if not order:
            order = list(range(self.ndim))[::-1]
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"axes {order} are not a permutation of the {self.ndim} dimensions")
        return WebGpuArray(
            tuple(self.shape[a] for a in order),
            self.dtype,
            self.block,
            self._backend,
            self.offset,
            tuple(self.strides[a] for a in order),
        )

    def reshape(self, *shape: Any) -> WebGpuArray:
        """A view of a C-contiguous array with another shape (one -1 allowed)."""
        dims = [
            int(n)
            for n in (shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
        ]
        if -1 in dims:
            known = math.prod(n for n in dims if n != -1)
            dims[dims.index(-1)] = self.size // known if known else 0
        if math.prod(dims) != self.size:
            raise ValueError(
                f"cannot reshape an array of size {self.size} into shape {tuple(dims)}"
            )
        if not self.flags.c_contiguous:
            raise ValueError("WebGpuArray.reshape needs a C-contiguous array")
        return WebGpuArray(tuple(dims), self.dtype, self.block, self._backend, self.offset)

    def numpy(self) -> np.ndarray[Any, Any]:
        """The array's contents in a new numpy array (waits for queued work)."""
        return self._backend.download(self)  # type: ignore[no-any-return]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"WebGpuArray(shape={self.shape}, dtype={self.dtype})"
