"""Which WGSL kernel moves each copy of a plan, and the piece tables they walk (pure numpy).

Every copy becomes a piece of one strategy, by layout and bound byte offsets:

- `vec4`: 16-byte aligned contiguous rows, moved as vec4<u32> (strided.wgsl, Word = vec4);
- `vec4r1` .. `vec4r8`: rows read backwards (an inner stride of -1) whose ends are 16-byte
  aligned, moved as vec4<u32> with the elements reordered in registers (strided.wgsl);
- `u32`: 4- and 8-byte elements at 4-byte aligned offsets (8 bytes as two words) and
  short rows of small elements that are whole aligned words, where the rows below do
  not apply (strided.wgsl, Word = u32);
- `rows16` + `rows`: other contiguous rows of 16 bytes or more (offsets or pitches not
  16-byte aligned; for 1- and 2-byte elements, 64 bytes or more), and shorter ones of
  larger elements that are not whole words: each
  whole 16-byte destination block by one thread, funnel-shifted from five source words
  (rows16.wgsl); the up to eight edge words of each row merged atomically (rows.wgsl);
- `transpose4`, `transpose8`: 4- and 8-byte elements whose source and destination
  unit-stride axes differ (slices of transposed or permuted views): 32 x 32 tiles through
  workgroup memory (transpose.wgsl);
- `transpose2`: the same for 2-byte elements where both unit-stride axes are even and the
  ends word-aligned: 32 x 32 tiles of 2 x 2 blocks, each two whole source words
  transposed in registers into two whole destination words (transpose.wgsl's tiling,
  the cells of transpose_pairs.wgsl);
- `pick<es>x<r>p<phase>[r]`: every 2nd, 3rd or 4th element (r) of rows of 1-, 2-, 4- or
  8-byte elements (es), read forwards or backwards (`r`), where the destination rows are
  whole aligned 16-byte vectors (a float16 or float32 slice with stride +-2 or +-3): an
  invocation reads the r source vectors and picks the elements at one phase of each
  group out (pick.wgsl, its body written by pick.py);
- `pickw<es>x<r>p<phase>[r]`: the same a 4-byte word at a time, for 1- and 2-byte elements
  whose destination rows are whole aligned words but not whole vectors (a float16 row of
  342 elements): no atomics, where `packed` would gather element by element;
- `funnel`: short contiguous rows (under 64 bytes) of 1- and 2-byte elements that are
  whole aligned words in the destination but start inside a word in the source: each
  destination word funnel-shifted from the two source words around it (funnel.wgsl);
- `packed`: 1- and 2-byte elements whose destination rows are contiguous, at any source
  stride (strided slices, reversed or transposed reads): one invocation per destination
  word gathers its elements and stores the word whole; only the words a row shares at
  its ends are merged atomically (packed.wgsl);
- `packed_transpose`: the same whose source's unit-stride axis is another (slices of
  transposed views of float16 or int8 data): tiles of 64 elements by 32 source words
  through workgroup memory, written as whole destination words (packed_transpose.wgsl);
- `pack`: 2-byte elements (PACK_ELEMENTS) whose whole copy writes one contiguous, 16-byte aligned
  run of whole words, where the kernel above would be `funnel`, `packed` or `bytes` (short
  or misaligned rows of high-rank boxes, rows read at a step): one invocation fills a
  16-byte destination vector, its elements found by one division chain and a carry walk
  (pack.wgsl, the twin of the CUDA backend's pack.cu);
- `bytes`: everything else (1- and 2-byte elements written at other strides, misaligned
  elements) through bytes.wgsl, which merges partial words atomically.

The word kernels (`u32`, `vec4`, `vec4r*`, `funnel`) move two elements of a row an
invocation, half a row apart; `funnel` in pieces of four or more dimensions whose rows are
short (ROW_WALK), a whole row an invocation, so the walk over the outer dimensions steps
once a row (high-rank boxes; tried for 16-byte vectors too, slower there).

Pieces of one strategy and dimension bucket (1, 2, 3, 4, 5, 6 or 8 dimensions; the pipeline
is specialised to it) that read one GPU buffer and write one GPU buffer form one table and
one dispatch, so a 256-way SPLIT into arrays of one arena is one dispatch. An element-wise
dispatch moves 8 elements a thread, or on a GPU fewer (4, 2, 1) where that leaves it
fewer than WORKGROUPS_WANTED workgroups: its loads are then spread over more threads in
flight instead of waiting one after another in few.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...plan import Plan
from ..division import fast_divider

__all__ = [
    "THREADS",
    "TILE",
    "PER_THREAD",
    "WORKGROUPS_WANTED",
    "TRANSPOSE_TILES",
    "TRANSPOSE_ROWS",
    "DIM_BUCKETS",
    "dims_bucket",
    "MAX_DIMS",
    "ROW_WORDS",
    "Group",
    "Piece",
    "piece_of",
    "group_copies",
]

THREADS = 256  # pieces.wgsl: invocations per workgroup
TILE = 2048  # elements a workgroup moves at most (pieces.wgsl: THREADS * PER_THREAD)
PER_THREAD = 8  # elements a thread moves at most (pieces.wgsl)
# on a GPU, element-wise dispatches move fewer elements per thread until they have this
# many workgroups (about 8 fit on each SM: 1,056 at once on an H100; 8,192 measured best
# there, 2026-11-25); a CPU adapter (lavapipe) runs best with few
# workgroups, so it asks for none
WORKGROUPS_WANTED = 8192
# 16-byte vector pieces of at least this many dimensions (high-rank boxes) on a GPU adapter
# move a vector an invocation step instead of two half a row apart, so short rows keep
# more invocations each (H100 through Vulkan, GPU time: the 5-D float32 box of 96-byte rows
# 27.3 -> 25.3-25.5 µs; a 4-D box of 32-byte rows 12.3 -> 8.7 µs. A CPU adapter keeps the
# pairs: lavapipe's 4-D box of 64-byte rows took 1.7x as long unfolded), and ask for
# workgroups as any other dispatch (H200, 2026-11-29: asking a sixteenth of them, so 8
# vectors a thread, 19.4-19.5 µs; a quarter, 2 a thread, 18.2-18.3; with the walk's
# outermost index taken as the rest, no division, 1 a thread 17.8-17.9).
# `pack` pieces of as many dimensions ask for this share of the workgroups, whose threads
# then reach their next vectors by carries (the uint16 8-D box 27.6 -> 25.1 µs at 4 vectors
# a thread on the H100; on the H200 22.1-22.5 µs against 25.4-26.4 at a half to an eighth;
# 2-D float16 rows of 10 lost with more a thread, 38.7 -> 43.9, so they keep the full count)
BOX_VECTORS = (4, 16)  # (dimensions at least; `pack`'s divisor of the workgroups wanted)
MAX_DIMS = 8
ROW_WORDS = 40  # u32 words per table row (pieces.wgsl: struct Piece)
MAX_GROUPS_X = 65535
# a tiled transpose's tile per workgroup (along the destination's unit axis, along the
# source's), in elements (transpose2: 2 x 2 blocks); multiples of 32 (transpose.wgsl)
TRANSPOSE_TILES = {"transpose4": (32, 32), "transpose8": (32, 32), "transpose2": (32, 32)}
# a tiled transpose's invocation rows (its workgroup is 32 x rows; fewer where the device
# allows fewer invocations): 2-byte cells move twice the bytes a cell, and with two cells an
# invocation instead of four the float16 slice of x.T took 131 -> 123 µs on the H100
TRANSPOSE_ROWS = {"transpose4": 8, "transpose8": 8, "transpose2": 16}


@dataclass(frozen=True)
class Piece:
    """One copy in a kernel's units: offsets and strides in words (u32, vec4) or bytes."""

    # "vec4", "vec4r1/2/4/8", "u32", "rows16", "rows", "transpose2/4/8", "pick<es>x<r>p<phase>[r]",
    # "pickw<es>x<r>p<phase>[r]", "funnel", "packed", "packed_transpose" or "bytes"
    kernel: str
    src_offset: int
    dst_offset: int
    sizes: tuple[int, ...]  # innermost first
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    element_bytes: int
    extra: tuple[int, int] = (0, 0)  # the table's pad0 and pad1 (packed: row length, stride)

    @property
    def count(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64))

    @property
    def element_wise(self) -> bool:
        """Whether its kernel moves elements THREADS apart (elements.wgsl), not tiles."""
        return not self.kernel.startswith(("transpose", "packed_transpose"))

    def tiles(self, per_thread: int = PER_THREAD) -> int:
        """Workgroups this piece needs: 32 x 32 tiles per outer index for transposes,
        THREADS * `per_thread` elements each for the element-wise kernels."""
        if self.kernel.startswith("transpose"):
            rest = int(np.prod(self.sizes[2:], dtype=np.int64))
            ti, tj = TRANSPOSE_TILES[self.kernel]
            return -(-self.sizes[0] // ti) * -(-self.sizes[1] // tj) * rest
        if self.kernel == "packed_transpose":  # 64 elements x 32 source words
            rest = int(np.prod(self.sizes[2:], dtype=np.int64))
            across = -(-self.sizes[1] // (32 * 4 // self.element_bytes))
            return -(-self.sizes[0] // 64) * across * rest
        if self.kernel == "pack":  # a 16-byte destination vector an invocation
            vectors = -(-self.count * self.element_bytes // 16)
            return -(-vectors // (THREADS * per_thread))
        return -(-self.count // (THREADS * per_thread))


DIM_BUCKETS = (1, 2, 3, 4, 5, 6, 8)  # pipelines are specialised to these dimension counts


def dims_bucket(ndim: int) -> int:
    """The smallest specialised dimension count that holds `ndim` dimensions."""
    return next(b for b in DIM_BUCKETS if b >= ndim)


@dataclass
class Group:
    """One dispatch: a kernel, the buffers it reads and writes, and its piece table."""

    kernel: str
    dims: int
    src: int  # index of the source buffer among the distinct bound buffers
    dst: int
    table: np.ndarray[Any, Any]  # uint32 rows of ROW_WORDS
    tiles: int
    pieces: int
    per_thread: int = 0  # elements per thread (element-wise kernels), 0 for tiled ones
    # each row's copy's input and output (their indices among the bound inputs and outputs)
    ends: tuple[tuple[int, int], ...] = ()

    @property
    def grid(self) -> tuple[int, int]:
        """(x, y) workgroups: x at most 65535."""
        x = max(1, min(self.tiles, MAX_GROUPS_X))
        return x, -(-self.tiles // x)


def _layout(
    es: int, shape: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """A copy's sizes and source and destination strides in bytes, innermost first."""
    sizes = [int(n) for n in reversed(shape)] or [1]
    src = [int(s) * es for s in reversed(src_strides)] or [0]
    dst = [int(d) * es for d in reversed(dst_strides)] or [0]
    return sizes, src, dst


def pieces_of(
    element_size: int,
    src_byte: int,
    dst_byte: int,
    shape: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
    fold_boxes: bool = True,
) -> list[Piece]:
    """The pieces one strided copy becomes: one, or for contiguous rows that are not 16-byte
    aligned vectors, the rows' whole 16-byte destination blocks (`rows16`) and their edges
    (`rows`). `fold_boxes`: see piece_of."""
    es = element_size
    sizes, src, dst = _layout(es, shape, src_strides, dst_strides)
    in_elements = [s // es for s in src], [d // es for d in dst]
    transposed = (
        _transpose(es, src_byte, dst_byte, sizes, *in_elements)
        or _pair_transpose(es, src_byte, dst_byte, sizes, *in_elements)
        or _packed_transpose(es, src_byte, dst_byte, sizes, src, dst)
    )
    if transposed is not None:
        return [transposed]
    single = piece_of(es, src_byte, dst_byte, shape, src_strides, dst_strides, fold_boxes)
    run = _pack(es, src_byte, dst_byte, sizes, src, dst) if single.kernel in PACK_REPLACES else None
    length = sizes[0] * es
    contiguous = src[0] == es and dst[0] == es
    if single.kernel == "packed" and length < PACKED_ROWS:
        return [run or single]  # short rows of small elements: a vector or word an invocation
    wide = length >= 16 and single.kernel in ("bytes", "packed", "u32")
    if contiguous and (wide or single.kernel == "bytes"):
        outer = (tuple(sizes[1:]), tuple(src[1:]), tuple(dst[1:]))
        edges = Piece(
            "rows", src_byte, dst_byte, (8, *outer[0]), (0, *outer[1]), (0, *outer[2]), length
        )
        if length < 16:
            return [run or edges]
        blocks = Piece(
            "rows16", src_byte, dst_byte, (-(-(length // 16) // 2), *outer[0]),
            (0, *outer[1]), (0, *outer[2]), length,
        )  # fmt: skip
        return [blocks, edges]
    return [run or single]


def piece_of(
    element_size: int,
    src_byte: int,
    dst_byte: int,
    shape: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
    fold_boxes: bool = True,
) -> Piece:
    """The strategy and units of one strided copy at these absolute byte offsets (word
    kernels in pairs of elements along dimension 0; with `fold_boxes` False, as on a GPU
    adapter, 16-byte vector pieces of BOX_VECTORS' dimensions a vector an invocation step)."""
    piece = _piece_of(element_size, src_byte, dst_byte, shape, src_strides, dst_strides)
    if piece.kernel not in WORD_KERNELS:
        return piece
    short_rows = len(piece.sizes) >= ROW_WALK[1] and piece.sizes[0] <= ROW_WALK[0]
    if piece.kernel == "funnel" and short_rows:
        return _row_walked(piece)
    if not fold_boxes and _vector_box(piece):
        return _unfolded(piece)
    return _paired(piece)


WORD_KERNELS = ("u32", "vec4", "vec4r1", "vec4r2", "vec4r4", "vec4r8", "funnel")
# funnel rows of at most this many words, in pieces of at least this many dimensions
# (high-rank boxes of short rows), move a whole row an invocation: one walk step over the
# outer dimensions a row instead of one every two words (H100 through Vulkan: the 8-D
# uint16 box 60 -> 50 µs; the 5-D float32 box's 16-byte vectors 49 -> 84 µs, so not them)
ROW_WALK = (16, 4)


def _vector_box(piece: Piece) -> bool:
    """Whether a piece is a high-rank box of 16-byte vectors (BOX_VECTORS)."""
    return piece.kernel == "vec4" and len(piece.sizes) >= BOX_VECTORS[0]


def _walked(piece: Piece, first: int, extra: tuple[int, int]) -> Piece:
    """The piece with `first` walked along dimension 0 and `extra` as pad0 and pad1."""
    return replace(piece, sizes=(first, *piece.sizes[1:]), extra=extra)


def _row_walked(piece: Piece) -> Piece:
    """A funnel piece walked a row at a time: dimension 0 of size 1, the row's word count
    in pad0 and 1 in pad1 (funnel.wgsl)."""
    return _walked(piece, 1, (piece.sizes[0], 1))


def _unfolded(piece: Piece) -> Piece:
    """A word kernel's piece moved an element an invocation step (pad0 1: strided.wgsl's
    second element, half a row on, never exists)."""
    return _walked(piece, piece.sizes[0], (1, 0))


def _paired(piece: Piece) -> Piece:
    """A word kernel's piece with dimension 0 folded in two: its first half walked, the
    element count in pad0 (strided.wgsl moves element k and, where it exists, k + h for
    h = ceil(count / 2), so neighbouring invocations still read and write neighbours)."""
    n = piece.sizes[0]
    return _walked(piece, -(-n // 2), (n, 0))


def _piece_of(
    element_size: int,
    src_byte: int,
    dst_byte: int,
    shape: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
) -> Piece:
    es = element_size
    sizes, src, dst = _layout(es, shape, src_strides, dst_strides)
    as_bytes = _packed(es, src_byte, dst_byte, sizes, src, dst) or Piece(
        "bytes", src_byte, dst_byte, tuple(sizes), tuple(src), tuple(dst), es
    )
    reversed_rows = _reversed_rows(es, src_byte, dst_byte, sizes, src, dst)
    if reversed_rows is not None:
        return reversed_rows
    picked = _picked(es, src_byte, dst_byte, sizes, src, dst)
    if picked is not None:
        return picked
    if es % 4 == 0:  # an element of several words gains an inner dimension of its words
        if es > 4:
            if len(sizes) >= MAX_DIMS:
                return as_bytes
            sizes, src, dst = [es // 4, *sizes], [4, *src], [4, *dst]
    elif src[0] == es and dst[0] == es and (sizes[0] * es) % 4 == 0:
        # a contiguous row of small elements that fills whole words
        sizes, src, dst = [sizes[0] * es // 4, *sizes[1:]], [4, *src[1:]], [4, *dst[1:]]
    else:
        return as_bytes
    if src_byte % 4 or dst_byte % 4 or any(s % 4 for s in src) or any(d % 4 for d in dst):
        aligned_dst = dst_byte % 4 == 0 and not any(d % 4 for d in dst)
        if es < 4 and aligned_dst and sizes[0] * 4 < PACKED_ROWS:  # (short rows: see funnel)
            return Piece(
                "funnel", src_byte, dst_byte // 4, tuple(sizes), tuple(src),
                tuple(d // 4 for d in dst), 4,
            )  # fmt: skip
        return as_bytes
    s_off, d_off = src_byte // 4, dst_byte // 4
    src, dst = [s // 4 for s in src], [d // 4 for d in dst]
    rows = sizes[0] % 4 == 0 and src[0] == 1 and dst[0] == 1 and s_off % 4 == 0
    if rows and d_off % 4 == 0 and not any(x % 4 for x in src[1:] + dst[1:]):
        return Piece(
            "vec4", s_off // 4, d_off // 4, (sizes[0] // 4, *sizes[1:]),
            (1, *(s // 4 for s in src[1:])), (1, *(d // 4 for d in dst[1:])), 16,
        )  # fmt: skip
    return Piece("u32", s_off, d_off, tuple(sizes), tuple(src), tuple(dst), 4)


def _packed(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """Rows of 1- or 2-byte elements contiguous in the destination, any source stride: a
    destination word per invocation (packed.wgsl); strides in bytes, innermost first."""
    if es > 2 or dst[0] != es:
        return None
    words = (sizes[0] * es + 3) // 4 + 1  # a row touches at most this many words
    pairs = -(-words // 2)  # an invocation moves two
    return Piece(
        "packed", src_byte, dst_byte, (pairs, *sizes[1:]), (0, *src[1:]), (0, *dst[1:]), es,
        (sizes[0], src[0]),
    )  # fmt: skip


# the kernels `pack` replaces where its destination is one aligned run, and the element sizes
# it takes: 2-byte elements only (H100 through Vulkan, GPU time, 2026-11-27: the uint16 8-D
# box 32.4 -> 25.4 µs, uint16 rows read at step 5 20.0 -> 17.3, float16 rows of 10 from 12
# at offset 1 46.1 -> 38.3; 1-byte elements, sixteen to a vector, lost: an int8 4-D box of
# 12-byte rows 33.6 -> 38.5 µs, int8 rows of 24 from 32 at offset 3 30.4 -> 35.0)
PACK_REPLACES: tuple[str, ...] = ("funnel", "packed", "bytes")
PACK_ELEMENTS: tuple[int, ...] = (2,)


def _pack(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """A copy of PACK_ELEMENTS-byte elements whose destination is one contiguous run of whole
    words starting at a 16-byte boundary, any source strides: a destination vector per
    invocation (pack.wgsl; strides in bytes, innermost first)."""
    count = int(np.prod(sizes, dtype=np.int64))
    if es not in PACK_ELEMENTS or dst_byte % 16 or (count * es) % 4 or count >= 1 << 31:
        return None
    expected = es
    for n, d in zip(sizes, dst, strict=True):
        if n != 1 and d != expected:
            return None
        expected *= n
    return Piece("pack", src_byte, dst_byte // 16, tuple(sizes), tuple(src), tuple(dst), es)


def _mixed_radix(value: int, sizes: Sequence[int]) -> list[int]:
    """`value` as digits of the mixed radix `sizes` (innermost first; the last digit is not
    reduced)."""
    digits = []
    for k, n in enumerate(sizes):
        last = k == len(sizes) - 1
        digits.append(value if last else value % n)
        value //= n
    return digits


PACKED_ROWS = 64  # contiguous rows of small elements shorter than this (bytes): packed
TRANSPOSE_MIN = 16  # both unit-stride axes at least this long for a tiled transpose


def _transpose(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """A tiled transpose of 4- or 8-byte elements: the destination's unit-stride axis is
    dimension 0 and the source's is another (strides in elements, innermost first)."""
    if es not in (4, 8) or src_byte % es or dst_byte % es or len(sizes) < 2:
        return None
    if dst[0] != 1 or abs(src[0]) == 1 or sizes[0] < TRANSPOSE_MIN:
        return None
    inner = [j for j in range(1, len(sizes)) if abs(src[j]) == 1 and sizes[j] >= TRANSPOSE_MIN]
    if not inner:
        return None
    order = [0, inner[0], *(k for k in range(1, len(sizes)) if k != inner[0])]
    return Piece(
        f"transpose{es}", src_byte // es, dst_byte // es, tuple(int(sizes[k]) for k in order),
        tuple(int(src[k]) for k in order), tuple(int(dst[k]) for k in order), es,
    )  # fmt: skip


def _pair_transpose(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """A tiled transpose of 2-byte elements in 2 x 2 blocks of whole words (transpose2:
    transpose.wgsl with transpose_pairs.wgsl's cells), where both unit-stride axes are even
    and ascending, every other stride even and both ends word-aligned (strides in elements,
    innermost first); the block's second rows go in the table's pad0 (source) and pad1
    (destination)."""
    if es != 2 or src_byte % 4 or dst_byte % 4 or len(sizes) < 2:
        return None
    if dst[0] != 1 or sizes[0] < TRANSPOSE_MIN or sizes[0] % 2:
        return None
    inner = [j for j in range(1, len(sizes)) if src[j] == 1 and sizes[j] >= TRANSPOSE_MIN]
    if not inner or sizes[inner[0]] % 2:
        return None
    j = inner[0]
    order = [0, j, *(k for k in range(1, len(sizes)) if k != j)]
    if any(src[k] % 2 for k in order if k != j) or any(dst[k] % 2 for k in order[1:]):
        return None
    # in blocks and words: a block step along i is two source rows, along j two
    # destination rows; along the others a step of 2n bytes is n / 2 words
    block_sizes = (sizes[0] // 2, sizes[j] // 2, *(sizes[k] for k in order[2:]))
    src_words = (src[0], 1, *(src[k] // 2 for k in order[2:]))
    dst_words = (1, dst[j], *(dst[k] // 2 for k in order[2:]))
    return Piece(
        "transpose2", src_byte // 4, dst_byte // 4, tuple(int(n) for n in block_sizes),
        tuple(int(s) for s in src_words), tuple(int(d) for d in dst_words), 4,
        (src[0] // 2, dst[j] // 2),
    )  # fmt: skip


def _packed_transpose(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """A tiled transpose of 1- or 2-byte elements into contiguous destination rows, whole
    destination words written (packed_transpose.wgsl; strides in bytes, innermost first)."""
    if es > 2 or len(sizes) < 2 or dst[0] != es or abs(src[0]) == es:
        return None
    if sizes[0] < TRANSPOSE_MIN:
        return None
    inner = [j for j in range(1, len(sizes)) if abs(src[j]) == es and sizes[j] >= TRANSPOSE_MIN]
    if not inner:
        return None
    order = [0, inner[0], *(k for k in range(1, len(sizes)) if k != inner[0])]
    return Piece(
        "packed_transpose", src_byte, dst_byte, tuple(int(sizes[k]) for k in order),
        tuple(int(src[k]) for k in order), tuple(int(dst[k]) for k in order), es,
    )  # fmt: skip


def _reversed_rows(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """Rows read backwards and written forwards, as whole 16-byte vectors where aligned
    (kernel vec4r<es>: the vector's elements are put back in order in registers)."""
    if src[0] != -es or dst[0] != es or (sizes[0] * es) % 16:
        return None
    if dst_byte % 16 or (src_byte + es) % 16 or any(x % 16 for x in src[1:] + dst[1:]):
        return None
    return Piece(
        f"vec4r{es}", (src_byte + es) // 16 - 1, dst_byte // 16, (sizes[0] * es // 16, *sizes[1:]),
        (-1, *(x // 16 for x in src[1:])), (1, *(x // 16 for x in dst[1:])), 16,
    )  # fmt: skip


def _picked(
    es: int, src_byte: int, dst_byte: int, sizes: list[int], src: list[int], dst: list[int]
) -> Piece | None:
    """Every 2nd, 3rd or 4th element of rows of 1-, 2-, 4- or 8-byte elements, forwards or
    backwards, written as whole 16-byte vectors (kernel pick<es>x<stride>p<phase>, `r`
    appended backwards: each vector's elements picked from the source vectors that hold
    them), where the rows are whole vectors at aligned offsets and the elements picked lie
    at one phase of each group; rows of 1- and 2-byte elements that are whole words but not
    whole vectors the same way a word at a time (pickw<es>x<stride>p<phase>)."""
    r = abs(src[0]) // es
    if es > 8 or dst[0] != es or abs(src[0]) % es or r not in (2, 3, 4):
        return None
    for unit, name in ((16, "pick"), (4, "pickw")):
        if unit == 4 and es > 2:  # (a word of 4- or 8-byte elements: the u32 kernel)
            return None
        if (sizes[0] * es) % unit or dst_byte % unit or any(x % unit for x in src[1:] + dst[1:]):
            continue
        backwards = src[0] < 0
        per_unit = unit // es  # elements of a destination unit
        # the lowest element a destination unit picks, the first one's (backwards: its last)
        low = src_byte - (per_unit - 1) * r * es if backwards else src_byte
        phase, misaligned = divmod(low % unit, es)
        if misaligned or phase >= r:
            continue
        return Piece(
            f"{name}{es}x{r}p{phase}{'r' if backwards else ''}", (low - phase * es) // unit,
            dst_byte // unit, (sizes[0] * es // unit, *sizes[1:]),
            (-r if backwards else r, *(x // unit for x in src[1:])),
            (1, *(x // unit for x in dst[1:])), unit,
        )  # fmt: skip
    return None


def _per_thread(pieces: list[Piece], workgroups_wanted: int) -> int:
    """Elements per thread for one dispatch of element-wise pieces: PER_THREAD, halved
    while the dispatch would have fewer than `workgroups_wanted` workgroups (a share of
    them for high-rank `pack` boxes, BOX_VECTORS; 0: tiled)."""
    first = pieces[0]
    if not first.element_wise:
        return 0
    if first.kernel == "pack" and len(first.sizes) >= BOX_VECTORS[0]:
        workgroups_wanted //= BOX_VECTORS[1]
    per_thread = PER_THREAD
    while per_thread > 1 and sum(p.tiles(per_thread) for p in pieces) < workgroups_wanted:
        per_thread //= 2
    return per_thread


def _table(pieces: list[Piece], per_thread: int) -> tuple[np.ndarray[Any, Any], int]:
    table = np.zeros((len(pieces), ROW_WORDS), dtype=np.uint32)
    tiles = 0
    table[:, 8:16] = 1  # padding dimensions: size 1, stride 0
    for row, p in zip(table, pieces, strict=True):
        n = len(p.sizes)
        row[:6] = (tiles, p.count, n, p.src_offset, p.dst_offset, p.element_bytes)
        row[6:8] = np.array(p.extra, dtype=np.int64).astype(np.uint32)
        row[8 : 8 + n] = p.sizes
        row[16 : 16 + n] = np.array(p.src_strides, dtype=np.int64).astype(np.uint32)
        row[24 : 24 + n] = np.array(p.dst_strides, dtype=np.int64).astype(np.uint32)
        if p.kernel == "pack":  # each size's divider, where the others keep strides and steps
            dividers = [fast_divider(size) for size in p.sizes]
            row[24 : 24 + n] = [magic for magic, _ in dividers]
            row[32 : 32 + n] = [shift for _, shift in dividers]
        else:
            row[32 : 32 + n] = _mixed_radix(THREADS, p.sizes)
        tiles += p.tiles(per_thread or PER_THREAD)
    return table, tiles


def group_copies(
    plan: Plan,
    inputs: Sequence[tuple[int, int]],
    outputs: Sequence[tuple[int, int]],
    workgroups_wanted: int = 0,
) -> list[Group]:
    """Dispatches for `plan` with each binding at (buffer index, byte offset in it); an
    element-wise dispatch moves fewer elements per thread until it has `workgroups_wanted`
    workgroups (WORKGROUPS_WANTED on a GPU)."""
    grouped: dict[tuple[str, int, int, int], list[Piece]] = {}
    ends: dict[tuple[str, int, int, int], list[tuple[int, int]]] = {}
    for c in plan.copies:
        if c.element_count == 0:
            continue
        src_buffer, src_base = inputs[c.src]
        dst_buffer, dst_base = outputs[c.dst]
        for piece in pieces_of(
            plan.element_size,
            src_base + c.src_offset,
            dst_base + c.dst_offset,
            c.shape,
            c.src_strides,
            c.dst_strides,
            fold_boxes=workgroups_wanted == 0,  # (a CPU adapter's)
        ):
            key = (piece.kernel, dims_bucket(len(piece.sizes)), src_buffer, dst_buffer)
            grouped.setdefault(key, []).append(piece)
            ends.setdefault(key, []).append((c.src, c.dst))
    groups = []
    for key, pieces in grouped.items():
        kernel, dims, src, dst = key
        per_thread = _per_thread(pieces, workgroups_wanted)
        table, tiles = _table(pieces, per_thread)
        groups.append(
            Group(kernel, dims, src, dst, table, tiles, len(pieces), per_thread, tuple(ends[key]))
        )
    return groups
