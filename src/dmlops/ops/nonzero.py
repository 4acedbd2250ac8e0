"""DML_OPERATOR_NONZERO_COORDINATES: the count of an input's nonzero elements and their
coordinates, in ascending element order — a stream compaction (`dmlops.compaction`), the
third primitive beside strided and indexed copies."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from ..compaction import Compaction
from ..errors import InvalidDescriptorError
from ..plan import Layout, LogicalCopy, Plan, span
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import TYPES_8, OperatorDesc, SupportRow

__all__ = ["NonzeroCoordinatesDesc"]

_UINT32 = frozenset({DataType.UINT32})


def effective_rank(sizes: Sequence[int]) -> int:
    """The dimension count without the leading dimensions of size 1."""
    lead = next((d for d, n in enumerate(sizes) if n != 1), len(sizes))
    return len(sizes) - lead


class NonzeroCoordinatesDesc(OperatorDesc):
    """DML_NONZERO_COORDINATES_OPERATOR_DESC: OutputCountTensor = the number of nonzero
    elements of InputTensor (-0.0 is zero); OutputCoordinatesTensor's first rows their
    coordinates' last N entries, in ascending element order ({.., M, N}: M the input's
    element count, N from its effective rank up to its dimension count). Rows past the
    count are left undefined (dmlops leaves them as they were)."""

    OPERATOR = "NONZERO_COORDINATES"
    # DirectML's NONZERO_COORDINATES page (sdk-api, ns-directml-dml_nonzero_coordinates_
    # operator_desc.md): introduced in 3_0; 4 to 5 dimensions; InputTensor of 8 types, the
    # two outputs UINT32.
    SUPPORT = (SupportRow(FeatureLevel.FL_3_0, range(4, 6), TYPES_8),)

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_count_tensor: BufferTensorDesc,
        output_coordinates_tensor: BufferTensorDesc,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_count_tensor = output_count_tensor
        self.output_coordinates_tensor = output_coordinates_tensor

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputTensor", self.input_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [
            ("OutputCountTensor", self.output_count_tensor),
            ("OutputCoordinatesTensor", self.output_coordinates_tensor),
        ]

    def data_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        """The input alone: the outputs are UINT32 counts and coordinates, not its data."""
        return [("InputTensor", self.input_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("OutputCountTensor", self.output_count_tensor),
            ("OutputCoordinatesTensor", self.output_coordinates_tensor),
        ]

    def _allowed_types(self, name: str, row: SupportRow) -> frozenset[DataType]:
        return row.data_types if name == "InputTensor" else _UINT32

    @classmethod
    def output_sizes_for(
        cls, sizes: Sequence[int], columns: int | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(OutputCountTensor's, OutputCoordinatesTensor's) sizes for an input of `sizes`,
        `columns` (N) the effective rank by default."""
        rank = len(sizes)
        n = max(1, effective_rank(sizes)) if columns is None else columns  # (sizes are >= 1)
        return (1,) * rank, (*(1,) * (rank - 2), math.prod(sizes), n)

    def _check_fields(self) -> None:
        pass  # (no fields but the tensors)

    def carrier(
        self, level: FeatureLevel | int | str, element_size: int, own: DataType | None
    ) -> DataType | None:
        """None: the zero test reads values of the input's own type (-0.0 is zero), which
        no other type carries."""
        return None

    def _check_rules(self) -> None:
        inp, count, coords = (
            self.input_tensor,
            self.output_count_tensor,
            self.output_coordinates_tensor,
        )
        rank = inp.dimension_count
        for name, t in (("OutputCountTensor", count), ("OutputCoordinatesTensor", coords)):
            if t.dimension_count != rank:
                raise InvalidDescriptorError(
                    f"NONZERO_COORDINATES.{name}.DimensionCount is {t.dimension_count}: must "
                    f"equal InputTensor.DimensionCount {rank}"
                )
        if any(n != 1 for n in count.sizes):
            raise InvalidDescriptorError(
                f"NONZERO_COORDINATES.OutputCountTensor.Sizes is {list(count.sizes)}: a "
                "scalar, every size 1"
            )
        if rank < 2:
            return  # (the table names the dimension count)
        *lead, m, n = coords.sizes
        elements = math.prod(inp.sizes)
        low = effective_rank(inp.sizes)
        if any(k != 1 for k in lead) or m != elements:
            raise InvalidDescriptorError(
                f"NONZERO_COORDINATES.OutputCoordinatesTensor.Sizes is {list(coords.sizes)}: "
                f"must be {[*(1,) * (rank - 2), elements, 'N']} (M, the input's {elements} "
                "elements, rows)"
            )
        if not low <= n <= rank:
            raise InvalidDescriptorError(
                f"NONZERO_COORDINATES.OutputCoordinatesTensor.Sizes[{rank - 1}] is {n}: N must "
                f"be from the input's effective rank {low} to its DimensionCount {rank}"
            )

    def logical_copies(self) -> list[LogicalCopy]:
        return []  # (a compaction, added by `_finish`)

    @property
    def element_size(self) -> int:
        return 4  # (the plan writes UINT32s; the compaction reads the input's own type)

    def _finish(self, plan: Plan, li: Sequence[Layout], lo: Sequence[Layout]) -> Plan:
        inp = self.input_tensor
        element = np.dtype(inp.data_type.numpy_dtype)
        size = element.itemsize
        coords = self.output_coordinates_tensor.sizes
        *_, row_stride, column_stride = lo[1].strides
        compaction = Compaction(
            0,
            li[0].offset * size,
            tuple(li[0].strides),
            tuple(inp.sizes),
            element.str,
            0,
            lo[0].offset * 4,
            1,
            lo[1].offset * 4,
            row_stride,
            column_stride,
            coords[-1],
        )
        low, high = span(li[0].offset, tuple(inp.sizes), tuple(li[0].strides))
        count_low, count_high = span(lo[0].offset, (1,), (1,))
        c_low, c_high = span(lo[1].offset, tuple(coords[-2:]), (row_stride, column_stride))
        return dataclasses.replace(
            plan,
            input_spans=((low * size, (high + 1) * size),),
            output_spans=((count_low * 4, (count_high + 1) * 4), (c_low * 4, (c_high + 1) * 4)),
            compactions=(compaction,),
        )
