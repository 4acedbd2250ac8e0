"""Operators that run chunk by chunk on dask arrays: cast, tril / triu, nearest resampling."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arrays import family
from ..errors import DmlError
from ..tensor import FeatureLevel
from ._chunks import (
    _empty,
    _tensor,
    task,
)
from .indexed import gather


@task
def _cast_block(dtype: np.dtype[Any], level: Any, block: Any) -> Any:
    return family.cast(block, dtype, feature_level=level)


def cast(x: Any, dtype: Any, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """DML CAST on a dask array (see dmlops.cast: DirectML's conversion rules), lazily, chunk
    by chunk; validated before any task exists."""
    from dask.array.utils import meta_from_array

    target = family._numpy_type(dtype)
    probe = np.zeros((1,) * max(x.ndim, 1), x.dtype)  # (the descriptor's checks, now)
    family.cast(probe, target, feature_level=feature_level)
    meta = meta_from_array(x, ndim=x.ndim, dtype=target)  # type: ignore[no-untyped-call]
    block = functools.partial(_cast_block, target, feature_level)
    return x.map_blocks(block, dtype=target, meta=meta)


def _block_span(begin: int, end: int, shift: int, height: int, width: int) -> tuple[int, int]:
    """A span of diagonals (column - row in [begin, end), or outside [end, begin) where
    begin > end) seen from a height x width block whose corner lies `shift` diagonals off
    the whole's: the same elements, with both ends kept inside INT32."""
    b = min(max(begin - shift, -height), width)
    e = min(max(end - shift, -height), width)
    if begin > end and b == e:  # the block lies wholly outside [end, begin): every diagonal
        return -height, width
    return b, e


@task
def _diagonal_block(
    begin: int, end: int, value: Any, level: Any, block: Any, block_info: Any = None
) -> Any:
    (r0, _), (c0, _) = block_info[0]["array-location"][-2:]
    b, e = _block_span(begin, end, c0 - r0, *block.shape[-2:])
    if block.ndim <= 4:
        return family.diagonal_matrix1(block, b, e, value, feature_level=level)
    merged = block.reshape((-1, *block.shape[-2:]))
    made = family.diagonal_matrix1(merged, b, e, value, feature_level=level)
    return made.reshape(block.shape)


def diagonal_matrix1(
    x: Any,
    diagonal_fill_begin: int = 0,
    diagonal_fill_end: int = 1,
    value: float | int = 1,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML DIAGONAL_MATRIX1 on a dask array (see dmlops.diagonal_matrix1): `value` on the
    diagonals column - row in [begin, end) (outside [end, begin) where begin > end), x's
    elements elsewhere; lazily, each chunk one DIAGONAL_MATRIX1 with its own span (no
    rechunk). Any rank from 2: the leading axes are the batch."""
    begin, end = int(diagonal_fill_begin), int(diagonal_fill_end)
    if x.ndim < 2:
        raise DmlError(f"DIAGONAL_MATRIX1: x has {x.ndim} dimensions; a matrix needs 2 or more")
    probe = np.zeros((2, 2), x.dtype)  # (the descriptor's checks, now)
    family.diagonal_matrix1(probe, begin, end, value, feature_level=feature_level)
    block = functools.partial(_diagonal_block, begin, end, value, feature_level)
    return x.map_blocks(block, dtype=x.dtype, meta=x._meta)


def _triangle(x: Any, k: int, upper: bool, feature_level: Any) -> Any:
    from ..ops import triangle_span

    name = "triu" if upper else "tril"
    if x.ndim < 2:
        raise DmlError(f"{name}: x has {x.ndim} dimensions; a matrix needs 2 (DIAGONAL_MATRIX1)")
    begin, end = triangle_span(upper, int(k), *x.shape[-2:])
    return diagonal_matrix1(x, begin, end, 0, feature_level=feature_level)


def tril(x: Any, k: int = 0, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """numpy.tril on a dask array, lazily: each chunk one DIAGONAL_MATRIX1 with its own
    diagonal span (no rechunk)."""
    return _triangle(x, k, False, feature_level)


def triu(x: Any, k: int = 0, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """numpy.triu on a dask array, lazily: each chunk one DIAGONAL_MATRIX1 with its own
    diagonal span (no rechunk)."""
    return _triangle(x, k, True, feature_level)


def resample(
    x: Any,
    scales: Sequence[float],
    *,
    sizes: Sequence[int] | None = None,
    input_pixel_offsets: Sequence[float] | None = None,
    output_pixel_offsets: Sequence[float] | None = None,
    rounding_direction: Any = None,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML RESAMPLE / RESAMPLE1 / RESAMPLE2 nearest on a dask array (see dmlops.resample),
    lazily: along each axis whose map is not the identity, the map's indices are gathered
    (routed to the chunks that hold them, as `gather` routes known indices: no rechunk, each
    task a chunk and its parts); the other axes keep their chunks. Validated before any task
    exists."""
    from ..ops import Resample2Desc, ResampleDesc

    factors = [float(v) for v in scales]
    out = (
        tuple(int(n) for n in sizes)
        if sizes is not None
        else ResampleDesc.output_sizes_for(x.shape, factors)
    )
    rank = x.ndim
    ins = [0.5] * rank if input_pixel_offsets is None else list(input_pixel_offsets)
    outs = [-0.5] * rank if output_pixel_offsets is None else list(output_pixel_offsets)
    options: dict[str, Any] = {
        "scales": factors,
        "input_pixel_offsets": input_pixel_offsets,
        "output_pixel_offsets": output_pixel_offsets,
        "rounding_direction": rounding_direction,
        "feature_level": feature_level,
    }
    probe = np.zeros((1,) * rank, x.dtype)  # (the descriptor's checks, now)
    family.resample(probe, sizes=(1,) * rank, **options)
    if len(out) != rank:
        raise DmlError(f"RESAMPLE: {len(out)} output sizes for an input of {rank} dimensions")
    if 0 in x.shape or 0 in out:
        return _empty(x, out)
    if rounding_direction is None and input_pixel_offsets is None and output_pixel_offsets is None:
        ins, outs = [0.5] * rank, [-0.5] * rank
    direction = "DECREASING" if rounding_direction is None else rounding_direction
    if rounding_direction is None:  # RESAMPLE and RESAMPLE1: nearest, halves up
        ins = [float(np.float32(a) - np.float32(0.5)) for a in ins]
    maps = Resample2Desc(_tensor(x), _tensor(x, out), factors, ins, outs, direction).axis_maps()
    moved = x
    for d, index in enumerate(maps):  # each moved axis: a gather routed to the chunks it reads
        if not np.array_equal(index, np.arange(x.shape[d])):
            moved = gather(moved, np.asarray(index, np.int64), d, feature_level=feature_level)
    return moved
