"""DML_OPERATOR_CAST: each element converted to the output's data type (the conversion
rules: `dmlops.conversion`). Lowered to one converting copy: a plan whose copies read
elements of the input's type and write the output's (`Plan.conversion`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InvalidDescriptorError
from ..plan import Layout, LogicalCopy, Plan, compose
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import TYPES_11, SupportRow, UnaryDesc

__all__ = ["CastDesc"]

_FIRST = frozenset(
    {
        DataType.FLOAT32,
        DataType.FLOAT16,
        DataType.INT16,
        DataType.INT8,
        DataType.UINT16,
        DataType.UINT8,
    }
)
_WITH_64 = TYPES_11 - {DataType.FLOAT64}


class CastDesc(UnaryDesc):
    """DML_CAST_OPERATOR_DESC: OutputTensor[c] = cast(InputTensor[c]), the two of the same
    sizes and any two types of the table."""

    OPERATOR = "CAST"
    # DirectML's CAST page (sdk-api, ns-directml-dml_cast_operator_desc.md): introduced in
    # 1_0 (4 dimensions of FLOAT32, FLOAT16, INT16, INT8, UINT16, UINT8 — its table lists no
    # 32-bit integers there); 4 dimensions of 10 types (no FLOAT64) from 3_0; 1 to 8 from
    # 3_1; FLOAT64 from 4_1.
    SUPPORT = (
        SupportRow(FeatureLevel.FL_1_0, range(4, 5), _FIRST),
        SupportRow(FeatureLevel.FL_3_0, range(4, 5), _WITH_64),
        SupportRow(FeatureLevel.FL_3_1, range(1, 9), _WITH_64),
        SupportRow(FeatureLevel.FL_4_1, range(1, 9), TYPES_11),
    )
    EMPTY_RULES = True

    def __init__(self, input_tensor: BufferTensorDesc, output_tensor: BufferTensorDesc) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor

    def _check_fields(self) -> None:
        pass  # (no fields but the tensors)

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        if out.dimension_count != inp.dimension_count:
            raise InvalidDescriptorError(
                f"CAST.OutputTensor.DimensionCount is {out.dimension_count}: must equal "
                f"InputTensor.DimensionCount {inp.dimension_count}"
            )
        if tuple(out.sizes) != tuple(inp.sizes):
            raise InvalidDescriptorError(
                f"CAST.OutputTensor.Sizes is {list(out.sizes)}: must equal InputTensor.Sizes "
                f"{list(inp.sizes)}"
            )

    def data_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        """None: CAST converts its tensors' elements (of two types), it does not move one
        type's bits (the layers above describe each tensor by its own type)."""
        return []

    def carrier(
        self, level: FeatureLevel | int | str, element_size: int, own: DataType | None
    ) -> DataType | None:
        """None: a conversion reads the values of its types, which no other type carries."""
        return None

    def logical_copies(self) -> list[LogicalCopy]:
        n = self.input_tensor.dimension_count
        zeros, ones = (0,) * n, (1,) * n
        return [LogicalCopy(0, zeros, ones, 0, zeros, tuple(self.input_tensor.sizes))]

    def lower(
        self,
        input_layouts: Sequence[Layout] | None = None,
        output_layouts: Sequence[Layout] | None = None,
    ) -> Plan:
        """One converting copy: composed in elements, then each side's offsets and spans
        in its own type's bytes."""
        li = list(input_layouts) if input_layouts else [Layout.of_desc(self.input_tensor)]
        lo = list(output_layouts) if output_layouts else [Layout.of_desc(self.output_tensor)]
        elements = compose(1, self.logical_copies(), li, lo)
        source = self.input_tensor.data_type.element_size
        target = self.output_tensor.data_type.element_size
        copies = tuple(
            type(c)(
                c.src,
                c.src_offset * source,
                c.src_strides,
                c.dst,
                c.dst_offset * target,
                c.dst_strides,
                c.shape,
            )
            for c in elements.copies
        )
        ins = tuple((lo_ * source, hi * source) for lo_, hi in elements.input_spans)
        outs = tuple((lo_ * target, hi * target) for lo_, hi in elements.output_spans)
        conversion = (
            np.dtype(self.input_tensor.data_type.numpy_dtype).str,
            np.dtype(self.output_tensor.data_type.numpy_dtype).str,
        )
        return Plan(target, copies, ins, outs, conversion=conversion)
