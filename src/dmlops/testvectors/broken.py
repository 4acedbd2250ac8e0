"""Invalid descriptors: a valid one with one rule broken, for the sidecar to name."""

from __future__ import annotations

import copy

import numpy as np

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
    Resample1Desc,
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
from ..tensor import BufferTensorDesc, DataType


def _broken(rng: np.random.Generator, desc: OperatorDesc) -> OperatorDesc:
    """The descriptor with one rule broken (the caller checks that it is)."""
    d = desc
    if isinstance(d, SliceDesc):
        k = int(rng.integers(0, len(d.sizes)))
        choice = int(rng.integers(0, 3))
        strides = list(d.strides)
        offsets = list(d.offsets)
        if choice == 0:
            strides[k] = 0
        elif choice == 1:
            offsets[k] = d.input_tensor.sizes[k]
        else:
            strides[k] = d.input_tensor.sizes[k] + 1
            offsets[k] = 0
            if d.sizes[k] == 1:
                return SliceDesc(
                    d.input_tensor,
                    BufferTensorDesc(
                        d.output_tensor.data_type,
                        [n + (j == k) for j, n in enumerate(d.output_tensor.sizes)],
                    ),
                    d.offsets,
                    [n + (j == k) for j, n in enumerate(d.sizes)],
                    d.strides,
                )
        return SliceDesc(d.input_tensor, d.output_tensor, offsets, d.sizes, strides)
    if isinstance(d, Slice1Desc):
        k = int(rng.integers(0, len(d.input_window_sizes)))
        choice = int(rng.integers(0, 3))
        strides = list(d.input_window_strides)
        sizes = list(d.input_window_sizes)
        if choice == 0:
            strides[k] = 0
        elif choice == 1:
            sizes[k] = d.input_tensor.sizes[k] - d.input_window_offsets[k] + 1
        else:
            out = list(d.output_tensor.sizes)
            out[k] = 1 + (sizes[k] - 1) // abs(strides[k]) + 1
            return Slice1Desc(
                d.input_tensor,
                BufferTensorDesc(d.output_tensor.data_type, out),
                d.input_window_offsets,
                sizes,
                strides,
            )
        return Slice1Desc(d.input_tensor, d.output_tensor, d.input_window_offsets, sizes, strides)
    if isinstance(d, SliceGradDesc):
        k = int(rng.integers(0, len(d.input_window_sizes)))
        strides = list(d.input_window_strides)
        if rng.random() < 0.5:
            strides[k] = 0
            return SliceGradDesc(
                d.input_gradient_tensor,
                d.output_gradient_tensor,
                d.input_window_offsets,
                d.input_window_sizes,
                strides,
            )
        grads = list(d.input_gradient_tensor.sizes)
        grads[k] = 1 + (d.input_window_sizes[k] - 1) // abs(strides[k]) + 1
        return SliceGradDesc(
            BufferTensorDesc(d.input_gradient_tensor.data_type, grads),
            d.output_gradient_tensor,
            d.input_window_offsets,
            d.input_window_sizes,
            strides,
        )
    if isinstance(d, Padding1Desc):  # (PADDING too) an output one longer on one axis
        out = list(d.output_tensor.sizes)
        out[int(rng.integers(0, len(out)))] += 1
        padded = copy.copy(d)
        padded.output_tensor = BufferTensorDesc(d.output_tensor.data_type, out)
        return padded
    if isinstance(d, MaxUnpoolingDesc):  # indices of other sizes
        longer = [n + (k == 0) for k, n in enumerate(d.indices_tensor.sizes)]
        return MaxUnpoolingDesc(
            d.input_tensor, BufferTensorDesc(d.indices_tensor.data_type, longer), d.output_tensor
        )
    if isinstance(d, DiagonalMatrixDesc):  # an Offset past INT
        return DiagonalMatrixDesc(d.output_tensor, 2**31, d.value)
    if isinstance(d, NonzeroCoordinatesDesc):  # a count of a signed type
        wrong = BufferTensorDesc(DataType.INT32, d.output_count_tensor.sizes)
        return NonzeroCoordinatesDesc(d.input_tensor, wrong, d.output_coordinates_tensor)
    if isinstance(d, CastDesc):  # an output of other sizes
        grown = [n + (k == 0) for k, n in enumerate(d.output_tensor.sizes)]
        return CastDesc(d.input_tensor, BufferTensorDesc(d.output_tensor.data_type, grown))
    if isinstance(d, FillValueSequenceDesc):  # a ValueDataType other than the output's
        other = DataType.UINT8 if d.output_tensor.data_type != DataType.UINT8 else DataType.INT8
        return FillValueSequenceDesc(d.output_tensor, other, 1, 1)
    if isinstance(d, (ResampleDesc, Resample1Desc)):  # a scale of 0
        bad = copy.copy(d)
        bad.scales = (0.0, *d.scales[1:])
        return bad
    if isinstance(d, DiagonalMatrix1Desc):  # a ValueDataType other than the output's
        other = DataType.UINT8 if d.output_tensor.data_type != DataType.UINT8 else DataType.INT8
        return DiagonalMatrix1Desc(
            d.input_tensor, d.output_tensor, other, 1, d.diagonal_fill_begin, d.diagonal_fill_end
        )
    if isinstance(d, ElementWiseIdentityDesc):  # an output of other sizes
        grown = [n + (k == 0) for k, n in enumerate(d.output_tensor.sizes)]
        return ElementWiseIdentityDesc(
            d.input_tensor, BufferTensorDesc(d.output_tensor.data_type, grown)
        )
    if isinstance(d, FillValueConstantDesc):  # a value of another type
        other = DataType.INT32 if d.value_data_type != DataType.INT32 else DataType.UINT32
        return FillValueConstantDesc(d.output_tensor, other, 1)
    if isinstance(d, Upsample2dDesc):  # a zero scale, or an output a row too tall
        if rng.random() < 0.5:
            return Upsample2dDesc(d.input_tensor, d.output_tensor, (0, d.scale_width))
        out = list(d.output_tensor.sizes)
        out[-2] += 1
        wrong = BufferTensorDesc(d.output_tensor.data_type, out)
        return Upsample2dDesc(d.input_tensor, wrong, (d.scale_height, d.scale_width))
    if isinstance(d, (DepthToSpace1Desc, SpaceToDepth1Desc)):  # an output a channel too deep
        out = list(d.output_tensor.sizes)
        out[1] += 1
        wrong = BufferTensorDesc(d.output_tensor.data_type, out)
        if isinstance(d, (DepthToSpaceDesc, SpaceToDepthDesc)):
            return type(d)(d.input_tensor, wrong, d.block_size)
        return type(d)(d.input_tensor, wrong, d.block_size, d.order)
    if isinstance(d, TileDesc):
        repeats = list(d.repeats)
        k = int(rng.integers(0, len(repeats)))
        if rng.random() < 0.5:
            repeats[k] = 0
            return TileDesc(d.input_tensor, d.output_tensor, repeats)
        out = list(d.output_tensor.sizes)
        out[k] += 1
        return TileDesc(d.input_tensor, BufferTensorDesc(d.output_tensor.data_type, out), repeats)
    if isinstance(d, SplitDesc):
        outs = list(d.output_tensors)
        first = outs[0]
        grown = [n + (j == d.axis) for j, n in enumerate(first.sizes)]
        outs[0] = BufferTensorDesc(first.data_type, grown)
        return SplitDesc(d.input_tensor, outs, d.axis)
    if isinstance(d, OneHotDesc):
        grown = [n + (k == d.axis) for k, n in enumerate(d.indices_tensor.sizes)]
        wide = BufferTensorDesc(d.indices_tensor.data_type, grown)  # Sizes[Axis] must be 1
        return OneHotDesc(wide, d.values_tensor, d.output_tensor, d.axis)
    if isinstance(d, GatherDesc):  # an axis past the rank
        rank = d.input_tensor.dimension_count
        return GatherDesc(d.input_tensor, d.indices_tensor, d.output_tensor, rank, 1)
    if isinstance(d, ReverseSubsequencesDesc):  # lengths of another type
        lengths = BufferTensorDesc(DataType.FLOAT32, d.sequence_lengths_tensor.sizes)
        return ReverseSubsequencesDesc(d.input_tensor, lengths, d.output_tensor, d.axis)
    if isinstance(d, GatherNdDesc):  # indices of a float type
        wrong = BufferTensorDesc(DataType.FLOAT32, d.indices_tensor.sizes)
        n = d.input_tensor.dimension_count
        return GatherNdDesc(d.input_tensor, wrong, d.output_tensor, n, n)
    if isinstance(d, ScatterNdDesc):  # updates one element too wide
        wider = list(d.updates_tensor.sizes)
        wider[-1] += 1
        updates = BufferTensorDesc(d.updates_tensor.data_type, wider)
        n = d.input_tensor.dimension_count
        return ScatterNdDesc(d.input_tensor, d.indices_tensor, updates, d.output_tensor, n, n)
    if isinstance(d, (GatherElementsDesc, ScatterElementsDesc)):
        rank = d.input_tensor.dimension_count
        if rng.random() < 0.5:  # an axis past the rank
            if isinstance(d, GatherElementsDesc):
                return GatherElementsDesc(d.input_tensor, d.indices_tensor, d.output_tensor, rank)
            return ScatterElementsDesc(
                d.input_tensor, d.indices_tensor, d.updates_tensor, d.output_tensor, rank
            )
        wrong = BufferTensorDesc(DataType.FLOAT32, d.indices_tensor.sizes)  # not an index type
        if isinstance(d, GatherElementsDesc):
            return GatherElementsDesc(d.input_tensor, wrong, d.output_tensor, d.axis)
        return ScatterElementsDesc(d.input_tensor, wrong, d.updates_tensor, d.output_tensor, d.axis)
    assert isinstance(d, JoinDesc)
    other = DataType.INT32 if d.output_tensor.data_type != DataType.INT32 else DataType.UINT32
    ins = list(d.input_tensors)
    ins[-1] = BufferTensorDesc(other, ins[-1].sizes)
    return JoinDesc(ins, d.output_tensor, d.axis)
