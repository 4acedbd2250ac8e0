"""DML_OPERATOR_RESAMPLE, RESAMPLE1 and RESAMPLE2 in their nearest-neighbour mode: each
output element is the input element its coordinate maps back to, axis by axis,

    input x = (output x - OutputPixelOffset) / Scale - InputPixelOffset

(in FLOAT arithmetic), rounded toward RoundingDirection (RESAMPLE2) and clamped into the
input (the output's edges repeat the input's; a larger input is cropped). RESAMPLE and
RESAMPLE1 round to the nearest element, halves up: RESAMPLE2 with DECREASING and the input
offsets 0.5 smaller (the reading onnxruntime's DirectML provider relies on; RESAMPLE2's page
words it as the output offsets, which would not pick the nearest element for scales other
than 1); RESAMPLE's offsets are 0.5 and -0.5. LINEAR interpolates (arithmetic) and is
refused by name.

Each axis's map is a step function; the lowering cuts it into arithmetic progressions
(`progressions`: an output stride, a source stride, a count — a scale of p/q gives p of
them, plus the clamped edges), and the copies are their products over the axes: strided
copies that step the destination, as UPSAMPLE_2D's (a whole factor k is k copies)."""

from __future__ import annotations

import copy
import enum
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidDescriptorError
from ..plan import LogicalCopy
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint, member_named
from ._base import SupportRow, UnaryDesc
from .upsample import InterpolationMode

__all__ = [
    "AxisDirection",
    "ResampleDesc",
    "Resample1Desc",
    "Resample2Desc",
    "nearest_map",
    "progressions",
    "segments",
    "Segment",
]

_FLOATS = frozenset({DataType.FLOAT32, DataType.FLOAT16})
_FLOATS_AND_BYTES = _FLOATS | {DataType.INT8, DataType.UINT8}


class AxisDirection(enum.IntEnum):
    """DML_AXIS_DIRECTION, with DirectML's values (RESAMPLE2's RoundingDirection)."""

    INCREASING = 0
    DECREASING = 1

    @classmethod
    def parse(cls, value: object, field: str) -> AxisDirection:
        """A direction from its value or its name (with or without DML_AXIS_DIRECTION_)."""
        if isinstance(value, str):
            member = member_named(cls, value.upper().removeprefix("DML_AXIS_DIRECTION_"))
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            return cls(value)
        raise InvalidDescriptorError(
            f"{field} is {value!r}: must be DML_AXIS_DIRECTION_INCREASING (0) or "
            "DML_AXIS_DIRECTION_DECREASING (1)"
        )


def nearest_map(
    size_in: int,
    size_out: int,
    scale: float,
    input_offset: float,
    output_offset: float,
    direction: AxisDirection,
) -> np.ndarray:
    """The input index each output position of one axis reads: (o - output_offset) / scale
    - input_offset in float32, rounded up (INCREASING) or down (DECREASING), clamped."""
    o = np.arange(size_out, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        x = (o - np.float32(output_offset)) / np.float32(scale) - np.float32(input_offset)
    rounded = np.ceil(x) if direction is AxisDirection.INCREASING else np.floor(x)
    rounded = np.nan_to_num(rounded, nan=0.0, posinf=size_in - 1, neginf=0.0)
    index: np.ndarray = np.clip(rounded, 0, size_in - 1).astype(np.int64)
    return index


@dataclass(frozen=True)
class Segment:
    """Output positions [start, start + period * repeats) of one axis whose map is periodic:
    position start + k * period + r reads input index sources[r] + k * step."""

    start: int
    period: int
    repeats: int
    sources: tuple[int, ...]
    step: int


def _periodic_length(index_map: np.ndarray, at: int, period: int) -> int:
    """How many positions from `at` repeat the map `period` positions earlier plus one step."""
    lag = index_map[at + period :] - index_map[at : len(index_map) - period]
    if not len(lag):
        return 0
    broken = np.flatnonzero(lag != lag[0])
    return period + (int(broken[0]) if len(broken) else len(lag))


def segments(index_map: np.ndarray, most_period: int = 64) -> list[Segment]:
    """One axis's map (output position -> input index) cut greedily from the start into
    periodic segments, each of the period up to `most_period` that repeats most often there
    (a scale of p/q repeats every p positions, and nearly so every few; the clamped edges
    repeat one index)."""
    found = []
    at, n = 0, len(index_map)
    while at < n:
        best_period, best_repeats = 1, 1
        for period in range(1, min(most_period, (n - at) // 2) + 1):
            repeats = _periodic_length(index_map, at, period) // period
            # the fewest pieces per position: the most repeats (then the longest segment)
            if repeats >= 2 and (repeats, repeats * period) > (
                best_repeats,
                best_repeats * best_period,
            ):
                best_period, best_repeats = period, repeats
        step = int(index_map[at + best_period] - index_map[at]) if best_repeats > 1 else 0
        sources = tuple(int(v) for v in index_map[at : at + best_period])
        found.append(Segment(at, best_period, best_repeats, sources, step))
        at += best_period * best_repeats
    return found


Progression = tuple[int, int, int, int, int]  # (dst start, dst step, src start, src step, count)


def progressions(index_map: np.ndarray) -> list[Progression]:
    """One axis's map as arithmetic progressions that cover every output position once:
    each segment's phases (an output stride of its period, a source stride of its step)."""
    return [
        (seg.start + r, seg.period if seg.repeats > 1 else 1, src, seg.step, seg.repeats)
        for seg in segments(index_map)
        for r, src in enumerate(seg.sources)
    ]


class _ResampleBase(UnaryDesc):
    """What RESAMPLE, RESAMPLE1 and RESAMPLE2 share: their arrays per dimension, the mode,
    the rules and the lowering of their nearest maps."""

    FLOAT_CARRIERS = True
    EMPTY_RULES = True
    _COUNT_FIELD = "DimensionCount"

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc
    interpolation_mode: InterpolationMode
    scales: tuple[float, ...]
    dimension_count: int | None

    @classmethod
    def output_sizes_for(cls, sizes: Sequence[int], scales: Sequence[float]) -> tuple[int, ...]:
        """The output's sizes where none are given: each input size times its scale in
        float32, truncated (onnxruntime's Resize rule; DirectML takes any output size)."""
        if len(scales) != len(sizes):
            raise InvalidDescriptorError(
                f"{cls.OPERATOR}.Scales has {len(scales)} entries: the input has {len(sizes)} "
                "dimensions"
            )
        return tuple(int(np.float32(s) * np.float32(n)) for n, s in zip(sizes, scales, strict=True))

    def _floats(self, values: Sequence[float], field: str) -> tuple[float, ...]:
        try:
            return tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{field} is {values!r}: not an array of FLOATs"
            ) from None

    def offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(InputPixelOffsets, OutputPixelOffsets) as RESAMPLE2 reads them."""
        raise NotImplementedError

    def direction(self) -> AxisDirection:
        """RESAMPLE2's RoundingDirection (DECREASING for RESAMPLE and RESAMPLE1)."""
        return AxisDirection.DECREASING

    def _arrays(self) -> list[tuple[str, tuple[float, ...]]]:
        return [("Scales", self.scales)]

    def _check_fields(self) -> None:
        if self.interpolation_mode is InterpolationMode.LINEAR:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.InterpolationMode is DML_INTERPOLATION_MODE_LINEAR: "
                "interpolation is arithmetic, outside dmlops' data movement (NEAREST_NEIGHBOR "
                "moves elements)"
            )
        if self.dimension_count is not None:
            check_uint(self.dimension_count, f"{self.OPERATOR}.{self._COUNT_FIELD}")
        for name, values in self._arrays():
            for d, v in enumerate(values):
                if not math.isfinite(v) or not np.isfinite(np.float32(v)):
                    raise InvalidDescriptorError(
                        f"{self.OPERATOR}.{name}[{d}] is {v!r}: must be a finite FLOAT"
                    )
        for d, s in enumerate(self.scales):
            if not np.float32(s) > 0:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.Scales[{d}] is {s!r}: must be greater than 0"
                )

    def _check_rules(self) -> None:
        inp, out = self.input_tensor, self.output_tensor
        self._same_type("InputTensor", inp, "OutputTensor", out)
        rank = inp.dimension_count
        count = len(self.scales) if self.dimension_count is None else self.dimension_count
        if count != rank:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{self._COUNT_FIELD} is {count}: must equal the tensors' "
                f"DimensionCount {rank}"
            )
        for name, values in self._arrays():
            if len(values) != rank:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.{name} has {len(values)} entries: {self._COUNT_FIELD} is "
                    f"{rank}"
                )

    _maps: tuple[np.ndarray, ...] | None = None

    def following(self, maps: Sequence[np.ndarray]) -> _ResampleBase:
        """This descriptor moving elements by the given per-dimension maps (output position
        -> input index) instead of its own arithmetic: what the ONNX importer uses, whose
        maps are onnxruntime's (they can differ from FLOAT arithmetic at exact halves)."""
        rank = self.output_tensor.dimension_count
        if len(maps) != rank:
            raise InvalidDescriptorError(f"{self.OPERATOR}: {len(maps)} maps for {rank} dimensions")
        for d, (m, n, size) in enumerate(
            zip(maps, self.output_tensor.sizes, self.input_tensor.sizes, strict=True)
        ):
            if len(m) != n or (n and not 0 <= int(np.min(m)) <= int(np.max(m)) < size):
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}: map {d} does not take {n} positions into [0, {size})"
                )
        made = copy.copy(self)
        made._maps = tuple(np.asarray(m, np.int64) for m in maps)
        return made

    def axis_maps(self) -> list[np.ndarray]:
        """Each dimension's map from output position to input index."""
        if self._maps is not None:
            return list(self._maps)
        ins, outs = self.offsets()
        return [
            nearest_map(n, m, s, a, b, self.direction())
            for n, m, s, a, b in zip(
                self.input_tensor.sizes,
                self.output_tensor.sizes,
                self.scales,
                ins,
                outs,
                strict=True,
            )
        ]

    def logical_copies(self) -> list[LogicalCopy]:
        per_axis = [progressions(m) for m in self.axis_maps()]
        copies = []
        for pieces in itertools.product(*per_axis):
            copies.append(
                LogicalCopy(
                    0,
                    tuple(p[2] for p in pieces),
                    tuple(p[3] for p in pieces),
                    0,
                    tuple(p[0] for p in pieces),
                    tuple(p[4] for p in pieces),
                    tuple(p[1] for p in pieces),
                )
            )
        return copies


def _mode(value: object, op: str) -> InterpolationMode:
    return InterpolationMode.parse(value, f"{op}.InterpolationMode")


class ResampleDesc(_ResampleBase):
    """DML_RESAMPLE_OPERATOR_DESC: pixel centres mapped (offsets 0.5 and -0.5), the nearest
    input element (halves up), clamped."""

    OPERATOR = "RESAMPLE"
    _COUNT_FIELD = "ScaleCount"
    # DirectML's RESAMPLE page (sdk-api, ns-directml-dml_resample_operator_desc.md):
    # introduced in 2_0 (4 dimensions of FLOAT32, FLOAT16); 1 to 4 from 5_1; INT8, UINT8
    # from 6_2.
    SUPPORT = (
        SupportRow(FeatureLevel.FL_2_0, range(4, 5), _FLOATS),
        SupportRow(FeatureLevel.FL_5_1, range(1, 5), _FLOATS),
        SupportRow(FeatureLevel.FL_6_2, range(1, 5), _FLOATS_AND_BYTES),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        scales: Sequence[float],
        interpolation_mode: InterpolationMode | int | str = InterpolationMode.NEAREST_NEIGHBOR,
        scale_count: int | None = None,
    ) -> None:
        """`scale_count` None: the length of `scales`."""
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.interpolation_mode = _mode(interpolation_mode, "RESAMPLE")
        self.scales = self._floats(scales, "Scales")
        self.dimension_count = scale_count

    def _field_items(self) -> list[tuple[str, object]]:
        return [
            *super()._field_items(),
            ("InterpolationMode", f"DML_INTERPOLATION_MODE_{self.interpolation_mode.name}"),
            (
                "ScaleCount",
                len(self.scales) if self.dimension_count is None else self.dimension_count,
            ),
            ("Scales", list(self.scales)),
        ]

    def offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        n = len(self.scales)
        return (0.0,) * n, (-0.5,) * n  # 0.5 and -0.5, rounded to nearest: 0.5 - 0.5


class Resample1Desc(_ResampleBase):
    """DML_RESAMPLE1_OPERATOR_DESC: RESAMPLE with each dimension's input and output pixel
    offsets given."""

    OPERATOR = "RESAMPLE1"
    # DirectML's RESAMPLE1 page (sdk-api, ns-directml-dml_resample1_operator_desc.md):
    # introduced in 2_1 (4 dimensions of FLOAT32, FLOAT16); 1 to 4 from 5_1; INT8, UINT8
    # from 6_2.
    SUPPORT: tuple[SupportRow, ...] = (
        SupportRow(FeatureLevel.FL_2_1, range(4, 5), _FLOATS),
        SupportRow(FeatureLevel.FL_5_1, range(1, 5), _FLOATS),
        SupportRow(FeatureLevel.FL_6_2, range(1, 5), _FLOATS_AND_BYTES),
    )

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        scales: Sequence[float],
        input_pixel_offsets: Sequence[float],
        output_pixel_offsets: Sequence[float],
        interpolation_mode: InterpolationMode | int | str = InterpolationMode.NEAREST_NEIGHBOR,
        dimension_count: int | None = None,
    ) -> None:
        """`dimension_count` None: the length of `scales`."""
        self.input_tensor = input_tensor
        self.output_tensor = output_tensor
        self.interpolation_mode = _mode(interpolation_mode, self.OPERATOR)
        self.scales = self._floats(scales, "Scales")
        self.input_pixel_offsets = self._floats(input_pixel_offsets, "InputPixelOffsets")
        self.output_pixel_offsets = self._floats(output_pixel_offsets, "OutputPixelOffsets")
        self.dimension_count = dimension_count

    def _arrays(self) -> list[tuple[str, tuple[float, ...]]]:
        return [
            ("Scales", self.scales),
            ("InputPixelOffsets", self.input_pixel_offsets),
            ("OutputPixelOffsets", self.output_pixel_offsets),
        ]

    def _field_items(self) -> list[tuple[str, object]]:
        count = len(self.scales) if self.dimension_count is None else self.dimension_count
        return [
            *super()._field_items(),
            ("InterpolationMode", f"DML_INTERPOLATION_MODE_{self.interpolation_mode.name}"),
            ("DimensionCount", count),
            ("Scales", list(self.scales)),
            ("InputPixelOffsets", list(self.input_pixel_offsets)),
            ("OutputPixelOffsets", list(self.output_pixel_offsets)),
        ]

    def offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        ins = tuple(float(np.float32(a) - np.float32(0.5)) for a in self.input_pixel_offsets)
        return ins, self.output_pixel_offsets


class Resample2Desc(Resample1Desc):
    """DML_RESAMPLE2_OPERATOR_DESC: RESAMPLE1's mapping, rounded toward RoundingDirection
    (INCREASING: up; DECREASING: down) instead of to the nearest element."""

    OPERATOR = "RESAMPLE2"
    # DirectML's RESAMPLE2 page (sdk-api, ns-directml-dml_resample2_operator_desc.md):
    # introduced in 5_1, one table row, 1 to 4 dimensions of FLOAT32 and FLOAT16.
    SUPPORT = (SupportRow(FeatureLevel.FL_5_1, range(1, 5), _FLOATS),)

    def __init__(
        self,
        input_tensor: BufferTensorDesc,
        output_tensor: BufferTensorDesc,
        scales: Sequence[float],
        input_pixel_offsets: Sequence[float],
        output_pixel_offsets: Sequence[float],
        rounding_direction: AxisDirection | int | str = AxisDirection.DECREASING,
        interpolation_mode: InterpolationMode | int | str = InterpolationMode.NEAREST_NEIGHBOR,
        dimension_count: int | None = None,
    ) -> None:
        super().__init__(
            input_tensor,
            output_tensor,
            scales,
            input_pixel_offsets,
            output_pixel_offsets,
            interpolation_mode,
            dimension_count,
        )
        self.rounding_direction = AxisDirection.parse(
            rounding_direction, "RESAMPLE2.RoundingDirection"
        )

    def _field_items(self) -> list[tuple[str, object]]:
        items = super()._field_items()
        items.insert(3, ("RoundingDirection", f"DML_AXIS_DIRECTION_{self.rounding_direction.name}"))
        return items

    def direction(self) -> AxisDirection:
        return self.rounding_direction

    def offsets(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return self.input_pixel_offsets, self.output_pixel_offsets
