"""DML_OPERATOR_SPLIT: cut the input along an axis into OutputCount tensors."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc
from ._axis import SPLIT_SUPPORT, check_pieces, piece_starts
from ._base import OperatorDesc

__all__ = ["SplitDesc"]


class SplitDesc(OperatorDesc):
    """DML_SPLIT_OPERATOR_DESC: output k takes the input's next Sizes[Axis] slab along Axis."""

    OPERATOR = "SPLIT"
    EMPTY_RULES = True
    SUPPORT = SPLIT_SUPPORT

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensors: Sequence[BufferTensorDesc],
        axis: int,
        output_count: int | None = None,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensors = tuple(output_tensors)
        self.axis = int(axis)
        self.output_count = len(self.output_tensors) if output_count is None else int(output_count)

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputTensor", self.input_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"OutputTensors[{k}]", t) for k, t in enumerate(self.output_tensors)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("OutputCount", self.output_count),
            ("OutputTensors", list(self.output_tensors)),
            ("Axis", self.axis),
        ]

    def _check_fields(self) -> None:
        self._check_count(
            self.output_count, len(self.output_tensors), "OutputCount", "OutputTensors"
        )
        if self.output_count == 0:
            raise InvalidDescriptorError("SPLIT.OutputCount is 0: must be greater than 0")

    def _check_rules(self) -> None:
        check_pieces(
            "SPLIT",
            "InputTensor",
            self.input_tensor,
            "OutputTensors",
            self.output_tensors,
            self.axis,
        )

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.input_tensor.dimension_count
        copies = []
        for k, (out, start) in enumerate(
            zip(self.output_tensors, piece_starts(self.output_tensors, self.axis), strict=True)
        ):
            origin = tuple(start if d == self.axis else 0 for d in range(n))
            copies.append(LogicalCopy(0, origin, (1,) * n, k, (0,) * n, out.sizes))
        return copies
