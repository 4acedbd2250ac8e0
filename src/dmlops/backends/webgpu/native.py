"""Re-encoding validated dispatches straight through wgpu-native's C functions (several
calls' dispatches a submission), and making dmlops' own shader modules without naga's loop
guards.

wgpu-py checks and wraps every call (descriptor structs, wrapper objects, error scopes),
which costs about 5 µs a call and 35 µs for an empty command buffer. A binding's
dispatches are encoded once through wgpu-py, where any validation error is raised; after
that the same commands, on the same pipelines and bind groups, are encoded with the C
functions directly, into one compute pass left open for the next call's (a submission
costs wgpu-native tens of microseconds of host time): the pass is submitted every
MAX_PENDING dispatches and before anything else reaches the queue (a write, a read, a wait,
a submission through wgpu-py, a buffer destroyed), so the queue sees every command in
program order; a large dispatch that finds the queue idle is submitted at once
(EARLY_WORKGROUPS). Host transfers go the same way: a write is one `wgpuQueueWriteBuffer`,
a read one copy into a kept read-back buffer, mapped while the device is polled (without
blocking for up to `spin_seconds` on a GPU adapter, then blocking). Where wgpu-py's
internals are not there, None is returned and the backend stays on the public API.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import _forking

__all__ = ["NativeEncoder", "native_encoder", "shader_module", "trusted_modules"]

Step = tuple[Any, Any, int, int]  # (pipeline handle, bind group handle, x, y)


# dispatches held in one open compute pass before it is submitted (onnxruntime-web's
# WebGPU backend batches its own the same way): a submission costs wgpu-native tens of
# microseconds of host time, an encoded dispatch a few
MAX_PENDING = 16
# on a GPU adapter, a wait (or a read-back's map) polls the device without blocking for up
# to this long before it blocks: a blocking poll sleeps until the driver wakes it, tens of
# microseconds after the work is done (as CUDA's default synchronisation spins; a CPU
# adapter, whose threads the spinning would slow, blocks at once). 0.5 ms left batches of
# large copies to the blocking poll (H100, ten float16 rows copies of 128 MiB a wait:
# 107.8-108.1 -> 104.3-105.6 µs a call at 20 ms)
SPIN_SECONDS = 0.02
# a dispatch of at least this many workgroups, encoded while the queue is idle (nothing
# submitted since the last wait or read-back), is submitted at once, so the GPU starts on it
# while the next calls are encoded; held dispatches after it wait for MAX_PENDING or a flush
# as before (every submission costs the GPU a gap, so only the first is hurried). H100, ten
# calls a wait: 8,192 -> 2,048 took a 128 MiB WebGPU embedding gather (4,096 workgroups)
# from 117-145 to 109-110 µs; the 5-D box's 675 workgroups gained nothing hurried
EARLY_WORKGROUPS = 2048


class NativeEncoder:
    """Encodes (pipeline, bind group, grid) steps into one open compute pass and submits it
    every MAX_PENDING dispatches, at once for a large dispatch on an idle queue, and before
    any write, read or wait (`flush`)."""

    def __init__(self, ffi: Any, lib: Any, device: Any) -> None:
        self.ffi = ffi
        self.lib = lib
        self.device = device._internal
        self.queue = device.queue._internal
        self.encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *")
        self.pass_desc = ffi.new("WGPUComputePassDescriptor *")
        self.buffer_desc = ffi.new("WGPUCommandBufferDescriptor *")

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")  # type: ignore[untyped-decorator]
        def mapped(status: int, message: Any, state: Any, unused: Any) -> None:
            ffi.cast("int *", state)[0] = status

        self._mapped = mapped  # kept alive as long as the encoder
        self.map_read = int(lib.WGPUMapMode_Read)
        self.map_success = int(lib.WGPUMapAsyncStatus_Success)
        self._lock = _forking.rlock()
        self._open: tuple[Any, Any] | None = None  # (encoder, compute pass) not yet submitted
        self.pending = 0  # dispatches in the open pass
        self.submissions = 0
        self.idle = True  # nothing submitted since the last wait or read-back
        self.spin_seconds = SPIN_SECONDS  # (0 for a CPU adapter: the backend sets it)
        self.early_workgroups = EARLY_WORKGROUPS  # (0: never early; the backend sets it)

    @staticmethod
    def steps(dispatches: Sequence[Any]) -> list[Step]:
        """The C handles of validated (pipeline, bind group, (x, y), ...) dispatches."""
        return [(p._internal, g._internal, x, y) for p, g, (x, y), *_ in dispatches]

    def run(self, steps: Sequence[Step]) -> None:
        """Append the steps to the open compute pass (opened if none is)."""
        lib, null = self.lib, self.ffi.NULL
        with self._lock:
            if self._open is None:
                encoder = lib.wgpuDeviceCreateCommandEncoder(self.device, self.encoder_desc)
                compute = lib.wgpuCommandEncoderBeginComputePass(encoder, self.pass_desc)
                self._open = (encoder, compute)
            compute = self._open[1]
            largest = 0
            for pipeline, group, x, y in steps:
                lib.wgpuComputePassEncoderSetPipeline(compute, pipeline)
                lib.wgpuComputePassEncoderSetBindGroup(compute, 0, group, 0, null)
                lib.wgpuComputePassEncoderDispatchWorkgroups(compute, x, y, 1)
                largest = max(largest, x * y)
            self.pending += len(steps)
            early = self.idle and 0 < self.early_workgroups <= largest
            if early or self.pending >= MAX_PENDING:
                self.flush()

    def flush(self) -> None:
        """Submit the open compute pass, if any."""
        lib = self.lib
        with self._lock:
            if self._open is None:
                return
            encoder, compute = self._open
            self._open = None
            self.pending = 0
            lib.wgpuComputePassEncoderEnd(compute)
            lib.wgpuComputePassEncoderRelease(compute)
            commands = lib.wgpuCommandEncoderFinish(encoder, self.buffer_desc)
            lib.wgpuCommandEncoderRelease(encoder)
            lib.wgpuQueueSubmit(self.queue, 1, self.ffi.new("WGPUCommandBuffer[1]", [commands]))
            lib.wgpuCommandBufferRelease(commands)
            self.submissions += 1
            self.idle = False

    def write(self, buffer: Any, offset: int, data: np.ndarray[Any, Any]) -> None:
        """Queue a write of `data` (C-contiguous, a multiple of 4 bytes) at `offset`, after
        the dispatches before it."""
        self.flush()
        self.lib.wgpuQueueWriteBuffer(
            self.queue, buffer._internal, offset, self.ffi.from_buffer(data), data.nbytes
        )

    def write_ahead(self, buffer: Any, data: np.ndarray[Any, Any]) -> None:
        """Queue a write of `data` at the start of `buffer` without submitting the open pass
        first: the queue runs it before that pass (and after every pass submitted before),
        so it is for a buffer no dispatch of the open pass reads (a table ring's slot last
        bound more than MAX_PENDING dispatches ago: `layouts.py`)."""
        self.lib.wgpuQueueWriteBuffer(
            self.queue, buffer._internal, 0, self.ffi.from_buffer(data), data.nbytes
        )

    def read(self, buffer: Any, offset: int, staging: Any, out: np.ndarray[Any, Any]) -> None:
        """Copy `out.nbytes` bytes (a multiple of 4) from `offset` in `buffer` into `out`
        through `staging` (a MAP_READ buffer at least that large), after queued work."""
        self.flush()
        lib, ffi, nbytes = self.lib, self.ffi, out.nbytes
        encoder = lib.wgpuDeviceCreateCommandEncoder(self.device, self.encoder_desc)
        lib.wgpuCommandEncoderCopyBufferToBuffer(
            encoder, buffer._internal, offset, staging._internal, 0, nbytes
        )
        commands = lib.wgpuCommandEncoderFinish(encoder, self.buffer_desc)
        lib.wgpuCommandEncoderRelease(encoder)
        lib.wgpuQueueSubmit(self.queue, 1, ffi.new("WGPUCommandBuffer[1]", [commands]))
        lib.wgpuCommandBufferRelease(commands)
        state = ffi.new("int[1]")
        info = ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        info.callback = self._mapped
        info.userdata1 = state
        lib.wgpuBufferMapAsync(staging._internal, self.map_read, 0, nbytes, info[0])
        self._poll_until(lambda: state[0] != 0)  # (the copy came after every submission)
        if state[0] != self.map_success:
            raise RuntimeError(f"webgpu: mapping a read-back buffer failed (status {state[0]})")
        try:
            source = lib.wgpuBufferGetConstMappedRange(staging._internal, 0, nbytes)
            ffi.memmove(ffi.from_buffer(out), source, nbytes)
        finally:
            lib.wgpuBufferUnmap(staging._internal)

    def wait(self) -> None:
        """Submit the open pass and return once the device's work is done: polled without
        blocking for up to `spin_seconds`, then with a blocking poll."""
        self.flush()
        self._poll_until(None)

    def _poll_until(self, done: Callable[[], bool] | None) -> None:
        """Poll the device until `done()` (None: until its queue is empty), without blocking
        for up to `spin_seconds`, then blocking; the queue is idle after."""
        lib, device, null = self.lib, self.device, self.ffi.NULL
        deadline = time.perf_counter() + self.spin_seconds
        while True:
            block = time.perf_counter() >= deadline
            empty = lib.wgpuDevicePoll(device, block, null) & 0xFF  # (1: the queue is empty)
            finished = done() if done is not None else bool(empty) or block
            if finished:
                break
        self.idle = True


def native_encoder(device: Any) -> NativeEncoder | None:
    """A NativeEncoder for a wgpu-native device, or None where that backend is not in use."""
    try:
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        needed = (
            "wgpuDeviceCreateCommandEncoder", "wgpuCommandEncoderBeginComputePass",
            "wgpuComputePassEncoderSetPipeline", "wgpuComputePassEncoderSetBindGroup",
            "wgpuComputePassEncoderDispatchWorkgroups", "wgpuComputePassEncoderEnd",
            "wgpuComputePassEncoderRelease", "wgpuCommandEncoderFinish",
            "wgpuCommandEncoderRelease", "wgpuQueueSubmit", "wgpuCommandBufferRelease",
            "wgpuDevicePoll", "wgpuQueueWriteBuffer", "wgpuCommandEncoderCopyBufferToBuffer",
            "wgpuBufferMapAsync", "wgpuBufferGetConstMappedRange", "wgpuBufferUnmap",
        )  # fmt: skip
        if not all(hasattr(lib, n) for n in needed) or not hasattr(device, "_internal"):
            return None
        return NativeEncoder(ffi, lib, device)
    except Exception:  # noqa: BLE001 - any mismatch: stay on the public API
        return None


# wgpu-native's runtime checks kept in dmlops' own modules: bounds checks (every index
# clamped into its buffer), not forced loop bounding (a counter and exit test naga adds to
# every loop against endless ones, where the driver cannot prove an end: dmlops' loops end
# by construction, and on NVIDIA's Vulkan driver the guard cost the tiled transposes a third
# of their speed and the 8-D walks nearly half)
_BOUNDS_CHECKS = 1  # WGPUShaderRuntimeChecks_BoundsChecks


def trusted_modules(device: Any) -> bool:
    """Whether `device` makes modules through wgpu-native's trusted creation."""
    try:
        from wgpu.backends.wgpu_native import _api

        needed = ("new_struct_p", "to_c_string_view", "libf", "GPUShaderModule", "ffi", "lib")
        return (
            all(hasattr(_api, n) for n in needed)
            and hasattr(_api.lib, "wgpuDeviceCreateShaderModuleTrusted")
            and isinstance(device, _api.GPUDevice)
        )
    except Exception:  # noqa: BLE001 - any mismatch: wgpu-py's public creation
        return False


def shader_module(device: Any, code: str) -> Any:
    """A module of dmlops' WGSL kernels: with bounds checks but without loop guards where
    wgpu-native is in use (`trusted_modules`), else through wgpu-py's public API."""
    if not trusted_modules(device):
        return device.create_shader_module(code=code)
    from wgpu.backends.wgpu_native import _api

    source = _api.new_struct_p("WGPUShaderSourceWGSL *", code=_api.to_c_string_view(code))
    source[0].chain.next = _api.ffi.NULL
    source[0].chain.sType = _api.lib.WGPUSType_ShaderSourceWGSL
    desc = _api.new_struct_p(
        "WGPUShaderModuleDescriptor *",
        nextInChain=_api.ffi.cast("WGPUChainedStruct *", source),
        label=_api.to_c_string_view("dmlops"),
    )
    handle = _api.libf.wgpuDeviceCreateShaderModuleTrusted(device._internal, desc, _BOUNDS_CHECKS)
    if handle == _api.ffi.NULL:
        raise RuntimeError("webgpu: shader module creation failed")
    return _api.GPUShaderModule("dmlops", handle, device)
