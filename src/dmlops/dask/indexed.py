"""The indexed operators on dask arrays: gathers routed to the chunks that hold their rows,
scatters, one-hot and reversed subsequences."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import calls
from ..arrays import strided
from ..errors import DmlError, IndexOutOfRangeError
from ..tensor import FeatureLevel
from ._chunks import (
    _bounds,
    _dask,
    _data_type,
    _empty,
    task,
)


def gather(
    x: Any,
    indices: Any,
    axis: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    clamp_indices: bool = False,
) -> Any:
    """DML GATHER on a dask array (see dmlops.gather: numpy.take's meaning), lazily, with
    indices whose values are known (a numpy array or a list): the indices are routed to the
    chunks that hold them, as dask.array.take routes them: a task per (source chunk, output
    chunk) pair gathers the rows one wants from the other, and a task per output chunk joins
    those parts in the indices' order, so no task holds more than a chunk and its parts.
    An index outside [-n, n) is an IndexOutOfRangeError before any task exists (with
    `clamp_indices`, WebNN's meaning: clamped into the axis). Indices that are themselves a
    dask array (values known only when they are computed) are taken too: the gathered axis
    of x is then made one chunk, and each output chunk is one task over an indices chunk and
    that column of x (an index out of range is an error of that task)."""
    da = _dask()
    from dask.array.utils import meta_from_array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    if isinstance(indices, da.Array):
        return _gather_lazy(x, indices, axis, feature_level, clamp_indices)
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu" and idx.size:
        raise DmlError(f"GATHER.IndicesTensor.DataType is {idx.dtype}: indices are integers")
    rank = x.ndim
    if rank == 0 or not -rank <= int(axis) < rank:
        raise DmlError(f"GATHER: axis {axis} is outside [{-max(rank, 1)}, {max(rank, 1)})")
    a = int(axis) % rank
    _data_type(x.dtype)  # (elements a plan moves: refused here otherwise)
    calls._level(feature_level)
    n = int(x.shape[a])
    flat = idx.reshape(-1).astype(np.int64)
    if clamp_indices:
        flat = np.clip(flat, -n, n - 1)
    bad = np.nonzero((flat < -n) | (flat >= n))[0]
    if bad.size:
        k = int(bad[0])
        raise IndexOutOfRangeError(
            f"GATHER.IndicesTensor: the index at element {k} is {int(flat[k])}, outside "
            f"[{-n}, {n}) (nothing was read)"
        )
    flat = np.where(flat < 0, flat + n, flat)
    shape = (*x.shape[:a], *idx.shape, *x.shape[a + 1 :])
    if flat.size == 0 or 0 in x.shape:
        return _empty(x, shape)
    bounds = _bounds(x.chunks[a])
    step = max(max(x.chunks[a]), 1)
    pieces = [flat[i : i + step] for i in range(0, flat.size, step)]
    out_chunks = list(x.chunks)
    out_chunks[a] = tuple(len(p) for p in pieces)
    name = "dmlops-gather-" + tokenize(x.name, flat.tobytes(), a, clamp_indices)
    parts_name = name + "-parts"
    others = [range(len(c)) for d, c in enumerate(x.chunks) if d != a]
    graph: dict[Any, Any] = {}
    for j, wanted in enumerate(pieces):
        owner = np.searchsorted(bounds, wanted, side="right") - 1
        chunks_read = [int(c) for c in np.unique(owner)]
        where = [np.nonzero(owner == c)[0] for c in chunks_read]
        takes = [
            functools.partial(_gather_part, a, wanted[owner == c] - bounds[c]) for c in chunks_read
        ]
        place = functools.partial(_in_order, a, where)
        for other in itertools.product(*others):
            part_keys = []
            for c, take in zip(chunks_read, takes, strict=True):
                part_key = (parts_name, c, j, *other)
                graph[part_key] = (take, (x.name, *other[:a], c, *other[a:]))
                part_keys.append(part_key)
            out_key = (name, *other[:a], j, *other[a:])
            graph[out_key] = (place, *part_keys)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=[x])
    meta = meta_from_array(x, ndim=rank)  # type: ignore[no-untyped-call]
    result = da.Array(hlg, name, tuple(out_chunks), meta=meta)
    return result if idx.ndim == 1 else result.reshape(shape)


def _indices_like(block: Any, values: Any) -> Any:
    """Index values as an int64 array of `block`'s library (CuPy for CuPy chunks)."""
    if type(block).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy.asarray(values, dtype=cupy.int64)
    return np.asarray(values, dtype=np.int64)


@task
def _gather_part(axis: int, local: Any, block: Any) -> Any:
    """The rows of one source chunk that one output chunk wants (one GATHER): a task that
    reads that chunk alone, so no task holds more than a chunk and what it sends on."""
    from ..arrays import indexed

    return indexed.gather(block, _indices_like(block, local), axis)


@task
def _in_order(axis: int, where: list[Any], *parts: Any) -> Any:
    """One output chunk from the parts its source chunks sent: joined, then put back in the
    indices' order (one more GATHER) where more than one chunk sent rows."""
    from ..arrays import indexed

    if len(parts) == 1:
        return parts[0]
    joined = strided.join(list(parts), axis)
    order = np.argsort(np.concatenate(where), kind="stable")
    return indexed.gather(joined, _indices_like(joined, order), axis)


def _like(block: Any, values: Any) -> Any:
    """`values` as an array of `block`'s library (CuPy for CuPy chunks), its own type kept."""
    if type(block).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy.asarray(values)
    return np.asarray(values)


@task
def _one_hot_block(depth: int, values: Any, axis: int, level: Any, block: Any) -> Any:
    from ..arrays import indexed

    return indexed.one_hot(block, depth, _like(block, values), axis, feature_level=level)


def one_hot(
    indices: Any,
    depth: int,
    values: Any,
    axis: int = -1,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML ONE_HOT of a dask array of indices (see dmlops.one_hot), lazily: each output chunk
    is its indices chunk's one-hot rows, the `depth` dimension one chunk at `axis`; validated
    before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    if not isinstance(indices, da.Array):
        raise DmlError("dmlops.dask.one_hot: indices are a dask array (else use dmlops.one_hot)")
    table = np.asarray(values)
    rank = indices.ndim + 1
    if not -rank <= int(axis) < rank:
        raise DmlError(f"ONE_HOT: axis {axis} is outside [{-rank}, {rank})")
    a = int(axis) % rank
    probe = np.zeros((1,) * indices.ndim, indices.dtype)  # (the descriptor's checks, now)
    indexed.one_hot(probe, int(depth), table, a, feature_level=feature_level)
    chunks = list(indices.chunks)
    chunks.insert(a, (int(depth),))
    meta = meta_from_array(indices, ndim=rank, dtype=table.dtype)  # type: ignore[no-untyped-call]
    block = functools.partial(_one_hot_block, int(depth), table, a, feature_level)
    return indices.map_blocks(block, new_axis=a, chunks=tuple(chunks), dtype=table.dtype, meta=meta)


@task
def _reverse_block(
    lengths: np.ndarray[Any, Any],
    axis: int,
    batch_axis: int,
    level: Any,
    block: Any,
    block_info: Any = None,
) -> Any:
    from ..arrays import indexed

    start, stop = block_info[0]["array-location"][batch_axis]
    here = _like(block, lengths[start:stop])
    return indexed.reverse_subsequences(block, here, axis, batch_axis, feature_level=level)


def reverse_subsequences(
    x: Any,
    lengths: Any,
    axis: int = 0,
    batch_axis: int = 1,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML REVERSE_SUBSEQUENCES on a dask array (see dmlops.reverse_subsequences), lazily, with
    lengths known or a dask array: the time axis is made one chunk (a reversal reads across
    it: the one rechunk its meaning needs), each output chunk then its input chunk with the
    lengths of its batch rows; validated before any task exists (lengths known only when
    computed are checked by their tasks)."""
    da = _dask()
    from ..arrays import indexed

    lazy = isinstance(lengths, da.Array)
    counts = np.zeros(lengths.shape, lengths.dtype) if lazy else np.asarray(lengths)
    rank = x.ndim
    for name, value in (("axis", axis), ("batch_axis", batch_axis)):
        if not -rank <= int(value) < rank:
            raise DmlError(f"REVERSE_SUBSEQUENCES: {name} {value} is outside [{-rank}, {rank})")
    a, b = int(axis) % rank, int(batch_axis) % rank
    probe_shape = [1] * rank
    probe_shape[b] = int(x.shape[b])
    probe = np.zeros(probe_shape, x.dtype)  # (the descriptor's checks, now)
    indexed.reverse_subsequences(probe, counts, a, b, feature_level=feature_level)
    whole = x.rechunk({a: -1}) if len(x.chunks[a]) > 1 else x
    if lazy:  # each chunk with the chunk of lengths of its batch rows
        letters = _LETTERS[:rank]
        rows = lengths.reshape(-1).rechunk((whole.chunks[b],))
        return da.blockwise(
            functools.partial(_reverse_lazy_block, a, b, feature_level),
            letters,
            whole,
            letters,
            rows,
            letters[b],
            dtype=x.dtype,
            meta=whole._meta,
        )
    block = functools.partial(_reverse_block, counts.reshape(-1), a, b, feature_level)
    return whole.map_blocks(block, dtype=x.dtype, meta=whole._meta)


@task
def _reverse_lazy_block(axis: int, batch_axis: int, level: Any, block: Any, lengths: Any) -> Any:
    from ..arrays import indexed

    here = _like(block, lengths)
    return indexed.reverse_subsequences(block, here, axis, batch_axis, feature_level=level)


def _corner(x: Any, shape: Sequence[int], axis: int) -> Any:
    """x's elements at indices below `shape` off `axis` (all of them along it): the part
    an elements-wise gather or scatter of indices of that shape reaches."""
    box = tuple(slice(None) if d == axis else slice(0, int(n)) for d, n in enumerate(shape))
    return x if all(int(n) == int(m) for n, m in zip(shape, x.shape, strict=True)) else x[box]


@task
def _gather_elements_block(axis: int, level: Any, block: Any, indices: Any) -> Any:
    from ..arrays import indexed

    return indexed.gather_elements(block, _like(block, indices), axis, feature_level=level)


def gather_elements(
    x: Any,
    indices: Any,
    axis: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML GATHER_ELEMENTS on dask arrays (see dmlops.gather_elements: numpy's
    take_along_axis), lazily: the gathered axis of x is made one chunk (an index may name any
    element along it: the one rechunk its meaning needs), and each output chunk is one task
    over its indices chunk and that column of x. The indices (a dask array, or known values)
    have x's rank and at most its sizes off the axis (ONNX's meaning: the output has the
    indices' shape); validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    rank = x.ndim
    if not -rank <= int(axis) < rank:
        raise DmlError(f"GATHER_ELEMENTS: axis {axis} is outside [{-rank}, {rank})")
    a = int(axis) % rank
    if indices.ndim != rank or any(
        int(indices.shape[d]) > int(x.shape[d]) for d in range(rank) if d != a
    ):
        raise DmlError(
            f"GATHER_ELEMENTS: indices of shape {tuple(indices.shape)} for an input of "
            f"{tuple(x.shape)}: they have its rank and at most its sizes off axis {a}"
        )
    x = _corner(x, indices.shape, a)  # the elements the indices' rows lie along
    probe_shape = [1] * rank
    probe = np.zeros(probe_shape, x.dtype)  # (the descriptor's checks, now)
    indexed.gather_elements(
        probe, np.zeros(probe_shape, indices.dtype), a, feature_level=feature_level
    )
    if 0 in tuple(indices.shape):  # nothing gathered
        return _empty(x, tuple(int(n) for n in indices.shape))
    if not isinstance(indices, da.Array):
        known = np.asarray(indices)
        if known.size and (known.min() < -x.shape[a] or known.max() >= x.shape[a]):
            raise IndexOutOfRangeError(
                f"GATHER_ELEMENTS.IndicesTensor: an index is outside [{-x.shape[a]}, "
                f"{x.shape[a]}) (nothing was read)"
            )
        indices = da.from_array(
            known,
            chunks=tuple(
                x.chunks[d] if d != a else (max(1, int(known.shape[a])),) for d in range(rank)
            ),
        )
    whole = x.rechunk({a: -1}) if len(x.chunks[a]) > 1 else x
    ind = indices.rechunk({d: whole.chunks[d] for d in range(rank) if d != a})
    letters = _LETTERS[:rank]
    meta = meta_from_array(whole, ndim=rank)  # type: ignore[no-untyped-call]
    return da.blockwise(  # (both one block along the axis: no contraction, so dask fuses
        functools.partial(_gather_elements_block, a, feature_level),  # the read of x in)
        letters,
        whole,
        letters,
        ind,
        letters,
        dtype=x.dtype,
        align_arrays=False,
        adjust_chunks={letters[a]: ind.chunks[a]},
        meta=meta,
    )


@task
def _gather_block(axis: int, level: Any, clamp: bool, block: Any, indices: Any) -> Any:
    from ..arrays import indexed

    ids = _like(block, indices)
    return indexed.gather(block, ids, axis, feature_level=level, clamp_indices=clamp)


_LETTERS = "abcdefghijklmnopqrstuvwxy"


def _gather_lazy(x: Any, indices: Any, axis: int, feature_level: Any, clamp_indices: bool) -> Any:
    """GATHER with indices that are a dask array: the axis one chunk, a task per pair of
    (indices chunk, x's chunks off the axis)."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    rank = x.ndim
    if rank == 0 or not -rank <= int(axis) < rank:
        raise DmlError(f"GATHER: axis {axis} is outside [{-max(rank, 1)}, {max(rank, 1)})")
    a = int(axis) % rank
    probe = np.zeros((1,) * rank, x.dtype)  # (the descriptor's checks, now)
    indexed.gather(
        probe, np.zeros((1,) * indices.ndim, indices.dtype), a, feature_level=feature_level
    )
    shape = (*x.shape[:a], *indices.shape, *x.shape[a + 1 :])
    if 0 in shape:
        return _empty(x, shape)
    whole = x.rechunk({a: -1}) if len(x.chunks[a]) > 1 else x
    lead, ids = _LETTERS[:a], _LETTERS[a : a + indices.ndim]
    tail = _LETTERS[a + indices.ndim : indices.ndim + rank - 1]
    meta = meta_from_array(whole, ndim=len(shape))  # type: ignore[no-untyped-call]
    if not ids:  # (a scalar index: x's axis contracted)
        return da.blockwise(
            functools.partial(_gather_block, a, feature_level, clamp_indices),
            lead + tail,
            whole,
            lead + "z" + tail,
            indices,
            ids,
            dtype=x.dtype,
            concatenate=True,
            meta=meta,
        )
    return da.blockwise(  # (x's one block along the axis broadcast over the indices' first
        functools.partial(_gather_block, a, feature_level, clamp_indices),  # dimension: no
        lead + ids + tail,  # contraction, so dask fuses the read of x in)
        whole,
        lead + ids[0] + tail,
        indices,
        ids,
        dtype=x.dtype,
        align_arrays=False,
        adjust_chunks={ids[0]: indices.chunks[0]},
        meta=meta,
    )


@task
def _gather_nd_block(batch_dims: int, level: Any, block: Any, indices: Any) -> Any:
    from ..arrays import indexed

    return indexed.gather_nd(block, _like(block, indices), batch_dims, feature_level=level)


def gather_nd(
    x: Any,
    indices: Any,
    batch_dims: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML GATHER_ND (GATHER_ND1 with `batch_dims`) on dask arrays (see dmlops.gather_nd),
    lazily. Known indices without batch dimensions are routed as `gather` routes rows (each
    tuple is a row of x's addressed dimensions merged: an output chunk reads only the chunks
    its tuples name). Otherwise the dimensions the tuples address are made one chunk (a tuple
    may name any sub-block of them), the tuple axis of the indices one chunk, and each output
    chunk is one task over an indices chunk and the matching batch of x (an index out of
    range is then an error of its task). Known indices are checked now, values too."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    lazy: Any = indices if isinstance(indices, da.Array) else None
    known: Any = None if lazy is not None else np.asarray(indices)
    ishape = tuple(int(n) for n in (lazy if lazy is not None else known).shape)
    rank, b = x.ndim, int(batch_dims)
    k = ishape[-1] if ishape else 0
    if not ishape or not 0 <= b < len(ishape) or not 1 <= k <= rank - b:
        raise DmlError(
            f"GATHER_ND: indices of shape {list(ishape)} with batch_dims {batch_dims} for an "
            f"input of {rank} dimensions (tuples of 1 to {rank - b} entries after the batch)"
        )
    if known is not None:  # the descriptor's checks and the values', now (no copy of x)
        probe = np.broadcast_to(np.zeros((), x.dtype), (*x.shape[: b + k], *(1,) * (rank - b - k)))
        indexed.gather_nd(probe, known, b, feature_level=feature_level)
        if b == 0 and known.size:  # routed as GATHER routes rows: each tuple one row
            sizes = x.shape[:k]
            tuples = known.reshape(-1, k).astype(np.int64)
            tuples = np.where(tuples < 0, tuples + np.array(sizes), tuples)
            rows = np.ravel_multi_index(tuple(tuples.T), sizes).reshape(ishape[:-1])
            flat = x if k == 1 else x.reshape((math.prod(sizes), *x.shape[k:]))
            return gather(flat, rows, 0, feature_level=feature_level)
        lazy = da.from_array(known, chunks=(*x.chunks[:b], *((n,) for n in ishape[b:])))
    else:
        probe_ids = np.zeros((*(1,) * (len(ishape) - 1), k), lazy.dtype)
        indexed.gather_nd(np.zeros((1,) * rank, x.dtype), probe_ids, b, feature_level=feature_level)
    shape = (*x.shape[:b], *ishape[b:-1], *x.shape[b + k :])
    if 0 in shape:
        return _empty(x, shape)
    whole = x.rechunk({d: -1 for d in range(b, b + k)})
    ids = lazy.rechunk({len(ishape) - 1: -1, **{d: whole.chunks[d] for d in range(b)}})
    batch, picks = _LETTERS[:b], _LETTERS[b : len(ishape) - 1]
    tail = _LETTERS[len(ishape) - 1 : len(ishape) - 1 + rank - b - k]
    addressed = "ABCDEFGH"[:k]  # (x's addressed dimensions: one chunk, contracted)
    meta = meta_from_array(whole, ndim=len(shape))  # type: ignore[no-untyped-call]
    return da.blockwise(
        functools.partial(_gather_nd_block, b, feature_level),
        batch + picks + tail,
        whole,
        batch + addressed + tail,
        ids,
        batch + picks + "z",
        dtype=x.dtype,
        concatenate=True,
        meta=meta,
    )


def _as_dask(a: Any, chunks: Any) -> Any:
    """A dask array of `a` (already one, or known values chunked as given)."""
    da = _dask()
    return a if isinstance(a, da.Array) else da.from_array(np.asarray(a), chunks=chunks)


@task
def _scatter_elements_block(axis: int, level: Any, block: Any, indices: Any, updates: Any) -> Any:
    from ..arrays import indexed

    return indexed.scatter_elements(
        block, _like(block, indices), _like(block, updates), axis, feature_level=level
    )


def scatter_elements(
    x: Any,
    indices: Any,
    updates: Any,
    axis: int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML SCATTER_ELEMENTS on dask arrays (see dmlops.scatter_elements), lazily: the
    scattered axis of x is made one chunk (an index may name any element along it: the one
    rechunk its meaning needs) and each output chunk is one task over that column of x and
    the indices and updates of its rows (of the later of two updates of one element, as
    DirectML). Indices and updates (known or dask arrays) have x's rank and at most its
    sizes off the axis (smaller: the corner they reach is scattered and set into x);
    validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    rank = x.ndim
    if not -rank <= int(axis) < rank:
        raise DmlError(f"SCATTER_ELEMENTS: axis {axis} is outside [{-rank}, {rank})")
    a = int(axis) % rank
    shape = tuple(int(n) for n in indices.shape)
    if (
        tuple(int(n) for n in updates.shape) != shape
        or len(shape) != rank
        or any(shape[d] > int(x.shape[d]) for d in range(rank) if d != a)
    ):
        raise DmlError(
            f"SCATTER_ELEMENTS: indices {list(shape)} and updates {list(updates.shape)} for "
            f"an input of {list(x.shape)}: both have its rank and at most its sizes off axis {a}"
        )
    probe = np.zeros((1,) * rank, x.dtype)  # (the descriptor's checks, now)
    ids = np.zeros((1,) * rank, indices.dtype)
    indexed.scatter_elements(probe, ids, probe, a, feature_level=feature_level)
    if not isinstance(indices, da.Array):
        known = np.asarray(indices)
        n = int(x.shape[a])
        if known.size and (known.min() < -n or known.max() >= n):
            raise IndexOutOfRangeError(
                f"SCATTER_ELEMENTS.IndicesTensor: an index is outside [{-n}, {n}) (nothing "
                "was written)"
            )
    if 0 in x.shape or 0 in shape:
        return x
    corner = _corner(x, shape, a)
    if corner.shape != x.shape:  # the rows the indices reach scattered, the rest kept
        written = scatter_elements(corner, indices, updates, a, feature_level=feature_level)
        out = x.copy()
        out[tuple(slice(0, n) for n in corner.shape)] = written
        return out
    whole = x.rechunk({a: -1}) if len(x.chunks[a]) > 1 else x
    along = tuple(whole.chunks[d] if d != a else (shape[a],) for d in range(rank))
    ind = _as_dask(indices, along).rechunk(along)
    upd = _as_dask(updates, along).rechunk(along)
    letters = _LETTERS[:rank]
    meta = meta_from_array(whole, ndim=rank)  # type: ignore[no-untyped-call]
    return da.blockwise(  # (each one block along the axis: no contraction, so dask fuses
        functools.partial(_scatter_elements_block, a, feature_level),  # the read of x in)
        letters,
        whole,
        letters,
        ind,
        letters,
        upd,
        letters,
        dtype=x.dtype,
        align_arrays=False,
        adjust_chunks={letters[a]: whole.chunks[a]},
        meta=meta,
    )


def _scatter_nd_routed(
    x: Any, known: np.ndarray[Any, Any], updates: Any, k: int, level: Any
) -> Any:
    """SCATTER_ND with known tuples (validated, in range): each block of x's first k
    dimensions gets the tuples inside it, in their order, made local to it."""
    da = _dask()
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    tuples = known.reshape(-1, k).astype(np.int64)
    tuples = np.where(tuples < 0, tuples + np.array(x.shape[:k], np.int64), tuples)
    count, tail = tuples.shape[0], tuple(int(n) for n in x.shape[k:])
    flat = updates.reshape((count, *tail))
    rows = _as_dask(flat, ((count,), *x.chunks[k:])).rechunk(
        {d + 1: c for d, c in enumerate(x.chunks[k:])}
    )
    edges = [_bounds(x.chunks[d]) for d in range(k)]
    block_of = np.stack(
        [np.searchsorted(edges[d], tuples[:, d], side="right") - 1 for d in range(k)], axis=1
    )
    name = "dmlops-scatter_nd-" + tokenize(x, known, updates, k, level)
    graph: dict[Any, Any] = {}
    parts: list[Any] = []
    tail_grid = list(itertools.product(*(range(len(c)) for c in x.chunks[k:])))
    for lead in itertools.product(*(range(len(x.chunks[d])) for d in range(k))):
        picked = np.flatnonzero((block_of == np.array(lead)).all(axis=1))  # (in order)
        if picked.size:
            part = gather(rows, picked, 0, feature_level=level).rechunk({0: -1})
            parts.append(part)
            local = tuples[picked] - np.array([edges[d][i] for d, i in enumerate(lead)])
        for trail in tail_grid:
            key = (name, *lead, *trail)
            if not picked.size:
                graph[key] = (x.name, *lead, *trail)  # no tuple lands here: x's chunk
                continue
            task = functools.partial(_scatter_nd_block, level)
            graph[key] = (task, (x.name, *lead, *trail), local, (part.name, 0, *trail))
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=[x, *parts])
    return da.Array(hlg, name, x.chunks, meta=x._meta)


@task
def _scatter_nd_block(level: Any, block: Any, indices: Any, updates: Any) -> Any:
    from ..arrays import indexed

    return indexed.scatter_nd(
        block, _like(block, indices), _like(block, updates), feature_level=level
    )


def scatter_nd(
    x: Any,
    indices: Any,
    updates: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> Any:
    """DML SCATTER_ND on dask arrays (see dmlops.scatter_nd), lazily, the later of two tuples
    naming one place winning (as DirectML). Index tuples whose values are known are routed
    to the chunks they name, as `gather` routes rows: each output chunk is one task over its
    block of x, the tuples that land in it and their updates (gathered from the chunks that
    hold them), and a chunk no tuple names is x's own (no copy); no rechunk. Indices that are
    a dask array make the addressed dimensions one chunk (a tuple may name any sub-block of
    them), each output chunk then one task over its block of x, every tuple and the updates
    of its trailing chunk. Validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from ..arrays import indexed

    ishape = tuple(int(n) for n in indices.shape)
    rank = x.ndim
    k = ishape[-1] if ishape else 0
    want = (*ishape[:-1], *x.shape[k:]) if ishape else None
    if not 1 <= k <= rank or tuple(int(n) for n in updates.shape) != want:
        raise DmlError(
            f"SCATTER_ND: indices of shape {list(ishape)} and updates {list(updates.shape)} for "
            f"an input of {list(x.shape)} (updates: the indices' leading sizes, then the "
            "input's past the tuple)"
        )
    if not isinstance(indices, da.Array):  # the descriptor's checks and the values', now
        known = np.asarray(indices)
        probe = np.broadcast_to(np.zeros((), x.dtype), (*x.shape[:k], *(1,) * (rank - k)))
        small = np.zeros((*ishape[:-1], *(1,) * (rank - k)), x.dtype)
        indexed.scatter_nd(probe.copy(), known, small, feature_level=feature_level)
    else:
        probe = np.zeros((1,) * rank, x.dtype)
        ids = np.zeros((*(1,) * (len(ishape) - 1), k), indices.dtype)
        small = np.zeros((*(1,) * (len(ishape) - 1), *(1,) * (rank - k)), x.dtype)
        indexed.scatter_nd(probe, ids, small, feature_level=feature_level)
    if 0 in x.shape or 0 in ishape:
        return x
    if not isinstance(indices, da.Array):
        return _scatter_nd_routed(x, np.asarray(indices), updates, k, feature_level)
    whole = x.rechunk({d: -1 for d in range(k)})
    tail_chunks = whole.chunks[k:]
    picks = len(ishape) - 1
    ind = _as_dask(indices, ishape).rechunk(tuple((n,) for n in ishape))
    upd = _as_dask(updates, (*ishape[:-1], *tail_chunks))
    upd = upd.rechunk((*((n,) for n in ishape[:-1]), *tail_chunks))
    addressed, tail = _LETTERS[:k], _LETTERS[k:rank]
    rows = "ABCDEFGH"[:picks]
    meta = meta_from_array(whole, ndim=rank)  # type: ignore[no-untyped-call]
    return da.blockwise(
        functools.partial(_scatter_nd_block, feature_level),
        addressed + tail,
        whole,
        addressed + tail,
        ind,
        rows + "z",
        upd,
        rows + tail,
        dtype=x.dtype,
        concatenate=True,
        meta=meta,
    )
