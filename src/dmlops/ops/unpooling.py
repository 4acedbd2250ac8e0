"""DML_OPERATOR_MAX_UNPOOLING: a max-pooling's values scattered back into a zeroed output at
the positions its indices name (the output read as one contiguous array)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import IndexAxis, IndexedCopy
from ..plan import ZERO, Layout, LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides
from ._base import SupportRow
from ._indexed import IndexedDesc, aligned, tensor_span

__all__ = ["MaxUnpoolingDesc"]

FL = FeatureLevel
_TEN = frozenset(
    {
        DataType.FLOAT32,
        DataType.FLOAT16,
        DataType.INT64,
        DataType.INT32,
        DataType.INT16,
        DataType.INT8,
        DataType.UINT64,
        DataType.UINT32,
        DataType.UINT16,
        DataType.UINT8,
    }
)


class MaxUnpoolingDesc(IndexedDesc):
    """DML_MAX_UNPOOLING_OPERATOR_DESC: OutputTensor zeroed, then OutputTensor as a
    contiguous array [IndicesTensor[c]] = InputTensor[c] for every c (of two values named to
    one element, the later in index order wins, as a scatter's)."""

    OPERATOR = "MAX_UNPOOLING"
    # DirectML's MAX_UNPOOLING page (sdk-api, ns-directml-dml_max_unpooling_operator_desc.md):
    # introduced in 3_0; 4 dimensions; FLOAT32 and FLOAT16 with UINT32 indices, from 5_0 ten
    # types (no FLOAT64) with UINT32 or UINT64 indices.
    SUPPORT = (
        SupportRow(FL.FL_3_0, range(4, 5), frozenset({DataType.FLOAT32, DataType.FLOAT16})),
        SupportRow(FL.FL_5_0, range(4, 5), _TEN),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        indices_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
    ) -> None:
        self.input_tensor = input_tensor
        self.indices_tensor = indices_tensor
        self.output_tensor = output_tensor

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputTensor", self.input_tensor), ("IndicesTensor", self.indices_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            ("InputTensor", self.input_tensor),
            ("IndicesTensor", self.indices_tensor),
            ("OutputTensor", self.output_tensor),
        ]

    @staticmethod
    def index_types(level: FeatureLevel) -> frozenset[DataType]:
        """IndicesTensor's types at `level`: UINT32, and UINT64 from 5_0."""
        if level >= FL.FL_5_0:
            return frozenset({DataType.UINT32, DataType.UINT64})
        return frozenset({DataType.UINT32})

    def _allowed_types(self, name: str, row: SupportRow) -> frozenset[DataType]:
        return self.index_types(row.level) if name == self.INDEX_FIELD else row.data_types

    def _check_fields(self) -> None:
        pass  # (no field but its tensors)

    def _check_rules(self) -> None:
        self._same_type("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)
        self._check_sizes("IndicesTensor", self.indices_tensor, self.input_tensor.sizes)
        if self.output_tensor.dimension_count != self.input_tensor.dimension_count:
            raise InvalidDescriptorError(
                f"MAX_UNPOOLING.OutputTensor.DimensionCount is "
                f"{self.output_tensor.dimension_count}: must equal InputTensor.DimensionCount "
                f"{self.input_tensor.dimension_count}"
            )

    def _own_fills(self) -> tuple[bytes, ...]:
        return (bytes(self.element_size),)  # ZERO: all bits 0

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.output_tensor.dimension_count
        zeros = (0,) * n
        return [LogicalCopy(ZERO, zeros, zeros, 0, zeros, tuple(self.output_tensor.sizes))]

    def indexed_copies(self, li: Sequence[Layout], lo: Sequence[Layout]) -> list[IndexedCopy]:
        sizes = tuple(self.output_tensor.sizes)
        if tuple(lo[0].strides) != packed_strides(sizes):
            raise InvalidDescriptorError(
                f"MAX_UNPOOLING.OutputTensor.Strides are {list(lo[0].strides)}: the indices "
                "name positions of the output as one contiguous array; dmlops scatters into "
                "a packed output"
            )
        total = math.prod(sizes)
        size = self.element_size
        shape = tuple(self.input_tensor.sizes)
        itype = self.indices_tensor.data_type
        return [
            IndexedCopy(
                label="MAX_UNPOOLING.IndicesTensor",
                src=0,
                src_offset=li[0].offset * size,
                src_strides=aligned(li[0].strides, len(shape)),
                dst=0,
                dst_offset=lo[0].offset * size,
                dst_strides=(0,) * len(shape),
                shape=shape,
                index=1,
                index_type=itype,
                index_offset=li[1].offset * itype.element_size,
                index_strides=aligned(li[1].strides, len(shape)),
                tuple_stride=0,
                axes=(IndexAxis(total, 1, 1),),
                scatter=True,
                indexed_span=tensor_span(self.output_tensor, lo[0], size),
                negative_indices=False,
                slot_strides=(0,) * len(shape),
                slot_count=total,
            )
        ]
