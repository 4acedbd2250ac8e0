"""A plan's stream compactions (NONZERO_COORDINATES's; `dmlops.compaction`) on the GPU:
compact.wgsl's three passes per compaction — each block of 1024 elements counts its nonzero
elements, one workgroup turns the counts into each block's first row (and writes the count),
and each block writes its rows — one compute pass, no read-back. Elements are read where
they lie (the box's strides) and rows written where they go (their strides), so no copy
comes before or after."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compaction import Compaction
from .memory import Flat

__all__ = ["compaction_dispatches", "shader", "scratch_words"]

BLOCK = 1024  # elements a workgroup takes (compact.wgsl's BLOCK)
MAX_GROUPS_X = 65535
_MASKS = {  # an element's (low word, high word) bits that make it nonzero
    ("f", 2): (0x7FFF, 0),
    ("f", 4): (0x7FFFFFFF, 0),
    ("f", 8): (0xFFFFFFFF, 0x7FFFFFFF),
    ("i", 1): (0xFF, 0),
    ("i", 2): (0xFFFF, 0),
    ("i", 4): (0xFFFFFFFF, 0),
    ("i", 8): (0xFFFFFFFF, 0xFFFFFFFF),
}


def shader(source: str, roles: dict[str, int], written: set[int]) -> str:
    """compact.wgsl with its bindings: `roles` maps source, coords and count to the bindings
    (0..2) of the distinct buffers they lie in; `written` the bindings written."""
    declared = "".join(
        f"@group(0) @binding({b}) var<storage, {'read_write' if b in written else 'read'}> "
        f"buf{b}: array<u32>;\n"
        for b in sorted(set(roles.values()))
    )
    declared += (
        f"fn load_src(i: u32) -> u32 {{ return buf{roles['source']}[i]; }}\n"
        f"fn store_coord(i: u32, v: u32) {{ buf{roles['coords']}[i] = v; }}\n"
        f"fn store_count(i: u32, v: u32) {{ buf{roles['count']}[i] = v; }}\n"
    )
    return source.replace("BINDINGS", declared)


def scratch_words(c: Compaction) -> int:
    """The words of scratch a compaction's passes use: one per block."""
    return max(1, -(-c.rows // BLOCK))


def _params(c: Compaction, ins: Sequence[Flat], outs: Sequence[Flat], blocks: int) -> Any:
    dtype = np.dtype(c.element)
    kind = "f" if dtype.kind == "f" else "i"
    low, high = _MASKS[(kind, dtype.itemsize)]
    count_byte = outs[c.count_dst].offset + c.count_offset
    coords_byte = outs[c.coords_dst].offset + c.coords_offset
    if count_byte % 4 or coords_byte % 4:
        raise ValueError("NONZERO_COORDINATES' outputs must be 4-byte aligned")
    rank = len(c.shape)
    sizes = np.ones(8, np.uint32)
    sizes[:rank] = c.shape
    strides = np.zeros(8, np.int32)
    strides[:rank] = c.src_strides
    head = np.array(
        [
            c.rows, rank, c.columns, blocks, ins[c.src].offset + c.src_offset, dtype.itemsize,
            low, high, count_byte // 4, coords_byte // 4, c.row_stride, c.column_stride,
            min(max(blocks, 1), MAX_GROUPS_X), 0, 0, 0,
        ],
        np.uint32,
    )  # fmt: skip
    return np.concatenate([head, sizes, strides.view(np.uint32)])


def compaction_dispatches(
    backend: Any, c: Compaction, ins: Sequence[Flat], outs: Sequence[Flat], scratch: Any
) -> list[tuple[Any, ...]]:
    """The three (pipeline, bind group, grid, label, kept buffers) of one compaction;
    `scratch` (a GPU buffer of its own) holds a word per block."""
    wgpu, device = backend.wgpu, backend.device
    blocks = max(1, -(-c.rows // BLOCK))
    grid = (min(blocks, MAX_GROUPS_X), -(-blocks // MAX_GROUPS_X))
    buffers: list[Any] = []
    roles: dict[str, int] = {}
    bound = (("source", ins[c.src]), ("coords", outs[c.coords_dst]), ("count", outs[c.count_dst]))
    for role, flat in bound:
        found = next((k for k, b in enumerate(buffers) if b is flat.buffer), None)
        if found is None:
            found = len(buffers)
            buffers.append(flat.buffer)
        roles[role] = found
    written = {roles["coords"], roles["count"]}
    params = device.create_buffer_with_data(
        data=_params(c, ins, outs, blocks), usage=wgpu.BufferUsage.STORAGE
    )
    uses = {
        "count_blocks": {roles["source"]},
        "scan_blocks": {roles["count"]},
        "write_rows": {roles["source"], roles["coords"]},
    }
    made = []
    for entry, used in uses.items():
        pipeline = backend.compaction_pipeline(entry, roles, written)
        entries = [
            {"binding": 3, "resource": {"buffer": params}},
            {"binding": 4, "resource": {"buffer": scratch}},
        ]
        entries += [{"binding": b, "resource": {"buffer": buffers[b]}} for b in sorted(used)]
        group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
        size = (1, 1) if entry == "scan_blocks" else grid
        made.append((pipeline, group, size, f"compact {entry}", (params,)))
    return made
