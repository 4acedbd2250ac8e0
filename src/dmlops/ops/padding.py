"""DML_OPERATOR_PADDING1: the input inflated on its edges with a constant, its edge values,
or its values mirrored (reflection, symmetric) or repeated (wrap)."""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence

from ..errors import InvalidDescriptorError, UnsupportedFeatureLevelError
from ..plan import ZERO, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, member_named
from ._base import (
    ALL_DIMS,
    TYPES_8,
    TYPES_11,
    SupportRow,
    UnaryDesc,
    float_field_bytes,
    scalar_bytes,
    uint_list,
)

__all__ = ["PaddingMode", "Padding1Desc", "PaddingDesc", "padding_runs"]


class PaddingMode(enum.IntEnum):
    """DML_PADDING_MODE, with DirectML's values."""

    CONSTANT = 0
    EDGE = 1
    REFLECTION = 2
    SYMMETRIC = 3  # since DML_FEATURE_LEVEL_3_0 (PADDING); PADDING1 has it from 5_0
    WRAP = 4  # since DML_FEATURE_LEVEL_6_4 (DirectML 1.15.0)

    @classmethod
    def parse(cls, value: object, operator: str = "PADDING1") -> PaddingMode:
        """A mode from its value, its name (either spelling) or ONNX's Pad mode name."""
        if isinstance(value, str):
            name = value.upper().removeprefix("DML_PADDING_MODE_")
            name = {"REFLECT": "REFLECTION"}.get(name, name)
            member = member_named(cls, name)
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 4:
            return cls(value)
        raise InvalidDescriptorError(
            f"{operator}.PaddingMode is {value!r}: not a DML_PADDING_MODE (CONSTANT 0, EDGE 1, "
            "REFLECTION 2, SYMMETRIC 3, WRAP 4)"
        )


_WRAP_LEVEL = FeatureLevel.FL_6_4


def _source_index(mode: PaddingMode, i: int, n: int) -> int | None:
    """The input index output position i (relative to the input's first element) reads along
    one dimension of n elements; None where the constant goes."""
    if 0 <= i < n:
        return i
    if mode is PaddingMode.CONSTANT:
        return None
    if mode is PaddingMode.EDGE or n == 1:  # one element mirrors or repeats into itself
        return min(max(i, 0), n - 1)
    if mode is PaddingMode.REFLECTION:  # fold on the edges, which are not repeated
        j = i % (2 * (n - 1))
        return j if j < n else 2 * (n - 1) - j
    if mode is PaddingMode.SYMMETRIC:  # fold beyond the edges, which are repeated
        j = i % (2 * n)
        return j if j < n else 2 * n - 1 - j
    return i % n  # WRAP


def padding_runs(
    mode: PaddingMode, size: int, start: int, end: int
) -> list[tuple[int, int, int | None, int]]:
    """One dimension's output as runs (output start, count, input start or None for the
    constant, input step in -1/0/1), in order; the input's own run starts where it starts
    in the output and ends where it ends (its first element is not the last of a mirror or
    of an edge's repeats: the middle is the input whole, a chunk of it a chunk of the input)."""
    runs: list[tuple[int, int, int | None, int]] = []
    total = start + size + end
    o = 0
    while o < total:
        src = _source_index(mode, o - start, size)
        if runs and o not in (start, start + size):
            first, count, at, step = runs[-1]
            if src is None and at is None:
                runs[-1] = (first, count + 1, None, 0)
                o += 1
                continue
            if src is not None and at is not None:
                if count == 1 and src - at in (-1, 0, 1):
                    runs[-1] = (first, 2, at, src - at)
                    o += 1
                    continue
                if count > 1 and src == at + step * count:
                    # inside the input a rising run takes the rest of it at once (the loop
                    # is over the padding alone: O(size) Python calls took 22 ms a call
                    # for 32,768 rows, on every dask graph of a pad)
                    more = start + size - o if step == 1 and 0 <= o - start < size else 1
                    runs[-1] = (first, count + more, at, step)
                    o += more
                    continue
        runs.append((o, 1, src, 1 if src is not None else 0))
        o += 1
    return runs


class Padding1Desc(UnaryDesc):
    """DML_PADDING1_OPERATOR_DESC: OutputTensor.Sizes[i] = InputTensor.Sizes[i] +
    StartPadding[i] + EndPadding[i]; the input in the middle, the padding by PaddingMode.

    Lowered to strided copies of input runs with steps -1, 0 or 1 per dimension (mirrors,
    edges) and, for CONSTANT, a fill of PaddingValue around the input.
    """

    OPERATOR = "PADDING1"
    # DirectML's PADDING1 page (MicrosoftDocs/sdk-api, ns-directml-dml_padding1_operator_desc.md):
    # introduced in 5_0, 1 to 8 dimensions, 11 types; DML_PADDING_MODE_WRAP from 6_4
    # (DirectML 1.15.0's release notes).
    SUPPORT: tuple[SupportRow, ...] = (SupportRow(FeatureLevel.FL_5_0, ALL_DIMS, TYPES_11),)

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        padding_mode: PaddingMode | int | str,
        padding_value_data_type: DataType | int | str | None,
        padding_value: float | int,
        start_padding: Sequence[int],
        end_padding: Sequence[int],
        dimension_count: int | None = None,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        op = self.OPERATOR
        self.padding_mode = PaddingMode.parse(padding_mode, op)
        self.padding_value_data_type = (
            output_tensor.data_type
            if padding_value_data_type is None
            else DataType.parse(padding_value_data_type, f"{op}.PaddingValueDataType")
        )
        self.padding_value = padding_value
        self.start_padding = uint_list(start_padding, f"{op}.StartPadding")
        self.end_padding = uint_list(end_padding, f"{op}.EndPadding")
        self.dimension_count = (
            len(self.start_padding) if dimension_count is None else int(dimension_count)
        )

    @classmethod
    def output_sizes_for(
        cls, sizes: Sequence[int], start: Sequence[int], end: Sequence[int]
    ) -> tuple[int, ...]:
        """InputTensor.Sizes + StartPadding + EndPadding (where the lengths agree)."""
        return tuple(int(n) + int(a) + int(b) for n, a, b in zip(sizes, start, end, strict=False))

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("PaddingMode", self.padding_mode.name),
            ("PaddingValueDataType", self.padding_value_data_type.name),
            ("PaddingValue", self.padding_value),
            ("DimensionCount", self.dimension_count),
            ("StartPadding", list(self.start_padding)),
            ("EndPadding", list(self.end_padding)),
        ]

    def validate(self, feature_level: FeatureLevel | int | str | None = None) -> None:
        super().validate(feature_level)
        level = (
            FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)
        )
        if self.padding_mode is PaddingMode.WRAP and level < _WRAP_LEVEL:
            raise UnsupportedFeatureLevelError(
                f"{self.OPERATOR}.PaddingMode is WRAP: DML_PADDING_MODE_WRAP needs "
                f"{_WRAP_LEVEL.dml_name}; the feature level is {level.dml_name}"
            )

    def _check_fields(self) -> None:
        n = self.dimension_count
        self._check_count(n, len(self.start_padding), "DimensionCount", "StartPadding")
        self._check_count(n, len(self.end_padding), "DimensionCount", "EndPadding")
        self._uint_array(self.start_padding, "StartPadding")
        self._uint_array(self.end_padding, "EndPadding")
        self.value_bytes()  # raises where the value does not fit its data type

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        if self.dimension_count != inp.dimension_count:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.DimensionCount is {self.dimension_count}: must equal "
                f"InputTensor.DimensionCount {inp.dimension_count}"
            )
        if self.padding_value_data_type != out.data_type:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.PaddingValueDataType is {self.padding_value_data_type.name}: "
                f"must equal OutputTensor.DataType {out.data_type.name}"
            )
        for i, (n, a, b, o) in enumerate(
            zip(inp.sizes, self.start_padding, self.end_padding, out.sizes, strict=True)
        ):
            if o != n + a + b:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.OutputTensor.Sizes[{i}] is {o}: must be "
                    f"InputTensor.Sizes[{i}] + StartPadding[{i}] + EndPadding[{i}] = "
                    f"{n} + {a} + {b} = {n + a + b}"
                )

    def value_bytes(self) -> bytes:
        """PaddingValue as one element of PaddingValueDataType."""
        if self._carried is not None and self._carried[1] is not None:
            return self._carried[1]  # the value encoded as the data's own type
        return scalar_bytes(
            self.padding_value, self.padding_value_data_type, f"{self.OPERATOR}.PaddingValue"
        )

    def _own_fills(self) -> tuple[bytes, ...]:
        return (self.value_bytes(),) if self.padding_mode is PaddingMode.CONSTANT else ()

    def logical_copies(self) -> list[LogicalCopy]:
        """The input's runs per dimension, crossed; for CONSTANT, the input once and the
        constant as disjoint boxes around it."""
        sizes = self.input_tensor.sizes
        out = self.output_tensor.sizes
        n = len(sizes)
        if self.padding_mode is PaddingMode.CONSTANT:
            start = tuple(self.start_padding)
            copies = [LogicalCopy(0, (0,) * n, (1,) * n, 0, start, sizes)]
            for d in range(n):
                before = [(a, m) for a, m in zip(start[:d], sizes[:d], strict=True)]
                after = [(0, m) for m in out[d + 1 :]]
                a, m = self.start_padding[d], sizes[d]
                for lo, count in ((0, a), (a + m, self.end_padding[d])):
                    if count:
                        dims = [*before, (lo, count), *after]
                        copies.append(
                            LogicalCopy(
                                ZERO,
                                (0,) * n,
                                (0,) * n,
                                0,
                                tuple(s for s, _ in dims),
                                tuple(c for _, c in dims),
                            )
                        )
            return copies
        runs = [
            padding_runs(self.padding_mode, m, a, b)
            for m, a, b in zip(sizes, self.start_padding, self.end_padding, strict=True)
        ]
        return [
            LogicalCopy(
                0,
                tuple(r[2] or 0 for r in combo),
                tuple(r[3] for r in combo),
                0,
                tuple(r[0] for r in combo),
                tuple(r[1] for r in combo),
            )
            for combo in itertools.product(*runs)
        ]


_SYMMETRIC_LEVEL = FeatureLevel.FL_3_0


class PaddingDesc(Padding1Desc):
    """DML_PADDING_OPERATOR_DESC, the first version (DML_FEATURE_LEVEL_1_0): as PADDING1, with
    PaddingValue a FLOAT converted to the tensors' type (a float type rounds it to nearest;
    an integer type truncates it toward zero, as the page says, and dmlops saturates a value
    past the type's range, where the page is silent), the modes CONSTANT, EDGE, REFLECTION
    and SYMMETRIC (from DML_FEATURE_LEVEL_3_0; WRAP is PADDING1's alone)."""

    OPERATOR = "PADDING"
    # DirectML's PADDING page (MicrosoftDocs/sdk-api, ns-directml-dml_padding_operator_desc.md)
    SUPPORT = (
        SupportRow(
            FeatureLevel.FL_1_0, range(4, 6), frozenset({DataType.FLOAT32, DataType.FLOAT16})
        ),
        SupportRow(FeatureLevel.FL_2_1, range(4, 6), TYPES_8),
        SupportRow(FeatureLevel.FL_3_1, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_5_0, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        padding_mode: PaddingMode | int | str,
        padding_value: float,
        start_padding: Sequence[int],
        end_padding: Sequence[int],
        dimension_count: int | None = None,
    ) -> None:
        super().__init__(
            input_tensor,
            output_tensor,
            padding_mode,
            None,
            padding_value,
            start_padding,
            end_padding,
            dimension_count,
        )

    def _field_items(self) -> list[tuple[str, object]]:
        return [(k, v) for k, v in super()._field_items() if k != "PaddingValueDataType"]

    def validate(self, feature_level: FeatureLevel | int | str | None = None) -> None:
        level = (
            FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)
        )
        if self.padding_mode is PaddingMode.WRAP:
            raise InvalidDescriptorError(
                "PADDING.PaddingMode is WRAP: PADDING takes CONSTANT, EDGE, REFLECTION and "
                "SYMMETRIC (DML_PADDING_MODE_WRAP is PADDING1's)"
            )
        if self.padding_mode is PaddingMode.SYMMETRIC and level < _SYMMETRIC_LEVEL:
            raise UnsupportedFeatureLevelError(
                f"PADDING.PaddingMode is SYMMETRIC: DML_PADDING_MODE_SYMMETRIC needs "
                f"{_SYMMETRIC_LEVEL.dml_name}; the feature level is {level.dml_name}"
            )
        super().validate(level)

    def value_bytes(self) -> bytes:
        """PaddingValue, a FLOAT, as one element of the tensors' type."""
        if self._carried is not None and self._carried[1] is not None:
            return self._carried[1]
        return float_field_bytes(
            self.padding_value, self.padding_value_data_type, "PADDING.PaddingValue"
        )
