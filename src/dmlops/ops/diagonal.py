"""DML_OPERATOR_DIAGONAL_MATRIX: a stack of matrices holding a value on one diagonal and
zeros elsewhere (an identity matrix, torch.eye, ONNX EyeLike)."""

from __future__ import annotations

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import TYPES_8, TYPES_11, GeneratorDesc, SupportRow, float_field_bytes

__all__ = ["DiagonalMatrixDesc"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class DiagonalMatrixDesc(GeneratorDesc):
    """DML_DIAGONAL_MATRIX_OPERATOR_DESC: OutputTensor[..., y, x] = Value where
    y + Offset == x, else 0; leading dimensions are a batch of matrices. Value is a FLOAT
    (truncated toward zero for integer types, as the page says).

    Lowered per row: the zeros before the diagonal, its one element, the zeros after (each
    a box over the batch), so every element is written once.
    """

    OPERATOR = "DIAGONAL_MATRIX"
    # DirectML's DIAGONAL_MATRIX page (sdk-api, ns-directml-dml_diagonal_matrix_operator_
    # desc.md): introduced in 2_0 (4 dimensions of FLOAT32, FLOAT16); 8 types from 2_1;
    # 2 to 4 dimensions from 4_0; 11 types from 5_1.
    SUPPORT = (
        SupportRow(
            FeatureLevel.FL_2_0, range(4, 5), frozenset({DataType.FLOAT32, DataType.FLOAT16})
        ),
        SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FeatureLevel.FL_4_0, range(2, 5), TYPES_8),
        SupportRow(FeatureLevel.FL_5_1, range(2, 5), TYPES_11),
    )

    def __init__(self, output_tensor: BufferTensorDesc, offset: int = 0, value: float = 1.0):
        self.output_tensor = output_tensor
        self.offset = offset
        self.value = value

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("OutputTensor", self.output_tensor),
            ("Offset", self.offset),
            ("Value", self.value),
        ]

    def _check_fields(self) -> None:
        offset = self.offset
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise InvalidDescriptorError(f"DIAGONAL_MATRIX.Offset is {offset!r}: not an INT")
        if not _INT_MIN <= offset <= _INT_MAX:
            raise InvalidDescriptorError(
                f"DIAGONAL_MATRIX.Offset is {offset}: outside INT's range [{_INT_MIN}, {_INT_MAX}]"
            )
        self.value_bytes()  # raises where Value is not a number

    def _check_rules(self) -> None:
        pass  # (the table says the rest: 2 to 4 dimensions, any sizes)

    def value_bytes(self) -> bytes:
        """Value, a FLOAT, as one element of the output's type."""
        if self._carried is not None and self._carried[1] is not None:
            return self._carried[1]
        return float_field_bytes(self.value, self.output_tensor.data_type, "DIAGONAL_MATRIX.Value")

    def _own_fills(self) -> tuple[bytes, ...]:
        return (bytes(self.element_size), self.value_bytes())  # ZERO, then Value

    def fills(self) -> tuple[bytes, ...]:
        """Zeros, then Value (the carried value where `carrying` gave one: value_bytes)."""
        return self._own_fills()

    def logical_copies(self) -> list[LogicalCopy]:
        sizes = tuple(self.output_tensor.sizes)
        lead, (height, width) = sizes[:-2], sizes[-2:]
        batch = (0,) * len(lead)
        zeros = (0,) * len(sizes)
        copies = []
        for y in range(height):
            x = y + self.offset
            runs = [(0, width)] if not 0 <= x < width else [(0, x), (x + 1, width - x - 1)]
            for start, count in runs:
                if count:
                    copies.append(
                        LogicalCopy(-1, zeros, zeros, 0, (*batch, y, start), (*lead, 1, count))
                    )
            if 0 <= x < width:
                copies.append(LogicalCopy(-2, zeros, zeros, 0, (*batch, y, x), (*lead, 1, 1)))
        return copies
