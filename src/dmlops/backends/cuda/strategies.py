"""Which kernel moves each strided copy, and the piece tables the kernels read.

Pure numpy: no GPU is needed to classify copies or to build tables, so the
choices are tested everywhere. A plan's copies are grouped by strategy and
specialisation; each group is one launch.

- strided: the general kernel. Vector mode (16-, 8- or 4-byte accesses) where
  the destination's inner axis is contiguous, the source's inner stride is
  +-1 to +-4 (a gather reads whole vectors and selects) and addresses and
  outer strides allow it; else one element per thread. Index arithmetic in
  32 bits uses precomputed fast division.
- rows: contiguous rows of at least 128 bytes whose addresses or pitches rule
  out aligned vectors: aligned 16-byte stores fed by funnel-shifted aligned loads.
- transpose: the source's unit-stride axis is not the destination's; tiles
  go through shared memory so both sides are coalesced.
- pack: the destination is one contiguous run and none of the above fits (short
  or misaligned source rows, long inner steps): vector stores of the destination,
  each vector's source elements walked by carries, not divided out one by one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import DmlError
from ...plan import Plan, StridedCopy
from ..division import fast_divider

__all__ = ["Group", "group_copies", "choose", "THREADS", "PER_THREAD", "ROW_BYTES"]

THREADS = 256
PER_THREAD = {"strided": 8, "rows": 4, "transpose": 1, "pack": 4}
SMALL_PER_THREAD = 2
# vectors a pack-kernel thread fills in a small copy (the uint16 8-D box on an H200, each
# thread's loads issued before its stores: 19.9 -> 18.1 us against 1; 4 took 19.1)
SMALL_PACK_PER_THREAD = 2
# pack kernels of at least PACK_BOUNDED_RANK dimensions are compiled for PACK_MIN_BLOCKS
# resident blocks a multiprocessor (registers capped: their per-dimension arrays otherwise
# hold occupancy to 5 blocks; the uint16 8-D box 18.7 -> 16.3-16.5 us at 6 or 8; the 6-D
# and 4-D boxes level; rank-2 steps of 5 lose at 6 or 8, so lower ranks keep the default)
PACK_MIN_BLOCKS = 6
PACK_BOUNDED_RANK = 6
# small strided copies of plain vectors (no gather) of at least HIGH_RANK dimensions: one
# vector a thread, compiled for HIGH_RANK_MIN_BLOCKS resident blocks (the float32 5-D box
# on an H200: 17.3-17.4 us at 2 a thread, 16.2-16.6 at 1, 15.6-16.0 at 1 with 8 blocks; 2 a
# thread with 8 blocks spilled: 28.7)
HIGH_RANK = 5
HIGH_RANK_MIN_BLOCKS = 8
SMALL_TILES_PER_SM = 8  # (the 5-D box of 675 full tiles: 0.72 -> 0.78 of the copy with 2 a thread)
ROW_BYTES = 128  # rows at least this long go to the rows kernel when vectors are ruled out
MIN_TRANSPOSE = 16  # both tile axes at least this long
TRANSPOSE_BLOCK = {1: 4, 2: 4, 4: 2, 8: 1}  # V x V register blocks: tiles of 32 V
MAX_GATHER = 4
# a plan of at most this many elements whose copies would take several launches takes one
# launch of the element-wise kernel instead (`_fewer_launches`). H200, device time of small
# DIAGONAL_MATRIX1, SPLIT and PADDING1 plans against 1M and 16M: at 4M the float16 tril
# [256,128,128] 18.1 -> 11.7 us and the reflecting pad [8,3,224,224] 19.8 -> 7.9; at 16M
# the int8 tril [4096,4096] 19.2 -> 34.3 (single bytes a thread)
MERGE_ELEMENTS = 1 << 22
_INT32 = 2**31 - 1


@dataclass(frozen=True)
class Choice:
    """One copy's kernel: name and compile-time specialisation (without the index width)."""

    kernel: str
    defines: tuple[tuple[str, int], ...]


@dataclass
class Group:
    """Copies that share one kernel specialisation: one launch."""

    kernel: str
    defines: tuple[tuple[str, int], ...]
    table: np.ndarray  # int64 [pieces, row]
    tiles: int
    # each row's source and destination bindings (int32 [pieces, 2]): the input whose address
    # its column 0 counts from, the output of its column 1
    ends: np.ndarray

    @property
    def pieces(self) -> int:
        return int(self.table.shape[0])


def _block(src: int, es: int, width: int, gather: int, reverse: bool) -> tuple[int, int] | None:
    """(aligned address of the first block a vector loads, phase of the first kept element in
    it), or None where no such block exists (the phase must stay below `gather`)."""
    v = width // es
    lowest = src - (v - 1) * gather * es if reverse else src
    skew = lowest % width
    if skew % es or skew // es > gather - 1:
        return None
    return lowest - skew, skew // es


def _vector_choice(
    es: int, width: int, gather: int, reverse: bool, rank: int, *mode: tuple[str, int]
) -> Choice:
    """The strided kernel in vector mode: element size, vector bytes, inner gather and
    direction, walked rank, and a phase mode (PHASES or INTERLEAVE) where one applies."""
    head = (("ES", es), ("VW", width), ("GATHER", gather), ("REVERSE", int(reverse)))
    return Choice("strided", (*head, ("RANK", rank), *mode))


def phase_axis(copy: StridedCopy) -> int | None:
    """For a gather along the inner axis (source stride +2..+4) whose every phase the copy
    also keeps, along another axis of unit source stride (a pixel unshuffle's column
    phase): that axis, so one thread writes all the phases of the blocks it loads; else
    None."""
    shape, ss = copy.shape, copy.src_strides
    gather = ss[-1]
    if not 2 <= gather <= MAX_GATHER:
        return None
    for d in range(len(shape) - 1):
        if ss[d] == 1 and shape[d] == gather:
            return d
    return None


def interleaved(copy: StridedCopy) -> int:
    """G where the destination's inner axis (unit stride) is a phase of G = 2..4 elements read
    G rows apart and the next axis is contiguous in the source and G apart in the
    destination (a depth-to-space, a pixel unshuffle's gradient): the kernel loads a vector
    of each phase row and stores them interleaved; else 0."""
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    if len(shape) < 2 or ds[-1] != 1 or not 2 <= shape[-1] <= MAX_GATHER:
        return 0
    g = shape[-1]
    return g if ds[-2] == g and ss[-2] == 1 and ss[-1] != 0 else 0


def _interleaving(copy: StridedCopy, src: int, dst: int, es: int) -> Choice | None:
    """The vector kernel interleaving G phase rows, where vectors fit."""
    g = interleaved(copy)
    if not g:
        return None
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    for width in (16, 8, 4):
        if width <= es:
            break
        v = width // es
        if shape[-2] % v or src % width or dst % width:
            continue
        if any(s % v for s in (*ss[:-2], ss[-1], *ds[:-2])):
            continue
        return _vector_choice(es, width, 1, False, len(shape) - 1, ("INTERLEAVE", g))
    return None


def _vector(copy: StridedCopy, src: int, dst: int, es: int) -> Choice | None:
    interleaving = _interleaving(copy, src, dst, es)
    if interleaving is not None:
        return interleaving
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    if ds[-1] != 1 or not 1 <= abs(ss[-1]) <= MAX_GATHER:
        return None
    gather, reverse = abs(ss[-1]), ss[-1] < 0
    p = phase_axis(copy)
    if p is not None:
        phases = _phases(copy, p, src, dst, es)
        if phases is not None:
            return phases
    for width in (16, 8, 4):
        if width <= es:
            break
        v = width // es
        if v < gather:
            continue  # every aligned block a gather reads must hold an element it keeps
        if shape[-1] % v or any(s % v for s in ss[:-1] + ds[:-1]):
            continue
        if _block(src, es, width, gather, reverse) is None or dst % width:
            continue
        return _vector_choice(es, width, gather, reverse, len(shape))
    return None


def _phases(copy: StridedCopy, p: int, src: int, dst: int, es: int) -> Choice | None:
    """The vector kernel keeping every phase of each block it loads (axis `p` dropped from
    the walk: phase g goes g destination strides of `p` on), where vectors fit."""
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    gather = ss[-1]
    for width in (16, 8, 4):
        if width <= es:
            break
        v = width // es
        if v < gather or shape[-1] % v:
            continue
        others = [s for d, s in enumerate(ss[:-1]) if d != p] + list(ds[:-1])
        if any(s % v for s in others) or src % width or dst % width:
            continue
        return _vector_choice(es, width, gather, False, len(shape) - 1, ("PHASES", 1))
    return None


def _transpose_block(copy: StridedCopy, p: int, src: int, dst: int, es: int) -> int:
    """V: a transpose moves V x V blocks with V-element accesses where alignment allows."""
    v = TRANSPOSE_BLOCK[es]
    while v > 1:
        src_others = [s for d, s in enumerate(copy.src_strides) if d != p]
        if (
            copy.src_strides[p] == 1
            and src % (v * es) == 0
            and dst % (v * es) == 0
            and not any(s % v for s in src_others)
            and not any(s % v for s in copy.dst_strides[:-1])
        ):
            return v
        v //= 2
    return 1


def choose(copy: StridedCopy, src: int, dst: int, es: int) -> Choice:
    """The kernel for one copy whose first source and destination elements lie at src, dst."""
    vector = _vector(copy, src, dst, es)
    if vector is not None:
        return vector
    shape, ss, ds = copy.shape, copy.src_strides, copy.dst_strides
    if ss[-1] == 1 and ds[-1] == 1 and shape[-1] * es >= ROW_BYTES:
        return Choice("rows", (("OUTER", max(1, len(shape) - 1)),))
    if len(shape) >= 2 and ds[-1] == 1 and abs(ss[-1]) != 1 and shape[-1] >= MIN_TRANSPOSE:
        units = [d for d in range(len(shape) - 1) if abs(ss[d]) == 1 and shape[d] >= MIN_TRANSPOSE]
        if units:
            p = units[0]
            return Choice(
                "transpose",
                (
                    ("ES", es),
                    ("RANK", len(shape)),
                    ("P", p),
                    ("V", _transpose_block(copy, p, src, dst, es)),
                ),
            )
    pack = _pack(copy, dst, es)
    if pack is not None:
        return pack
    return element_wise(es)


def dense_destination(copy: StridedCopy) -> bool:
    """Whether the copy's destination is one contiguous run in its walk order."""
    expected = 1
    for n, s in zip(reversed(copy.shape), reversed(copy.dst_strides), strict=True):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _pack(copy: StridedCopy, dst: int, es: int) -> Choice | None:
    """The pack kernel where the destination is one contiguous run that starts on a vector
    boundary (16, 8 or 4 bytes, wider than an element) and holds at least one vector."""
    if es >= 16 or not dense_destination(copy):
        return None
    for width in (16, 8, 4):
        if width <= es:
            break
        if dst % width == 0 and math.prod(copy.shape) * es >= width:
            return Choice("pack", (("ES", es), ("VW", width)))
    return None


def _strided_row(
    copy: StridedCopy, src: int, dst: int, defines: dict[str, int], rank: int, first: int
) -> tuple[list[int], int, int]:
    """(row, tiles, reach in elements) of one copy in the strided kernel of `rank` dimensions."""
    es, width, gather, reverse = defines["ES"], defines["VW"], defines["GATHER"], defines["REVERSE"]
    v = width // es
    walked, src_strides, dst_strides = (
        list(copy.shape),
        list(copy.src_strides),
        list(copy.dst_strides),
    )
    phase = 0
    p = phase_axis(copy) if defines.get("PHASES") else None
    if defines.get("INTERLEAVE"):  # the inner phase axis leaves the walk; its src stride kept
        p = len(walked) - 1
        phase = src_strides[p]
    elif p is not None:  # the phase axis leaves the walk; the row's phase holds its dst stride
        phase = dst_strides[p]
    if p is not None:
        del walked[p], src_strides[p], dst_strides[p]
    pad = rank - len(walked)
    shape = [1] * pad + [*walked[:-1], walked[-1] // v]
    count = math.prod(shape)
    if v > 1 and p is None:
        block = _block(src, es, width, gather, bool(reverse))
        assert block is not None  # _vector chose this width for these addresses
        src, phase = block
    magic, shift = zip(*(fast_divider(n) for n in shape), strict=True)
    row = [
        src,
        dst,
        count,
        first,
        phase,
        *shape,
        *([0] * pad + src_strides),
        *([0] * pad + dst_strides),
        *magic,
        *shift,
    ]
    tiles = -(-count // (THREADS * defines["PER_THREAD"]))
    reach = max(
        sum((n - 1) * abs(s) for n, s in zip(copy.shape, strides, strict=True)) + v * gather
        for strides in (copy.src_strides, copy.dst_strides)
    )
    return row, tiles, max(reach, count + THREADS * defines["PER_THREAD"])


def _pack_row(
    copy: StridedCopy, src: int, dst: int, defines: dict[str, int], first: int
) -> tuple[list[int], int, int]:
    """(row, tiles, reach in elements) of one copy in the pack kernel."""
    rank, v = defines["RANK"], defines["VW"] // defines["ES"]
    pad = rank - len(copy.shape)
    shape = [1] * pad + list(copy.shape)
    count = math.prod(shape)
    magic, shift = zip(*(fast_divider(n) for n in shape), strict=True)
    row = [src, dst, count, first, *shape, *([0] * pad + list(copy.src_strides)), *magic, *shift]
    tile = THREADS * defines["PER_THREAD"]
    vectors = -(-count // v)
    tiles = -(-vectors // tile)
    reach = sum((n - 1) * abs(s) for n, s in zip(copy.shape, copy.src_strides, strict=True)) + 1
    return row, tiles, max(reach, count + tile * v)


def _rows_row(
    copy: StridedCopy, src: int, dst: int, es: int, per_thread: int, first: int, outer: int
) -> tuple[list[int], int]:
    pad = outer - max(1, len(copy.shape) - 1)  # (a row of fewer outer axes: size-1 ones first)
    shape = [1] * pad + (list(copy.shape[:-1]) or [1])
    ss = [0] * pad + ([s * es for s in copy.src_strides[:-1]] or [0])
    ds = [0] * pad + ([s * es for s in copy.dst_strides[:-1]] or [0])
    row_bytes = copy.shape[-1] * es
    per_row = -(-(row_bytes // 16 + 1) // (THREADS * per_thread))
    tiles = math.prod(shape) * per_row
    return [src, dst, tiles, first, row_bytes, per_row, *shape, *ss, *ds], tiles


def _transpose_row(
    copy: StridedCopy, src: int, dst: int, p: int, tile: int, first: int
) -> tuple[list[int], int, int]:
    shape = list(copy.shape)
    along_p = -(-shape[p] // tile)
    along_last = -(-shape[-1] // tile)
    outer = math.prod(n for d, n in enumerate(shape[:-1]) if d != p)
    tiles = outer * along_p * along_last
    reach = max(
        sum((n - 1) * abs(s) for n, s in zip(shape, strides, strict=True)) + 1
        for strides in (copy.src_strides, copy.dst_strides)
    )
    row = [
        src,
        dst,
        tiles,
        first,
        along_p,
        along_last,
        *shape,
        *copy.src_strides,
        *copy.dst_strides,
    ]
    return row, tiles, reach


def _loads(defines: dict[str, int]) -> int:
    """Vectors a strided-kernel thread loads per vector position."""
    return defines.get("INTERLEAVE") or defines["GATHER"]


def _strided_work(members: list[tuple[StridedCopy, int, int]], defines: dict[str, int]) -> int:
    phases = defines["GATHER"] if defines.get("PHASES") else defines.get("INTERLEAVE", 1)
    v = defines["VW"] // defines["ES"] * phases
    return sum(math.prod(c.shape) // v for c, _, _ in members)


def _launch_key(choice: Choice) -> Choice:
    """The launch a copy of this choice joins: the strided and rows kernels take the
    largest rank of their copies (fewer axes padded with size-1 ones), so copies that differ
    only in rank share one launch."""
    if choice.kernel not in ("strided", "rows"):
        return choice
    kept = tuple(d for d in choice.defines if d[0] not in ("RANK", "OUTER"))
    return Choice(choice.kernel, kept)


def _fewer_launches(
    by_choice: dict[Choice, list[tuple[StridedCopy, int, int]]], es: int
) -> dict[Choice, list[tuple[StridedCopy, int, int]]]:
    """Where a small plan would take several launches, its copies (transposes aside) as
    one launch of the element-wise kernel: under MERGE_ELEMENTS elements a launch costs
    more than the vectors it saves."""
    merging = [c for c in by_choice if c.kernel != "transpose"]
    if len(merging) < 2:
        return by_choice
    elements = sum(math.prod(m[0].shape) for c in merging for m in by_choice[c])
    if elements > MERGE_ELEMENTS:
        return by_choice
    kept = {c: members for c, members in by_choice.items() if c.kernel == "transpose"}
    kept[element_wise(es)] = [m for c in merging for m in by_choice[c]]
    return kept


def element_wise(es: int) -> Choice:
    """The element-wise kernel: one element a thread, any strides (every copy fits it)."""
    return Choice("strided", (("ES", es), ("VW", es), ("GATHER", 1), ("REVERSE", 0)))


def group_copies(
    plan: Plan, inputs: Sequence[int], outputs: Sequence[int], multiprocessors: int = 132
) -> list[Group]:
    """The launches that run `plan` with bindings at these device addresses.

    Small strided groups (under SMALL_TILES_PER_SM full tiles per multiprocessor) take
    fewer vectors per thread, so that the grid still fills the GPU.
    """
    es = plan.element_size
    by_choice: dict[Choice, list[tuple[StridedCopy, int, int]]] = {}
    for c in plan.copies:
        src, dst = inputs[c.src] + c.src_offset, outputs[c.dst] + c.dst_offset
        by_choice.setdefault(_launch_key(choose(c, src, dst, es)), []).append((c, src, dst))
    by_choice = _fewer_launches(by_choice, es)
    groups = []
    for choice, members in by_choice.items():
        defines = dict(choice.defines)
        rows: list[list[int]] = []
        tiles = 0
        reach = 0
        defines["PER_THREAD"] = PER_THREAD[choice.kernel]
        if choice.kernel == "strided":
            # a gather loads GATHER vectors per output vector: keep the loads in flight alike
            defines["PER_THREAD"] = max(SMALL_PER_THREAD, defines["PER_THREAD"] // _loads(defines))
            dropped = int(bool(defines.get("PHASES") or defines.get("INTERLEAVE")))
            defines["RANK"] = max(len(c.shape) - dropped for c, _, _ in members)
            full_tiles = _strided_work(members, defines) // (THREADS * defines["PER_THREAD"])
            if full_tiles < SMALL_TILES_PER_SM * multiprocessors:
                defines["PER_THREAD"] = SMALL_PER_THREAD
                in_vectors = defines["VW"] > defines["ES"]
                if in_vectors and defines["RANK"] >= HIGH_RANK and _loads(defines) == 1:
                    defines["PER_THREAD"] = 1
                    defines["MIN_BLOCKS"] = HIGH_RANK_MIN_BLOCKS
        elif choice.kernel == "pack":
            defines["RANK"] = max(len(c.shape) for c, _, _ in members)
            if defines["RANK"] >= PACK_BOUNDED_RANK:
                defines["MIN_BLOCKS"] = PACK_MIN_BLOCKS
            v = defines["VW"] // defines["ES"]
            vectors = sum(math.prod(c.shape) // v for c, _, _ in members)
            if vectors // (THREADS * defines["PER_THREAD"]) < SMALL_TILES_PER_SM * multiprocessors:
                defines["PER_THREAD"] = SMALL_PACK_PER_THREAD
        elif choice.kernel == "rows":
            defines["OUTER"] = max(max(1, len(c.shape) - 1) for c, _, _ in members)
        ends = [(c.src, c.dst) for c, _, _ in members]
        for c, src, dst in members:
            if choice.kernel == "strided":
                row, n, r = _strided_row(c, src, dst, defines, defines["RANK"], tiles)
            elif choice.kernel == "pack":
                row, n, r = _pack_row(c, src, dst, defines, tiles)
            elif choice.kernel == "rows":
                row, n = _rows_row(c, src, dst, es, defines["PER_THREAD"], tiles, defines["OUTER"])
                r = 0
            else:
                row, n, r = _transpose_row(c, src, dst, defines["P"], 32 * defines["V"], tiles)
            rows.append(row)
            tiles += n
            reach = max(reach, r)
        if choice.kernel != "rows":
            defines["IDX64"] = int(reach >= _INT32)
            if defines["IDX64"]:  # (64-bit arithmetic under a register cap would spill)
                defines.pop("MIN_BLOCKS", None)
        if max(row[2] for row in rows) >= _INT32 and choice.kernel not in ("strided", "pack"):
            raise DmlError(f"a copy of over 2^31 tiles is too large for the {choice.kernel} kernel")
        groups.append(
            Group(
                choice.kernel,
                tuple(sorted(defines.items())),
                np.array(rows, dtype=np.int64),
                tiles,
                np.array(ends, dtype=np.int32),
            )
        )
    return groups
