"""DML_OPERATOR_TILE: the input repeated along each dimension."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import ElementCopy, Layout, LogicalCopy, Plan, build_plan
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import ALL_DIMS, TYPES_8, SupportRow, UnaryDesc, uint_list

__all__ = ["TileDesc"]

_HALF = frozenset({DataType.FLOAT32, DataType.FLOAT16})
_TYPES_10 = TYPES_8 | {DataType.INT64, DataType.UINT64}  # TILE's 4_1 row has no FLOAT64


class TileDesc(UnaryDesc):
    """DML_TILE_OPERATOR_DESC: Output[r * InputSizes + c] = Input[c] for every repeat r < Repeats.

    Lowered to one strided copy with two dimensions per tensor dimension (repeat, element)
    and source stride 0 along the repeats, so any number of repeats is one copy.
    """

    OPERATOR = "TILE"
    # DirectML's TILE page (MicrosoftDocs/sdk-api, ns-directml-dml_tile_operator_desc.md):
    # 1_0 4 dims FLOAT32/FLOAT16; 2_1 adds the integer types; 3_1 1 to 8 dims; 4_1 the
    # 64-bit integers (no FLOAT64 in its table).
    SUPPORT = (
        SupportRow(FeatureLevel.FL_1_0, range(4, 5), _HALF),
        SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
        SupportRow(FeatureLevel.FL_3_1, ALL_DIMS, TYPES_8),
        SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, _TYPES_10),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        repeats: Sequence[int],
        repeats_count: int | None = None,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.repeats = uint_list(repeats, "TILE.Repeats")
        self.repeats_count = len(self.repeats) if repeats_count is None else int(repeats_count)

    @classmethod
    def output_sizes_for(cls, sizes: Sequence[int], repeats: Sequence[int]) -> tuple[int, ...]:
        """OutputTensor.Sizes[i] = InputTensor.Sizes[i] * Repeats[i]."""
        return tuple(int(n) * int(r) for n, r in zip(sizes, repeats, strict=False))

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("RepeatsCount", self.repeats_count),
            ("Repeats", list(self.repeats)),
        ]

    def _check_fields(self) -> None:
        self._check_count(self.repeats_count, len(self.repeats), "RepeatsCount", "Repeats")
        self._uint_array(self.repeats, "Repeats")
        for i, r in enumerate(self.repeats):
            if r == 0:
                raise InvalidDescriptorError(f"TILE.Repeats[{i}] is 0: must be larger than 0")

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        if self.repeats_count != inp.dimension_count:
            raise InvalidDescriptorError(
                f"TILE.RepeatsCount is {self.repeats_count}: must equal "
                f"InputTensor.DimensionCount {inp.dimension_count}"
            )
        for i, (n, r, o) in enumerate(zip(inp.sizes, self.repeats, out.sizes, strict=True)):
            if o != n * r:
                raise InvalidDescriptorError(
                    f"TILE.OutputTensor.Sizes[{i}] is {o}: must be InputTensor.Sizes[{i}] * "
                    f"Repeats[{i}] = {n} * {r} = {n * r}"
                )

    def logical_copies(self) -> list[LogicalCopy]:
        """One box per combination of repeats (what pictures and explain show)."""
        sizes = self.input_tensor.sizes
        n = len(sizes)
        return [
            LogicalCopy(
                0, (0,) * n, (1,) * n, 0, tuple(k * m for k, m in zip(r, sizes, strict=True)), sizes
            )
            for r in itertools.product(*(range(k) for k in self.repeats))
        ]

    def lower(
        self,
        input_layouts: Sequence[Layout] | None = None,
        output_layouts: Sequence[Layout] | None = None,
    ) -> Plan:
        """(repeat, element) dimension pairs with source stride 0 along the repeats: one
        strided copy, or one per repeat of the leading dimensions where the pairs would make
        more than 8 dimensions (what every backend's kernels take)."""
        li = input_layouts[0] if input_layouts else Layout.of_desc(self.input_tensor)
        lo = output_layouts[0] if output_layouts else Layout.of_desc(self.output_tensor)
        sizes, repeats = self.input_tensor.sizes, self.repeats
        n = len(sizes)
        # the first `fixed` dimensions have their repeats enumerated; the rest keep a repeat
        # dimension where they repeat
        fixed = next(
            k for k in range(n + 1) if k + sum(1 + (r > 1) for r in repeats[k:]) <= _MAX_DIMS
        )
        copies = []
        for lead in itertools.product(*(range(r) for r in repeats[:fixed])):
            steps = zip(lead, sizes, lo.strides, strict=False)
            dst_offset = lo.offset + sum(k * m * d for k, m, d in steps)
            shape, src = list(sizes[:fixed]), list(li.strides[:fixed])
            dst = list(lo.strides[:fixed])
            for i in range(fixed, n):
                if repeats[i] > 1:
                    shape.append(repeats[i])
                    src.append(0)
                    dst.append(sizes[i] * lo.strides[i])
                shape.append(sizes[i])
                src.append(li.strides[i])
                dst.append(lo.strides[i])
            copy = ElementCopy(0, li.offset, tuple(src), 0, dst_offset, tuple(dst), tuple(shape))
            copies.append(copy)
        return build_plan(self.element_size, copies, 1, 1)


_MAX_DIMS = 8
