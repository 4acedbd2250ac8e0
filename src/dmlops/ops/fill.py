"""DML_OPERATOR_FILL_VALUE_CONSTANT (every element of the output set to one value) and
FILL_VALUE_SEQUENCE (an arithmetic sequence in the output's element order)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidDescriptorError
from ..plan import TENSOR_FILL_BYTES, Fill, Layout, LogicalCopy, ValueSequence
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides
from ._base import ALL_DIMS, TYPES_8, TYPES_11, GeneratorDesc, SupportRow, scalar_bytes

__all__ = ["FillValueConstantDesc", "FillValueSequenceDesc"]


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


_SEQUENCE_TYPES = TYPES_8 | {DataType.INT64, DataType.UINT64}


class FillValueSequenceDesc(GeneratorDesc):
    """DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC: the output's elements, in order, hold
    ValueStart, ValueStart + ValueDelta, ... (DML_SCALAR_UNIONs read as ValueDataType, which
    must be the output's type). No input.

    Element i is start + delta x i in the output's type: modulo 2^bits for integer types
    (two's complement), the exact value rounded once to the nearest for float types (the
    page's `Value += Delta` loop, without its accumulated rounding). Lowered to one copy
    from a tensor fill of the values given by its rule (`plan.ValueSequence`): made on the
    host where a backend reads host bytes, on the device by CUDA.
    """

    OPERATOR = "FILL_VALUE_SEQUENCE"
    # DirectML's FILL_VALUE_SEQUENCE page (sdk-api, ns-directml-dml_fill_value_sequence_
    # operator_desc.md): introduced in 2_1 (4 dimensions, 8 types); 1 to 8 from 4_0; INT64
    # and UINT64 from 5_0 (never FLOAT64).
    SUPPORT = (
        SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FeatureLevel.FL_4_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_5_0, ALL_DIMS, _SEQUENCE_TYPES),
    )

    def __init__(
        self,
        output_tensor: BufferTensorDesc,
        value_data_type: DataType | int | str | None,
        value_start: float | int,
        value_delta: float | int,
    ) -> None:
        """`value_data_type` None: the output's type."""
        self.output_tensor = output_tensor
        self.value_data_type = (
            output_tensor.data_type
            if value_data_type is None
            else DataType.parse(value_data_type, "FILL_VALUE_SEQUENCE.ValueDataType")
        )
        self.value_start = value_start
        self.value_delta = value_delta

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("OutputTensor", self.output_tensor),
            ("ValueDataType", self.value_data_type.name),
            ("ValueStart", self.value_start),
            ("ValueDelta", self.value_delta),
        ]

    def _check_fields(self) -> None:
        self._scalars()

    def carrier(
        self, level: FeatureLevel | int | str, element_size: int, own: DataType | None
    ) -> DataType | None:
        """None: the values are arithmetic in the output's own type, which no other type can
        carry (validation names a type the table lacks)."""
        return None

    def _scalars(self) -> tuple[np.generic, np.generic]:
        """ValueStart and ValueDelta as elements of ValueDataType. An unsigned type's delta
        may be negative down to -2^(bits-1): the union's bits, two's complement (the page's
        second example steps a UINT8 by -2)."""
        dt = self.value_data_type
        dtype = np.dtype(dt.numpy_dtype)
        start = scalar_bytes(self.value_start, dt, "FILL_VALUE_SEQUENCE.ValueStart")
        delta = self.value_delta
        if (
            dtype.kind == "u"
            and isinstance(delta, (int, np.integer))
            and not isinstance(delta, bool)
        ):
            bits = dtype.itemsize * 8
            if -(2 ** (bits - 1)) <= int(delta) < 0:
                delta = int(delta) % 2**bits
        step = scalar_bytes(delta, dt, "FILL_VALUE_SEQUENCE.ValueDelta")
        return np.frombuffer(start, dtype)[0], np.frombuffer(step, dtype)[0]

    def _check_rules(self) -> None:
        if self.value_data_type != self.output_tensor.data_type:
            raise InvalidDescriptorError(
                f"FILL_VALUE_SEQUENCE.ValueDataType is {self.value_data_type.name}: must equal "
                f"OutputTensor.DataType {self.output_tensor.data_type.name}"
            )

    def sequence(self) -> ValueSequence:
        """The values as a tensor fill's rule (made on the device where a backend can)."""
        dtype = np.dtype(self.value_data_type.numpy_dtype)
        count = math.prod(self.output_tensor.sizes)
        start, delta = self._scalars()
        if dtype.kind in "iu":
            first, step = int(start), int(delta)
            rule: tuple[int | float, int | float] = (first, step)
        else:
            rule = (float(start), float(delta))
        nbytes = max(count * dtype.itemsize, TENSOR_FILL_BYTES + 1)
        return ValueSequence(dtype.str, *rule, count, nbytes)

    def _own_fills(self) -> tuple[Fill, ...]:
        return (self.sequence(),)

    def fill_layouts(self) -> tuple[Layout | None, ...]:
        return (Layout(0, packed_strides(tuple(self.output_tensor.sizes))),)

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.output_tensor.dimension_count
        zeros = (0,) * n
        return [LogicalCopy(-1, zeros, (1,) * n, 0, zeros, tuple(self.output_tensor.sizes))]
