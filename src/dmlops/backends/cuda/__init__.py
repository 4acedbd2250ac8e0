"""CUDA backend: plans executed by runtime-compiled kernels, through CuPy.

Each copy of a plan is given a strategy (`strategies.py`: the general strided
kernel with vector, gather and fast-division modes; misaligned rows; tiled
transposes); copies of one strategy and specialisation are rows of one piece
table, walked by one persistent-grid launch, so a 256-way SPLIT is one launch.
Kernel sources are the `.cu` files in `kernels/`.

A call runs on the GPU that holds its arrays and on a stream (`streams.py`):
the caller's current stream of the arrays' library, or one named explicitly.
Piece tables are prepared per device and tuple of bound addresses and uploaded
asynchronously on that stream (`launch.py`); launches go through the driver.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ... import _forking
from ...elements import marked_error, torch_refusal, torch_values
from ...errors import BindingError, DmlError
from ...plan import Fill, Plan, ValueSequence, fill_bytes, fill_reads
from .. import library_keys
from .._address_cache import AddressCache
from .._fill_cache import KeptFills
from ..base import made_once
from . import kernels
from .arrays import TorchView
from .compact import CudaCompaction
from .convert import TYPE_CODES, CudaConversion
from .indexed import IndexedLaunch
from .install import import_cupy
from .launch import (
    TABLE_WORDS,
    ByValue,
    Prepared,
    Tables,
    in_any_thread,
    is_capturing,
    launch_kernel,
    pack_arguments,
    relaxed_capture,
)
from .strategies import Group, group_copies
from .streams import Queue, current_stream_function, is_torch, queue_function, torch_module

__all__ = ["CudaBackend"]

_TABLE_CACHE = 16
# strided plans whose piece tables fit TABLE_WORDS pass them by value (`ByValue`), prepared
# once per alignment of their addresses: these low bits of each address (a vector's
# alignment, and more) pick the entry
BY_VALUE = True
TABLES = True  # False: uploaded tables planned anew for each tuple of addresses (tests)
_BY_VALUE_KEPT = 64  # devices and alignments a plan keeps launches for
_ALIGNED = 255
_UNSEEN: Any = object()
FILL_BYTES = 64 << 10  # each fill's buffer per GPU, read by the copies that write it
# tensor fills (FILL_VALUE_SEQUENCE's values) a GPU keeps for later plans; one a plan's
# prepared launches hold stays until they are dropped
TENSOR_FILLS_KEPT = 64 << 20
_ALREADY_THERE = contextlib.nullcontext()
# value sequences' types `kernels/sequence.cu` makes (convert.cu's codes); others uploaded
_SEQUENCE_TYPES = {k: v for k, v in TYPE_CODES.items() if k != "float64"}
_SEQUENCE_THREADS = 256


def output_maker(like: Any, shape: tuple[int, ...]) -> Callable[[], Any] | None:
    """New row-major torch tensors of `shape`, of `like`'s type and device, each made by
    `torch.empty_like` of one element expanded to the shape (its arguments parse in less
    time than `new_empty`'s shape; under two elements the expanded template would be dense
    and its strides copied: `torch.empty` then); None while a CUDA graph is being captured
    (the template's memory would come from the graph's pool)."""
    torch = torch_module()
    if like.is_cuda and torch.cuda.is_current_stream_capturing():
        return None
    if math.prod(shape) < 2:
        return functools.partial(torch.empty, shape, dtype=like.dtype, device=like.device)
    return functools.partial(torch.empty_like, like.new_empty(()).expand(shape))


class _TensorFill:
    """A tensor fill's device memory, freed (at the next launch preparation outside a
    capture: `_DeviceState.free_dropped`) once neither the GPU's cache of fills nor any
    prepared launches that read it hold it."""

    def __init__(self, state: _DeviceState, pattern: Fill) -> None:
        self.state = state
        made = None if isinstance(pattern, bytes) else state.generate(pattern)
        self.ptr = state.upload(fill_bytes(pattern)) if made is None else made

    def __del__(self) -> None:
        self.state.dropped.append(self.ptr)  # (a list append: safe from any thread, in GC)


class _DeviceState:
    """What is measured or loaded once per GPU: its size, its kernels' handles and the
    buffers that fill copies read (zeros from the start, other constants when first used)."""

    def __init__(self, cupy: Any, ordinal: int) -> None:
        runtime = self.runtime = cupy.cuda.runtime
        props = runtime.getDeviceProperties(ordinal)
        self.ordinal = ordinal
        self.multiprocessors = int(props["multiProcessorCount"])
        self.functions: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[int, int]] = {}
        self._fills: dict[bytes, int] = {}
        self._tensor_fills: KeptFills[_TensorFill] = KeptFills()
        self.dropped: list[int] = []  # tensor fills' memory no one holds, to free
        self._stream: int | None = None  # where value sequences are made (`generate`)
        self.fill(bytes(FILL_BYTES))  # zeros, which SLICE_GRAD writes

    def upload(self, pattern: bytes) -> int:
        """New device memory holding `pattern`, written by a blocking copy in relaxed capture
        mode, so it is there before any stream reads it and legal while another stream is
        being captured."""
        runtime = self.runtime
        host = np.frombuffer(pattern, np.uint8)
        with self._current():
            found = int(runtime.malloc(len(pattern)))
            runtime.memcpy(found, host.ctypes.data, len(pattern), runtime.memcpyHostToDevice)
            runtime.streamSynchronize(0)
        return found

    @contextlib.contextmanager
    def _current(self) -> Iterator[None]:
        """This GPU current, in relaxed capture mode (allocations and frees legal while
        another stream is being captured), the caller's device current again after."""
        runtime = self.runtime
        before = runtime.getDevice()
        with relaxed_capture():
            runtime.setDevice(self.ordinal)
            try:
                yield
            finally:
                runtime.setDevice(before)

    def generate(self, sequence: ValueSequence) -> int | None:
        """New device memory holding a value sequence, made there by `kernels/sequence.cu`
        on a stream of this state's own that the host waits for (so it is there before any
        stream reads it; legal, in relaxed mode, while another stream is being captured):
        no host arithmetic, bytes or upload. None (the host's bytes uploaded) for a type the
        kernel does not make, a byte order not this machine's, or a start or delta not
        finite."""
        dtype = np.dtype(sequence.dtype)
        code = _SEQUENCE_TYPES.get(dtype.name) if dtype.isnative else None
        finite = dtype.kind != "f" or math.isfinite(sequence.start + sequence.delta)
        if code is None or not finite:  # (a NaN's payload as the host's arithmetic gives it)
            return None
        runtime = self.runtime
        with self._current():
            if self._stream is None:
                self._stream = int(runtime.streamCreateWithFlags(1))  # (non-blocking)
            stream = self._stream
            found = int(runtime.malloc(sequence.nbytes))
            values = sequence.count * dtype.itemsize
            runtime.memsetAsync(found + values, 0, sequence.nbytes - values, stream)
            function = kernels.handle(runtime, "sequence", (("YT", code),))
            integer = dtype.kind in "iu"
            keep: list[Any] = []
            params = pack_arguments(
                keep,
                np.uint64(found),
                np.int64(sequence.count),
                np.float64(0.0 if integer else sequence.start),
                np.float64(0.0 if integer else sequence.delta),
                np.uint64(int(sequence.start) % 2**64 if integer else 0),
                np.uint64(int(sequence.delta) % 2**64 if integer else 0),
            )
            blocks = max(1, min(-(-sequence.count // _SEQUENCE_THREADS), 1 << 16))
            launch_kernel(function, blocks, 1, 1, _SEQUENCE_THREADS, 1, 1, 0, stream, params, 0)
            runtime.streamSynchronize(stream)
        return found

    def fill(self, pattern: bytes) -> int:
        """The device buffer holding an element fill's `pattern` (FILL_BYTES long), made once
        per pattern and kept."""
        found = self._fills.get(pattern)
        if found is None:
            found = self._fills[pattern] = self.upload(pattern)
        return found

    @property
    def _tensor_fill_bytes(self) -> int:
        return self._tensor_fills.bytes

    def tensor_fill(self, pattern: Fill) -> _TensorFill:
        """A tensor fill's device memory: the GPU keeps the most recently used ones up to
        TENSOR_FILLS_KEPT bytes (an ONNX Range of a growing length made a new one each
        step, each kept for good); the prepared launches that read one hold it too."""
        return self._tensor_fills.get(pattern, lambda p: _TensorFill(self, p), TENSOR_FILLS_KEPT)

    def free_dropped(self) -> None:
        """Free the tensor fills no one holds any more (outside a capture: cudaFree waits for
        the device's work, kernels that read them included)."""
        freed = []
        while self.dropped:
            try:
                freed.append(self.dropped.pop())  # (atomic: an append meanwhile stays)
            except IndexError:  # (another thread took the last)
                break
        if not freed:
            return
        with self._current():
            for ptr in freed:
                self.runtime.free(ptr)

    def function(self, cupy: Any, group: Group) -> tuple[int, int]:
        """(CUfunction handle, blocks per multiprocessor) of a group's kernel on this GPU
        (this GPU current)."""
        key = (group.kernel, group.defines)
        found = self.functions.get(key)
        if found is None:
            handle = kernels.handle(cupy.cuda.runtime, group.kernel, group.defines)
            found = handle, kernels.blocks_per_multiprocessor(handle)
            self.functions[key] = found
        return found


# torch types CuPy has (others, such as bfloat16, travel as their unsigned carriers)
_CUPY_TYPES = frozenset({
    "bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
    "float16", "float32", "float64", "complex64", "complex128",
})  # fmt: skip


class _OnDevice:
    """CUDA's current device set to one GPU while the block runs, and put back after."""

    def __init__(self, runtime: Any, ordinal: int) -> None:
        self.runtime, self.ordinal = runtime, ordinal

    def __enter__(self) -> None:
        self.before = self.runtime.getDevice()
        self.runtime.setDevice(self.ordinal)

    def __exit__(self, *exc: object) -> None:
        self.runtime.setDevice(self.before)


class CudaBackend:
    """Executes plans on the GPU that holds the arrays, on the caller's stream."""

    name = "cuda"
    one_queue = False
    _instance: CudaBackend | None = None

    def __init__(self) -> None:
        cupy = import_cupy()
        try:
            current = int(cupy.cuda.runtime.getDevice())
            self._states = {current: _DeviceState(cupy, current)}
        except Exception as e:
            raise DmlError(f"the cuda backend found no usable CUDA device: {e}") from e
        self.cupy = cupy
        self.launch_log: list[Group] | None = None  # tests set a list to see every launch
        self._lock = _forking.lock()
        self._retiring: list[Prepared] = []  # pushed out of a cache, maybe still in use
        self._kept: list[Prepared] = []  # read by captured graphs: kept for the process

    @classmethod
    def instance(cls) -> CudaBackend:
        """The shared backend object (made once)."""
        return made_once(cls)

    # -- arrays and buffers ------------------------------------------------------------

    def as_array(self, obj: Any) -> Any:
        cp = self.cupy
        if isinstance(obj, cp.ndarray):
            return obj
        if is_torch(obj):
            refused = torch_refusal(obj)
            if refused is not None:
                raise refused
            if obj.requires_grad:  # (read outside autograd: its values alone)
                obj = obj.detach()
            obj = torch_values(obj)  # (a conjugate or negative view: its values)
        if hasattr(obj, "__cuda_array_interface__"):
            return cp.asarray(obj)
        if hasattr(obj, "__dlpack__"):
            return cp.from_dlpack(obj)
        raise BindingError(f"{type(obj).__name__} is not a GPU array")

    def describe(self, obj: Any) -> Any:
        if is_torch(obj):
            if obj.get_device() < 0:
                raise BindingError("a torch tensor on the CPU is not a GPU array")
            refused = torch_refusal(obj)
            if refused is not None:
                raise refused
            return TorchView(torch_values(obj))
        return self.as_array(obj)

    def own(self, obj: Any) -> bool:
        """Whether compiled calls take `obj` as it is (a CuPy array or a torch tensor; others,
        JAX's, are bound through `as_array` each call)."""
        return is_torch(obj) or (self.cupy.imported() and isinstance(obj, self.cupy.ndarray))

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        keys: dict[type, Callable[[Any], Hashable]] = {}
        if self.cupy.imported():  # (no CuPy array before CuPy is imported: asked again then)
            keys[self.cupy.ndarray] = lambda a: (a.dtype, a.shape, a.strides, a.data.device_id)
        keys.update(library_keys.array_keys())
        return keys

    def many_array_keys(self) -> dict[type, Callable[[Sequence[Any]], list[Hashable] | None]]:
        return dict(library_keys.many_array_keys())

    # flat buffers of this backend are device addresses (ints)
    flats_are_addresses = True

    def lean_bindings(
        self, arrays: Sequence[Any], in_lows: Sequence[int], out_lows: Sequence[int]
    ) -> tuple[Any, Any, Any] | None:
        """For a call whose arrays are torch CUDA tensors or Parameters (as `arrays`, which
        its signature keeps so) and whose bindings start at their arrays' addresses (torch
        has no negative strides): an array's address (`Tensor.data_ptr`, mapped over a
        call's arrays in one pass of C calls), `Tensor.new_empty`, and `output_maker`; None
        otherwise. No owner is known here, so a caller's output always takes the overlap test."""
        torch = torch_module()
        if torch is None or not arrays or any(in_lows) or any(out_lows):
            return None
        tensor = torch.Tensor
        plain = (tensor, torch.nn.Parameter)  # (a Parameter's getters and results a tensor's)
        if any(type(a) not in plain or a.get_device() < 0 for a in arrays):
            return None
        return tensor.data_ptr, tensor.new_empty, output_maker

    def placement(self, named: Sequence[tuple[str, Any]]) -> Callable[[Any], Queue]:
        return queue_function(self.cupy, named)

    def _pointer(self, obj: Any) -> int:
        """Device address of an array's index 0."""
        ptr = getattr(obj, "data_ptr", None)  # torch: the commonest, asked first
        if ptr is not None:
            return int(ptr())
        if isinstance(obj, self.cupy.ndarray):
            return int(obj.data.ptr)
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return int(cai["data"][0])
        return int(self.as_array(obj).data.ptr)

    def fresh_bindings(
        self, inputs: Sequence[Any], outputs: Sequence[Any]
    ) -> tuple[list[int], list[int], Queue] | None:
        """Device pointers and queue of a call on buffers made for it, where every buffer is
        a contiguous CUDA torch tensor on one GPU (what a torch Block binds): no views
        described and no placement made per call. None otherwise (the general path, which
        checks and names)."""
        torch = torch_module()
        if torch is None:
            return None
        device = -1
        pointers = []
        for t in (*inputs, *outputs):
            if not isinstance(t, torch.Tensor) or not t.is_cuda or not t.is_contiguous():
                return None
            here = t.get_device()
            if device < 0:
                device = here
            elif here != device:
                return None
            pointers.append(t.data_ptr())
        n = len(inputs)
        return (
            pointers[:n],
            pointers[n:],
            (device, current_stream_function(self.cupy, True)(device)),
        )

    def byte_view(self, obj: Any, writable: bool) -> tuple[int, int]:
        cp = self.cupy
        if isinstance(obj, cp.cuda.MemoryPointer):
            return int(obj.ptr), int(obj.mem.size - (obj.ptr - obj.mem.ptr))
        if isinstance(obj, cp.cuda.memory.BaseMemory):
            return int(obj.ptr), int(obj.size)
        refused = marked_error(obj, "bind")  # (a table reads its memory at each dispatch)
        if refused is not None:
            raise BindingError(f"a bound torch tensor {refused}")
        try:
            arr = self.describe(obj)
        except BindingError:
            raise BindingError(
                f"{type(obj).__name__} is not a GPU buffer: bind a CuPy array, a torch tensor, "
                "a DLPack GPU array or a cupy.cuda.MemoryPointer"
            ) from None
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise BindingError("a bound buffer must be contiguous memory")
        pointer = arr.pointer if isinstance(arr, TorchView) else int(arr.data.ptr)
        return pointer, int(arr.nbytes)

    def window(self, flat: Any, offset: int, size: int) -> int:
        return int(flat) + offset

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Any]:
        pointer = self._pointer
        return pointer if low == 0 else lambda arr: pointer(arr) + low

    def owner(self, obj: Any) -> object | None:
        return None  # device addresses are cheap to read

    def address(self, flat: Any) -> int:
        return int(flat)

    def _on(self, ordinal: int) -> contextlib.AbstractContextManager[Any]:
        """A context with CuPy's current device set to `ordinal` (and put back after)."""
        runtime = self.cupy.cuda.runtime
        if ordinal == runtime.getDevice():
            return _ALREADY_THERE
        return _OnDevice(runtime, ordinal)

    def new_like(self, template: Any, shape: tuple[int, ...], dtype: Any = None) -> Any:
        torch = torch_module()  # torch first: the commonest, and its call the cheapest
        if torch is not None and isinstance(template, torch.Tensor):
            if dtype is None:
                return template.new_empty(shape)
            return template.new_empty(shape, dtype=getattr(torch, np.dtype(dtype).name))
        cp = self.cupy
        if isinstance(template, cp.ndarray):
            with self._on(template.data.device_id):
                return cp.empty(shape, dtype=template.dtype if dtype is None else dtype)
        arr = self.as_array(template)
        with self._on(arr.data.device_id):
            made = cp.empty(shape, dtype=arr.dtype if dtype is None else dtype)
            return self.in_library_of(made, template)

    def copy_of(self, arr: Any) -> Any:
        cp = self.cupy
        torch = torch_module()
        if torch is not None and isinstance(arr, torch.Tensor):
            return arr.clone(memory_format=torch.contiguous_format)
        source = self.as_array(arr)
        with self._on(source.data.device_id):
            copy = cp.array(source, copy=True, order="C")
        return copy if isinstance(arr, cp.ndarray) else self.in_library_of(copy, arr)

    def upload(self, host: Any) -> Any:
        return self.cupy.asarray(host)

    def download(self, arr: Any, out: Any = None) -> Any:
        host = self.cupy.asnumpy(self.as_array(arr))
        if out is None:
            return host
        out[...] = host
        return out

    def in_library_of(self, result: Any, template: Any) -> Any:
        """`result` (a CuPy array) in the array library of `template` (torch, JAX or CuPy),
        without a copy; torch and JAX wait for CuPy's current stream through DLPack. Where
        the template's torch type is one CuPy has not (bfloat16, the float8 types) and the
        result is its unsigned carrier, the result takes the template's type."""
        if is_torch(template):
            torch = torch_module()
            t = torch.from_dlpack(result)
            if (
                t.dtype != template.dtype
                and result.dtype.kind == "u"
                and t.element_size() == template.element_size()
                and str(template.dtype).removeprefix("torch.") not in _CUPY_TYPES
            ):
                t = t.view(template.dtype)
            return t
        module = type(template).__module__.split(".")[0]
        if module in ("jax", "jaxlib"):
            import jax

            return jax.dlpack.from_dlpack(result)
        return result

    # -- execution ---------------------------------------------------------------------

    def state(self, ordinal: int) -> _DeviceState:
        """The per-GPU state of device `ordinal`."""
        found = self._states.get(ordinal)
        if found is None:
            with self._lock:
                found = self._states.setdefault(ordinal, _DeviceState(self.cupy, ordinal))
        return found

    def default_queue(self) -> Queue:
        """The current device and CuPy's current stream on it."""
        cp = self.cupy
        device = int(cp.cuda.runtime.getDevice())
        return device, int(cp.cuda.get_current_stream(device).ptr)

    def prepare(
        self,
        plan: Plan,
        ins: Sequence[int],
        outs: Sequence[int],
        queue: Queue,
        tables: Tables | None = None,
    ) -> Prepared:
        """`plan`'s launches on these addresses, tables uploaded on the queue's stream (made
        from `tables`, the plan's for addresses so aligned on this device, where given)."""
        cp = self.cupy
        device, stream = queue
        capturing = is_capturing(cp, stream)
        if not capturing:
            self._sweep()
        with self._on(device), relaxed_capture() if capturing else contextlib.nullcontext():
            state = self.state(device)
            if not capturing:
                state.free_dropped()
            if tables is None:
                groups, held, _ = self._groups(state, plan, ins, outs)
            else:
                groups, held = tables.at(ins, outs), tables.held
            functions = [self._grid(cp, state, group)[:2] for group in groups]
            prepared = Prepared(cp, groups, functions, stream, capturing)
            prepared.held = held
            return prepared

    def by_value(
        self, plan: Plan, ins: Sequence[int], outs: Sequence[int], queue: Queue
    ) -> ByValue | None:
        """`plan`'s launches with their piece tables in their parameters, for every address
        aligned as these are (`ByValue`); None where a table is too long for that."""
        cp = self.cupy
        device, stream = queue
        # (parameters past 4 KB: CUDA 12.1 on)
        sizes = TABLE_WORDS if int(cp.cuda.runtime.driverGetVersion()) >= 12010 else (64, 500)
        capturing = is_capturing(cp, stream)
        with self._on(device), relaxed_capture():
            state = self.state(device)
            if not capturing:  # (as `prepare` does)
                state.free_dropped()
            groups, held, fills = self._groups(state, plan, ins, outs)
            functions = []
            for group in groups:
                words = next((w for w in sizes if w >= group.table.size), None)
                if words is None:
                    return None
                sized = dataclasses.replace(group, defines=(*group.defines, ("TABLE_WORDS", words)))
                try:
                    functions.append((*self._grid(cp, state, sized)[:2], words))
                except RuntimeError:  # (a compiler or driver that cannot: tables uploaded)
                    return None
            made = ByValue(groups, functions, [*ins, *fills], outs, len(fills))
            made.held = held
            return made

    def tables(self, plan: Plan, ins: Sequence[int], outs: Sequence[int], device: int) -> Tables:
        """`plan`'s launch groups on `device` for every address aligned as these (`Tables`)."""
        with self._on(device), relaxed_capture():
            groups, held, fills = self._groups(self.state(device), plan, ins, outs)
        return Tables(groups, [*ins, *fills], outs, len(fills), held)

    def _groups(
        self, state: _DeviceState, plan: Plan, ins: Sequence[int], outs: Sequence[int]
    ) -> tuple[list[Group], list[_TensorFill], list[int]]:
        """A plan's launch groups at these addresses (this device current), the tensor fills
        they read and the fill buffers bound after the inputs."""
        held: list[_TensorFill] = []  # the tensor fills these launches read
        fills: list[int] = []
        if plan.writes_fills:
            buffers = plan.fill_patterns(FILL_BYTES)  # (fill k is buffers[-1 - k])
            for j, value in enumerate(buffers):
                if plan.is_tensor_fill(len(buffers) - 1 - j):
                    held.append(state.tensor_fill(value))
                    fills.append(held[-1].ptr)
                else:
                    fills.append(state.fill(fill_bytes(value)))
            plan = fill_reads(plan, FILL_BYTES)
        groups = group_copies(plan, [*ins, *fills], outs, state.multiprocessors)
        return groups, held, fills

    @staticmethod
    def _grid(cp: Any, state: _DeviceState, group: Group) -> tuple[int, int]:
        """(CUfunction handle, grid) of a group: a persistent grid of two waves of resident
        blocks (or one block per tile)."""
        handle, blocks = state.function(cp, group)
        return handle, int(max(1, min(group.tiles, 2 * state.multiprocessors * blocks)))

    def retire(self, prepared: Prepared) -> None:
        """Take an entry pushed out of a cache: its memory is freed once nothing can read it."""
        with self._lock:
            (self._kept if prepared.pinned else self._retiring).append(prepared)

    def _sweep(self) -> None:
        with self._lock:
            waiting = self._retiring
            self._kept += [p for p in waiting if p.pinned]
            self._retiring = [p for p in waiting if not p.pinned and not p.retired()]

    def run(self, prepared: Prepared, queue: Queue) -> None:
        """Launch a prepared plan on the queue's stream, with its device current."""
        cp = self.cupy
        device, stream = queue
        runtime = cp.cuda.runtime
        current = runtime.getDevice()
        if current == device:
            prepared.run(cp, stream)
        else:
            runtime.setDevice(device)
            try:
                prepared.run(cp, stream)
            finally:
                runtime.setDevice(current)
        log = self.launch_log
        if log is not None:
            log.extend(prepared.groups)

    def run_indexed(
        self,
        launches: Sequence[IndexedLaunch],
        ins: Sequence[int],
        outs: Sequence[int],
        queue: Queue,
    ) -> None:
        """Launch indexed copies, in order, on the queue's stream with its device current."""
        cp = self.cupy
        device, stream = queue
        with self._on(device):
            for launch in launches:
                launch.launch(cp, device, ins, outs, stream)

    def executor(self, plan: Plan) -> Any:
        if plan.conversion is not None:  # CAST's converting copies
            return CudaConversion(self, plan)
        if plan.compactions:  # NONZERO_COORDINATES's stream compaction: a scan
            return CudaCompaction(self, plan)
        return _CudaExecutor(self, plan)


def _alignment(device: int, ins: Sequence[int], outs: Sequence[int]) -> tuple[int, ...]:
    """A device and the low bits of bound addresses: what a plan's launch groups depend on."""
    return (device, *[a & _ALIGNED for a in (*ins, *outs)])


_Kept = TypeVar("_Kept")


def _kept(entries: dict[tuple[int, ...], _Kept], key: tuple[int, ...], value: _Kept) -> _Kept:
    """`value` kept under `key`, the oldest entry let go past _BY_VALUE_KEPT."""
    if len(entries) >= _BY_VALUE_KEPT:
        entries.pop(next(iter(entries)), None)
    entries[key] = value
    return value


class _CudaExecutor:
    """A plan's launches, prepared once per device and tuple of device addresses."""

    def __init__(self, backend: CudaBackend, plan: Plan) -> None:
        self.backend = backend
        self.plan = plan
        self.cache: AddressCache[Prepared] = AddressCache(_TABLE_CACHE, backend.retire)
        self.indexed = [IndexedLaunch(c, plan.element_size) for c in plan.indexed]
        # a plan of indexed copies only: launched as run_indexed does, without its frames
        self.indexed_only = bool(self.indexed) and not plan.copies
        # a plan of strided copies whose tables travel in their launches' parameters, per
        # device and alignment of the bound addresses (None: too long for that); called at
        # new addresses (each call's new output), nothing is prepared again
        self.by_value: dict[tuple[int, ...], ByValue | None] = {}
        self.tables_by_value = BY_VALUE and bool(plan.copies) and not self.indexed
        # the plan's groups per device and alignment, for tables uploaded at new addresses
        # (too long to pass by value, or beside indexed copies): planned once each
        self.tables: dict[tuple[int, ...], Tables] = {}

    @in_any_thread
    def __call__(self, ins: Sequence[int], outs: Sequence[int], queue: Queue | None = None) -> None:
        backend = self.backend
        if queue is None:
            queue = backend.default_queue()
        if self.indexed_only:  # the commonest indexed call: its launches, in this frame
            cp = backend.cupy
            device, stream = queue
            if device == cp.cuda.runtime.getDevice():
                for launch in self.indexed:
                    c = launch.copy
                    if not launch.rows or not launch.launch_warm(
                        device, stream, ins[c.src], outs[c.dst], ins[c.index]
                    ):  # (new alignment, a winner table, no rows)
                        launch.launch(cp, device, ins, outs, stream)
                return
        elif self.tables_by_value:  # a strided call: its tables in its launches
            device, stream = queue
            aligned = _alignment(device, ins, outs)
            made = self.by_value.get(aligned, _UNSEEN)
            if made is _UNSEEN:
                made = _kept(self.by_value, aligned, backend.by_value(self.plan, ins, outs, queue))
            if made is not None:
                with backend._on(device):
                    made.run(ins, outs, stream)
                if backend.launch_log is not None:
                    backend.launch_log.extend(made.groups)
                return
        if not self.indexed and backend.launch_log is None:  # a warm strided call, here
            cp = backend.cupy
            device, stream = queue
            prepared = self.cache.entries.get((device, *ins, *outs))
            if prepared is not None and device == cp.cuda.runtime.getDevice():
                prepared.run(cp, stream)
                return
        where = queue
        if self.plan.copies or not self.indexed:
            prepared = self.cache.get(
                (where[0], *ins, *outs),
                lambda: backend.prepare(
                    self.plan, ins, outs, where, self._tables(where, ins, outs)
                ),
            )
            backend.run(prepared, queue)
        if self.indexed:
            backend.run_indexed(self.indexed, ins, outs, queue)

    def _tables(self, queue: Queue, ins: Sequence[int], outs: Sequence[int]) -> Tables | None:
        """The plan's groups for addresses aligned as these on the queue's device, made the
        first time (None where the plan has no strided copies, or where tables are off)."""
        if not (TABLES and self.plan.copies):
            return None
        device = queue[0]
        aligned = _alignment(device, ins, outs)
        found = self.tables.get(aligned)
        if found is None:
            found = _kept(self.tables, aligned, self.backend.tables(self.plan, ins, outs, device))
        return found

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[..., None]:
        ins, outs = list(ins), list(outs)

        def dispatch(queue: Queue | None = None) -> None:
            self(ins, outs, queue)

        return dispatch
