"""The seeds' worked examples, the CLI, and outputs left untouched by failed calls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import Binding, BufferTensorDesc, DataType, Device, DmlError, SliceDesc, SplitDesc
from dmlops.cli import main
from dmlops.plan import coalesce, is_injective
from dmlops.worked_examples import WORKED_EXAMPLES


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=lambda e: e.title)
def test_worked_example_device_api(backend: str, ex) -> None:  # type: ignore[no-untyped-def]
    op = Device(
        dmlops.FeatureLevel.FL_1_0 if ex.desc.OPERATOR != "SLICE1" else dmlops.FeatureLevel.FL_2_1,
        backend=backend,
    ).create_operator(ex.desc)
    outs = [
        to_device(backend, np.full(t.sizes, -1, np.float32)) for _, t in ex.desc.output_fields()
    ]
    op.execute([to_device(backend, ex.make_input())], outs)
    for got, want in zip(outs, ex.expected_arrays()):
        np.testing.assert_array_equal(to_host(got), want)


def test_worked_examples_functional() -> None:
    a = WORKED_EXAMPLES[0].make_input()
    assert dmlops.slice(a, [0, 0, 1, 2], [1, 1, 3, 2], [1, 1, 1, 1]).squeeze().tolist() == [
        [7, 8],
        [11, 12],
        [15, 16],
    ]
    assert dmlops.slice(a, [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3]).squeeze().tolist() == [
        [5, 8],
        [13, 16],
    ]
    assert dmlops.slice1(a, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2]).squeeze().tolist() == [
        [2, 4],
        [10, 12],
    ]
    assert dmlops.slice1(a, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]).squeeze().tolist() == [
        [14, 16],
        [6, 8],
    ]
    b = WORKED_EXAMPLES[4].make_input()
    assert [p.ravel().tolist() for p in dmlops.split(b, 2, [2, 1, 3])] == [
        [1, 2, 3, 4],
        [5, 6],
        [7, 8, 9, 10, 11, 12],
    ]
    assert [p.ravel().tolist() for p in dmlops.split(b, 3, [1, 1])] == [
        [1, 3, 5, 7, 9, 11],
        [2, 4, 6, 8, 10, 12],
    ]


def test_cli_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "6 of 6 worked examples match" in out
    assert "[[[[14, 16],\n   [ 6,  8]]]]" in out
    assert "InputWindowStrides = {1, 1, -2, 2}" in out


def test_cli_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "explain",
                "slice1",
                "--input-sizes",
                "1,1,4,4",
                "--window-offsets",
                "0,0,0,1",
                "--window-sizes",
                "1,1,4,3",
                "--window-strides",
                "1,1,-2,2",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "VALID at DML_FEATURE_LEVEL_6_4" in out
    for line in (
        "Output[0,0,0,0] = Input[0,0,3,1]",
        "Output[0,0,0,1] = Input[0,0,3,3]",
        "Output[0,0,1,0] = Input[0,0,1,1]",
        "Output[0,0,1,1] = Input[0,0,1,3]",
    ):
        assert line in out
    assert (
        main(
            [
                "explain",
                "slice",
                "--input-sizes",
                "1,1,4,4",
                "--offsets",
                "0,0,1,0",
                "--sizes",
                "1,1,2,2",
                "--strides",
                "1,1,2,3",
            ]
        )
        == 0
    )
    assert "Output[0,0,1,1] = Input[0,0,3,3]" in capsys.readouterr().out
    assert (
        main(
            [
                "explain",
                "split",
                "--input-sizes",
                "1,1,6,2",
                "--axis",
                "2",
                "--split-sizes",
                "2,1,3",
            ]
        )
        == 0
    )
    assert "OutputTensors[1][0,0,0,1] = Input[0,0,2,1]" in capsys.readouterr().out
    assert main(["explain", "join", "--input-sizes", "2", "--input-sizes", "3", "--axis", "0"]) == 0
    assert "Output[4] = InputTensors[1][2]" in capsys.readouterr().out
    assert (
        main(
            [
                "explain",
                "slice",
                "--input-sizes",
                "4,4,4",
                "--offsets",
                "0,0,0",
                "--sizes",
                "1,1,1",
                "--strides",
                "1,1,1",
                "--feature-level",
                "2_1",
            ]
        )
        == 1
    )
    assert (
        "INVALID at DML_FEATURE_LEVEL_2_1: SLICE.InputTensor.DimensionCount is 3"
        in capsys.readouterr().out
    )


# --- failed calls write nothing ---------------------------------------------------------------


def test_failed_device_calls_leave_outputs_untouched(backend: str) -> None:
    poison = np.arange(100, 124, dtype=np.float32)
    good = SplitDesc(
        BufferTensorDesc(DataType.FLOAT32, [1, 1, 6, 2]),
        [BufferTensorDesc(DataType.FLOAT32, [1, 1, 3, 2])] * 2,
        2,
    )
    op = Device(backend=backend).create_operator(good)
    x = to_device(backend, np.arange(12, dtype=np.float32))
    outs = [
        to_device(backend, poison[:12].copy()),
        to_device(backend, poison[:5].copy()),
    ]  # second too small
    with pytest.raises(DmlError, match=r"SPLIT\.OutputTensors\[1\] binding: 20 bytes bound"):
        op.execute([x], outs)
    assert to_host(outs[0]).tolist() == poison[:12].tolist()
    outs2 = [to_device(backend, poison[:12].copy()), to_device(backend, poison[:12].copy())]
    with pytest.raises(DmlError, match=r"InputTensor binding: 44 bytes bound"):
        op.execute([Binding(x, 4)], outs2)
    assert all(to_host(o).tolist() == poison[:12].tolist() for o in outs2)


def test_failed_functional_calls_leave_outputs_untouched() -> None:
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    outs = [np.full((2, 4), 7.0, np.float32), np.full((2, 4), 7.0, np.float32)]
    with pytest.raises(DmlError):
        dmlops.split(x, 0, [2, 2], outs=[outs[0], outs[1][:, :3]])
    with pytest.raises(DmlError):
        dmlops.split(x, 0, [2, 2], outs=outs, feature_level="2_1")
    with pytest.raises(DmlError):
        dmlops.slice1(x, [0, 0], [4, 4], [1, 0], out=outs[0])
    assert all((o == 7).all() for o in outs)


# --- the plan --------------------------------------------------------------------------------


def test_coalesce_merges_contiguous_dimensions() -> None:
    assert coalesce([2, 3, 4], [12, 4, 1], [12, 4, 1])[:3] == ((24,), (1,), (1,))
    assert coalesce([1, 4, 1, 4], [64, 16, 4, 1], [16, 4, 4, 1])[:3] == ((4, 4), (16, 1), (4, 1))
    shape, s, d, so, do = coalesce([3], [-2], [-1], 10, 5)
    assert (shape, s, d, so, do) == ((3,), (2,), (1,), 6, 3)


def test_slice_of_contiguous_rows_is_one_copy() -> None:
    desc = SliceDesc(
        BufferTensorDesc(DataType.FLOAT32, [8, 16]),
        BufferTensorDesc(DataType.FLOAT32, [4, 16]),
        [2, 0],
        [4, 16],
        [1, 1],
    )
    plan = desc.lower()
    assert len(plan.copies) == 1 and plan.copies[0].shape == (64,)
    assert plan.copies[0].src_offset == 2 * 16 * 4


def test_injectivity() -> None:
    assert is_injective([3, 2], [2, 3])
    assert not is_injective([2, 2], [1, 1])
    assert not is_injective([2], [0])
    assert is_injective([1, 5], [0, 1])


def _pairs(copies):  # type: ignore[no-untyped-def]
    """Every (src, src element, dst, dst element) pair the copies visit, naively."""
    import itertools

    seen = []
    for c in copies:
        for at in itertools.product(*(range(n) for n in c.shape)):
            s = c.src_offset + sum(i * t for i, t in zip(at, c.src_strides))
            d = c.dst_offset + sum(i * t for i, t in zip(at, c.dst_strides))
            seen.append((c.src, s, c.dst, d))
    return sorted(seen)


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_copies_on_a_lattice_merge_into_one_visiting_the_same_pairs(data) -> None:  # type: ignore[no-untyped-def]
    """merge_lattices: copies of one shape and strides whose offsets lie on a lattice of one
    or two steps become one copy; any other set stays as it is; the pairs visited are the
    same either way, in whatever order the copies are given."""
    from dmlops.plan import ElementCopy, merge_lattices

    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    ss = tuple(data.draw(st.lists(st.integers(-4, 6), min_size=len(shape), max_size=len(shape))))
    ds = tuple(data.draw(st.lists(st.integers(1, 6), min_size=len(shape), max_size=len(shape))))
    a, b = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    outer = (data.draw(st.integers(-50, 50)), data.draw(st.integers(1, 60)))
    inner = (data.draw(st.integers(-50, 50)), data.draw(st.integers(1, 60)))
    offsets = [
        (100 + i * outer[0] + j * inner[0], i * outer[1] + j * inner[1])
        for i in range(a)
        for j in range(b)
    ]
    if data.draw(st.booleans()):  # off the lattice
        k = data.draw(st.integers(0, len(offsets) - 1))
        offsets[k] = (offsets[k][0] + data.draw(st.integers(1, 5)), offsets[k][1])
    copies = [ElementCopy(0, s, ss, 0, d, ds, shape) for s, d in offsets]
    copies = data.draw(st.permutations(copies))
    merged = merge_lattices(copies)
    assert _pairs(merged) == _pairs(copies)
    assert len(merged) <= len(copies)
    perturbed = offsets != [
        (100 + i * outer[0] + j * inner[0], i * outer[1] + j * inner[1])
        for i in range(a)
        for j in range(b)
    ]
    if not perturbed and outer[1] > (b - 1) * inner[1]:  # destination order is lattice order
        assert len(merged) == 1


def _element_pairs(copies):  # type: ignore[no-untyped-def]
    """The pairs a plan's copies (offsets in bytes of 4-byte elements) visit, in elements."""
    import dataclasses

    return _pairs(
        dataclasses.replace(c, src_offset=c.src_offset // 4, dst_offset=c.dst_offset // 4)
        for c in copies
    )


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_a_repeated_box_composes_to_the_pairs_of_its_boxes(data) -> None:  # type: ignore[no-untyped-def]
    """LogicalCopy.repeat (an operator's compact form): composed through any layouts, the
    plan visits the element pairs of the plain boxes `expanded` gives, one by one."""
    from dmlops.plan import Layout, LogicalCopy, compose

    rank = data.draw(st.integers(1, 3))
    dims = st.lists(st.integers(1, 3), min_size=rank, max_size=rank)
    shape = tuple(data.draw(dims))
    repeat = tuple(
        (
            data.draw(st.integers(1, 3)),
            tuple(data.draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))),
            tuple(data.draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))),
        )
        for _ in range(data.draw(st.integers(1, 2)))
    )
    src = data.draw(st.sampled_from([0, -1]))
    start = tuple(data.draw(dims)) if src >= 0 else (0,) * rank
    step = tuple(data.draw(dims)) if src >= 0 else (0,) * rank
    copy = LogicalCopy(src, start, step, 0, tuple(data.draw(dims)), shape, None, repeat)
    strides = st.lists(st.integers(-40, 40), min_size=rank, max_size=rank)
    ins = [Layout(5000, tuple(data.draw(strides)))]
    outs = [Layout(5000, tuple(data.draw(strides)))]
    plain = compose(4, copy.expanded(), ins, outs, (bytes(4),))
    compact = compose(4, [copy], ins, outs, (bytes(4),))
    assert _element_pairs(compact.copies) == _element_pairs(plain.copies)
    assert len(copy.expanded()) == math.prod(n for n, _, _ in repeat)


def test_a_merge_never_makes_a_copy_of_more_than_eight_dimensions() -> None:
    from dmlops.plan import ElementCopy, merge_lattices

    shape = (2,) * 7
    src = tuple(3**k for k in range(7, 0, -1))  # no two dimensions merge
    dst = tuple(5**k for k in range(7, 0, -1))
    copies = [
        ElementCopy(0, i * 7 + j, src, 0, i * 10**7 + j, dst, shape) for i in (0, 1) for j in (0, 1)
    ]
    assert merge_lattices(copies) == copies  # 9 dimensions: left as four copies
    assert len(merge_lattices(copies[:2])) == 1  # 8: one copy


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_boxes_side_by_side_merge_into_one_visiting_the_same_pairs(data) -> None:  # type: ignore[no-untyped-def]
    """merge_adjacent: a tensor cut into boxes along its dimensions (a graph's window and
    the rest around it) and copied where each box was becomes one copy; the pairs visited
    are the same, in whatever order the boxes are given, and a copy from another source
    that meets them keeps them apart (its order against them would change)."""
    from dmlops.plan import ElementCopy, merge_adjacent
    from dmlops.tensor import packed_strides

    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    strides = packed_strides(shape)
    boxes = [((0,) * len(shape), shape)]
    for _ in range(data.draw(st.integers(0, 3))):  # cut a box in two along one dimension
        k = data.draw(st.integers(0, len(boxes) - 1))
        start, size = boxes[k]
        cuttable = [d for d, n in enumerate(size) if n > 1]
        if not cuttable:
            continue
        d = data.draw(st.sampled_from(cuttable))
        at = data.draw(st.integers(1, size[d] - 1))
        first = (start, (*size[:d], at, *size[d + 1 :]))
        second = (
            (*start[:d], start[d] + at, *start[d + 1 :]),
            (*size[:d], size[d] - at, *size[d + 1 :]),
        )
        boxes[k : k + 1] = [first, second]
    shift = data.draw(st.integers(0, 7))  # the destination: the same layout, moved
    copies = [
        ElementCopy(
            0,
            sum(a * t for a, t in zip(start, strides)),
            strides,
            0,
            shift + sum(a * t for a, t in zip(start, strides)),
            strides,
            size,
        )
        for start, size in boxes
    ]
    copies = data.draw(st.permutations(copies))
    merged = merge_adjacent(copies)
    assert _pairs(merged) == _pairs(copies)
    if len(boxes) <= 2:  # (more boxes can lie so that no two continue each other)
        assert len(merged) == 1
    other = ElementCopy(1, 0, (1,), 0, shift, (1,), (1,))  # another source over the first
    kept = merge_adjacent([*copies, other])
    assert kept == [*copies, other] or len(copies) == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["upsample_2d", "--input-sizes", "1,1,1,2", "--scale-size", "1,2"],
            "DML_OPERATOR_UPSAMPLE_2D",
        ),
        (
            ["element_wise_identity", "--input-sizes", "2,3", "--output-strides", "1,2"],
            "strides [2, 1]",
        ),
        (
            [
                "padding",
                "--input-sizes",
                "1,1,2,2",
                "--start-padding",
                "0,0,1,1",
                "--end-padding",
                "0,0,0,1",
            ],
            "DML_OPERATOR_PADDING",
        ),
        (["depth_to_space", "--input-sizes", "1,4,1,2"], "DML_OPERATOR_DEPTH_TO_SPACE"),
        (["space_to_depth", "--input-sizes", "1,1,2,4"], "DML_OPERATOR_SPACE_TO_DEPTH"),
        (["diagonal_matrix", "--output-sizes", "3,3", "--diagonal-offset", "1"], "fill 1"),
        (
            [
                "max_unpooling",
                "--input-sizes",
                "1,1,1,2",
                "--indices-sizes",
                "1,1,1,2",
                "--indices",
                "3,0",
                "--index-type",
                "UINT32",
                "--output-sizes",
                "1,1,2,2",
            ],
            "Output[0,0,0,0] = Input[0,0,0,1]",
        ),
        (
            [
                "fill_value_constant",
                "--output-sizes",
                "2,3",
                "--padding-value",
                "5",
                "--data-type",
                "INT8",
            ],
            "fill 0",
        ),
    ],
)
def test_explain_takes_the_newer_operators(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", *args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VALID") and says in out


def test_explain_reports_a_newer_operators_broken_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "upsample_2d", "--input-sizes", "2,3", "--scale-size", "2,2"])
    assert code != 0
