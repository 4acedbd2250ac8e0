"""DML_OPERATOR_DIAGONAL_MATRIX and DIAGONAL_MATRIX1: a stack of matrices holding a value on
one diagonal (DIAGONAL_MATRIX1: a span of diagonals) and zeros or the input's elements
elsewhere (an identity matrix, torch.eye, ONNX EyeLike; DIAGONAL_MATRIX1: tril, triu)."""

from __future__ import annotations

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_int
from ._base import (
    TYPES_8,
    TYPES_11,
    GeneratorDesc,
    OperatorDesc,
    SupportRow,
    float_field_bytes,
    scalar_bytes,
)

__all__ = ["DiagonalMatrixDesc", "DiagonalMatrix1Desc", "triangle_span"]

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


# rows whose shared columns are lowered as one box (each row's remainder a run of its own):
# most of a triangle's bytes move in boxes of this many rows
_BLOCK_ROWS = 32


class DiagonalMatrix1Desc(OperatorDesc):
    """DML_DIAGONAL_MATRIX1_OPERATOR_DESC: OutputTensor[..., y, x] = Value where the
    diagonal x - y lies in [DiagonalFillBegin, DiagonalFillEnd) (outside [End, Begin) where
    Begin > End, the span inverted), else InputTensor[..., y, x], or 0 without an input
    (numpy.tril / triu, torch.tril / triu, ONNX Trilu, WebNN triangular, torch.eye).

    Lowered in blocks of rows: per row at most two runs of Value and the runs between them,
    copied from the input (or zeros); the columns that every row of a block shares in a run
    one box, each row's remainder a box of one row; every element is written once.
    """

    OPERATOR = "DIAGONAL_MATRIX1"
    # DirectML's DIAGONAL_MATRIX1 page (sdk-api, ns-directml-dml_diagonal_matrix1_operator_
    # desc.md): introduced in 5_1, one table row, 2 to 4 dimensions of 11 types; InputTensor
    # optional. (Its first example writes ones for a Value of 7: an erratum of the page.)
    SUPPORT = (SupportRow(FeatureLevel.FL_5_1, range(2, 5), TYPES_11),)

    def __init__(
        self,
        input_tensor: BufferTensorDesc | None,
        output_tensor: BufferTensorDesc,
        value_data_type: DataType | int | str | None = None,
        value: float | int = 1,
        diagonal_fill_begin: int = 0,
        diagonal_fill_end: int = 1,
    ) -> None:
        """`value_data_type` None: the output's type."""
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.value_data_type = (
            output_tensor.data_type
            if value_data_type is None
            else DataType.parse(value_data_type, "DIAGONAL_MATRIX1.ValueDataType")
        )
        self.value = value
        self.diagonal_fill_begin = diagonal_fill_begin
        self.diagonal_fill_end = diagonal_fill_end

    @property
    def data_type(self) -> DataType:
        return self.output_tensor.data_type

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [] if self.input_tensor is None else [("InputTensor", self.input_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("OutputTensor", self.output_tensor),
            ("ValueDataType", self.value_data_type.name),
            ("Value", self.value),
            ("DiagonalFillBegin", self.diagonal_fill_begin),
            ("DiagonalFillEnd", self.diagonal_fill_end),
        ]

    def _check_fields(self) -> None:
        for name in ("DiagonalFillBegin", "DiagonalFillEnd"):
            value = getattr(self, _ATTRIBUTE[name])
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidDescriptorError(f"DIAGONAL_MATRIX1.{name} is {value!r}: not an INT")
            check_int(value, f"DIAGONAL_MATRIX1.{name}")
        self.value_bytes()  # raises where the value is not one of its type

    def _check_rules(self) -> None:
        out = self.output_tensor
        if self.value_data_type != out.data_type:
            raise InvalidDescriptorError(
                f"DIAGONAL_MATRIX1.ValueDataType is {self.value_data_type.name}: must equal "
                f"OutputTensor.DataType {out.data_type.name}"
            )
        if self.input_tensor is not None:
            self._same_type("OutputTensor", out, "InputTensor", self.input_tensor)
            if tuple(self.input_tensor.sizes) != tuple(out.sizes):
                raise InvalidDescriptorError(
                    f"DIAGONAL_MATRIX1.InputTensor.Sizes is {list(self.input_tensor.sizes)}: "
                    f"must equal OutputTensor.Sizes {list(out.sizes)} (each output element "
                    "not on the filled diagonals is the input's at its coordinate)"
                )

    def value_bytes(self) -> bytes:
        """Value as one element of ValueDataType (of the data's own type where a carrier
        describes the output)."""
        if self._carried is not None and self._carried[1] is not None:
            return self._carried[1]
        return scalar_bytes(self.value, self.value_data_type, "DIAGONAL_MATRIX1.Value")

    def _own_fills(self) -> tuple[bytes, ...]:
        if self.input_tensor is None:
            return (self.value_bytes(), bytes(self.element_size))  # Value, then zeros
        return (self.value_bytes(),)

    def fills(self) -> tuple[bytes, ...]:
        """Value (the carried value where `carrying` gave one), then zeros without an input."""
        return self._own_fills()

    def filled_runs(self, y: int, width: int) -> list[tuple[int, int]]:
        """(start, stop) column runs of row `y` that hold Value."""
        begin, end = self.diagonal_fill_begin, self.diagonal_fill_end

        def clipped(lo: int, hi: int) -> tuple[int, int]:
            return min(max(lo, 0), width), min(max(hi, 0), width)

        if end >= begin:
            runs = [clipped(y + begin, y + end)]
        else:  # inverted: everything outside [end, begin)
            runs = [clipped(-(2**62), y + end), clipped(y + begin, 2**62)]
        return [(a, b) for a, b in runs if b > a]

    def row_runs(self, y: int, width: int) -> list[tuple[int, int, int]]:
        """Row `y`'s runs in column order: (source, start, stop), the source -1 for Value,
        0 for the input, -2 for zeros (no input); none empty."""
        rest = 0 if self.input_tensor is not None else -2
        runs, at = [], 0
        for start, stop in [*self.filled_runs(y, width), (width, width)]:
            runs += [(src, a, b) for src, a, b in ((rest, at, start), (-1, start, stop)) if b > a]
            at = stop
        return runs

    def logical_copies(self) -> list[LogicalCopy]:
        sizes = tuple(self.output_tensor.sizes)
        lead, (height, width) = sizes[:-2], sizes[-2:]
        batch = (0,) * len(lead)
        copies: list[LogicalCopy] = []
        # a box's columns start and end on 16-byte boundaries of the row (vector accesses)
        align = max(1, 16 // self.output_tensor.data_type.element_size)

        def box(src: int, y: int, rows: int, a: int, b: int) -> None:
            corner = (*batch, y, a)
            start, step = (corner, (1,) * len(sizes)) if src >= 0 else ((0,) * len(sizes),) * 2
            copies.append(LogicalCopy(src, start, step, 0, corner, (*lead, rows, b - a)))

        def block(y0: int, y1: int) -> None:
            """Rows [y0, y1): where they have runs of the same sources in the same order,
            the columns all of them share as one box, each row's remainder its own run;
            else halved."""
            runs = [self.row_runs(y, width) for y in range(y0, y1)]
            if len({tuple(src for src, _, _ in r) for r in runs}) > 1:
                middle = (y0 + y1) // 2
                block(y0, middle)
                block(middle, y1)
                return
            for i, (src, _, _) in enumerate(runs[0]):
                lo = -(-max(r[i][1] for r in runs) // align) * align
                hi = min(r[i][2] for r in runs) // align * align
                shared = hi > lo
                if shared:
                    box(src, y0, y1 - y0, lo, hi)
                for y, r in zip(range(y0, y1), runs, strict=True):
                    _, a, b = r[i]
                    rest = ((a, lo), (hi, b)) if shared else ((a, b),)
                    for c, d in rest:
                        if d > c:
                            box(src, y, 1, c, d)

        for y0 in range(0, height, _BLOCK_ROWS):
            block(y0, min(y0 + _BLOCK_ROWS, height))
        return copies


_ATTRIBUTE = {
    "DiagonalFillBegin": "diagonal_fill_begin",
    "DiagonalFillEnd": "diagonal_fill_end",
}


def triangle_span(upper: bool, k: int, height: int, width: int) -> tuple[int, int]:
    """DIAGONAL_MATRIX1's (DiagonalFillBegin, DiagonalFillEnd) that zero all but a triangle
    of height x width matrices: the upper one (column - row >= k: zeros on [INT_MIN, k)) or
    the lower one (column - row <= k: zeros on [k + 1, INT_MAX)); k clamped to the
    matrices, where it keeps the same elements, so both stay INTs."""
    if upper:
        return _INT_MIN, min(max(int(k), -height), width + 1)
    return min(max(int(k), -height - 1), width) + 1, _INT_MAX
