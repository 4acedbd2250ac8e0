"""A block of graph nodes as one torch autograd function: forward and backward each one
plan, gradients bit-identical to torch's own slicing, joins, splits and depth/space."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from conftest import HAS_CUDA, TORCH_DEVICES  # noqa: E402
from dmlops.errors import InvalidDescriptorError  # noqa: E402
from dmlops.torch.block import Block, backward_plan  # noqa: E402

DEVICES = TORCH_DEVICES
WINDOWS = ((0, 0), (1, 0), (0, 1), (1, 1))


def focus(g: Any, x: Any) -> Any:
    n, c, h, w = x.sizes
    return g.join(
        [g.slice(x, [0, 0, r, s], [n, c, h // 2, w // 2], [1, 1, 2, 2]) for r, s in WINDOWS], 1
    )


def focus_torch(x: Any) -> Any:
    return torch.cat([x[..., r::2, s::2] for r, s in WINDOWS], 1)


def _grads(fn: Any, x: Any, seed: int = 0) -> tuple[Any, Any]:
    x = x.detach().clone().requires_grad_()
    out = fn(x)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    total = sum((o * torch.randn(o.shape, generator=gen).to(o.device, o.dtype)).sum() for o in outs)
    total.backward()
    return [o.detach() for o in outs], x.grad


def _same(a: Any, b: Any) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    bits = [t.detach().cpu().contiguous().reshape(-1).view(torch.uint8) for t in (a, b)]
    assert torch.equal(*bits)  # bit for bit: NaN payloads and -0.0 too


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_focus_stem_forward_and_backward(device: str, dtype: str) -> None:
    x = torch.randn(2, 3, 8, 6, dtype=getattr(torch, dtype), device=device)
    ours, gx = _grads(Block(focus), x)
    theirs, tx = _grads(focus_torch, x)
    _same(ours[0], theirs[0])
    _same(gx, tx)


@pytest.mark.parametrize("device", DEVICES)
def test_qkv_split_heads_and_kv_append(device: str) -> None:
    """Split into three, a head reshape + transpose of each, a join along time with a past."""
    b, t, h, d = 2, 5, 3, 4

    def build(g: Any, x: Any, past_k: Any, past_v: Any) -> Any:
        q, k, v = g.split(x, 2, [h * d] * 3)
        heads = [g.reinterpret(y, (b, h, t, d), (t * h * d, d, h * d, 1)) for y in (q, k, v)]
        return [heads[0], g.join([past_k, heads[1]], 2), g.join([past_v, heads[2]], 2)]

    def theirs(x: Any, past_k: Any, past_v: Any) -> Any:
        q, k, v = (y.reshape(b, t, h, d).transpose(1, 2) for y in x.split(h * d, 2))
        return [q.contiguous(), torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)]

    ins = [
        torch.randn(b, t, 3 * h * d, device=device).requires_grad_(),
        torch.randn(b, h, 7, d, device=device).requires_grad_(),
        torch.randn(b, h, 7, d, device=device).requires_grad_(),
    ]
    outs = Block(build)(*ins)
    want = theirs(*ins)
    weights = [torch.randn(o.shape, device=device) for o in want]
    sum((o * w).sum() for o, w in zip(outs, weights, strict=True)).backward()
    ours = [x.grad.clone() for x in ins]
    for x in ins:
        x.grad = None
    sum((o * w).sum() for o, w in zip(want, weights, strict=True)).backward()
    for o, w in zip(outs, want, strict=True):
        _same(o.detach(), w.detach())
    for mine, x in zip(ours, ins, strict=True):
        _same(mine, x.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_pixel_unshuffle_as_space_to_depth(device: str) -> None:
    x = torch.randn(2, 3, 4, 6, device=device)
    block = Block(lambda g, x: [g.space_to_depth(x, 2, "COLUMN_ROW_DEPTH")])
    (y,), gx = _grads(block, x)
    (want,), tx = _grads(lambda x: torch.nn.functional.pixel_unshuffle(x, 2), x)
    assert y.shape == (2, 12, 2, 3)
    _same(y, want)
    _same(gx, tx)


@pytest.mark.parametrize("device", DEVICES)
def test_unread_elements_and_constants_get_no_gradient(device: str) -> None:
    """A slice reading part of its input, then a constant pad: the unread elements' gradient
    is zero, the pad's constants take none."""
    x = torch.randn(4, 6, device=device)

    def build(g: Any, x: Any) -> Any:
        part = g.slice(x, [1, 0], [2, 3], [1, 2])
        return g.padding(part, [1, 0], [0, 2], "CONSTANT", 7.0)

    (y,), gx = _grads(Block(build), x)
    (want,), tx = _grads(
        lambda x: torch.nn.functional.pad(x[1:3, 0::2], (0, 2, 1, 0), value=7.0), x
    )
    _same(y, want)
    _same(gx, tx)
    assert (gx[0] == 0).all() and (gx[:, 1::2] == 0).all()


def test_a_block_reading_an_element_twice_refuses_its_backward() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    (y,) = Block(lambda g, x: [g.tile(x, [2, 1])])(x)
    _same(y.detach(), x.detach().repeat(2, 1))
    with pytest.raises(InvalidDescriptorError, match=r"more than once|same elements"):
        y.sum().backward()


def test_two_slices_reading_the_same_elements_refuse_their_backward() -> None:
    x = torch.randn(4, 4, requires_grad=True)
    block = Block(
        lambda g, x: [g.slice(x, [0, 0], [2, 4], [1, 1]), g.slice(x, [1, 0], [2, 4], [1, 1])]
    )
    a, b = block(x)
    with pytest.raises(InvalidDescriptorError, match="same elements"):
        (a.sum() + b.sum()).backward()


def test_the_backward_plan_is_one_pass_without_fills() -> None:
    g = dmlops.Graph()
    x = g.input(dmlops.BufferTensorDesc("FLOAT32", (1, 3, 8, 8)))
    forward = g.compile([focus(g, x)]).plan
    plan, zeroed = backward_plan(forward, [3 * 8 * 8 * 4])
    assert zeroed == [False]  # the four slices partition the input: no zero fill
    assert len(plan.copies) == len(forward.copies) and not plan.fills
    assert {c.src for c in plan.copies} == {0} and {c.dst for c in plan.copies} == {0}


def test_blocks_are_compiled_once_per_shape_and_refuse_mixed_inputs() -> None:
    block = Block(focus)
    for _ in range(3):
        block(torch.zeros(1, 1, 4, 4))
    block(torch.zeros(1, 2, 4, 4))
    assert len(block._compiled) == 2
    with pytest.raises(InvalidDescriptorError, match="one type"):
        Block(lambda g, a, b: [g.join([a, b], 0)])(
            torch.zeros(2), torch.zeros(2, dtype=torch.float64)
        )
    with pytest.raises(InvalidDescriptorError, match="torch tensors"):
        block(np.zeros((1, 1, 4, 4), np.float32))
    # a warm block given a strided input of its shape reads it by value
    wide = torch.arange(32.0).reshape(1, 1, 4, 8)[..., ::2]
    (y,) = block(wide)
    (want,) = block(wide.contiguous())
    assert torch.equal(y, want) and not torch.equal(want, block(torch.zeros(1, 1, 4, 4))[0])


@pytest.mark.parametrize("device", DEVICES)
def test_a_second_order_is_torchs(device: str) -> None:
    """With create_graph the backward is torch views and strided scatters of the output
    gradient: differentiable, and bit-identical to torch's own second order (a reversed
    window included)."""

    def block(g: Any, x: Any, y: Any) -> Any:
        return g.join([focus(g, x), g.slice1(y, [0, 0, 0, 0], [2, 3, 8, 9], [1, 1, -2, 3])], 1)

    def theirs(x: Any, y: Any) -> Any:
        return torch.cat([focus_torch(x), y.flip(2)[:, :, ::2, ::3]], 1)

    gen = torch.Generator().manual_seed(2)
    x, y = torch.randn(2, 3, 8, 6, generator=gen), torch.randn(2, 3, 8, 9, generator=gen)
    wx, wy = torch.randn(2, 3, 8, 6, generator=gen), torch.randn(2, 3, 8, 9, generator=gen)
    v0 = torch.randn(2, 15, 4, 3, generator=gen)
    found = []
    for fn in (lambda a, b: Block(block)(a, b)[0], theirs):
        xs = [t.to(device).requires_grad_() for t in (x, y)]
        v = v0.to(device).requires_grad_()
        gx, gy = torch.autograd.grad(fn(*xs), xs, v, create_graph=True)
        assert gx.requires_grad and gy.requires_grad
        ((gx * wx.to(device)).sum() + (gy * wy.to(device)).sum()).backward()
        found.append((gx.detach(), gy.detach(), v.grad))
    for a, b in zip(*found, strict=True):
        _same(a, b)


@pytest.mark.parametrize("dtype", ["bfloat16", "bool", "int32", "int8"])
def test_any_element_type_moves_and_bfloat16_differentiates(dtype: str) -> None:
    """Types DirectML lacks (bfloat16, bool) move as words of their size; integer and bool
    outputs take no gradient."""
    kind = getattr(torch, dtype)
    x = (torch.arange(48) % 7).reshape(2, 1, 4, 6).to(kind)
    if kind.is_floating_point:
        x.requires_grad_()
    (y,) = Block(focus)(x)
    _same(y.detach(), focus_torch(x.detach()))
    assert y.requires_grad == kind.is_floating_point
    if kind.is_floating_point:
        y.backward(torch.ones_like(y))
        assert bool((x.grad == 1).all())


def test_empty_inputs_are_refused_by_name() -> None:
    with pytest.raises(InvalidDescriptorError, match="Sizes"):
        Block(lambda g, x: [g.slice(x, [0, 0], [1, 1], [1, 1])])(torch.zeros(0, 3))


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_of_inputs_copied_whole_and_contiguous_are_views(device: str) -> None:
    """A join along the outermost axis: each input lands whole and contiguous in the output,
    so its gradient is a view of the output's gradient (no byte moved); a KV-cache append's
    inputs land in strided boxes, so their gradients are written dense by the plan (a view
    would be copied downstream anyway); a Focus stem's input gradient is written too."""
    past = torch.randn(5, 3, 4, device=device, requires_grad=True)
    new = torch.randn(1, 3, 4, device=device, requires_grad=True)
    (y,) = Block(lambda g, p, n: [g.join([p, n], 0)])(past, new)
    grad = torch.randn(y.shape, device=device)
    gp, gn = torch.autograd.grad(y, [past, new], grad)
    _same(gp, grad[:5])
    _same(gn, grad[5:])
    for g in (gp, gn):
        assert g.untyped_storage().data_ptr() == grad.untyped_storage().data_ptr()
    past = torch.randn(2, 3, 5, 4, device=device, requires_grad=True)
    new = torch.randn(2, 3, 1, 4, device=device, requires_grad=True)
    (y,) = Block(lambda g, p, n: [g.join([p, n], 2)])(past, new)
    grad = torch.randn(y.shape, device=device)
    gp, gn = torch.autograd.grad(y, [past, new], grad)
    _same(gp, grad[:, :, :5])
    _same(gn, grad[:, :, 5:])
    for g in (gp, gn):
        assert g.is_contiguous()
        assert g.untyped_storage().data_ptr() != grad.untyped_storage().data_ptr()
    x = torch.randn(1, 2, 4, 4, device=device, requires_grad=True)
    (f,) = Block(focus)(x)
    (gx,) = torch.autograd.grad(f, [x], torch.ones_like(f))
    assert gx.untyped_storage().data_ptr() != f.untyped_storage().data_ptr()
    assert bool((gx == 1).all())


def test_backward_copies_are_coalesced_for_the_kernels() -> None:
    """The forward read backwards is coalesced anew (dimensions ordered by the gradient's
    strides, positive, neighbours merged), as every backend's kernel choice expects: a pixel
    unshuffle's gradient is one copy whose destination's inner axis is contiguous."""
    from dmlops.plan import coalesce
    from dmlops.torch.block import backward_plan

    g = dmlops.Graph()
    x = g.input(dmlops.BufferTensorDesc(dmlops.DataType.FLOAT32, [2, 8, 16, 16]))
    y = g.space_to_depth(g.slice1(x, [0, 0, 0, 0], [2, 8, 16, 16], [1, 1, 1, -1]), 2)
    forward = g.compile([y]).plan
    plan, zeroed = backward_plan(forward, [2 * 8 * 16 * 16 * 4])
    assert zeroed == [False]
    for c in plan.copies:
        again = coalesce(c.shape, c.src_strides, c.dst_strides)[:3]
        assert again == (tuple(c.shape), tuple(c.src_strides), tuple(c.dst_strides))
        assert c.dst_strides[-1] == 1 and all(s > 0 for s in c.dst_strides)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_block_runs_on_the_current_stream_and_under_graph_capture() -> None:
    """Forward and backward run on torch's current stream (a side stream here: work queued
    behind a long kernel on it, nothing synchronised), and a CUDA graph captures a step and
    replays it on new values."""
    x = torch.randn(4, 3, 64, 64, device="cuda", requires_grad=True)
    block = Block(focus)
    (y,) = block(x)
    y.backward(torch.ones_like(y))  # compile both plans outside the stream and the capture
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(10_000_000)  # the side stream busy: a launch elsewhere would race
        x.grad = None
        big = x * 2
        (y,) = block(big)
        (gx,) = torch.autograd.grad(y, [x], torch.ones_like(y))
    torch.cuda.current_stream().wait_stream(side)
    _same(y, focus_torch(x.detach() * 2))
    _same(gx, torch.full_like(x, 2.0))
    src = torch.randn(4, 3, 64, 64, device="cuda")
    out = torch.empty(4, 12, 32, 32, device="cuda")
    graph = torch.cuda.CUDAGraph()
    capture = torch.cuda.Stream()
    capture.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture):
        block(src)  # warm on this stream
        with torch.cuda.graph(graph, stream=capture):
            (made,) = block(src)
            out.copy_(made)
    torch.cuda.current_stream().wait_stream(capture)
    src.copy_(torch.randn_like(src))
    graph.replay()
    torch.cuda.synchronize()
    _same(out, focus_torch(src))
