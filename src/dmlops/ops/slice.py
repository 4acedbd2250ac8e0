"""DML_OPERATOR_SLICE: a strided box of the input, strides >= 1."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, FeatureLevel
from ._base import (
    ALL_DIMS,
    TYPES_6,
    TYPES_8,
    TYPES_11,
    SupportRow,
    UnaryDesc,
    uint_list,
)

__all__ = ["SliceDesc"]


class SliceDesc(UnaryDesc):
    """DML_SLICE_OPERATOR_DESC: Output[c] = Input[Offsets + Strides * c]."""

    OPERATOR = "SLICE"
    # DirectML's SLICE page (ns-directml-dml_slice_operator_desc, seed 004), "Tensor support".
    SUPPORT = (
        SupportRow(FeatureLevel.FL_1_0, range(4, 6), TYPES_6),
        SupportRow(FeatureLevel.FL_2_1, range(4, 6), TYPES_8),
        SupportRow(FeatureLevel.FL_3_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int],
        dimension_count: int | None = None,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.offsets = uint_list(offsets, "SLICE.Offsets")
        self.sizes = uint_list(sizes, "SLICE.Sizes")
        self.strides = uint_list(strides, "SLICE.Strides")
        self.dimension_count = (
            len(self.offsets) if dimension_count is None else int(dimension_count)
        )

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("DimensionCount", self.dimension_count),
            ("Offsets", list(self.offsets)),
            ("Sizes", list(self.sizes)),
            ("Strides", list(self.strides)),
        ]

    def _check_fields(self) -> None:
        n = self.dimension_count
        for field, arr in (
            ("Offsets", self.offsets),
            ("Sizes", self.sizes),
            ("Strides", self.strides),
        ):
            self._check_count(n, len(arr), "DimensionCount", field)
            self._uint_array(arr, field)
        for i, s in enumerate(self.strides):
            if s == 0:
                raise InvalidDescriptorError(f"SLICE.Strides[{i}] is 0: strides must be at least 1")

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        if self.dimension_count != inp.dimension_count:
            raise InvalidDescriptorError(
                f"SLICE.DimensionCount is {self.dimension_count}: "
                f"must equal InputTensor.DimensionCount {inp.dimension_count}"
            )
        for i in range(self.dimension_count):
            if self.sizes[i] != out.sizes[i]:
                raise InvalidDescriptorError(
                    f"SLICE.Sizes[{i}] is {self.sizes[i]}: must equal OutputTensor.Sizes[{i}] "
                    f"{out.sizes[i]}"
                )
            last = self.offsets[i] + self.strides[i] * (self.sizes[i] - 1)
            if last >= inp.sizes[i]:
                raise InvalidDescriptorError(
                    f"SLICE.Offsets[{i}] is {self.offsets[i]}: Offsets[{i}] + Strides[{i}] * "
                    f"(Sizes[{i}] - 1) = {last} reads outside InputTensor.Sizes[{i}] {inp.sizes[i]}"
                )

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.dimension_count
        return [LogicalCopy(0, self.offsets, self.strides, 0, (0,) * n, self.output_tensor.sizes)]
