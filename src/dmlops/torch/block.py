"""A block of dmlops graph nodes as one torch autograd function: the forward is the graph's
one compiled plan, the backward one compiled plan too — each gradient byte written once.

`Block(build)` takes a function that adds nodes to a `dmlops.Graph` (`build(g, *inputs) ->
outputs`, inputs and outputs `GraphTensor`s). Called on torch tensors, it compiles the graph
for their shapes and type (cached), runs it, and records one autograd node. Its backward is
the forward plan read backwards: every forward copy becomes a copy from the output's
gradient to the input's gradient (a SLICE_GRAD of all the slices at once, a JOIN's gradient
split, a transpose's transposed back), constants written by the forward (pads) have no
gradient, and input elements the forward never read get zeros. That needs the forward to read
each input element at most once (slices, splits, joins, transposes, depth/space, constant
pads, KV-cache appends); a block that reads some element twice (a tile, a broadcast, an edge
pad) is refused when its backward is first compiled, naming the input. Where the gradient
elements are all written by the copies (the Focus stem's four slices partition their input),
no zero fill runs; an input the forward copies whole and contiguous into one output (a
join along the outermost axis) gets a view of that output's gradient: no byte moved. One
copied into a strided box of an output (a KV-cache append's past) is written by the plan
instead: a strided view would be copied anyway (a leaf's gradient by torch's own clone,
0.84 of the copy ceiling on the H100 against the plan's 0.95), and every consumer gets a
dense gradient. Under `create_graph` the backward is the same plan as torch views and strided
scatters, so a second order flows through it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..device import CompiledOperator, Device
from ..elements import element_of, torch_to_numpy, torch_values
from ..errors import InvalidDescriptorError
from ..graph import Graph, GraphTensor
from ..plan import Plan, StridedCopy, coalesce, is_injective
from ..tensor import BufferTensorDesc, FeatureLevel, packed_strides

__all__ = ["Block", "backward_plan"]


class _Fields:
    """What a backward pass binds: the outputs' gradients in, the inputs' gradients out."""

    OPERATOR = "BLOCK_BACKWARD"
    operator_type = "DML_GRAPH"

    def __init__(self, ins: Sequence[BufferTensorDesc], outs: Sequence[BufferTensorDesc]) -> None:
        self._ins, self._outs = list(ins), list(outs)

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"OutputGradients[{k}]", d) for k, d in enumerate(self._ins)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [(f"InputGradients[{k}]", d) for k, d in enumerate(self._outs)]


def backward_plan(forward: Plan, input_bytes: Sequence[int]) -> tuple[Plan, list[bool]]:
    """The forward plan read backwards (output gradients in, input gradients out), and per
    input (of `input_bytes` bytes) whether some of its elements are never read (their
    gradient must start at zero). InvalidDescriptorError where the forward reads an element
    of an input twice, or reads through indices (gathers)."""
    if forward.indexed:
        raise InvalidDescriptorError("a block with gathers or scatters has no one-pass backward")
    size = forward.element_size
    reads = [np.zeros(n // size, np.uint8) for n in input_bytes]
    back: list[StridedCopy] = []
    for c in forward.copies:
        if c.src < 0:
            continue  # a constant (a pad's fill): no gradient flows to it
        if not is_injective(c.shape, c.src_strides):
            raise InvalidDescriptorError(
                f"block input {c.src}: the forward reads some of its elements more than once "
                "(a tile, a broadcast, an edge or reflect pad): the gradient would be a sum"
            )
        marks = np.lib.stride_tricks.as_strided(
            reads[c.src][c.src_offset // size :],
            c.shape,
            tuple(t * reads[c.src].itemsize for t in c.src_strides),
        )
        marks += 1
        # read backwards, coalesced anew: ordered by the gradient's (the new destination's)
        # strides, as kernels expect
        shape, s_st, d_st, s_off, d_off = coalesce(
            c.shape, c.dst_strides, c.src_strides, c.dst_offset // size, c.src_offset // size
        )
        back.append(StridedCopy(c.dst, s_off * size, s_st, c.src, d_off * size, d_st, shape))
    for k, r in enumerate(reads):
        if r.size and r.max() > 1:
            raise InvalidDescriptorError(
                f"block input {k}: two copies of the forward read the same elements: the "
                "gradient would be a sum"
            )
    plan = Plan(
        size,
        tuple(back),
        forward.output_spans,
        forward.input_spans,
    )
    return plan, [bool(r.size) and not bool(r.all()) for r in reads]


class _Compiled:
    """A block compiled for one list of input shapes and one element type."""

    def __init__(
        self, build: Callable[..., Any], shapes: list[tuple[int, ...]], dtype: torch.dtype,
        device: Device,
    ) -> None:  # fmt: skip
        # types DirectML lacks (bfloat16, bool) move as unsigned words of their size
        element = element_of(torch_to_numpy(torch.empty(0, dtype=dtype)).dtype)
        self.descs = [BufferTensorDesc(element.described_as, s) for s in shapes]
        g = Graph(device.feature_level)
        inputs = [g.input(d) for d in self.descs]
        made = build(g, *inputs)
        outputs = [made] if isinstance(made, GraphTensor) else list(made)
        self.forward = g.compile(outputs, device)
        if not isinstance(self.forward, CompiledOperator):
            raise InvalidDescriptorError(
                "Block: the graph needs an intermediate buffer (a view that does not line up "
                "with its pieces); its backward would not be one pass"
            )
        self.out_shapes = [tuple(t.sizes) for t in outputs]
        self.device = device
        self._backward: _Backward | None = None

    def backward(self) -> _Backward:
        if self._backward is None:
            plan, zeroed = backward_plan(
                self.forward.plan, [d.total_tensor_size_in_bytes for d in self.descs]
            )
            views: list[_View | None] = [None] * len(self.descs)
            for k, d in enumerate(self.descs):
                mine = [c for c in plan.copies if c.dst == k]
                if (
                    len(mine) == 1
                    and not zeroed[k]
                    and plan.element_size == d.data_type.element_size
                ):
                    views[k] = _view_of(mine[0], d.sizes, plan.element_size)
            written = [k for k, v in enumerate(views) if v is None]
            op = None
            if written:  # the gradients that are not views: one plan writes them all
                copies = tuple(
                    dataclasses.replace(c, dst=written.index(c.dst))
                    for c in plan.copies
                    if views[c.dst] is None
                )
                spans = tuple(plan.output_spans[k] for k in written)
                kept = Plan(plan.element_size, copies, plan.input_spans, spans)
                out_descs = [d for _, d in self.forward.desc.output_fields()]
                fields = _Fields(out_descs, [self.descs[k] for k in written])
                op = CompiledOperator(self.device, fields, kept)  # type: ignore[arg-type]
            self._backward = _Backward(op, zeroed, views, written, plan)
        return self._backward


@dataclasses.dataclass(frozen=True)
class _View:
    """An input's gradient as a view of one output's gradient: output, shape, element
    strides and element offset (the forward copied that input whole into that output)."""

    output: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


@dataclasses.dataclass(frozen=True)
class _Backward:
    """A block's backward: the plan writing the gradients that are not views (None where all
    are), which start at zero, the views, which inputs the plan writes, in its order, and
    the whole backward plan (read as torch views when a second order is asked for)."""

    op: CompiledOperator | None
    zeroed: list[bool]
    views: list[_View | None]
    written: list[int]
    plan: Plan


def _view_of(copy: StridedCopy, sizes: Sequence[int], element_size: int) -> _View | None:
    """The input gradient a backward copy writes, as a view of the output gradient it reads,
    where the copy writes the whole input row-major from its first element and reads a
    contiguous run of the output gradient (a dense view: nothing downstream copies it)."""
    if copy.dst_offset or copy.src_offset % element_size:
        return None
    if int(np.prod(copy.shape)) != int(np.prod(sizes)):
        return None
    packed = tuple(packed_strides(copy.shape))
    if tuple(copy.dst_strides) != packed or tuple(copy.src_strides) != packed:
        return None
    return _View(
        copy.src, tuple(copy.shape), tuple(copy.src_strides), copy.src_offset // element_size
    )


def _strided(flat: Tensor, offset: int, strides: Sequence[int], shape: Sequence[int]) -> Tensor:
    """The view of a flat tensor at element `offset` with these strides (negative ones as
    flips of a view with positive ones)."""
    flips = [d for d, s in enumerate(strides) if s < 0]
    start = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    view = flat.as_strided(
        tuple(shape), tuple(abs(s) for s in strides), flat.storage_offset() + start
    )
    return view.flip(flips) if flips else view


def _traced_gradients(plan: Plan, grads: Sequence[Tensor], descs: Sequence[Any]) -> list[Tensor]:
    """The backward plan as torch's own views and strided scatters of the output gradients:
    the same gradients, differentiable (a second order through the block)."""
    size = grads[0].element_size()
    if plan.element_size != size:
        raise InvalidDescriptorError(
            f"Block: a second order of a block moving {plan.element_size}-byte units of "
            f"{size}-byte elements is not supported"
        )
    flats = [g.reshape(-1) for g in grads]
    results = [grads[0].new_zeros(math.prod(d.sizes)) for d in descs]
    for c in plan.copies:
        shape, src, dst = list(c.shape), list(c.src_strides), list(c.dst_strides)
        src_at, dst_at = c.src_offset // size, c.dst_offset // size
        for d, n in enumerate(shape):  # the destination walked forwards
            if dst[d] < 0:
                dst_at += (n - 1) * dst[d]
                src_at += (n - 1) * src[d]
                dst[d], src[d] = -dst[d], -src[d]
        piece = _strided(flats[c.src], src_at, src, shape)
        results[c.dst] = torch.as_strided_scatter(results[c.dst], piece, shape, dst, dst_at)
    return [r.reshape(d.sizes) for r, d in zip(results, descs, strict=True)]


def _memory(t: Tensor) -> Any:
    """What a backend binds: a numpy view of a CPU tensor, a CUDA tensor itself (a
    conjugate or negative view's values: its memory is bound as it is)."""
    return torch_to_numpy(t) if t.is_cpu else torch_values(t)


class _Function(torch.autograd.Function):  # type: ignore[misc]
    @staticmethod
    def forward(ctx: Any, compiled: _Compiled, *xs: Tensor) -> tuple[Tensor, ...]:
        ctx.compiled = compiled
        like = xs[0]
        outs = [like.new_empty(s) for s in compiled.out_shapes]
        ins = [x.contiguous() for x in xs]  # (autograd records nothing in a forward)
        compiled.forward._run_fresh([_memory(x) for x in ins], [_memory(o) for o in outs])
        ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Any, ...]:
        compiled: _Compiled = ctx.compiled
        back = compiled.backward()
        like = next(g for g in grads if g is not None)
        gs = [
            like.new_zeros(s) if g is None else g.contiguous()
            for g, s in zip(grads, compiled.out_shapes, strict=True)
        ]
        if torch.is_grad_enabled():  # create_graph: a gradient that is itself differentiable
            return (None, *_traced_gradients(back.plan, gs, compiled.descs))
        results: list[Tensor | None] = [None] * len(compiled.descs)
        for k, v in enumerate(back.views):  # a whole input copied into one output: a view
            if v is not None:
                g = gs[v.output]
                view = torch.as_strided(g, v.shape, v.strides, g.storage_offset() + v.offset)
                results[k] = view.reshape(compiled.descs[k].sizes)
        if back.op is not None:
            outs = [
                (like.new_zeros if back.zeroed[k] else like.new_empty)(compiled.descs[k].sizes)
                for k in back.written
            ]
            back.op._run_fresh([_memory(g) for g in gs], [_memory(o) for o in outs])
            for k, o in zip(back.written, outs, strict=True):
                results[k] = o
        return (None, *results)


class Block:
    """A function of dmlops graph nodes, run on torch tensors as one plan forward and one
    plan backward.

    >>> import torch, dmlops
    >>> from dmlops.torch import Block
    >>> focus = Block(lambda g, x: g.join([g.slice(x, [0, 0, r, c], [1, 1, 2, 2], [1, 1, 2, 2])
    ...                                    for r, c in ((0, 0), (1, 0), (0, 1), (1, 1))], 1))
    >>> x = torch.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
    >>> (y,) = focus(x)
    >>> y.shape
    torch.Size([1, 4, 2, 2])
    >>> y.sum().backward(); bool((x.grad == 1).all())
    True
    """

    def __init__(
        self,
        build: Callable[..., GraphTensor | Sequence[GraphTensor]],
        feature_level: FeatureLevel | int | str | None = None,
    ) -> None:
        self.build = build
        self.feature_level = feature_level
        self._compiled: dict[Any, _Compiled] = {}  # by each input's (shape, dtype, device)

    def __call__(self, *xs: Tensor) -> tuple[Tensor, ...]:
        try:  # each input's shape, type and device find the compiled block before any check
            key = tuple([(x.shape, x.dtype, x.device) for x in xs])
            compiled = self._compiled.get(key)
        except AttributeError:  # (not tensors: named below)
            compiled = None
        if compiled is None:
            compiled = self._compile(xs)
            self._compiled[key] = compiled
        return tuple(_Function.apply(compiled, *xs))

    def prepare(self, *xs: Tensor) -> None:
        """Compile the block for inputs like `xs`, its backward too (so a block that reads an
        element twice is refused now, not when its backward first runs)."""
        key = tuple([(x.shape, x.dtype, x.device) for x in xs])
        compiled = self._compiled.get(key) or self._compile(xs)
        compiled.backward()
        self._compiled[key] = compiled

    def _compile(self, xs: tuple[Tensor, ...]) -> _Compiled:
        """The block compiled for these inputs, once they are checked."""
        if not xs or not all(isinstance(x, Tensor) for x in xs):
            raise InvalidDescriptorError("Block: call it on torch tensors")
        dtypes = {x.dtype for x in xs}
        places = {x.device for x in xs}
        if len(dtypes) != 1 or len(places) != 1:
            raise InvalidDescriptorError(
                f"Block: inputs of one type on one device, not {sorted(map(str, dtypes))} on "
                f"{sorted(map(str, places))}"
            )
        backend = "numpy" if xs[0].device.type == "cpu" else "cuda"
        device = Device(self.feature_level, backend=backend)
        return _Compiled(self.build, [tuple(x.shape) for x in xs], xs[0].dtype, device)
