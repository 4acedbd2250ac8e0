"""CAST's converting copies on CUDA: one launch of `kernels/convert.cu` a copy (the type
pair, and ScaleBias where the plan has one, fixed when it is compiled), each copy's box
coalesced and passed by value, on the call's stream. The launches of a tuple of bound
addresses are packed once; a plan whose outputs share bytes with its inputs converts every
copy into scratch memory first, then moves the bits into place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...plan import Plan, coalesce
from . import kernels
from .launch import in_any_thread, launch_kernel, pack_arguments, scratch
from .streams import Queue

__all__ = [
    "CudaConversion",
    "TYPE_CODES",
    "box_walk",
    "dense_strides",
    "pack_arguments",
]

TYPE_CODES = {
    "float16": 0, "float32": 1, "float64": 2, "int8": 3, "uint8": 4, "int16": 5,
    "uint16": 6, "int32": 7, "uint32": 8, "int64": 9, "uint64": 10,
}  # fmt: skip
"""convert.cu's codes of the element types CAST converts between."""
_ITEMSIZE = {code: np.dtype(name).itemsize for name, code in TYPE_CODES.items()}

_THREADS = 256
_MOST_BLOCKS = 65535 * 8
_RANK = 8  # the kernels' box holds this many dimensions


def box_walk(shape: Sequence[int], *strides: Sequence[int]) -> np.ndarray[Any, Any]:
    """A kernel's `Box` by value (int64 words): the element count, the shape and each
    side's strides padded to eight dimensions; last, the rank and whether every index and
    offset is below 2^31 (two int32s)."""
    rank = len(shape)
    assert 1 <= rank <= _RANK
    count = int(np.prod(shape, dtype=np.int64))
    reach = max(sum(abs((n - 1) * s) for n, s in zip(shape, side, strict=True)) for side in strides)
    words = [count]
    for values in (shape, *strides):
        words += [int(v) for v in values] + [0] * (_RANK - rank)
    narrow = int(count < 2**31 and reach < 2**31)
    tail = np.array([rank, narrow], np.int32).view(np.int64)
    return np.concatenate([np.array(words, np.int64), tail])


def tiles_of(shape: Sequence[int]) -> int:
    """convert.cu's tiles of a box: each row's last dimension in pieces of 128."""
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return rows * -(-int(shape[-1]) // 128)


def _boxes(
    shape: Sequence[int], src: Sequence[int], dst: Sequence[int], src_at: int, dst_at: int
) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]]:
    """A copy's coalesced box (offsets in elements), cut along its leading dimensions
    where it still has more than the kernel's eight."""
    shape, src, dst, src_at, dst_at = coalesce(shape, src, dst, src_at, dst_at)
    if len(shape) <= _RANK:
        return [(shape, src, dst, src_at, dst_at)]
    return [
        box
        for k in range(shape[0])
        for box in _boxes(shape[1:], src[1:], dst[1:], src_at + k * src[0], dst_at + k * dst[0])
    ]


def dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements of a packed array of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= int(n)
    return tuple(reversed(strides))


class CudaConversion:
    """A converting plan on device addresses."""

    def __init__(self, backend: Any, plan: Plan) -> None:
        assert plan.conversion is not None
        self.backend = backend
        self.plan = plan
        self.source = np.dtype(plan.conversion[0])
        self.target = np.dtype(plan.conversion[1])
        scale_bias = plan.scale_bias
        mode: tuple[tuple[str, int], ...] = (("MODE", 0),)
        if scale_bias is not None:
            scale, bias = (int(np.array(v, np.float32).view(np.int32)) for v in scale_bias)
            mode = (("MODE", 1), ("SCALE", scale), ("BIAS", bias))
        x, y = TYPE_CODES[self.source.name], TYPE_CODES[self.target.name]
        self.converting = (("XT", x), ("YT", y), *mode)
        self.moving = (("XT", y), ("YT", y), ("MODE", 2))
        # each binding's launches, with the memory their argument arrays live in (held by
        # whichever thread launches them, so a binding dropped meanwhile stays valid)
        self.bound_launches: dict[tuple[int, ...], tuple[list[tuple[int, int, int]], Any]] = {}

    def _function(self, defines: tuple[tuple[str, int], ...]) -> int:
        return kernels.handle(self.backend.cupy.cuda.runtime, "convert", defines)

    @in_any_thread
    def __call__(self, ins: Sequence[int], outs: Sequence[int], queue: Queue | None = None) -> None:
        backend = self.backend
        device, stream = backend.default_queue() if queue is None else queue
        key = (device, *ins, *outs)
        with backend._on(device):
            ready = self.bound_launches.get(key)
            if ready is None:
                if not self._apart(ins, outs):
                    self._through_scratch(ins, outs, stream)
                    return
                keep: list[Any] = []
                ready = (self._launches(ins, outs, self.converting, keep), keep)
                if len(self.bound_launches) >= 64:  # (a few bindings kept)
                    self.bound_launches = {}
                self.bound_launches[key] = ready
            go = launch_kernel
            for function, grid, params in ready[0]:
                go(function, grid, 1, 1, _THREADS, 1, 1, 0, stream, params, 0)

    def _apart(self, ins: Sequence[int], outs: Sequence[int]) -> bool:
        """Whether no output byte lies among the input bytes."""
        plan = self.plan
        return not any(
            ins[i] + lo < outs[o] + hi2 and outs[o] + lo2 < ins[i] + hi
            for i, (lo, hi) in enumerate(plan.input_spans)
            for o, (lo2, hi2) in enumerate(plan.output_spans)
        )

    def _launches(
        self,
        ins: Sequence[int],
        outs: Sequence[int],
        defines: tuple[tuple[str, int], ...],
        keep: list[Any],
        copies: Sequence[Any] | None = None,
    ) -> list[tuple[int, int, int]]:
        """(function, grid, argument array) of each box of the copies."""
        function = self._function(defines)
        named = dict(defines)
        xs, ys = _ITEMSIZE[named["XT"]], _ITEMSIZE[named["YT"]]
        launches = []
        for c in self.plan.copies if copies is None else copies:
            if not c.element_count:
                continue
            boxes = _boxes(c.shape, c.src_strides, c.dst_strides, 0, 0)
            for shape, src, dst, src_at, dst_at in boxes:
                walk = box_walk(shape, src, dst)
                base_src = np.uint64(ins[c.src] + c.src_offset + src_at * xs)
                base_dst = np.uint64(outs[c.dst] + c.dst_offset + dst_at * ys)
                params = pack_arguments(keep, walk, base_src, base_dst)
                blocks = -(-tiles_of(shape) * 32 // _THREADS)  # (a warp a tile)
                launches.append((function, max(1, min(_MOST_BLOCKS, blocks)), params))
        return launches

    def _through_scratch(self, ins: Sequence[int], outs: Sequence[int], stream: int) -> None:
        """Every copy converted into packed scratch memory, then moved into place (the
        outputs share bytes with the inputs: every read comes first)."""
        plan, ys = self.plan, self.target.itemsize
        cp = self.backend.cupy
        starts, size = [], 0
        for c in plan.copies:
            starts.append(size)
            size += -(-c.element_count * ys // 16) * 16
        memory = scratch(cp, max(size, 16), stream)
        base = int(memory.data.ptr)
        packed, back = [], []
        for c, at in zip(plan.copies, starts, strict=True):
            dense = dense_strides(c.shape)
            packed.append(type(c)(c.src, c.src_offset, c.src_strides, 0, at, dense, c.shape))
            back.append(type(c)(0, at, dense, c.dst, c.dst_offset, c.dst_strides, c.shape))
        keep: list[Any] = []
        launches = self._launches(ins, [base], self.converting, keep, packed)
        launches += self._launches([base], outs, self.moving, keep, back)
        for function, grid, params in launches:
            launch_kernel(function, grid, 1, 1, _THREADS, 1, 1, 0, stream, params, 0)
        del memory  # (freed in the stream's order: the launches above come first)

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs, queue)
