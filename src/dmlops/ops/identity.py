"""DML_OPERATOR_ELEMENT_WISE_IDENTITY: each element of the input copied to the output, the
two tensors' strides free (DirectML's layout changes: a transpose is an identity between
two tensor descriptions)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..errors import InvalidDescriptorError
from ..plan import Layout, LogicalCopy, Plan
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import ALL_DIMS, TYPES_8, TYPES_11, SupportRow, UnaryDesc

__all__ = ["ElementWiseIdentityDesc"]


class ElementWiseIdentityDesc(UnaryDesc):
    """DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC: OutputTensor[c] = InputTensor[c], the same
    sizes, each through its own strides. ScaleBias (x * scale + bias) is arithmetic, outside
    dmlops' data movement: a descriptor that has one is refused by name."""

    OPERATOR = "ELEMENT_WISE_IDENTITY"
    IN_PLACE = True  # (its page: the output may alias the input during binding)
    # DirectML's ELEMENT_WISE_IDENTITY page (sdk-api, ns-directml-dml_element_wise_identity_
    # operator_desc.md): introduced in 1_0.
    SUPPORT = (
        SupportRow(
            FeatureLevel.FL_1_0, range(4, 6), frozenset({DataType.FLOAT32, DataType.FLOAT16})
        ),
        SupportRow(FeatureLevel.FL_2_1, range(4, 6), TYPES_8),
        SupportRow(FeatureLevel.FL_3_0, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        scale_bias: Sequence[float] | None = None,
    ) -> None:
        """`scale_bias`: DML_SCALE_BIAS as (Scale, Bias), or None (the field's null)."""
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.scale_bias = None if scale_bias is None else tuple(float(v) for v in scale_bias)

    def _field_items(self) -> list[tuple[str, object]]:
        items = super()._field_items()
        if self.scale_bias is not None:
            scale, bias = self.scale_bias
            items.append(("ScaleBias", {"Scale": scale, "Bias": bias}))
        return items

    def _check_fields(self) -> None:
        if self.scale_bias is None:
            return
        if len(self.scale_bias) != 2:
            raise InvalidDescriptorError(
                f"ELEMENT_WISE_IDENTITY.ScaleBias is {list(self.scale_bias)}: a DML_SCALE_BIAS "
                "is (Scale, Bias)"
            )
        for name, v in zip(("Scale", "Bias"), self.scale_bias, strict=True):
            if not np.isfinite(np.float32(v)):
                raise InvalidDescriptorError(
                    f"ELEMENT_WISE_IDENTITY.ScaleBias.{name} is {v!r}: must be a finite FLOAT"
                )

    def carrier(
        self, level: FeatureLevel | int | str, element_size: int, own: DataType | None
    ) -> DataType | None:
        """None with a ScaleBias (arithmetic in the data's own type, which no other type
        carries); the common carrier otherwise."""
        if self.scale_bias is not None:
            return None
        return super().carrier(level, element_size, own)

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        if tuple(out.sizes) != tuple(inp.sizes):
            raise InvalidDescriptorError(
                f"ELEMENT_WISE_IDENTITY.OutputTensor.Sizes is {list(out.sizes)}: must equal "
                f"InputTensor.Sizes {list(inp.sizes)}"
            )
        if self.scale_bias is not None and np.dtype(inp.data_type.numpy_dtype).kind != "f":
            raise InvalidDescriptorError(
                f"ELEMENT_WISE_IDENTITY.ScaleBias is given for {inp.data_type.name} tensors: "
                "x * Scale + Bias is float arithmetic (FLOAT16, FLOAT32, FLOAT64)"
            )

    def logical_copies(self) -> list[LogicalCopy]:
        sizes = tuple(self.input_tensor.sizes)
        n = len(sizes)
        return [LogicalCopy(0, (0,) * n, (1,) * n, 0, (0,) * n, sizes)]

    def lower(
        self,
        input_layouts: Sequence[Layout] | None = None,
        output_layouts: Sequence[Layout] | None = None,
    ) -> Plan:
        """The copy; with a ScaleBias, a converting copy of the type to itself that applies
        it (`Plan.scale_bias`, the rounding `dmlops.conversion.scaled` states)."""
        plan = super().lower(input_layouts, output_layouts)
        if self.scale_bias is None:
            return plan
        kind = np.dtype(self.input_tensor.data_type.numpy_dtype).str
        scale, bias = (float(np.float32(v)) for v in self.scale_bias)
        return dataclasses.replace(plan, conversion=(kind, kind), scale_bias=(scale, bias))
