"""DML_OPERATOR_DIAGONAL_MATRIX and DIAGONAL_MATRIX1: a stack of matrices holding a value on
one diagonal (DIAGONAL_MATRIX1: a span of diagonals) and zeros or the input's elements
elsewhere (an identity matrix, torch.eye, ONNX EyeLike; DIAGONAL_MATRIX1: tril, triu)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Protocol

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

__all__ = ["DiagonalMatrixDesc", "DiagonalMatrix1Desc", "band_copies", "triangle_span"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_FAR = 1 << 62  # a diagonal past either end of every row

# a run of a row's columns: (source, c_left, c_right), columns [y + c_left, y + c_right) of
# row y clipped to the row (the source as a LogicalCopy's: an input, or -1 - k for fill k)
Run = tuple[int, int, int]
# a box repeated: (count, rows down, columns right) for each repetition in turn
Repeat = tuple[tuple[int, int, int], ...]


class Box(Protocol):
    """Writes a box: its rows and columns, and its repetitions."""

    def __call__(self, y: int, rows: int, a: int, b: int, repeat: Repeat = ()) -> None: ...


def _align(t: BufferTensorDesc) -> int:
    """Elements in 16 bytes of the tensor's type (boxes' columns split there: vector
    accesses)."""
    return max(1, 16 // t.data_type.element_size)


def band_copies(sizes: Sequence[int], runs: Sequence[Run], align: int = 1) -> list[LogicalCopy]:
    """The copies writing each run of columns between two diagonals in every matrix of a
    stack of `sizes` (the last two: rows, columns), in compact form (`LogicalCopy.repeat`).
    Per run, and per range of rows where each of its edges is fixed (off the rows' ends) or
    moves with the row: a box where both are fixed; a band of rows (a one-row box repeated
    a row down and a column right) where both move; where one moves, blocks of `_BLOCK`
    rows, each the columns all its rows share (rounded inwards to a multiple of `align`
    elements) as a box and each row's remainder its own box, the remainders of like rows of
    the blocks one box repeated down the diagonal: n rows cost n / 32 + 32 copies, and each
    row is two runs (what the CPU engine walks fastest)."""
    lead, (height, width) = tuple(sizes[:-2]), tuple(sizes[-2:])
    batch, ones, flat = (0,) * len(lead), (1,) * len(sizes), (0,) * len(sizes)
    copies: list[LogicalCopy] = []

    def rows_of(src: int) -> Box:
        def box(y: int, rows: int, a: int, b: int, repeat: Repeat = ()) -> None:
            """Columns [a, b) of rows [y, y + rows), repeated (count, rows down, columns
            right)."""
            if b <= a or rows <= 0:
                return
            moves = tuple(
                (n, (*batch, dy, dx) if src >= 0 else flat, (*batch, dy, dx))
                for n, dy, dx in repeat
                if n > 1
            )
            corner = (*batch, y, a)
            start, step = (corner, ones) if src >= 0 else (flat, flat)
            shape = (*lead, rows, b - a)
            copies.append(LogicalCopy(src, start, step, 0, corner, shape, None, moves))

        return box

    for src, c_left, c_right in runs:
        box = rows_of(src)
        turns = {y for c in (c_left, c_right) for y in (-c, width - c) if 0 < y < height}
        for p, q in pairwise(sorted({0, height} | turns)):
            left, right = _edge(c_left, p, q, width), _edge(c_right, p, q, width)
            if left is not None and right is not None:
                box(p, q - p, left, right)
            elif left is None and right is None:
                if c_right > c_left:
                    box(p, 1, p + c_left, p + c_right, ((q - p, 1, 1),))
            elif left is None and right == width:  # [y + c_left, width): rows shrinking
                _blocks(box, p, q, c_left, width, align, shrinking=True)
            elif right is None and left == 0:  # [0, y + c_right): rows growing
                _blocks(box, p, q, c_right, width, align, shrinking=False)
    return copies


def _edge(c: int, p: int, q: int, width: int) -> int | None:
    """Where the diagonal x = y + c cuts rows [p, q): a fixed column (0 or the width) where
    it passes off their ends, None where it moves with the row (inside each of them)."""
    if q - 1 + c <= 0:
        return 0
    if p + c >= width:
        return width
    return None


_BLOCK = 32  # rows of a block (a multiple of every `align`: like rows' remainders alike)


def _blocks(box: Box, p: int, q: int, c: int, width: int, align: int, shrinking: bool) -> None:
    """Rows [p, q) of the run [y + c, width) (`shrinking`) or [0, y + c) in blocks of
    _BLOCK rows: a block's shared columns one box; its rows' remainders boxes of one row,
    those of the same row of consecutive blocks alike (same width, a block down and a block
    right) one repeated box."""
    remainders: dict[int, list[tuple[int, int, int]]] = {}  # row in block: (y, a, b) a block
    for top in range(p, q, _BLOCK):
        bottom = min(top + _BLOCK, q)
        if shrinking:  # columns from the last row's start, rounded up, to the row's end
            shared = min(-(-(bottom - 1 + c) // align) * align, width)
            if width - shared < align:  # (no strip of the rows' ends: each row's own run)
                shared = width
            box(top, bottom - top, shared, width)
            for y in range(top, bottom):
                remainders.setdefault(y - top, []).append((y, y + c, shared))
        else:  # columns from the row's start to the first row's end, rounded down
            shared = (top + c) // align * align
            box(top, bottom - top, 0, shared)
            for y in range(top, bottom):
                remainders.setdefault(y - top, []).append((y, shared, y + c))
    for found in remainders.values():
        k = 0
        while k < len(found):  # runs of alike remainders a block apart: one repeated box
            y, a, b = found[k]
            end = k + 1
            while (
                end < len(found)
                and found[end][0] - found[end - 1][0] == _BLOCK
                and found[end][1] - found[end - 1][1] == _BLOCK
                and found[end][2] - found[end - 1][2] == _BLOCK
            ):
                end += 1
            box(y, 1, a, b, ((end - k, _BLOCK, _BLOCK),))
            k = end


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

    def compact_copies(self) -> list[LogicalCopy]:
        k = self.offset  # zeros left and right of the diagonal x - y = Offset, Value on it
        runs = [(-1, -_FAR, k), (-2, k, k + 1), (-1, k + 1, _FAR)]
        return band_copies(self.output_tensor.sizes, runs, _align(self.output_tensor))

    def logical_copies(self) -> list[LogicalCopy]:
        return [box for c in self.compact_copies() for box in c.expanded()]


class DiagonalMatrix1Desc(OperatorDesc):
    """DML_DIAGONAL_MATRIX1_OPERATOR_DESC: OutputTensor[..., y, x] = Value where the
    diagonal x - y lies in [DiagonalFillBegin, DiagonalFillEnd) (outside [End, Begin) where
    Begin > End, the span inverted), else InputTensor[..., y, x], or 0 without an input
    (numpy.tril / triu, torch.tril / triu, ONNX Trilu, WebNN triangular, torch.eye).

    Lowered by `band_copies`: each row's runs of Value and of the rest (the input, or
    zeros) lie between diagonals; every element is written once.
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

    def runs(self) -> list[Run]:
        """Each row's three runs of columns between diagonals (source, edges): -1 Value,
        0 the input, -2 zeros (no input); Value's from Begin to End (outside them where the
        span is inverted)."""
        begin, end = self.diagonal_fill_begin, self.diagonal_fill_end
        rest = 0 if self.input_tensor is not None else -2
        if end >= begin:
            return [(rest, -_FAR, begin), (-1, begin, end), (rest, end, _FAR)]
        return [(-1, -_FAR, end), (rest, end, begin), (-1, begin, _FAR)]

    def compact_copies(self) -> list[LogicalCopy]:
        return band_copies(self.output_tensor.sizes, self.runs(), _align(self.output_tensor))

    def logical_copies(self) -> list[LogicalCopy]:
        return [box for c in self.compact_copies() for box in c.expanded()]


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
