"""DML_OPERATOR_SLICE1: a window of the input, signed strides, partial outputs."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, FeatureLevel, check_int
from ._base import ALL_DIMS, TYPES_8, TYPES_11, OperatorDesc, SupportRow, UnaryDesc, uint_list

__all__ = ["Slice1Desc", "WindowDesc", "max_copied_elements"]


def max_copied_elements(window_size: int, window_stride: int) -> int:
    """MaxCopiedElements = 1 + (InputWindowSize - 1) / |InputWindowStride|."""
    return 1 + (window_size - 1) // abs(window_stride)


class WindowDesc(OperatorDesc):
    """Operators with SLICE1's window fields (SLICE1 and SLICE_GRAD): InputWindowOffsets,
    InputWindowSizes, InputWindowStrides over a windowed tensor, and a copied tensor of at most
    MaxCopiedElements per dimension."""

    def _set_window(
        self,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int],
        dimension_count: int | None,
    ) -> None:
        op = self.OPERATOR
        self.input_window_offsets = uint_list(offsets, f"{op}.InputWindowOffsets")
        self.input_window_sizes = uint_list(sizes, f"{op}.InputWindowSizes")
        self.input_window_strides = uint_list(strides, f"{op}.InputWindowStrides")
        self.dimension_count = (
            len(self.input_window_offsets) if dimension_count is None else int(dimension_count)
        )

    def _window_items(self) -> list[tuple[str, object]]:
        return [
            ("DimensionCount", self.dimension_count),
            ("InputWindowOffsets", list(self.input_window_offsets)),
            ("InputWindowSizes", list(self.input_window_sizes)),
            ("InputWindowStrides", list(self.input_window_strides)),
        ]

    def copy_start(self) -> tuple[int, ...]:
        """CopyStart: the window offset, moved to the window's end where the stride is negative."""
        return tuple(
            o + (s - 1 if t < 0 else 0)
            for o, s, t in zip(
                self.input_window_offsets,
                self.input_window_sizes,
                self.input_window_strides,
                strict=True,
            )
        )

    def max_copied_elements(self) -> tuple[int, ...]:
        """MaxCopiedElements per dimension."""
        return tuple(
            max_copied_elements(s, t)
            for s, t in zip(self.input_window_sizes, self.input_window_strides, strict=True)
        )

    def default_output_sizes(self) -> tuple[int, ...]:
        """MaxCopiedElements, after checking the window fields it is computed from."""
        self._check_fields()
        return self.max_copied_elements()

    def _check_fields(self) -> None:
        op = self.OPERATOR
        n = self.dimension_count
        for field, arr in (
            ("InputWindowOffsets", self.input_window_offsets),
            ("InputWindowSizes", self.input_window_sizes),
            ("InputWindowStrides", self.input_window_strides),
        ):
            self._check_count(n, len(arr), "DimensionCount", field)
        self._uint_array(self.input_window_offsets, "InputWindowOffsets")
        self._uint_array(self.input_window_sizes, "InputWindowSizes")
        for i, t in enumerate(self.input_window_strides):
            check_int(t, f"{op}.InputWindowStrides[{i}]")
            if t == 0:
                raise InvalidDescriptorError(
                    f"{op}.InputWindowStrides[{i}] is 0: strides may not be 0"
                )
        for i, s in enumerate(self.input_window_sizes):
            if s == 0:
                raise InvalidDescriptorError(
                    f"{op}.InputWindowSizes[{i}] is 0: the input window may not be empty"
                )

    def _check_window(
        self,
        windowed_name: str,
        windowed: BufferTensorDesc,
        copied_name: str,
        copied: BufferTensorDesc,
    ) -> None:
        """The window lies inside `windowed`; `copied` has at most MaxCopiedElements."""
        op = self.OPERATOR
        self._same_type(windowed_name, windowed, copied_name, copied)
        if self.dimension_count != windowed.dimension_count:
            raise InvalidDescriptorError(
                f"{op}.DimensionCount is {self.dimension_count}: "
                f"must equal {windowed_name}.DimensionCount {windowed.dimension_count}"
            )
        maxima = self.max_copied_elements()
        for i in range(self.dimension_count):
            o, s = self.input_window_offsets[i], self.input_window_sizes[i]
            if o + s > windowed.sizes[i]:
                raise InvalidDescriptorError(
                    f"{op}.InputWindowOffsets[{i}] is {o}: InputWindowOffsets[{i}] + "
                    f"InputWindowSizes[{i}] = {o + s} exceeds {windowed_name}.Sizes[{i}] "
                    f"{windowed.sizes[i]}"
                )
            if copied.sizes[i] > maxima[i]:
                raise InvalidDescriptorError(
                    f"{op}.{copied_name}.Sizes[{i}] is {copied.sizes[i]}: must be at most "
                    f"MaxCopiedElements[{i}] = 1 + ({s} - 1) / |{self.input_window_strides[i]}| "
                    f"= {maxima[i]}"
                )


class Slice1Desc(WindowDesc, UnaryDesc):
    """DML_SLICE1_OPERATOR_DESC: Output[c] = Input[CopyStart + InputWindowStrides * c].

    The seeds give tables for 2_1 and 3_0 only. At 4_1 SLICE1 gets the 64-bit
    types, as SLICE, SPLIT and JOIN do there (DirectML's newer reference lists
    the same 4_1 row for SLICE1).
    """

    OPERATOR = "SLICE1"
    # DirectML's SLICE1 page (ns-directml-dml_slice1_operator_desc, seeds 000/002/003) for 2_1
    # and 3_0; the 4_1 row (64-bit types) from the feature-level history.
    SUPPORT = (
        SupportRow(FeatureLevel.FL_2_1, range(4, 6), TYPES_8),
        SupportRow(FeatureLevel.FL_3_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        input_window_offsets: Sequence[int],
        input_window_sizes: Sequence[int],
        input_window_strides: Sequence[int],
        dimension_count: int | None = None,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self._set_window(
            input_window_offsets, input_window_sizes, input_window_strides, dimension_count
        )

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            *self._window_items(),
        ]

    def _check_rules(self) -> None:
        self._check_window("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.dimension_count
        return [
            LogicalCopy(
                0,
                self.copy_start(),
                self.input_window_strides,
                0,
                (0,) * n,
                self.output_tensor.sizes,
            )
        ]
