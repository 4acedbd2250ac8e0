"""DirectML's data-movement operators on Dask arrays: lazy, chunk by chunk (extra `dmlops[dask]`).

Every operator validates its descriptor eagerly from shapes and dtypes (the array layer's
rules and messages), the indexed ones (gather, gather_elements, gather_nd, the scatters,
one_hot, reverse_subsequences) by their indices too where their values are known. A result
of the strided ones remembers where its elements come from as boxes of the arrays it was
first built from, so a chain of them composes into one layer: each output chunk is one task
that runs one plan over exactly the source chunks it reads (numpy chunks on the numpy
backend, CuPy chunks on the cuda one). A negative stride reverses chunk order without
materialising more than one output chunk and its inputs. Output chunks are cut where the
source's chunks are, so each reads one source chunk per piece (as dask.array's slicing and
concatenate do); `chunks=` overrides.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import calls
from .arrays import strided
from .backends.numpy_backend import NumpyBackend
from .device import CompiledOperator, Device
from .elements import encode, word_element
from .errors import DmlError, IndexOutOfRangeError
from .ops import (
    DepthToSpace1Desc,
    ElementWiseIdentityDesc,
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from .plan import Layout, LogicalCopy, Plan, compose
from .tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides

__all__ = [
    "slice",
    "slice1",
    "split",
    "join",
    "tile",
    "padding",
    "depth_to_space",
    "space_to_depth",
    "slice_grad",
    "upsample_2d",
    "element_wise_identity",
    "gather",
    "gather_elements",
    "gather_nd",
    "one_hot",
    "reverse_subsequences",
    "scatter_elements",
    "scatter_nd",
    "cast",
    "tril",
    "triu",
    "resample",
]

_CONTENT = "_dmlops_content"


def _dask() -> Any:
    try:
        import dask.array as da
    except ImportError as e:
        raise DmlError("dmlops.dask needs dask: pip install 'dmlops[dask]'") from e
    return da


def _data_type(dtype: Any) -> DataType:
    """The DirectML type describing these elements (an unsigned carrier for bool, bfloat16,
    float8, ...); DmlError for elements a chunk plan does not move (over 8 bytes)."""
    return word_element(dtype, "dmlops.dask").described_as


def _tensor(x: Any, shape: Sequence[int] | None = None) -> BufferTensorDesc:
    return BufferTensorDesc(_data_type(x.dtype), tuple(x.shape if shape is None else shape))


def _empty(x: Any, shape: Sequence[int]) -> Any:
    """An empty dask array of x's type (no chunk holds an element)."""
    return _dask().empty(tuple(shape), dtype=x.dtype, chunks=-1)


def _host_empty(x: Any) -> np.ndarray[Any, Any]:
    """A numpy array of x's shape and type holding no element: the array layer validates
    calls on it and answers with the result's shape, without moving anything."""
    return np.empty(x.shape, x.dtype)


@dataclass(frozen=True)
class _Content:
    """An array as boxes of source dask arrays (LogicalCopy: src indexes `sources`, dst 0;
    a negative src -1 - k writes fill k, one element's bytes, as a plan's fills)."""

    sources: tuple[Any, ...]
    pieces: tuple[LogicalCopy, ...]
    fills: tuple[bytes, ...] = ()

    @property
    def stepped(self) -> bool:
        """Whether a piece steps its destination (depth / space blocks, upsampling): an
        operator reading this array then reads its chunks, not its sources."""
        return any(p.dst_step is not None and set(p.dst_step) != {1} for p in self.pieces)


def _content(x: Any) -> _Content:
    known = getattr(x, _CONTENT, None)
    if known is not None and not known.stepped:
        return known  # type: ignore[no-any-return]
    zeros, ones = (0,) * x.ndim, (1,) * x.ndim
    return _Content((x,), (LogicalCopy(0, zeros, ones, 0, zeros, tuple(x.shape)),))


def _progression(first: int, step: int, count: int, lo: int, hi: int) -> tuple[int, int] | None:
    """The range ta..tb of t in [0, count) with lo <= first + step*t < hi, or None."""
    if step == 0:  # (an edge read again and again)
        return (0, count - 1) if lo <= first < hi and count > 0 else None
    if step > 0:
        ta, tb = -(-(lo - first) // step), (hi - 1 - first) // step
    else:
        ta, tb = -(-(first - (hi - 1)) // -step), (first - lo) // -step
    ta, tb = max(ta, 0), min(tb, count - 1)
    return (ta, tb) if ta <= tb else None


def _through(c: LogicalCopy, p: LogicalCopy, src: int) -> LogicalCopy | None:
    """Copy c (reading its input) through piece p of that input: the part of c p supplies."""
    start, step, dst, shape = [], [], [], []
    for d in range(len(c.shape)):
        t = _progression(
            c.src_start[d], c.src_step[d], c.shape[d], p.dst_start[d], p.dst_start[d] + p.shape[d]
        )
        if t is None:
            return None
        ta, tb = t
        at = c.src_start[d] + c.src_step[d] * ta - p.dst_start[d]
        start.append(p.src_start[d] + p.src_step[d] * at)
        step.append(p.src_step[d] * c.src_step[d])
        dst.append(c.dst_start[d] + (c.dst_step[d] if c.dst_step else 1) * ta)
        shape.append(tb - ta + 1)
    return LogicalCopy(src, tuple(start), tuple(step), 0, tuple(dst), tuple(shape), c.dst_step)


def _composed(desc: OperatorDesc, inputs: list[Any]) -> list[_Content]:
    """Each output of `desc` as boxes of the sources its inputs come from."""
    contents = [_content(x) for x in inputs]
    sources: dict[str, int] = {}
    ordered: list[Any] = []
    for content in contents:
        for s in content.sources:
            if s.name not in sources:
                sources[s.name] = len(ordered)
                ordered.append(s)
    fills: list[bytes] = []  # every fill met, numbered as sources -1, -2, ...

    def fill(value: bytes) -> int:
        if value not in fills:
            fills.append(value)
        return -1 - fills.index(value)

    own = desc.fills()
    per_output: list[list[LogicalCopy]] = [[] for _ in desc.output_fields()]
    for c in desc.logical_copies():
        if c.src < 0:  # the operator writes a constant there
            zeros = (0,) * len(c.shape)
            per_output[c.dst].append(
                LogicalCopy(
                    fill(own[-1 - c.src]), zeros, zeros, 0, c.dst_start, c.shape, c.dst_step
                )
            )
            continue
        content = contents[c.src]
        for p in content.pieces:
            src = (
                fill(content.fills[-1 - p.src])
                if p.src < 0
                else sources[content.sources[p.src].name]
            )
            piece = _through(c, p, src)
            if piece is not None:
                per_output[c.dst].append(piece)
    results = []
    for pieces in per_output:
        used = sorted({p.src for p in pieces if p.src >= 0})
        kept = sorted({p.src for p in pieces if p.src < 0}, reverse=True)
        renumber = {s: i for i, s in enumerate(used)} | {f: -1 - i for i, f in enumerate(kept)}
        pieces = [
            LogicalCopy(
                renumber[p.src], p.src_start, p.src_step, 0, p.dst_start, p.shape, p.dst_step
            )
            for p in pieces
        ]
        results.append(
            _Content(
                tuple(ordered[s] for s in used),
                tuple(pieces),
                tuple(fills[-1 - f] for f in kept),
            )
        )
    return results


def _bounds(chunks: Sequence[int]) -> np.ndarray[Any, Any]:
    return np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)


def _cuts(start: int, step: int, t0: int, t1: int, n: int) -> tuple[int, int]:
    """Chunk edges around the positions start + step * t0 .. start + step * t1 (aligned to
    step's blocks, so that an upsampled or depth-to-space output is cut between blocks)."""
    a, b = sorted((start + step * t0, start + step * t1))
    size = abs(step)
    return a - a % size, min(b + size - b % size, n)


def _default_chunks(shape: Sequence[int], content: _Content) -> tuple[tuple[int, ...], ...]:
    """Per axis, cuts where a piece starts or ends and where its reads cross a source chunk
    boundary: each output chunk then reads one source chunk per piece (as dask's slicing)."""
    result: list[tuple[int, ...]] = []
    for d, n in enumerate(shape):
        if n == 0:
            result.append((0,))
            continue
        cuts = {0, n}
        for p in content.pieces:
            step = p.dst_step[d] if p.dst_step else 1
            count = p.shape[d]
            cuts.update(_cuts(p.dst_start[d], step, 0, count - 1, n))
            if p.src < 0:
                continue
            bounds = content.sources[p.src].chunks[d]
            for a, b in itertools.pairwise(_bounds(bounds)):
                r = _progression(p.src_start[d], p.src_step[d], count, int(a), int(b))
                if r is not None:
                    cuts.update(_cuts(p.dst_start[d], step, r[0], r[1], n))
        edges = sorted(cuts)
        result.append(tuple(b - a for a, b in itertools.pairwise(edges)))
    return tuple(result)


class _ChunkDesc:
    """What one chunk task binds: the source chunks it reads and the chunk it writes."""

    OPERATOR = "dmlops.dask chunk"
    operator_type = "DML_GRAPH"

    def __init__(
        self,
        dtype: DataType,
        inputs: Sequence[tuple[int, ...]],
        output: tuple[int, ...],
        elements: Any = None,
        on_gpu: bool = False,
    ):
        """`elements`: the arrays' own numpy dtype (bfloat16, bool, ...: a chunk of fills
        alone is made of it), `on_gpu`: whether the chunks are CuPy arrays (such a chunk is
        one too)."""
        self.elements = np.dtype(dtype.numpy_dtype if elements is None else elements)
        self.on_gpu = on_gpu

        def exact(shape: tuple[int, ...]) -> BufferTensorDesc:  # chunks are not padded to 4 bytes
            return BufferTensorDesc(dtype, shape, None, dtype.element_size * math.prod(shape))

        self.inputs = [exact(s) for s in inputs]
        self.output = exact(output)

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"InputTensors[{k}]", t) for k, t in enumerate(self.inputs)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensors[0]", self.output)]


@functools.lru_cache(maxsize=8)
def _device(backend: str, level: FeatureLevel) -> Device:
    device = Device(level, backend=backend)
    if backend == "numpy":  # dask spreads the tasks over the cores: each copies on its own
        device.backend = NumpyBackend.serial()
    return device


def _chunk_task(plan: Plan, desc: _ChunkDesc, level: FeatureLevel, *blocks: Any) -> Any:
    """Produce one output chunk: one plan from the source chunks it reads."""
    shape = tuple(desc.output.sizes)
    if not blocks:  # nothing read: fills alone (or nothing), where the other chunks are
        if desc.on_gpu:
            import cupy

            out = cupy.empty(shape, desc.elements)
        else:
            out = np.empty(shape, desc.elements)
        if plan.copies:
            device = _device("cuda" if desc.on_gpu else "numpy", level)
            CompiledOperator(device, desc, plan).execute([], [out])  # type: ignore[arg-type]
        return out
    cupy = type(blocks[0]).__module__.split(".")[0] == "cupy"
    device = _device("cuda" if cupy else "numpy", level)
    backend = device.backend
    blocks = tuple(b if b.flags.c_contiguous else backend.copy_of(b) for b in blocks)
    out = backend.new_like(blocks[0], shape)
    CompiledOperator(device, desc, plan).execute(list(blocks), [out])  # type: ignore[arg-type]
    return out


def _is_whole(copy: LogicalCopy, block: tuple[int, ...], chunk: tuple[int, ...]) -> bool:
    """Whether a copy moves a whole block unchanged into a chunk of its shape."""
    zeros = (0,) * len(chunk)
    identity = copy.src_start == zeros and copy.dst_start == zeros and set(copy.src_step) <= {1}
    identity = identity and copy.src >= 0 and set(copy.dst_step or (1,)) == {1}
    return identity and copy.shape == chunk == block


def _c_layout(shape: Sequence[int]) -> Layout:
    return Layout(0, packed_strides(shape))


_Box = tuple[int, ...]


def _reads(
    p: LogicalCopy, lo: list[int], hi: list[int], bounds: list[np.ndarray[Any, Any]]
) -> Iterator[tuple[_Box, _Box, _Box, _Box]]:
    """What piece `p` copies into the output chunk [lo, hi): for each source chunk it reads
    (its grid index), the copy's first element in that chunk, its first element in the
    output chunk and its size. `bounds` are the source's chunk bounds per axis."""
    steps = p.dst_step or (1,) * len(lo)
    axes = []  # per axis: (first output index in the chunk, count, first source index, chunks)
    for d in range(len(lo)):
        t = _progression(p.dst_start[d], steps[d], p.shape[d], lo[d], hi[d])
        if t is None:
            return
        first = p.src_start[d] + p.src_step[d] * t[0]
        last = p.src_start[d] + p.src_step[d] * t[1]
        if p.src < 0:  # a fill: no source chunk
            chunks: range = range(1)
        else:
            i0 = int(np.searchsorted(bounds[d], min(first, last), side="right")) - 1
            i1 = int(np.searchsorted(bounds[d], max(first, last), side="right")) - 1
            chunks = range(i0, i1 + 1)
        at = p.dst_start[d] + steps[d] * t[0] - lo[d]
        axes.append((at, t[1] - t[0] + 1, first, chunks))
    if p.src < 0:
        yield (), (0,) * len(lo), tuple(a[0] for a in axes), tuple(a[1] for a in axes)
        return
    for grid in itertools.product(*(chunks for *_, chunks in axes)):
        start, dst, size = [], [], []
        for d, ((at, count, first, _), g) in enumerate(zip(axes, grid, strict=True)):
            b0, b1 = int(bounds[d][g]), int(bounds[d][g + 1])
            t = _progression(first, p.src_step[d], count, b0, b1)
            if t is None:
                break
            start.append(first + p.src_step[d] * t[0] - b0)
            dst.append(at + steps[d] * t[0])
            size.append(t[1] - t[0] + 1)
        else:
            yield tuple(grid), tuple(start), tuple(dst), tuple(size)


def _chunk_graph(
    content: _Content,
    out_chunks: tuple[tuple[int, ...], ...],
    dtype: DataType,
    level: FeatureLevel,
    name: str,
    elements: Any = None,
    on_gpu: bool = False,
) -> dict[Any, Any]:
    """One task per output chunk: a plan over the source chunks its elements come from."""
    out_bounds = [_bounds(c) for c in out_chunks]
    src_bounds = [[_bounds(c) for c in s.chunks] for s in content.sources]
    graph: dict[Any, Any] = {}
    for index in itertools.product(*(range(len(c)) for c in out_chunks)):
        lo = [int(out_bounds[d][i]) for d, i in enumerate(index)]
        hi = [int(out_bounds[d][i + 1]) for d, i in enumerate(index)]
        keys: dict[Any, int] = {}
        block_shapes: list[tuple[int, ...]] = []
        copies = []
        for p in content.pieces:
            bounds = src_bounds[p.src] if p.src >= 0 else []
            for grid, start, dst, size in _reads(p, lo, hi, bounds):
                if p.src < 0:
                    zeros = (0,) * len(size)
                    copies.append(LogicalCopy(p.src, zeros, zeros, 0, dst, size, p.dst_step))
                    continue
                key = (content.sources[p.src].name, *grid)
                if key not in keys:
                    keys[key] = len(keys)
                    block_shapes.append(
                        tuple(int(bounds[d][g + 1] - bounds[d][g]) for d, g in enumerate(grid))
                    )
                copies.append(LogicalCopy(keys[key], start, p.src_step, 0, dst, size, p.dst_step))
        chunk_shape = tuple(h - low for low, h in zip(lo, hi, strict=True))
        key = (name, *index)
        if len(copies) == 1 and block_shapes and _is_whole(copies[0], block_shapes[0], chunk_shape):
            graph[key] = next(iter(keys))  # the chunk is a source chunk: an alias, no copy
            continue
        plan = compose(
            dtype.element_size,
            copies,
            [_c_layout(s) for s in block_shapes],
            [_c_layout(chunk_shape)],
            content.fills,
        )
        task = functools.partial(
            _chunk_task,
            plan,
            _ChunkDesc(dtype, block_shapes, chunk_shape, elements, on_gpu),
            level,
        )
        graph[key] = (task, *keys)
    return graph


def _build(
    desc: OperatorDesc,
    inputs: list[Any],
    level: FeatureLevel,
    chunks: Any,
    token: str,
) -> list[Any]:
    """One dask array per output, composed through earlier dmlops.dask results."""
    da = _dask()
    from dask.array.utils import meta_from_array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    dtype = _data_type(inputs[0].dtype)
    results = []
    for (_, out_t), content in zip(desc.output_fields(), _composed(desc, inputs), strict=True):
        shape = tuple(out_t.sizes)
        out_chunks = (
            da.core.normalize_chunks(chunks, shape, dtype=inputs[0].dtype)
            if chunks is not None
            else _default_chunks(shape, content)
        )
        sources = [s.name for s in content.sources]
        name = f"dmlops-{token}-" + tokenize(content.pieces, sources, out_chunks, level, dtype)
        on_gpu = type(getattr(inputs[0], "_meta", None)).__module__.split(".")[0] == "cupy"
        graph = _chunk_graph(content, out_chunks, dtype, level, name, inputs[0].dtype, on_gpu)
        hlg = HighLevelGraph.from_collections(name, graph, dependencies=content.sources)
        meta = meta_from_array(  # type: ignore[no-untyped-call]
            content.sources[0] if content.sources else inputs[0], ndim=len(shape)
        )
        result = da.Array(hlg, name, out_chunks, meta=meta)
        setattr(result, _CONTENT, content)
        results.append(result)
    return results


def _validated(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None) -> FeatureLevel:
    """DirectML's validation at the level, before any task exists (elements the table lacks
    described by a carrier, as the array layer describes them)."""
    level = calls._level(feature_level)
    desc.as_carried(level).validate(level)
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
    if 0 in x.shape:
        shape = strided.slice(_host_empty(x), offsets, sizes, strides).shape
        return _empty(x, shape)
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
    """DML SLICE1 on a dask array (see dmlops.slice1), lazily.

    >>> import numpy as np, dask.array as da, dmlops.dask as dd
    >>> x = da.from_array(np.arange(8, dtype=np.float32), chunks=3)
    >>> dd.slice1(x, [0], [8], [-3]).compute().tolist()
    [7.0, 4.0, 1.0]
    """
    if 0 in x.shape:
        args = (window_offsets, window_sizes, window_strides, output_sizes)
        return _empty(x, strided.slice1(_host_empty(x), *args, feature_level=feature_level).shape)
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
    """DML SPLIT on a dask array (see dmlops.split), lazily; one dask array per piece (an
    empty piece, as numpy's, where a size is 0)."""
    if 0 in x.shape or 0 in sizes:
        empties = strided.split(_host_empty(x), axis, sizes, feature_level=feature_level)
        kept = [s for s in sizes if s]
        found = iter(split(x, axis, kept, feature_level=feature_level, chunks=chunks) if kept
                     and 0 not in x.shape else [])  # fmt: skip
        return [_empty(x, e.shape) if 0 in e.shape else next(found) for e in empties]
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
        return strided.join([], axis)  # raises the array layer's error
    if any(0 in x.shape for x in xs):  # empty pieces add nothing (numpy's concatenate)
        joined = strided.join([_host_empty(x) for x in xs], axis, feature_level=feature_level)
        kept = [x for x in xs if 0 not in x.shape]
        if 0 in joined.shape or not kept:
            return _empty(xs[0], joined.shape)
        return join(kept, axis, feature_level=feature_level, chunks=chunks)
    shape = list(xs[0].shape)
    if 0 <= axis < len(shape):
        shape[axis] = sum(x.shape[axis] if x.ndim > axis else 0 for x in xs)
    desc = JoinDesc([_tensor(x) for x in xs], _tensor(xs[0], shape), axis)
    level = _validated(desc, feature_level)
    return _build(desc, xs, level, chunks, "join")[0]


def _unary(
    desc_of: Any,
    x: Any,
    feature_level: FeatureLevel | int | str | None,
    chunks: Any,
    token: str,
    on_host: Any,
) -> Any:
    """A one-input operator on a dask array, lazily: `desc_of(input desc)` its descriptor,
    `on_host(empty numpy array)` the array layer's call (an empty input's answer)."""
    if 0 in x.shape:
        answer = on_host(_host_empty(x))
        if 0 in answer.shape:
            return _empty(x, answer.shape)
        return _dask().from_array(answer, chunks=-1)  # (a constant: no element of x read)
    desc = desc_of(_tensor(x))
    (_, out), *_ = desc.output_fields()
    if 0 in out.sizes:  # an empty result (DirectML's tensors have none): its rules, then it
        calls.check_empty(desc)
        return _empty(x, out.sizes)
    level = _validated(desc, feature_level)
    return _build(desc, [x], level, chunks, token)[0]


def tile(
    x: Any,
    repeats: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML TILE on a dask array (see dmlops.tile), lazily: each output chunk reads the
    input chunks its repeats cover."""
    counts = tuple(int(r) for r in repeats)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return TileDesc(t, _tensor(x, TileDesc.output_sizes_for(x.shape, counts)), counts)

    def on_host(e: Any) -> Any:
        return strided.tile(e, counts, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "tile", on_host)


def padding(
    x: Any,
    start_padding: Sequence[int],
    end_padding: Sequence[int],
    mode: Any = "CONSTANT",
    value: float | int = 0,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML PADDING1 on a dask array (see dmlops.padding), every mode, lazily: the constant
    is written where no input chunk reaches, the mirrored and repeated edges read the chunks
    they mirror."""
    start, end = tuple(start_padding), tuple(end_padding)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        grown = Padding1Desc.output_sizes_for(x.shape, start, end)
        d = Padding1Desc(t, _tensor(x, grown), mode, None, value, start, end)
        element = word_element(x.dtype, "dmlops.dask")
        if element.data_type is None or element.data_type != t.data_type:  # carried bits
            return d.carrying(element.size, encode(value, element, "PADDING1.PaddingValue"))
        return d

    def on_host(e: Any) -> Any:
        return strided.padding(e, start, end, mode, value, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "padding", on_host)


def _depth_space(
    op: str,
    x: Any,
    block_size: int,
    order: Any,
    feature_level: FeatureLevel | int | str | None,
    chunks: Any,
) -> Any:
    cls = DepthToSpace1Desc if op == "depth_to_space" else SpaceToDepth1Desc

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return cls(t, _tensor(x, cls.output_sizes_for(t, block_size, order)), block_size, order)

    def on_host(e: Any) -> Any:
        call = strided.depth_to_space if op == "depth_to_space" else strided.space_to_depth
        return call(e, block_size, order, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, op, on_host)


def depth_to_space(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML DEPTH_TO_SPACE1 on a dask array (see dmlops.depth_to_space), lazily."""
    return _depth_space("depth_to_space", x, block_size, order, feature_level, chunks)


def space_to_depth(
    x: Any,
    block_size: int,
    order: Any = "DCR",
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SPACE_TO_DEPTH1 on a dask array (see dmlops.space_to_depth), lazily."""
    return _depth_space("space_to_depth", x, block_size, order, feature_level, chunks)


def slice_grad(
    input_gradient: Any,
    output_sizes: Sequence[int],
    window_offsets: Sequence[int],
    window_sizes: Sequence[int],
    window_strides: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML SLICE_GRAD on a dask array (see dmlops.slice_grad), lazily: zeros where the
    window does not reach."""
    window = (window_offsets, window_sizes, window_strides)
    x = input_gradient

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return SliceGradDesc(t, _tensor(x, output_sizes), *window)

    def on_host(e: Any) -> Any:
        return strided.slice_grad(e, output_sizes, *window, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "slice_grad", on_host)


def upsample_2d(
    x: Any,
    scale_size: Sequence[int],
    *,
    feature_level: FeatureLevel | int | str | None = None,
    chunks: Any = None,
) -> Any:
    """DML UPSAMPLE_2D (nearest) on a dask array (see dmlops.upsample_2d), lazily."""
    scale = tuple(int(s) for s in scale_size)

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return Upsample2dDesc(t, _tensor(x, Upsample2dDesc.output_sizes_for(x.shape, scale)), scale)

    def on_host(e: Any) -> Any:
        return strided.upsample_2d(e, scale, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "upsample_2d", on_host)


def element_wise_identity(
    x: Any, *, feature_level: FeatureLevel | int | str | None = None, chunks: Any = None
) -> Any:
    """DML ELEMENT_WISE_IDENTITY on a dask array: x as it is, rechunked where `chunks`
    says (a chunk that is a source chunk is an alias)."""

    def desc_of(t: BufferTensorDesc) -> OperatorDesc:
        return ElementWiseIdentityDesc(t, _tensor(x))

    def on_host(e: Any) -> Any:
        return strided.element_wise_identity(e, feature_level=feature_level)

    return _unary(desc_of, x, feature_level, chunks, "identity", on_host)


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


def _gather_part(axis: int, local: Any, block: Any) -> Any:
    """The rows of one source chunk that one output chunk wants (one GATHER): a task that
    reads that chunk alone, so no task holds more than a chunk and what it sends on."""
    from .arrays import indexed

    return indexed.gather(block, _indices_like(block, local), axis)


def _in_order(axis: int, where: list[Any], *parts: Any) -> Any:
    """One output chunk from the parts its source chunks sent: joined, then put back in the
    indices' order (one more GATHER) where more than one chunk sent rows."""
    from .arrays import indexed

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


def _one_hot_block(depth: int, values: Any, axis: int, level: Any, block: Any) -> Any:
    from .arrays import indexed

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

    from .arrays import indexed

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


def _reverse_block(
    lengths: np.ndarray[Any, Any],
    axis: int,
    batch_axis: int,
    level: Any,
    block: Any,
    block_info: Any = None,
) -> Any:
    from .arrays import indexed

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
    lengths whose values are known: the time axis is made one chunk (a reversal reads across
    it: the one rechunk its meaning needs), each output chunk then its input chunk with the
    lengths of its batch rows; validated before any task exists."""
    da = _dask()
    from .arrays import indexed

    if isinstance(lengths, da.Array):
        raise DmlError(
            "dmlops.dask.reverse_subsequences: lengths that are a dask array are not taken "
            "(compute them first)"
        )
    counts = np.asarray(lengths)
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
    block = functools.partial(_reverse_block, counts.reshape(-1), a, b, feature_level)
    return whole.map_blocks(block, dtype=x.dtype, meta=whole._meta)


def _gather_elements_block(axis: int, level: Any, block: Any, indices: Any) -> Any:
    from .arrays import indexed

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
    have x's sizes off the axis; validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from .arrays import indexed

    rank = x.ndim
    if not -rank <= int(axis) < rank:
        raise DmlError(f"GATHER_ELEMENTS: axis {axis} is outside [{-rank}, {rank})")
    a = int(axis) % rank
    if indices.ndim != rank or any(
        int(indices.shape[d]) != int(x.shape[d]) for d in range(rank) if d != a
    ):
        raise DmlError(
            f"dmlops.dask.gather_elements: indices of shape {tuple(indices.shape)} for an input "
            f"of {tuple(x.shape)}: on Dask they have the input's sizes off axis {a}"
        )
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
    letters = "abcdefghijklmnop"[:rank]
    x_index = letters[:a] + "z" + letters[a + 1 :]
    meta = meta_from_array(whole, ndim=rank)  # type: ignore[no-untyped-call]
    return da.blockwise(
        functools.partial(_gather_elements_block, a, feature_level),
        letters,
        whole,
        x_index,
        ind,
        letters,
        dtype=x.dtype,
        concatenate=True,
        meta=meta,
    )


def _gather_block(axis: int, level: Any, clamp: bool, block: Any, indices: Any) -> Any:
    from .arrays import indexed

    ids = _like(block, indices)
    return indexed.gather(block, ids, axis, feature_level=level, clamp_indices=clamp)


_LETTERS = "abcdefghijklmnopqrstuvwxy"


def _gather_lazy(x: Any, indices: Any, axis: int, feature_level: Any, clamp_indices: bool) -> Any:
    """GATHER with indices that are a dask array: the axis one chunk, a task per pair of
    (indices chunk, x's chunks off the axis)."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from .arrays import indexed

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
    return da.blockwise(
        functools.partial(_gather_block, a, feature_level, clamp_indices),
        lead + ids + tail,
        whole,
        lead + "z" + tail,
        indices,
        ids,
        dtype=x.dtype,
        concatenate=True,
        meta=meta,
    )


def _gather_nd_block(batch_dims: int, level: Any, block: Any, indices: Any) -> Any:
    from .arrays import indexed

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

    from .arrays import indexed

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


def _scatter_elements_block(axis: int, level: Any, block: Any, indices: Any, updates: Any) -> Any:
    from .arrays import indexed

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
    DirectML). Indices and updates (known or dask arrays) have x's sizes off the axis;
    validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from .arrays import indexed

    rank = x.ndim
    if not -rank <= int(axis) < rank:
        raise DmlError(f"SCATTER_ELEMENTS: axis {axis} is outside [{-rank}, {rank})")
    a = int(axis) % rank
    shape = tuple(int(n) for n in indices.shape)
    if (
        tuple(int(n) for n in updates.shape) != shape
        or len(shape) != rank
        or any(shape[d] != int(x.shape[d]) for d in range(rank) if d != a)
    ):
        raise DmlError(
            f"dmlops.dask.scatter_elements: indices {list(shape)} and updates "
            f"{list(updates.shape)} for an input of {list(x.shape)}: on Dask both have the "
            f"input's sizes off axis {a}"
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
    whole = x.rechunk({a: -1}) if len(x.chunks[a]) > 1 else x
    along = tuple(whole.chunks[d] if d != a else (shape[a],) for d in range(rank))
    ind = _as_dask(indices, along).rechunk(along)
    upd = _as_dask(updates, along).rechunk(along)
    letters = _LETTERS[:rank]
    rows = letters[:a] + "z" + letters[a + 1 :]
    meta = meta_from_array(whole, ndim=rank)  # type: ignore[no-untyped-call]
    return da.blockwise(
        functools.partial(_scatter_elements_block, a, feature_level),
        letters,
        whole,
        letters,
        ind,
        rows,
        upd,
        rows,
        dtype=x.dtype,
        concatenate=True,
        meta=meta,
    )


def _scatter_nd_block(level: Any, block: Any, indices: Any, updates: Any) -> Any:
    from .arrays import indexed

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
    """DML SCATTER_ND on dask arrays (see dmlops.scatter_nd), lazily: the dimensions the
    index tuples address are made one chunk (a tuple may name any sub-block of them) and
    each output chunk is one task over its block of x, every index tuple and the updates of
    its trailing chunk (the later of two tuples naming one place wins, as DirectML).
    Indices and updates known or dask arrays; validated before any task exists."""
    da = _dask()
    from dask.array.utils import meta_from_array

    from .arrays import indexed

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


def _cast_block(dtype: np.dtype[Any], level: Any, block: Any) -> Any:
    return strided.cast(block, dtype, feature_level=level)


def cast(x: Any, dtype: Any, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """DML CAST on a dask array (see dmlops.cast: DirectML's conversion rules), lazily, chunk
    by chunk; validated before any task exists."""
    from dask.array.utils import meta_from_array

    target = strided._numpy_type(dtype)
    probe = np.zeros((1,) * max(x.ndim, 1), x.dtype)  # (the descriptor's checks, now)
    strided.cast(probe, target, feature_level=feature_level)
    meta = meta_from_array(x, ndim=x.ndim, dtype=target)  # type: ignore[no-untyped-call]
    block = functools.partial(_cast_block, target, feature_level)
    return x.map_blocks(block, dtype=target, meta=meta)


def _triangle_block(upper: bool, k: int, level: Any, block: Any, block_info: Any = None) -> Any:
    from .ops import triangle_span

    (r0, _), (c0, _) = block_info[0]["array-location"][-2:]
    # (the block's own diagonals: column - row there is column - row of the whole minus
    # (c0 - r0))
    begin, end = triangle_span(upper, k - (c0 - r0), *block.shape[-2:])
    if block.ndim <= 4:
        return strided.diagonal_matrix1(block, begin, end, 0, feature_level=level)
    merged = block.reshape((-1, *block.shape[-2:]))
    made = strided.diagonal_matrix1(merged, begin, end, 0, feature_level=level)
    return made.reshape(block.shape)


def _triangle(x: Any, k: int, upper: bool, feature_level: Any) -> Any:
    name = "triu" if upper else "tril"
    if x.ndim < 2:
        raise DmlError(f"{name}: x has {x.ndim} dimensions; a matrix needs 2 (DIAGONAL_MATRIX1)")
    probe = np.zeros((2, 2), x.dtype)  # (the descriptor's checks, now)
    strided.diagonal_matrix1(probe, 0, 1, 0, feature_level=feature_level)
    block = functools.partial(_triangle_block, upper, int(k), feature_level)
    return x.map_blocks(block, dtype=x.dtype, meta=x._meta)


def tril(x: Any, k: int = 0, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """numpy.tril on a dask array, lazily: each chunk one DIAGONAL_MATRIX1 with its own
    diagonal span (no rechunk)."""
    return _triangle(x, k, False, feature_level)


def triu(x: Any, k: int = 0, *, feature_level: FeatureLevel | int | str | None = None) -> Any:
    """numpy.triu on a dask array, lazily: each chunk one DIAGONAL_MATRIX1 with its own
    diagonal span (no rechunk)."""
    return _triangle(x, k, True, feature_level)


def _resample_block(
    kept: tuple[bool, ...], sizes: tuple[int, ...], options: dict[str, Any], block: Any
) -> Any:
    out = tuple(n if keep else m for n, m, keep in zip(block.shape, sizes, kept, strict=True))
    return strided.resample(block, sizes=out, **options)


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
    lazily: every axis whose map is not the identity is made one chunk (an output element may
    read any input element along it: the one rechunk its meaning needs); the other axes keep
    their chunks, each chunk one task. Validated before any task exists."""
    from .ops import Resample2Desc, ResampleDesc

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
    strided.resample(probe, sizes=(1,) * rank, **options)
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
    kept = tuple(
        n == m and bool(np.array_equal(index, np.arange(m)))
        for n, m, index in zip(x.shape, out, maps, strict=True)
    )
    whole = x.rechunk({d: -1 for d in range(rank) if not kept[d]})
    chunks = tuple(c if keep else (m,) for c, m, keep in zip(whole.chunks, out, kept, strict=True))
    block = functools.partial(_resample_block, kept, out, options)
    return whole.map_blocks(block, chunks=chunks, dtype=x.dtype, meta=whole._meta)
