"""What SPLIT and JOIN share: one whole tensor, pieces along an axis."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..tensor import BufferTensorDesc, FeatureLevel, check_uint
from ._base import ALL_DIMS, TYPES_6, TYPES_8, TYPES_11, SupportRow

__all__ = ["JOIN_SUPPORT", "SPLIT_SUPPORT", "check_pieces", "piece_starts"]

# DirectML's SPLIT page (ns-directml-dml_split_operator_desc, seed 001), "Tensor support".
SPLIT_SUPPORT = (
    SupportRow(FeatureLevel.FL_1_0, range(4, 5), TYPES_6),
    SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
    SupportRow(FeatureLevel.FL_3_0, ALL_DIMS, TYPES_8),
    SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
)

# DirectML's JOIN page (sdk-api, ns-directml-dml_join_operator_desc) for 1_0, 2_1, 3_0, 4_1;
# the 3_1 row (8 dimensions) from the feature-level history (dml-feature-level-history).
JOIN_SUPPORT = (
    SupportRow(FeatureLevel.FL_1_0, range(4, 5), TYPES_6),
    SupportRow(FeatureLevel.FL_2_1, range(4, 5), TYPES_8),
    SupportRow(FeatureLevel.FL_3_0, range(4, 6), TYPES_8),
    SupportRow(FeatureLevel.FL_3_1, ALL_DIMS, TYPES_8),
    SupportRow(FeatureLevel.FL_4_1, ALL_DIMS, TYPES_11),
)


def check_pieces(
    op: str,
    whole_name: str,
    whole: BufferTensorDesc,
    pieces_name: str,
    pieces: Sequence[BufferTensorDesc],
    axis: int,
) -> None:
    """Pieces match the whole except along `axis`, where their sizes sum to the whole's."""
    check_uint(axis, f"{op}.Axis")
    if axis >= whole.dimension_count:
        raise InvalidDescriptorError(
            f"{op}.Axis is {axis}: must be in [0, {whole_name}.DimensionCount - 1] = "
            f"[0, {whole.dimension_count - 1}]"
        )
    total = 0
    for k, p in enumerate(pieces):
        name = f"{pieces_name}[{k}]"
        if p.data_type != whole.data_type:
            raise InvalidDescriptorError(
                f"{op}.{name}.DataType is {p.data_type.name}: "
                f"must equal {whole_name}.DataType {whole.data_type.name}"
            )
        if p.dimension_count != whole.dimension_count:
            raise InvalidDescriptorError(
                f"{op}.{name}.DimensionCount is {p.dimension_count}: "
                f"must equal {whole_name}.DimensionCount {whole.dimension_count}"
            )
        for d, (ps, ws) in enumerate(zip(p.sizes, whole.sizes, strict=True)):
            if d != axis and ps != ws:
                raise InvalidDescriptorError(
                    f"{op}.{name}.Sizes[{d}] is {ps}: must equal {whole_name}.Sizes[{d}] {ws} "
                    f"(only Axis {axis} may differ)"
                )
        total += p.sizes[axis]
    if total != whole.sizes[axis]:
        raise InvalidDescriptorError(
            f"{op}.{pieces_name} Sizes[{axis}] sum to {total}: "
            f"must equal {whole_name}.Sizes[{axis}] {whole.sizes[axis]}"
        )


def piece_starts(pieces: Sequence[BufferTensorDesc], axis: int) -> list[int]:
    """Where each piece starts along `axis` in the whole."""
    starts, at = [], 0
    for p in pieces:
        starts.append(at)
        at += p.sizes[axis]
    return starts
