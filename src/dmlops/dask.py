"""DirectML's data-movement operators on Dask arrays: lazy, chunk by chunk (extra `dmlops[dask]`).

`slice`, `slice1`, `split` and `join` validate their descriptor eagerly from shapes and
dtypes (the functional API's rules and messages), then build one task per output chunk.
A task reads only the input chunks that chunk's elements come from and copies each
one's share straight into the chunk (one functional-API SLICE1 call, one plan, per input
chunk), so a negative stride reverses chunk order without materialising more than one
output chunk and its inputs. Output chunks follow the input's chunking along every axis
the operator maps with step 1 and are otherwise about the input's chunk size; `chunks=`
overrides.
"""

from __future__ import annotations

import builtins
import functools
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import functional
from .ops import JoinDesc, OperatorDesc, Slice1Desc, SliceDesc, SplitDesc
from .plan import LogicalCopy
from .tensor import BufferTensorDesc, DataType, FeatureLevel

__all__ = ["slice", "slice1", "split", "join"]


def _dask() -> Any:
    try:
        import dask.array as da
    except ImportError as e:
        from .errors import DmlError

        raise DmlError("dmlops.dask needs dask: pip install 'dmlops[dask]'") from e
    return da


def _tensor(x: Any, shape: Sequence[int] | None = None) -> BufferTensorDesc:
    return BufferTensorDesc(
        DataType.from_numpy(x.dtype), tuple(x.shape if shape is None else shape)
    )


def _bounds(chunks: Sequence[int]) -> np.ndarray[Any, Any]:
    return np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)


def _default_chunks(
    out_shape: Sequence[int], like: Any, copies: list[LogicalCopy]
) -> tuple[tuple[int, ...], ...]:
    """The input's chunking along axes copied with step 1 and no shift, else its chunk size."""
    result = []
    for d, n in enumerate(out_shape):
        in_chunks = like.chunks[d]
        aligned = all(c.src_step[d] == 1 and c.src_start[d] == c.dst_start[d] for c in copies)
        if aligned and len(copies) == 1 and sum(in_chunks) == n:
            result.append(tuple(in_chunks))
            continue
        size = max(1, max(in_chunks, default=1))
        result.append(tuple(min(size, n - s) for s in range(0, n, size)) if n else (0,))
    return tuple(result)


_Axis = tuple[int, int, int, int, tuple[tuple[int, int], ...]]


def _chunk_task(
    pieces: list[tuple[_Axis, ...]],
    shape: tuple[int, ...],
    dtype: Any,
    level: FeatureLevel,
    *blocks: Any,
) -> Any:
    """Produce one output chunk: each input chunk's share goes straight into it, one plan each.

    A piece is, per axis, (first output index in the chunk, count, first input index,
    input step, bounds of the input chunks read); blocks come in piece-then-grid order.
    """
    out = np.empty(shape, dtype)
    it = iter(blocks)
    for axes in pieces:
        for grid in itertools.product(*(bounds for *_, bounds in axes)):
            block = next(it)
            offsets, sizes, strides, where = [], [], [], []
            for (t0, count, first, step, _), (cb0, cb1) in zip(axes, grid, strict=True):
                # output positions t (0 <= t < count) whose input index first + step*t is here
                if step > 0:
                    ta, tb = -(-(cb0 - first) // step), (cb1 - 1 - first) // step
                else:
                    ta, tb = -(-(first - (cb1 - 1)) // -step), (first - cb0) // -step
                ta, tb = max(ta, 0), min(tb, count - 1)
                if ta > tb:
                    break
                offsets.append(min(first + step * ta, first + step * tb) - cb0)
                sizes.append((tb - ta) * abs(step) + 1)
                strides.append(step)
                where.append(builtins.slice(t0 + ta, t0 + tb + 1))
            else:
                functional.slice1(
                    block, offsets, sizes, strides, feature_level=level, out=out[tuple(where)]
                )
    return out


def _build(
    desc: OperatorDesc,
    inputs: list[Any],
    level: FeatureLevel,
    chunks: Any,
    token: str,
) -> list[Any]:
    """One dask array per output: a task per output chunk over the input chunks it reads."""
    da = _dask()
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    copies = desc.logical_copies()
    in_bounds = [[_bounds(c) for c in x.chunks] for x in inputs]
    results = []
    for k, (_, out_t) in enumerate(desc.output_fields()):
        mine = [c for c in copies if c.dst == k]
        shape = tuple(out_t.sizes)
        out_chunks = (
            da.core.normalize_chunks(chunks, shape, dtype=inputs[0].dtype)
            if chunks is not None
            else _default_chunks(shape, inputs[0], mine)
        )
        name = f"dmlops-{token}-{k}-" + tokenize(desc, [x.name for x in inputs], out_chunks, level)
        out_bounds = [_bounds(c) for c in out_chunks]
        graph: dict[Any, Any] = {}
        for index in itertools.product(*(range(len(c)) for c in out_chunks)):
            lo = [int(out_bounds[d][i]) for d, i in enumerate(index)]
            hi = [int(out_bounds[d][i + 1]) for d, i in enumerate(index)]
            pieces, keys = [], []
            for c in mine:
                t0 = [max(lo[d], c.dst_start[d]) for d in range(len(shape))]
                t1 = [min(hi[d], c.dst_start[d] + c.shape[d]) for d in range(len(shape))]
                if any(a >= b for a, b in zip(t0, t1, strict=True)):
                    continue
                axes, grid_index = [], []
                for d in range(len(shape)):
                    step = c.src_step[d]
                    first = c.src_start[d] + step * (t0[d] - c.dst_start[d])
                    last = first + step * (t1[d] - 1 - t0[d])
                    bounds = in_bounds[c.src][d]
                    i0 = int(np.searchsorted(bounds, min(first, last), side="right")) - 1
                    i1 = int(np.searchsorted(bounds, max(first, last), side="right")) - 1
                    read = tuple((int(bounds[i]), int(bounds[i + 1])) for i in range(i0, i1 + 1))
                    axes.append((t0[d] - lo[d], t1[d] - t0[d], first, step, read))
                    grid_index.append(range(i0, i1 + 1))
                keys += [(inputs[c.src].name, *g) for g in itertools.product(*grid_index)]
                pieces.append(tuple(axes))
            chunk_shape = tuple(h - low for low, h in zip(lo, hi, strict=True))
            key = (name, *index)
            task = functools.partial(_chunk_task, pieces, chunk_shape, inputs[0].dtype, level)
            graph[key] = (task, *keys)
        hlg = HighLevelGraph.from_collections(name, graph, dependencies=inputs)
        meta = np.empty((0,) * len(shape), dtype=inputs[0].dtype)
        results.append(da.Array(hlg, name, out_chunks, meta=meta))
    return results


def _validated(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None) -> FeatureLevel:
    level = functional._level(feature_level)
    desc.validate(level)
    return level


def slice(  # noqa: A001 - DirectML's operator name
    x: Any,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE on a dask array (see dmlops.slice), lazily."""
    desc = SliceDesc(_tensor(x), _tensor(x, sizes), offsets, sizes, strides)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "slice")[0]


def slice1(
    x: Any,
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    output_sizes: Sequence[int] | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE1 on a dask array (see dmlops.slice1), lazily."""
    t = _tensor(x)
    probe = Slice1Desc(t, t, window_offsets, window_sizes, window_strides)
    shape = probe.default_output_sizes() if output_sizes is None else tuple(output_sizes)
    desc = Slice1Desc(t, _tensor(x, shape), window_offsets, window_sizes, window_strides)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "slice1")[0]


def split(
    x: Any,
    axis: int,
    sizes: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> list[Any]:
    """DML SPLIT on a dask array (see dmlops.split), lazily; one dask array per piece."""
    shapes = [[p if d == axis else n for d, n in enumerate(x.shape)] for p in sizes]
    desc = SplitDesc(_tensor(x), [_tensor(x, s) for s in shapes], axis)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, "split")


def join(
    xs: Sequence[Any],
    axis: int,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML JOIN on dask arrays (see dmlops.join), lazily."""
    xs = list(xs)
    if not xs:
        return functional.join([], axis)  # raises the functional API's error
    shape = list(xs[0].shape)
    if 0 <= axis < len(shape):
        shape[axis] = sum(x.shape[axis] if x.ndim > axis else 0 for x in xs)
    desc = JoinDesc([_tensor(x) for x in xs], _tensor(xs[0], shape), axis)
    level = _validated(desc, feature_level)
    return _build(desc, xs, level, chunks, "join")[0]
