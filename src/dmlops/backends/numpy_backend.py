"""CPU backend: numpy strided views; large plans on the CPU engine (cpu_engine/), or split
over a thread pool where it is not built."""

from __future__ import annotations

import functools
import itertools
import math
import os
import sys
import weakref
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..elements import numpy_to_torch, torch_to_numpy
from ..errors import BindingError
from ..plan import Plan, StridedCopy
from . import cpu_engine, library_keys
from .array_api import host_view, in_namespace_of
from .base import made_once, no_queue
from .compacting import HostCompaction
from .compiled_indexed import CompiledIndexed
from .converting import HostConversion
from .native_indexed import NativeIndexed
from .numpy_indexed import IndexedStep
from .numpy_map import ElementMap
from .numpy_runs import SideBySide
from .words import UNSIGNED

__all__ = ["NumpyBackend"]

# (where the CPU engine is not built) a thread per this many bytes written, up to the thread
# count: Python threads pay tens of microseconds to start a band, so on the 16-core host of
# the H100 machine an 8 MiB copy ran fastest on 4 threads (432 µs; one: 777 µs; sixteen:
# 1.1 ms) and 64 MiB on all 16
_BYTES_PER_THREAD = 2 << 20
_PARALLEL_BYTES = 2 * _BYTES_PER_THREAD
_MIN_CHUNK = 256 << 10
_WARM_RUNS = 3  # runs of a plan with indexed copies before they are compiled
# plans whose strided copies move at least this many bytes run on the CPU engine (C, its
# pool deciding how many threads the bytes deserve); smaller ones as numpy views, whose
# shortcuts (one view pair, a concatenate, an element map) cost less to start
_ENGINE_BYTES = 64 << 10
_FRESH_BINDINGS = 16  # the engine's `fresh` binds at most this many arrays


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


_ROW_BYTES = 64  # contiguous inner runs at least this long move as one void element


@dataclass(frozen=True)
class NumpyCopy:
    """A strided copy as numpy executes it: shape, dtype and byte strides of both sides.

    Bits are never interpreted: elements are unsigned integers of the element
    size, or, where both sides' innermost dimension is contiguous and long, one
    void element per row (numpy then moves each row with one memcpy).
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    src: int
    src_offset: int
    src_strides: tuple[int, ...]
    dst: int
    dst_offset: int
    dst_strides: tuple[int, ...]

    @classmethod
    def of(cls, copy: StridedCopy, element_size: int, void_rows: bool = True) -> NumpyCopy:
        """The copy as numpy views; `void_rows=False` keeps element dtypes (numpy holds the
        GIL while it copies void elements, so threads would take turns)."""
        shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
        row = shape[-1] * element_size
        if void_rows and len(shape) > 1 and ss[-1] == 1 and ds[-1] == 1 and row >= _ROW_BYTES:
            dtype: np.dtype[Any] = np.dtype(f"V{row}")
            shape, ss, ds = shape[:-1], ss[:-1], ds[:-1]
        else:
            dtype = np.dtype(UNSIGNED[element_size])
        return cls(
            shape,
            dtype,
            copy.src,
            copy.src_offset,
            tuple(t * element_size for t in ss),
            copy.dst,
            copy.dst_offset,
            tuple(t * element_size for t in ds),
        )

    def views(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> tuple[Any, Any]:
        """(destination view, source view) over the flat buffers."""
        return (
            np.ndarray(
                self.shape, self.dtype, outputs[self.dst], self.dst_offset, self.dst_strides
            ),
            np.ndarray(self.shape, self.dtype, inputs[self.src], self.src_offset, self.src_strides),
        )


_BACKENDS: weakref.WeakSet[NumpyBackend] = weakref.WeakSet()
# the engine's Block type (memory of new outputs), or a type nothing is
_BLOCK: type = getattr(cpu_engine.native(), "Block", type(None))
try:  # (many arrays' owners and addresses read in C, where that extension was built)
    from ._numpy_api import (  # type: ignore[import-not-found]
        addresses as _ADDRESSES,
    )
    from ._numpy_api import owners as _OWNERS
except ImportError:  # pragma: no cover - (built without numpy's headers or a compiler)
    _ADDRESSES = _OWNERS = None


def _forget_pools() -> None:
    """In a child after fork(): the parent's pool threads do not exist here."""
    for backend in list(_BACKENDS):
        backend._pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


class NumpyBackend:
    """Executes plans with np.copyto between strided views of the bound buffers."""

    name = "numpy"
    one_queue = True
    _instance: NumpyBackend | None = None
    _serial: NumpyBackend | None = None

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        _BACKENDS.add(self)

    @property
    def threads(self) -> int:
        """Threads a call may use: the backend's own count, else the engine's setting
        (`dmlops.set_num_threads`, DMLOPS_NUM_THREADS, the CPUs this process may use); one
        in a scheduler's task (cpu_engine.scheduler_task)."""
        if cpu_engine.in_scheduler_task():
            return 1
        return self._threads or cpu_engine.get_num_threads()

    @classmethod
    def instance(cls) -> NumpyBackend:
        """The shared backend object (made once)."""
        return made_once(cls)

    @classmethod
    def serial(cls) -> NumpyBackend:
        """A shared backend that copies on the calling thread only (no pool; the engine's
        jobs on one thread), for callers that spread their own calls over the cores, as
        dask does."""
        found: NumpyBackend | None = getattr(cls, "_serial", None)
        if found is None:
            found = cls(threads=1)
            cls._serial = found
        return found

    def as_array(self, obj: Any) -> np.ndarray[Any, Any]:
        if type(obj).__module__.startswith("torch"):
            return torch_to_numpy(obj)  # bfloat16 and float8 too, without a copy
        return host_view(obj)  # (DLPack for another library's array numpy cannot read)

    @staticmethod
    def plain_arrays(objs: Sequence[Any]) -> list[np.ndarray[Any, Any]]:
        """Numpy views of plain CPU torch tensors in one pass of `Tensor.numpy`; raises
        TypeError or RuntimeError where one is not such a tensor (another array, a tensor
        that needs a gradient, bfloat16: `as_array` each)."""
        return list(map(sys.modules["torch"].Tensor.numpy, objs))

    def describe(self, obj: Any) -> np.ndarray[Any, Any]:
        return self.as_array(obj)

    @staticmethod
    def own(obj: Any) -> bool:
        """Whether compiled calls take `obj` as it is (a numpy array; others are bound
        through `as_array` each call)."""
        return type(obj) is np.ndarray

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        return library_keys.array_keys()  # (CPU tensors: bound through their numpy views)

    def many_array_keys(self) -> dict[type, Callable[[Sequence[Any]], list[Hashable] | None]]:
        return dict(library_keys.many_array_keys())

    def placement(self, named: Sequence[tuple[str, Any]]) -> Callable[[Any], None]:
        return no_queue

    def byte_view(self, obj: Any, writable: bool) -> tuple[np.ndarray[Any, Any], int]:
        if type(obj) is np.ndarray and obj.flags.c_contiguous:
            if writable and not obj.flags.writeable:
                raise BindingError("an output buffer is read-only")
            return obj, obj.nbytes  # its own buffer: views are made on it directly
        flat = self._bytes(obj, writable)
        return flat, int(flat.shape[0])

    def window(self, flat: Any, offset: int, size: int) -> Any:
        if offset == 0 and size == flat.nbytes:
            return flat
        return flat.reshape(-1).view(np.uint8)[offset : offset + size]

    def _bytes(self, obj: Any, writable: bool) -> np.ndarray[Any, Any]:
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

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Any] | None:
        if contiguous:
            return None  # a contiguous array's buffer starts at index 0 and holds nbytes

        def flat(arr: Any) -> Any:
            address = arr.__array_interface__["data"][0]
            return np.asarray(_Span(arr, address + low, nbytes, not arr.flags.writeable))

        module = cpu_engine.native()
        if module is None:
            return flat
        span, frombuffer, uint8 = module.span, np.frombuffer, np.uint8

        def flat_in_c(arr: Any) -> Any:  # (the start read in C: 0.25 us, not 2.3)
            try:
                return frombuffer(span(arr, low, nbytes), uint8)
            except (BufferError, TypeError, ValueError):  # (a type with no strided buffer)
                return flat(arr)

        return flat_in_c

    def owner(self, obj: Any) -> object | None:
        """The ndarray or engine block that allocated `obj`'s memory (its base chain's
        root), if one did."""
        while type(obj) is np.ndarray:
            base = obj.base
            if base is None:
                return obj if obj.flags.owndata else None
            obj = base
        return obj if type(obj) is _BLOCK else None

    def owners(self, objs: Sequence[Any]) -> list[object | None]:
        """Each array's `owner`, in one C call where that extension was built."""
        if _OWNERS is not None:
            found: list[object | None] = _OWNERS(objs, _BLOCK)
            return found
        return list(map(self.owner, objs))

    def address(self, flat: Any) -> int:
        return int(flat.__array_interface__["data"][0])

    def addresses(self, flats: Sequence[Any]) -> list[int]:
        """Each flat buffer's `address`, in one C call where that extension was built."""
        if _ADDRESSES is not None:
            found: list[int] | None = _ADDRESSES(flats)
            if found is not None:
                return found
        return list(map(self.address, flats))

    def new_like(
        self, template: Any, shape: tuple[int, ...], dtype: Any = None
    ) -> np.ndarray[Any, Any]:
        if dtype is None:
            dtype = (
                template.dtype
                if isinstance(template, np.ndarray)
                else self.as_array(template).dtype
            )
        return cpu_engine.empty(shape, dtype)

    @staticmethod
    def empty(shape: tuple[int, ...], dtype: Any, tag: int = 0) -> np.ndarray[Any, Any]:
        """A new output (large ones on memory the engine keeps mapped, the memory `tag` had
        before first)."""
        return cpu_engine.empty(shape, dtype, tag)

    @staticmethod
    def empties(
        shapes: Sequence[tuple[int, ...]], dtype: Any, tag: int = 0
    ) -> list[np.ndarray[Any, Any]]:
        """New outputs of one type (the small ones made in one pass; tags from `tag` on)."""
        return cpu_engine.empties(shapes, dtype, tag)

    def upload(self, host: Any) -> np.ndarray[Any, Any]:
        return np.asarray(host)

    def download(self, arr: Any, out: Any = None) -> np.ndarray[Any, Any]:
        if out is None:
            return np.asarray(arr)
        out[...] = arr
        return out  # type: ignore[no-any-return]

    def in_library_of(self, result: Any, template: Any) -> Any:
        """A result for a CPU torch tensor's caller as a torch tensor (sharing its memory),
        for a JAX array's as a JAX array (through DLPack where JAX takes the memory as it
        is, else a copy), for another array-API library's array as one of its arrays
        (`in_namespace_of`)."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(template, torch.Tensor):
            return numpy_to_torch(result, template.dtype)
        if isinstance(template, np.ndarray):
            return result
        if type(template).__module__.partition(".")[0] in ("jax", "jaxlib"):
            import jax

            try:
                return jax.dlpack.from_dlpack(result)
            except Exception:  # noqa: BLE001 - an alignment or type JAX refuses to share
                return jax.numpy.asarray(result)
        return in_namespace_of(result, template)

    def copy_of(self, arr: Any) -> np.ndarray[Any, Any]:
        return np.array(arr, copy=True, order="C")

    def _chunks(
        self, dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], parts: int
    ) -> list[tuple[Any, Any]]:
        """The copy cut into about `parts` bands, outermost dimensions first (each band a
        run of whole rows where there are enough rows, else of row pieces): every band
        stays long runs of memory, never narrow column strips."""
        pieces = [(dst, src)]
        for axis in range(dst.ndim):
            if len(pieces) >= parts:
                break
            want = -(-parts // len(pieces))
            cut = []
            for d, s in pieces:
                n = d.shape[axis]
                k = min(want, n)
                bounds = [n * i // k for i in range(k + 1)]
                index = [slice(None)] * d.ndim
                for a, b in itertools.pairwise(bounds):
                    index[axis] = slice(a, b)
                    cut.append((d[tuple(index)], s[tuple(index)]))
            pieces = cut
        return pieces

    def _is_parallel(self, plan: Plan) -> bool:
        """Large plans of large copies go to the pool (small copies hold the GIL)."""
        strided = sum(c.element_count for c in plan.copies) * plan.element_size
        return (
            self.threads > 1
            and bool(plan.copies)
            and strided >= _PARALLEL_BYTES
            and strided >= _MIN_CHUNK * len(plan.copies)
        )

    def executor(self, plan: Plan) -> Any:
        if plan.conversion is not None:  # CAST's converting copies
            return HostConversion(plan, lambda: self.threads)
        if plan.compactions:  # NONZERO_COORDINATES's stream compaction
            return HostCompaction(plan, lambda: self.threads)
        return _NumpyExecutor(self, plan)

    def _parallel(
        self, plan: Plan, inputs: Sequence[Any], outputs: Sequence[Any]
    ) -> Callable[[], None]:
        """Large plans: copies cut into balanced chunks on the thread pool."""
        pairs = [
            NumpyCopy.of(c, plan.element_size, void_rows=False).views(inputs, outputs)
            for c in plan.copies
        ]
        if any(np.may_share_memory(d, s) for d, s in pairs):

            def run_serial() -> None:
                for dst, src in pairs:
                    dst[...] = src

            return run_serial
        # band k of every copy forms batch k: the threads sweep the buffers in step
        bands = max(1, min(self.threads, plan.bytes_written // _BYTES_PER_THREAD))
        cut = [self._chunks(dst, src, bands) for dst, src in pairs]
        batches = [[c[k] for c in cut if k < len(c)] for k in range(max(len(c) for c in cut))]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="dmlops")
        pool = self._pool

        def copy_batch(batch: list[tuple[Any, Any]]) -> None:
            for dst, src in batch:
                dst[...] = src

        def run_parallel() -> None:
            list(pool.map(copy_batch, batches))

        return run_parallel


def _strides_in(
    shape: Sequence[int], coalesced: Sequence[int], strides: Sequence[int]
) -> tuple[int, ...] | None:
    """The source's byte strides for each dimension of a row-major output `shape` whose
    coalesced form (size-1 dimensions dropped, neighbours merged in order) is `coalesced`
    with source strides `strides`; None where `shape` does not refine it."""
    out = [0] * len(shape)
    k, inner = len(coalesced) - 1, 1
    for i in range(len(shape) - 1, -1, -1):
        n = shape[i]
        if n == 1:
            continue
        if k < 0:
            return None
        out[i] = strides[k] * inner
        inner *= n
        if inner == coalesced[k]:
            k, inner = k - 1, 1
        elif coalesced[k] % inner:
            return None
    while k >= 0 and coalesced[k] == 1:
        k -= 1
    return tuple(out) if k < 0 and inner == 1 else None


def basic_index(
    source: Any, shape: Sequence[int], dtype: Any, offset: int, strides: Sequence[int]
) -> tuple[slice, ...] | bool:
    """A tuple of slices that makes, of `source` (a numpy array), the view of `shape`,
    byte `strides` (those of size-1 dimensions aside) and `dtype` starting `offset` bytes
    into it; False where none does (another rank or type, no dimension, source strides
    not positive and decreasing, a view across them)."""
    if type(source) is not np.ndarray or source.dtype != dtype or source.ndim != len(shape):
        return False
    if not shape:  # (a 0-D source's index gives numpy's scalar, not an array)
        return False
    held = source.strides
    if any(t <= 0 for t in held) or list(held) != sorted(held, reverse=True):
        return False
    index = []
    rest = offset
    for n, step_bytes, held_stride, size in zip(shape, strides, held, source.shape, strict=True):
        start, rest = divmod(rest, held_stride)
        step, remainder = divmod(step_bytes, held_stride) if n > 1 else (1, 0)
        if remainder or step == 0 or not 0 <= start < size:
            return False
        stop = start + step * n
        index.append(slice(start, None if stop < 0 else stop, step))
    if rest:
        return False
    made = source[tuple(index)]
    moved = made.__array_interface__["data"][0] - source.__array_interface__["data"][0]
    steps = [t for n, t in zip(shape, strides, strict=True) if n > 1]  # (size 1: any stride)
    same = [t for n, t in zip(shape, made.strides, strict=True) if n > 1] == steps
    return tuple(index) if same and made.shape == tuple(shape) and moved == offset else False


def _writes_whole(recipe: tuple[Any, ...], plan: Plan) -> bool:
    """Whether a copy recipe writes all of the plan's one output, row-major from byte 0."""
    shape, dtype, _, _, _, _, do, ds = recipe
    if len(plan.output_spans) != 1 or do != 0:
        return False
    size = dtype.itemsize
    c_order = []
    for n in reversed(shape):
        c_order.append(size)
        size *= n
    return tuple(reversed(c_order)) == tuple(ds) and plan.output_spans[0] == (0, size)


def _far_apart(copies: Sequence[NumpyCopy]) -> bool:
    """Whether a lone copy of many elements steps further than a cache line between the
    neighbours of either side's innermost walk (a transpose, DEPTH_TO_SPACE's columns):
    numpy's view copy walks those an element at a time, the engine in tiles (a 16 KiB
    DEPTH_TO_SPACE 12.5 -> 5.3 us on the VM)."""
    if len(copies) != 1:
        return False
    c = copies[0]
    if c.dtype.kind == "V" or math.prod(c.shape) < _FAR_ELEMENTS or not c.shape:
        return False
    return abs(c.src_strides[-1]) > _ROW_BYTES or abs(c.dst_strides[-1]) > _ROW_BYTES


_FAR_ELEMENTS = 256
_FEW_RUNS = 8  # fewer copies than this ...
_SMALL_RUNS = 1 << 16  # ... of fewer elements than this: each its own views, no concatenate


class _NumpyExecutor:
    """A plan as numpy copies: shapes, dtypes and byte strides computed once."""

    def __init__(self, backend: NumpyBackend, plan: Plan) -> None:
        self.backend = backend
        self.plan = plan
        self.parallel = backend._is_parallel(plan)
        # one element of each fill, bound after the inputs (read with strides 0)
        self.fills = [np.frombuffer(b, np.uint8) for b in plan.fill_buffers(plan.fill_width)]
        self.copies = [NumpyCopy.of(c, plan.element_size) for c in plan.copies]
        # a plan's strided copies run on the CPU engine where it is built (the numpy views
        # stay its ordered path, for outputs that overlap inputs): a small plan on the calling
        # thread, one C call that also makes a new output or runs into a given one (`fresh`,
        # `into`), where a view pair a copy cost more even for one copy (VM: a 4 KiB tile
        # 3.1 -> 1.8 us, a 64 KiB stride-2 slice 4.4 -> 2.8, into out= 4.4 -> 2.0; a 4-way
        # join of 1 KiB 7.0 -> 3.0 over two sessions). A plan with indexed copies takes it
        # for many bytes, several copies or a copy stepping far; its lone small copy stays
        # with the rows' compiled kernel (`_compile_steps`: both in one call)
        moved = sum(c.element_count for c in plan.copies) * plan.element_size
        self.engine: cpu_engine.EnginePlan | None = None
        wanted = (
            not plan.indexed
            or moved >= _ENGINE_BYTES
            or len(plan.copies) > 1
            or _far_apart(self.copies)
        )
        if plan.copies and wanted and cpu_engine.available():
            self.engine = cpu_engine.EnginePlan.of(plan)
        self.one_thread = moved < _ENGINE_BYTES  # (no pool, no thread count read)
        if self.engine is not None:
            self.parallel = False
            # (its native run bound here: fewer frames a call)
            self._engine_run = functools.partial(cpu_engine.native().run, self.engine.table)
        self.steps = [IndexedStep(c, plan.element_size) for c in plan.indexed]
        if len(self.steps) == 1:
            self.steps[0].solo = True  # (its offsets in the thread's reused buffer)
        # small indexed copies as one compiled pass each (numba), once the plan has run
        # _WARM_RUNS times (a one-off call never imports numba)
        self.kernels: list[CompiledIndexed] | None = None
        self.one_kernel: CompiledIndexed | None = None
        self.runs_to_compile = _WARM_RUNS if plan.indexed else -1
        self.kernels_never_fail = all(
            c.clamp or c.skip_out_of_range or c.reverse_dim >= 0 for c in plan.indexed
        )
        # indexed copies on the engine (native/indexed.c): gathers on its pool, scatters in
        # index order; numpy's path and the compiled kernels where it has not them all
        self.natives = self._natives(plan)
        if self.natives is not None:
            self.runs_to_compile = -1
        # a plan that is one gather numpy.take does whole (it checks before it writes)
        lone = len(self.steps) == 1 and not self.copies and not self.fills
        self.take = self.steps[0] if lone and self.steps[0].take_recipe is not None else None
        self.gather = self.steps[0] if lone and not plan.indexed[0].scatter else None
        # a plan whose one indexed copy scatters whole rows (in place, or after the strided
        # copies of its data): its rows checked first, then the copies, then one fancy
        # assignment (repeated rows or a bad index take the general path, which names it)
        one = len(self.steps) == 1 and self.steps[0].put_recipe is not None
        self.put = self.steps[0] if one else None
        self.recipe = [
            (
                c.shape,
                c.dtype,
                c.src,
                c.src_offset,
                c.src_strides,
                c.dst,
                c.dst_offset,
                c.dst_strides,
            )
            for c in self.copies
        ]

        strided = not (self.steps or self.engine or self.parallel)  # views on this thread
        plain = strided and not self.fills
        self.one = self.recipe[0] if plain and len(self.recipe) == 1 else None
        # that copy writing the whole of a lone output in row-major order: `producer` can make
        # the output itself, a copy of the source's view
        self.whole = self.one is not None and _writes_whole(self.one, plan)
        # many copies laying contiguous runs side by side: one numpy.concatenate (not for a
        # few small ones: their own views cost less than its setup, a 2-way join of 1,088
        # elements 7.1 -> 4.9 us on the VM); else many small copies reading few bindings: a
        # table of each written element's source
        moved = sum(c.element_count for c in plan.copies)
        few = len(plan.copies) < _FEW_RUNS and moved < _SMALL_RUNS
        self.side_by_side = (
            SideBySide.of(plan.copies, plan.element_size) if plain and not few else None
        )
        self.element_map = ElementMap.of(plan) if strided and self.side_by_side is None else None
        self.shortcut = self.side_by_side or self.element_map
        if self.shortcut is not None:
            self._run = self._shortcut
        elif self.put is not None and not (self.copies or self.fills) and self.natives is None:
            # (where the engine has the scatter, its kernel: an in-place 32-row scatter 14.7
            # -> 5.1-6.1 us, 4,096 KV slots of 8 MiB 1.16-1.22 -> 0.60-0.80 ms on the VM)
            self._run = self._put_only
        elif self.engine is not None and not (self.steps or self.fills):
            self._run = self._on_engine  # (the plan as one engine call)
        elif plain:
            self._run = self._copy
        else:
            self._run = self._general
        if not plan.indexed and self.one is None:  # (run_fresh's own questions all answered)
            self.run_fresh = self._run  # type: ignore[method-assign]

    def _natives(self, plan: Plan) -> list[NativeIndexed] | None:
        """The plan's indexed copies as the engine's native kernels, where it has them all
        (from inputs, not fills), else None."""
        if not plan.indexed:
            return None
        found = [NativeIndexed.of(c, plan.element_size) for c in plan.indexed]
        return None if None in found else found  # type: ignore[return-value]

    def _native_steps(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """The plan with its indexed copies on the engine: every index checked, then the
        strided copies, then the rows; False (nothing written) where an index is out of
        range or an output meets an input (the numpy path then names the index, or runs
        them in order)."""
        assert self.natives is not None
        threads = self.backend.threads
        natives = self.natives
        if len(natives) == 1 and not self.copies and not self.fills:
            return natives[0].run(ins, outs, threads) is True  # (checks, then moves)
        if self.fills:
            ins = [*ins, *self.fills]
        if any(n.meets(ins, outs) for n in natives):
            return False
        if not self.kernels_never_fail and not all(n.check(ins, outs, threads) for n in natives):
            return False
        self._copy(ins, outs)
        for n in natives:
            n.run(ins, outs, threads, False)
        return True

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any], queue: Any = None) -> None:
        if self.one is not None:  # the commonest plan, in this frame
            shape, dtype, si, so, ss, di, do, ds = self.one
            view = np.ndarray
            view(shape, dtype, outs[di], do, ds)[...] = view(shape, dtype, ins[si], so, ss)
            return
        self._run(ins, outs)

    def producer(
        self, shape: tuple[int, ...], dtype: np.dtype[Any] | None
    ) -> Callable[[Sequence[Any]], np.ndarray[Any, Any]] | None:
        """The plan's lone output of `shape` made as a new row-major array of the source's
        numeric type `dtype` (its bits copied: one view of the source in the output's own
        shape, copied), or None where the plan is not one whole-output copy or the type is
        not numpy's own numeric one. The call's signature fixes the type, so every check
        is made here, once. A small plan on the engine makes its output and runs in one C
        call (`_engine_producer`)."""
        if dtype is None:
            return None
        if self.engine is not None:
            return self._engine_producer(shape, dtype)
        if dtype.kind not in "biufc":
            return None
        if self.gather is not None:
            return self._taker(shape, dtype)
        if not self.whole:
            return None
        coalesced, word, si, so, ss = self.one[:5]  # type: ignore[index]
        if word.kind == "V" and word.itemsize % dtype.itemsize == 0:
            # (whole rows as one void element each: the row's elements again, contiguous)
            coalesced = (*coalesced, word.itemsize // dtype.itemsize)
            ss = (*ss, dtype.itemsize)
        elif dtype.itemsize != word.itemsize:
            return None
        strides = _strides_in(shape, coalesced, ss)
        if strides is None:
            return None
        view = np.ndarray
        # the view as a basic index of the source (numpy's slicing makes it in less time
        # than the view's constructor), found at the first call: the signature fixes the
        # source's type, shape and strides; False where none gives exactly this view
        found: list[Any] = [None]

        def make(ins: Sequence[Any]) -> np.ndarray[Any, Any]:
            source = ins[si]
            index = found[0]
            if index is None:
                index = found[0] = basic_index(source, shape, dtype, so, strides)
            if index is not False:
                return source[index].copy()  # type: ignore[no-any-return]
            made: np.ndarray[Any, Any] = view(shape, dtype, source, so, strides).copy()
            return made

        return make

    def _engine_producer(
        self, shape: tuple[int, ...], dtype: np.dtype[Any]
    ) -> Callable[[Sequence[Any]], np.ndarray[Any, Any]] | None:
        """The engine's `fresh`, bound to this plan: a new numpy array (its own, as
        `cpu_engine.empty` makes a small one) and the copies into it on the calling thread,
        fills after the inputs; None where the plan is not `_one_small` or its output is
        made from the engine's cache of memory."""
        small = math.prod(shape) * dtype.itemsize < cpu_engine.CACHED_BYTES
        if not small or not self._one_small():
            return None
        assert self.engine is not None
        fresh, fills = cpu_engine.native().fresh, tuple(self.fills)
        return functools.partial(fresh, self.engine.table, np.empty, shape, dtype, fills)

    def into(self) -> Callable[[Sequence[Any], Any], bool] | None:
        """The engine's `into`, bound to this plan: `(inputs, out) -> bool`, the copies into a
        given contiguous output on the calling thread (False, nothing written, where it meets
        an input); None where the plan is not `_one_small`."""
        if not self._one_small():
            return None
        assert self.engine is not None
        return functools.partial(cpu_engine.native().into, self.engine.table, tuple(self.fills))

    def _one_small(self) -> bool:
        """Whether the plan is one output's strided copies that the engine runs on the
        calling thread, binding few enough arrays for its one-output calls."""
        bindings = len(self.plan.input_spans) + len(self.fills) + 1
        return (
            self.engine is not None
            and self.one_thread
            and not self.steps
            and len(self.plan.output_spans) == 1
            and bindings <= _FRESH_BINDINGS
        )

    def _taker(
        self, shape: tuple[int, ...], dtype: np.dtype[Any]
    ) -> Callable[[Sequence[Any]], np.ndarray[Any, Any]] | None:
        """The lone gather's output made by numpy.take itself, where it writes the whole
        output row-major; a bad index takes the general path, which names it."""
        assert self.gather is not None
        made = self.gather.taker(dtype, self.plan.output_spans[0])
        if made is None:
            return None
        general = self._general
        compiles = self.take is None  # (numpy.take of whole rows is as quick as the kernel)

        native = self.natives[0] if self.natives is not None else None
        backend = self.backend
        if native is not None:  # (the engine's gather; each index checked as it is read)
            small = math.prod(shape) * dtype.itemsize < cpu_engine.CACHED_BYTES
            new = functools.partial(np.empty if small else cpu_engine.empty, shape, dtype)
            kernel, meta, size, how = native.kernel, native.meta, native.size, native.move_only
            src, index = native.src, native.index

            def gathered(ins: Sequence[Any]) -> np.ndarray[Any, Any]:
                out = new()
                if kernel(meta, ins[src], out, ins[index], size, backend.threads, how) is not True:
                    general(ins, [out])  # (names the bad index)
                return out

            return gathered

        def make(ins: Sequence[Any]) -> np.ndarray[Any, Any]:
            if compiles and (self.kernels is not None or self.runs_to_compile > 0):
                out = np.empty(shape, dtype)  # compiled, or counting the runs until it is
                one = self.one_kernel
                if one is None or not one.run(ins, [out]):
                    general(ins, [out])  # (counts, compiles; or names a bad index)
                return out
            try:
                result = made(ins)
            except IndexError:  # numpy wrote nothing: the general path raises the error
                out = np.empty(shape, dtype)
                general(ins, [out])
                return out
            return result if result.shape == shape else result.reshape(shape)

        return make

    def _shortcut(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The side-by-side or element-map run; the views where it declines (nothing
        written)."""
        if self.fills:
            ins = [*ins, *self.fills]
        if not self.shortcut(ins, outs):  # type: ignore[misc]
            self._copy(ins, outs)

    def _general(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        if self.natives is not None and self._native_steps(ins, outs):
            return
        if self.take is not None and self.take.take(ins, outs):
            return  # a lone gather: one numpy.take
        if self.fills:
            ins = [*ins, *self.fills]
        if self.kernels is None and self.runs_to_compile > 0 and not cpu_engine.in_scheduler_task():
            self.runs_to_compile -= 1
            if not self.runs_to_compile:
                self._compile_steps()
        if self.kernels is not None and self._compiled_steps(ins, outs):
            return
        if self.put is not None:
            index = self.put.put_index(ins)  # checked before any write
            if index is not None:
                self._copy(ins, outs)
                self.put.put_rows(ins, outs, index)
                return
        rows = [step.prepare(ins) for step in self.steps]  # indices checked before any write
        self._copy(ins, outs)
        for step, moved in zip(self.steps, rows, strict=True):
            step.run(ins, outs, moved)

    # the plan's one compiled kernel, where it is that (`run_fresh`'s first try, which a
    # caller may make itself): True where it ran, False (nothing written) where it found an
    # index out of range
    fresh_first: Callable[[Sequence[Any], Sequence[Any]], bool] | None = None

    def run_fresh(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The plan into new outputs that nothing else sees: compiled indexed copies after
        the strided ones, without checking every index first (a bad one is still raised,
        by the general path, and the outputs are then dropped)."""
        one = self.one_kernel
        if one is not None and not self.fills and one.run(ins, outs):
            return  # (else the general path names the index out of range)
        if self.kernels is None or one is not None:
            self(ins, outs)
            return
        if self.fills:
            ins = [*ins, *self.fills]
        if not self._copies_then_kernels(ins, outs):
            self._general(ins, outs)  # (raises: names the index)

    def _compile_steps(self) -> None:
        """The indexed copies as compiled kernels, where every one has one."""
        plan = self.plan
        kernels = [CompiledIndexed.of(c, plan.element_size) for c in plan.indexed]
        if None in kernels:
            return
        self.kernels = kernels  # type: ignore[assignment]
        if len(kernels) == 1 and not self.copies:
            self.one_kernel = kernels[0]
        elif len(kernels) == 1 and len(plan.copies) == 1 and not (self.engine or self.parallel):
            # its one strided copy (a scatter's data, one-hot's fill) in the same kernel call
            self.one_kernel = kernels[0].after(plan.copies[0], plan.element_size)  # type: ignore[union-attr]
        if self.one_kernel is not None and not self.fills and self.take is None:
            self._run = self._one_kernel_first  # (a warm scatter: the kernel, in few frames)
        if self.one_kernel is not None and not self.fills:
            self.fresh_first = self.one_kernel.run

    def _one_kernel_first(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The plan as its one compiled kernel; the general path where that finds an index
        out of range (nothing written: the general path names it)."""
        assert self.one_kernel is not None
        if not self.one_kernel.run(ins, outs):
            self._general(ins, outs)

    def _compiled_steps(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """The plan with its indexed copies compiled: every index checked, then the strided
        copies, then the rows; False (nothing written) where an index is out of range (the
        numpy path then names it)."""
        if self.one_kernel is not None:
            return self.one_kernel.run(ins, outs)
        assert self.kernels is not None
        if self.kernels_never_fail:  # (no index can be out of range: nothing to check first)
            return self._copies_then_kernels(ins, outs)
        places = [kernel.locate(ins) for kernel in self.kernels]
        if any(p is None for p in places):
            return False
        self._copy(ins, outs)
        for kernel, found in zip(self.kernels, places, strict=True):
            kernel.move(ins, outs, found)  # type: ignore[arg-type]
        return True

    def _copies_then_kernels(self, ins: Sequence[Any], outs: Sequence[Any]) -> bool:
        """The strided copies, then each compiled indexed copy checking and moving its rows;
        False where one finds an index out of range (the copies before it have written)."""
        self._copy(ins, outs)
        assert self.kernels is not None
        for kernel in self.kernels:  # noqa: SIM110 - (a generator costs this hot path 0.5 µs)
            if not kernel.run(ins, outs):
                return False
        return True

    def _put_only(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """A plan that is one scatter of whole rows (in place) where the engine has no kernel
        for it: its rows checked, then one fancy assignment; the general path where the check
        declines (it names the error)."""
        assert self.put is not None
        if self.one_kernel is not None or self.runs_to_compile > 0:
            self._general(ins, outs)  # (counts the runs, compiles, runs compiled)
            return
        index = self.put.put_index(ins)
        if index is None:
            self._general(ins, outs)
        else:
            self.put.put_rows(ins, outs, index)

    def _on_engine(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The plan's copies on the engine (a small plan on the calling thread alone); the
        views where an output overlaps an input (the engine wrote nothing)."""
        if not self._engine_run(ins, outs, 1 if self.one_thread else self.backend.threads):
            self._views(ins, outs)

    def _copy(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The plan's strided copies (fills bound after the inputs)."""
        if self.parallel:
            self.backend._parallel(self.plan, ins, outs)()
            return
        if self.engine is not None:
            self._on_engine(ins, outs)
            return
        self._views(ins, outs)

    def _views(self, ins: Sequence[Any], outs: Sequence[Any]) -> None:
        """The plan's strided copies as numpy view pairs, in order."""
        view = np.ndarray
        for shape, dtype, si, so, ss, di, do, ds in self.recipe:
            view(shape, dtype, outs[di], do, ds)[...] = view(shape, dtype, ins[si], so, ss)

    def bound(self, ins: Sequence[Any], outs: Sequence[Any]) -> Callable[..., None]:
        """Views built once; the returned call copies through them (a small plan on the
        engine: its one-thread call bound once)."""
        if self.engine is not None and self.one_thread and not (self.steps or self.fills):
            engine_run = functools.partial(self._engine_run, ins, outs, 1)
            views = self._views

            def run_small(queue: Any = None) -> None:
                if not engine_run():  # (an output meets an input: the views, in order)
                    views(ins, outs)

            return run_small
        if self.steps or self.engine is not None:
            return lambda queue=None: self(ins, outs)
        if self.fills:
            ins = [*ins, *self.fills]
        if self.parallel:
            parallel = self.backend._parallel(self.plan, ins, outs)
            return lambda queue=None: parallel()
        view = np.ndarray
        pairs = [
            (view(shape, dtype, outs[di], do, ds), view(shape, dtype, ins[si], so, ss))
            for shape, dtype, si, so, ss, di, do, ds in self.recipe
        ]

        def run(queue: Any = None) -> None:
            for dst, src in pairs:
                dst[...] = src

        return run
