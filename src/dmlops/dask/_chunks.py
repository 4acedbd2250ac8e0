"""The chunk engine of dmlops.dask: an array as boxes of its source dask arrays, and one
task per output chunk running one plan over the source chunks it reads."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
from dask.array.chunk import getitem as chunk_getitem

from .. import calls
from ..backends import cpu_engine
from ..device import CompiledOperator, Device
from ..elements import word_element
from ..errors import DmlError
from ..ops import (
    OperatorDesc,
)
from ..plan import Fill, Layout, LogicalCopy, Plan, compose
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides

_CONTENT = "_dmlops_content"

_Task = TypeVar("_Task", bound=Callable[..., Any])


def task(function: _Task) -> _Task:
    """A function that dask runs as a task: its calls on one thread, on numpy's memory, with
    no compiler loaded (cpu_engine.scheduler_task)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        with cpu_engine.scheduler_task():
            return function(*args, **kwargs)

    return run  # type: ignore[return-value]


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
    fills: tuple[Fill, ...] = ()

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
    fills: list[Fill] = []  # every fill met, numbered as sources -1, -2, ...

    def fill(value: Fill) -> int:
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
    for pieces in map(_merged, per_output):
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


def _continued(p: LogicalCopy, q: LogicalCopy) -> LogicalCopy | None:
    """p and q as one box, where q goes on where p ends along one axis, in its source and
    its destination alike (the pieces of a split joined back in order), else None."""
    ones = (1,) * len(p.shape)
    steps = p.dst_step or ones
    if (p.src, p.src_step, steps, p.repeat) != (q.src, q.src_step, q.dst_step or ones, q.repeat):
        return None
    for d in range(len(p.shape)):
        src_next = p.src_start[d] + p.shape[d] * p.src_step[d]
        dst_next = p.dst_start[d] + p.shape[d] * steps[d]
        if q.src_start[d] != src_next or q.dst_start[d] != dst_next:
            continue
        others = [e for e in range(len(p.shape)) if e != d]
        if all(
            (p.src_start[e], p.dst_start[e], p.shape[e])
            == (q.src_start[e], q.dst_start[e], q.shape[e])
            for e in others
        ):
            shape = tuple(n + q.shape[d] if e == d else n for e, n in enumerate(p.shape))
            return replace(p, shape=shape)
    return None


def _merged(pieces: list[LogicalCopy]) -> list[LogicalCopy]:
    """Pieces in order, each that goes on where the one before it ends made one box with
    it: an output then needs no chunk edge between them (join(split(x)) is chunked as x).
    Only neighbours in order merge, so which piece writes a place last stays as it was."""
    merged: list[LogicalCopy] = []
    for q in pieces:
        one = _continued(merged[-1], q) if merged else None
        if one is None:
            merged.append(q)
        else:
            merged[-1] = one
    return merged


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
    """The device a chunk task runs its plan on (one thread a task: the tasks run in
    cpu_engine.scheduler_task)."""
    return Device(level, backend=backend)


@task
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


def _is_view(copy: LogicalCopy, chunk: tuple[int, ...]) -> bool:
    """Whether a copy fills a whole chunk from one block by a window with nonzero steps."""
    whole = copy.dst_start == (0,) * len(chunk) and set(copy.dst_step or (1,)) <= {1}
    return whole and copy.src >= 0 and copy.shape == chunk and 0 not in copy.src_step


def _window(start: int, step: int, count: int) -> slice:
    """The basic slice reading `count` elements from `start` by `step` (step nonzero)."""
    stop = start + step * count
    return slice(start, None if stop < 0 else stop, step)


def _c_layout(shape: Sequence[int]) -> Layout:
    return Layout(0, packed_strides(shape))


_Box = tuple[int, ...]


def _reads(
    p: LogicalCopy, lo: list[int], hi: list[int], bounds: list[list[int]]
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
            i0 = bisect.bisect_right(bounds[d], min(first, last)) - 1
            i1 = bisect.bisect_right(bounds[d], max(first, last)) - 1
            chunks = range(i0, i1 + 1)
        at = p.dst_start[d] + steps[d] * t[0] - lo[d]
        axes.append((at, t[1] - t[0] + 1, first, chunks))
    if p.src < 0:
        yield (), (0,) * len(lo), tuple(a[0] for a in axes), tuple(a[1] for a in axes)
        return
    for grid in itertools.product(*(chunks for *_, chunks in axes)):
        start, dst, size = [], [], []
        for d, ((at, count, first, _), g) in enumerate(zip(axes, grid, strict=True)):
            b0, b1 = bounds[d][g], bounds[d][g + 1]
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
    # (Python ints: a graph's chunk-by-chunk lookups cost a numpy scalar each otherwise)
    out_bounds = [_bounds(c).tolist() for c in out_chunks]
    src_bounds = [[_bounds(c).tolist() for c in s.chunks] for s in content.sources]
    graph: dict[Any, Any] = {}
    tasks: dict[Any, Any] = {}
    for index in itertools.product(*(range(len(c)) for c in out_chunks)):
        lo = [out_bounds[d][i] for d, i in enumerate(index)]
        hi = [out_bounds[d][i + 1] for d, i in enumerate(index)]
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
                        tuple(bounds[d][g + 1] - bounds[d][g] for d, g in enumerate(grid))
                    )
                copies.append(LogicalCopy(keys[key], start, p.src_step, 0, dst, size, p.dst_step))
        chunk_shape = tuple(h - low for low, h in zip(lo, hi, strict=True))
        key = (name, *index)
        if len(copies) == 1 and block_shapes and _is_whole(copies[0], block_shapes[0], chunk_shape):
            graph[key] = next(iter(keys))  # the chunk is a source chunk: an alias, no copy
            continue
        if len(copies) == 1 and block_shapes and _is_view(copies[0], chunk_shape):
            c = copies[0]  # one strided window of one block, as dask's own slicing takes
            # it: a view, copied where it holds under half its block (dask's chunk getitem),
            # so the block is let go and the chunk is stored without another copy
            steps = zip(c.src_start, c.src_step, c.shape, strict=True)
            window = tuple(_window(a, s, n) for a, s, n in steps)
            graph[key] = (chunk_getitem, next(iter(keys)), window)
            continue
        # chunks that read the same pieces of blocks of the same shapes (a regular grid's
        # inner chunks) share one plan and one task function
        same = (tuple(copies), tuple(block_shapes), chunk_shape)
        task = tasks.get(same)
        if task is None:
            plan = compose(
                dtype.element_size,
                copies,
                [_c_layout(s) for s in block_shapes],
                [_c_layout(chunk_shape)],
                content.fills,
            )
            task = tasks[same] = functools.partial(
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
