"""Calls on torch tensor subclasses on a GPU: an `nn.Parameter` outside autograd (a model's
embedding table under `torch.no_grad()`) is keyed as a plain CUDA tensor with its type and
compiled once, bit-exact with the same call on a plain tensor, its results plain tensors,
on the caller's stream and device (before, such a call under no_grad raised: CuPy's view
of a tensor that needs a gradient); a subclass that overrides torch's functions is right
there too, keyed on the host only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from conftest import HAS_CUDA  # noqa: E402
from dmlops.backends import library_keys  # noqa: E402
from dmlops.calls import dispatch  # noqa: E402

_ROWS = [4, 0, 2, 4]

# each call on (weight [6, 5] on a GPU, rows, a plain tensor of the weight's shape)
CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "gather": lambda w, r, p: dmlops.gather(w, r, 0),
    "gather_elements": lambda w, r, p: dmlops.gather_elements(w, r.reshape(4, 1), 0),
    "slice1": lambda w, r, p: dmlops.slice1(w, [0, 1], [6, 4], [-1, 2]),
    "join": lambda w, r, p: dmlops.join([w, p], 0),
    "padding": lambda w, r, p: dmlops.padding(w, [1, 0], [0, 2], mode="reflection"),
    "scatter_nd": lambda w, r, p: dmlops.scatter_nd(w, r[:2].reshape(2, 1), p[:2]),
}


class _Watched(torch.Tensor):
    """A subclass that overrides torch's functions (torch's own default wraps results in it)."""


def test_the_key_functions_of_subclasses() -> None:
    """A Parameter's key is its type with a tensor's on every device; a subclass that
    overrides torch's functions has one on the host only."""
    plain = library_keys.subclass_key(torch.nn.Parameter)
    watched = library_keys.subclass_key(_Watched)
    assert plain is not None and watched is not None
    weight = torch.nn.Parameter(torch.zeros(2, 3))
    assert plain(weight) == (torch.nn.Parameter, torch.float32, (2, 3), (3, 1), "cpu")
    assert watched(torch.zeros(2, 3).as_subclass(_Watched)) is not None

    class OnAGpu:  # (the getters a key reads, as a GPU tensor answers them)
        dtype, shape, is_cpu = torch.float32, torch.Size([2, 3]), False

        def stride(self) -> tuple[int, ...]:
            return (3, 1)

        def get_device(self) -> int:
            return 0

        def is_neg(self) -> bool:  # (a GPU tensor's marks: none)
            return False

        is_conj = _is_zerotensor = is_neg

    assert plain(OnAGpu()) == (OnAGpu, torch.float32, (2, 3), (3, 1), 0)
    assert watched(OnAGpu()) is None


def _weights(device: str) -> tuple[Any, Any, Any]:
    values = torch.arange(30, dtype=torch.float32, device=device).reshape(6, 5) * 1.5 - 7
    values[0, 0] = -0.0
    rows = torch.tensor(_ROWS, device=device)
    return torch.nn.Parameter(values.clone()), rows, values.flip(0).clone()


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_parameter_on_a_gpu_is_compiled_once_and_exact(name: str) -> None:
    """Three calls on a CUDA Parameter under no_grad: one compiled call, each bit-exact with
    the call on a plain tensor of its values, a plain tensor on the Parameter's device that
    needs no gradient."""
    weight, rows, other = _weights("cuda")
    expected = CALLS[name](weight.detach().clone(), rows, other)
    dispatch.clear_cache()
    with torch.no_grad():
        for _ in range(3):
            got = CALLS[name](weight, rows, other)
            got_list = got if isinstance(got, list | tuple) else [got]
            expected_list = expected if isinstance(expected, list | tuple) else [expected]
            for g, e in zip(got_list, expected_list, strict=True):
                assert type(g) is torch.Tensor and not g.requires_grad
                assert g.device == weight.device
                assert torch.equal(g.view(torch.int32), e.view(torch.int32))  # (bits: -0.0)
            assert dispatch.cache_size() == 1


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_parameter_on_a_side_stream_and_in_graph_capture() -> None:
    """A warm Parameter call runs on the caller's stream, and a CUDA graph that captured it
    replays it (reading the Parameter's values when replayed)."""
    weight, rows, _ = _weights("cuda")
    with torch.no_grad():
        dmlops.gather(weight, rows, 0)  # (warm)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = dmlops.gather(weight, rows, 0)
            expected = weight.detach()[rows]
        side.synchronize()
        assert torch.equal(got, expected)
        graph = torch.cuda.CUDAGraph()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                dmlops.gather(weight, rows, 0)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            captured = dmlops.gather(weight, rows, 0)
        weight.mul_(2)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(captured, weight.detach()[rows])


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_a_subclass_that_overrides_torch_functions_is_right_on_a_gpu() -> None:
    """A subclass whose `__torch_function__` is torch's default, one that needs a gradient
    among them, under no_grad: its calls on a GPU are right (it is not keyed there: the
    call goes through the torch operators, or is bound each call)."""
    weight, rows, _ = _weights("cuda")
    plain = weight.detach().clone()
    watched = plain.clone().as_subclass(_Watched)
    needs_grad = plain.clone().as_subclass(_Watched).requires_grad_()
    with torch.no_grad():
        for x in (watched, needs_grad, watched):
            for call in CALLS.values():
                got = call(x, rows, plain)
                want = call(plain, rows, plain)
                got_list = got if isinstance(got, list | tuple) else [got]
                want_list = want if isinstance(want, list | tuple) else [want]
                for g, e in zip(got_list, want_list, strict=True):
                    assert torch.equal(torch.as_tensor(g).view(torch.int32), e.view(torch.int32))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_a_parameter_on_a_second_gpu() -> None:
    """A Parameter on the second GPU: its call runs there, keyed apart from the first's."""
    first, rows0, _ = _weights("cuda:0")
    second, rows1, _ = _weights("cuda:1")
    dispatch.clear_cache()
    with torch.no_grad():
        a = dmlops.gather(first, rows0, 0)
        b = dmlops.gather(second, rows1, 0)
    assert a.device.index == 0 and b.device.index == 1
    assert torch.equal(b.cpu(), a.cpu())
    assert dispatch.cache_size() == 2


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("name", ["slice1", "gather", "join"])
def test_a_sparse_cuda_tensor_is_refused_with_a_dml_error(name: str) -> None:
    """A sparse tensor on a GPU (no strides) is refused with a DmlError that says what to
    pass, as on the CPU."""
    sparse = torch.eye(4, device="cuda").to_sparse()
    rows = torch.tensor([1, 0], device="cuda")
    calls = {
        "slice1": lambda: dmlops.slice1(sparse, [0, 0], [4, 4], [1, -1]),
        "gather": lambda: dmlops.gather(sparse, rows, 0),
        "join": lambda: dmlops.join([sparse, sparse], 0),
    }
    with pytest.raises(dmlops.DmlError, match="to_dense"):
        calls[name]()
