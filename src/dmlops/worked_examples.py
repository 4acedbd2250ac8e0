"""The six worked examples of DirectML's reference pages (the seeds), as data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .ops import OperatorDesc, Slice1Desc, SliceDesc, SplitDesc
from .tensor import BufferTensorDesc, DataType

__all__ = ["WorkedExample", "WORKED_EXAMPLES", "input_a", "input_b"]


def input_a() -> np.ndarray:
    """Sizes {1,1,4,4} FLOAT32 holding 1..16."""
    return np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def input_b() -> np.ndarray:
    """Sizes {1,1,6,2} FLOAT32 holding 1..12."""
    return np.arange(1, 13, dtype=np.float32).reshape(1, 1, 6, 2)


def _t(*sizes: int) -> BufferTensorDesc:
    return BufferTensorDesc(DataType.FLOAT32, sizes)


@dataclass(frozen=True)
class WorkedExample:
    """A seed page's example: its title, input, descriptor and expected outputs."""

    title: str
    make_input: Callable[[], np.ndarray]
    desc: OperatorDesc
    expected: tuple[list[object], ...]

    def expected_arrays(self) -> list[np.ndarray]:
        """Expected outputs shaped as the descriptor's output tensors."""
        return [
            np.array(e, dtype=np.float32).reshape(t.sizes)
            for e, (_, t) in zip(self.expected, self.desc.output_fields(), strict=True)
        ]


WORKED_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        "SLICE example 1: contiguous slice",
        input_a,
        SliceDesc(_t(1, 1, 4, 4), _t(1, 1, 3, 2), [0, 0, 1, 2], [1, 1, 3, 2], [1, 1, 1, 1]),
        ([[7, 8], [11, 12], [15, 16]],),
    ),
    WorkedExample(
        "SLICE example 2: strided slice",
        input_a,
        SliceDesc(_t(1, 1, 4, 4), _t(1, 1, 2, 2), [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3]),
        ([[5, 8], [13, 16]],),
    ),
    WorkedExample(
        "SLICE1 example 1: strided slice with positive strides",
        input_a,
        Slice1Desc(_t(1, 1, 4, 4), _t(1, 1, 2, 2), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2]),
        ([[2, 4], [10, 12]],),
    ),
    WorkedExample(
        "SLICE1 example 2: strided slice with negative strides",
        input_a,
        Slice1Desc(_t(1, 1, 4, 4), _t(1, 1, 2, 2), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2]),
        ([[14, 16], [6, 8]],),
    ),
    WorkedExample(
        "SPLIT example 1: split along axis 2",
        input_b,
        SplitDesc(_t(1, 1, 6, 2), [_t(1, 1, 2, 2), _t(1, 1, 1, 2), _t(1, 1, 3, 2)], 2),
        ([[1, 2], [3, 4]], [[5, 6]], [[7, 8], [9, 10], [11, 12]]),
    ),
    WorkedExample(
        "SPLIT example 2: split along axis 3",
        input_b,
        SplitDesc(_t(1, 1, 6, 2), [_t(1, 1, 6, 1), _t(1, 1, 6, 1)], 3),
        ([[1], [3], [5], [7], [9], [11]], [[2], [4], [6], [8], [10], [12]]),
    ),
)
