"""DML_REVERSE_SUBSEQUENCES: along Axis, the first L elements of each sequence reversed (L
from SequenceLengthsTensor, clamped to the axis), the rest copied unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import IndexAxis, IndexedCopy
from ..plan import Layout, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint
from ._base import TYPES_8, SupportRow
from ._indexed import IndexedDesc, tensor_span

__all__ = ["ReverseSubsequencesDesc"]

FL = FeatureLevel


class ReverseSubsequencesDesc(IndexedDesc):
    """DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC: output[c] = input[c with c[Axis] = p < L ?
    L - 1 - p : p], p = c[Axis], L = SequenceLengthsTensor[c with c[Axis] = 0]."""

    OPERATOR = "REVERSE_SUBSEQUENCES"
    INDEX_FIELD = "SequenceLengthsTensor"
    SUPPORT = (
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, range(4, 6), TYPES_8),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        sequence_lengths_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        axis: int,
    ) -> None:
        self.input_tensor = input_tensor
        self.sequence_lengths_tensor = sequence_lengths_tensor
        self.output_tensor = output_tensor
        self.axis = axis

    def _allowed_types(self, name: str, row: SupportRow) -> frozenset[DataType]:
        if name == self.INDEX_FIELD:
            return frozenset({DataType.UINT32})  # every row of its page
        return row.data_types

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [
            ("InputTensor", self.input_tensor),
            ("SequenceLengthsTensor", self.sequence_lengths_tensor),
        ]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def logical_copies(self) -> list[LogicalCopy]:
        return []

    def _check_fields(self) -> None:
        check_uint(self.axis, "REVERSE_SUBSEQUENCES.Axis")

    def _check_rules(self) -> None:
        d = self.input_tensor.dimension_count
        self._same_type("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)
        lengths = self.sequence_lengths_tensor
        if lengths.dimension_count != d:
            raise InvalidDescriptorError(
                f"REVERSE_SUBSEQUENCES.SequenceLengthsTensor.DimensionCount is "
                f"{lengths.dimension_count}: must equal InputTensor.DimensionCount {d}"
            )
        self._check_axis(self.axis, d)
        self._check_sizes("OutputTensor", self.output_tensor, self.input_tensor.sizes)
        expected = list(self.input_tensor.sizes)
        expected[self.axis] = 1
        self._check_sizes("SequenceLengthsTensor", lengths, expected)

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        size = self.element_size
        a = self.axis
        src = list(li[0].strides)
        src[a] = 0
        index = list(li[1].strides)
        index[a] = 0
        return [
            IndexedCopy(
                label="REVERSE_SUBSEQUENCES.SequenceLengthsTensor",
                src=0,
                src_offset=li[0].offset * size,
                src_strides=tuple(src),
                dst=0,
                dst_offset=lo[0].offset * size,
                dst_strides=tuple(lo[0].strides),
                shape=tuple(self.input_tensor.sizes),
                index=1,
                index_type=self.sequence_lengths_tensor.data_type,
                index_offset=li[1].offset * 4,
                index_strides=tuple(index),
                tuple_stride=0,
                axes=(IndexAxis(self.input_tensor.sizes[a], li[0].strides[a]),),
                scatter=False,
                indexed_span=tensor_span(self.input_tensor, li[0], size),
                negative_indices=False,
                reverse_dim=a,
            )
        ]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("SequenceLengthsTensor", self.sequence_lengths_tensor),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
        ]
