"""DML_SCATTER_ELEMENTS (also named DML_SCATTER) and DML_SCATTER_ND: the input copied to the
output, then updates written where an index tensor says."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import IndexAxis, IndexedCopy
from ..plan import Layout, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint, packed_strides
from ._base import ALL_DIMS, TYPES_8, SupportRow
from ._indexed import IndexedDesc, aligned, right_aligned, tensor_span

__all__ = ["ScatterElementsDesc", "ScatterNdDesc"]

FL = FeatureLevel


class _ScatterBase(IndexedDesc):
    """InputTensor, IndicesTensor, UpdatesTensor, OutputTensor: output = input, then updates."""

    input_tensor: BufferTensorDesc
    indices_tensor: BufferTensorDesc
    updates_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("UpdatesTensor", self.updates_tensor),
        ]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def logical_copies(self) -> list[LogicalCopy]:
        d = self.input_tensor.dimension_count
        zeros = (0,) * d
        return [LogicalCopy(0, zeros, (1,) * d, 0, zeros, tuple(self.input_tensor.sizes))]

    def _check_common(self) -> None:
        self._same_type("InputTensor", self.input_tensor, "UpdatesTensor", self.updates_tensor)
        self._same_type("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)
        if self.indices_tensor.dimension_count != self.input_tensor.dimension_count:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.IndicesTensor.DimensionCount is "
                f"{self.indices_tensor.dimension_count}: must equal "
                f"InputTensor.DimensionCount {self.input_tensor.dimension_count}"
            )
        self._check_sizes("OutputTensor", self.output_tensor, self.input_tensor.sizes)

    def _scatter(
        self,
        li: Sequence[Layout],
        lo: Sequence[Layout],
        shape: Sequence[int],
        dst_strides: Sequence[int],
        index_strides: Sequence[int],
        tuple_stride: int,
        axes: Sequence[IndexAxis],
        slot_strides: Sequence[int],
        slot_count: int | None = None,
    ) -> IndexedCopy:
        size = self.element_size
        itype = self.indices_tensor.data_type
        return IndexedCopy(
            label=f"{self.OPERATOR}.IndicesTensor",
            src=2,
            src_offset=li[2].offset * size,
            src_strides=aligned(li[2].strides, len(shape)),
            dst=0,
            dst_offset=lo[0].offset * size,
            dst_strides=tuple(dst_strides),
            shape=tuple(shape),
            index=1,
            index_type=itype,
            index_offset=li[1].offset * itype.element_size,
            index_strides=tuple(index_strides),
            tuple_stride=tuple_stride,
            axes=tuple(axes),
            scatter=True,
            indexed_span=tensor_span(self.output_tensor, lo[0], size),
            negative_indices=itype.is_signed,
            slot_strides=tuple(slot_strides),
            slot_count=math.prod(self.output_tensor.sizes) if slot_count is None else slot_count,
        )


class ScatterElementsDesc(_ScatterBase):
    """DML_SCATTER_ELEMENTS_OPERATOR_DESC (DML_SCATTER_OPERATOR_DESC): output = input, then
    output[c with c[Axis] = indices[c]] = updates[c]; of two updates to one element the later
    in index order wins."""

    OPERATOR = "SCATTER_ELEMENTS"
    # introduced at 2_0 (floats, as ONE_HOT); integer types from 2_1 (feature-level history)
    SUPPORT = (
        SupportRow(FL.FL_2_0, range(4, 5), frozenset({DataType.FLOAT32, DataType.FLOAT16})),
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        updates_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        axis: int,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.updates_tensor = updates_tensor
        self.output_tensor = output_tensor
        self.axis = axis

    def _check_fields(self) -> None:
        check_uint(self.axis, f"{self.OPERATOR}.Axis")

    def _check_rules(self) -> None:
        self._check_common()
        self._check_axis(self.axis, self.input_tensor.dimension_count)
        self._check_all_but_axis(
            "IndicesTensor", self.indices_tensor, "InputTensor", self.input_tensor, self.axis
        )
        self._check_sizes("UpdatesTensor", self.updates_tensor, self.indices_tensor.sizes)

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        a = self.axis
        dst = list(lo[0].strides)
        dst[a] = 0
        slots = list(packed_strides(self.output_tensor.sizes))
        axis_slot = slots[a]
        slots[a] = 0
        axes = [IndexAxis(self.output_tensor.sizes[a], lo[0].strides[a], axis_slot)]
        shape = self.indices_tensor.sizes
        return [self._scatter(li, lo, shape, dst, li[1].strides, 0, axes, slots)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("UpdatesTensor", self.updates_tensor),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
        ]


class ScatterNdDesc(_ScatterBase):
    """DML_SCATTER_ND_OPERATOR_DESC: output = input, then output[indices[j, :], b] =
    updates[j, b]: each index tuple names a whole sub-block; the later in index order wins."""

    OPERATOR = "SCATTER_ND"
    SUPPORT = (
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        updates_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        input_dimension_count: int,
        indices_dimension_count: int,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.updates_tensor = updates_tensor
        self.output_tensor = output_tensor
        self.input_dimension_count = input_dimension_count
        self.indices_dimension_count = indices_dimension_count

    @staticmethod
    def updates_sizes_for(
        input_sizes: Sequence[int], indices_sizes: Sequence[int]
    ) -> tuple[int, ...]:
        """The indices' sizes but the tuple, then the input's sizes past the tuple."""
        return tuple(indices_sizes[:-1]) + tuple(input_sizes[indices_sizes[-1] :])

    def _check_fields(self) -> None:
        check_uint(self.input_dimension_count, "SCATTER_ND.InputDimensionCount")
        check_uint(self.indices_dimension_count, "SCATTER_ND.IndicesDimensionCount")

    def _check_rules(self) -> None:
        self._check_common()
        d = self.input_tensor.dimension_count
        r, q = self.input_dimension_count, self.indices_dimension_count
        data, index = self._check_nd_counts(r, q)
        if not 1 <= index[-1] <= r:
            raise InvalidDescriptorError(
                f"SCATTER_ND.IndicesTensor.Sizes[{d - 1}] is {index[-1]}: an index tuple must "
                f"have 1 to InputDimensionCount = {r} coordinates"
            )
        full = self.updates_sizes_for(data, index)
        expected = right_aligned("SCATTER_ND", "UpdatesTensor", full, d, "the scattered blocks")
        self._check_sizes("UpdatesTensor", self.updates_tensor, expected)

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        d = self.input_tensor.dimension_count
        r, q = self.input_dimension_count, self.indices_dimension_count
        data, index = self._nd_sizes(r, q)
        k = index[-1]
        ost = lo[0].strides[d - r :]
        xst = li[1].strides[d - q :]
        # a destination slot is a whole sub-block: its index tuple numbers it
        slots = packed_strides(data[:k])
        lead = q - 1
        dst = (*(0,) * lead, *ost[k:])
        idx = (*xst[:lead], *(0,) * (r - k))
        slot = (0,) * (lead + r - k)
        axes = [IndexAxis(data[t], ost[t], slots[t]) for t in range(k)]
        full = self.updates_sizes_for(data, index)
        count = math.prod(data[:k])  # one slot per index tuple
        return [self._scatter(li, lo, full, dst, idx, xst[q - 1], axes, slot, count)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("UpdatesTensor", self.updates_tensor),
            ("OutputTensor", self.output_tensor),
            ("InputDimensionCount", self.input_dimension_count),
            ("IndicesDimensionCount", self.indices_dimension_count),
        ]
