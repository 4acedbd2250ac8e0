"""A plan's launches on one GPU for one tuple of bound addresses: piece tables uploaded
asynchronously on the caller's stream, kernel parameters packed once, launches through
the driver on whichever stream a call names.

Tables go up from pinned host memory with `cudaMemcpyAsync` on the stream of the call
that first needs them, so nothing waits on the host. A first call made while that stream
is being captured into a CUDA graph prepares its tables in relaxed capture mode (the
allocations are then legal and the copy becomes a node of the graph); tables a captured
launch reads are never freed, since the graph may be replayed at any time.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import sys
import weakref
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import numpy as np

from ... import _forking
from .strategies import THREADS, Group

__all__ = [
    "Prepared",
    "ByValue",
    "Tables",
    "less_addresses",
    "NoContext",
    "in_any_thread",
    "TABLE_WORDS",
    "Graphed",
    "relaxed_capture",
    "is_capturing",
    "external_stream",
    "driver_library",
    "check_driver",
    "launch_kernel",
    "pack_arguments",
    "DeviceTable",
    "RawMemory",
    "scratch",
]

_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED
_NO_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT
_Call = TypeVar("_Call", bound=Callable[..., None])


class NoContext(RuntimeError):
    """A launch in a thread with no CUDA context current (`in_any_thread` answers it)."""


_driver: Any = None
_driver_lock = _forking.lock()


def driver_library() -> Any:
    """libcuda, through ctypes (loaded once)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = ctypes.CDLL("libcuda.so.1")
        return _driver


def _ctypes_launch(
    function: int,
    gx: int,
    gy: int,
    gz: int,
    bx: int,
    by: int,
    bz: int,
    shared: int,
    stream: int,
    params: int,
    extra: int,
) -> None:
    """cuLaunchKernel through ctypes: the launch path where the C extension is not built."""
    u = ctypes.c_uint
    status = driver_library().cuLaunchKernel(
        ctypes.c_void_p(function), u(gx), u(gy), u(gz), u(bx), u(by), u(bz), u(shared),
        ctypes.c_void_p(stream), ctypes.c_void_p(params), ctypes.c_void_p(extra),
    )  # fmt: skip
    check_driver(status, "cuLaunchKernel")


def _ctypes_launch_table(
    function: int,
    grid: int,
    threads: int,
    stream: int,
    table: bytes,
    patches: bytes,
    addresses: Sequence[int],
    pieces: int,
    tiles: int,
) -> None:
    """native/launch.c's launch_table through ctypes (where the C extension is not built)."""
    words = np.frombuffer(table, np.int64).copy()
    pairs = np.frombuffer(patches, np.int32).reshape(-1, 2)
    for word, which in pairs.tolist():
        words[word] += addresses[which]
    values = (words, np.array([pieces], np.int32), np.array([tiles], np.int64))
    params = np.array([v.ctypes.data for v in values], np.uint64)
    _ctypes_launch(function, grid, 1, 1, threads, 1, 1, 0, stream, int(params.ctypes.data), 0)


try:  # one C call a launch (native/launch.c), built by `pip install .` where a compiler is
    from ._launch import (  # type: ignore[import-not-found]
        launch_kernel,
        launch_table,
        set_no_context,
    )

    set_no_context(NoContext)
except ImportError:  # pragma: no cover - (no C compiler where dmlops was installed)
    launch_kernel, launch_table = _ctypes_launch, _ctypes_launch_table


def in_any_thread(call: _Call) -> _Call:
    """An executor's call that, in a thread where no CUDA context is current yet (one whose
    CUDA calls so far never reached the driver: CuPy's pool handing back a block, a device
    query), makes its device's primary context current and calls once more."""

    @functools.wraps(call)
    def run(executor: Any, ins: Sequence[int], outs: Sequence[int], queue: Any = None) -> None:
        try:
            call(executor, ins, outs, queue)
        except NoContext:
            backend = executor.backend
            device = (backend.default_queue() if queue is None else queue)[0]
            backend.cupy.cuda.runtime.setDevice(device)  # (CUDA 12: its context made current)
            call(executor, ins, outs, queue)

    return cast(_Call, run)


# the sizes (int64 words) a piece table passed by value is rounded up to: each a kernel of
# its own; a plan whose tables are larger uploads them (`Prepared`). 32,000 bytes with the
# launch's other parameters stays under the 32,764 bytes a kernel may take (CUDA 12.1 on)
TABLE_WORDS = (64, 500, 4000)


def pack_arguments(keep: list[Any], *values: Any) -> int:
    """cuLaunchKernel's argument array for `values` (numpy arrays or scalars), its memory
    appended to `keep`."""
    arrays = [v if isinstance(v, np.ndarray) else np.array([v], type(v)) for v in values]
    params = np.array([a.ctypes.data for a in arrays], np.uint64)
    keep.append((arrays, params))
    return int(params.ctypes.data)


class relaxed_capture:
    """This thread in relaxed stream-capture mode while the block runs (allocations and module
    loads are legal even when a stream of this process is being captured)."""

    def __enter__(self) -> None:
        self.mode = ctypes.c_int(_RELAXED)
        driver_library().cuThreadExchangeStreamCaptureMode(ctypes.byref(self.mode))

    def __exit__(self, *exc: object) -> None:
        driver_library().cuThreadExchangeStreamCaptureMode(ctypes.byref(self.mode))


class Graphed:
    """Stream work captured once into a CUDA graph (a winner table's clearing and the
    launches after it): a warm call replays it with one driver call instead of one per
    piece of work. The graph's kernel nodes keep copies of their parameters; `keep` holds
    the memory they point at for the graph's life."""

    def __init__(self, cupy: Any, work: Any, keep: Any) -> None:
        """`work(stream)` enqueues the work on a raw stream handle; this device current."""
        driver, runtime = driver_library(), cupy.cuda.runtime
        side = int(runtime.streamCreateWithFlags(1))  # non-blocking, captured alone
        stream = ctypes.c_void_p(side)
        graph, runnable = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            check_driver(driver.cuStreamBeginCapture_v2(stream, _RELAXED), "cuStreamBeginCapture")
            try:
                work(side)
            finally:
                status = driver.cuStreamEndCapture(stream, ctypes.byref(graph))
                check_driver(status, "cuStreamEndCapture")
        finally:
            runtime.streamDestroy(side)  # (the graph keeps nothing of the stream)
        try:
            flags = ctypes.c_ulonglong(0)
            check_driver(
                driver.cuGraphInstantiateWithFlags(ctypes.byref(runnable), graph, flags),
                "cuGraphInstantiateWithFlags",
            )
        except BaseException:
            driver.cuGraphDestroy(graph)
            raise
        self.keep = keep
        self._runnable = runnable
        self._launch = driver.cuGraphLaunch
        # (not at exit: the driver frees what the process held, its contexts perhaps first)
        weakref.finalize(self, _destroy_graph, driver, graph, runnable).atexit = False

    def launch(self, stream: int) -> None:
        """Replay the work on `stream` (this device current)."""
        check_driver(self._launch(self._runnable, ctypes.c_void_p(stream)), "cuGraphLaunch")


def check_driver(status: int, call: str) -> None:
    """Raise where a CUDA driver call did not succeed."""
    if status != 0:
        error = NoContext if status == _NO_CONTEXT else RuntimeError
        raise error(f"{call} failed with CUDA driver error {status}")


def _destroy_graph(driver: Any, graph: Any, runnable: Any) -> None:
    driver.cuGraphExecDestroy(runnable)
    driver.cuGraphDestroy(graph)


class _Handle:
    """A raw stream handle behind the CUDA stream protocol."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.handle


def external_stream(cupy: Any, handle: int) -> Any:
    """A CuPy stream object for a raw stream handle (it does not own the stream)."""
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(_Handle(handle))
    return cupy.cuda.ExternalStream(handle)


def is_capturing(cupy: Any, stream: int) -> bool:
    """Whether `stream` is being captured into a CUDA graph now."""
    return bool(cupy.cuda.runtime.streamIsCapturing(stream))


def _torch_memory(cupy: Any) -> bool:
    """Whether tables go in torch's memory: torch is imported and CuPy is not (a call on
    torch tensors, which needs nothing of CuPy's but its runtime bindings)."""
    imported = getattr(cupy, "imported", None)
    return imported is not None and not imported() and "torch" in sys.modules


class DeviceTable:
    """Device memory for a table on one stream, with CuPy's `data.ptr` and `nbytes`: torch's
    where CuPy is not imported (`_torch_memory`), else a CuPy array."""

    def __init__(self, cupy: Any, count: int, dtype: Any, stream: int) -> None:
        """`count` elements of `dtype` (a numpy type) on the current device."""
        self.nbytes = count * np.dtype(dtype).itemsize
        if _torch_memory(cupy):
            torch = sys.modules["torch"]
            device = int(cupy.cuda.runtime.getDevice())
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=device)):
                self.memory: Any = torch.empty(
                    max(self.nbytes, 1), dtype=torch.uint8, device=f"cuda:{device}"
                )
            self.data = SimpleNamespace(ptr=int(self.memory.data_ptr()))
        else:  # (CuPy's pool reuses memory in the order of the stream it was taken on)
            with external_stream(cupy, stream):
                self.memory = cupy.empty(count, dtype=dtype)
            self.data = self.memory.data


class RawMemory:
    """Device memory that is never freed (a captured graph may use it at any replay), with
    CuPy's `data.ptr` and `nbytes`; taken in relaxed capture mode."""

    def __init__(self, cupy: Any, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        with relaxed_capture():
            self.data = SimpleNamespace(ptr=int(cupy.cuda.runtime.malloc(max(self.nbytes, 1))))


def scratch(cupy: Any, nbytes: int, stream: int) -> DeviceTable | RawMemory:
    """`nbytes` of device memory for work enqueued on `stream` now: the stream's pool's (freed
    in its order once dropped), or raw memory never freed while the stream is being captured."""
    if is_capturing(cupy, stream):
        return RawMemory(cupy, nbytes)
    return DeviceTable(cupy, nbytes, np.uint8, stream)


def less_addresses(
    group: Group, inputs: Sequence[int], outputs: Sequence[int], plain: int
) -> tuple[np.ndarray[Any, Any], list[int], list[int]]:
    """A group's table made for bindings at `inputs` (the first `plain` a call's, then
    fill buffers) and `outputs`, less those bindings' addresses, with where each goes back:
    (rows, flat positions in them, the binding whose address each takes: an input's index,
    or `plain` + an output's)."""
    rows = group.table.copy()
    length = rows.shape[1]
    positions, bindings = [], []
    for r, (src, dst) in enumerate(group.ends.tolist()):
        if 0 <= src < plain:  # (a fill's address stays: bound after the inputs, or named
            # from the end, -1 - k, as a plan's negative sources are)
            rows[r, 0] -= inputs[src]
            positions.append(r * length)
            bindings.append(src)
        rows[r, 1] -= outputs[dst]
        positions.append(r * length + 1)
        bindings.append(plain + dst)
    return rows, positions, bindings


class Tables:
    """A plan's launch groups on one device for every tuple of addresses aligned as the
    first (their low 8 bits: vector widths and phases depend on them): each table less its
    bindings' addresses, which `at` adds back — no planning for a call at new addresses
    whose tables are too long to pass by value (they are uploaded: `Prepared`)."""

    def __init__(
        self,
        groups: Sequence[Group],
        inputs: Sequence[int],
        outputs: Sequence[int],
        fills: int,
        held: list[Any],
    ) -> None:
        """`groups` made for bindings at `inputs` (the plan's, then `fills` fill buffers)
        and `outputs`; `held`: the tensor fills their launches read."""
        plain = len(inputs) - fills
        self.held = held
        self.parts = []
        for group in groups:
            rows, positions, bindings = less_addresses(group, inputs, outputs, plain)
            self.parts.append((group, rows.reshape(-1), np.array(positions), np.array(bindings)))

    def at(self, ins: Sequence[int], outs: Sequence[int]) -> list[Group]:
        """The groups with these bindings' addresses in their tables."""
        addresses = np.array([*ins, *outs], np.int64)
        found = []
        for group, rows, positions, bindings in self.parts:
            table = rows.copy()
            table[positions] += addresses[bindings]
            found.append(dataclasses.replace(group, table=table.reshape(group.table.shape)))
        return found


class ByValue:
    """A plan's launches on one device whose piece tables travel in their kernel parameters
    (kernels/common.cuh, TABLE_WORDS), the same for every address of one alignment: each
    table holds its rows' addresses less their bindings', added back as it launches."""

    def __init__(
        self,
        groups: Sequence[Group],
        functions: Sequence[tuple[int, int, int]],
        inputs: Sequence[int],
        outputs: Sequence[int],
        fills: int = 0,
    ) -> None:
        """`functions[k]`: (CUfunction handle, grid size, table words) of `groups[k]`, whose
        tables were made for bindings at `inputs` (the plan's, then `fills` fill buffers,
        whose addresses stay in the tables) and `outputs`."""
        self.groups = list(groups)
        plain = len(inputs) - fills  # (bindings a call names: its inputs, then its outputs)
        self.held: list[Any] = []  # the tensor fills these launches read
        self.launches: list[tuple[int, int, bytes, bytes, int, int]] = []
        for group, (function, grid, words) in zip(groups, functions, strict=True):
            rows, positions, bindings = less_addresses(group, inputs, outputs, plain)
            table = np.zeros(words, np.int64)
            table[: rows.size] = rows.reshape(-1)
            patches = np.array([positions, bindings], np.int32).T.copy()
            self.launches.append(
                (function, grid, table.tobytes(), patches.tobytes(), group.pieces, group.tiles)
            )

    def run(self, ins: Sequence[int], outs: Sequence[int], stream: int) -> None:
        """Launch every group on `stream` at these addresses (this device current)."""
        addresses = [*ins, *outs]
        launch = launch_table
        for function, grid, table, patches, pieces, tiles in self.launches:
            launch(function, grid, THREADS, stream, table, patches, addresses, pieces, tiles)


class Prepared:
    """Launches of one plan on one device for one tuple of addresses."""

    def __init__(
        self,
        cupy: Any,
        groups: Sequence[Group],
        functions: Sequence[tuple[Any, int]],
        stream: int,
        capturing: bool,
    ) -> None:
        """`functions[k]` is (CUfunction handle, grid size) for `groups[k]`; tables are
        uploaded on `stream` (being captured into a graph where `capturing`), which must be
        current to this device's context."""
        runtime = cupy.cuda.runtime
        self.groups = list(groups)
        self.streams = {stream}
        self.pinned = capturing  # read by a captured graph: never to be freed
        self.held: list[Any] = []  # what the launches read that lives as long as they do
        starts, size = [], 0  # each table at a 256-byte boundary of one allocation
        for g in groups:
            starts.append(size)
            size += -(-g.table.nbytes // 256) * 256
        size = max(size, 256)
        self.uploaded: Any = None  # the upload's event: the staging memory is reused after it
        self.staging: Any = None  # the host memory the table goes up from
        self.memory: Any = None  # the device memory it goes up to
        pageable = not capturing and _torch_memory(cupy)
        if capturing:  # raw memory, never freed: a graph may replay the upload at any time
            with relaxed_capture():
                self._device_ptr = int(runtime.malloc(size))
                host_ptr = int(runtime.hostAlloc(size, 0))
            host = np.ctypeslib.as_array(
                ctypes.cast(host_ptr, ctypes.POINTER(ctypes.c_uint8)), (size,)
            )
        elif pageable:
            # CuPy not imported: the table in torch's caching allocator, on this stream (it
            # is reused in this stream's order only), uploaded from pageable memory (staged
            # by the driver before the copy returns: nothing to wait for)
            self.memory = DeviceTable(cupy, size, np.uint8, stream)
            self._device_ptr = int(self.memory.data.ptr)
            host = self.staging = np.zeros(size, np.uint8)
            host_ptr = int(host.ctypes.data)
        else:
            with external_stream(cupy, stream):  # the pool reuses it on this stream only
                self.memory = cupy.cuda.alloc(size)
            self.staging = cupy.cuda.alloc_pinned_memory(size)
            self._device_ptr = int(self.memory.ptr)
            host_ptr = int(self.staging.ptr)
            host = np.frombuffer(self.staging, np.uint8, size)
        self.launches: list[tuple[int, int, Any]] = []
        self._params: list[Any] = []  # the parameter arrays the launches point into
        for group, (function, grid), at in zip(groups, functions, starts, strict=True):
            host[at : at + group.table.nbytes] = group.table.view(np.uint8).reshape(-1)
            values = (
                np.array([self._device_ptr + at], np.uint64),
                np.array([group.pieces], np.int32),
                np.array([group.tiles], np.int64),
            )
            params = np.array([v.ctypes.data for v in values], np.uint64)
            self._params.append((values, params))
            self.launches.append((function, grid, int(params.ctypes.data)))
        runtime.memcpyAsync(self._device_ptr, host_ptr, size, runtime.memcpyHostToDevice, stream)
        if not capturing and not pageable:  # (pinned staging: reused once the copy is done)
            self.uploaded = cupy.cuda.Event(block=False, disable_timing=True)
            self.uploaded.record(external_stream(cupy, stream))

    def retired(self) -> bool:
        """Whether this entry's memory may go back to its pools (never, once pinned)."""
        return not self.pinned and (self.uploaded is None or bool(self.uploaded.done))

    def run(self, cupy: Any, stream: int) -> None:
        """Launch every group on `stream` (this device's context must be current)."""
        if stream not in self.streams:
            self.streams.add(stream)
            self.pinned = True  # another stream may still read it when it would be freed
        if not self.pinned and cupy.cuda.runtime.streamIsCapturing(stream):
            self.pinned = True
        launch = launch_kernel
        for function, grid, params in self.launches:
            launch(function, grid, 1, 1, THREADS, 1, 1, 0, stream, params, 0)
