"""What the index-driven operators share (GATHER, GATHER_ELEMENTS, GATHER_ND(1),
SCATTER_ELEMENTS, SCATTER_ND, ONE_HOT): index types per level, right-aligned size rules, and
lowering to strided copies plus indexed copies."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..indexed import INDEX_TYPES, IndexedCopy
from ..plan import Layout, Plan, span, with_indexed
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from ._base import OperatorDesc, SupportRow

INDEX_TYPES_OLD = frozenset({DataType.UINT32})


class IndexedDesc(OperatorDesc):
    """An operator whose IndicesTensor moves data: UINT32 indices before 3_0, then INT32,
    INT64, UINT32 and UINT64 (signed ones may be negative, counted from the end)."""

    INDEX_FIELD = "IndicesTensor"

    def _allowed_types(self, name: str, row: SupportRow) -> frozenset[DataType]:
        if name == self.INDEX_FIELD:
            return INDEX_TYPES if row.level >= FeatureLevel.FL_3_0 else INDEX_TYPES_OLD
        return row.data_types

    @property
    def data_type(self) -> DataType:
        """The data type of the tensor the operator moves (its output)."""
        return self.output_fields()[0][1].data_type

    def indexed_copies(
        self, input_layouts: Sequence[Layout], output_layouts: Sequence[Layout]
    ) -> list[IndexedCopy]:
        """The index-driven copies, in the bound buffers' bytes and elements."""
        raise NotImplementedError

    def _finish(self, plan: Plan, li: Sequence[Layout], lo: Sequence[Layout]) -> Plan:
        return with_indexed(plan, self.indexed_copies(li, lo))

    # helpers -----------------------------------------------------------------

    def _check_axis(self, axis: int, rank: int, field: str = "Axis") -> None:
        if not 0 <= axis < rank:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{field} is {axis}: must be in [0, {rank})"
            )

    def _check_sizes(self, name: str, t: BufferTensorDesc, expected: Sequence[int]) -> None:
        if tuple(t.sizes) != tuple(expected):
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{name}.Sizes is {list(t.sizes)}: must be {list(expected)}"
            )

    def _check_all_but_axis(
        self, name: str, t: BufferTensorDesc, ref_name: str, ref: BufferTensorDesc, axis: int
    ) -> None:
        """`t`'s sizes equal `ref`'s in every dimension but `axis` (same DimensionCount)."""
        for d, (n, m) in enumerate(zip(t.sizes, ref.sizes, strict=True)):
            if d != axis and n != m:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.{name}.Sizes[{d}] is {n}: must equal {ref_name}.Sizes[{d}] "
                    f"{m} (every dimension but Axis {axis})"
                )

    def _check_nd_counts(
        self, input_count: int, indices_count: int
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """InputDimensionCount and IndicesDimensionCount checked (each in [1, DimensionCount],
        the leading sizes they leave 1); the meaningful sizes of the input and the indices."""
        op = self.OPERATOR
        data, index = self.input_fields()[0][1], self.input_fields()[1][1]
        d = data.dimension_count
        for field, value in (
            ("InputDimensionCount", input_count),
            ("IndicesDimensionCount", indices_count),
        ):
            if not 1 <= value <= d:
                raise InvalidDescriptorError(f"{op}.{field} is {value}: must be in [1, {d}]")
        self._leading_ones("InputTensor", data, input_count, "InputDimensionCount")
        self._leading_ones("IndicesTensor", index, indices_count, "IndicesDimensionCount")
        return self._nd_sizes(input_count, indices_count)

    def _nd_sizes(
        self, input_count: int, indices_count: int
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The meaningful sizes of the input and the indices (after their leading ones)."""
        data, index = self.input_fields()[0][1], self.input_fields()[1][1]
        d = data.dimension_count
        return tuple(data.sizes[d - input_count :]), tuple(index.sizes[d - indices_count :])

    def _leading_ones(self, name: str, t: BufferTensorDesc, meaningful: int, field: str) -> None:
        lead = t.sizes[: t.dimension_count - meaningful]
        if any(n != 1 for n in lead):
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{name}.Sizes is {list(t.sizes)}: {field} {meaningful} "
                f"leaves leading sizes {list(lead)}, which must be 1"
            )


def right_aligned(op: str, name: str, full: Sequence[int], rank: int, why: str) -> tuple[int, ...]:
    """`full` sizes right-aligned into `rank` dimensions: leading 1s prepended, or leading
    sizes of 1 cropped; error if a cropped size is not 1."""
    extra = len(full) - rank
    if extra > 0:
        if any(n != 1 for n in full[:extra]):
            raise InvalidDescriptorError(
                f"{op}.{name}.DimensionCount is {rank}: {why} has {len(full)} dimensions "
                f"{list(full)}, more than {rank}"
            )
        return tuple(full[extra:])
    return (1,) * -extra + tuple(full)


def tensor_span(t: BufferTensorDesc, layout: Layout, size: int) -> tuple[int, int]:
    """Bytes [low, high) every element (of `size` bytes) of the tensor lies in, under this
    layout."""
    low, high = span(layout.offset, t.sizes, layout.strides)
    return low * size, (high + 1) * size


def aligned(values: Sequence[int], count: int, pad: int = 0) -> tuple[int, ...]:
    """The last `count` of these values, or them with `pad` prepended up to `count`."""
    values = tuple(values)
    return (
        values[len(values) - count :]
        if len(values) >= count
        else (pad,) * (count - len(values)) + values
    )
