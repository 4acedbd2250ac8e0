"""DML_OPERATOR_SLICE_GRAD: SLICE1's backward pass. The input gradient lands where SLICE1
read its input; every other element of the output gradient is zero."""

from __future__ import annotations

from collections.abc import Sequence

from ..plan import ZERO, LogicalCopy
from ..tensor import BufferTensorDesc, FeatureLevel
from ._base import ALL_DIMS, TYPES_8, TYPES_11, SupportRow
from .slice1 import WindowDesc

__all__ = ["SliceGradDesc"]

_Box = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # start, step, shape


class SliceGradDesc(WindowDesc):
    """DML_SLICE_GRAD_OPERATOR_DESC:
    OutputGradient[CopyStart + InputWindowStrides * c] = InputGradient[c], zeros elsewhere.

    The page's struct declares InputWindowStrides as INT, its field text as UINT; negative
    strides flip the window as in SLICE1, so they are signed here (and may not be 0).
    """

    OPERATOR = "SLICE_GRAD"
    # DirectML's SLICE_GRAD page (MicrosoftDocs/sdk-api,
    # ns-directml-dml_slice_grad_operator_desc.md): 3_0, 1 to 8 dimensions, 8 types; the 4_1
    # row (64-bit types) from the feature-level history (MicrosoftDocs/windows-ai-docs,
    # dml-feature-level-history.md), which lists SLICE_GRAD among the operators extended there.
    SUPPORT = (
        SupportRow(FeatureLevel.FL_3_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_gradient_tensor: BufferTensorDesc,
        output_gradient_tensor: BufferTensorDesc,
        input_window_offsets: Sequence[int],
        input_window_sizes: Sequence[int],
        input_window_strides: Sequence[int],
        dimension_count: int | None = None,
    ) -> None:
        self.input_gradient_tensor = input_gradient_tensor
        self.output_gradient_tensor = output_gradient_tensor
        self._set_window(
            input_window_offsets, input_window_sizes, input_window_strides, dimension_count
        )

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputGradientTensor", self.input_gradient_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputGradientTensor", self.output_gradient_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputGradientTensor", self.input_gradient_tensor),
            ("OutputGradientTensor", self.output_gradient_tensor),
            *self._window_items(),
        ]

    def _check_rules(self) -> None:
        self._check_window(
            "OutputGradientTensor",
            self.output_gradient_tensor,
            "InputGradientTensor",
            self.input_gradient_tensor,
        )

    def _progressions(self) -> list[tuple[int, int, int]]:
        """Per dimension, the written output positions as (first, step, count), ascending."""
        found = []
        sizes = self.input_gradient_tensor.sizes
        for start, t, m in zip(self.copy_start(), self.input_window_strides, sizes, strict=True):
            first = start if t > 0 else start + t * (m - 1)
            found.append((first, abs(t), m))
        return found

    def zero_boxes(self) -> list[_Box]:
        """Disjoint boxes (start, step, shape) of the output gradient that no input gradient
        element reaches: along each dimension d, positions outside the written progression,
        with earlier dimensions on the progression and later ones whole."""
        sizes = self.output_gradient_tensor.sizes
        lines = self._progressions()
        boxes: list[_Box] = []
        for d, (first, step, count) in enumerate(lines):
            last = first + step * (count - 1)
            runs: list[tuple[int, int, int]] = []  # (start, step, count) along d
            if first > 0:
                runs.append((0, 1, first))
            # where a whole step fits after the last written element, each phase between
            # written elements runs `count` long (as long as the written one: the engine
            # then writes both into each row in one sweep) and the tail starts a step on
            tail = last + step if step > 1 and count > 1 and last + step <= sizes[d] else last + 1
            if tail < sizes[d]:
                runs.append((tail, 1, sizes[d] - tail))
            if step > 1 and count > 1:
                phase = count if tail > last + 1 else count - 1
                if step - 1 <= count - 1:  # one run per phase k between written elements
                    runs += [(first + k, step, phase) for k in range(1, step)]
                else:  # one contiguous gap after each written element
                    runs += [(first + step * j + 1, 1, step - 1) for j in range(phase)]
            before = [(f, s, c) for f, s, c in lines[:d]]
            after = [(0, 1, sizes[e]) for e in range(d + 1, len(sizes))]
            for run in runs:
                dims = [*before, run, *after]
                boxes.append(
                    (
                        tuple(f for f, _, _ in dims),
                        tuple(s for _, s, _ in dims),
                        tuple(c for _, _, c in dims),
                    )
                )
        return boxes

    def _own_fills(self) -> tuple[bytes, ...]:
        return (bytes(self.element_size),)  # ZERO: all bits 0

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.dimension_count
        copies = [
            LogicalCopy(
                0,
                (0,) * n,
                (1,) * n,
                0,
                self.copy_start(),
                self.input_gradient_tensor.sizes,
                self.input_window_strides,
            )
        ]
        for start, step, shape in reversed(self.zero_boxes()):  # (the innermost's first:
            # they lie in the rows of the copy before them, whose sweep may write them too)
            copies.append(LogicalCopy(ZERO, (0,) * n, (0,) * n, 0, start, shape, step))
        return copies
