"""DML_OPERATOR_FILL_VALUE_CONSTANT: every element of the output set to one value."""

from __future__ import annotations

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import ALL_DIMS, TYPES_8, TYPES_11, GeneratorDesc, SupportRow, scalar_bytes

__all__ = ["FillValueConstantDesc"]


class FillValueConstantDesc(GeneratorDesc):
    """DML_FILL_VALUE_CONSTANT_OPERATOR_DESC: OutputTensor[c] = Value for every c, Value a
    DML_SCALAR_UNION read as ValueDataType (which must be OutputTensor's type). No input.

    Lowered to one copy from a fill source: the plan writes the value's bytes.
    """

    OPERATOR = "FILL_VALUE_CONSTANT"
    # DirectML's FILL_VALUE_CONSTANT page (sdk-api, ns-directml-dml_fill_value_constant_
    # operator_desc.md): introduced in 2_1 (4 dimensions, 8 types); 1 to 8 from 4_0; 11
    # types from 4_1.
    SUPPORT = (
        SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FeatureLevel.FL_4_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        output_tensor: BufferTensorDesc,
        value_data_type: DataType | int | str | None,
        value: float | int,
    ) -> None:
        """`value_data_type` None: the output's type."""
        self.output_tensor = output_tensor
        self.value_data_type = (
            output_tensor.data_type
            if value_data_type is None
            else DataType.parse(value_data_type, "FILL_VALUE_CONSTANT.ValueDataType")
        )
        self.value = value

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("OutputTensor", self.output_tensor),
            ("ValueDataType", self.value_data_type.name),
            ("Value", self.value),
        ]

    def _check_fields(self) -> None:
        self.value_bytes()  # raises where the value is not one of its type

    def _check_rules(self) -> None:
        if self.value_data_type != self.output_tensor.data_type:
            raise InvalidDescriptorError(
                f"FILL_VALUE_CONSTANT.ValueDataType is {self.value_data_type.name}: must equal "
                f"OutputTensor.DataType {self.output_tensor.data_type.name}"
            )

    def value_bytes(self) -> bytes:
        """Value as one element of ValueDataType (of the data's own type where a carrier
        describes the output)."""
        if self._carried is not None and self._carried[1] is not None:
            return self._carried[1]
        return scalar_bytes(self.value, self.value_data_type, "FILL_VALUE_CONSTANT.Value")

    def _own_fills(self) -> tuple[bytes, ...]:
        return (self.value_bytes(),)

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.output_tensor.dimension_count
        zeros = (0,) * n
        return [LogicalCopy(-1, zeros, zeros, 0, zeros, tuple(self.output_tensor.sizes))]
