"""DML_OPERATOR_DEPTH_TO_SPACE1 and SPACE_TO_DEPTH1 (and their first versions, DEPTH_TO_SPACE
and SPACE_TO_DEPTH, in the DCR order alone): blocks between depth and space.

DEPTH_TO_SPACE1: Output[n, c, h*B + i, w*B + j] = Input[n, channel(c, i, j), h, w];
SPACE_TO_DEPTH1 is its inverse. With Order DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0)
channel(c, i, j) = (i*B + j) * C + c (ONNX's DCR); with COLUMN_ROW_DEPTH (1)
channel(c, i, j) = c*B*B + i*B + j (ONNX's CRD); C is the spatial tensor's channel count.
"""

from __future__ import annotations

import enum

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint, int_tuple, member_named
from ._base import TYPES_8, TYPES_11, SupportRow, UnaryDesc

__all__ = [
    "DepthSpaceOrder",
    "DepthToSpace1Desc",
    "DepthToSpaceDesc",
    "SpaceToDepth1Desc",
    "SpaceToDepthDesc",
    "block_axes",
]


def block_axes(
    sizes: tuple[int, ...], block: int, depth_column_row: bool, to_space: bool
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """DEPTH_TO_SPACE1 (`to_space`) or SPACE_TO_DEPTH1 of an [N, C, H, W] tensor as a view:
    the six sizes it splits into, their order in the output, and the output's sizes (DCR
    order where `depth_column_row`, else CRD)."""
    n, c, h, w = sizes
    b = block
    if to_space:
        co = c // (b * b)
        six = (n, b, b, co, h, w) if depth_column_row else (n, co, b, b, h, w)
        perm = (0, 3, 4, 1, 5, 2) if depth_column_row else (0, 1, 4, 2, 5, 3)
        return six, perm, (n, co, h * b, w * b)
    six = (n, c, h // b, b, w // b, b)
    perm = (0, 3, 5, 1, 2, 4) if depth_column_row else (0, 1, 3, 5, 2, 4)
    return six, perm, (n, c * b * b, h // b, w // b)


class DepthSpaceOrder(enum.IntEnum):
    """DML_DEPTH_SPACE_ORDER, with DirectML's values."""

    DEPTH_COLUMN_ROW = 0
    COLUMN_ROW_DEPTH = 1

    @classmethod
    def parse(cls, value: object, field: str) -> DepthSpaceOrder:
        """An order from its value, its name (either spelling) or ONNX's DCR / CRD."""
        if isinstance(value, str):
            name = value.upper().removeprefix("DML_DEPTH_SPACE_ORDER_")
            name = {"DCR": "DEPTH_COLUMN_ROW", "CRD": "COLUMN_ROW_DEPTH"}.get(name, name)
            member = member_named(cls, name)
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            return cls(value)
        raise InvalidDescriptorError(
            f"{field} is {value!r}: must be DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or "
            "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH (1)"
        )


class _DepthSpaceDesc(UnaryDesc):
    """What DEPTH_TO_SPACE1 and SPACE_TO_DEPTH1 share: one input, one output, a block size."""

    # DirectML's DEPTH_TO_SPACE1 / SPACE_TO_DEPTH1 pages (sdk-api, ns-directml-dml_depth_to_
    # space1_operator_desc.md, ns-directml-dml_space_to_depth1_operator_desc.md): a single row,
    # introduced in 2_1; the feature-level history lists no later extension for either.
    SUPPORT: tuple[SupportRow, ...] = (SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),)
    TO_SPACE = True
    EMPTY_RULES = True

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        block_size: int,
        order: DepthSpaceOrder | int | str = DepthSpaceOrder.DEPTH_COLUMN_ROW,
    ) -> None:
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.block_size = int_tuple([block_size], f"{self.OPERATOR}.BlockSize")[0]
        self.order = DepthSpaceOrder.parse(order, f"{self.OPERATOR}.Order")

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("BlockSize", self.block_size),
            ("Order", f"DML_DEPTH_SPACE_ORDER_{self.order.name}"),
        ]

    def _check_fields(self) -> None:
        check_uint(self.block_size, f"{self.OPERATOR}.BlockSize")
        if self.block_size == 0:
            raise InvalidDescriptorError(f"{self.OPERATOR}.BlockSize is 0: must be at least 1")

    @classmethod
    def output_sizes_for(
        cls,
        input_tensor: BufferTensorDesc,
        block_size: int,
        order: DepthSpaceOrder | int | str = DepthSpaceOrder.DEPTH_COLUMN_ROW,
    ) -> tuple[int, ...]:
        """The output sizes for this input where they follow from it (a 4-D input, a block
        size of at least 1), else the input's sizes: validation then names the field."""
        probe = cls._probe(input_tensor, block_size, order)
        if input_tensor.dimension_count == 4 and probe.block_size >= 1:
            return probe.expected_output_sizes()
        return tuple(input_tensor.sizes)

    @classmethod
    def _probe(
        cls, tensor: BufferTensorDesc, block_size: int, order: DepthSpaceOrder | int | str
    ) -> _DepthSpaceDesc:
        return cls(tensor, tensor, block_size, order)

    def expected_output_sizes(self) -> tuple[int, ...]:
        """The output sizes DirectML requires for this input and block size."""
        n, c, h, w = self.input_tensor.sizes
        b = self.block_size
        if self.TO_SPACE:
            return (n, c // (b * b), h * b, w * b)
        return (n, c * b * b, h // b, w // b)

    def _check_rules(self) -> None:
        self._same_type("InputTensor", self.input_tensor, "OutputTensor", self.output_tensor)
        if self.input_tensor.dimension_count != 4:
            return  # the support table reports the dimension count
        _, c, h, w = self.input_tensor.sizes
        b = self.block_size
        if self.TO_SPACE and c % (b * b):
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.InputTensor.Sizes[1] is {c}: InputChannelCount must be a "
                f"multiple of BlockSize * BlockSize = {b * b}"
            )
        if not self.TO_SPACE:
            for d, n in ((2, h), (3, w)):
                if n % b:
                    raise InvalidDescriptorError(
                        f"{self.OPERATOR}.InputTensor.Sizes[{d}] is {n}: must be a multiple of "
                        f"BlockSize {b}"
                    )
        want = self.expected_output_sizes()
        for d, (got, need) in enumerate(zip(self.output_tensor.sizes, want, strict=True)):
            if got != need:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.OutputTensor.Sizes[{d}] is {got}: must be {need} "
                    f"(output sizes {list(want)} for input sizes "
                    f"{list(self.input_tensor.sizes)} and BlockSize {b})"
                )

    def logical_copies(self) -> list[LogicalCopy]:
        # one copy per position (i, j) in a block: a box of the channel-rich tensor
        # against a stride-B grid of the spatial one
        b = self.block_size
        space = self.output_tensor if self.TO_SPACE else self.input_tensor
        n, c, h, w = space.sizes
        shape = (n, c, h // b, w // b)
        copies = []
        for i in range(b):
            for j in range(b):
                if self.order is DepthSpaceOrder.DEPTH_COLUMN_ROW:
                    first, step = (i * b + j) * c, 1
                else:
                    first, step = i * b + j, b * b
                deep_start, deep_step = (0, first, 0, 0), (1, step, 1, 1)
                space_start, space_step = (0, 0, i, j), (1, 1, b, b)
                if self.TO_SPACE:
                    copies.append(
                        LogicalCopy(0, deep_start, deep_step, 0, space_start, shape, space_step)
                    )
                else:
                    copies.append(
                        LogicalCopy(0, space_start, space_step, 0, deep_start, shape, deep_step)
                    )
        return copies


class DepthToSpace1Desc(_DepthSpaceDesc):
    """DML_DEPTH_TO_SPACE1_OPERATOR_DESC: depth moved into BlockSize x BlockSize spatial blocks."""

    OPERATOR = "DEPTH_TO_SPACE1"
    TO_SPACE = True


class SpaceToDepth1Desc(_DepthSpaceDesc):
    """DML_SPACE_TO_DEPTH1_OPERATOR_DESC: BlockSize x BlockSize spatial blocks moved into depth."""

    OPERATOR = "SPACE_TO_DEPTH1"
    TO_SPACE = False


# DirectML's DEPTH_TO_SPACE and SPACE_TO_DEPTH pages (sdk-api, ns-directml-dml_depth_to_space_
# operator_desc.md, ns-directml-dml_space_to_depth_operator_desc.md): introduced in 1_0 for
# the two float types, eight types from 2_1, eleven from 5_0; always 4 dimensions.
_FIRST_SUPPORT = (
    SupportRow(FeatureLevel.FL_1_0, range(4, 5), frozenset({DataType.FLOAT32, DataType.FLOAT16})),
    SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
    SupportRow(FeatureLevel.FL_5_0, range(4, 5), TYPES_11),
)


class _FirstVersion(_DepthSpaceDesc):
    """What DEPTH_TO_SPACE and SPACE_TO_DEPTH share: the DEPTH_COLUMN_ROW order, no Order
    field, their own table."""

    SUPPORT = _FIRST_SUPPORT

    def __init__(
        self, input_tensor: BufferTensorDesc, output_tensor: BufferTensorDesc, block_size: int
    ) -> None:
        super().__init__(input_tensor, output_tensor, block_size, DepthSpaceOrder.DEPTH_COLUMN_ROW)

    @classmethod
    def _probe(
        cls, tensor: BufferTensorDesc, block_size: int, order: DepthSpaceOrder | int | str
    ) -> _DepthSpaceDesc:
        return cls(tensor, tensor, block_size)  # (DCR: no Order field)

    def _field_items(self) -> list[tuple[str, object]]:
        return [(k, v) for k, v in super()._field_items() if k != "Order"]


class DepthToSpaceDesc(_FirstVersion, DepthToSpace1Desc):
    """DML_DEPTH_TO_SPACE_OPERATOR_DESC, the first version: DEPTH_TO_SPACE1 in the
    DEPTH_COLUMN_ROW order (ONNX's DCR), which has no Order field."""

    OPERATOR = "DEPTH_TO_SPACE"


class SpaceToDepthDesc(_FirstVersion, SpaceToDepth1Desc):
    """DML_SPACE_TO_DEPTH_OPERATOR_DESC, the first version: SPACE_TO_DEPTH1 in the
    DEPTH_COLUMN_ROW order (ONNX's DCR), which has no Order field."""

    OPERATOR = "SPACE_TO_DEPTH"
