"""The operators without a views-and-copies form (the indexed ones, TILE, PADDING1) on torch
tensors: gradients through them (each output element's gradient back to the element it was
copied from) against torch's own differentiable equivalents, eagerly and under
torch.compile, which keeps them as custom operators (as torch.export does). Skipped without
torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from conftest import TORCH_DEVICES  # noqa: E402
from dmlops import DmlError  # noqa: E402


@pytest.fixture(params=TORCH_DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _reverse_reference(x: Any, lengths: list[int]) -> Any:
    # rows of x (batch along dimension 1) reversed along dimension 0 up to their lengths,
    # as one indexing by explicit positions
    rows = []
    for b, n in enumerate(lengths):
        order = list(range(n - 1, -1, -1)) + list(range(n, x.shape[0]))
        rows.append(x[order, b])
    return torch.stack(rows, 1)


def _i(values: Any, device: str) -> Any:
    return torch.tensor(values, dtype=torch.int64, device=device)


# (name, dmlops call, torch's own call, inputs: float arrays take gradients, int ones not)
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], Callable[[str], list[Any]]]] = [
    (
        "gather, repeated and negative indices",
        lambda x, i: dmlops.gather(x, i, 1),
        lambda x, i: x[:, i % 5],
        lambda d: [torch.randn(3, 5, 2, device=d), _i([[4, -1], [0, 2], [4, 4]], d)],
    ),
    (
        "gather_elements",
        lambda x, i: dmlops.gather_elements(x, i, 0),
        lambda x, i: torch.gather(x, 0, i),
        lambda d: [torch.randn(4, 3, device=d), _i([[3, 0, 1], [3, 3, 2]], d)],
    ),
    (
        "gather_nd",
        lambda x, i: dmlops.gather_nd(x, i),
        lambda x, i: x[i[:, 0], i[:, 1]],
        lambda d: [torch.randn(4, 3, 2, device=d), _i([[1, 2], [3, 0], [1, 2]], d)],
    ),
    (
        "scatter_elements",
        lambda x, i, u: dmlops.scatter_elements(x, i, u, 1),
        lambda x, i, u: x.scatter(1, i, u),
        lambda d: [
            torch.randn(3, 5, device=d),
            _i([[4, 0], [1, 2], [0, 3]], d),
            torch.randn(3, 2, device=d),
        ],
    ),
    (
        "scatter_nd",
        lambda x, i, u: dmlops.scatter_nd(x, i, u),
        lambda x, i, u: x.index_put((i[:, 0],), u),
        lambda d: [torch.randn(5, 3, device=d), _i([[4], [1]], d), torch.randn(2, 3, device=d)],
    ),
    (
        "one_hot",
        lambda i, v: dmlops.one_hot(i, 4, v),
        lambda i, v: torch.where(torch.nn.functional.one_hot(i % 4, 4).bool(), v[1], v[0]),
        lambda d: [_i([[0, 3], [-1, 2]], d), torch.randn(2, device=d)],
    ),
    (
        "reverse_subsequences",
        lambda x, n: dmlops.reverse_subsequences(x, n, 0, 1),
        lambda x, n: _reverse_reference(x, n.tolist()),
        lambda d: [torch.randn(5, 3, 2, device=d), _i([2, 5, 0], d)],
    ),
    (
        "tile",
        lambda x: dmlops.tile(x, [2, 1, 3]),
        lambda x: x.repeat(2, 1, 3),
        lambda d: [torch.randn(2, 3, 2, device=d)],
    ),
    (
        "padding, constant",
        lambda x: dmlops.padding(x, [1, 0], [2, 3], "CONSTANT", 2.5),
        lambda x: torch.nn.functional.pad(x, (0, 3, 1, 2), value=2.5),
        lambda d: [torch.randn(3, 4, device=d)],
    ),
    (
        "padding, reflection",
        lambda x: dmlops.padding(x, [1, 2], [2, 1], "REFLECTION"),
        lambda x: torch.nn.functional.pad(x[None], (2, 1, 1, 2), mode="reflect")[0],
        lambda d: [torch.randn(4, 5, device=d)],
    ),
    (
        "padding, edge",
        lambda x: dmlops.padding(x, [2, 0], [0, 3], "EDGE"),
        lambda x: torch.nn.functional.pad(x[None], (0, 3, 2, 0), mode="replicate")[0],
        lambda d: [torch.randn(4, 5, device=d)],
    ),
]


def _leaves(inputs: list[Any]) -> list[Any]:
    return [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]


@pytest.mark.parametrize(("name", "ours", "theirs", "make"), CASES, ids=[c[0] for c in CASES])
def test_gradients_match_torchs_own_ops(device: str, name, ours, theirs, make) -> None:  # type: ignore[no-untyped-def]
    inputs = make(device)
    mine, reference = _leaves(inputs), _leaves(inputs)
    got, want = ours(*mine), theirs(*reference)
    assert torch.equal(got, want), name
    weight = torch.randn(got.shape, device=device)
    (got * weight).sum().backward()
    (want * weight).sum().backward()
    for a, b in zip(mine, reference, strict=True):
        if a.requires_grad:
            assert a.grad is not None
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("name", "ours", "theirs", "make"), CASES, ids=[c[0] for c in CASES])
def test_torch_compile_keeps_them_as_custom_operators(
    device: str, name, ours, theirs, make
) -> None:  # type: ignore[no-untyped-def]
    # one graph (fullgraph: no graph break), the operator a torch.ops.dmlops call that runs
    # dmlops' kernel, gradients as eagerly
    torch._dynamo.reset()
    inputs = make(device)

    def step(*xs):  # type: ignore[no-untyped-def]
        return ours(*xs) * 2

    explained = torch._dynamo.explain(step)(*inputs)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    assert "dmlops." in explained.graphs[0].code
    compiled = torch.compile(step, fullgraph=True)
    assert torch.equal(compiled(*inputs), step(*inputs))
    mine, reference = _leaves(inputs), _leaves(inputs)
    compiled(*mine).sum().backward()
    step(*reference).sum().backward()
    for a, b in zip(mine, reference, strict=True):
        if a.requires_grad:
            assert torch.equal(a.grad, b.grad)


def test_torch_export_keeps_them() -> None:
    class Lookup(torch.nn.Module):  # type: ignore[misc]
        def forward(self, table, ids):  # type: ignore[no-untyped-def]
            return dmlops.gather(table, ids, 0) + 1

    table, ids = torch.randn(6, 3), torch.tensor([[5, 0], [2, -1]])
    exported = torch.export.export(Lookup(), (table, ids))
    assert "torch.ops.dmlops.gather.default" in exported.graph_module.code
    assert torch.equal(exported.module()(table, ids), Lookup()(table, ids))


def test_out_under_torch_compile_is_a_graph_break() -> None:
    # (the custom operators make new tensors: a call writing into `out` runs eagerly)
    torch._dynamo.reset()
    x, out = torch.randn(4, 3), torch.empty(2, 3)

    def step(t, o):  # type: ignore[no-untyped-def]
        dmlops.gather(t, torch.tensor([3, 1]), 0, out=o)
        return o * 2

    assert torch._dynamo.explain(step)(x, out).graph_break_count == 1
    assert torch.equal(torch.compile(step)(x, out), x[[3, 1]] * 2)


def test_the_last_update_of_a_target_takes_its_gradient() -> None:
    # two updates to one element: the later one wins (dmlops' rule), so only it is differentiated
    x = torch.zeros(3, requires_grad=True)
    u = torch.tensor([[1.0], [2.0]], requires_grad=True)
    y = dmlops.scatter_nd(x, torch.tensor([[1], [1]]), u[:, 0])
    assert y.tolist() == [0.0, 2.0, 0.0]
    y.backward(torch.tensor([1.0, 5.0, 1.0]))
    assert x.grad is not None and u.grad is not None
    assert x.grad.tolist() == [1.0, 0.0, 1.0] and u.grad.tolist() == [[0.0], [5.0]]


def test_out_takes_no_gradient_and_leaves_out_untouched() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    out = torch.full((2, 3), 7.0)
    with pytest.raises(DmlError, match=r"GATHER: a call with out= or device= takes no gradient"):
        dmlops.gather(x, torch.tensor([1, 2]), 0, out=out)
    assert bool((out == 7).all())
    with torch.no_grad():
        dmlops.gather(x, torch.tensor([1, 2]), 0, out=out)
    assert torch.equal(out, x.detach()[1:3])


def test_calls_without_gradients_are_as_before() -> None:
    x = torch.randn(4, 3)
    y = dmlops.tile(x, [1, 2])
    assert y.grad_fn is None and torch.equal(y, x.repeat(1, 2))
    got = dmlops.gather(np.arange(4.0), np.array([3, 0]))
    assert isinstance(got, np.ndarray) and got.tolist() == [3.0, 0.0]
    # ONE_HOT's output takes its values' type, not its indices' (was read as int64)
    hot = dmlops.one_hot(torch.tensor([[0, -1]]), 3, torch.tensor([0.5, 1.5]))
    assert hot.dtype == torch.float32 and hot.tolist() == [[[1.5, 0.5, 0.5], [0.5, 0.5, 1.5]]]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int16"])
def test_results_made_from_constants_come_back_as_tensors_of_the_type(
    device: str, dtype: str
) -> None:
    # outputs made without a kernel of the input's library (a constant tiled, an empty
    # piece) are torch tensors of the input's type on its device, not CuPy arrays
    t = getattr(torch, dtype)
    empty = torch.zeros(2, 0, device=device, dtype=t)
    padded = dmlops.padding(empty, [1, 1], [0, 2], "CONSTANT", 3)
    assert isinstance(padded, torch.Tensor) and padded.dtype == t and padded.device == empty.device
    assert padded.shape == (3, 3) and bool((padded == 3).all())
    zeros = dmlops.slice_grad(empty, [2, 4], [0, 1], [2, 0], [1, 1])
    assert isinstance(zeros, torch.Tensor) and zeros.dtype == t and not bool(zeros.any())
    x = torch.ones(2, 3, device=device, dtype=t)
    pieces = dmlops.split(x, 1, [0, 3])
    assert all(isinstance(p, torch.Tensor) and p.dtype == t for p in pieces)
    assert [tuple(p.shape) for p in pieces] == [(2, 0), (2, 3)]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_reduce_overhead_cuda_graphs_capture_the_custom_operators() -> None:
    # (the extern kernel's launches recorded in the compiled step's CUDA graph, replayed
    # with new data and new indices)
    torch._dynamo.reset()

    def lookup(table, ids, cache, slots, rows):  # type: ignore[no-untyped-def]
        written = dmlops.scatter_nd(cache, slots, rows)
        return dmlops.gather(table, ids, 0) * 1, written + 0

    compiled = torch.compile(lookup, mode="reduce-overhead", fullgraph=True)
    for step in range(5):
        table = torch.randn(64, 8, device="cuda") + step
        ids = torch.randint(-64, 64, (16,), device="cuda")
        cache = torch.zeros(32, 8, device="cuda")
        slots = torch.randperm(32, device="cuda")[:4].view(4, 1)
        rows = torch.randn(4, 8, device="cuda")
        got, want = compiled(table, ids, cache, slots, rows), lookup(table, ids, cache, slots, rows)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), step


def test_indices_changed_before_the_backward_are_refused() -> None:
    # the backward reads the indices again: torch's saved-tensor check refuses a change
    x = torch.randn(4, 3, requires_grad=True)
    ids = torch.tensor([3, 1])
    y = dmlops.gather(x, ids, 0)
    ids[0] = 0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_0d_tensors_in_every_indexed_operator(device: str) -> None:
    """0-D data or indices (torch.take, index_select and gather of a scalar, one_hot of a
    scalar index), with and without a gradient, as torch answers them."""
    x = torch.tensor(-0.0, device=device)
    zero = torch.tensor(0, device=device)
    for wants_grad in (False, True):
        data = x.clone().requires_grad_(wants_grad)
        got = dmlops.gather(data, _i([0, 0, -1], device), 0)
        want = torch.take(data.detach(), _i([0, 0, 0], device))
        assert got.shape == (3,) and torch.equal(got.detach(), want)
        assert torch.equal(dmlops.gather(data, zero, 0).detach(), data.detach())
        assert dmlops.gather(data, zero, 0).shape == ()
        assert torch.equal(dmlops.gather_elements(data, zero, 0).detach(), data.detach())
        if wants_grad:
            got.sum().backward()
            assert data.grad is not None and float(data.grad) == 3.0
    rows = torch.arange(12.0, device=device).reshape(3, 4)
    assert torch.equal(dmlops.gather(rows, torch.tensor(2, device=device), 0), rows[2])
    hot = dmlops.one_hot(torch.tensor(1, device=device), 3, torch.tensor([0, 5], device=device))
    assert hot.tolist() == [0, 5, 0]
