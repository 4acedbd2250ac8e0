"""WebGPU strategies (pure numpy, no adapter needed): each layout gets its kernel and units."""

from __future__ import annotations

import numpy as np
import pytest

from dmlops.backends.webgpu.strategies import (
    ROW_WORDS,
    THREADS,
    TILE,
    _mixed_radix,
    group_copies,
    piece_of,
    pieces_of,
)
from dmlops.ops import SplitDesc
from dmlops.plan import Plan, StridedCopy
from dmlops.tensor import BufferTensorDesc, DataType


def test_aligned_float32_rows_are_vec4() -> None:
    p = piece_of(4, 512, 0, (100, 768), (1024, 1), (768, 1))
    assert p.kernel == "vec4"
    # 192 vectors a row, folded in two (the first 96 walked, the count in pad0)
    assert p.sizes == (96, 100) and p.src_strides == (1, 256) and p.src_offset == 32
    assert p.extra == (192, 0) and p.dst_strides == (1, 192)


def test_reversed_rows_are_reordered_vec4_per_element_size() -> None:
    for es in (1, 2, 4, 8):
        n = 64 // es
        # a reversed row read from its last element: that element ends 16-byte aligned
        p = piece_of(es, (n - 1) * es, 0, (3, n), (n, -1), (n, 1))
        assert p.kernel == f"vec4r{es}"
        assert p.src_strides[0] == -1 and p.src_offset == 3 and p.extra == (n * es // 16, 0)


def test_word_elements_and_small_word_rows_are_u32() -> None:
    assert piece_of(4, 28, 0, (8, 8), (8, -1), (8, 1)).kernel == "vec4r4"
    assert piece_of(4, 32, 0, (8, 8), (8, -1), (8, 1)).kernel == "u32"  # ends unaligned
    p = piece_of(4, 4, 0, (8, 6), (8, 2), (6, 1))  # inner stride 2, rows of 24 bytes
    assert p.kernel == "u32" and p.src_strides[0] == 2 and p.src_offset == 1
    p = piece_of(8, 8, 0, (5,), (3,), (1,))  # float64: two words per element
    assert p.kernel == "u32" and p.sizes == (1, 5) and p.src_strides == (1, 6)
    p = piece_of(2, 4, 8, (6, 2), (10, 1), (2, 1))  # fp16 pairs: whole words
    assert p.kernel == "u32" and p.sizes == (1, 6) and p.extra == (1, 0)


def test_misaligned_rows_are_blocks_and_edges_and_small_strided_elements_are_packed() -> None:
    blocks, edges = pieces_of(2, 2, 0, (4, 40), (41, 1), (40, 1))  # 5 blocks, 3 invocations
    assert blocks.kernel == "rows16" and blocks.sizes == (3, 4) and blocks.element_bytes == 80
    assert blocks.src_strides == (0, 82) and blocks.dst_strides == (0, 80)
    assert edges.kernel == "rows" and edges.sizes == (8, 4)
    # 14 bytes: shorter than a block, a destination word per invocation (written at a
    # destination that is no 16-byte aligned run: see the pack test)
    (short,) = pieces_of(2, 2, 4, (4, 7), (9, 1), (7, 1))
    assert short.kernel == "packed" and short.sizes == (3, 4)  # pairs of the <= 5 words
    assert short.extra == (7, 2) and short.src_strides == (0, 18)
    assert [p.kernel for p in pieces_of(4, 2, 0, (4, 8), (8, 1), (8, 1))] == ["rows16", "rows"]
    assert [p.kernel for p in pieces_of(4, 0, 16, (4, 8), (8, 1), (8, 1))] == ["vec4"]
    p = piece_of(1, 0, 0, (4, 7), (16, 2), (7, 1))  # rows of 7 bytes: no whole words
    assert p.kernel == "packed" and p.extra == (7, 2) and p.sizes == (2, 4)
    # rows of two whole words: each word picked from two source words
    p = piece_of(1, 0, 0, (4, 8), (16, 2), (8, 1))
    assert p.kernel == "pickw1x2p0" and p.sizes == (2, 4)
    assert p.src_strides == (2, 4) and p.dst_strides == (1, 2) and p.element_bytes == 4
    p = piece_of(2, 2, 0, (8,), (-1,), (1,))  # backwards, unaligned
    assert p.kernel == "packed" and p.extra == (8, -2)
    # short rows of whole destination words read from inside source words: funnel-shifted
    p = piece_of(2, 2, 0, (4, 10), (12, 1), (10, 1))
    assert p.kernel == "funnel" and p.sizes == (3, 4) and p.extra == (5, 0)  # (words paired)
    assert p.src_strides == (4, 24)
    assert p.dst_strides == (1, 5) and p.src_offset == 2 and p.dst_offset == 0
    assert piece_of(2, 2, 2, (4, 10), (12, 1), (10, 1)).kernel == "packed"  # (unaligned out)
    assert piece_of(1, 1, 0, (4, 64), (65, 1), (64, 1)).kernel != "funnel"  # 64 bytes
    # written at a stride (DEPTH_TO_SPACE's copies): merged bytes
    assert piece_of(2, 0, 0, (4, 8), (8, 1), (32, 2)).kernel == "bytes"


def test_two_byte_copies_into_one_aligned_run_are_packed_a_vector_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2-byte elements whose copy writes one 16-byte aligned run of whole words take `pack`
    where `funnel`, `packed` or `bytes` would move them; its table row holds each size's
    divider where the other kernels keep destination strides and steps."""
    from dmlops.backends.webgpu import strategies
    from dmlops.backends.webgpu.strategies import PACK_REPLACES, ROW_WORDS, group_copies

    box = ((7,) * 7 + (10,), (*(9 ** (6 - k) * 12 for k in range(7)), 1))
    dense = (*(7 ** (6 - k) * 10 for k in range(7)), 1)
    (p,) = pieces_of(2, 2, 0, box[0], box[1], dense)
    assert p.kernel == "pack" and p.dst_offset == 0 and p.element_bytes == 2
    assert p.sizes == (10,) + (7,) * 7 and p.src_strides == tuple(2 * s for s in box[1][::-1])
    assert p.tiles(1) == -(-(7**7 * 10 * 2 // 16) // 256)
    stepped = pieces_of(2, 0, 32, (64, 61), (64, -3), (61, 1))  # rows read at step -3
    assert [q.kernel for q in stepped] == ["pack"] and stepped[0].dst_offset == 2
    # not one aligned run: the kernels before
    assert [q.kernel for q in pieces_of(2, 2, 2, box[0], box[1], dense)] == ["packed"]
    assert pieces_of(2, 0, 0, (4, 8), (8, 1), (32, 2))[0].kernel == "bytes"  # (strided out)
    assert pieces_of(2, 2, 0, (3, 3), (9, 1), (3, 1))[0].kernel != "pack"  # 18 bytes
    assert pieces_of(1, 1, 0, (4, 12), (13, 1), (12, 1))[0].kernel == "funnel"  # (1-byte)
    monkeypatch.setattr(strategies, "PACK_ELEMENTS", ())
    assert [q.kernel for q in pieces_of(2, 2, 0, box[0], box[1], dense)] == ["funnel"]
    monkeypatch.undo()
    assert "funnel" in PACK_REPLACES
    # the table: dividers in place of destination strides (magic) and steps (shift)
    copy = StridedCopy(0, 0, box[1], 0, 0, dense, box[0])
    plan = Plan(2, (copy,), ((0, 2 * 9**7 * 12),), ((0, 2 * 7**7 * 10),))
    (group,) = group_copies(plan, [(0, 2)], [(1, 0)])
    assert group.kernel == "pack"
    row = group.table.reshape(-1, ROW_WORDS)[0]
    for k, size in enumerate(row[8:16]):
        magic, shift = int(row[24 + k]), int(row[32 + k])
        for n in (0, 1, int(size) - 1, int(size), 12345, (1 << 31) - 1):
            assert ((n * magic >> 32) + n) >> shift == n // int(size), (size, n)


def test_two_byte_transposes_move_2x2_blocks_of_words_where_even_and_aligned() -> None:
    # [40, 66] from x.T of a [70, 46] float16 array (source unit axis: dimension 0 here)
    (p,) = pieces_of(2, 188, 0, (40, 66), (1, 46), (66, 1))
    assert p.kernel == "transpose2"
    # in blocks and words: 33 x 20 blocks; a block step is 2 source rows (46 words) along i
    # and one word along j; the second rows are 23 words (source) and 33 (destination) on
    assert p.sizes == (33, 20) and p.src_strides == (46, 1) and p.dst_strides == (1, 66)
    assert p.src_offset == 47 and p.extra == (23, 33)
    fallbacks = {
        "odd destination rows": ((40, 65), (1, 46), (65, 1), 188),
        "odd source rows": ((39, 66), (1, 46), (66, 1), 188),
        "odd row pitch": ((40, 66), (1, 45), (66, 1), 188),
        "start inside a word": ((40, 66), (1, 46), (66, 1), 190),
        "source rows backwards": ((40, 66), (-1, 46), (66, 1), 188),
    }
    for why, (shape, src, dst, at) in fallbacks.items():
        (q,) = pieces_of(2, at, 0, shape, src, dst)
        assert q.kernel == "packed_transpose", why


def test_every_second_third_or_fourth_element_is_picked_from_whole_vectors() -> None:
    # float16 x[::2, ::2] of [64, 256]: rows of 128 elements, 16 vectors each, every
    # destination vector read from 2 source vectors; rows 2 source rows (64 vectors) apart
    p = piece_of(2, 0, 32, (32, 128), (512, 2), (128, 1))
    assert p.kernel == "pick2x2p0" and p.sizes == (16, 32)
    assert p.src_strides == (2, 64) and p.dst_strides == (1, 16) and p.dst_offset == 2
    assert piece_of(1, 16, 0, (4, 64), (256, 4), (64, 1)).kernel == "pick1x4p0"
    assert piece_of(4, 0, 0, (4, 64), (256, 2), (64, 1)).kernel == "pick4x2p0"
    assert piece_of(8, 0, 0, (4, 64), (256, 2), (64, 1)).kernel == "pick8x2p0"
    assert piece_of(8, 0, 0, (4, 64), (256, 4), (64, 1)).kernel == "pick8x4p0"
    assert piece_of(4, 8, 0, (4, 64), (256, 3), (64, 1)).kernel == "pick4x3p2"
    # x[:, 1::2]: the second of each pair; x[:, ::-2] from the row's last element (byte
    # 254 of 256): its vectors' lowest pick at byte 2, the second half of each word
    assert piece_of(2, 2, 0, (4, 64), (256, 2), (64, 1)).kernel == "pick2x2p1"
    back = piece_of(2, 254, 0, (4, 64), (256, -2), (64, 1))
    assert back.kernel == "pick2x2p1r" and back.src_offset == 14 and back.src_strides[0] == -2
    # where whole vectors do not line up but whole words do: a word at a time
    words = {
        "rows not whole vectors": ((4, 60), (256, 2), (60, 1), 0, "pickw2x2p0"),
        "a start past the lanes of a first group": ((4, 64), (256, 2), (64, 1), 4, "pickw2x2p0"),
        "source rows not whole vectors": ((4, 64), (132, 2), (64, 1), 0, "pickw2x2p0"),
        "backwards from a vector's wrong phase": ((4, 64), (256, -2), (64, 1), 250, "pickw2x2p1r"),
        "float16 stride 3, rows of 342": ((4, 342), (1024, 3), (342, 1), 0, "pickw2x3p0"),
    }
    for why, (shape, src, dst, at, kernel) in words.items():
        assert piece_of(2, at, 0, shape, src, dst).kernel == kernel, why
    back = piece_of(2, 250, 0, (4, 64), (256, -2), (64, 1))  # lowest pick at byte 246
    assert back.src_offset == 61 and back.src_strides[0] == -2 and back.sizes == (32, 4)
    fallbacks = {
        "rows not whole words": ((4, 61), (256, 2), (61, 1), 0),
        "stride 5": ((4, 64), (512, 5), (64, 1), 0),
        "a start between elements": ((4, 64), (256, 2), (64, 1), 1),
        "source rows at odd elements": ((4, 64), (129, 2), (64, 1), 0),
    }
    for why, (shape, src, dst, at) in fallbacks.items():
        assert piece_of(2, at, 0, shape, src, dst).kernel == "packed", why
    assert piece_of(4, 0, 0, (4, 15), (64, 2), (15, 1)).kernel == "u32"  # (no word picks)


def test_mixed_radix_steps_walk_by_threads() -> None:
    sizes = (7, 5, 1000)
    digits = _mixed_radix(THREADS, sizes)
    assert digits[0] + sizes[0] * (digits[1] + sizes[1] * digits[2]) == THREADS


def test_a_256_way_split_within_one_buffer_is_one_dispatch() -> None:
    f32 = DataType.FLOAT32
    desc = SplitDesc(
        BufferTensorDesc(f32, (256, 1024)), [BufferTensorDesc(f32, (1, 1024))] * 256, 0
    )
    plan = desc.lower()
    outs = [(0, 4096 * (k + 300)) for k in range(256)]
    groups = group_copies(plan, [(0, 0)], outs)
    assert len(groups) == 1 and groups[0].pieces == 256
    table = groups[0].table
    assert table.shape == (256, ROW_WORDS) and table.dtype == np.uint32
    assert list(table[:3, 0]) == [0, 1024 // TILE + (1024 % TILE > 0), 2 * (-(-256 // TILE))]
    # outputs in other buffers: one dispatch per (source, destination) buffer pair
    assert len(group_copies(plan, [(0, 0)], [(1 + k % 2, 0) for k in range(256)])) == 2


@pytest.mark.parametrize("tiles", [1, 65535, 65536, 200000])
def test_grid_stays_within_the_workgroup_limit(tiles: int) -> None:
    from dmlops.backends.webgpu.strategies import Group

    g = Group("u32", 2, 0, 0, np.zeros((1, ROW_WORDS), np.uint32), tiles, 1)
    x, y = g.grid
    assert x <= 65535 and x * y >= tiles


def test_the_core_package_does_not_import_wgpu() -> None:
    import subprocess
    import sys

    code = "import sys, dmlops, dmlops.functional; print(any(m.startswith('wgpu') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
