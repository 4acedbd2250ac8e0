"""DML_GATHER, DML_GATHER_ELEMENTS, DML_GATHER_ND and DML_GATHER_ND1: reads whose source
offset comes from an index tensor."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import IndexAxis, IndexedCopy
from ..plan import Layout, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint
from ._base import ALL_DIMS, TYPES_8, TYPES_11, SupportRow
from ._indexed import IndexedDesc, aligned, right_aligned, tensor_span

__all__ = ["GatherDesc", "GatherElementsDesc", "GatherNdDesc", "GatherNd1Desc"]

_FLOAT = frozenset({DataType.FLOAT32, DataType.FLOAT16})
FL = FeatureLevel


class _GatherBase(IndexedDesc):
    """InputTensor, IndicesTensor, OutputTensor of one DimensionCount and data type."""

    input_tensor: BufferTensorDesc
    indices_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputTensor", self.input_tensor), ("IndicesTensor", self.indices_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def logical_copies(self) -> list[LogicalCopy]:
        return []

    def _check_common(self) -> None:
        self._same_type("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)
        if self.indices_tensor.dimension_count != self.input_tensor.dimension_count:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.IndicesTensor.DimensionCount is "
                f"{self.indices_tensor.dimension_count}: must equal "
                f"InputTensor.DimensionCount {self.input_tensor.dimension_count}"
            )

    def _gather(
        self,
        li: Sequence[Layout],
        lo: Sequence[Layout],
        shape: Sequence[int],
        src_strides: Sequence[int],
        index_strides: Sequence[int],
        tuple_stride: int,
        axes: Sequence[IndexAxis],
    ) -> IndexedCopy:
        size = self.element_size
        itype = self.indices_tensor.data_type
        return IndexedCopy(
            label=f"{self.OPERATOR}.IndicesTensor",
            src=0,
            src_offset=li[0].offset * size,
            src_strides=tuple(src_strides),
            dst=0,
            dst_offset=lo[0].offset * size,
            dst_strides=aligned(lo[0].strides, len(shape)),
            shape=tuple(shape),
            index=1,
            index_type=itype,
            index_offset=li[1].offset * itype.element_size,
            index_strides=tuple(index_strides),
            tuple_stride=tuple_stride,
            axes=tuple(axes),
            scatter=False,
            indexed_span=tensor_span(self.input_tensor, li[0], size),
            negative_indices=itype.is_signed,
        )


class GatherDesc(_GatherBase):
    """DML_GATHER_OPERATOR_DESC: output[a, j, b] = input[a, indices[j], b] along Axis."""

    OPERATOR = "GATHER"
    SUPPORT = (
        SupportRow(FL.FL_1_0, range(4, 5), _FLOAT),
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
        SupportRow(FL.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        axis: int,
        index_dimensions: int,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.output_tensor = output_tensor
        self.axis = axis
        self.index_dimensions = index_dimensions

    @staticmethod
    def output_sizes_for(
        input_sizes: Sequence[int], indices_sizes: Sequence[int], axis: int, index_dimensions: int
    ) -> tuple[int, ...]:
        """The sizes before right-alignment: input's before Axis, the indices', input's after."""
        tail = tuple(indices_sizes)[len(indices_sizes) - index_dimensions :]
        return tuple(input_sizes[:axis]) + tail + tuple(input_sizes[axis + 1 :])

    def _check_fields(self) -> None:
        check_uint(self.axis, "GATHER.Axis")
        check_uint(self.index_dimensions, "GATHER.IndexDimensions")

    def _check_rules(self) -> None:
        self._check_common()
        rank = self.input_tensor.dimension_count
        self._check_axis(self.axis, rank)
        if self.index_dimensions > self.indices_tensor.dimension_count:
            raise InvalidDescriptorError(
                f"GATHER.IndexDimensions is {self.index_dimensions}: must be at most "
                f"IndicesTensor.DimensionCount {self.indices_tensor.dimension_count}"
            )
        self._leading_ones(
            "IndicesTensor", self.indices_tensor, self.index_dimensions, "IndexDimensions"
        )
        full = self._full()
        expected = right_aligned(
            "GATHER", "OutputTensor", full, rank, "InputTensor's sizes with IndicesTensor's"
        )
        self._check_sizes("OutputTensor", self.output_tensor, expected)

    def _full(self) -> tuple[int, ...]:
        return self.output_sizes_for(
            self.input_tensor.sizes, self.indices_tensor.sizes, self.axis, self.index_dimensions
        )

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        rank, a, k = self.input_tensor.dimension_count, self.axis, self.index_dimensions
        ist = li[0].strides
        src = (*ist[:a], *(0,) * k, *ist[a + 1 :])
        idx = (*(0,) * a, *li[1].strides[rank - k :], *(0,) * (rank - a - 1))
        axes = [IndexAxis(self.input_tensor.sizes[a], ist[a])]
        return [self._gather(li, lo, self._full(), src, idx, 0, axes)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
            ("IndexDimensions", self.index_dimensions),
        ]


class GatherElementsDesc(_GatherBase):
    """DML_GATHER_ELEMENTS_OPERATOR_DESC: output[c] = input[c with c[Axis] = indices[c]]."""

    OPERATOR = "GATHER_ELEMENTS"
    SUPPORT = (
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        axis: int,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.output_tensor = output_tensor
        self.axis = axis

    def _check_fields(self) -> None:
        check_uint(self.axis, "GATHER_ELEMENTS.Axis")

    def _check_rules(self) -> None:
        self._check_common()
        self._check_axis(self.axis, self.input_tensor.dimension_count)
        self._check_all_but_axis(
            "IndicesTensor", self.indices_tensor, "InputTensor", self.input_tensor, self.axis
        )
        self._check_sizes("OutputTensor", self.output_tensor, self.indices_tensor.sizes)

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        src = list(li[0].strides)
        src[self.axis] = 0
        axes = [IndexAxis(self.input_tensor.sizes[self.axis], li[0].strides[self.axis])]
        shape = self.indices_tensor.sizes
        return [self._gather(li, lo, shape, src, li[1].strides, 0, axes)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
        ]


class GatherNd1Desc(_GatherBase):
    """DML_GATHER_ND1_OPERATOR_DESC: output[batch, j, b] = input[batch, indices[batch, j, :], b]:
    each index tuple picks a whole sub-block of the input."""

    OPERATOR = "GATHER_ND1"
    SUPPORT: tuple[SupportRow, ...] = (SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),)

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        input_dimension_count: int,
        indices_dimension_count: int,
        batch_dimension_count: int = 0,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.output_tensor = output_tensor
        self.input_dimension_count = input_dimension_count
        self.indices_dimension_count = indices_dimension_count
        self.batch_dimension_count = batch_dimension_count

    @staticmethod
    def output_sizes_for(
        input_sizes: Sequence[int], indices_sizes: Sequence[int], batch: int
    ) -> tuple[int, ...]:
        """Batch sizes, the indices' sizes but the tuple, the input's sizes past the tuple."""
        k = indices_sizes[-1]
        return (
            tuple(input_sizes[:batch])
            + tuple(indices_sizes[batch:-1])
            + tuple(input_sizes[batch + k :])
        )

    def _check_fields(self) -> None:
        op = self.OPERATOR
        check_uint(self.input_dimension_count, f"{op}.InputDimensionCount")
        check_uint(self.indices_dimension_count, f"{op}.IndicesDimensionCount")
        check_uint(self.batch_dimension_count, f"{op}.BatchDimensionCount")

    def _check_rules(self) -> None:
        op = self.OPERATOR
        self._check_common()
        d = self.input_tensor.dimension_count
        r, q, b = (
            self.input_dimension_count,
            self.indices_dimension_count,
            self.batch_dimension_count,
        )
        data, index = self._check_nd_counts(r, q)
        if b >= r or b >= q:
            raise InvalidDescriptorError(
                f"{op}.BatchDimensionCount is {b}: must be less than InputDimensionCount {r} "
                f"and IndicesDimensionCount {q}"
            )
        k = index[-1]
        if not 1 <= k <= r - b:
            raise InvalidDescriptorError(
                f"{op}.IndicesTensor.Sizes[{d - 1}] is {k}: an index tuple must have 1 to "
                f"InputDimensionCount - BatchDimensionCount = {r - b} coordinates"
            )
        if data[:b] != index[:b]:
            raise InvalidDescriptorError(
                f"{op}.IndicesTensor.Sizes is {list(self.indices_tensor.sizes)}: its "
                f"{b} batch sizes {list(index[:b])} must equal InputTensor's {list(data[:b])}"
            )
        full = self.output_sizes_for(data, index, b)
        expected = right_aligned(op, "OutputTensor", full, d, "the gathered blocks")
        self._check_sizes("OutputTensor", self.output_tensor, expected)

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        d = self.input_tensor.dimension_count
        r, q, b = (
            self.input_dimension_count,
            self.indices_dimension_count,
            self.batch_dimension_count,
        )
        data, index = self._nd_sizes(r, q)
        k = index[-1]
        ist = li[0].strides[d - r :]
        xst = li[1].strides[d - q :]
        middle = q - b - 1
        trailing = r - b - k
        src = (*ist[:b], *(0,) * middle, *ist[b + k :])
        idx = (*xst[:b], *xst[b : q - 1], *(0,) * trailing)
        axes = [IndexAxis(data[b + t], ist[b + t]) for t in range(k)]
        full = self.output_sizes_for(data, index, b)
        return [self._gather(li, lo, full, src, idx, xst[q - 1], axes)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("OutputTensor", self.output_tensor),
            ("InputDimensionCount", self.input_dimension_count),
            ("IndicesDimensionCount", self.indices_dimension_count),
            ("BatchDimensionCount", self.batch_dimension_count),
        ]


class GatherNdDesc(GatherNd1Desc):
    """DML_GATHER_ND_OPERATOR_DESC: GATHER_ND1 without batch dimensions."""

    OPERATOR = "GATHER_ND"
    SUPPORT = (
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        input_dimension_count: int,
        indices_dimension_count: int,
    ) -> None:
        super().__init__(
            input_tensor,
            indices_tensor,
            output_tensor,
            input_dimension_count,
            indices_dimension_count,
            0,
        )

    def _field_items(self) -> list[tuple[str, object]]:
        return super()._field_items()[:-1]
