"""Indexed copies (indexed.py) as WGSL dispatches (kernels/indexed*.wgsl): rows of whole
16-byte vectors or 4-byte words (units) at aligned starts move with plain loads and stores,
a team of invocations per row of under 256 units (several rows a workgroup) and 32
invocations per segment of 256 units of a longer row (eight segments a workgroup:
embedding lookups, permutations, KV-cache reads and writes); anything else one element per
invocation through word merges. A scatter whose targets may meet first fills a winner
table, so the update latest in index order wins, as on the other backends; where one
invocation (or one team) moves each whole row and each index position is one row, the copy
frees the slots it wins and no pass clears the table before the next call."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from ...errors import BindingError
from ...indexed import IndexedCopy, Rows, rows_of
from .memory import Flat
from .native import shader_module

__all__ = ["indexed_dispatches", "indexed_parts", "IndexedPart"]

_TYPES = {"INT32": 0, "INT64": 1, "UINT32": 2, "UINT64": 3}
_GRID_X = 65535
_I32 = 2**31 - 1
_ROW_BYTES = 16  # whole-word rows at least this long move by rows (shorter: per element)
# indexed_rows.wgsl: rows of at least this many units move in segments of at most as many,
# 32 invocations a segment, eight segments a workgroup (shorter rows: teams)
_SEGMENT_UNITS = 256
_STARTS = [9, 10, 11]  # the meta table's source, destination and index byte offsets


def _source(name: str) -> str:
    return (resources.files(__package__) / "kernels" / name).read_text()


def _bindings(src_is_dst: bool, index_in: str, unit: str = "atomic<u32>") -> str:
    """The WGSL bindings for one aliasing of (source, destination, index) buffers, the
    source and destination as arrays of `unit`: atomic words for merges, plain words, or
    16-byte vectors (`vec4<u32>`; an index word in one of them is a vector's component)."""
    text = f"@group(0) @binding(1) var<storage, read_write> dst: array<{unit}>;\n"
    text += "@group(0) @binding(3) var<storage, read> info: array<i32>;\n"
    text += "@group(0) @binding(4) var<storage, read_write> winner: array<atomic<i32>>;\n"
    atomic = unit.startswith("atomic")
    own = "atomicLoad(&dst[i])" if atomic else "dst[i]"
    word = "u32" if unit != "vec4<u32>" else unit
    text += f"alias Unit = {word};\nconst UNIT_BYTES: i32 = {16 if word != 'u32' else 4};\n"
    if src_is_dst:
        text += f"fn load_src(i: u32) -> Unit {{ return {own}; }}\n"
    else:
        text += f"@group(0) @binding(0) var<storage, read> src: array<{word}>;\n"
        text += "fn load_src(i: u32) -> Unit { return src[i]; }\n"
    if index_in in ("dst", "src"):
        place = own if index_in == "dst" else "src[i]"
        if word != "u32":  # (the vector holding index word i, then its component)
            place = place.replace("[i]", "[i / 4u][i % 4u]")
        text += f"fn load_idx(i: u32) -> u32 {{ return {place}; }}\n"
    else:
        text += "@group(0) @binding(2) var<storage, read> idx: array<u32>;\n"
        text += "fn load_idx(i: u32) -> u32 { return idx[i]; }\n"
    return text


def _pipelines(backend: Any, src_is_dst: bool, index_in: str) -> tuple[Any, Any]:
    """(bind group layout, {entry: pipeline}) of one aliasing, built once per backend."""
    key = ("indexed", src_is_dst, index_in)
    found = backend._pipelines.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    wgpu, device = backend.wgpu, backend.device
    storage = wgpu.BufferBindingType.storage
    read_only = wgpu.BufferBindingType.read_only_storage
    entries = [(1, storage), (3, read_only), (4, storage)]
    if not src_is_dst:
        entries.append((0, read_only))
    if index_in == "own":
        entries.append((2, read_only))
    layout = device.create_bind_group_layout(
        entries=[
            {"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": t}}
            for b, t in sorted(entries)
        ]
    )
    shared = _source("indexed.wgsl")
    merge = _source("source_word.wgsl") + _source("merge.wgsl")
    elements = _bindings(src_is_dst, index_in) + merge + shared
    elements += _source("indexed_elements.wgsl")
    row_kernels = shared + _source("indexed_rows.wgsl")
    rows = _bindings(src_is_dst, index_in, "u32") + row_kernels
    vectors = _bindings(src_is_dst, index_in, "vec4<u32>") + row_kernels
    pipeline_layout = device.create_pipeline_layout(bind_group_layouts=[layout])
    pipelines: dict[str, Any] = {}
    modules: tuple[tuple[str, str, tuple[str, ...]], ...] = (
        (elements, "", ("clear", "elect", "main")),
        (rows, "", ("segments", "teams")),
        (vectors, "vector-", ("segments", "teams")),
    )
    for code, prefix, names in modules:
        module = shader_module(device, code)
        for entry in names:
            pipelines[prefix + entry] = device.create_compute_pipeline(
                layout=pipeline_layout, compute={"module": module, "entry_point": entry}
            )
    found = (layout, pipelines)
    backend._pipelines[key] = found
    return found


def _meta(
    c: IndexedCopy, walk: Rows, size: int, src: Flat, dst: Flat, index: Flat, frees: bool
) -> Any:
    """The meta table of one indexed copy walked as `walk` (`frees`: its copy frees each
    winner slot it wins)."""
    row, outer, rows, row_strides, order = (
        walk.length,
        walk.outer,
        walk.count,
        walk.strides,
        walk.order,
    )
    cut = len(outer)
    slots = c.slot_strides if c.slot_strides else (0,) * len(c.shape)
    head = [
        cut,
        len(c.axes),
        row,
        size,
        int(c.scatter),
        _TYPES[c.index_type.name],
        int(c.negative_indices),
        2 if c.clamp else int(c.skip_out_of_range),
        c.tuple_stride,
        src.offset + c.src_offset,
        dst.offset + c.dst_offset,
        index.offset + c.index_offset,
        row_strides[0],
        row_strides[1],
        rows,
        c.slot_count if c.scatter else 0,
        _GRID_X,
        c.reverse_dim,
        int(frees),
    ]
    for d in range(cut):
        head += [outer[d], c.src_strides[d], c.dst_strides[d], c.index_strides[d]]
        head += [slots[d], order[d]]
    for axis in c.axes:
        head += [axis.size, axis.stride, axis.slot_stride]
    if max(abs(v) for v in head) > _I32 or rows * row > _I32 * 256:
        raise BindingError("the WebGPU backend addresses indexed copies with 32-bit integers")
    return np.array(head, np.int32)


def _whole_units(
    c: IndexedCopy, size: int, src: Flat, dst: Flat, row: int, strides: Any, unit: int
) -> bool:
    """Whether every row of the copy is whole `unit`-byte units (4: words, 16: vectors) at
    a unit-aligned start on both sides (so no two rows share a word and plain stores are
    exact)."""
    if tuple(strides) != (1, 1) or (row * size) % unit or row * size < _ROW_BYTES:
        return False
    starts = [src.offset + c.src_offset, dst.offset + c.dst_offset]
    # (the row's own dimension, the last, is contiguous: its element steps are no unit's)
    steps = [s * size for s in (*c.src_strides[:-1], *c.dst_strides[:-1])]
    steps += [a.stride * size for a in c.axes]
    return all(v % unit == 0 for v in (*starts, *steps))


def _team_lanes(units: int) -> int:
    """Invocations moving each row of `units` (1 to 255) units (indexed_rows.wgsl: teams)."""
    return max(4, 1 << (units - 1).bit_length())


def _grid(items: int) -> tuple[int, int]:
    groups = max(1, -(-items // 256))
    x = min(groups, _GRID_X)
    return x, -(-groups // x)


def indexed_dispatches(
    backend: Any,
    copies: Sequence[IndexedCopy],
    size: int,
    ins: Sequence[Flat],
    outs: Sequence[Flat],
) -> list[Any]:
    """(pipeline, bind group, grid, group name, kept buffers) of each indexed copy's
    dispatches, in order."""
    usage = backend.wgpu.BufferUsage.STORAGE
    out = []
    for part in indexed_parts(backend, copies, size, ins, outs):
        out += part.dispatches(backend.device.create_buffer_with_data(data=part.meta, usage=usage))
    return out


def indexed_parts(
    backend: Any,
    copies: Sequence[IndexedCopy],
    size: int,
    ins: Sequence[Flat],
    outs: Sequence[Flat],
) -> list[IndexedPart]:
    """Each indexed copy's dispatches on these arrays, but for its meta table's buffer."""
    return [IndexedPart(backend, c, size, ins, outs) for c in copies]


class IndexedPart:
    """One indexed copy's dispatches on a binding tuple, less the buffer of its meta table
    (`meta`; `meta_at` gives it for its arrays elsewhere in the same buffers, at offsets of
    the same alignment): its pipelines, grids and winner table."""

    def __init__(
        self, backend: Any, c: IndexedCopy, size: int, ins: Sequence[Flat], outs: Sequence[Flat]
    ) -> None:
        if c.src < 0:
            raise BindingError("an indexed copy from a fill is not run on WebGPU")
        wgpu, device = backend.wgpu, backend.device
        self.device = device
        self.ends = (c.src, c.dst, c.index)
        src, dst, index = ins[c.src], outs[c.dst], ins[c.index]
        src_is_dst = src.buffer is dst.buffer
        if index.buffer is dst.buffer:
            index_in = "dst"
        elif not src_is_dst and index.buffer is src.buffer:
            index_in = "src"
        else:
            index_in = "own"
        self.layout, pipelines = _pipelines(backend, src_is_dst, index_in)
        walk = rows_of(c)
        rows, row = walk.count, walk.length
        # rows of whole 16-byte vectors move a vector an invocation, else of whole words a
        # word (H100, 65,536 rows of 4 KiB: a MoE permutation 308 -> 248 µs a call)
        unit = next(
            (u for u in (16, 4) if _whole_units(c, size, src, dst, row, walk.strides, u)), 0
        )
        units = row * size // max(unit, 1)  # (a row's units, where unit)
        slots = c.slot_count if c.scatter else 0
        # one invocation moves each whole row (rows of one element), or one team (rows of
        # whole units, at most 256), and no other row comes from its
        # index position: the copy frees the slots it wins, and the table (a new buffer is
        # zeros: every slot free) needs no clearing pass before each call
        frees = (
            bool(slots)
            and walk.one_row_an_index
            and (units <= _SEGMENT_UNITS if unit else row == 1)
        )
        self.meta = _meta(c, walk, size, src, dst, index, frees)
        self.winner = device.create_buffer(size=4 * max(1, slots), usage=wgpu.BufferUsage.STORAGE)
        self.entries: list[dict[str, Any]] = [
            {"binding": 1, "resource": {"buffer": dst.buffer}},
            {"binding": 4, "resource": {"buffer": self.winner}},
        ]
        if not src_is_dst:
            self.entries.append({"binding": 0, "resource": {"buffer": src.buffer}})
        if index_in == "own":
            self.entries.append({"binding": 2, "resource": {"buffer": index.buffer}})
        steps: list[tuple[Any, tuple[int, int], str]] = []
        if slots and not frees:
            steps.append((pipelines["clear"], _grid(slots), "indexed-clear"))
        if slots:
            steps.append((pipelines["elect"], _grid(rows), "indexed-elect"))
        if unit:
            if units < _SEGMENT_UNITS:  # a team of invocations a row, several a workgroup
                groups = -(-rows // (256 // _team_lanes(units)))
                entry = "teams"
            else:  # 32 invocations a segment of a row, eight segments a workgroup
                groups = -(-rows * -(-units // _SEGMENT_UNITS) // 8)
                entry = "segments"
            entry = ("vector-" if unit == 16 else "") + entry
            steps.append((pipelines[entry], _grid(groups * 256), f"indexed-{entry}"))
        else:
            steps.append((pipelines["main"], _grid(rows * row), "indexed"))
        self.steps = steps

    def dispatches(self, meta_buffer: Any) -> list[tuple[Any, ...]]:
        """The copy's dispatches reading its meta table from `meta_buffer`."""
        entries = [*self.entries, {"binding": 3, "resource": {"buffer": meta_buffer}}]
        group = self.device.create_bind_group(layout=self.layout, entries=entries)
        kept = (meta_buffer, self.winner)
        return [(pipeline, group, grid, name, kept) for pipeline, grid, name in self.steps]

    def meta_at(self, in_moves: Any, out_moves: Any) -> Any:
        """The meta table with the copy's source, destination and index moved by these many
        bytes (each input's and output's)."""
        src, dst, index = self.ends
        meta = self.meta.astype(np.int64)
        meta[_STARTS] += (in_moves[src], out_moves[dst], in_moves[index])
        if meta[_STARTS].max() > _I32:
            raise BindingError("the WebGPU backend addresses indexed copies with 32-bit integers")
        return meta.astype(np.int32)
