"""Random valid descriptors of every operator the test vectors cover, at a feature level,
with index tensors' values where the operator reads them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DmlError
from ..ops import (
    CastDesc,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    DiagonalMatrix1Desc,
    DiagonalMatrixDesc,
    ElementWiseIdentityDesc,
    FillValueConstantDesc,
    FillValueSequenceDesc,
    GatherDesc,
    GatherElementsDesc,
    GatherNdDesc,
    JoinDesc,
    MaxUnpoolingDesc,
    NonzeroCoordinatesDesc,
    OneHotDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    ReverseSubsequencesDesc,
    ScatterElementsDesc,
    ScatterNdDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SpaceToDepthDesc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from ..ops._indexed import right_aligned
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides

# the operators tests are written for, each by its DirectML name in lower case
_CLASSES: dict[str, type[OperatorDesc]] = {
    c.OPERATOR.lower(): c
    for c in (
        SliceDesc,
        Slice1Desc,
        SliceGradDesc,
        SplitDesc,
        JoinDesc,
        TileDesc,
        PaddingDesc,
        Padding1Desc,
        DepthToSpaceDesc,
        DepthToSpace1Desc,
        SpaceToDepthDesc,
        SpaceToDepth1Desc,
        Upsample2dDesc,
        FillValueConstantDesc,
        ElementWiseIdentityDesc,
        DiagonalMatrixDesc,
        DiagonalMatrix1Desc,
        ResampleDesc,
        Resample1Desc,
        Resample2Desc,
        FillValueSequenceDesc,
        CastDesc,
        MaxUnpoolingDesc,
        NonzeroCoordinatesDesc,
        GatherDesc,
        GatherElementsDesc,
        GatherNdDesc,
        ScatterElementsDesc,
        ScatterNdDesc,
        OneHotDesc,
        ReverseSubsequencesDesc,
    )
}
OPERATORS = tuple(_CLASSES)
_MAX_ELEMENTS = 256
_SENTINEL = 7  # what an output element holds until the operator writes it


def _shape(rng: np.random.Generator, dims: range) -> list[int]:
    rank = int(rng.integers(dims.start, dims.stop))
    sizes, budget = [], _MAX_ELEMENTS
    for _ in range(rank):
        n = int(rng.integers(1, max(2, min(5, budget) + 1)))
        budget = max(1, budget // n)
        sizes.append(n)
    return sizes


def _layout(rng: np.random.Generator, sizes: Sequence[int], output: bool) -> list[int] | None:
    kind = rng.choice(["packed", "padded", "permuted"] + ([] if output else ["broadcast"]))
    n = len(sizes)
    if kind == "packed":
        return None
    if kind == "padded":
        strides, s = [0] * n, 1
        for i in range(n - 1, -1, -1):
            strides[i] = s
            s *= sizes[i] + int(rng.integers(0, 3))
        return strides
    if kind == "permuted":
        perm = rng.permutation(n)
        ps = packed_strides([sizes[p] for p in perm])
        strides = [0] * n
        for pos, p in enumerate(perm):
            strides[p] = ps[pos]
        return strides
    strides = list(packed_strides(sizes))
    return [0 if rng.random() < 0.5 else s for s in strides]


def _tensor(
    rng: np.random.Generator, dt: DataType, sizes: Sequence[int], output: bool
) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes, _layout(rng, sizes, output))


def _random_desc(rng: np.random.Generator, op: str, level: FeatureLevel) -> OperatorDesc:
    support = _CLASSES[op].SUPPORT
    rows = [r for r in support if r.level <= level]
    if not rows:
        raise DmlError(f"gen-tests: {op.upper()} needs {support[0].level.dml_name}")
    row = max(rows, key=lambda r: r.level)
    dt = sorted(row.data_types)[int(rng.integers(0, len(row.data_types)))]
    sizes = _shape(rng, row.dimension_counts)
    if op == "slice":
        offs, out, steps = [], [], []
        for n in sizes:
            st = int(rng.integers(1, 4))
            o = int(rng.integers(0, n))
            offs.append(o)
            steps.append(st)
            out.append(int(rng.integers(1, 2 + (n - 1 - o) // st)))
        return SliceDesc(
            _tensor(rng, dt, sizes, False), _tensor(rng, dt, out, True), offs, out, steps
        )
    if op in ("slice1", "slice_grad"):
        offs, win, steps, out = [], [], [], []
        for n in sizes:
            o = int(rng.integers(0, n))
            w = int(rng.integers(1, n - o + 1))
            st = int(rng.integers(1, 4)) * (1 if rng.random() < 0.5 else -1)
            offs.append(o)
            win.append(w)
            steps.append(st)
            out.append(int(rng.integers(1, 2 + (w - 1) // abs(st))))
        if op == "slice_grad":  # the window lies in the output gradient
            return SliceGradDesc(
                _tensor(rng, dt, out, False), _tensor(rng, dt, sizes, True), offs, win, steps
            )
        return Slice1Desc(
            _tensor(rng, dt, sizes, False), _tensor(rng, dt, out, True), offs, win, steps
        )
    if op == "padding":
        first_modes = ["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC"]
        mode = first_modes[int(rng.integers(0, 4 if level >= FeatureLevel.FL_3_0 else 3))]
        start = [int(rng.integers(0, 3)) for _ in sizes]
        end = [int(rng.integers(0, 3)) for _ in sizes]
        padded = Padding1Desc.output_sizes_for(sizes, start, end)
        return PaddingDesc(
            _tensor(rng, dt, sizes, False),
            _tensor(rng, dt, padded, True),
            mode,
            float(np.float32(rng.uniform(-100.0, 100.0))),  # (truncated for integer types)
            start,
            end,
        )
    if op.startswith(("depth_to_space", "space_to_depth")):
        block = int(rng.integers(1, 4))
        n, c, h, w = (int(rng.integers(1, 3)) for _ in range(4))
        to_space = op.startswith("depth_to_space")
        deep, space = (n, c * block * block, h, w), (n, c, h * block, w * block)
        ins, outs = (deep, space) if to_space else (space, deep)
        i_t, o_t = _tensor(rng, dt, ins, False), _tensor(rng, dt, outs, True)
        if op.endswith("1"):
            cls1 = DepthToSpace1Desc if to_space else SpaceToDepth1Desc
            return cls1(i_t, o_t, block, int(rng.integers(0, 2)))
        return (DepthToSpaceDesc if to_space else SpaceToDepthDesc)(i_t, o_t, block)
    if op == "max_unpooling":  # 4-D; an output as large or larger, UINT32 or UINT64 indices
        unpooled = [n * int(rng.integers(1, 3)) for n in sizes]
        index_types = sorted(MaxUnpoolingDesc.index_types(row.level))
        itype = index_types[int(rng.integers(0, len(index_types)))]
        return MaxUnpoolingDesc(
            _tensor(rng, dt, sizes, False),
            _tensor(rng, itype, sizes, False),
            BufferTensorDesc(dt, unpooled),  # (packed: the indices name positions of it)
        )
    if op == "diagonal_matrix":
        if len(sizes) < 2:
            sizes = [1, *sizes]
        offset = int(rng.integers(-sizes[-2], sizes[-1] + 1))
        return DiagonalMatrixDesc(_tensor(rng, dt, sizes, True), offset, float(rng.integers(1, 9)))
    if op == "diagonal_matrix1":  # with or without an input; spans either way round
        if len(sizes) < 2:
            sizes = [1, *sizes]
        height, width = sizes[-2], sizes[-1]
        span = [int(rng.integers(-height - 1, width + 2)) for _ in range(2)]
        source = _tensor(rng, dt, sizes, False) if rng.integers(0, 2) else None
        target = _tensor(rng, dt, sizes, True)
        return DiagonalMatrix1Desc(source, target, None, int(rng.integers(1, 9)), *span)
    if op in ("resample", "resample1", "resample2"):  # any output sizes; scales near theirs
        out_sizes = [int(rng.integers(1, 2 * n + 2)) for n in sizes]
        nudges = rng.choice([1.0, 1.0, 0.9, 1.25], len(sizes))
        scales = [
            float(np.float32(m / n * k)) for n, m, k in zip(sizes, out_sizes, nudges, strict=True)
        ]
        i_t, o_t = _tensor(rng, dt, sizes, False), _tensor(rng, dt, out_sizes, True)
        if op == "resample":
            return ResampleDesc(i_t, o_t, scales)
        shifts = [0.0, 0.5, -0.5, 0.25]
        pixel_in = [float(rng.choice(shifts)) for _ in sizes]
        pixel_out = [float(rng.choice(shifts)) for _ in sizes]
        if op == "resample1":
            return Resample1Desc(i_t, o_t, scales, pixel_in, pixel_out)
        return Resample2Desc(i_t, o_t, scales, pixel_in, pixel_out, int(rng.integers(0, 2)))
    if op == "element_wise_identity":  # a layout change: each side its own strides
        return ElementWiseIdentityDesc(
            _tensor(rng, dt, sizes, False), _tensor(rng, dt, sizes, True)
        )
    if op == "nonzero_coordinates":  # packed outputs: rows past the count are undefined
        count, coordinates = NonzeroCoordinatesDesc.output_sizes_for(sizes)
        return NonzeroCoordinatesDesc(
            _tensor(rng, dt, sizes, False),
            BufferTensorDesc(DataType.UINT32, count),
            BufferTensorDesc(DataType.UINT32, coordinates),
        )
    if op == "cast":  # to any type of the row (the input's values: the sidecar's own)
        converted = sorted(row.data_types)[int(rng.integers(0, len(row.data_types)))]
        return CastDesc(_tensor(rng, dt, sizes, False), _tensor(rng, converted, sizes, True))
    if op == "fill_value_sequence":  # steps either way; integer types wrap
        t = _tensor(rng, dt, sizes, True)
        if dt.numpy_dtype.kind == "f":
            return FillValueSequenceDesc(t, None, float(rng.integers(-8, 8)) / 2, 0.25)
        low = -100 if dt.numpy_dtype.kind == "i" else 0
        first = int(rng.integers(low, 101))
        step = int(rng.integers(-3, 4)) if low else int(rng.integers(0, 4))
        return FillValueSequenceDesc(t, None, first, step)
    if op == "fill_value_constant":
        value = float(rng.integers(-64, 64)) / 4 if dt.numpy_dtype.kind == "f" else 0
        if dt.numpy_dtype.kind in "iu":
            value = int(rng.integers(0, 100))
        return FillValueConstantDesc(_tensor(rng, dt, sizes, True), dt, value)
    if op == "upsample_2d":
        scale = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
        grown = Upsample2dDesc.output_sizes_for(sizes, scale)
        return Upsample2dDesc(_tensor(rng, dt, sizes, False), _tensor(rng, dt, grown, True), scale)
    if op == "padding1":
        modes = ["CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC"]
        mode = modes[int(rng.integers(0, 4))] if level < FeatureLevel.FL_6_4 else "WRAP"
        if level >= FeatureLevel.FL_6_4 and rng.random() < 0.8:
            mode = modes[int(rng.integers(0, 4))]
        start = [int(rng.integers(0, 3)) for _ in sizes]
        end = [int(rng.integers(0, 3)) for _ in sizes]
        padded = Padding1Desc.output_sizes_for(sizes, start, end)
        value = int(rng.integers(0, 100))
        return Padding1Desc(
            _tensor(rng, dt, sizes, False),
            _tensor(rng, dt, padded, True),
            mode,
            dt,
            value,
            start,
            end,
        )
    if op in ("gather_elements", "scatter_elements"):
        return _elements_desc(rng, op, dt, sizes, level)
    if op in ("gather", "gather_nd", "scatter_nd", "reverse_subsequences"):
        return _indexed_desc(rng, op, dt, sizes, level)
    if op == "one_hot":
        axis = int(rng.integers(0, len(sizes)))
        picks = [1 if d == axis else n for d, n in enumerate(sizes)]
        pair = [1] * (len(sizes) - 1) + [2]  # (OffValue, OnValue) along the last dimension
        return OneHotDesc(
            _tensor(rng, _index_type(level), picks, False),
            BufferTensorDesc(dt, pair),
            _tensor(rng, dt, sizes, True),
            axis,
        )
    if op == "tile":
        repeats = [int(rng.integers(1, 4)) for _ in sizes]
        tiled = TileDesc.output_sizes_for(sizes, repeats)
        return TileDesc(_tensor(rng, dt, sizes, False), _tensor(rng, dt, tiled, True), repeats)
    axis = int(rng.integers(0, len(sizes)))
    total = sizes[axis]
    cuts = sorted({int(c) for c in rng.integers(1, total, size=3)}) if total > 1 else []
    bounds = [0, *cuts, total]
    pieces = [
        [b - a if d == axis else n for d, n in enumerate(sizes)]
        for a, b in itertools.pairwise(bounds)
    ]
    if op == "split":
        return SplitDesc(
            _tensor(rng, dt, sizes, False), [_tensor(rng, dt, p, True) for p in pieces], axis
        )
    return JoinDesc(
        [_tensor(rng, dt, p, False) for p in pieces], _tensor(rng, dt, sizes, True), axis
    )


def _index_type(level: FeatureLevel) -> DataType:
    return DataType.INT32 if level >= FeatureLevel.FL_3_0 else DataType.UINT32


def _elements_desc(
    rng: np.random.Generator, op: str, dt: DataType, sizes: list[int], level: FeatureLevel
) -> OperatorDesc:
    """GATHER_ELEMENTS or SCATTER_ELEMENTS over `sizes` along a random axis."""
    axis = int(rng.integers(0, len(sizes)))
    top = sizes[axis] if op == "scatter_elements" else 4  # a scatter names each element once
    picks = [int(rng.integers(1, top + 1)) if d == axis else n for d, n in enumerate(sizes)]
    index = _tensor(rng, _index_type(level), picks, False)
    data = _tensor(rng, dt, sizes, False)
    if op == "gather_elements":
        return GatherElementsDesc(data, index, _tensor(rng, dt, picks, True), axis)
    updates = _tensor(rng, dt, picks, False)
    return ScatterElementsDesc(data, index, updates, _tensor(rng, dt, sizes, True), axis)


def _indexed_desc(
    rng: np.random.Generator, op: str, dt: DataType, sizes: list[int], level: FeatureLevel
) -> OperatorDesc:
    """GATHER (one index dimension), GATHER_ND, SCATTER_ND (index tuples of a random length,
    a scatter's tuples distinct) or REVERSE_SUBSEQUENCES over `sizes`."""
    rank = len(sizes)
    data = _tensor(rng, dt, sizes, False)
    itype = _index_type(level)
    if op == "reverse_subsequences":
        axis = int(rng.integers(0, rank))
        lengths = [1 if d == axis else n for d, n in enumerate(sizes)]
        return ReverseSubsequencesDesc(
            data, _tensor(rng, DataType.UINT32, lengths, False), _tensor(rng, dt, sizes, True), axis
        )
    if op == "gather":
        axis = int(rng.integers(0, rank))
        picks = int(rng.integers(1, 5))
        index = _tensor(rng, itype, [1] * (rank - 1) + [picks], False)
        out = [picks if d == axis else n for d, n in enumerate(sizes)]
        return GatherDesc(data, index, _tensor(rng, dt, out, True), axis, 1)
    k = int(rng.integers(1, rank + 1))  # the tuple's length
    count = int(rng.integers(1, 5)) if rank > 1 else 1  # rank 1: one tuple of one index
    if op == "scatter_nd":
        count = min(count, math.prod(sizes[:k]))
    index_sizes = right_aligned("GATHER_ND", "IndicesTensor", [count, k], rank, "it")
    index = _tensor(rng, itype, index_sizes, True)  # never broadcast: each tuple its own
    if op == "gather_nd":
        full = GatherNdDesc.output_sizes_for(sizes, index_sizes, 0)
        gathered = right_aligned("GATHER_ND", "OutputTensor", full, rank, "it")
        return GatherNdDesc(data, index, _tensor(rng, dt, gathered, True), rank, rank)
    full = ScatterNdDesc.updates_sizes_for(sizes, index_sizes)
    updates = right_aligned("SCATTER_ND", "UpdatesTensor", full, rank, "it")
    return ScatterNdDesc(
        data, index, _tensor(rng, dt, updates, False), _tensor(rng, dt, sizes, True), rank, rank
    )


def _coordinates_at(t: BufferTensorDesc, span: int) -> tuple[np.ndarray[Any, Any], Any]:
    """Every coordinate of tensor t (rows) and the element each lies at."""
    coords = np.indices(t.sizes).reshape(len(t.sizes), -1).T
    at = coords @ np.array(t.effective_strides, np.int64)
    return coords, at


def _index_values(rng: np.random.Generator, desc: OperatorDesc) -> list[int] | None:
    """The indices an indexed descriptor's IndicesTensor holds (its whole span), or None."""
    if isinstance(desc, OneHotDesc):  # positions along the axis (an index past it sets none)
        t = desc.indices_tensor
        span = max(1, math.ceil(t.total_tensor_size_in_bytes / t.data_type.element_size))
        return [int(v) for v in rng.integers(0, desc.output_tensor.sizes[desc.axis], span)]
    if isinstance(desc, (GatherDesc, GatherNdDesc, ScatterNdDesc, ReverseSubsequencesDesc)):
        return _tuple_values(rng, desc)
    if isinstance(desc, MaxUnpoolingDesc):  # distinct positions of the whole output
        t = desc.indices_tensor
        span = max(1, math.ceil(t.total_tensor_size_in_bytes / t.data_type.element_size))
        count = math.prod(t.sizes)
        chosen = rng.permutation(math.prod(desc.output_tensor.sizes))[:count]
        values = np.zeros(span, np.int64)
        at = sum(np.indices(t.sizes)[d] * s for d, s in enumerate(t.effective_strides))
        values[np.asarray(at).reshape(-1)] = chosen
        return [int(v) for v in values]
    if not isinstance(desc, (GatherElementsDesc, ScatterElementsDesc)):
        return None
    t, axis = desc.indices_tensor, desc.axis
    n = desc.input_tensor.sizes[axis]
    span = max(1, math.ceil(t.total_tensor_size_in_bytes / t.data_type.element_size))
    signed = t.data_type.numpy_dtype.kind == "i"
    if isinstance(desc, GatherElementsDesc):
        values = rng.integers(-n if signed else 0, n, span)
    else:  # distinct positions along the axis, per line of the indices
        sizes = list(t.sizes)
        lines = rng.random([*sizes[:axis], n, *sizes[axis + 1 :]]).argsort(axis)
        chosen = np.take(lines, np.arange(sizes[axis]), axis=axis)
        if signed:
            chosen = np.where(rng.random(chosen.shape) < 0.5, chosen - n, chosen)
        values = np.zeros(span, np.int64)
        strides = t.effective_strides
        at = sum(np.indices(sizes)[d] * strides[d] for d in range(len(sizes)))
        values[at.reshape(-1)] = chosen.reshape(-1)
    return [int(v) for v in values]


def _tuple_values(
    rng: np.random.Generator,
    desc: GatherDesc | GatherNdDesc | ScatterNdDesc | ReverseSubsequencesDesc,
) -> list[int]:
    """Indices of GATHER (positions along Axis), GATHER_ND / SCATTER_ND (each tuple inside
    the input; a scatter's tuples distinct) or REVERSE_SUBSEQUENCES (lengths in [0, size])."""
    if isinstance(desc, ReverseSubsequencesDesc):
        t = desc.sequence_lengths_tensor
        top = desc.input_tensor.sizes[desc.axis]
    else:
        t = desc.indices_tensor
    span = max(1, math.ceil(t.total_tensor_size_in_bytes / t.data_type.element_size))
    values = np.zeros(span, np.int64)
    coords, at = _coordinates_at(t, span)
    signed = t.data_type.numpy_dtype.kind == "i"
    if isinstance(desc, ReverseSubsequencesDesc):
        values[at] = rng.integers(0, top + 1, len(at))
        return [int(v) for v in values]
    sizes = desc.input_tensor.sizes
    if isinstance(desc, GatherDesc):
        bounds = np.full(len(at), sizes[desc.axis])
    else:
        bounds = np.array(sizes)[coords[:, -1]]  # the tuple's position picks the axis
    picked = (rng.random(len(at)) * bounds).astype(np.int64)
    if isinstance(desc, ScatterNdDesc):  # distinct tuples: the rows of a permutation
        k = t.sizes[-1]
        cells = np.array(np.unravel_index(rng.permutation(math.prod(sizes[:k])), sizes[:k])).T
        picked = cells[coords[:, -2] if len(t.sizes) > 1 else 0, coords[:, -1]]
    if signed:
        picked = np.where(rng.random(len(at)) < 0.5, picked - bounds, picked)
    values[at] = picked
    return [int(v) for v in values]
