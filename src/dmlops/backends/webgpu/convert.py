"""CAST's converting copies on the GPU: each copy's elements gathered (their own type) into
a packed buffer by the strided kernels, converted there word by word (convert.wgsl), and
scattered (the new type) into place by the strided kernels again. WGSL has 32-bit integers
and floats only: the pairs of FLOAT32, FLOAT16 and the 8-, 16- and 32-bit integer types
convert on the device; pairs with a 64-bit type (FLOAT64, INT64, UINT64) and
ELEMENT_WISE_IDENTITY's ScaleBias run through host memory (`converting.HostConversion`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...plan import Plan, StridedCopy
from ...tensor import packed_strides

__all__ = ["DEVICE_TYPES", "converts_on_device", "packed_stages", "conversion_dispatch"]

DEVICE_TYPES = ("float32", "float16", "int32", "uint32", "int16", "uint16", "int8", "uint8")
"""The element types convert.wgsl reads and writes (its type codes, in this order)."""

THREADS = 256


def shader(source: str, same_buffer: bool) -> str:
    """convert.wgsl, reading its destination's buffer where both lie in one."""
    if not same_buffer:
        return source
    declared = "@group(0) @binding(0) var<storage, read> src: array<u32>;"
    return source.replace(declared, "").replace("src[", "dst[")


MAX_GROUPS_X = 65535


def converts_on_device(plan: Plan) -> bool:
    """Whether convert.wgsl runs this plan's conversion."""
    if plan.conversion is None or plan.scale_bias is not None:
        return False
    source, target = (np.dtype(t).name for t in plan.conversion)
    return source in DEVICE_TYPES and target in DEVICE_TYPES and not plan.indexed


def packed_stages(plan: Plan) -> tuple[Plan, Plan, int]:
    """(the gather into a packed buffer of the source type, the scatter from one of the
    target type, the elements between): copy k's elements lie at the packed buffers'
    element `sum(counts before k)`, in its own dimension order on both sides."""
    assert plan.conversion is not None
    source, target = (np.dtype(t).itemsize for t in plan.conversion)
    gathers, scatters, at = [], [], 0
    for c in plan.copies:
        packed = packed_strides(c.shape)
        gathers.append(
            StridedCopy(c.src, c.src_offset, c.src_strides, 0, at * source, packed, c.shape)
        )
        scatters.append(
            StridedCopy(0, at * target, packed, c.dst, c.dst_offset, c.dst_strides, c.shape)
        )
        at += c.element_count
    gather = Plan(source, tuple(gathers), plan.input_spans, ((0, at * source),))
    scatter = Plan(target, tuple(scatters), ((0, at * target),), plan.output_spans)
    return gather, scatter, at


def conversion_dispatch(
    backend: Any, source_flat: Any, target_flat: Any, count: int, conversion: tuple[str, str]
) -> tuple[Any, ...]:
    """The (pipeline, bind group, grid, label, kept buffers) of one convert.wgsl dispatch
    from `count` packed elements at `source_flat` to `target_flat` (4-byte aligned)."""
    wgpu, device = backend.wgpu, backend.device
    codes = [DEVICE_TYPES.index(np.dtype(t).name) for t in conversion]
    words = -(-count * np.dtype(conversion[1]).itemsize // 4)
    groups = max(1, -(-words // THREADS))
    grid = (min(groups, MAX_GROUPS_X), -(-groups // MAX_GROUPS_X))
    same = source_flat.buffer is target_flat.buffer  # (one arena: the ranges are apart)
    pipeline = backend.conversion_pipeline(*codes, same)
    assert source_flat.offset % 4 == 0 and target_flat.offset % 4 == 0
    header = device.create_buffer_with_data(
        data=np.array(
            [count, grid[0], source_flat.offset // 4, target_flat.offset // 4], np.uint32
        ),
        usage=wgpu.BufferUsage.UNIFORM,
    )
    entries = [
        {"binding": 1, "resource": {"buffer": target_flat.buffer}},
        {"binding": 2, "resource": {"buffer": header}},
    ]
    if not same:
        entries.append({"binding": 0, "resource": {"buffer": source_flat.buffer}})
    bind_group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
    names = [np.dtype(t).name for t in conversion]
    return (pipeline, bind_group, grid, f"convert {names[0]} -> {names[1]}", (header,))
