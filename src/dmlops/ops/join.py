"""DML_OPERATOR_JOIN: concatenate InputCount tensors along an axis."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc
from ._axis import JOIN_SUPPORT, check_pieces, piece_starts
from ._base import OperatorDesc

__all__ = ["JoinDesc"]


class JoinDesc(OperatorDesc):
    """DML_JOIN_OPERATOR_DESC: the inverse of SPLIT.

    Its tensor-support table differs from SPLIT's: 4 to 5 dimensions at 3_0,
    1 to 8 only from 3_1.
    """

    OPERATOR = "JOIN"
    EMPTY_RULES = True
    SUPPORT = JOIN_SUPPORT

    def __init__(
        self,
        input_tensors: Sequence[BufferTensorDesc],
        output_tensor: BufferTensorDesc,
        axis: int,
        input_count: int | None = None,
    ) -> None:
        self.input_tensors = tuple(input_tensors)
        self.output_tensor = output_tensor
        self.axis = int(axis)
        self.input_count = len(self.input_tensors) if input_count is None else int(input_count)

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"InputTensors[{k}]", t) for k, t in enumerate(self.input_tensors)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputCount", self.input_count),
            ("InputTensors", list(self.input_tensors)),
            ("OutputTensor", self.output_tensor),
            ("Axis", self.axis),
        ]

    def _check_fields(self) -> None:
        self._check_count(self.input_count, len(self.input_tensors), "InputCount", "InputTensors")
        if self.input_count == 0:
            raise InvalidDescriptorError("JOIN.InputCount is 0: must be greater than 0")

    def _check_rules(self) -> None:
        check_pieces(
            "JOIN",
            "OutputTensor",
            self.output_tensor,
            "InputTensors",
            self.input_tensors,
            self.axis,
        )

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.output_tensor.dimension_count
        copies = []
        for k, (inp, start) in enumerate(
            zip(self.input_tensors, piece_starts(self.input_tensors, self.axis), strict=True)
        ):
            origin = tuple(start if d == self.axis else 0 for d in range(n))
            copies.append(LogicalCopy(k, (0,) * n, (1,) * n, 0, origin, inp.sizes))
        return copies
