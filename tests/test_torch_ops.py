"""dmlops inside torch programs: custom operators that torch.compile and torch.export keep,
autograd through DirectML's backward pairs, gradients bit-identical to torch's own, and CUDA
graphs through torch.compile(mode="reduce-overhead"). Skipped without torch."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import (
    apply_to_arrays,
    join_mapping,
    slice1_mapping,
    slice_grad_mapping,
    split_mapping,
)

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from dmlops import DmlError  # noqa: E402

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
        ],
    ),
]
SEED = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])
SEED_3D = ([0, 0, 1], [2, 3, 4], [1, -1, 2])


@pytest.fixture(autouse=True)
def fresh_inductor_code() -> Iterator[None]:
    """Inductor's on-disk caches key a graph before dmlops' decompositions apply: code
    compiled by an older dmlops could be served to these tests (they read the code)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with (
        inductor_config.patch(fx_graph_cache=False),
        functorch_config.patch(enable_autograd_cache=False),
    ):
        yield


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _x(device: str, *shape: int, dtype=None, grad: bool = True):  # type: ignore[no-untyped-def]
    g = torch.Generator().manual_seed(sum(shape))
    t = torch.randn(*shape, generator=g, dtype=dtype or torch.float64).to(device)
    return t.requires_grad_(grad)


# Each case: (name, dmlops function of the inputs, torch's own function, input shapes)
CASES = [
    (
        "slice",
        lambda t: dmlops.slice(t, [0, 1, 1, 0], [2, 2, 2, 3], [1, 2, 1, 2]),
        lambda t: t[0:2, 1:4:2, 1:3, 0:5:2],
        [(3, 4, 3, 5)],
    ),
    (
        "slice1 negative strides",
        lambda t: dmlops.slice1(t, [0, 1, 0, 1], [3, 3, 3, 4], [-1, 2, -2, 3]),
        lambda t: t[0:3].flip(0)[:, 1:4:2][:, :, 0:3].flip(2)[:, :, ::2][..., 1:5:3],
        [(3, 4, 3, 5)],
    ),
    (
        "slice1 partial output",
        lambda t: dmlops.slice1(t, [1, 0], [4, 6], [-3, 1], [1, 6]),
        lambda t: t[1:5].flip(0)[:1],
        [(6, 6)],
    ),
    ("split", lambda t: dmlops.split(t, 1, [1, 3])[1], lambda t: t[:, 1:], [(2, 4, 5)]),
    (
        "join",
        lambda a, b: dmlops.join([a, b, a], 2),
        lambda a, b: torch.cat([a, b, a], 2),
        [(2, 3, 2), (2, 3, 4)],
    ),
    (
        "slice_grad",
        lambda g: dmlops.slice_grad(g, [5, 7], [1, 0], [4, 7], [-2, 3]),
        lambda g: torch.zeros(5, 7, dtype=g.dtype, device=g.device).index_put(
            (torch.tensor([[4], [2]]), torch.tensor([[0, 3, 6]])), g
        ),
        [(2, 3)],
    ),
]


@pytest.mark.parametrize(("name", "ours", "theirs", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_forward_and_gradients_bit_identical_to_torch(
    device: str, name, ours, theirs, shapes
) -> None:  # type: ignore[no-untyped-def]
    xs = [_x(device, *s) for s in shapes]
    ys = [x.detach().clone().requires_grad_() for x in xs]
    got, want = ours(*xs), theirs(*ys)
    assert torch.equal(got, want)
    assert got.device == xs[0].device and type(got) is torch.Tensor
    seed = _x(device, *got.shape, grad=False)
    got.backward(seed)
    want.backward(seed)
    for x, y in zip(xs, ys):
        assert torch.equal(x.grad, y.grad)


@pytest.mark.parametrize(("name", "ours", "theirs", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_gradcheck_and_gradgradcheck_float64(device: str, name, ours, theirs, shapes) -> None:  # type: ignore[no-untyped-def]
    xs = tuple(_x(device, *s) for s in shapes)
    assert torch.autograd.gradcheck(ours, xs)
    assert torch.autograd.gradgradcheck(ours, xs)


@pytest.mark.parametrize("order", ["DCR", "CRD"])
def test_depth_space_gradients(device: str, order: str) -> None:
    # DEPTH_TO_SPACE1 has no FLOAT64 at any feature level: float32, exact anyway (a permutation)
    x = _x(device, 2, 8, 3, 2, dtype=torch.float32)
    f = lambda t: dmlops.depth_to_space(t, 2, order)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,), eps=1e-2, atol=1e-3, rtol=1e-3)
    y = _x(device, 2, 2, 6, 4, dtype=torch.float32)
    g = lambda t: dmlops.space_to_depth(t, 2, order)  # noqa: E731
    assert torch.autograd.gradcheck(g, (y,), eps=1e-2, atol=1e-3, rtol=1e-3)
    if order == "CRD":  # torch's pixel_shuffle / pixel_unshuffle
        ref = x.detach().clone().requires_grad_()
        out, want = f(x), torch.nn.functional.pixel_shuffle(ref, 2)
        assert torch.equal(out, want)
        seed = torch.randn_like(out)
        out.backward(seed)
        want.backward(seed)
        assert torch.equal(x.grad, ref.grad)
        assert torch.equal(g(y), torch.nn.functional.pixel_unshuffle(y, 2))


def test_compile_fullgraph_has_no_graph_break(device: str) -> None:
    torch._dynamo.reset()

    def block(x, kv, new):  # type: ignore[no-untyped-def]
        a, b = dmlops.split(x, 1, [2, 2])
        y = dmlops.join([b, a], 1) * 2
        z = dmlops.slice1(y, *SEED)
        w = dmlops.slice(y, [0, 0, 1, 0], [1, 2, 2, 2], [1, 1, 1, 2])
        up = dmlops.depth_to_space(dmlops.space_to_depth(y, 2), 2)
        cache = dmlops.join([kv, new], 2)
        return z, w, up, cache  # data movement only: bit-exact either way

    f32 = torch.float32  # DEPTH_TO_SPACE1 has no FLOAT64
    x = _x(device, 1, 4, 4, 4, dtype=f32, grad=False)
    kv, new = (
        _x(device, 1, 4, 5, 4, dtype=f32, grad=False),
        _x(device, 1, 4, 1, 4, dtype=f32, grad=False),
    )
    compiled = torch.compile(block, fullgraph=True)
    for got, want in zip(compiled(x, kv, new), block(x, kv, new)):
        assert torch.equal(got, want)
    explained = torch._dynamo.explain(block)(x, kv, new)
    assert explained.graph_break_count == 0 and explained.graph_count == 1


def test_a_compiled_call_guards_its_own_globals_only(device: str) -> None:
    """Dynamo guards every global a traced call reads; dmlops' traced path reads its own
    few (the export flag, the recipe and builder functions, two torch objects bound once),
    not builtins or torch's modules attribute by attribute."""
    import dmlops.torch.operators  # its polyfills (registered once torch is there)

    torch._dynamo.reset()

    def focus(x):  # type: ignore[no-untyped-def]
        return dmlops.join(
            [
                dmlops.slice(x, [0, 0, a, b], [1, 3, 2, 2], [1, 1, 2, 2])
                for a, b in ((0, 0), (1, 1))
            ],
            1,
        )

    x = _x(device, 1, 3, 4, 4, grad=False)
    names = [g.name for g in torch._dynamo.explain(focus)(x).out_guards]
    for read in ("['getattr']", "['list']", ".torch.compiler", ".torch.cat", "contiguous_format"):
        assert not [n for n in names if n.endswith(read) or f"{read}." in n], (
            read,
            [n for n in names if n],
        )


def test_plain_slices_and_whole_joins_take_the_short_recipes() -> None:
    """What dynamo traces at every compiled call is `build`: a plain slice copied and a join
    of whole inputs take recipes of a few instructions ("slice", "join"); a flipped view
    keeps the general "copy". Each builds what torch's own indexing gives."""
    from dmlops.plan import LogicalCopy
    from dmlops.torch.decompositions import build, recipe_of

    x = torch.arange(48.0).reshape(2, 3, 8)
    y = -torch.arange(16.0).reshape(2, 1, 8)
    cut = [LogicalCopy(0, (0, 1, 2), (1, 1, 2), 0, (0, 0, 0), (2, 2, 3))]
    r = recipe_of([x.shape], cut, 0, (2, 2, 3))
    assert r[0] == "slice" and torch.equal(build([x], r), x[:, 1:3, 2::2])
    flip = [LogicalCopy(0, (0, 0, 7), (1, 1, -1), 0, (0, 0, 0), (2, 3, 8))]
    r = recipe_of([x.shape], flip, 0, (2, 3, 8))
    assert r[0] == "copy" and torch.equal(build([x], r), x.flip(2))
    both = [
        LogicalCopy(0, (0, 0, 0), (1, 1, 1), 0, (0, 0, 0), (2, 3, 8)),
        LogicalCopy(1, (0, 0, 0), (1, 1, 1), 0, (0, 3, 0), (2, 1, 8)),
    ]
    for pointwise in (False, True):
        r = recipe_of([x.shape, y.shape], both, 0, (2, 4, 8), pointwise)
        assert r[0] == "join" and torch.equal(build([x, y], r), torch.cat([x, y], 1))


def test_slice_views_written_as_torch_code_writes_them() -> None:
    """A window's indexing leaves out the bounds that are the axis' own and writes leading
    whole axes as one Ellipsis (what dynamo traces fastest), and still picks exactly the
    window's elements: random windows against an element-by-element reference."""
    from dmlops.torch.decompositions import view_of

    x = torch.arange(4 * 5 * 9 * 7.0).reshape(4, 5, 9, 7)
    assert view_of(x.shape, 0, (0, 0, 0, 1), (1, 1, 2, 2), (4, 5, 5, 3))[2] == (
        Ellipsis,
        slice(None, None, 2),
        slice(1, None, 2),
    )
    rng = np.random.default_rng(5)
    for _ in range(400):
        start, step, shape = [], [], []
        for n in x.shape:
            if rng.random() < 0.4:  # the whole axis
                start.append(0)
                step.append(1)
                shape.append(n)
                continue
            t = int(rng.integers(1, 4))
            s = int(rng.integers(0, n))
            start.append(s)
            step.append(t)
            shape.append(int(rng.integers(1, (n - 1 - s) // t + 2)))
        index = view_of(x.shape, 0, start, step, shape)[2]
        got = x[index] if index else x
        want = torch.empty(shape)
        for c in np.ndindex(*shape):
            want[c] = x[tuple(s + t * k for s, t, k in zip(start, step, c, strict=True))]
        assert torch.equal(got, want), (start, step, shape, index)


def test_compile_and_backward(device: str) -> None:
    torch._dynamo.reset()

    def step(x):  # type: ignore[no-untyped-def]
        return (dmlops.slice1(x, [0, 0], [6, 5], [-2, 1]) ** 2).sum()

    x = _x(device, 6, 5)
    y = x.detach().clone().requires_grad_()
    torch.compile(step, fullgraph=True)(x).backward()
    step(y).backward()
    assert torch.equal(x.grad, y.grad)


def test_a_bad_descriptor_fails_when_traced(device: str) -> None:
    torch._dynamo.reset()
    x = _x(device, 1, 1, 4, 4, grad=False)
    # (a DmlError, not dynamo's InternalTorchDynamoError around it)
    with pytest.raises(dmlops.InvalidDescriptorError, match=r"SLICE1.InputWindowStrides\[2\] is 0"):
        torch.compile(
            lambda t: dmlops.slice1(t, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 0, 2]), fullgraph=True
        )(x)
    with pytest.raises(DmlError, match=r"InputWindowStrides\[2\] is 0"):
        dmlops.slice1(x.requires_grad_(), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 0, 2])


EMPTY_CALLS = {
    "split with an empty piece": (lambda x: dmlops.split(x, 1, [0, 3]), (2, 3, 4)),
    "join with an empty input": (lambda x: dmlops.join([x[:, :0], x, x[:, 1:]], 1), (2, 3, 4)),
    "join of empty inputs": (lambda x: dmlops.join([x, x], 2), (2, 3, 0)),
    "split of an empty tensor": (lambda x: dmlops.split(x, 1, [1, 2]), (0, 3, 4)),
    "slice taking nothing": (lambda x: dmlops.slice(x, [0, 1, 0], [2, 0, 4], [1, 1, 2]), (2, 3, 4)),
    "slice1 of an empty tensor": (
        lambda x: dmlops.slice1(x, [0, 0, 0], [2, 0, 4], [1, 1, -2]),
        (2, 0, 4),
    ),
    "slice_grad of an empty window": (
        lambda g: dmlops.slice_grad(g, [2, 3, 4], [0, 1, 0], [2, 0, 4], [1, 1, 1]),
        (2, 0, 4),
    ),
    "depth_to_space of an empty batch": (
        lambda x: dmlops.depth_to_space(x, 2, "DCR"),
        (0, 8, 2, 3),
    ),
    "space_to_depth of an empty batch": (
        lambda x: dmlops.space_to_depth(x, 2, "CRD"),
        (0, 2, 4, 6),
    ),
}


@pytest.mark.parametrize("name", list(EMPTY_CALLS))
def test_empty_tensors_compile_as_they_run_eagerly(device: str, name: str) -> None:
    # numpy's and torch's empty arrays, which DirectML's tensors cannot describe: the same
    # outputs and gradients traced as eagerly, with no graph break
    torch._dynamo.reset()
    call, shape = EMPTY_CALLS[name]
    x = torch.randn(shape, device=device)
    eager, compiled = (x.clone().requires_grad_() for _ in range(2))
    want = call(eager)
    got = torch.compile(call, fullgraph=True)(compiled)
    wants, gots = (list(v) if isinstance(v, list) else [v] for v in (want, got))
    assert [tuple(w.shape) for w in wants] == [tuple(g.shape) for g in gots]
    for w, g in zip(wants, gots, strict=True):
        assert torch.equal(w, g)
    weights = [torch.arange(w.numel(), device=device, dtype=w.dtype).view(w.shape) for w in wants]
    sum((w * k).sum() for w, k in zip(wants, weights, strict=True)).backward()
    sum((g * k).sum() for g, k in zip(gots, weights, strict=True)).backward()
    assert eager.grad is not None and compiled.grad is not None
    assert torch.equal(eager.grad, compiled.grad)


def test_the_gradient_of_a_slice_taking_nothing_is_zeros(device: str) -> None:
    x = torch.randn(2, 3, device=device, requires_grad=True)
    dmlops.slice1(x, [0, 1], [2, 0], [1, 1]).sum().backward()
    assert x.grad is not None and torch.equal(x.grad, torch.zeros_like(x))


def test_export_keeps_the_calls(device: str) -> None:
    class Block(torch.nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            q, k, v = dmlops.split(x, 2, [4, 4, 4])
            return dmlops.join(
                [dmlops.slice_grad(q, [2, 6, 4], [0, 0, 0], [2, 6, 4], [1, 1, 1]), k, v], 2
            )

    x = _x(device, 2, 6, 12, grad=False)
    exported = torch.export.export(Block(), (x,))
    code = exported.graph_module.code
    assert "torch.ops.dmlops.split.default" in code and "torch.ops.dmlops.join.default" in code
    assert "torch.ops.dmlops.slice_grad.default" in code
    assert torch.equal(exported.module()(x), Block()(x))


def test_cpu_tensors_stay_torch_and_share_no_hidden_copy() -> None:
    x = torch.arange(24, dtype=torch.int16).reshape(2, 3, 4)
    y = dmlops.slice1(x, [0, 0, 0], [2, 3, 4], [1, -1, 2])
    assert type(y) is torch.Tensor and torch.equal(y, x.flip(1)[..., ::2])
    parts = dmlops.split(x.transpose(0, 2), 0, [1, 3])  # a strided view, read in place
    assert torch.equal(parts[1], x.transpose(0, 2)[1:])


def test_eager_calls_take_autograd_functions_and_traced_ones_the_operators(
    device: str,
) -> None:
    """Eagerly a call that needs a gradient is an autograd Function of dmlops' own (not the
    custom operator's slow dispatch), one that needs none has no graph at all, and traced
    code sees the custom operators; the gradients are the same either way, unused SPLIT
    outputs' included (zeros)."""
    x = _x(device, 4, 6)
    y = dmlops.slice1(x, [0, 1], [4, 5], [1, 2])
    assert type(y.grad_fn).__name__ == "Slice1FunctionBackward"
    parts = dmlops.split(x, 1, [2, 4])
    assert type(parts[0].grad_fn).__name__ == "SplitFunctionBackward"
    joined = dmlops.join([parts[1], x], 1)
    assert type(joined.grad_fn).__name__ == "JoinFunctionBackward"
    with torch.no_grad():
        assert dmlops.slice1(x, [0, 1], [4, 5], [1, 2]).grad_fn is None
    weight = torch.nn.Parameter(x.detach().clone())  # a Parameter is as plain
    assert type(dmlops.slice1(weight, [0, 1], [4, 5], [1, 2]).grad_fn).__name__ == (
        "Slice1FunctionBackward"
    )
    (joined.sum() * 2 + parts[1][:, :1].sum()).backward()
    want = x.detach().clone().requires_grad_(True)
    pieces = torch.split(want, [2, 4], 1)
    (torch.cat([pieces[1], want], 1).sum() * 2 + pieces[1][:, :1].sum()).backward()
    assert torch.equal(x.grad, want.grad)
    traced = torch.fx.experimental.proxy_tensor.make_fx(  # (a dispatch mode is watching)
        lambda t: dmlops.slice1(t, [0, 1], [4, 5], [1, 2])
    )(x)
    assert "dmlops.slice1" in traced.code


def test_a_permuted_views_gradient_reaches_its_base_contiguous(device: str) -> None:
    """A slice of x.transpose(1, 2): eagerly on CUDA its SLICE_GRAD is written in the
    view's layout, so x.grad arrives contiguous (AccumulateGrad keeps it, no copy); the
    values are torch's either way, double backward included."""
    x = _x(device, 3, 5, 8)
    y = dmlops.slice1(x.transpose(1, 2), [0, 0, 1], [3, 8, 4], [1, 1, 2])
    g = torch.randn_like(y)
    y.backward(g)
    want = x.detach().clone().requires_grad_(True)
    want.transpose(1, 2)[:, :, 1::2].backward(g)
    assert torch.equal(x.grad, want.grad)
    if device == "cuda":
        assert x.grad.is_contiguous()
    x.grad = None
    (first,) = torch.autograd.grad(
        dmlops.slice(x.permute(2, 0, 1), [1, 0, 0], [3, 3, 5], [2, 1, 1]).sum(),
        x,
        create_graph=True,
    )
    assert torch.equal(first, torch.zeros_like(first).index_fill_(2, torch.tensor([1, 3, 5],
                       device=device), 1))  # fmt: skip


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_reduce_overhead_cuda_graphs_replay_with_new_data() -> None:
    torch._dynamo.reset()

    def decode(kv, new, x):  # type: ignore[no-untyped-def]
        cache = dmlops.join([kv, new], 2)
        heads = dmlops.split(x, 1, [2, 2])
        return cache * 1, dmlops.slice1(heads[1], [0, 0, 0], [1, 2, 8], [1, 1, -1]) + 0

    compiled = torch.compile(decode, mode="reduce-overhead", fullgraph=True)
    for step in range(5):
        kv = torch.randn(1, 2, 7, 8, device="cuda")
        new = torch.randn(1, 2, 1, 8, device="cuda")
        x = torch.randn(1, 4, 8, device="cuda") + step
        got = compiled(kv, new, x)
        want = decode(kv, new, x)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), step


def test_core_imports_no_torch_and_registers_when_torch_came_first() -> None:
    import subprocess
    import sys

    code = "import sys, dmlops, dmlops.functional; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import torch, dmlops; print(hasattr(torch.ops.dmlops, 'slice_grad'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_torch_imported_after_dmlops_registers_before_anything_is_traced() -> None:
    # the first call dynamo traces already sees the functional call (its views and copies:
    # no extern kernel, a bad descriptor a DmlError), with torch's module as it was
    import subprocess
    import sys

    code = """if True:
        import importlib.util, sys, dmlops
        assert "dmlops.torch.operators" not in sys.modules
        assert importlib.util.find_spec("torch") is not None  # (a look imports nothing)
        assert "torch" not in sys.modules and "dmlops.torch.operators" not in sys.modules
        import torch
        from torch._inductor.utils import run_and_get_code
        assert "dmlops.torch.operators" in sys.modules
        assert type(torch.__loader__).__name__ == "SourceFileLoader", torch.__loader__
        x = torch.randn(4, 6)
        f = torch.compile(lambda t: dmlops.slice1(t, [0, 1], [4, 4], [-1, 2]), fullgraph=True)
        got, code = run_and_get_code(f, x)
        assert torch.equal(got, x.flip(0)[:, 1:5:2]) and "dmlops" not in "".join(code)
        try:
            torch.compile(lambda t: dmlops.slice1(t, [0, 5], [4, 4], [1, 1]), fullgraph=True)(x)
        except dmlops.InvalidDescriptorError as e:
            print(str(e).splitlines()[0])
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().startswith("SLICE1.InputWindowOffsets[1] is 5")


def _compiled_code(fn, *args):  # type: ignore[no-untyped-def]
    """fn compiled by inductor: its results and the code inductor generated."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    return run_and_get_code(torch.compile(fn, fullgraph=True), *args)


FUSING = [
    *[(name, ours, shapes) for name, ours, _, shapes in CASES],
    ("split, every part", lambda t: dmlops.split(t, 2, [1, 3, 1]), [(2, 3, 5)]),
    ("join on axis 0", lambda a, b: dmlops.join([b, a], 0), [(2, 3), (1, 3)]),
    *[
        (f"{op.__name__} {order}", lambda t, op=op, order=order: op(t, 2, order), [(2, 8, 4, 6)])
        for op in (dmlops.depth_to_space, dmlops.space_to_depth)
        for order in ("DCR", "CRD")
    ],
]


@pytest.mark.parametrize(("name", "ours", "shapes"), FUSING, ids=[c[0] for c in FUSING])
def test_inductor_sees_views_and_copies_not_extern_kernels(device: str, name, ours, shapes) -> None:  # type: ignore[no-untyped-def]
    """Under torch.compile every operator is decomposed into aten views and copies from its
    own logical copies: the same bits as eager, and no call to a dmlops kernel in the code."""
    from dmlops.torch import operators as torch_ops

    if not torch_ops.FUSES:
        pytest.skip("this torch has no inductor decomposition table")
    f32 = torch.float32  # DEPTH_TO_SPACE1 has no FLOAT64
    xs = [_x(device, *s, dtype=f32, grad=False) for s in shapes]
    got, code = _compiled_code(ours, *xs)
    want = ours(*xs)
    for g, w in zip(
        got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]
    ):
        assert g.shape == w.shape and torch.equal(g, w)
    assert "torch.ops.dmlops" not in "\n".join(code)  # no extern call


def test_a_focus_stem_compiles_to_as_many_kernels_as_torch_slicing(device: str) -> None:
    """YOLOv5's Focus stem (four 2x2-strided slices joined on channels) written with dmlops
    compiles to the same number of kernels as the same code written with torch slicing, and
    its backward has no dmlops call either; gradients equal eager dmlops'."""
    from dmlops.torch import operators as torch_ops

    if not torch_ops.FUSES:
        pytest.skip("this torch has no inductor decomposition table")

    def ours(x):  # type: ignore[no-untyped-def]
        n, c, h, w = x.shape
        parts = [
            dmlops.slice1(x, [0, 0, i, j], [n, c, h - i, w - j], [1, 1, 2, 2])
            for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))
        ]
        return dmlops.join(parts, 1)

    def theirs(x):  # type: ignore[no-untyped-def]
        return torch.cat(
            [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
        )

    x = _x(device, 2, 3, 16, 16, dtype=torch.float32, grad=False)
    got, code = _compiled_code(ours, x)
    _, torch_code = _compiled_code(theirs, x)
    assert torch.equal(got, theirs(x))

    def kernels(c: list[str]) -> int:
        text = "\n".join(c)
        return text.count("@triton.jit") + text.count("cpp_fused_") // 2

    assert kernels(code) == kernels(torch_code) >= 1

    def step(x):  # type: ignore[no-untyped-def]
        return (ours(x) * 3).square().sum()

    a = _x(device, 2, 3, 16, 16, dtype=torch.float32)
    b = a.detach().clone().requires_grad_()
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, grad_code = run_and_get_code(lambda t: torch.compile(step, fullgraph=True)(t).backward(), a)
    step(b).backward()
    assert torch.equal(a.grad, b.grad)
    assert "torch.ops.dmlops" not in "\n".join(grad_code)


def test_a_split_of_a_permuted_view_hands_its_base_a_contiguous_gradient(device: str) -> None:
    """Eagerly on CUDA, the JOIN that is a head split's gradient is written in the permuted
    view's layout: x.grad arrives contiguous (no AccumulateGrad copy), with torch's values,
    and a second order still flows (create_graph takes the plain path)."""
    x = _x(device, 2, 5, 24)
    heads = dmlops.split(x.view(2, 5, 6, 4).permute(0, 2, 1, 3), 1, [2, 2, 2])
    grads = [torch.randn_like(h) for h in heads]
    torch.autograd.backward(heads, grads)
    want = x.detach().clone().requires_grad_(True)
    theirs = [p.view(2, 5, 2, 4).transpose(1, 2) for p in want.split(8, 2)]
    torch.autograd.backward(theirs, grads)
    assert torch.equal(x.grad, want.grad)
    if device == "cuda":
        assert x.grad.is_contiguous()
    v = torch.randn(2, 2, 5, 4, device=device, requires_grad=True)
    y = dmlops.split(x.view(2, 5, 6, 4).permute(0, 2, 1, 3), 1, [2, 2, 2])[1]
    (gx,) = torch.autograd.grad(y, x, v, create_graph=True)
    (gx * gx).sum().backward()
    assert torch.equal(v.grad, 2 * v.detach())


def test_a_join_of_leaves_gives_each_a_dense_gradient(device: str) -> None:
    """A KV-cache append of two leaves: eagerly on CUDA their gradients are one SPLIT's dense
    outputs (not strided views AccumulateGrad would copy); of non-leaves, views as torch's
    cat gives them. The values are torch's either way."""
    past, new = _x(device, 2, 3, 7, 4), _x(device, 2, 3, 1, 4)
    y = dmlops.join([past, new], 2)
    g = torch.randn_like(y)
    y.backward(g)
    assert torch.equal(past.grad, g[:, :, :7]) and torch.equal(new.grad, g[:, :, 7:])
    assert past.grad.is_contiguous() and new.grad.is_contiguous()
    a, b = past * 1, new * 1  # non-leaves: the pieces are views of the gradient
    seen: list[torch.Tensor] = []
    a.register_hook(seen.append)
    dmlops.join([a, b], 2).backward(g)
    assert torch.equal(seen[0], g[:, :, :7]) and not seen[0].is_contiguous()


def test_a_qkv_head_split_backward_writes_its_gradient_once(device: str) -> None:
    """A split of a permuted view (QKV into heads): its gradient (a join read back through
    the permutation) compiles to as many kernels as torch's split + transpose, and no
    buffer beyond the gradient itself (a `cat` was a buffer of its own: written twice)."""
    from torch._inductor.utils import run_and_get_code

    from dmlops.torch import operators as torch_ops

    if not torch_ops.FUSES:
        pytest.skip("this torch has no inductor decomposition table")
    heads, dim = 2, 4

    def ours(x):  # type: ignore[no-untyped-def]
        b, t, _ = x.shape
        view = x.view(b, t, 3, heads, dim).permute(2, 0, 3, 1, 4)
        return [p.squeeze(0) for p in dmlops.split(view, 0, [1, 1, 1])]

    def theirs(x):  # type: ignore[no-untyped-def]
        b, t, _ = x.shape
        q, k, v = x.split(heads * dim, 2)
        return [p.view(b, t, heads, dim).transpose(1, 2).contiguous() for p in (q, k, v)]

    def backward_code(fn):  # type: ignore[no-untyped-def]
        torch._dynamo.reset()
        x = _x(device, 2, 5, 3 * heads * dim, dtype=torch.float32)
        step = torch.compile(lambda x: sum((o * o).sum() for o in fn(x)), fullgraph=True)
        _, code = run_and_get_code(lambda: step(x).backward())
        return "\n".join(code), x.grad

    ours_code, ours_grad = backward_code(ours)
    theirs_code, theirs_grad = backward_code(theirs)
    assert torch.equal(ours_grad, theirs_grad)

    def kernels(text: str) -> int:
        return text.count("@triton.jit") + text.count("cpp_fused_") // 2

    def buffers(text: str) -> int:
        return len(set(re.findall(r"\b(buf\d+) = empty_strided", text)))

    assert kernels(ours_code) == kernels(theirs_code)
    assert buffers(ours_code) <= buffers(theirs_code)


def test_a_compiled_join_backward_has_the_kernels_of_cats(device: str) -> None:
    """JOIN's gradient is views of the output gradient's pieces, as `cat`'s is: a compiled
    KV-cache append's backward compiles no more kernels than torch's (a SPLIT copy of each
    piece was a kernel of its own), with the same gradients."""
    from torch._inductor.utils import run_and_get_code

    from dmlops.torch import operators as torch_ops

    if not torch_ops.FUSES:
        pytest.skip("this torch has no inductor decomposition table")

    def backward(join):  # type: ignore[no-untyped-def]
        torch._dynamo.reset()
        past = _x(device, 1, 2, 7, 8, dtype=torch.float32)
        new = _x(device, 1, 2, 1, 8, dtype=torch.float32)
        grad = _x(device, 1, 2, 8, 8, dtype=torch.float32, grad=False)
        step = torch.compile(lambda a, b: join([a, b], 2), fullgraph=True)
        _, code = run_and_get_code(lambda: step(past, new).backward(grad))
        text = "\n".join(code)
        kernels = text.count("@triton.jit") + text.count("cpp_fused_") // 2
        return kernels, past.grad, new.grad

    ours = backward(lambda xs, axis: dmlops.join(xs, axis))
    theirs = backward(lambda xs, axis: torch.cat(xs, axis))
    assert ours[0] == theirs[0]
    assert torch.equal(ours[1], theirs[1]) and torch.equal(ours[2], theirs[2])


# -- the decompositions themselves, against the naive references --------------------------


@st.composite
def _windows(draw):  # type: ignore[no-untyped-def]
    """A SLICE1 window over a small tensor: (input sizes, offsets, sizes, strides)."""
    rank = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    offsets, window, strides = [], [], []
    for n in sizes:
        o = draw(st.integers(0, n - 1))
        offsets.append(o)
        window.append(draw(st.integers(1, n - o)))
        strides.append(draw(st.sampled_from([-3, -2, -1, 1, 2, 3])))
    return sizes, offsets, window, strides


def _decomposed_outputs(name: str, args: list, pointwise: bool) -> list:  # type: ignore[type-arg]
    """Operator `name`'s outputs as its torch.compile decomposition makes them, run eagerly."""
    from dmlops.torch import decompositions as torch_decompositions
    from dmlops.torch import operators as torch_ops

    tensors = args[0] if isinstance(args[0], list) else [args[0]]
    recipes = torch_ops._recipes(name, args, pointwise)
    return [torch_decompositions.build(tensors, r) for r in recipes]


def _numbered(*shape: int) -> torch.Tensor:
    return torch.arange(1, math.prod(shape) + 1, dtype=torch.float32).reshape(shape)


@given(window=_windows(), pointwise=st.booleans(), data=st.data())
@settings(max_examples=60, deadline=None)
def test_slice1_and_slice_grad_decompositions_match_the_naive_reference(
    window, pointwise: bool, data
) -> None:  # type: ignore[no-untyped-def]
    """SLICE1 and SLICE_GRAD as views and copies (the recipes torch.compile builds) equal
    the seed pages' element-by-element mappings, negative strides and permuted views (read
    in their memory order) included."""
    sizes, offsets, wsizes, strides = window
    out_sizes = [-(-w // abs(s)) for w, s in zip(wsizes, strides)]
    memory = data.draw(st.permutations(range(len(sizes))))  # x's dimensions in memory
    back = sorted(range(len(sizes)), key=lambda k: memory[k])
    x = _numbered(*[sizes[d] for d in memory]).permute(back)
    assert tuple(x.shape) == tuple(sizes)
    (got,) = _decomposed_outputs("slice1", [x, offsets, wsizes, strides, None, None], pointwise)
    want = np.zeros(out_sizes, np.float32)
    apply_to_arrays(slice1_mapping(offsets, wsizes, strides, out_sizes), [x.numpy()], [want])
    assert np.array_equal(got.numpy(), want)
    g = _numbered(*out_sizes)
    args = [g, sizes, offsets, wsizes, strides, None]
    (grad,) = _decomposed_outputs("slice_grad", args, pointwise)
    mapping, _ = slice_grad_mapping(offsets, wsizes, strides, out_sizes, sizes)
    want_grad = np.zeros(sizes, np.float32)
    apply_to_arrays(mapping, [g.numpy()], [want_grad])
    assert np.array_equal(grad.numpy(), want_grad)


@given(
    rank=st.integers(1, 4),
    parts=st.lists(st.integers(1, 3), min_size=1, max_size=10),
    data=st.data(),
    pointwise=st.booleans(),
)
@settings(max_examples=40, deadline=None)
def test_join_and_split_decompositions_match_the_naive_reference(
    rank: int, parts: list[int], data, pointwise: bool
) -> None:  # type: ignore[no-untyped-def]
    """JOIN (up to ten parts: pointwise or `cat`) and SPLIT as views and copies equal the
    naive mappings."""
    axis = data.draw(st.integers(0, rank - 1))
    others = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    shapes = [[p if d == axis else n for d, n in enumerate(others)] for p in parts]
    xs = [_numbered(*s) + 100 * k for k, s in enumerate(shapes)]
    (joined,) = _decomposed_outputs("join", [xs, axis, None], pointwise)
    total = [sum(s[axis] for s in shapes) if d == axis else n for d, n in enumerate(others)]
    want = np.zeros(total, np.float32)
    apply_to_arrays(join_mapping(shapes, axis), [x.numpy() for x in xs], [want])
    assert np.array_equal(joined.numpy(), want)
    sizes = [s[axis] for s in shapes]
    pieces = _decomposed_outputs("split", [joined, axis, sizes, None], pointwise)
    wanted = [np.zeros(s, np.float32) for s in shapes]
    apply_to_arrays(split_mapping(shapes, axis), [want], wanted)
    assert all(np.array_equal(p.numpy(), w) for p, w in zip(pieces, wanted, strict=True))


def _graph_ops(fn, *args, **compile_options) -> tuple[list, str]:  # type: ignore[no-untyped-def, type-arg]
    """fn compiled with a backend that records dynamo's graph: the results and the graph."""
    graphs = []

    def record(gm, example_inputs):  # type: ignore[no-untyped-def]
        graphs.append(gm.code)
        return gm.forward

    torch._dynamo.reset()
    got = torch.compile(fn, backend=record, fullgraph=True, **compile_options)(*args)
    return got, "\n".join(graphs)


def test_compiled_calls_are_torchs_own_ops(device: str) -> None:
    """Traced by dynamo, a functional call becomes the aten views and copies themselves
    (torch's own graph: AOTAutograd and inductor treat it as torch code), with eager's bits;
    symbolic sizes (dynamic=True) are specialised to their values, since DirectML's
    descriptors have whole sizes."""

    def block(x, y):  # type: ignore[no-untyped-def]
        a, b = dmlops.split(x, 1, [1, 3])
        return dmlops.join([dmlops.slice1(b, *SEED_3D), y], 2), a

    f32 = torch.float32
    x, y = _x(device, 2, 4, 5, dtype=f32, grad=False), _x(device, 2, 3, 1, dtype=f32, grad=False)
    want = block(x, y)
    for dynamic in (False, True):
        got, graph = _graph_ops(block, x, y, dynamic=dynamic)
        assert "dmlops" not in graph and "cat" in graph
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    compiled = torch.compile(block, dynamic=True, fullgraph=True)
    for t in (5, 9, 5):  # other sizes: recompiled under the size guards
        x = _x(device, 2, 4, t, dtype=f32, grad=False)
        got, want = compiled(x, y), block(x, y)
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_compiled_operator_calls_are_decomposed_for_inductor(device: str) -> None:
    """`torch.ops.dmlops.*` called directly (as in an exported program) reach inductor as
    operators, which its decomposition table turns into views and copies: no extern call,
    eager's bits, and DirectML's gradient through the operators' autograd."""
    from dmlops.torch import operators as torch_ops

    if not torch_ops.FUSES:
        pytest.skip("this torch has no inductor decomposition table")
    ops = torch.ops.dmlops

    def block(x):  # type: ignore[no-untyped-def]
        a, b = ops.split(x, 1, [1, 3], None)
        window = ops.slice1(b, [0, 0, 1], [2, 3, 4], [1, -1, 2], None, None)
        grad = ops.slice_grad(window, [2, 3, 5], [0, 0, 1], [2, 3, 4], [1, -1, 2], None)
        return ops.join([a, grad], 1, None), ops.space_to_depth(x.unsqueeze(0), 1, "DCR", None)

    x = _x(device, 2, 4, 5, dtype=torch.float32, grad=False)
    got, code = _compiled_code(block, x)
    want = block(x)
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    assert "torch.ops.dmlops" not in "\n".join(code)


def test_a_compiled_slice_of_a_permuted_view_hands_back_a_contiguous_gradient(
    device: str,
) -> None:
    """Under torch.compile a slice of x.transpose(1, 2) reads the view in x's memory order,
    so the compiled backward's gradient for x is a contiguous buffer (torch's own slicing
    hands back a transposed one, which AccumulateGrad then copies), with torch's values."""
    from torch._inductor.utils import run_and_get_code

    def ours(x):  # type: ignore[no-untyped-def]
        return dmlops.slice1(x.transpose(1, 2), [0, 0, 1], [2, 6, 7], [1, 1, 2])

    torch._dynamo.reset()
    x = _x(device, 2, 8, 6, dtype=torch.float32)
    step = torch.compile(ours, fullgraph=True)
    grad = _x(device, 2, 6, 4, dtype=torch.float32, grad=False)
    _, code = run_and_get_code(lambda: step(x).backward(grad))
    returned = [line for line in code[-1].splitlines() if line.strip().startswith("return (")]
    assert returned and "reinterpret_tensor" not in returned[-1]
    want = x.detach().clone().requires_grad_(True)
    want.transpose(1, 2)[:, :, 1::2].backward(grad)
    assert torch.equal(x.grad, want.grad) and x.grad.is_contiguous()


TRANSFORMED = {
    "slice1": lambda t: dmlops.slice1(t, [0, 1, 0], [3, 5, 4], [1, -2, 3]),
    "slice": lambda t: dmlops.slice(t, [1, 0, 1], [2, 3, 2], [1, 2, 2]),
    "split": lambda t: dmlops.split(t, 1, [2, 4])[1],
    "join": lambda t: dmlops.join([t, t[:, :2]], 1),
    "slice_grad": lambda t: dmlops.slice_grad(t, [4, 7, 5], [0, 1, 0], [3, 6, 4], [1, 1, 1]),
    "depth_to_space": lambda t: dmlops.depth_to_space(t.reshape(1, 36, 1, 2)[:, :36], 3, "CRD"),
    "space_to_depth": lambda t: dmlops.space_to_depth(t[:, :6, :4].reshape(3, 1, 6, 4), 2),
}


@pytest.mark.parametrize("name", list(TRANSFORMED))
def test_torch_func_transforms_carry_the_strided_operators(name: str) -> None:
    # vmap, grad and jacrev see the operators' views and copies (the custom operator's
    # autograd does not support torch.func, and its vmap is a per-example loop)
    fn = TRANSFORMED[name]
    xs = torch.randn(2, 3, 6, 4)  # (DEPTH / SPACE have no float64)
    batched = torch.func.vmap(fn)(xs)
    assert torch.equal(batched, torch.stack([fn(x) for x in xs]))
    x = xs[0].clone().requires_grad_()
    weight = torch.randn(fn(x).shape)
    (fn(x) * weight).sum().backward()
    got = torch.func.grad(lambda t: (fn(t) * weight).sum())(xs[0])
    assert x.grad is not None and torch.equal(got, x.grad)
    jacobian = torch.func.jacrev(fn)(xs[0])
    assert jacobian.shape == (*fn(x).shape, *x.shape)


def test_operators_without_views_refuse_torch_func_transforms() -> None:
    x = torch.randn(2, 4, 3)
    with pytest.raises(DmlError, match=r"GATHER: torch\.func transforms"):
        torch.func.vmap(lambda t: dmlops.gather(t, torch.tensor([1, 0]), 0))(x)
    with pytest.raises(DmlError, match=r"TILE: torch\.func transforms"):
        torch.func.grad(lambda t: dmlops.tile(t, [2, 1]).sum())(x[0])


@pytest.mark.parametrize("count", [3, 8, 40])
def test_which_calls_go_through_the_torch_operators(count: int) -> None:
    """`wanted` answers alike for a few tensors (a loop) and many (a pass per field):
    tensors that need a gradient go through the operators, a Parameter among them where
    autograd is on (outside it, a plain tensor); meta tensors too (their fakes give the
    outputs); plain CPU tensors with no gradient do not, but do where a jit trace or a
    mode watches the call (a function mode here)."""
    from dmlops.torch.operators import wanted

    def make(**kw):  # type: ignore[no-untyped-def]
        return [torch.zeros(2, **kw) for _ in range(count)]

    cpu, meta = make(), make(device="meta")
    assert wanted(meta)
    assert not wanted(cpu)
    assert wanted([*cpu[1:], torch.zeros(2, requires_grad=True)])
    assert wanted([*cpu[1:], torch.nn.Parameter(torch.zeros(2))])
    with torch.no_grad():
        assert not wanted([*cpu[1:], torch.zeros(2, requires_grad=True)])
        assert not wanted([*cpu[1:], torch.nn.Parameter(torch.zeros(2))])
        assert wanted([*meta[1:], torch.nn.Parameter(torch.zeros(2, device="meta"))])
    with torch.device("cpu"):  # (a function mode)
        assert wanted(cpu)
