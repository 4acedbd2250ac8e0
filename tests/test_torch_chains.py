"""Eager chains of dmlops operators composed into one block: the same values and gradients
(bit for bit) as torch's own code and as the operators run one by one, a backward of one
pass, and every case where a chain must not be composed running as before."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from conftest import HAS_CUDA, TORCH_DEVICES  # noqa: E402
from dmlops.torch import chains as torch_chains  # noqa: E402

DEVICES = TORCH_DEVICES
WINDOWS = ((0, 0), (1, 0), (0, 1), (1, 1))
BLOCK_NODE = "_FunctionBackward"  # a torch_block block's autograd node


def focus(x: Any) -> Any:
    n, c, h, w = x.shape
    parts = [
        dmlops.slice(x, [0, 0, r, s], [n, c, h // 2, w // 2], [1, 1, 2, 2]) for r, s in WINDOWS
    ]
    return dmlops.join(parts, 1)


def focus_torch(x: Any) -> Any:
    return torch.cat([x[..., r::2, s::2] for r, s in WINDOWS], 1)


def _bits(t: Any) -> Any:
    return t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)


def _same(a: Any, b: Any) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(_bits(a), _bits(b))  # NaN payloads and -0.0 too


def _run(fn: Callable[..., Any], xs: list[Any], seed: int = 0) -> tuple[list[Any], list[Any]]:
    """Outputs and input gradients of `fn` for a fixed random output gradient."""
    xs = [x.detach().clone().requires_grad_() for x in xs]
    out = fn(*xs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(o.shape, generator=gen).to(o.device, o.dtype) for o in outs]
    torch.autograd.backward(outs, grads)
    return [o.detach() for o in outs], [x.grad for x in xs]


@pytest.fixture
def unfused(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Any]:
    def off() -> Any:
        return monkeypatch.setattr(torch_chains, "MAX_NODES", 1)

    return off


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_a_focus_stem_of_calls_is_one_block_with_torchs_values(device: str, dtype: str) -> None:
    x = torch.randn(2, 3, 8, 6, dtype=getattr(torch, dtype), device=device)
    x.view(-1)[:4] = torch.tensor([-0.0, float("nan"), float("inf"), -1.0])
    y = focus(x.requires_grad_())
    assert type(y.grad_fn).__name__ == BLOCK_NODE
    ours, (gx,) = _run(focus, [x])
    theirs, (tx,) = _run(focus_torch, [x])
    _same(ours[0], theirs[0])
    _same(gx, tx)


def test_the_backward_writes_each_gradient_byte_once() -> None:
    """One plan backward, no zero fill: the four slices partition their input."""
    x = torch.randn(1, 2, 4, 4, requires_grad=True)
    y = focus(x)
    back = y.grad_fn.compiled.backward()
    assert back.zeroed == [False]
    assert back.op is not None and len(back.op.plan.copies) == 1


@pytest.mark.parametrize(
    "name",
    [
        "slice of slice",
        "split then join",
        "join then slice1",
        "split then s2d",
        "d2s of join",
        "s2d then split",
        "slice of d2s",
    ],
)
def test_chains_give_the_values_and_gradients_of_calls_one_by_one(
    name: str, unfused: Callable[[], Any]
) -> None:
    chains: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
        "slice of slice": (
            lambda x: dmlops.slice(
                dmlops.slice(x, [0, 1, 0], [2, 4, 6], [1, 1, 2]), [1, 0, 1], [1, 2, 3], [1, 2, 2]
            ),
            [(2, 5, 12)],
        ),
        "split then join": (
            lambda x: dmlops.join(dmlops.split(x, 1, [1, 2, 3])[::-1], 1),
            [(2, 6, 3)],
        ),
        "join then slice1": (
            lambda a, b: dmlops.slice1(dmlops.join([a, b], 0), [1, 0], [4, 3], [-1, 2]),
            [(2, 3), (3, 3)],
        ),
        "split then s2d": (
            lambda x: dmlops.space_to_depth(dmlops.split(x, 1, [2, 2])[1], 2, "CRD"),
            [(1, 4, 4, 6)],
        ),
        # three the graph compiler cannot compose (with "d2s of join") without an intermediate buffer: run unfused
        "s2d then split": (
            lambda x: dmlops.split(dmlops.space_to_depth(x, 2, "CRD"), 1, [4, 4]),
            [(1, 2, 4, 6)],
        ),
        "slice of d2s": (
            lambda x: dmlops.slice(
                dmlops.depth_to_space(x, 2, "DCR"), [0, 0, 1, 0], [1, 2, 2, 3], [1, 1, 2, 2]
            ),
            [(1, 8, 2, 3)],
        ),
        "d2s of join": (
            lambda a, b: dmlops.depth_to_space(dmlops.join([a, b], 1), 2, "DCR"),
            [(1, 4, 2, 3), (1, 4, 2, 3)],
        ),
    }
    fn, shapes = chains[name]
    gen = torch.Generator().manual_seed(3)
    xs = [torch.randn(s, generator=gen) for s in shapes]
    out = fn(*[x.clone().requires_grad_() for x in xs])
    first = out[0] if isinstance(out, list) else out
    composed = name not in ("s2d then split", "slice of d2s", "d2s of join")
    assert (type(first.grad_fn).__name__ == BLOCK_NODE) == composed
    fused = _run(fn, xs)
    unfused()
    one_by_one = _run(fn, xs)
    for a, b in zip(fused[0] + fused[1], one_by_one[0] + one_by_one[1], strict=True):
        _same(a, b)


def test_a_second_order_through_a_chain_is_torchs() -> None:
    x = torch.randn(2, 3, 8, 6)
    w = torch.randn(2, 3, 8, 6)
    found = []
    for fn in (focus, focus_torch):
        v = torch.randn(2, 12, 4, 3, generator=torch.Generator().manual_seed(1)).requires_grad_()
        xx = x.clone().requires_grad_()
        (gx,) = torch.autograd.grad(fn(xx), xx, v, create_graph=True)
        assert gx.requires_grad
        (gx * w).sum().backward()
        found.append((gx.detach(), v.grad))
    for a, b in zip(*found, strict=True):
        _same(a, b)


def test_overlapping_slices_are_not_composed_and_their_gradients_add() -> None:
    def overlapping(x: Any) -> Any:
        return dmlops.join([dmlops.slice(x, [0], [3], [1]), dmlops.slice(x, [1], [3], [1])], 0)

    x = torch.randn(5)
    y = overlapping(x.clone().requires_grad_())
    assert type(y.grad_fn).__name__ == "JoinFunctionBackward"
    ours, (gx,) = _run(overlapping, [x])
    theirs, (tx,) = _run(lambda t: torch.cat([t[0:3], t[1:4]]), [x])
    _same(ours[0], theirs[0])
    _same(gx, tx)


def test_a_part_changed_in_place_is_read_as_it_is_now() -> None:
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    n, c = x.shape[:2]
    parts = [dmlops.slice(x, [0, 0, r, s], [n, c, 2, 2], [1, 1, 2, 2]) for r, s in WINDOWS]
    with torch.no_grad():
        parts[2].mul_(3)
    y = dmlops.join(parts, 1)  # the other three composed from x, this one read as a tensor
    _same(y, torch.cat(parts, 1))
    g = torch.randn(y.shape)
    y.backward(g)
    _same(x.grad, _placed(g))


def _placed(g: Any) -> Any:
    """A Focus stem's output gradient placed back on its input."""
    n, c, h, w = g.shape
    want = torch.zeros(n, c // 4, 2 * h, 2 * w, dtype=g.dtype)
    for k, (r, s) in enumerate(WINDOWS):
        want[..., r::2, s::2] = g[:, k * (c // 4) : (k + 1) * (c // 4)]
    return want


def test_a_first_input_changed_in_place_after_the_slices_is_not_read() -> None:
    x = torch.randn(1, 1, 4, 4)
    leaf = x.clone().requires_grad_()
    base = leaf * 1  # a non-leaf that can change in place
    n, c = base.shape[:2]
    parts = [dmlops.slice(base, [0, 0, r, s], [n, c, 2, 2], [1, 1, 2, 2]) for r, s in WINDOWS]
    with torch.no_grad():
        base.add_(100)
    y = dmlops.join(parts, 1)
    _same(y, focus_torch(x))
    y.backward(torch.ones_like(y))
    assert bool((leaf.grad == 1).all())


def test_a_first_input_that_died_ends_the_chain() -> None:
    def parts_of_a_temporary() -> list[Any]:
        x = torch.randn(1, 1, 4, 4, requires_grad=True)
        return [dmlops.slice(x * 2, [0, 0, r, s], [1, 1, 2, 2], [1, 1, 2, 2]) for r, s in WINDOWS]

    parts = parts_of_a_temporary()
    y = dmlops.join(parts, 1)
    assert type(y.grad_fn).__name__ == "JoinFunctionBackward"
    _same(y, torch.cat(parts, 1))


def test_a_part_that_keeps_its_gradient_gets_it() -> None:
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    parts = [dmlops.slice(x, [0, 0, r, s], [1, 1, 2, 2], [1, 1, 2, 2]) for r, s in WINDOWS]
    parts[1].retain_grad()
    seen = []
    parts[3].register_hook(lambda g: seen.append(g.clone()))
    y = dmlops.join(parts, 1)
    g = torch.randn(y.shape)
    y.backward(g)
    _same(parts[1].grad, g[:, 1:2])
    _same(seen[0], g[:, 3:4])
    _same(x.grad, _placed(g))


def test_chains_longer_than_the_limit_start_anew() -> None:
    x = torch.randn(64, requires_grad=True)
    y = x
    for _ in range(torch_chains.MAX_NODES + 3):
        y = dmlops.slice(y, [1], [y.shape[0] - 2], [1])
    assert y.shape == (64 - 2 * (torch_chains.MAX_NODES + 3),)
    _same(y, x[torch_chains.MAX_NODES + 3 : -(torch_chains.MAX_NODES + 3)])
    y.backward(torch.ones_like(y))
    assert float(x.grad.sum()) == y.numel()


def test_a_strided_first_input_is_not_composed() -> None:
    x = torch.randn(6, 4)
    xt = x.clone().requires_grad_()
    view = xt.t()  # not contiguous: a chain root must be
    y = dmlops.join(
        [dmlops.slice(view, [0, 0], [2, 3], [1, 2]), dmlops.slice(view, [2, 0], [2, 3], [1, 2])], 0
    )
    assert type(y.grad_fn).__name__ == "JoinFunctionBackward"
    _same(y, torch.cat([x.t()[0:2, 0::2], x.t()[2:4, 0::2]], 0))


def test_outputs_stay_plain_tensors() -> None:
    """The chain is noted on autograd nodes: tensors carry nothing of it (they pickle)."""
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    parts = [dmlops.slice(x, [0, 0, r, s], [1, 1, 2, 2], [1, 1, 2, 2]) for r, s in WINDOWS]
    y = dmlops.join(parts, 1)
    for t in (*parts, y):
        assert not t.__dict__
        torch.save(t.detach(), io.BytesIO())


def test_without_a_gradient_nothing_is_noted() -> None:
    x = torch.randn(1, 1, 4, 4)
    y = focus(x)
    assert y.grad_fn is None
    with torch.no_grad():
        assert focus(x.requires_grad_()).grad_fn is None


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_focus_stem_backward_is_one_launch_on_cuda() -> None:
    from dmlops.backends.cuda import CudaBackend

    x = torch.randn(2, 3, 16, 16, device="cuda", requires_grad=True)
    y = focus(x)
    log: list[Any] = []
    backend = CudaBackend.instance()
    backend.launch_log = log
    try:
        y.backward(torch.ones_like(y))
        torch.cuda.synchronize()
    finally:
        backend.launch_log = None
    assert len(log) == 1
    assert bool((x.grad == 1).all())
