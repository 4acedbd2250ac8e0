"""CPU backend: numpy strided views, large copies split over a thread pool."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..errors import BindingError
from ..plan import Plan, StridedCopy, array_byte_span

__all__ = ["NumpyBackend"]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_PARALLEL_BYTES = 4 << 20


class _Span:
    """Exposes a raw memory range to numpy through the array interface, keeping its owner alive."""

    def __init__(self, owner: Any, address: int, nbytes: int, readonly: bool) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (address, readonly),
            "version": 3,
        }


def strided_view(
    flat: np.ndarray[Any, Any], copy: StridedCopy, side: str, element_size: int
) -> np.ndarray[Any, Any]:
    """The numpy view of one side ('src' or 'dst') of a strided copy."""
    offset = copy.src_offset if side == "src" else copy.dst_offset
    strides = copy.src_strides if side == "src" else copy.dst_strides
    view: np.ndarray[Any, Any] = np.ndarray(
        copy.shape,
        dtype=_UNSIGNED[element_size],
        buffer=flat,
        offset=offset,
        strides=tuple(s * element_size for s in strides),
    )
    return view


class NumpyBackend:
    """Executes plans with np.copyto between strided views of the bound buffers."""

    name = "numpy"
    _instance: NumpyBackend | None = None

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def instance(cls) -> NumpyBackend:
        """The shared backend object."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def as_array(self, obj: Any) -> np.ndarray[Any, Any]:
        return np.asarray(obj)

    def is_writable(self, arr: Any) -> bool:
        return bool(arr.flags.writeable)

    def byte_view(self, obj: Any, writable: bool) -> np.ndarray[Any, Any]:
        if isinstance(obj, np.ndarray):
            if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
                raise BindingError(
                    "a bound buffer must be contiguous memory; pass strided arrays through "
                    "the functional API, or describe the layout with tensor strides"
                )
            if writable and not obj.flags.writeable:
                raise BindingError("an output buffer is read-only")
            return obj.reshape(-1, order="A").view(np.uint8)
        try:
            mv = memoryview(obj)
        except TypeError:
            raise BindingError(
                f"{type(obj).__name__} is not a buffer: bind a numpy array, bytearray or other "
                "buffer-protocol object"
            ) from None
        if not mv.contiguous:
            raise BindingError("a bound buffer must be contiguous memory")
        if writable and mv.readonly:
            raise BindingError("an output buffer is read-only")
        return (
            np.frombuffer(mv.cast("B"), dtype=np.uint8) if mv.readonly else np.asarray(mv.cast("B"))
        )

    def array_span(self, arr: Any) -> tuple[np.ndarray[Any, Any], int]:
        a = np.asarray(arr)
        itemsize = a.itemsize
        low, nbytes = array_byte_span(a.shape, a.strides, itemsize)
        address = a.__array_interface__["data"][0]
        readonly = not a.flags.writeable
        flat = np.asarray(_Span(a, address + low, nbytes, readonly))
        return flat, -low // itemsize

    def like(self, result: Any, template: Any) -> Any:
        return result

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
        return np.empty(shape, dtype=dtype)

    def _chunks(
        self, dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], parts: int
    ) -> list[tuple[Any, Any]]:
        axis = int(np.argmax(dst.shape))
        n = dst.shape[axis]
        parts = min(parts, n)
        bounds = [n * i // parts for i in range(parts + 1)]
        index = [slice(None)] * dst.ndim
        out = []
        for a, b in itertools.pairwise(bounds):
            index[axis] = slice(a, b)
            out.append((dst[tuple(index)], src[tuple(index)]))
        return out

    def bind(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> Callable[[], None]:
        es = plan.element_size
        pairs = [
            (strided_view(outputs[c.dst], c, "dst", es), strided_view(inputs[c.src], c, "src", es))
            for c in plan.copies
        ]
        if (
            self.threads == 1
            or plan.bytes_written < _PARALLEL_BYTES
            or any(np.may_share_memory(d, s) for d, s in pairs)
        ):

            def run_serial() -> None:
                for dst, src in pairs:
                    np.copyto(dst, src)

            return run_serial
        work: list[tuple[Any, Any]] = []
        per_thread = max(plan.bytes_written // self.threads, 1)
        for dst, src in pairs:
            parts = max(1, round(dst.nbytes / per_thread))
            work.extend(self._chunks(dst, src, parts) if parts > 1 else [(dst, src)])
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="dmlops")
        pool = self._pool

        def run_parallel() -> None:
            list(pool.map(lambda p: np.copyto(p[0], p[1]), work))

        return run_parallel

    def execute(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> None:
        self.bind(plan, inputs, outputs)()
