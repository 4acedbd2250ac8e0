"""Re-encoding validated dispatches straight through wgpu-native's C functions.

wgpu-py checks and wraps every call (descriptor structs, wrapper objects, error scopes),
which costs about 5 µs a call and 35 µs for an empty command buffer. A binding's
dispatches are encoded once through wgpu-py, where any validation error is raised; after
that the same commands, on the same pipelines and bind groups, are encoded with the C
functions directly. Where wgpu-py's internals are not there, None is returned and the
backend stays on the public API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["NativeEncoder", "native_encoder"]

Step = tuple[Any, Any, int, int]  # (pipeline handle, bind group handle, x, y)


class NativeEncoder:
    """Encodes one compute pass of (pipeline, bind group, grid) steps and submits it."""

    def __init__(self, ffi: Any, lib: Any, device: Any) -> None:
        self.ffi = ffi
        self.lib = lib
        self.device = device._internal
        self.queue = device.queue._internal
        self.encoder_desc = ffi.new("WGPUCommandEncoderDescriptor *")
        self.pass_desc = ffi.new("WGPUComputePassDescriptor *")
        self.buffer_desc = ffi.new("WGPUCommandBufferDescriptor *")

    @staticmethod
    def steps(dispatches: Sequence[Any]) -> list[Step]:
        """The C handles of validated (pipeline, bind group, (x, y), ...) dispatches."""
        return [(p._internal, g._internal, x, y) for p, g, (x, y), *_ in dispatches]

    def run(self, steps: Sequence[Step]) -> None:
        lib, null = self.lib, self.ffi.NULL
        encoder = lib.wgpuDeviceCreateCommandEncoder(self.device, self.encoder_desc)
        compute = lib.wgpuCommandEncoderBeginComputePass(encoder, self.pass_desc)
        for pipeline, group, x, y in steps:
            lib.wgpuComputePassEncoderSetPipeline(compute, pipeline)
            lib.wgpuComputePassEncoderSetBindGroup(compute, 0, group, 0, null)
            lib.wgpuComputePassEncoderDispatchWorkgroups(compute, x, y, 1)
        lib.wgpuComputePassEncoderEnd(compute)
        lib.wgpuComputePassEncoderRelease(compute)
        commands = lib.wgpuCommandEncoderFinish(encoder, self.buffer_desc)
        lib.wgpuCommandEncoderRelease(encoder)
        lib.wgpuQueueSubmit(self.queue, 1, self.ffi.new("WGPUCommandBuffer[1]", [commands]))
        lib.wgpuCommandBufferRelease(commands)

    def wait(self) -> None:
        """Block until the device's submitted work is done."""
        self.lib.wgpuDevicePoll(self.device, True, self.ffi.NULL)


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
            "wgpuDevicePoll",
        )  # fmt: skip
        if not all(hasattr(lib, n) for n in needed) or not hasattr(device, "_internal"):
            return None
        return NativeEncoder(ffi, lib, device)
    except Exception:  # noqa: BLE001 - any mismatch: stay on the public API
        return None
