"""DML_OPERATOR_UPSAMPLE_2D: the last two dimensions (height, width) of an NCHW or NCDHW
tensor scaled up by whole factors. Nearest neighbour copies each input element into a
ScaleSize.Height x ScaleSize.Width block; bilinear interpolation is arithmetic, outside
dmlops' data movement, and refused by name."""

from __future__ import annotations

import enum
from collections.abc import Sequence

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint, int_tuple, member_named
from ._base import SupportRow, UnaryDesc

__all__ = ["InterpolationMode", "Upsample2dDesc"]

_UINT_MAX = 2**32 - 1


class InterpolationMode(enum.IntEnum):
    """DML_INTERPOLATION_MODE, with DirectML's values."""

    NEAREST_NEIGHBOR = 0
    LINEAR = 1

    @classmethod
    def parse(cls, value: object, field: str) -> InterpolationMode:
        """A mode from its value or its name (either spelling; "nearest" too)."""
        if isinstance(value, str):
            name = value.upper().removeprefix("DML_INTERPOLATION_MODE_")
            name = {"NEAREST": "NEAREST_NEIGHBOR"}.get(name, name)
            member = member_named(cls, name)
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            return cls(value)
        raise InvalidDescriptorError(
            f"{field} is {value!r}: must be DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR (0) or "
            "DML_INTERPOLATION_MODE_LINEAR (1)"
        )


class Upsample2dDesc(UnaryDesc):
    """DML_UPSAMPLE_2D_OPERATOR_DESC: Output[..., h, w] = Input[..., h / ScaleSize.Height,
    w / ScaleSize.Width] (integer division) in the NEAREST_NEIGHBOR mode.

    Lowered to ScaleSize.Height x ScaleSize.Width strided copies, each the whole input onto
    one phase of the output's block grid.
    """

    OPERATOR = "UPSAMPLE_2D"
    # DirectML's UPSAMPLE_2D page (sdk-api, ns-directml-dml_upsample_2d_operator_desc.md):
    # introduced in 1_0, one table row, 4 to 5 dimensions of FLOAT32 or FLOAT16.
    SUPPORT = (
        SupportRow(
            FeatureLevel.FL_1_0, range(4, 6), frozenset({DataType.FLOAT32, DataType.FLOAT16})
        ),
    )
    EMPTY_RULES = True
    FLOAT_CARRIERS = True

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        scale_size: Sequence[int],
        interpolation_mode: InterpolationMode | int | str = InterpolationMode.NEAREST_NEIGHBOR,
    ) -> None:
        """`scale_size`: (Height, Width), DML_SIZE_2D's two UINTs."""
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        scale = int_tuple(scale_size, "UPSAMPLE_2D.ScaleSize")
        if len(scale) != 2:
            raise InvalidDescriptorError(
                f"UPSAMPLE_2D.ScaleSize has {len(scale)} entries: a DML_SIZE_2D is (Height, Width)"
            )
        self.scale_height, self.scale_width = scale
        self.interpolation_mode = InterpolationMode.parse(
            interpolation_mode, "UPSAMPLE_2D.InterpolationMode"
        )

    @classmethod
    def output_sizes_for(cls, sizes: Sequence[int], scale_size: Sequence[int]) -> tuple[int, ...]:
        """The input's sizes with the last two scaled (where there are two to scale)."""
        out = [int(n) for n in sizes]
        if len(out) >= 2 and len(scale_size) == 2:
            out[-2] *= int(scale_size[0])
            out[-1] *= int(scale_size[1])
        return tuple(out)

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("ScaleSize", {"Width": self.scale_width, "Height": self.scale_height}),
            ("InterpolationMode", f"DML_INTERPOLATION_MODE_{self.interpolation_mode.name}"),
        ]

    def _check_fields(self) -> None:
        for name, scale in (("Height", self.scale_height), ("Width", self.scale_width)):
            check_uint(scale, f"UPSAMPLE_2D.ScaleSize.{name}")
            if scale == 0:
                raise InvalidDescriptorError(
                    f"UPSAMPLE_2D.ScaleSize.{name} is 0: must be at least 1"
                )
        if self.interpolation_mode is InterpolationMode.LINEAR:
            raise InvalidDescriptorError(
                "UPSAMPLE_2D.InterpolationMode is DML_INTERPOLATION_MODE_LINEAR: bilinear "
                "interpolation is arithmetic, outside dmlops' data movement (NEAREST_NEIGHBOR "
                "moves elements)"
            )

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        if out.dimension_count != inp.dimension_count:
            raise InvalidDescriptorError(
                f"UPSAMPLE_2D.OutputTensor.DimensionCount is {out.dimension_count}: must equal "
                f"InputTensor.DimensionCount {inp.dimension_count}"
            )
        if inp.dimension_count < 2:
            return  # the support table reports the dimension count
        for name, scale, size in (
            ("Height", self.scale_height, inp.sizes[-2]),
            ("Width", self.scale_width, inp.sizes[-1]),
        ):
            if scale * size > _UINT_MAX:
                raise InvalidDescriptorError(
                    f"UPSAMPLE_2D.ScaleSize.{name} is {scale}: must be at most UINT_MAX / "
                    f"Input{name} = {_UINT_MAX // size}"
                )
        want = self.output_sizes_for(inp.sizes, (self.scale_height, self.scale_width))
        for d, (got, need) in enumerate(zip(out.sizes, want, strict=True)):
            if got != need:
                raise InvalidDescriptorError(
                    f"UPSAMPLE_2D.OutputTensor.Sizes[{d}] is {got}: must be {need} (output sizes "
                    f"{list(want)} for input sizes {list(inp.sizes)} and ScaleSize "
                    f"{self.scale_height} x {self.scale_width})"
                )

    def logical_copies(self) -> list[LogicalCopy]:
        sizes = tuple(self.input_tensor.sizes)
        n = len(sizes)
        lead = (0,) * (n - 2)
        steps = (1,) * (n - 2) + (self.scale_height, self.scale_width)
        return [
            LogicalCopy(0, (0,) * n, (1,) * n, 0, (*lead, i, j), sizes, steps)
            for i in range(self.scale_height)
            for j in range(self.scale_width)
        ]
