"""A converting plan (CAST's: `Plan.conversion`) on host byte buffers: each copy's source
elements read as the source type, converted by CAST's rules (`dmlops.conversion`), written
as the destination type. The numpy backend runs it on its buffers; the WebGPU backend on
the bytes it reads back (and writes again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..conversion import convert, convert_into, scaled
from ..plan import Plan
from ..tensor import packed_strides
from . import cpu_engine

__all__ = ["HostConversion", "strided_view"]


def strided_view(
    flat: Any,
    offset: int,
    strides: Sequence[int],
    shape: Sequence[int],
    dtype: np.dtype[Any],
) -> np.ndarray[Any, Any]:
    """The elements of `dtype` at byte `offset` of a bound buffer (anything exposing its
    bytes), `strides` in elements."""
    byte_strides = tuple(int(s) * dtype.itemsize for s in strides)
    view: np.ndarray[Any, Any] = np.ndarray(tuple(shape), dtype, flat, offset, byte_strides)
    return view


_FLOAT64, _FLOAT32, _FLOAT16 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)


# the pairs the CPU engine converts: (its function's name, the destination's word type)
_ON_THE_ENGINE = {
    (_FLOAT32, _FLOAT16): ("halves", np.uint16),
    (_FLOAT16, _FLOAT32): ("floats", np.uint32),
    (_FLOAT64, _FLOAT16): ("halves_of_doubles", np.uint16),
}


def _converted_into(values: np.ndarray[Any, Any], dst: np.ndarray[Any, Any], threads: int) -> None:
    """`convert_into`, float32 or float64 to float16 and float16 to float32 by the CPU engine
    where it runs, on up to
    `threads` threads (numpy's narrowing takes ~70 ns an element whose result overflows or
    is subnormal or zero: a cast of small activations 280 ms for 4M elements, the engine's
    1 ms; its widening 7 ms, the engine's under 1), strided views through contiguous
    temporaries."""
    engine = _ON_THE_ENGINE.get((values.dtype, dst.dtype))
    if engine is None or not cpu_engine.available():
        convert_into(values, dst)
        return
    name, words = engine
    source = values if values.flags.c_contiguous else np.ascontiguousarray(values)
    made = dst if dst.flags.c_contiguous else np.empty(dst.shape, dst.dtype)
    getattr(cpu_engine.native(), name)(source, made.view(words), True, threads)
    if made is not dst:
        dst[...] = made


def _one_run(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a copy's side walks its elements as one contiguous run (row-major; a
    dimension of one element may have any stride)."""
    packed = packed_strides(shape)
    return all(n == 1 or t == p for n, t, p in zip(shape, strides, packed, strict=True))


class HostConversion:
    """A converting plan over host byte buffers (numpy uint8 arrays, one per binding)."""

    def __init__(self, plan: Plan, threads: Callable[[], int] | None = None) -> None:
        """`threads`: how many threads a call may use now (the backend's count), else one."""
        assert plan.conversion is not None
        self.plan = plan
        self.threads = threads
        self.source = np.dtype(plan.conversion[0])
        self.target = np.dtype(plan.conversion[1])
        # a lone copy of one whole run on each side that the engine converts (a CAST of a
        # contiguous array): its runs' (offset, bytes) and the engine's function, read once
        self.run: tuple[int, int, int, str, Any] | None = None
        engine = _ON_THE_ENGINE.get((self.source, self.target))
        (c, *more) = plan.copies if plan.copies else (None,)
        if engine is not None and c is not None and not more and plan.scale_bias is None:
            count = int(np.prod(c.shape, dtype=np.int64))
            if _one_run(c.shape, c.src_strides) and _one_run(c.shape, c.dst_strides):
                self.run = (count, c.src_offset, c.dst_offset, *engine)

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any], queue: Any = None) -> None:
        """Convert every copy: all reads first, then the writes (an output may be its input)."""
        plan, source, target = self.plan, self.source, self.target
        threads = 1 if self.threads is None else self.threads()
        run = self.run
        if run is not None and cpu_engine.available():
            # (each side's run in memory order, whatever the bound array's own order)
            count, src_at, dst_at, name, words = run
            c = plan.copies[0]
            src = np.ndarray((count,), source, ins[c.src], src_at)
            dst = np.ndarray((count,), words, outs[c.dst], dst_at)
            if not np.may_share_memory(src, dst):  # (else: every read first, below)
                getattr(cpu_engine.native(), name)(src, dst, True, threads)
                return
        if plan.scale_bias is not None:  # ELEMENT_WISE_IDENTITY's: every read, then writes
            scale, bias = plan.scale_bias
            made = [
                scaled(
                    strided_view(ins[c.src], c.src_offset, c.src_strides, c.shape, source),
                    scale,
                    bias,
                )
                for c in plan.copies
            ]
            for c, values in zip(plan.copies, made, strict=True):
                dst = strided_view(outs[c.dst], c.dst_offset, c.dst_strides, c.shape, target)
                _converted_into(values, dst, threads)
            return
        pairs = [
            (
                strided_view(ins[c.src], c.src_offset, c.src_strides, c.shape, source),
                strided_view(outs[c.dst], c.dst_offset, c.dst_strides, c.shape, target),
            )
            for c in plan.copies
        ]
        if not any(np.may_share_memory(d, s) for _, d in pairs for s, _ in pairs):
            for values, dst in pairs:  # straight into the outputs
                _converted_into(values, dst, threads)
            return
        made = [convert(values, target) for values, _ in pairs]  # every read first
        for (_, dst), values in zip(pairs, made, strict=True):
            dst[...] = values

    def bound(self, ins: Sequence[Any], outs: Sequence[Any]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)
