"""WebGPU backend: plans executed by WGSL compute shaders through wgpu (Vulkan, Metal, D3D12).

`strategies.py` gives each copy a kernel (vec4 rows, reversed vec4 rows, funnel-shifted
rows and their edges, tiled transposes, u32 words, packed words of 1- and 2-byte elements,
bytes merged atomically) by its layout
and bound offsets; pieces of one kernel and dimension bucket between one pair of buffers
form one table and one dispatch. Kernel sources are the `.wgsl` files in `kernels/`.
Arrays live in arena buffers (`memory.py`), so many arrays share a binding. A binding's
dispatches are encoded through wgpu-py once, then through wgpu-native (`native.py`).
The adapter is the high-performance one unless `DMLOPS_WEBGPU_ADAPTER` (or
`dmlops.webgpu.select_adapter`) names another.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Hashable, Sequence
from importlib import resources
from typing import Any

import numpy as np

from ... import _forking
from ...errors import BindingError, DmlError
from ...plan import Fill, Plan, StridedCopy, array_byte_span, fill_bytes, fill_reads
from .._address_cache import AddressCache
from .._fill_cache import KeptFills
from ..base import made_once, no_queue
from ..converting import HostConversion
from .compact import compaction_dispatches, scratch_words
from .compact import shader as compaction_shader
from .convert import conversion_dispatch, converts_on_device, packed_stages
from .convert import shader as conversion_shader
from .indexed import indexed_dispatches
from .layouts import Layout, layout_key
from .memory import Flat, Memory, WebGpuArray
from .native import NativeEncoder, native_encoder, shader_module
from .pick import parse_pick, pick_body
from .strategies import (
    TRANSPOSE_ROWS,
    TRANSPOSE_TILES,
    WORKGROUPS_WANTED,
    Group,
    group_copies,
)

__all__ = ["WebGpuBackend", "WebGpuArray", "NATIVE_BACKENDS"]

NATIVE_BACKENDS = ("Vulkan", "Metal", "D3D12")
ARENA_BYTES = 256 << 20
_TABLE_CACHE = 16
_LAYOUTS_KEPT = 16  # a strided plan's layouts (buffers and low offset bits) kept
LAYOUTS = True  # False: every binding tuple planned anew (tests compare the two)
STAGING_KEPT = 16 << 20  # read-back buffers up to this size are kept, one per power of two
FILL_BYTES = 64 << 10  # each fill's buffer, read by the copies that write it
TENSOR_FILLS_KEPT = 64 << 20  # tensor fills (FILL_VALUE_SEQUENCE's values) kept for later plans

# Bindings and `load_src` prepended to a kernel: (word kernel?, one buffer read and written)
_BINDINGS = {
    ("word", False): """
@group(0) @binding(0) var<storage, read> src: array<Word>;
@group(0) @binding(1) var<storage, read_write> dst: array<Word>;
fn load_src(i: u32) -> Word { return REORDER(src[i]); }
""",
    ("word", True): """
@group(0) @binding(1) var<storage, read_write> dst: array<Word>;
fn load_src(i: u32) -> Word { return REORDER(dst[i]); }
""",
    ("bytes", False): """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
fn load_src(i: u32) -> u32 { return src[i]; }
""",
    ("bytes", True): """
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
fn load_src(i: u32) -> u32 { return atomicLoad(&dst[i]); }
""",
}
_ROWS16_BINDINGS = {
    False: """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
fn load_src(i: u32) -> u32 { return src[i]; }
""",
    True: """
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
fn load_src(i: u32) -> u32 { return dst[i >> 2u][i & 3u]; }
""",
}
# the destination again, for plain stores of words no other invocation touches (the packed
# kernels: an atomic store costs an atomic operation)
_WHOLE_WORDS = """
@group(0) @binding(4) var<storage, read_write> whole_words: array<u32>;
"""
_PLAIN_STORES = ("packed", "packed_transpose")
# pipelines specialised to their element size (the override ES)
_BY_ELEMENT = (*_PLAIN_STORES, "pack")
# vec4r<element bytes>: the reorder.wgsl function that puts a backwards vector in order
_REORDER = {1: "reverse_bytes", 2: "reverse_halves", 4: "reverse_words", 8: "reverse_pairs"}


def _shader(kernel: str, same_buffer: bool) -> str:
    """The WGSL module of a strategy: bindings, pieces.wgsl (and elements.wgsl), helpers,
    then the kernel."""
    pieces = _kernel_source("pieces.wgsl")
    if kernel == "packed_transpose":
        bindings = _BINDINGS[("bytes", same_buffer)] + _WHOLE_WORDS
        return (
            bindings
            + pieces
            + _kernel_source("subword.wgsl")
            + _kernel_source("packed_transpose.wgsl")
        )
    if kernel.startswith("transpose"):
        word = "vec2<u32>" if kernel == "transpose8" else "u32"
        cells = "transpose_pairs.wgsl" if kernel == "transpose2" else "transpose_elements.wgsl"
        ti, tj = TRANSPOSE_TILES[kernel]
        code = _kernel_source("transpose.wgsl").replace("TI: u32 = 32u", f"TI: u32 = {ti}u")
        code = code.replace("TJ: u32 = 32u", f"TJ: u32 = {tj}u")
        bindings = _BINDINGS[("word", same_buffer)].replace("REORDER", "")
        return f"alias Word = {word};\n" + bindings + pieces + _kernel_source(cells) + code
    if kernel == "pack":  # (its own entry point)
        return _ROWS16_BINDINGS[same_buffer] + pieces + _kernel_source("pack.wgsl")
    pieces += _kernel_source("elements.wgsl")
    if kernel.startswith("pick"):  # pick[w]<element bytes>x<stride>p<phase>[r: backwards]
        shape = parse_pick(kernel)
        code = _kernel_source("pick.wgsl").replace("PICK_BODY", pick_body(*shape))
        bindings = _BINDINGS[("word", same_buffer)].replace("REORDER", "")
        reorder = _kernel_source("reorder.wgsl")
        word = "u32" if shape[-1] == 4 else "vec4<u32>"
        return f"alias Word = {word};\n" + bindings + reorder + pieces + code
    if kernel == "packed":
        bindings = _BINDINGS[("bytes", same_buffer)] + _WHOLE_WORDS
        return bindings + pieces + _kernel_source("subword.wgsl") + _kernel_source("packed.wgsl")
    if kernel == "rows16":
        return _ROWS16_BINDINGS[same_buffer] + pieces + _kernel_source("rows16.wgsl")
    if kernel == "funnel":
        bindings = _BINDINGS[("word", same_buffer)].replace("REORDER", "")
        funnel = _kernel_source("source_word.wgsl") + _kernel_source("funnel.wgsl")
        return "alias Word = u32;\n" + bindings + pieces + funnel
    if kernel in ("bytes", "rows"):
        merge = _kernel_source("source_word.wgsl") + _kernel_source("merge.wgsl")
        return _BINDINGS[("bytes", same_buffer)] + pieces + merge + _kernel_source(f"{kernel}.wgsl")
    word = "u32" if kernel == "u32" else "vec4<u32>"
    reorder = _REORDER[int(kernel[5:])] if kernel.startswith("vec4r") else ""
    bindings = _BINDINGS[("word", same_buffer)].replace("REORDER", reorder)
    extra = _kernel_source("reorder.wgsl") if reorder else ""
    return f"alias Word = {word};\n" + bindings + extra + pieces + _kernel_source("strided.wgsl")


def _kernel_source(name: str) -> str:
    return (resources.files(__package__) / "kernels" / name).read_text()


def adapter_description(adapter: Any) -> str:
    """'device (backend, type)' of a wgpu adapter."""
    info = adapter.info
    return f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError as e:
        raise DmlError("the webgpu backend needs wgpu: pip install 'dmlops[webgpu]'") from e
    return wgpu


def choose_adapter(name: str | None) -> Any:
    """The adapter named (a substring of its description), else the high-performance one."""
    wgpu = _wgpu()
    adapters = [
        a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] in NATIVE_BACKENDS
    ]
    if not adapters:
        raise DmlError(
            "the webgpu backend found no Vulkan, Metal or Direct3D 12 adapter: install the "
            "GPU's driver (on Linux without a GPU, Mesa's software Vulkan: "
            "apt-get install mesa-vulkan-drivers)"
        )
    if name:
        chosen = [a for a in adapters if name.lower() in adapter_description(a).lower()]
        if not chosen:
            found = "; ".join(adapter_description(a) for a in adapters)
            raise DmlError(f"webgpu: no adapter matches {name!r}; found: {found}")
        return chosen[0]
    preferred = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if preferred is not None and preferred.info["backend_type"] in NATIVE_BACKENDS:
        return preferred
    return adapters[0]


class WebGpuBackend:
    """Executes plans on a WebGPU adapter with one dispatch per kernel and buffer pair."""

    name = "webgpu"
    one_queue = False
    _instance: WebGpuBackend | None = None
    adapter_name: str | None = None

    def __init__(self) -> None:
        wgpu = _wgpu()
        self.wgpu = wgpu
        self.adapter = choose_adapter(self.adapter_name or os.environ.get("DMLOPS_WEBGPU_ADAPTER"))
        limits = self.adapter.limits
        wanted = (
            "max-buffer-size", "max-storage-buffer-binding-size",
            "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-y",
        )  # fmt: skip
        # timestamp queries, where the adapter has them, for `gpu_seconds` (benchmarks)
        features = [f for f in ("timestamp-query",) if f in self.adapter.features]
        self.device = self.adapter.request_device_sync(
            required_features=features, required_limits={k: limits[k] for k in wanted}
        )
        self.timestamps = bool(features)
        self.invocations = min(  # a workgroup's invocations at most, 32 wide
            limits["max-compute-invocations-per-workgroup"],
            32 * limits["max-compute-workgroup-size-y"],
        )
        self._timing: list[float] | None = None  # timestamp ticks of each pass, while timed
        self.queue = self.device.queue
        self._fills: dict[bytes, WebGpuArray] = {}
        self._tensor_fills: KeptFills[WebGpuArray] = KeptFills()
        max_binding = min(limits["max-storage-buffer-binding-size"], limits["max-buffer-size"])
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.memory = Memory(self.device, usage, min(ARENA_BYTES, max_binding), max_binding)
        self.dispatch_log: list[Group] | None = None  # tests set a list to see every dispatch
        self.native = (
            None if os.environ.get("DMLOPS_WEBGPU_PUBLIC_API") else native_encoder(self.device)
        )
        self.memory.before_destroy = self.flush  # (a held dispatch may use the buffer)
        self._pipelines: dict[tuple[Any, ...], Any] = {}  # (kernel, aliasing, dims, element, …)
        cpu = self.adapter.info["adapter_type"] == "CPU"
        self.workgroups_wanted = 0 if cpu else WORKGROUPS_WANTED
        if cpu and self.native is not None:  # (its work runs on the host's own threads)
            self.native.spin_seconds = 0.0
            self.native.early_workgroups = 0
        self._lock = _forking.lock()
        self._staging: dict[int, Any] = {}  # read-back buffers kept, by size
        self._read_lock = _forking.lock()

    @classmethod
    def instance(cls) -> WebGpuBackend:
        """The shared backend object (made on first use, once: arrays of two devices
        cannot meet in one call)."""
        return made_once(cls)

    @property
    def description(self) -> str:
        return adapter_description(self.adapter)

    # -- arrays and buffers ------------------------------------------------------------

    def as_array(self, obj: Any) -> WebGpuArray:
        if isinstance(obj, WebGpuArray):
            return obj
        raise BindingError(
            f"{type(obj).__name__} is not a WebGPU array: use dmlops.webgpu.asarray(...) "
            "or device='webgpu'"
        )

    def describe(self, obj: Any) -> WebGpuArray:
        return self.as_array(obj)

    def placement(self, named: Sequence[tuple[str, Any]]) -> Callable[[Any], None]:
        return no_queue

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        return {WebGpuArray: lambda a: (WebGpuArray, a.dtype, a.shape, a.strides)}

    def byte_view(self, obj: Any, writable: bool) -> tuple[Flat, int]:
        if not isinstance(obj, WebGpuArray):
            raise BindingError(
                f"{type(obj).__name__} is not a WebGPU buffer: bind dmlops.webgpu arrays "
                "(dmlops.webgpu.asarray or dmlops.webgpu.empty)"
            )
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            raise BindingError("a bound buffer must be contiguous memory")
        b = obj.block
        return Flat(b.buffer, b.base, b.offset + obj.offset, obj.nbytes), obj.nbytes

    def window(self, flat: Flat, offset: int, size: int) -> Flat:
        return Flat(flat.buffer, flat.base, flat.offset + offset, size)

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Flat]:
        def flat(arr: WebGpuArray) -> Flat:
            b = arr.block
            return Flat(b.buffer, b.base, b.offset + arr.offset + low, nbytes)

        return flat

    def owner(self, obj: Any) -> object | None:
        block = getattr(obj, "block", None)
        return None if block is None else block.buffer

    def address(self, flat: Flat) -> int:
        return flat.base + flat.offset

    def empty(self, shape: tuple[int, ...], dtype: Any) -> WebGpuArray:
        """A new uninitialised array."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        return WebGpuArray(shape, dtype, self.memory.allocate(nbytes), self)

    def new_like(self, template: Any, shape: tuple[int, ...], dtype: Any = None) -> WebGpuArray:
        return self.empty(shape, self.as_array(template).dtype if dtype is None else dtype)

    def in_library_of(self, result: Any, template: Any) -> Any:
        return result

    def copy_of(self, arr: Any) -> WebGpuArray:
        a = self.as_array(arr)
        out = self.empty(a.shape, a.dtype)
        if not a.flags.c_contiguous:
            return self.upload(self.download(a))
        words = -(-a.nbytes // 4)
        if (
            words and a.offset % 4 == 0
        ):  # a dispatch: copy_buffer_to_buffer refuses two ranges of one arena
            copy = StridedCopy(0, 0, (1,), 0, 0, (1,), (words,))  # the last word's pad too
            plan = Plan(4, (copy,), ((0, 4 * words),), ((0, 4 * words),))
            (flat_in, _), (flat_out, _) = self.byte_view(a, False), self.byte_view(out, True)
            self.run(self._dispatches(plan, [flat_in], [flat_out]))
        elif words:
            return self.upload(self.download(a))
        return out

    def upload(self, host: Any) -> WebGpuArray:
        """A WebGPU copy of a host array."""
        a = np.ascontiguousarray(host).reshape(np.shape(host))  # 0-D stays 0-D
        out = self.empty(a.shape, a.dtype)
        data = a.reshape(-1).view(np.uint8)
        if data.size % 4:
            data = np.concatenate([data, np.zeros(4 - data.size % 4, np.uint8)])
        if not data.size:
            return out
        if self.native is not None:
            self.native.write(out.block.buffer, out.block.offset, data)
        else:
            self.queue.write_buffer(out.block.buffer, out.block.offset, data)
        return out

    def download(self, arr: Any, out: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, Any]:
        """The array's bytes in host memory (into `out` when given); waits for queued work."""
        a = self.as_array(arr)
        result: np.ndarray[Any, Any]
        if a.size == 0:
            result = np.empty(a.shape, a.dtype)
        else:
            low, span = array_byte_span(a.shape, a.strides, a.itemsize)  # low <= 0
            start = a.block.offset + a.offset + low  # the lowest byte the array reaches
            first = start - start % 4
            n = -(-(start + span - first) // 4) * 4
            raw = self._read(a.block.buffer, first, n)
            at = start - first - low  # index 0
            one = raw[at : at + a.itemsize].view(a.dtype)
            result = np.lib.stride_tricks.as_strided(
                one, a.shape, a.strides, writeable=False
            ).copy()
        if out is None:
            return result
        out[...] = result
        return out

    def _read(self, buffer: Any, offset: int, nbytes: int) -> np.ndarray[Any, Any]:
        """`nbytes` bytes (a multiple of 4) from `offset` in `buffer`, after queued work:
        through a kept read-back buffer of their power-of-two size class where wgpu-native
        is reached directly, else through wgpu-py."""
        if self.native is None:
            return np.frombuffer(self.queue.read_buffer(buffer, offset, nbytes), np.uint8)
        raw = np.empty(nbytes, np.uint8)
        size = max(256, 1 << (nbytes - 1).bit_length())
        with self._read_lock:
            staging = self._staging.get(size)
            kept = staging is not None or size <= STAGING_KEPT
            if staging is None:
                usage = self.wgpu.BufferUsage.COPY_DST | self.wgpu.BufferUsage.MAP_READ
                staging = self.device.create_buffer(size=size, usage=usage)
                if kept:
                    self._staging[size] = staging
            self.native.read(buffer, offset, staging, raw)
        if not kept:
            staging.destroy()
        return raw

    def gpu_seconds(self, call: Callable[[], Any]) -> float | None:
        """GPU time of the compute passes `call` runs, each timed alone (timestamp queries
        at its start and end, the queue idle before it), summed; None where the adapter
        has no timestamp queries."""
        if not self.timestamps:
            return None
        self.synchronize()
        self._timing = []
        try:
            call()
        finally:
            timing, self._timing = self._timing, None
        return sum(timing) * self._tick_seconds()

    def _tick_seconds(self) -> float:
        """Seconds per timestamp tick (wgpu-native's queue period; 1 ns elsewhere)."""
        try:
            from wgpu.backends.wgpu_native._ffi import lib

            return float(lib.wgpuQueueGetTimestampPeriod(self.queue._internal)) * 1e-9
        except Exception:  # noqa: BLE001 - not wgpu-native: WebGPU's nanoseconds
            return 1e-9

    def flush(self) -> None:
        """Submit the dispatches held in the open native compute pass (`native.py`): code
        that submits its own work on this device's queue calls it first."""
        if self.native is not None:
            self.native.flush()

    def synchronize(self) -> None:
        """Wait until the queue's work (the held dispatches too) is done."""
        if self.native is not None:
            self.native.wait()
            return
        poll = getattr(self.device, "_poll", None)
        if poll is not None:  # wgpuDevicePoll(wait): wgpu 0.32's on_submitted_work_done fails
            poll(True)
            return
        self.queue.read_buffer(self._fence, 0, 4)  # a map waits for all submitted work

    @property
    def _fence(self) -> Any:
        fence = getattr(self, "_fence_buffer", None)
        if fence is None:
            usage = self.wgpu.BufferUsage.COPY_SRC | self.wgpu.BufferUsage.STORAGE
            fence = self._fence_buffer = self.device.create_buffer(size=4, usage=usage)
        return fence

    # -- execution ---------------------------------------------------------------------

    def pipeline(
        self, kernel: str, same_buffer: bool, dims: int = 8, element: int = 0, per_thread: int = 0
    ) -> Any:
        """The compute pipeline of a strategy for pieces of `dims` dimensions (for the
        packed kernels, elements of `element` bytes; for the element-wise ones,
        `per_thread` elements a thread), built once."""
        key = (kernel, same_buffer, dims, element, per_thread)
        pipeline = self._pipelines.get(key)
        if pipeline is None:
            module = shader_module(self.device, _shader(kernel, same_buffer))
            constants = {"DIMS": dims, **({"ES": element} if element else {})}
            if per_thread:
                constants["PER_THREAD"] = per_thread
            if kernel.startswith("transpose"):
                rows = TRANSPOSE_ROWS[kernel]
                while rows > 8 and 32 * rows > self.invocations:
                    rows //= 2
                constants["ROWS"] = rows
            pipeline = self.device.create_compute_pipeline(
                layout="auto",
                compute={"module": module, "entry_point": "main", "constants": constants},
            )
            with self._lock:
                self._pipelines[key] = pipeline
        return pipeline

    def conversion_pipeline(self, source: int, target: int, same_buffer: bool) -> Any:
        """convert.wgsl's pipeline for a pair of type codes (convert.py), built once."""
        key = ("convert", source, target, same_buffer)
        pipeline = self._pipelines.get(key)
        if pipeline is None:
            code = conversion_shader(_kernel_source("convert.wgsl"), same_buffer)
            pipeline = self.device.create_compute_pipeline(
                layout="auto",
                compute={
                    "module": shader_module(self.device, code),
                    "entry_point": "main",
                    "constants": {"SRC": source, "DST": target},
                },
            )
            with self._lock:
                self._pipelines[key] = pipeline
        return pipeline

    def compaction_pipeline(self, entry: str, roles: dict[str, int], written: set[int]) -> Any:
        """One of compact.wgsl's passes for a layout of its buffers (compact.py), built once."""
        key = ("compact", entry, tuple(sorted(roles.items())), tuple(sorted(written)))
        pipeline = self._pipelines.get(key)
        if pipeline is None:
            code = compaction_shader(_kernel_source("compact.wgsl"), roles, written)
            pipeline = self.device.create_compute_pipeline(
                layout="auto",
                compute={"module": shader_module(self.device, code), "entry_point": entry},
            )
            with self._lock:
                self._pipelines[key] = pipeline
        return pipeline

    @property
    def _tensor_fill_bytes(self) -> int:
        return self._tensor_fills.bytes

    def _fill_array(self, pattern: Fill, tensor: bool) -> WebGpuArray:
        """The array holding `pattern`, read by the copies that write that fill: an element
        fill's made once and kept; a tensor fill's kept among the most recently used up to
        TENSOR_FILLS_KEPT bytes (the dispatches that read one hold it too: its memory goes
        back to the pool when the last holder drops it)."""

        def made(p: Fill) -> WebGpuArray:
            return self.upload(np.frombuffer(fill_bytes(p), np.uint8))

        if tensor:  # (a sequence's bytes made only where its rule is not kept)
            return self._tensor_fills.get(pattern, made, TENSOR_FILLS_KEPT)
        element = fill_bytes(pattern)
        found = self._fills.get(element)
        if found is None:
            found = self._fills[element] = made(element)
        return found

    def _dispatches(self, plan: Plan, ins: Sequence[Flat], outs: Sequence[Flat]) -> list[Any]:
        """(pipeline, bind group, grid, group, kept buffers) of every dispatch of `plan`."""
        plan, ins, held = self.with_fills(plan, ins)
        buffers, groups = self.groups(plan, ins, outs)
        dispatches = [self.dispatch_of(g, buffers, g.table, None, held) for g in groups]
        if plan.indexed:
            dispatches += indexed_dispatches(self, plan.indexed, plan.element_size, ins, outs)
        return dispatches

    def with_fills(
        self, plan: Plan, ins: Sequence[Flat]
    ) -> tuple[Plan, Sequence[Flat], tuple[WebGpuArray, ...]]:
        """The plan reading its fills from buffers, the inputs with those buffers after
        them, and the fills' arrays (to keep as long as the dispatches)."""
        if not plan.writes_fills:
            return plan, ins, ()
        patterns = plan.fill_patterns(FILL_BYTES)  # (fill k is patterns[-1 - k])
        arrays = [
            self._fill_array(b, plan.is_tensor_fill(len(patterns) - 1 - j))
            for j, b in enumerate(patterns)
        ]
        fills = [self.byte_view(a, False)[0] for a in arrays]
        return fill_reads(plan, FILL_BYTES), [*ins, *fills], tuple(arrays)

    def groups(
        self, plan: Plan, ins: Sequence[Flat], outs: Sequence[Flat], shift: int = 0
    ) -> tuple[list[Any], list[Group]]:
        """The distinct buffers the flats lie in and the plan's dispatch groups on them
        (every flat `shift` bytes further on, where given)."""
        index: dict[int, int] = {}
        buffers: list[Any] = []
        for f in (*ins, *outs):
            if f.base not in index:
                index[f.base] = len(buffers)
                buffers.append(f.buffer)
        groups = group_copies(
            plan,
            [(index[f.base], f.offset + shift) for f in ins],
            [(index[f.base], f.offset + shift) for f in outs],
            self.workgroups_wanted,
        )
        return buffers, groups

    def dispatch_of(
        self,
        g: Group,
        buffers: Sequence[Any],
        table: Any,
        header: Any,
        held: tuple[Any, ...],
    ) -> tuple[Any, ...]:
        """A group's dispatch (pipeline, bind group, grid, group, kept buffers) reading
        `table` (a numpy array, uploaded here, or a GPU buffer) and `header` (made here
        where None)."""
        wgpu, device = self.wgpu, self.device
        same = g.src == g.dst
        element = int(g.table[0, 5]) if g.kernel in _BY_ELEMENT else 0
        pipeline = self.pipeline(g.kernel, same, g.dims, element, g.per_thread)
        grid = g.grid
        uploaded = (
            device.create_buffer_with_data(data=table, usage=wgpu.BufferUsage.STORAGE)
            if isinstance(table, np.ndarray)
            else table
        )
        if header is None:
            header = device.create_buffer_with_data(
                data=np.array([g.pieces, g.tiles, grid[0], 0], np.uint32),
                usage=wgpu.BufferUsage.UNIFORM,
            )
        entries = [
            {"binding": 1, "resource": {"buffer": buffers[g.dst]}},
            {"binding": 2, "resource": {"buffer": uploaded}},
            {"binding": 3, "resource": {"buffer": header}},
        ]
        if not same:
            entries.append({"binding": 0, "resource": {"buffer": buffers[g.src]}})
        if g.kernel in _PLAIN_STORES:
            entries.append({"binding": 4, "resource": {"buffer": buffers[g.dst]}})
        bind_group = device.create_bind_group(
            layout=pipeline.get_bind_group_layout(0), entries=entries
        )
        return (pipeline, bind_group, grid, g, (uploaded, header, *held))

    def table_buffer(self, nbytes: int) -> Any:
        """A buffer a table is written into before each use (a table ring's slot)."""
        usage = self.wgpu.BufferUsage.STORAGE | self.wgpu.BufferUsage.COPY_DST
        return self.device.create_buffer(size=nbytes, usage=usage)

    def write_ahead(self, buffer: Any, data: np.ndarray[Any, Any]) -> None:
        """Write `data` at the start of `buffer` before the open pass's dispatches (none of
        which may read it: `NativeEncoder.write_ahead`)."""
        if self.native is not None:
            self.native.write_ahead(buffer, data)
        else:  # (no open pass: every dispatch was submitted)
            self.queue.write_buffer(buffer, 0, data)

    def run(self, dispatches: list[Any], native: list[Any] | None = None) -> None:
        """Encode the dispatches in one compute pass and submit it: through wgpu-py, or
        through `native` steps (NativeEncoder.steps of these dispatches, once validated)."""
        if not dispatches:
            return
        timing = self._timing
        if native is not None and self.native is not None and timing is None:
            self.native.run(native)
        else:
            self.flush()  # (the open native pass's dispatches come first)
            self._submit(dispatches, timing)
        log = self.dispatch_log
        if log is not None:
            log.extend(d[3] for d in dispatches)

    def _submit(self, dispatches: list[Any], timing: list[float] | None) -> None:
        """The dispatches as one compute pass through wgpu-py, submitted; with `timing`, the
        pass between two timestamps, waited for, its ticks appended."""
        wgpu, device = self.wgpu, self.device
        encoder = device.create_command_encoder()
        writes = None
        if timing is not None:
            query = device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
            writes = {
                "query_set": query, "beginning_of_pass_write_index": 0,
                "end_of_pass_write_index": 1,
            }  # fmt: skip
        compute = encoder.begin_compute_pass(timestamp_writes=writes)
        for pipeline, bind_group, (x, y), _, _ in dispatches:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(x, y, 1)
        compute.end()
        if timing is None:
            self.queue.submit([encoder.finish()])
            return
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        resolved = device.create_buffer(size=16, usage=usage)
        encoder.resolve_query_set(query, 0, 2, resolved, 0)
        self.queue.submit([encoder.finish()])
        ticks = np.frombuffer(self.queue.read_buffer(resolved, 0, 16), np.uint64)
        timing.append(float(ticks[1] - ticks[0]))

    def executor(self, plan: Plan) -> Any:
        if plan.conversion is not None and converts_on_device(plan):
            return _DeviceConversion(self, plan)
        if plan.conversion is not None:  # 64-bit types and ScaleBias: on the host, see below
            return _OnHost(self, HostConversion(plan))
        if plan.compactions:  # NONZERO_COORDINATES's compaction: compact.wgsl's passes
            return _DeviceCompaction(self, plan)
        return _WebGpuExecutor(self, plan)


class _DeviceConversion:
    """CAST's converting copies on the GPU (convert.py): gathered into a packed buffer of
    the source type, converted into one of the target type, scattered into place; the two
    packed buffers are the executor's own (one call at a time uses them)."""

    def __init__(self, backend: WebGpuBackend, plan: Plan) -> None:
        assert plan.conversion is not None
        self.backend = backend
        self.conversion = plan.conversion
        gather, scatter, self.count = packed_stages(plan)
        self.gather = _WebGpuExecutor(backend, gather)
        self.scatter = _WebGpuExecutor(backend, scatter)
        source, target = (np.dtype(t).itemsize for t in plan.conversion)
        words = [max(1, -(-self.count * size // 4)) for size in (source, target)]
        self.packed = [backend.empty((n,), np.uint32) for n in words]
        self.flats = [backend.byte_view(a, True)[0] for a in self.packed]
        source_flat, target_flat = self.flats
        self._convert = conversion_dispatch(
            backend, source_flat, target_flat, self.count, plan.conversion
        )
        self._lock = _forking.lock()

    def __call__(self, ins: Sequence[Flat], outs: Sequence[Flat], queue: Any = None) -> None:
        if not self.count:
            return
        with self._lock:
            self.gather(ins, [self.flats[0]])
            self.backend.run([self._convert])
            self.scatter([self.flats[1]], outs)

    def bound(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)


class _DeviceCompaction:
    """A plan of compactions on the GPU (compact.py): three passes each, in one compute
    pass; their dispatches made once per binding tuple."""

    def __init__(self, backend: WebGpuBackend, plan: Plan) -> None:
        assert plan.compactions and not plan.copies and not plan.indexed
        self.backend = backend
        self.plan = plan
        usage = backend.wgpu.BufferUsage.STORAGE
        self.scratch = [
            backend.device.create_buffer(size=4 * scratch_words(c), usage=usage)
            for c in plan.compactions
        ]
        self.cache: AddressCache[list[Any]] = AddressCache(_TABLE_CACHE)
        self._lock = _forking.lock()

    def _dispatches(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> list[Any]:
        key = tuple(f.base + f.offset for f in (*ins, *outs))
        backend = self.backend

        def made() -> list[Any]:
            found: list[Any] = []
            for c, scratch in zip(self.plan.compactions, self.scratch, strict=True):
                found += compaction_dispatches(backend, c, ins, outs, scratch)
            return found

        return self.cache.get(key, made)

    def __call__(self, ins: Sequence[Flat], outs: Sequence[Flat], queue: Any = None) -> None:
        with self._lock:  # (the scratch is the executor's own)
            self.backend.run(self._dispatches(ins, outs))

    def bound(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)


class _OnHost:
    """A plan stage that has no shader yet, run on the host: the bound bytes read back,
    the host executor run on them (CAST's conversion, `HostConversion`; NONZERO's
    compaction, `HostCompaction`) and the outputs written again. (WGSL has no 64-bit
    arithmetic: conversions with a 64-bit type and ScaleBias run here.)"""

    def __init__(self, backend: WebGpuBackend, host: Any) -> None:
        self.backend = backend
        self.host = host

    def _bytes(self, f: Flat) -> tuple[np.ndarray[Any, Any], int, int]:
        """The flat's bytes (read whole 4-byte words), where they start, and f's offset in them."""
        start = f.offset - f.offset % 4
        words = -(-(f.offset + f.size - start) // 4) * 4
        return self.backend._read(f.buffer, start, words).copy(), start, f.offset - start

    def __call__(self, ins: Sequence[Flat], outs: Sequence[Flat], queue: Any = None) -> None:
        backend = self.backend
        backend.flush()
        read = [self._bytes(f) for f in ins]
        written = [self._bytes(f) for f in outs]
        self.host([raw[at:] for raw, _, at in read], [raw[at:] for raw, _, at in written])
        for f, (raw, start, _) in zip(outs, written, strict=True):
            backend.queue.write_buffer(f.buffer, start, raw)

    def bound(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> Callable[..., None]:
        return lambda queue=None: self(ins, outs)


def _addresses(ins: Sequence[Flat], outs: Sequence[Flat]) -> tuple[int, ...]:
    """A binding tuple's key: each flat's synthetic address (bases are never reused)."""
    return tuple(f.base + f.offset for f in (*ins, *outs))


class _WebGpuExecutor:
    """A plan's dispatches, resolved (tables uploaded, bind groups made) per binding tuple;
    laid out once per buffers and low offset bits (`layouts.py`), so a binding at new
    offsets (each call's new output) plans nothing."""

    def __init__(self, backend: WebGpuBackend, plan: Plan) -> None:
        self.backend = backend
        self.plan = plan
        self.cache: AddressCache[_Recorded] = AddressCache(_TABLE_CACHE)
        self.layouts: AddressCache[Layout] = AddressCache(_LAYOUTS_KEPT)

    def _resolve(self, ins: Sequence[Flat], outs: Sequence[Flat], key: Hashable) -> _Recorded:
        return self.cache.get(key, lambda: self._made(ins, outs))

    def _made(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> _Recorded:
        backend = self.backend
        if not LAYOUTS:
            return _Recorded(backend, backend._dispatches(self.plan, ins, outs))
        key = layout_key(ins, outs)
        layout = self.layouts.entries.get(key)
        if layout is None:  # (this binding's own dispatches, kept to shift for others)
            made = Layout(backend, self.plan, ins, outs)
            self.layouts.get(key, lambda: made)
            return _Recorded(backend, made.dispatches_here)
        if not layout.movable:
            return _Recorded(backend, backend._dispatches(self.plan, ins, outs))
        return _Recorded(backend, layout.dispatches(ins, outs), validated=True)

    def __call__(self, ins: Sequence[Flat], outs: Sequence[Flat], queue: Any = None) -> None:
        key = _addresses(ins, outs)
        found = self.cache.entries.get(key)
        if found is None:
            if LAYOUTS:  # (a binding at new offsets of a known key)
                layout = self.layouts.entries.get(layout_key(ins, outs))
                if layout is not None and layout.movable:
                    layout.run_at(ins, outs)
                    return
            found = self._resolve(ins, outs, key)
        found.run()

    def bound(self, ins: Sequence[Flat], outs: Sequence[Flat]) -> Callable[..., None]:
        # (its own tables: a ring's slots are rewritten)
        recorded = self._resolve(ins, outs, _addresses(ins, outs))
        return lambda queue=None: recorded.run()


class _Recorded:
    """A binding's dispatches: encoded through wgpu-py the first time (validation errors
    raise there; `validated`: dispatches like others that were), then through wgpu-native's
    C functions where those are available."""

    def __init__(self, backend: WebGpuBackend, dispatches: list[Any], validated: bool = False):
        self.backend = backend
        self.dispatches = dispatches
        self.steps: list[Any] | None = None
        if validated and backend.native is not None:
            self.steps = NativeEncoder.steps(dispatches)

    def run(self) -> None:
        self.backend.run(self.dispatches, self.steps)
        if self.steps is None and self.backend.native is not None:
            self.steps = NativeEncoder.steps(self.dispatches)
