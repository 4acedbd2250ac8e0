"""ONNX Resize and Upsample in their nearest mode, as DirectML's UPSAMPLE_2D and RESAMPLE2
take them.

Each axis's source index is computed as onnxruntime computes it (the coordinate
transformation mode, then the nearest mode's rounding, then a clamp into the axis); where
every axis but the last two keeps its size and the last two map output x to x // s for a
whole factor s (nn.Upsample(scale_factor=s, mode="nearest") and every torch exporter's
Resize of it), the node is UPSAMPLE_2D's copies; any other map (fractional scales,
downsampling, align_corners, any axes) is RESAMPLE2 moving onnxruntime's indices, its
fields those onnxruntime's DirectML provider gives it (`directml_fields`). Interpolating
modes (linear, cubic, antialiasing) are arithmetic and refused by name, as are regions of
interest (tf_crop_and_resize) and keep_aspect_ratio_policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = [
    "nearest_scales",
    "resized_shape",
    "source_indices",
    "index_maps",
    "directml_fields",
]

_COORDINATES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
)
_ROUNDINGS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _text(value: Any, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


def source_indices(
    size_in: int, size_out: int, scale: float, coordinates: str, rounding: str
) -> np.ndarray[Any, Any]:
    """The input index each output position of one axis reads, as onnxruntime's nearest
    Resize finds it: in float32 arithmetic (its `float` coordinates), rounding as its
    nearest modes do (std::round: halves away from zero; round_prefer_floor's halves
    down), clamped. An axis of scale 1 keeps its elements in every mode, as onnxruntime's
    does (tf_half_pixel_for_nn with ceil would otherwise shift it)."""
    if scale == 1.0 and size_out == size_in:
        return np.arange(size_out, dtype=np.int64)
    f32 = np.float32
    x, s, half = np.arange(size_out, dtype=f32), f32(scale), f32(0.5)
    if coordinates in ("half_pixel", "pytorch_half_pixel"):
        original = (x + half) / s - half
        if coordinates == "pytorch_half_pixel" and size_out <= 1:
            original = np.zeros_like(x)
    elif coordinates == "align_corners":
        original = x * f32(size_in - 1) / f32(max(size_out - 1, 1))  # (x is 0 at size 1)
    elif coordinates == "asymmetric":
        original = x / s
    else:  # tf_half_pixel_for_nn
        original = (x + half) / s
    whole = np.trunc(original)
    away = np.where(np.abs(original - whole) >= half, whole + np.sign(original), whole)
    if rounding == "simple":  # (Upsample, Resize-10: up when shrinking, else down)
        index = np.ceil(original) if scale < 1 else np.floor(original)
    elif rounding == "floor":
        index = np.floor(original)
    elif rounding == "ceil":
        index = np.ceil(original)
    elif rounding == "round_prefer_ceil":
        index = away
    else:  # round_prefer_floor: a half (x == trunc(x) + 0.5) goes down
        index = np.where(original == whole + half, np.floor(original), away)
    clamped: np.ndarray[Any, Any] = np.clip(index, 0, size_in - 1).astype(np.int64)
    return clamped


def _resize_plan(
    op: str,
    attrs: dict[str, Any],
    opset: int,
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
) -> tuple[str, str, list[float], list[int]]:
    """A nearest Resize's or Upsample's attributes checked: (coordinate transformation,
    rounding, each axis' scale, the output's sizes); ModelError naming what is not lowered."""
    rank = len(shape)
    mode = _text(attrs.get("mode"), "nearest")
    if mode != "nearest":
        raise ModelError(
            f"{op}: mode '{mode}' interpolates (arithmetic); dmlops moves elements: only mode "
            "'nearest' (DirectML's UPSAMPLE_2D NEAREST_NEIGHBOR)"
        )
    if op == "Upsample" or opset < 11:  # onnxruntime's "simple" nearest there
        coordinates, rounding = "asymmetric", "simple"
    else:
        coordinates = _text(attrs.get("coordinate_transformation_mode"), "half_pixel")
        rounding = _text(attrs.get("nearest_mode"), "round_prefer_floor")
        if coordinates == "tf_crop_and_resize":
            raise ModelError(f"{op}: tf_crop_and_resize (a region of interest) is not lowered")
        if coordinates not in _COORDINATES:
            raise ModelError(
                f"{op}: coordinate_transformation_mode '{coordinates}' is not one dmlops lowers "
                f"({', '.join(_COORDINATES)})"
            )
        if rounding not in _ROUNDINGS:
            raise ModelError(
                f"{op}: nearest_mode '{rounding}' is not one of {', '.join(_ROUNDINGS)}"
            )
    if attrs.get("antialias"):
        raise ModelError(f"{op}: antialias filters (arithmetic); dmlops moves elements")
    axes = attrs.get("axes")
    if axes is not None:
        axes = [int(a) + rank if int(a) < 0 else int(a) for a in axes]
        if sorted(set(axes)) != sorted(axes) or any(not 0 <= a < rank for a in axes):
            raise ModelError(
                f"{op}: axes {list(attrs['axes'])} are not distinct axes of rank {rank}"
            )
    axes = list(range(rank)) if axes is None else axes
    if sizes is not None and len(sizes):
        if _text(attrs.get("keep_aspect_ratio_policy"), "stretch") != "stretch":
            raise ModelError(f"{op}: keep_aspect_ratio_policy other than 'stretch' is not lowered")
        if len(sizes) != len(axes):
            raise ModelError(f"{op}: {len(sizes)} sizes for {len(axes)} axes")
        out = list(shape)
        for a, n in zip(axes, sizes, strict=True):
            out[a] = int(n)
        factors = [
            float(np.float32(o) / np.float32(n)) if n else 1.0
            for o, n in zip(out, shape, strict=True)
        ]
    elif scales is not None and len(scales):
        if len(scales) != len(axes):
            raise ModelError(f"{op}: {len(scales)} scales for {len(axes)} axes")
        factors = [1.0] * rank
        for a, s in zip(axes, scales, strict=True):
            factors[a] = float(s)
        if any(not s > 0 for s in factors):
            raise ModelError(f"{op}: scales {list(scales)} must be positive")
        # (as onnxruntime: the float32 product, truncated)
        out = [int(np.float32(s) * np.float32(n)) for n, s in zip(shape, factors, strict=True)]
    else:
        raise ModelError(f"{op}: neither scales nor sizes is given")
    return coordinates, rounding, factors, out


def resized_shape(
    op: str,
    attrs: dict[str, Any],
    opset: int,
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
) -> tuple[int, ...]:
    """The output's sizes of a nearest Resize or Upsample (its attributes checked)."""
    return tuple(_resize_plan(op, attrs, opset, shape, scales, sizes)[3])


def nearest_scales(
    op: str,
    attrs: dict[str, Any],
    opset: int,
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
) -> tuple[int, int]:
    """The (height, width) whole factors of a nearest Resize or Upsample of an input of
    `shape` (no size 0) that UPSAMPLE_2D's copies make exactly; ModelError naming why where
    none do."""
    rank = len(shape)
    maps, out, (coordinates, rounding, _) = index_maps(op, attrs, opset, shape, scales, sizes)
    whole = []
    for d, (n, o, got) in enumerate(zip(shape, out, maps, strict=True)):
        k = o // n if n and o % n == 0 else 0
        if not k or not np.array_equal(got, np.arange(o) // k):
            raise ModelError(
                f"{op}: axis {d} from {n} to {o} ({coordinates}, {rounding}) is not a whole-"
                "factor nearest upsample: dmlops lowers Resize onto UPSAMPLE_2D's copies"
            )
        whole.append(k)
    if any(k != 1 for k in whole[:-2]) or rank < 2:
        raise ModelError(
            f"{op}: scales {whole} upsample more than the last two axes: UPSAMPLE_2D scales "
            "height and width"
        )
    return whole[-2], whole[-1]


def index_maps(
    op: str,
    attrs: dict[str, Any],
    opset: int,
    shape: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
) -> tuple[list[np.ndarray[Any, Any]], tuple[int, ...], tuple[str, str, list[float]]]:
    """Each axis's map (output position -> input index) of a nearest Resize or Upsample as
    onnxruntime computes it, the output's sizes, and (coordinate transformation, rounding,
    each axis' scale)."""
    coordinates, rounding, factors, out = _resize_plan(op, attrs, opset, shape, scales, sizes)
    maps = [
        source_indices(n, o, f, coordinates, rounding)
        for n, o, f in zip(shape, out, factors, strict=True)
    ]
    return maps, tuple(out), (coordinates, rounding, factors)


_FLT_MAX = float(np.finfo(np.float32).max)


def directml_fields(
    coordinates: str,
    rounding: str,
    factors: Sequence[float],
    shape: Sequence[int],
    out: Sequence[int],
) -> tuple[list[float], list[float], list[float], str]:
    """RESAMPLE2's Scales, InputPixelOffsets, OutputPixelOffsets and RoundingDirection for
    a nearest Resize, as onnxruntime's DirectML provider sets them."""
    scales, ins, outs = [], [], []
    for n, o, f in zip(shape, out, factors, strict=True):
        a, b, s = 0.5, -0.5, float(f)
        if coordinates == "pytorch_half_pixel" and n <= 1:
            a, b, s = 0.0, 0.0, _FLT_MAX
        elif coordinates == "align_corners":
            a, b = 0.0, 0.0
            s = _FLT_MAX if o <= 1 or n <= 1 else (o - 1) / (n - 1)
        elif coordinates == "asymmetric":
            a, b = 0.0, 0.0
        elif coordinates == "tf_half_pixel_for_nn":
            a, b = 0.0, -0.5
        scales.append(s)
        ins.append(a)
        outs.append(b)
    # the nearest mode as a rounding direction and a shift of the input offsets
    shrinking = all(f < 1 for f in factors if f != 1) and any(f != 1 for f in factors)
    direction, shift = {
        "round_prefer_floor": ("INCREASING", 0.5),
        "round_prefer_ceil": ("DECREASING", -0.5),
        "floor": ("DECREASING", 0.0),
        "ceil": ("INCREASING", 0.0),
        # (per axis: up where it shrinks; RESAMPLE2 has one direction, the maps decide)
        "simple": ("INCREASING" if shrinking else "DECREASING", 0.0),
    }[rounding]
    return scales, [a + shift for a in ins], outs, direction
