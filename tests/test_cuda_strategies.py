"""Which CUDA kernel each layout class gets (no GPU needed: classification is numpy)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import dmlops
from dmlops import BufferTensorDesc, DataType, Slice1Desc, SliceDesc, SplitDesc
from dmlops.backends.cuda import strategies
from dmlops.backends.cuda.strategies import group_copies
from dmlops.backends.division import fast_divider
from dmlops.ops import DiagonalMatrix1Desc, JoinDesc
from dmlops.ops.diagonal import triangle_span

F32, F16, I8 = DataType.FLOAT32, DataType.FLOAT16, DataType.INT8
BASE = 1 << 20  # a 16-byte aligned address


# CuPy's Stream as the fakes need it: an external stream's context does nothing here
_STREAM = SimpleNamespace(from_external=lambda handle: contextlib.nullcontext())


def kernels_for(desc, ins=(BASE,), outs=None):  # type: ignore[no-untyped-def]
    desc.validate()
    plan = desc.lower()
    outs = outs or tuple(BASE * (4 + k) for k in range(len(desc.output_fields())))
    return [(g.kernel, dict(g.defines)) for g in group_copies(plan, ins, outs)]


def test_aligned_contiguous_rows_use_16_byte_vectors() -> None:
    desc = SliceDesc(
        BufferTensorDesc(F32, [64, 64]), BufferTensorDesc(F32, [64, 32]), [0, 16], [64, 32], [1, 1]
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "strided" and d["VW"] == 16 and d["GATHER"] == 1


@pytest.mark.parametrize("dt, offset", [(F16, 1), (F32, 3), (I8, 5)])
def test_misaligned_rows_use_the_rows_kernel(dt: DataType, offset: int) -> None:
    cols = 4093
    desc = SliceDesc(
        BufferTensorDesc(dt, [64, cols]),
        BufferTensorDesc(dt, [64, 4000]),
        [0, offset],
        [64, 4000],
        [1, 1],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "rows" and d["OUTER"] == 1
    # the same rows, aligned, take vectors; short misaligned rows into a contiguous output
    # take the pack kernel's vector stores
    aligned = SliceDesc(
        BufferTensorDesc(dt, [64, 4096]),
        BufferTensorDesc(dt, [64, 4000]),
        [0, 0],
        [64, 4000],
        [1, 1],
    )
    assert kernels_for(aligned)[0][0] == "strided"
    short = SliceDesc(
        BufferTensorDesc(dt, [64, 21]), BufferTensorDesc(dt, [64, 20]), [0, 1], [64, 20], [1, 1]
    )
    assert (
        kernels_for(short)
        == [
            (
                "pack",
                {
                    "ES": dt.element_size,
                    "VW": 16,
                    "RANK": 2,
                    "IDX64": 0,
                    "PER_THREAD": strategies.SMALL_PACK_PER_THREAD,  # a small copy: fewer vectors a thread fill the GPU
                },
            )
        ]
    )


@pytest.mark.parametrize("dt, v", [(F32, 2), (F16, 4), (I8, 4), (DataType.FLOAT64, 1)])
def test_transposed_inputs_use_the_tile_kernel(dt: DataType, v: int) -> None:
    desc = SliceDesc(
        BufferTensorDesc(dt, [512, 256], [1, 512]),  # a transposed view: unit stride on axis 0
        BufferTensorDesc(dt, [500, 248]),
        [8, 3],
        [500, 248],
        [1, 1],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "transpose" and d["P"] == 0 and d["RANK"] == 2
    assert d["V"] == v  # V x V register blocks, V-element accesses on both sides


def test_nhwc_to_nchw_is_a_transpose_of_a_middle_axis() -> None:
    n, c, h, w = 2, 64, 16, 16
    desc = SliceDesc(
        BufferTensorDesc(F32, [n, c, h, w], [h * w * c, 1, w * c, c]),
        BufferTensorDesc(F32, [n, c, h, w]),
        [0, 0, 0, 0],
        [n, c, h, w],
        [1, 1, 1, 1],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "transpose"
    assert d["RANK"] == 3  # n, c and (h, w) merged


@pytest.mark.parametrize("step", [2, -2, 3, -3, 4, -4])
def test_inner_strides_gather_whole_vectors(step: int) -> None:
    cols = 12 * 64
    desc = Slice1Desc(
        BufferTensorDesc(F32, [64, cols]),
        BufferTensorDesc(F32, [64, cols // abs(step)]),
        [0, 0],
        [64, cols],
        [1, step],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "strided" and d["GATHER"] == abs(step) and d["REVERSE"] == int(step < 0)
    assert d["VW"] == 16


def test_slice_2x2_gathers_along_the_inner_axis() -> None:
    desc = SliceDesc(
        BufferTensorDesc(F16, [256, 256]),
        BufferTensorDesc(F16, [128, 128]),
        [0, 0],
        [128, 128],
        [2, 2],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "strided" and d["GATHER"] == 2 and d["VW"] == 16


def test_high_rank_boxes_use_fast_division() -> None:
    sizes = (9,) * 7 + (12,)
    desc = SliceDesc(
        BufferTensorDesc(DataType.UINT16, sizes),
        BufferTensorDesc(DataType.UINT16, (7,) * 7 + (10,)),
        [1] * 8,
        [7] * 7 + [10],
        [1] * 8,
    )
    ((kernel, d),) = kernels_for(desc)
    # (misaligned 20-byte rows into a contiguous output: the pack kernel's vector stores)
    assert kernel == "pack" and d["RANK"] == 8 and d["IDX64"] == 0 and d["VW"] == 16
    # a high rank's registers capped for more resident blocks (rank 2 keeps the default:
    # test_misaligned_rows_use_the_rows_kernel's exact defines)
    assert d["MIN_BLOCKS"] == strategies.PACK_MIN_BLOCKS > 1


def _three_way_split(rows: int) -> SplitDesc:
    return SplitDesc(
        BufferTensorDesc(F32, [rows, 4096]),
        [
            BufferTensorDesc(F32, [rows, 1]),
            BufferTensorDesc(F32, [rows, 4092]),
            BufferTensorDesc(F32, [rows, 3]),
        ],
        1,
    )


def test_mixed_plans_launch_once_per_strategy() -> None:
    # (over MERGE_ELEMENTS elements: each strategy keeps its own launch)
    assert strategies.MERGE_ELEMENTS < 2048 * 4096
    groups = kernels_for(_three_way_split(2048))
    assert sorted(k for k, _ in groups) == ["pack", "rows"]


def _lower_triangle(shape: list[int]) -> DiagonalMatrix1Desc:
    begin, end = triangle_span(False, 0, shape[-2], shape[-1])
    t = BufferTensorDesc(F32, shape)
    return DiagonalMatrix1Desc(t, t, None, 0, begin, end)


def test_small_plans_of_several_strategies_take_one_element_wise_launch() -> None:
    assert strategies.MERGE_ELEMENTS >= 64 * 4096
    ((kernel, d),) = kernels_for(_three_way_split(64))
    assert kernel == "strided" and d["VW"] == 4 and d["GATHER"] == 1 and d["REVERSE"] == 0
    # a lower-triangle mask of a small batch: boxes, repeated remainders and zeros at
    # several vector widths and ranks, one launch
    tril = _lower_triangle([2, 37, 4000])
    assert len(kernels_for(tril)) == 1


def test_small_plans_keep_their_transposes_apart() -> None:
    desc = JoinDesc(
        [BufferTensorDesc(F32, [64, 64], strides=[1, 64]), BufferTensorDesc(F32, [64, 3])],
        BufferTensorDesc(F32, [64, 67]),
        1,
    )
    kernels = sorted(k for k, _ in kernels_for(desc, ins=(BASE, BASE * 2)))
    assert kernels == ["strided", "transpose"]


def test_copies_that_differ_only_in_rank_share_a_launch() -> None:
    # a large lower triangle: whole-row boxes (rank 1 once coalesced) and the blocks' boxes
    # (rank 2) at 16 bytes share one launch of the larger rank
    big = _lower_triangle([4096, 4096])
    groups = kernels_for(big)
    widths = [(k, d["VW"]) for k, d in groups]
    assert len(widths) == len(set(widths)) == len(groups)
    assert {d["RANK"] for k, d in groups if d["VW"] == 16} == {2}
    # rows of two outer axes (a pitched input: 8 rows 320 apart, blocks 3000 apart) and of
    # one (a contiguous input), joined into odd-length rows: one launch, two outer axes
    rows = JoinDesc(
        [
            BufferTensorDesc(F16, [4, 8, 300], strides=[3000, 320, 1]),
            BufferTensorDesc(F16, [4, 8, 301]),
        ],
        BufferTensorDesc(F16, [4, 8, 601]),
        2,
    )
    ((kernel, d),) = kernels_for(rows, ins=(BASE, BASE * 2))
    assert kernel == "rows" and d["OUTER"] == 2


def test_fast_division_is_exact() -> None:
    rng = np.random.default_rng(0)
    for d in [1, 2, 3, 5, 7, 10, 12, 24, 96, 1000, 4093, 65537, 2**20 + 1, 2**31 - 1]:
        magic, shift = fast_divider(d)
        assert 0 < magic < 2**32
        for n in [0, 1, d - 1, d, d + 1, 2**31 - 1, *rng.integers(0, 2**31, 200).tolist()]:
            t = (n * magic) >> 32
            assert (t + n) >> shift == n // d, (d, n)


def _box(
    sizes: tuple[int, ...], box: list[int], offsets: list[int], steps: list[int] | None = None
) -> SliceDesc:
    steps = steps or [1] * len(sizes)  # (SLICE's Sizes are the output's)
    return SliceDesc(
        BufferTensorDesc(F32, list(sizes)), BufferTensorDesc(F32, box), offsets, box, steps
    )


def test_small_high_rank_boxes_take_a_vector_a_thread_and_more_resident_blocks() -> None:
    # the layouts section's float32 5-D box of 96-byte rows: plain vectors, few tiles
    ((kernel, d),) = kernels_for(_box((22, 22, 26, 26, 32), [20, 20, 24, 24, 24], [1, 1, 1, 1, 4]))
    assert kernel == "strided" and d["RANK"] == 5 and d["GATHER"] == 1 and d["VW"] == 16
    assert d["PER_THREAD"] == 1 and d["MIN_BLOCKS"] == strategies.HIGH_RANK_MIN_BLOCKS > 1
    # the same box read at step 2 along its rows (a gather): several vectors a thread, no cap
    ((kernel, d),) = kernels_for(
        _box((22, 22, 26, 26, 64), [20, 20, 24, 24, 24], [1, 1, 1, 1, 8], [1, 1, 1, 1, 2])
    )
    assert kernel == "strided" and d["GATHER"] == 2
    assert d["PER_THREAD"] > 1 and "MIN_BLOCKS" not in d
    # one element a thread (a step of 7 along its rows into rows of a 32-element pitch: no
    # vector, and no contiguous destination for the pack kernel): the small count, no cap
    box, pitch = [4, 4, 8, 8, 24], [4 * 8 * 8 * 32, 8 * 8 * 32, 8 * 32, 32, 1]
    strided_out = SliceDesc(
        BufferTensorDesc(F32, [22, 22, 26, 26, 200]),
        BufferTensorDesc(F32, box, pitch),
        [1, 1, 1, 1, 8],
        box,
        [1, 1, 1, 1, 7],
    )
    ((kernel, d),) = kernels_for(strided_out)
    assert kernel == "strided" and d["VW"] == d["ES"] and d["RANK"] == 5
    assert d["PER_THREAD"] == strategies.SMALL_PER_THREAD and "MIN_BLOCKS" not in d
    # fewer dimensions: the small count, no cap
    ((kernel, d),) = kernels_for(_box((400, 26, 32), [300, 24, 24], [1, 1, 4]))
    assert kernel == "strided" and d["RANK"] == 3
    assert d["PER_THREAD"] == strategies.SMALL_PER_THREAD and "MIN_BLOCKS" not in d


def test_no_register_cap_where_the_index_arithmetic_is_64_bit() -> None:
    # a small 5-D box of a tensor past 2^31 elements: 64-bit arithmetic, registers uncapped
    ((kernel, d),) = kernels_for(_box((3, 3, 3, 3, 2**27), [2, 2, 2, 2, 96], [0, 0, 0, 0, 0]))
    assert kernel == "strided" and d["RANK"] == 5 and d["IDX64"] == 1
    assert d["PER_THREAD"] == 1 and "MIN_BLOCKS" not in d


def test_large_strided_copies_take_more_vectors_per_thread() -> None:
    desc = SliceDesc(
        BufferTensorDesc(F32, [4096, 4096]),
        BufferTensorDesc(F32, [4096, 4000]),
        [0, 0],
        [4096, 4000],
        [1, 1],
    )
    ((kernel, d),) = kernels_for(desc)
    assert kernel == "strided" and d["PER_THREAD"] == 8


def test_odd_offset_gathers_share_the_vector_kernel_through_a_phase() -> None:
    # the four slices of a Focus stem: even and odd rows and columns, one launch
    from dmlops import Graph

    g = Graph()
    x = g.input(BufferTensorDesc(F32, [1, 3, 64, 64]))
    parts = [
        g.slice(x, [0, 0, a, b], [1, 3, 32, 32], [1, 1, 2, 2])
        for a, b in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]
    plan = g.plan([g.join(parts, 1)])
    assert len(plan.copies) == 1  # four slices on a lattice of offsets: one copy
    groups = group_copies(plan, (BASE,), (BASE * 4,))
    assert len(groups) == 1 and groups[0].kernel == "strided"
    d = dict(groups[0].defines)
    assert d["GATHER"] == 2 and d["VW"] == 16 and d["PHASES"] == 1  # every phase per load
    # the odd phases alone (two slices of odd columns): the kernel starts at a phase
    odd = [g.slice(x, [0, 0, a, 1], [1, 3, 32, 32], [1, 1, 2, 2]) for a in (0, 1)]
    plan = g.plan(odd)
    groups = group_copies(plan, (BASE,), (BASE * 4, BASE * 5))
    assert len(groups) == 1 and "PHASES" not in dict(groups[0].defines)
    assert set(groups[0].table[:, 4].tolist()) == {1}


def test_a_pixel_unshuffle_writes_every_phase_of_its_loads() -> None:
    """A graph's SPACE_TO_DEPTH1 is one copy with the column phase as an axis of unit source
    stride: the gather kernel keeps all phases (the axis leaves the walk); a slice that
    keeps one phase (strides 2x2) still picks its phase."""
    import dmlops

    x = np.zeros((2, 3, 64, 64), np.float32)
    g = dmlops.Graph()
    y = g.space_to_depth(g.input(x), 2)
    plan = g.compile([y]).plan
    ((kernel, d),) = [(k.kernel, dict(k.defines)) for k in group_copies(plan, (BASE,), (BASE * 4,))]
    assert kernel == "strided" and d["PHASES"] == 1 and d["GATHER"] == 2 and d["VW"] == 16
    assert d["RANK"] == len(plan.copies[0].shape) - 1
    desc = SliceDesc(
        BufferTensorDesc(F32, [64, 64]), BufferTensorDesc(F32, [32, 32]), [0, 0], [32, 32], [2, 2]
    )
    ((_, d),) = kernels_for(desc)
    assert "PHASES" not in d


@pytest.mark.parametrize("dt, vw", [(F32, 16), (F16, 16), (I8, 16)])
def test_depth_to_space_interleaves_vectors_of_each_phase_row(dt: DataType, vw: int) -> None:
    import dmlops

    g = dmlops.Graph()
    y = g.depth_to_space(g.input(BufferTensorDesc(dt, [2, 64, 64, 64])), 2, "CRD")
    plan = g.compile([y]).plan
    ((kernel, d),) = [(k.kernel, dict(k.defines)) for k in group_copies(plan, (BASE,), (BASE * 4,))]
    assert kernel == "strided" and d["INTERLEAVE"] == 2 and d["VW"] == vw
    assert d["RANK"] == len(plan.copies[0].shape) - 1


@pytest.mark.parametrize(
    ("rows", "lanes", "slots", "way"),
    [
        (4096, 32, 524288, "table"),  # the in-place KV write: 264 blocks each locating
        (1024, 32, 65536, "table"),  # every row: 31.6 µs; 1,024 rows 7.3 against 6.5
        (256, 32, 65536, "shared"),  # 3.7 µs (a winner table 6.5, each row located 7.0)
        (256, 1, 65536, "table"),  # a thread per short row reads 256 slots: 18.9 against 5.5
        (32, 1, 65536, "shared"),
        (6, 1, 32, "shared"),
        (4097, 32, 100, "table"),
        (1000, 1, 2**31, "scan"),  # slots past an int: no table of an int per slot
        (1025, 1, 2**31, "table"),
    ],
)
def test_scatters_find_their_winners_by_the_measured_cheapest_way(
    rows: int, lanes: int, slots: int, way: str
) -> None:
    """Which launch resolves repeated scatter targets, by rows, lanes a row and slots (the
    H100 timings in the comments are kernel time per call, from backends/cuda/indexed.py)."""
    from dmlops.backends.cuda.indexed import winners_by

    assert winners_by(True, rows, lanes, slots) == way
    assert winners_by(False, rows, lanes, slots) == "none"


@pytest.mark.parametrize(
    ("chunks", "rows", "lanes"),
    [
        (32, 1, 32),  # a warp a long row, however few
        (500, 10**7, 32),
        (16, 32, 16),  # 32 rows of 256 bytes: a team of 16, a chunk a lane
        (3, 100, 4),  # the power of two at or over the chunks
        (17, 1000, 32),  # 17 chunks: a team of 32, 1,000 rows (32,000 threads)
        (1, 50, 1),
        (2, 1 << 15, 2),  # at the limit: 2^16 threads
        (2, (1 << 15) + 1, 1),  # past it: a thread a row fills the GPU
        (16, 1 << 12, 16),
        (16, (1 << 12) + 1, 1),
    ],
)
def test_short_rows_take_a_team_where_few_rows_leave_the_gpu_idle(
    chunks: int, rows: int, lanes: int
) -> None:
    from dmlops.backends.cuda.indexed import TEAM_THREADS, row_lanes

    assert TEAM_THREADS == 1 << 16
    assert row_lanes(chunks, rows) == lanes


@pytest.mark.parametrize(("rows", "width", "kernel"), [
    (256, 512, "dmlops_indexed_scan_shared"),  # 2 KiB rows: a warp a row
    (4096, 512, "dmlops_indexed"),  # after a winner pass; a warp a row
    (4096, 1024, "dmlops_indexed"),  # 4 KiB rows: two warps a row
    (1000, 4, "dmlops_indexed"),  # a thread a row
    (20, 4, "dmlops_indexed_scan_shared"),
])  # fmt: skip
def test_a_scatters_launches_follow_the_choice(
    rows: int, width: int, kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`IndexedLaunch._prepare` on a stand-in for CuPy: a shared-memory scan is one launch
    over at most 264 blocks; a winner table adds its pass before the copy, and is cleared
    once, there, where one warp or thread moves each whole row (the copy frees its slots),
    else by every call."""
    from types import SimpleNamespace

    from dmlops.backends.cuda import indexed as cuda_indexed
    from dmlops.ops import ScatterNdDesc
    from dmlops.plan import Layout
    from dmlops.tensor import packed_strides

    f32, i64 = DataType.FLOAT32, DataType.INT64
    data = BufferTensorDesc(f32, (1000, width))
    desc = ScatterNdDesc(
        data, BufferTensorDesc(i64, (rows, 1)), BufferTensorDesc(f32, (rows, width)), data, 2, 2
    )
    shapes = [(1000, width), (rows, 1), (rows, width)]
    plan = desc.lower(
        [Layout(0, tuple(packed_strides(s))) for s in shapes],
        [Layout(0, tuple(packed_strides((1000, width))))],
    )
    (copy,) = plan.indexed
    launch = cuda_indexed.IndexedLaunch(copy, 4)
    table = SimpleNamespace(data=SimpleNamespace(ptr=1 << 20), nbytes=4000)
    cleared: list[tuple[int, ...]] = []
    runtime = SimpleNamespace(memsetAsync=lambda *a: cleared.append(a))
    fake = SimpleNamespace(
        empty=lambda n, dtype: table,
        int32=np.int32,
        cuda=SimpleNamespace(runtime=runtime, Stream=_STREAM),
    )
    names: list[str] = []
    monkeypatch.setattr(cuda_indexed, "_named", lambda cp, entry: names.append(entry) or entry)
    winner, launches, kept, each_call = launch._prepare(fake, 0, 0, 1 << 30, 1 << 31, 1 << 29)
    assert launches[-1][0] == kernel
    chunks = width * 4 // 16  # (16-byte moves: the addresses and rows allow them)
    assert kept[0][cuda_indexed.META_WORDS - 1] == cuda_indexed.row_lanes(chunks, rows)
    assert each_call == (winner is not None and width * 4 > 2048)
    assert len(cleared) == (winner is not None and not each_call)
    assert (winner is not None) == (names[0] == "dmlops_indexed_winner")
    assert len(launches) == (2 if winner is not None else 1)
    if kernel.endswith("shared"):
        assert launches[-1][1][0] <= 264


def test_an_interrupted_winner_scatter_leaves_no_table_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scatter whose copy frees its winner table's slots, interrupted between its winner
    pass and its copy (a KeyboardInterrupt between the two launches): its prepared table,
    whose slots no copy freed, is dropped, so the next call clears a new one (stand-ins for
    CuPy and the kernels)."""
    from types import SimpleNamespace

    from dmlops.backends.cuda import indexed as cuda_indexed
    from dmlops.ops import ScatterNdDesc
    from dmlops.plan import Layout
    from dmlops.tensor import packed_strides

    f32, i64 = DataType.FLOAT32, DataType.INT64
    data = BufferTensorDesc(f32, (1000, 8))
    rows = 6000
    desc = ScatterNdDesc(
        data, BufferTensorDesc(i64, (rows, 1)), BufferTensorDesc(f32, (rows, 8)), data, 2, 2
    )
    shapes = [(1000, 8), (rows, 1), (rows, 8)]
    plan = desc.lower(
        [Layout(0, tuple(packed_strides(s))) for s in shapes],
        [Layout(0, tuple(packed_strides((1000, 8))))],
    )
    (copy,) = plan.indexed
    launch = cuda_indexed.IndexedLaunch(copy, 4)
    monkeypatch.setattr(cuda_indexed, "GRAPHED_WINNERS", False)
    monkeypatch.setattr(cuda_indexed, "_named", lambda cp, entry: entry)
    cleared: list[int] = []
    launched: list[str] = []
    interrupt = [False]

    def launch_kernel(function: str, *rest: object) -> None:
        if interrupt[0] and function == "dmlops_indexed":
            raise KeyboardInterrupt
        launched.append(function)

    tables = iter(range(1, 100))
    fake = SimpleNamespace(
        empty=lambda n, dtype: SimpleNamespace(
            data=SimpleNamespace(ptr=next(tables) << 20), nbytes=4 * n
        ),
        int32=np.int32,
        cuda=SimpleNamespace(
            runtime=SimpleNamespace(
                memsetAsync=lambda ptr, *a: cleared.append(ptr),
                streamIsCapturing=lambda stream: False,
            ),
            Stream=_STREAM,
        ),
    )
    monkeypatch.setattr(cuda_indexed, "launch_kernel", launch_kernel)
    ins, outs = [1 << 30, 1 << 29, 1 << 31], [1 << 30]
    launch.launch(fake, 0, ins, outs, 0)
    launch.launch(fake, 0, ins, outs, 0)  # warm: no clearing
    assert cleared == [1 << 20]
    assert launched == ["dmlops_indexed_winner", "dmlops_indexed"] * 2
    interrupt[0] = True
    with pytest.raises(KeyboardInterrupt):
        launch.launch(fake, 0, ins, outs, 0)
    interrupt[0] = False
    launch.launch(fake, 0, ins, outs, 0)  # a new table, cleared
    assert cleared == [1 << 20, 2 << 20]


@pytest.mark.parametrize(("width", "packed"), [(8, True), (8, False), (128, True), (128, False)])
def test_a_winner_table_is_freed_by_the_copy_only_where_each_index_is_one_row(
    width: int, packed: bool
) -> None:
    """Scatters of 4,500 rows of [4, width] float32 blocks into [300, 4, width], packed (each
    index position one row: the copy frees its slots) or a view's blocks (four rows an index
    position, which one row's mover must not free before the others look: each call clears
    the table), on a stand-in for CuPy."""
    from types import SimpleNamespace

    from dmlops.backends.cuda import indexed as cuda_indexed
    from dmlops.indexed import rows_of
    from dmlops.ops import ScatterNdDesc
    from dmlops.plan import Layout
    from dmlops.tensor import packed_strides

    f32, i64 = DataType.FLOAT32, DataType.INT64
    data = BufferTensorDesc(f32, (300, 4, width))
    rows = 4500
    desc = ScatterNdDesc(
        data,
        BufferTensorDesc(i64, (rows, 1, 1)),
        BufferTensorDesc(f32, (rows, 4, width)),
        data,
        3,
        3,
    )
    view = (4 * 2 * width, 2 * width, 1)  # [:, :, :width] of [300, 4, 2 * width]
    strides = tuple(packed_strides((300, 4, width))) if packed else view
    plan = desc.lower(
        [
            Layout(0, strides),
            Layout(0, (1, 1, 1)),
            Layout(0, tuple(packed_strides((rows, 4, width)))),
        ],
        [Layout(0, strides)],
    )
    (copy,) = plan.indexed
    assert rows_of(copy).one_row_an_index == packed
    launch = cuda_indexed.IndexedLaunch(copy, 4)
    cleared: list[object] = []
    table = SimpleNamespace(data=SimpleNamespace(ptr=1 << 20), nbytes=1200)
    fake = SimpleNamespace(
        empty=lambda n, dtype: table,
        int32=np.int32,
        cuda=SimpleNamespace(
            runtime=SimpleNamespace(memsetAsync=lambda *a: cleared.append(a)), Stream=_STREAM
        ),
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr(cuda_indexed, "_named", lambda cp, entry: entry)
        winner, _, _, each_call = launch._prepare(fake, 0, 0, 1 << 30, 1 << 31, 1 << 29)
    assert winner is not None and each_call == (not packed)
    assert len(cleared) == int(packed)  # cleared once, when made, where the copy frees it


def _walk_pack_row(row: list[int], rank: int, v: int) -> list[list[int]]:
    """The source element offsets of each destination vector of a pack-kernel row, walked
    as the kernel walks them: one division chain a vector, then carries."""
    count, shape = row[2], row[4 : 4 + rank]
    strides = row[4 + rank : 4 + 2 * rank]
    vectors = []
    for i0 in range(0, count, v):
        c, q, so = [0] * rank, i0, 0
        for d in range(rank - 1, 0, -1):
            q, c[d] = divmod(q, shape[d])
            so += c[d] * strides[d]
        c[0] = q
        so += q * strides[0]
        offsets = []
        for e in range(v):
            if e < count - i0:
                offsets.append(so)
            so += strides[-1]
            c[-1] += 1
            if c[-1] == shape[-1]:
                c[-1] = 0
                so -= shape[-1] * strides[-1]
                for d in range(rank - 2, -1, -1):
                    so += strides[d]
                    c[d] += 1
                    if c[d] < shape[d]:
                        break
                    c[d] = 0
                    so -= shape[d] * strides[d]
        vectors.append(offsets)
    return vectors


@pytest.mark.parametrize(
    "sizes, offsets, window, steps, dt",
    [
        ((9, 9, 9, 12), [1, 1, 1, 1], [7, 7, 7, 10], [1, 1, 1, 1], DataType.UINT16),
        ((5, 6, 7), [1, 1, 1], [3, 4, 5], [-1, -2, -1], DataType.UINT8),
        ((4, 40), [0, 1], [4, 35], [1, 7], F32),
        ((3, 3, 3), [0, 0, 0], [3, 3, 3], [1, 1, 1], DataType.UINT16),  # (a vector's tail)
    ],
)
def test_the_pack_kernel_walks_every_source_element_in_destination_order(
    sizes, offsets, window, steps, dt
) -> None:  # type: ignore[no-untyped-def]
    """Copies into a contiguous output that no vector fits on the source side take the pack
    kernel; its rows, walked as the kernel walks them, visit each source element the copy
    reads, in the output's order, with the last vector cut short."""
    import dmlops
    from dmlops import Slice1Desc

    es = {DataType.UINT16: 2, DataType.UINT8: 1, F32: 4}[dt]
    src = np.arange(int(np.prod(sizes)), dtype=np.int64).reshape(sizes)
    want = dmlops.slice1(src, offsets, window, steps)  # (numpy's views: element numbers)
    desc = Slice1Desc(
        BufferTensorDesc(dt, sizes), BufferTensorDesc(dt, want.shape), offsets, window, steps
    )
    desc.validate()
    groups = group_copies(desc.lower(), (BASE,), (BASE * 4,))
    assert [g.kernel for g in groups] == ["pack"]
    d = dict(groups[0].defines)
    seen = []
    for row in groups[0].table.tolist():
        first = (row[0] - BASE) // es  # the element the row's walk starts at
        seen += [first + o for vec in _walk_pack_row(row, d["RANK"], d["VW"] // es) for o in vec]
        assert row[1] % d["VW"] == 0
    assert seen == want.reshape(-1).tolist()


def _plan_of(call: Any) -> Any:
    """The plan the numpy backend compiled for a functional call (its last cache entry)."""
    from dmlops.calls import dispatch

    dispatch.clear_cache()
    call()
    ((_, (compiled, _)),) = list(dispatch._CACHE.items.items())[-1:]
    return compiled.plan


@pytest.mark.parametrize(
    "case", ["padding", "join", "reversed window", "transpose", "depth_to_space", "sequence"]
)
def test_tables_by_value_add_the_addresses_of_each_call(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ByValue`'s tables, less their bindings' addresses, with the patches a launch adds
    back: at any addresses of the same alignment, the tables `group_copies` makes there
    (fills' addresses kept as they are)."""
    from dmlops.backends.cuda import FILL_BYTES
    from dmlops.backends.cuda import launch as cuda_launch
    from dmlops.plan import fill_reads

    x = np.arange(2 * 6 * 8 * 8, dtype=np.float32).reshape(2, 6, 8, 8)
    calls = {
        "padding": lambda: dmlops.padding(x, [1, 0, 2, 0], [0, 2, 1, 3], "CONSTANT", -1.5),
        "join": lambda: dmlops.join([x[:, :k] for k in (1, 2, 3)], 1),
        "reversed window": lambda: dmlops.slice1(x, [0, 1, 0, 0], [2, 5, 8, 8], [-1, 2, 1, -1]),
        "transpose": lambda: np.ascontiguousarray(dmlops.join([x.transpose(0, 3, 2, 1)], 0)),
        "depth_to_space": lambda: dmlops.depth_to_space(x.reshape(2, 8, 6, 8), 2),
        "sequence": lambda: dmlops.fill_value_sequence([3, 5], 1, 2),
    }
    plan = _plan_of(calls[case])
    fills = [77 << 32, 78 << 32][: len(plan.fill_patterns(FILL_BYTES))] if plan.writes_fills else []
    if plan.writes_fills:
        plan = fill_reads(plan, FILL_BYTES)
    n_in, n_out = len(plan.input_spans), len(plan.output_spans)
    first = ([(1 + k) << 30 for k in range(n_in)], [(9 + k) << 30 for k in range(n_out)])
    later = (
        [((5 + k) << 30) + 256 for k in range(n_in)],
        [((20 + k) << 30) + 512 for k in range(n_out)],
    )
    groups = group_copies(plan, [*first[0], *fills], first[1])
    made = cuda_launch.ByValue(
        groups,
        [(k, 1, 4000) for k in range(len(groups))],
        [*first[0], *fills],
        first[1],
        len(fills),
    )
    launched: list[tuple[Any, ...]] = []
    monkeypatch.setattr(cuda_launch, "launch_table", lambda *a: launched.append(a))
    made.run(later[0], later[1], 0)
    wanted = group_copies(plan, [*later[0], *fills], later[1])
    assert [g.kernel for g in wanted] == [g.kernel for g in groups]
    for (_, _, _, _, table, patches, addresses, pieces, tiles), want in zip(
        launched, wanted, strict=True
    ):
        words = np.frombuffer(table, np.int64).copy()
        for word, which in np.frombuffer(patches, np.int32).reshape(-1, 2).tolist():
            words[word] += addresses[which]
        assert np.array_equal(words[: want.table.size].reshape(want.table.shape), want.table)
        assert not words[want.table.size :].any()
        assert (pieces, tiles) == (want.pieces, want.tiles)


@pytest.mark.parametrize(
    "case", ["padding", "join of 40", "reversed window", "transpose", "gather beside slices"]
)
def test_uploaded_tables_at_new_addresses_are_the_tables_planned_there(case: str) -> None:
    """`Tables.at`: a plan's groups made once, less their bindings' addresses, then at any
    addresses of the same alignment exactly the groups `group_copies` makes there (fills'
    addresses kept as they are) — kernels, defines, sizes and every table word."""
    from dmlops.backends.cuda import FILL_BYTES
    from dmlops.backends.cuda.launch import Tables
    from dmlops.plan import fill_reads

    x = np.arange(2 * 6 * 8 * 8, dtype=np.float32).reshape(2, 6, 8, 8)
    idx = (np.arange(2 * 3 * 8 * 8, dtype=np.int64) % 6).reshape(2, 3, 8, 8)  # (along axis 1)
    calls = {
        "padding": lambda: dmlops.padding(x, [1, 0, 2, 0], [0, 2, 1, 3], "CONSTANT", -1.5),
        "join of 40": lambda: dmlops.join([x[:, :1]] * 40, 1),
        "reversed window": lambda: dmlops.slice1(x, [0, 1, 0, 0], [2, 5, 8, 8], [-1, 2, 1, -1]),
        "transpose": lambda: np.ascontiguousarray(dmlops.join([x.transpose(0, 3, 2, 1)], 0)),
    }
    plan = _graph_with_a_gather(x, idx) if case == "gather beside slices" else _plan_of(calls[case])
    assert plan.copies
    fills = [77 << 32, 78 << 32][: len(plan.fill_patterns(FILL_BYTES))] if plan.writes_fills else []
    if plan.writes_fills:
        plan = fill_reads(plan, FILL_BYTES)
    n_in, n_out = len(plan.input_spans), len(plan.output_spans)
    first = ([(1 + k) << 30 for k in range(n_in)], [(90 + k) << 30 for k in range(n_out)])
    groups = group_copies(plan, [*first[0], *fills], first[1])
    tables = Tables(groups, [*first[0], *fills], first[1], len(fills), [])
    for shift in (0, 256, 1 << 20):
        later = (
            [((50 + k) << 30) + shift for k in range(n_in)],
            [((200 + k) << 30) + 2 * shift for k in range(n_out)],
        )
        got = tables.at(*later)
        want = group_copies(plan, [*later[0], *fills], later[1])
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert (g.kernel, g.defines, g.tiles, g.pieces) == (
                w.kernel,
                w.defines,
                w.tiles,
                w.pieces,
            )
            assert g.table.dtype == w.table.dtype and np.array_equal(g.table, w.table)


def _graph_with_a_gather(x: Any, idx: Any) -> Any:
    """A plan of an indexed copy (a gather of a slice, joined) and a strided one (a flip)."""
    graph = dmlops.Graph()
    a, i = graph.input(x), graph.input(idx)
    g = graph.gather_elements(graph.slice1(a, [0, 0, 0, 0], [2, 6, 8, 8], [1, 1, -1, 1]), i, 1)
    flipped = graph.slice1(a, [0, 0, 0, 0], [2, 6, 8, 8], [-1, 1, 1, -1])
    return graph.compile([graph.join([g, g], 0), flipped]).plan


def test_the_c_launcher_refuses_a_table_it_cannot_pass() -> None:
    """`launch_table` checks its table and patches before anything reaches the driver."""
    launcher = pytest.importorskip("dmlops.backends.cuda._launch")
    table = np.zeros(2, np.int64).tobytes()
    with pytest.raises(ValueError, match="a patch outside its table"):
        launcher.launch_table(0, 1, 256, 0, table, np.array([5, 0], np.int32).tobytes(), [0], 1, 1)
    with pytest.raises(ValueError, match="a patch outside its table"):
        launcher.launch_table(0, 1, 256, 0, table, np.array([1, 3], np.int32).tobytes(), [0], 1, 1)
    with pytest.raises(ValueError, match="at most 4,000"):
        launcher.launch_table(0, 1, 256, 0, bytes(8 * 4001), b"", [], 1, 1)
    with pytest.raises(TypeError, match="9 arguments"):
        launcher.launch_table(0, 1)


def test_warm_indexed_launches_take_each_calls_addresses(
    monkeypatch: pytest.MonkeyPatch, indexed_preparations: list[Any]
) -> None:
    """A gather's launches (no winner table) prepared once per device, stream and alignment
    of its source and destination: each call's addresses are in the parameters when it
    launches; an address 4 bytes off, or another stream, prepares anew (stand-ins for CuPy
    and the driver)."""
    import ctypes

    from dmlops.backends.cuda import indexed as cuda_indexed

    x = np.zeros((1000, 64), np.float32)
    plan = _plan_of(lambda: dmlops.gather(x, np.arange(32), 0))
    (copy,) = plan.indexed
    launch = cuda_indexed.IndexedLaunch(copy, 4)
    monkeypatch.setattr(cuda_indexed, "_named", lambda cp, entry: entry)
    prepared = indexed_preparations
    seen: list[tuple[int, ...]] = []

    def launch_kernel(function: str, *rest: Any) -> None:
        params = ctypes.cast(rest[-2], ctypes.POINTER(ctypes.c_uint64))  # (parameter addresses)
        read = [ctypes.cast(params[k], ctypes.POINTER(ctypes.c_uint64))[0] for k in (1, 2, 3)]
        seen.append((rest[-3], *read))  # (stream, source, destination, index)

    monkeypatch.setattr(cuda_indexed, "launch_kernel", launch_kernel)
    fake = SimpleNamespace(cuda=SimpleNamespace(runtime=SimpleNamespace(
        streamIsCapturing=lambda stream: False)))  # fmt: skip
    calls = [
        (7, 1 << 30, 3 << 30, 5 << 30),
        (7, (1 << 30) + 4096, (4 << 30) + 512, 6 << 30),  # (aligned alike: warm)
        (7, (1 << 30) + 4, 3 << 30, 5 << 30),  # (4 bytes off: its own)
        (8, 1 << 30, 3 << 30, 5 << 30),  # (another stream)
        (7, (2 << 30) + 4, (9 << 30) + 256, 5 << 30),  # (4 bytes off again: warm)
    ]
    for stream, src, dst, index in calls:
        launch.launch(fake, 0, [src, index], [dst], stream)
    assert seen == [(stream, src, dst, index) for stream, src, dst, index in calls]
    assert len(prepared) == 3


def test_tables_by_value_through_ctypes_add_the_addresses_as_the_c_launcher_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the C extension, `launch_table` packs the table with each patch's address
    added, then the launch's pieces and tiles (what the kernel reads)."""
    import ctypes

    from dmlops.backends.cuda import launch as cuda_launch

    got: list[Any] = []

    def launch(function: int, grid: int, *rest: Any) -> None:
        params = ctypes.cast(rest[-2], ctypes.POINTER(ctypes.c_uint64))
        words = ctypes.cast(params[0], ctypes.POINTER(ctypes.c_int64))
        pieces = ctypes.cast(params[1], ctypes.POINTER(ctypes.c_int32))[0]
        tiles = ctypes.cast(params[2], ctypes.POINTER(ctypes.c_int64))[0]
        got.append((function, grid, [words[k] for k in range(4)], pieces, tiles))

    monkeypatch.setattr(cuda_launch, "_ctypes_launch", launch)
    table = np.array([10, -20, 30, 40], np.int64).tobytes()
    patches = np.array([[0, 1], [1, 0], [3, 1]], np.int32).tobytes()
    cuda_launch._ctypes_launch_table(5, 6, 256, 0, table, patches, [1000, 7 << 33], 3, 9)
    assert got == [(5, 6, [10 + (7 << 33), 980, 30, 40 + (7 << 33)], 3, 9)]


def test_a_call_in_a_thread_with_no_cuda_context_makes_it_current_and_calls_again() -> None:
    """`in_any_thread`: a launch that finds no context current (the driver's error 201,
    NoContext) has its device made current, then the call runs once more; other driver
    errors pass through untouched."""
    from dmlops.backends.cuda.launch import NoContext, check_driver, in_any_thread

    with pytest.raises(NoContext, match="error 201"):
        check_driver(201, "cuLaunchKernel")
    with pytest.raises(RuntimeError, match="error 700") as raised:
        check_driver(700, "cuLaunchKernel")
    assert not isinstance(raised.value, NoContext)
    made_current: list[int] = []
    runtime = SimpleNamespace(setDevice=made_current.append)

    class Executor:
        backend = SimpleNamespace(
            cupy=SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)),
            default_queue=lambda: (3, 0),
        )

        def __init__(self, failures: list[RuntimeError]) -> None:
            self.failures = failures
            self.calls: list[Any] = []

        @in_any_thread
        def __call__(self, ins: Any, outs: Any, queue: Any = None) -> None:
            self.calls.append((ins, outs, queue))
            if self.failures:
                raise self.failures.pop(0)

    executor = Executor([NoContext("no context")])
    executor([1], [2], (5, 9))
    assert executor.calls == [([1], [2], (5, 9))] * 2 and made_current == [5]
    executor = Executor([NoContext("no context")])
    executor([1], [2])
    assert executor.calls == [([1], [2], None)] * 2 and made_current == [5, 3]
    executor = Executor([NoContext("no context"), NoContext("still none")])
    with pytest.raises(NoContext, match="still none"):  # (once only)
        executor([1], [2], (5, 9))
    executor = Executor([RuntimeError("cuLaunchKernel failed with CUDA driver error 700")])
    with pytest.raises(RuntimeError, match="700"):
        executor([1], [2], (5, 9))
    assert len(executor.calls) == 1 and made_current == [5, 3, 5]


@pytest.mark.parametrize("dtype", ["float32", "int8", "bfloat16"])
def test_warm_outputs_are_made_as_new_empty_makes_them(dtype: str) -> None:
    """`output_maker` (a warm CUDA call's new outputs: `empty_like` of one element expanded)
    makes what `new_empty` makes — row-major strides, the input's type and device — for
    every shape of up to five dimensions of sizes 0 to 3 (under two elements: `empty`).
    CPU tensors stand in for CUDA ones: torch's layout rules are the device's alike."""
    import itertools

    torch = pytest.importorskip("torch")
    from dmlops.backends.cuda import output_maker

    like = torch.zeros(3, dtype=getattr(torch, dtype))
    for rank in range(6):
        for shape in itertools.product(range(4), repeat=rank):
            made = output_maker(like, shape)
            assert made is not None
            got, want = made(), like.new_empty(shape)
            assert (got.shape, got.stride(), got.dtype, got.device) == (
                want.shape,
                want.stride(),
                want.dtype,
                want.device,
            ), shape
            assert made().data_ptr() != got.data_ptr() or got.numel() == 0  # (new each time)
