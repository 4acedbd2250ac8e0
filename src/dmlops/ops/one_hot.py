"""DML_ONE_HOT: every sequence along Axis set to OffValue, one element to OnValue."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import IndexAxis, IndexedCopy
from ..plan import Layout, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint
from ._base import ALL_DIMS, TYPES_8, SupportRow
from ._indexed import IndexedDesc, tensor_span

__all__ = ["OneHotDesc"]

FL = FeatureLevel


class OneHotDesc(IndexedDesc):
    """DML_ONE_HOT_OPERATOR_DESC: output = OffValue (ValuesTensor's element 0), then in each
    sequence along Axis the element IndicesTensor names is OnValue (ValuesTensor's next element
    along its last dimension of size > 1); an index past the sequence sets none."""

    OPERATOR = "ONE_HOT"
    SUPPORT = (
        SupportRow(FL.FL_2_0, range(4, 5), frozenset({DataType.FLOAT32, DataType.FLOAT16})),
        SupportRow(FL.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FL.FL_3_0, ALL_DIMS, TYPES_8),
    )

    def __init__(
        self,
        indices_tensor: BufferTensorDesc,
        values_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        axis: int,
    ) -> None:
        self.indices_tensor = indices_tensor
        self.values_tensor = values_tensor
        self.output_tensor = output_tensor
        self.axis = axis

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("IndicesTensor", self.indices_tensor), ("ValuesTensor", self.values_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def _check_fields(self) -> None:
        check_uint(self.axis, "ONE_HOT.Axis")

    def _check_rules(self) -> None:
        d = self.indices_tensor.dimension_count
        self._check_axis(self.axis, d)
        for name, t in (("ValuesTensor", self.values_tensor), ("OutputTensor", self.output_tensor)):
            if t.dimension_count != d:
                raise InvalidDescriptorError(
                    f"ONE_HOT.{name}.DimensionCount is {t.dimension_count}: must equal "
                    f"IndicesTensor.DimensionCount {d}"
                )
        self._same_type("ValuesTensor", self.values_tensor, "OutputTensor", self.output_tensor)
        if math.prod(self.values_tensor.sizes) < 2:
            raise InvalidDescriptorError(
                f"ONE_HOT.ValuesTensor.Sizes is {list(self.values_tensor.sizes)}: must hold at "
                "least two elements (OffValue, OnValue)"
            )
        if self.indices_tensor.sizes[self.axis] != 1:
            raise InvalidDescriptorError(
                f"ONE_HOT.IndicesTensor.Sizes[{self.axis}] is "
                f"{self.indices_tensor.sizes[self.axis]}: must be 1 (the Axis dimension)"
            )
        self._check_all_but_axis(
            "OutputTensor", self.output_tensor, "IndicesTensor", self.indices_tensor, self.axis
        )

    def _on_coordinate(self) -> tuple[int, ...]:
        sizes = self.values_tensor.sizes
        last = max(i for i, n in enumerate(sizes) if n > 1)
        return tuple(1 if i == last else 0 for i in range(len(sizes)))

    def logical_copies(self) -> list[LogicalCopy]:
        d = self.output_tensor.dimension_count
        zeros = (0,) * d
        return [LogicalCopy(1, zeros, zeros, 0, zeros, tuple(self.output_tensor.sizes))]

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        size = self.element_size
        itype = self.indices_tensor.data_type
        on = li[1].offset + sum(
            c * s for c, s in zip(self._on_coordinate(), li[1].strides, strict=True)
        )
        d = self.output_tensor.dimension_count
        dst = list(lo[0].strides)
        dst[self.axis] = 0
        axes = [IndexAxis(self.output_tensor.sizes[self.axis], lo[0].strides[self.axis])]
        return [
            IndexedCopy(
                label="ONE_HOT.IndicesTensor",
                src=1,
                src_offset=on * size,
                src_strides=(0,) * d,
                dst=0,
                dst_offset=lo[0].offset * size,
                dst_strides=tuple(dst),
                shape=tuple(self.indices_tensor.sizes),
                index=0,
                index_type=itype,
                index_offset=li[0].offset * itype.element_size,
                index_strides=tuple(li[0].strides),
                tuple_stride=0,
                axes=tuple(axes),
                scatter=True,
                indexed_span=tensor_span(self.output_tensor, lo[0], size),
                negative_indices=itype.is_signed,
                skip_out_of_range=True,
                slot_strides=(0,) * d,
                slot_count=0,  # one index per sequence: no two writes meet
            )
        ]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("IndicesTensor", self.indices_tensor),
            ("ValuesTensor", self.values_tensor),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
        ]
